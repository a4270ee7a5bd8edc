// Package fakelibvirt drives fake-libvirtd, the in-memory libvirt daemon of
// fakes/libvirt, from a Go provider's tests and conformance fixture.
//
// A provider that speaks libvirt's remote protocol (go-libvirt, or libvirt's
// own client library) is pointed at the daemon's socket; its fixture reaches
// below the provider through the daemon's control socket with a Client, and
// implements the suite's hooks (docs/remote-protocol.md, "What a fixture must
// do") with it:
//
//   - inventory: Inventory lists every domain, pool and volume;
//     Resources turns it into the hook's resources, with an owner function the
//     provider's naming supplies;
//   - planting: DefineDomain, CreateVolume, RemoveDomain, RemoveVolume,
//     SetDomainState;
//   - faults: Inject (a provider.FaultSpec), AddFault (a Rule of the daemon's
//     own), Fired, ClearFaults, SetReachability;
//   - observation: Mark and Trace (the calls since a mark), BackendCalls (the
//     hook's calls, dials included), Dials.
//
// Start launches a daemon for one testbed (each testbed gets its own, so its
// faults and trace are its own); Dial connects to one already running.
// Everything here is the standard library only.
package fakelibvirt
