package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// ProtocolVersion is the protocol version this SDK speaks.
const ProtocolVersion = 1

// MaxLine is the longest line either side may send, newline excluded.
const MaxLine = 16 << 20

// JSON-RPC error codes of the protocol.
const (
	CodeParseError         = -32700
	CodeInvalidRequest     = -32600
	CodeMethodNotFound     = -32601
	CodeInvalidParams      = -32602
	CodeInternalError      = -32603
	CodeHookFailed         = 1
	CodeUnknownHandle      = 2
	CodeUnsupportedVersion = 3
	// CodeProviderPanicked answers a method that panicked; the suite raises the panic
	// where it made the call, so the rule fails as it would in process.
	CodeProviderPanicked = 4
)

// drainWait bounds how long Serve waits for running requests once the suite closed
// the connection.
const drainWait = 5 * time.Second

// ServeStdio serves fixture over the process's stdin and stdout until the suite
// closes stdin or ctx ends.
func ServeStdio(ctx context.Context, fixture Fixture) error {
	return Serve(ctx, fixture, os.Stdin, os.Stdout)
}

// ServeSocket listens on a Unix socket at path and serves each connection until ctx
// ends.
func ServeSocket(ctx context.Context, fixture Fixture, path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", path, err)
		}
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			defer c.Close()
			_ = Serve(ctx, fixture, c, c)
		}(c)
	}
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func fail(code int, format string, args ...interface{}) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

type served struct {
	testbed  uint64
	provider Provider
}

type server struct {
	fixture Fixture
	out     chan []byte
	done    chan struct{}
	stopped chan struct{} // closed when the writer has ended

	mu         sync.Mutex
	testbeds   map[uint64]Testbed
	providers  map[uint64]served
	inflight   map[uint64]context.CancelFunc
	nextHandle uint64

	// tmu guards open: the requests whose telemetry is still sent. It is held while
	// a notification or a reply is queued, so no telemetry follows its reply.
	tmu  sync.Mutex
	open map[uint64]bool
}

// Serve answers the protocol on r and w until r ends or ctx ends: it reads requests,
// runs each in its own goroutine, writes replies in the order they finish, and when
// the connection closes cancels what runs and tears down every testbed still open.
func Serve(ctx context.Context, fixture Fixture, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{
		fixture:   fixture,
		out:       make(chan []byte, 64),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
		testbeds:  map[uint64]Testbed{},
		providers: map[uint64]served{},
		inflight:  map[uint64]context.CancelFunc{},
		open:      map[uint64]bool{},
	}
	writeErr := make(chan error, 1)
	go func() {
		err := s.writeLoop(w)
		close(s.stopped)
		writeErr <- err
	}()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() { readErr <- readLines(r, lines, s.done) }()

	var wg sync.WaitGroup
	var rerr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case line, ok := <-lines:
			if !ok {
				rerr = <-readErr
				break loop
			}
			s.dispatch(ctx, line, &wg)
		}
	}
	close(s.done)
	if errors.Is(rerr, errLineTooLong) {
		s.replyErr(nil, fail(CodeInvalidRequest, "a line longer than %d bytes", MaxLine))
	}
	s.mu.Lock()
	for _, c := range s.inflight {
		c()
	}
	s.mu.Unlock()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(drainWait):
	}
	s.mu.Lock()
	open := make([]Testbed, 0, len(s.testbeds))
	for h, tb := range s.testbeds {
		open = append(open, tb)
		delete(s.testbeds, h)
	}
	s.mu.Unlock()
	tctx, tcancel := context.WithTimeout(context.Background(), drainWait)
	for _, tb := range open {
		_ = tb.Teardown(tctx)
	}
	tcancel()
	s.send(nil)
	werr := <-writeErr
	if rerr != nil && !errors.Is(rerr, errLineTooLong) {
		return rerr
	}
	return werr
}

var errLineTooLong = errors.New("line too long")

