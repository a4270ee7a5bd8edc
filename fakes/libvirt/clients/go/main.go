// Command libvirt-client-session drives a libvirt daemon through
// go-libvirt, the pure-Go client the operator's providers use: the
// session that fakes/libvirt/tests/clients.rs compares between
// fake-libvirtd and libvirtd, and the measurements of
// fakes/libvirt/benches/clients.rs.
//
// Usage:
//
//	libvirt-client-session session SOCKET PREFIX DIR
//	libvirt-client-session calls SOCKET N
//	libvirt-client-session upload SOCKET POOL VOLUME BYTES
//
// It builds offline in GOPATH mode against Debian's
// golang-github-digitalocean-go-libvirt-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o session .
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "libvirt-client-session: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	usage := fmt.Errorf("usage: session SOCKET PREFIX DIR | calls SOCKET N | upload SOCKET POOL VOLUME BYTES")
	if len(args) == 0 {
		return usage
	}
	switch {
	case args[0] == "session" && len(args) == 4:
		return session(args[1], args[2], args[3])
	case args[0] == "calls" && len(args) == 3:
		n, err := strconv.Atoi(args[2])
		if err != nil || n <= 0 {
			return fmt.Errorf("calls: N must be a positive number, not %q", args[2])
		}
		return benchCalls(args[1], n)
	case args[0] == "upload" && len(args) == 5:
		size, err := strconv.ParseUint(args[4], 10, 64)
		if err != nil || size == 0 {
			return fmt.Errorf("upload: BYTES must be a positive number, not %q", args[4])
		}
		return benchUpload(args[1], args[2], args[3], size)
	}
	return usage
}
