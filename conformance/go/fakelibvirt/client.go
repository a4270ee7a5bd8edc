package fakelibvirt

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"
)

// RefusedError is the daemon's refusal of a request: the request was not
// carried out and nothing changed.
type RefusedError struct {
	Command string
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("fake-libvirtd refused %s: %s", e.Command, e.Message)
}

// Client is a connection to a daemon's control socket. It is safe for
// concurrent use; requests are sent one at a time.
type Client struct {
	mu     sync.Mutex
	conn   net.Conn
	reader *bufio.Reader
	// broken is set once a request failed half way: the next reply on the
	// connection could belong to it, so the connection is not used again.
	broken error
}

// Dial connects to the control socket at path (the daemon's --control).
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dial the control socket %s: %w", path, err)
	}
	return &Client{conn: conn, reader: bufio.NewReaderSize(conn, 64*1024)}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}

type reply struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// Do sends one request (a value that encodes to {"cmd": ..., ...}) and decodes
// the reply's result into out (nil to ignore it). A refusal is a
// *RefusedError.
func (c *Client) Do(ctx context.Context, req map[string]any, out any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode the request: %w", err)
	}
	cmd, _ := req["cmd"].(string)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return fmt.Errorf("%s: the control connection failed earlier: %w", cmd, c.broken)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	// A cancelled context ends the wait by moving the deadline to the past;
	// the watcher is gone before Do returns, so it never touches the next
	// request's deadline.
	done, stopped := make(chan struct{}), make(chan struct{})
	defer func() {
		close(done)
		<-stopped
	}()
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			_ = c.conn.SetDeadline(time.Unix(1, 0))
		case <-done:
		}
	}()
	if _, err := c.conn.Write(append(line, '\n')); err != nil {
		c.broken = ctxErr(ctx, err)
		return fmt.Errorf("%s: send: %w", cmd, c.broken)
	}
	text, err := c.reader.ReadBytes('\n')
	if err != nil {
		c.broken = ctxErr(ctx, err)
		return fmt.Errorf("%s: read the reply: %w", cmd, c.broken)
	}
	var r reply
	if err := json.Unmarshal(text, &r); err != nil {
		return fmt.Errorf("%s: malformed reply %q: %w", cmd, text, err)
	}
	if !r.OK {
		return &RefusedError{Command: cmd, Message: r.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("%s: decode the result: %w", cmd, err)
	}
	return nil
}

// ctxErr prefers the context's error, so callers can test it with errors.Is.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (c *Client) do(ctx context.Context, cmd string, out any, kv ...any) error {
	req := map[string]any{"cmd": cmd}
	for i := 0; i+1 < len(kv); i += 2 {
		req[kv[i].(string)] = kv[i+1]
	}
	return c.Do(ctx, req, out)
}

// Ping checks the daemon answers and returns its version.
func (c *Client) Ping(ctx context.Context) (string, error) {
	var r struct {
		Version string `json:"version"`
	}
	err := c.do(ctx, "ping", &r)
	return r.Version, err
}
