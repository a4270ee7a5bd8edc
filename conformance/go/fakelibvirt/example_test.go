package fakelibvirt_test

import (
	"context"
	"fmt"
	"log"

	provider "kvm2conformance/sdk"
	"kvm2conformance/sdk/fakelibvirt"
)

// A fixture's testbed starts a daemon, points the provider at it, and
// implements its hooks through the daemon's control socket.
func Example() {
	ctx := context.Background()
	d, err := fakelibvirt.Start(ctx, fakelibvirt.Options{
		State: `{"pools": [{"name": "default", "path": "/var/lib/libvirt/images", "capacity": 10737418240}]}`,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	fmt.Println("provider dials", d.Socket, "or", d.URI())

	base, _ := d.Baseline(ctx)
	// faults/inject: the next DomainCreate fails as a busy QEMU driver would.
	id, err := d.Inject(ctx, provider.FaultSpec{
		Trigger: provider.Trigger{Type: "Named", Name: "DomainCreate"},
		Kind:    provider.FaultKind{Type: "Transient"},
	})
	if err != nil {
		log.Fatal(err)
	}
	// ... the provider runs ...
	fired, _, _ := d.Fired(ctx, id)
	calls, _ := d.BackendCalls(ctx, "site-a", base)
	fmt.Println(fired, len(calls))
}
