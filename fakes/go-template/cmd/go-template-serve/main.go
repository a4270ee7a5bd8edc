// Command go-template-serve serves the Go template provider over the conformance
// suite's process protocol, on stdio or, with -socket, on a Unix socket. With
// -mutant NAME it serves one of the template's mutants instead, and -list-mutants
// prints every mutant with the rule IDs it must fail.
package main

import (
	"context"
	"encoding/json"
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
	mutant := flag.String("mutant", "", "serve this mutant instead of the correct template (see -list-mutants)")
	listMutants := flag.Bool("list-mutants", false, "print each mutant's name and the rule IDs it must fail, as JSON, and exit")
	flag.Parse()
	if *listMutants {
		out, err := json.MarshalIndent(gotemplate.Mutants(), "", "  ")
		if err != nil {
			fmt.Fprintf(os.Stderr, "go-template-serve: %v\n", err)
			os.Exit(1)
		}
		fmt.Println(string(out))
		return
	}
	if err := gotemplate.SelectMutant(*mutant); err != nil {
		fmt.Fprintf(os.Stderr, "go-template-serve: %v\n", err)
		os.Exit(2)
	}
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
