// Package provider is the provider side of the conformance suite's process protocol,
// version 1 (docs/remote-protocol.md), for providers written in Go.
//
// An author implements Provider (and Checker when the provider can check its
// locations), a Fixture that opens a Testbed per rule, and whichever hook interfaces
// (Inventory, Planting, StateControl, Capacity, Faults, Rotation, Observation) the
// testbed supports, then calls Serve, ServeStdio or ServeSocket.
// A testbed with Faults whose checker declares reasons of its own also implements
// Causes, which produces and undoes them (CHK-REASONS); it is optional, and a testbed
// without it answers that it cannot produce them.
// The suite's bridge turns the served fixture back into its own, so every rule runs
// unchanged.
//
// Every provider operation receives a context.Context that carries the caller's
// deadline and is cancelled when the suite sends $/cancel or closes the connection.
// Spans and log lines opened with StartSpan and Log on that context are sent to the
// suite as notifications before the operation's reply.
// Contract errors are *Error values; any other error from an operation is answered as
// an internal failure of the provider.
package provider
