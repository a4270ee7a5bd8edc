// Command go-template-serve serves the Go template provider over the conformance
// suite's process protocol, on stdio or, with -socket, on a Unix socket.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	gotemplate "kvm2conformance/gotemplate"
	provider "kvm2conformance/sdk"
)

func main() {
	socket := flag.String("socket", "", "serve on this Unix socket instead of stdio")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *socket != "" {
		err = provider.ServeSocket(ctx, gotemplate.NewFixture(), *socket)
	} else {
		err = provider.ServeStdio(ctx, gotemplate.NewFixture())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-template-serve: %v\n", err)
		os.Exit(1)
	}
}