// readLines sends each line of r, without its newline, until r ends or done closes.
func readLines(r io.Reader, lines chan<- []byte, done <-chan struct{}) error {
	defer close(lines)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var line []byte
		for {
			chunk, err := br.ReadSlice('\n')
			line = append(line, chunk...)
			if len(line) > MaxLine+1 || (len(line) == MaxLine+1 && line[MaxLine] != '\n') {
				return errLineTooLong
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(line) == 0 {
					return nil
				}
				break
			}
			if err != nil {
				return err
			}
			break
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		select {
		case lines <- line:
		case <-done:
			return nil
		}
	}
}

func (s *server) writeLoop(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var err error
	for line := range s.out {
		if line == nil {
			break
		}
		if err != nil {
			continue
		}
		bw.Write(line)
		bw.WriteByte('\n')
		if len(s.out) == 0 {
			err = bw.Flush()
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// send queues one line; nil ends the writer.
// Once the writer has ended, a straggler's line is dropped instead of blocking.
func (s *server) send(line []byte) {
	select {
	case s.out <- line:
	case <-s.stopped:
	}
}

// telemetry sends a notification of request id, or drops it once the request was
// answered: a span ended or a line logged by a goroutine that outlived its request
// would otherwise follow the reply, which the suite takes as a protocol failure.
func (s *server) telemetry(id uint64) func(method string, params interface{}) {
	return func(method string, params interface{}) {
		s.tmu.Lock()
		defer s.tmu.Unlock()
		if s.open[id] {
			s.notify(method, params)
		}
	}
}

func (s *server) notify(method string, params interface{}) {
	b, err := json.Marshal(map[string]interface{}{"jsonrpc": "2.0", "method": method, "params": params})
	if err == nil {
		s.send(b)
	}
}

func (s *server) replyOK(id json.RawMessage, result interface{}) {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  interface{}     `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		s.replyErr(id, fail(CodeInternalError, "the result does not serialise: %v", err))
		return
	}
	s.send(b)
}

func (s *server) replyErr(id json.RawMessage, e *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
	}{"2.0", id, e})
	s.send(b)
}

type message struct {
	JSONRPC *string          `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id"`
	Method  *string          `json:"method"`
	Params  json.RawMessage  `json:"params"`
	Result  *json.RawMessage `json:"result"`
	Error   *json.RawMessage `json:"error"`
}

func (s *server) dispatch(ctx context.Context, line []byte, wg *sync.WaitGroup) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if !utf8.Valid(line) {
		s.replyErr(nil, fail(CodeParseError, "the line is not UTF-8"))
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			s.replyErr(nil, fail(CodeInvalidRequest, "not a JSON-RPC 2.0 message"))
		} else {
			s.replyErr(nil, fail(CodeParseError, "the line is not JSON"))
		}
		return
	}
	hasID := len(m.ID) > 0
	var id uint64
	if hasID {
		if err := json.Unmarshal(m.ID, &id); err != nil {
			s.replyErr(nil, fail(CodeInvalidRequest, "a request id must be a non-negative integer"))
			return
		}
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" || m.Method == nil {
		if hasID {
			s.replyErr(m.ID, fail(CodeInvalidRequest, "not a JSON-RPC 2.0 request"))
		} else {
			s.replyErr(nil, fail(CodeInvalidRequest, "not a JSON-RPC 2.0 message"))
		}
		return
	}
	params := m.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if !hasID {
		if *m.Method == "$/cancel" {
			var p struct {
				ID *uint64 `json:"id"`
			}
			if json.Unmarshal(params, &p) == nil && p.ID != nil {
				s.mu.Lock()
				c := s.inflight[*p.ID]
				s.mu.Unlock()
				if c != nil {
					c()
				}
			}
		}
		return
	}
	// The request's context exists before the request runs, so a $/cancel that
	// arrives before the operation starts still cancels it.
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.inflight[id] = cancel
	s.mu.Unlock()
	wg.Add(1)
	method := *m.Method
	rawID := m.ID
	go func() {
		defer wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, id)
			s.mu.Unlock()
			cancel()
		}()
		s.tmu.Lock()
		s.open[id] = true
		s.tmu.Unlock()
		result, e := s.safeHandle(rctx, method, id, params)
		s.tmu.Lock()
		defer s.tmu.Unlock()
		delete(s.open, id)
		if e != nil {
			s.replyErr(rawID, e)
		} else {
			s.replyOK(rawID, result)
		}
	}()
}

