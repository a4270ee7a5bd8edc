package main

import (
	"fmt"
	"io"
	"time"

	"github.com/digitalocean/go-libvirt/socket/dialers"
)

// benchCalls makes n sequential ConnectGetLibVersion calls on one
// connection and prints "calls N SECONDS".
func benchCalls(socket string, n int) error {
	l, err := connect(dialers.NewLocal(dialers.WithSocket(socket)))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", socket, err)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := l.ConnectGetLibVersion(); err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
	}
	fmt.Printf("calls %d %.6f\n", n, time.Since(start).Seconds())
	return l.Disconnect()
}

// pattern is a reader of left bytes of a fixed pattern, so an upload of
// any size needs no file and no memory of its size. It copies from one
// block made once: making the bytes one at a time as they are sent would
// make the upload measure this program rather than the daemon.
type pattern struct {
	left uint64
	at   int
}

var patternBlock = func() []byte {
	b := make([]byte, 1<<16)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	if uint64(len(b)) > p.left {
		b = b[:p.left]
	}
	n := 0
	for n < len(b) {
		c := copy(b[n:], patternBlock[p.at:])
		n += c
		p.at = (p.at + c) % len(patternBlock)
	}
	p.left -= uint64(n)
	return n, nil
}

// benchUpload creates volume name of size bytes in pool, uploads size
// bytes into it on one connection, prints "upload BYTES SECONDS" (the
// upload alone) and deletes the volume.
func benchUpload(socket, poolName, name string, size uint64) error {
	l, err := connect(dialers.NewLocal(dialers.WithSocket(socket)))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", socket, err)
	}
	pool, err := l.StoragePoolLookupByName(poolName)
	if err != nil {
		return fmt.Errorf("look up pool %s: %w", poolName, err)
	}
	if old, err := l.StorageVolLookupByName(pool, name); err == nil {
		_ = l.StorageVolDelete(old, 0)
	}
	xml := fmt.Sprintf("<volume><name>%s</name><capacity unit='bytes'>%d</capacity>"+
		"<target><format type='raw'/></target></volume>", name, size)
	vol, err := l.StorageVolCreateXML(pool, xml, 0)
	if err != nil {
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	start := time.Now()
	err = l.StorageVolUpload(vol, &pattern{left: size}, 0, size, 0)
	elapsed := time.Since(start)
	if derr := l.StorageVolDelete(vol, 0); err == nil && derr != nil {
		err = fmt.Errorf("delete volume %s: %w", name, derr)
	}
	if err != nil {
		return fmt.Errorf("upload %d bytes: %w", size, err)
	}
	fmt.Printf("upload %d %.6f\n", size, elapsed.Seconds())
	return l.Disconnect()
}
