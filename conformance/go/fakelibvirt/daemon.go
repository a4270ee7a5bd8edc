package fakelibvirt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options say how to start a daemon.
type Options struct {
	// Binary is the fake-libvirtd executable (default: $FAKE_LIBVIRTD, then
	// fake-libvirtd on PATH).
	Binary string
	// Dir holds its sockets and state file (default: a new temporary
	// directory, removed by Close).
	Dir string
	// State is a state document (JSON) to start from; empty: an empty host.
	State string
	// Stderr receives its log (default: discarded).
	Stderr *os.File
}

// Daemon is a fake-libvirtd process started by Start.
type Daemon struct {
	// Socket is its libvirt socket; URI the libvirt URI for it.
	Socket string
	// Control is its control socket.
	Control string
	// Client is connected to Control.
	*Client
	cmd     *exec.Cmd
	exited  chan error
	tempDir string
}

// URI is the connection URI of the daemon's libvirt socket, as virsh and
// libvirt's client library take it; go-libvirt dials Socket itself.
func (d *Daemon) URI() string {
	return "qemu+unix:///system?socket=" + d.Socket
}

// Binary finds the daemon executable: $FAKE_LIBVIRTD, then PATH.
func Binary() (string, error) {
	if b := os.Getenv("FAKE_LIBVIRTD"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("fake-libvirtd")
	if err != nil {
		return "", fmt.Errorf("fake-libvirtd is not on PATH and FAKE_LIBVIRTD is not set: %w", err)
	}
	return b, nil
}

// Start launches a daemon and waits until its control socket answers.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	d := &Daemon{}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "fake-libvirtd-")
		if err != nil {
			return nil, fmt.Errorf("make a directory for the daemon: %w", err)
		}
		dir, d.tempDir = tmp, tmp
	}
	d.Socket = filepath.Join(dir, "libvirt.sock")
	d.Control = filepath.Join(dir, "control.sock")
	args := []string{"--socket", d.Socket, "--control", d.Control}
	if strings.TrimSpace(opts.State) != "" {
		state := filepath.Join(dir, "state.json")
		if err := os.WriteFile(state, []byte(opts.State), 0o600); err != nil {
			d.cleanup()
			return nil, fmt.Errorf("write the state file: %w", err)
		}
		args = append(args, "--state", state)
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stderr = opts.Stderr
	exited := make(chan error, 1)
	d.exited = exited
	if err := d.cmd.Start(); err != nil {
		d.cleanup()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { exited <- d.cmd.Wait() }()
	for {
		if _, err := os.Stat(d.Control); err == nil {
			if c, err := Dial(ctx, d.Control); err == nil {
				if _, err := c.Ping(ctx); err == nil {
					d.Client = c
					return d, nil
				}
				_ = c.Close()
			}
		}
		select {
		case err := <-exited:
			d.cleanup()
			return nil, fmt.Errorf("%s exited before it answered: %v", bin, err)
		case <-ctx.Done():
			_ = d.cmd.Process.Kill()
			<-exited
			d.cleanup()
			return nil, fmt.Errorf("%s did not answer: %w", bin, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Close stops the daemon (SIGTERM) and removes what Start made.
func (d *Daemon) Close() error {
	if d.Client != nil {
		_ = d.Client.Close()
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	err := <-d.exited
	d.cleanup()
	if err != nil {
		return fmt.Errorf("fake-libvirtd: %w", err)
	}
	return nil
}

func (d *Daemon) cleanup() {
	if d.tempDir != "" {
		_ = os.RemoveAll(d.tempDir)
	}
}