func (s *server) safeHandle(ctx context.Context, method string, id uint64, params json.RawMessage) (result interface{}, e *rpcError) {
	defer func() {
		if p := recover(); p != nil {
			result, e = nil, fail(CodeProviderPanicked, "%s: %v", method, p)
		}
	}()
	return s.handle(ctx, method, id, params)
}

// decode fits params to out after checking that every required key is present and
// not null.
func decode(method string, params json.RawMessage, out interface{}, required ...string) *rpcError {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(params, &keys); err != nil {
		return fail(CodeInvalidParams, "params of %s do not fit the protocol: not an object", method)
	}
	for _, k := range required {
		v, ok := keys[k]
		if !ok || string(v) == "null" {
			return fail(CodeInvalidParams, "params of %s do not fit the protocol: missing field %q", method, k)
		}
	}
	if err := json.Unmarshal(params, out); err != nil {
		return fail(CodeInvalidParams, "params of %s do not fit the protocol: %v", method, err)
	}
	return nil
}

func (s *server) testbed(h uint64) (Testbed, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb, ok := s.testbeds[h]
	if !ok {
		return nil, fail(CodeUnknownHandle, "no testbed %d", h)
	}
	return tb, nil
}

func (s *server) provider(h uint64) (Provider, *rpcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.providers[h]
	if !ok {
		return nil, fail(CodeUnknownHandle, "no provider %d", h)
	}
	return p.provider, nil
}

func (s *server) handle(ctx context.Context, method string, id uint64, params json.RawMessage) (interface{}, *rpcError) {
	switch method {
	case "initialize":
		var q struct {
			Versions []int `json:"protocol_versions"`
		}
		if e := decode(method, params, &q, "protocol_versions", "suite_version"); e != nil {
			return nil, e
		}
		speaks := false
		for _, v := range q.Versions {
			speaks = speaks || v == ProtocolVersion
		}
		if !speaks {
			return nil, fail(CodeUnsupportedVersion, "this provider speaks protocol version %d only", ProtocolVersion)
		}
		return initializeResult(s.fixture.Facts()), nil
	case "shutdown":
		return struct{}{}, nil
	case "fixture/open":
		tb, err := s.fixture.Open(ctx)
		if err != nil {
			return nil, hookFailure(err)
		}
		s.mu.Lock()
		s.nextHandle++
		h := s.nextHandle
		s.testbeds[h] = tb
		s.mu.Unlock()
		return map[string]interface{}{"testbed": h, "provider": s.register(h, tb.Provider())}, nil
	case "provider/create", "provider/get", "provider/delete", "provider/list_by_tag", "checker/check":
		return s.operation(ctx, method, id, params)
	}
	return s.testbedMethod(ctx, method, params)
}

func hookFailure(err error) *rpcError {
	return &rpcError{Code: CodeHookFailed, Message: err.Error()}
}

func initializeResult(f Facts) interface{} {
	hooks := f.Hooks
	if hooks == nil {
		hooks = []Hook{}
	}
	env := f.Environment
	if env == nil {
		env = map[string]string{}
	}
	return map[string]interface{}{
		"protocol_version": ProtocolVersion,
		"provider_name":    f.ProviderName,
		"provider_version": f.ProviderVersion,
		"profile":          f.Profile,
		"hooks":            hooks,
		"locations":        f.Locations,
		"has_checker":      f.HasChecker,
		"is_real_backend":  f.IsRealBackend,
		"environment":      env,
	}
}

func (s *server) register(tb uint64, p Provider) map[string]interface{} {
	s.mu.Lock()
	s.nextHandle++
	h := s.nextHandle
	s.providers[h] = served{testbed: tb, provider: p}
	s.mu.Unlock()
	info := map[string]interface{}{"provider": h, "name": p.Name(), "profile": p.Profile(), "checker": nil}
	if c := p.Checker(); c != nil {
		reasons := c.ExtraReasons()
		if reasons == nil {
			reasons = []string{}
		}
		info["checker"] = map[string]interface{}{"extra_reasons": reasons}
	}
	return info
}
