package fakelibvirt

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// libvirtConn is just enough of libvirt's remote protocol for the tests to
// make calls a fault can hit: one CALL at a time, its REPLY read back.
type libvirtConn struct {
	conn   net.Conn
	serial uint32
}

const remoteProgram = 0x20008086

func dialLibvirt(socket string) (*libvirtConn, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &libvirtConn{conn: c}, nil
}

func xdrString(s string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(s)))
	b = append(b, s...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// remoteErr is a libvirt error reply.
type remoteErr struct {
	Code    int32
	Message string
}

func (e *remoteErr) Error() string { return fmt.Sprintf("libvirt error %d: %s", e.Code, e.Message) }

// call sends procedure with args and returns the reply payload, a *remoteErr
// for an error reply, or the connection's error (io.EOF when it was closed).
func (l *libvirtConn) call(procedure uint32, args []byte, timeout time.Duration) ([]byte, error) {
	l.serial++
	hdr := make([]byte, 0, 28)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(28+len(args)))
	for _, v := range []uint32{remoteProgram, 1, procedure, 0, l.serial, 0} {
		hdr = binary.BigEndian.AppendUint32(hdr, v)
	}
	if _, err := l.conn.Write(append(hdr, args...)); err != nil {
		return nil, err
	}
	_ = l.conn.SetReadDeadline(time.Now().Add(timeout))
	var lenBuf [4]byte
	if _, err := io.ReadFull(l.conn, lenBuf[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(lenBuf[:])-4)
	if _, err := io.ReadFull(l.conn, body); err != nil {
		return nil, err
	}
	status, payload := binary.BigEndian.Uint32(body[20:24]), body[24:]
	if status != 0 {
		e := &remoteErr{Code: int32(binary.BigEndian.Uint32(payload[0:4]))}
		// code, domain, then the message as an optional string.
		if binary.BigEndian.Uint32(payload[8:12]) == 1 {
			n := binary.BigEndian.Uint32(payload[12:16])
			e.Message = string(payload[16 : 16+n])
		}
		return nil, e
	}
	return payload, nil
}

func (l *libvirtConn) open() error {
	args := binary.BigEndian.AppendUint32(nil, 1)
	args = append(args, xdrString("qemu:///system")...)
	args = binary.BigEndian.AppendUint32(args, 0)
	_, err := l.call(1, args, 5*time.Second)
	return err
}

func (l *libvirtConn) hostname(timeout time.Duration) (string, error) {
	p, err := l.call(59, nil, timeout)
	if err != nil {
		return "", err
	}
	n := binary.BigEndian.Uint32(p[0:4])
	return string(p[4 : 4+n]), nil
}

func (l *libvirtConn) lookup(name string) error {
	_, err := l.call(23, xdrString(name), 5*time.Second)
	return err
}
