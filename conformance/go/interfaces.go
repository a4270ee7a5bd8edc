package provider

import (
	"context"
	"net"
)

// Provider is the contract every provider implements.
// Each operation must honour ctx: once its deadline passes or it is cancelled, the
// operation answers promptly with a Transient *Error.
// Operations return *Error for contract errors; any other error is a failure of the
// provider itself.
type Provider interface {
	Name() string
	Profile() Profile
	// Checker is nil when the provider has no checker.
	Checker() Checker
	Create(ctx context.Context, req *CreateRequest) (id string, err error)
	Get(ctx context.Context, id string) (Instance, error)
	Delete(ctx context.Context, id string) error
	ListByTag(ctx context.Context, tag string) (Listing, error)
}

// Checker reports each location's health.
type Checker interface {
	// ExtraReasons are the reasons it may give beyond the shared ones.
	ExtraReasons() []string
	Check(ctx context.Context) []HostHealth
}

// Fixture opens one testbed per rule.
type Fixture interface {
	Facts() Facts
	Open(ctx context.Context) (Testbed, error)
}

// Testbed is one rule's world.
// It may also implement any of the hook interfaces below; the SDK answers a hook
// request only when the fixture declares the hook and the testbed implements it.
type Testbed interface {
	Provider() Provider
	// Restart gives a fresh provider over the same backend.
	Restart(ctx context.Context) (Provider, error)
	Teardown(ctx context.Context) error
	Request(name, tag string, location Location) CreateRequest
	IDFor(location, name string) string
	// LocationOf is false when id is not well formed.
	LocationOf(id string) (string, bool)
	MalformedIDs() []string
	UnconfiguredID(name string) string
	UnknownPlacement() string
}

// Inventory lists raw backend resources.
type Inventory interface {
	Resources(ctx context.Context, location string) ([]Resource, error)
}

// Planting changes the backend behind the provider's back.
type Planting interface {
	Plant(ctx context.Context, location, name string, what Plant) error
	// Inspect is nil when nothing of that name exists.
	Inspect(ctx context.Context, location, name string) (*string, error)
	// RemovePart removes Secondary, Primary or Container.
	RemovePart(ctx context.Context, location, name, part string) error
	Remove(ctx context.Context, location, name string) error
}

// StateControl forces instance states.
type StateControl interface {
	// SetPower forces Running, Paused or Stopped.
	SetPower(ctx context.Context, location, name, power string) error
	SetAddresses(ctx context.Context, location, name string, addrs []net.IP) error
	FailAddressLookup(ctx context.Context, location, name string, fail bool) error
	HoldBoot(ctx context.Context, hold bool) error
}

// Capacity sets free capacity; nil restores it.
type Capacity interface {
	SetFree(ctx context.Context, location string, bytes *uint64) error
}

// Faults injects faults below the provider.
type Faults interface {
	Inject(ctx context.Context, spec FaultSpec) (uint64, error)
	Fired(ctx context.Context, id uint64) (bool, error)
	// ClearFaults removes every injection and releases hung calls.
	ClearFaults(ctx context.Context) error
	// SetReachability is Up, Refused or BlackHole.
	SetReachability(ctx context.Context, location, reachability string) error
}

// Causes produces the reasons a provider's checker declares (its ExtraReasons). A
// testbed with the Faults hook may implement it as well; without it, faults/cause
// answers produced=false and faults/undo_cause does nothing.
type Causes interface {
	// Cause makes location unhealthy for reason, as the backend comes to be in
	// the field, and reports whether it could (false for a reason it cannot make).
	Cause(ctx context.Context, location, reason string) (bool, error)
	// UndoCause undoes every cause at location; the same provider finds it ready
	// again.
	UndoCause(ctx context.Context, location string) error
}

// Rotation changes credentials.
type Rotation interface {
	Rotate(ctx context.Context, location string) error
	// BreakAccess breaks as how says (Revoke, ForeignHostKey, RemoveCredentials) and
	// reports whether it could.
	BreakAccess(ctx context.Context, location, how string) (bool, error)
	RestoreAccess(ctx context.Context, location string) error
}

// Observation exposes what the provider did.
type Observation interface {
	// Calls are the backend calls since the testbed opened, after the first since.
	Calls(ctx context.Context, since uint64) ([]BackendCall, error)
	Dials(ctx context.Context, location string) (uint64, error)
	// SetVerbosity is V0, V1 or V2.
	SetVerbosity(ctx context.Context, verbosity string) error
}
