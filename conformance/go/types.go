package provider

import "time"

// ProfileAxes lists the contract's sixteen axes in the order the protocol shows them.
var ProfileAxes = []string{
	"create-return", "provisioning-state", "child-spans", "quota", "credentials",
	"client-kind", "gc-mark", "created-at", "ip-source", "list-partial", "not-found",
	"delete-return", "secondary-resources", "timeouts", "logging", "backend-test",
}

// Profile maps every axis of the contract to its declared value.
type Profile map[string]string

// Hook names a fixture capability.
type Hook string

// The hooks a testbed may have.
const (
	HookInventory    Hook = "Inventory"
	HookPlanting     Hook = "Planting"
	HookStateControl Hook = "StateControl"
	HookCapacity     Hook = "Capacity"
	HookFaults       Hook = "Faults"
	HookRotation     Hook = "Rotation"
	HookObservation  Hook = "Observation"
)

// Location is a place the provider creates instances in.
type Location struct {
	Name      string `json:"name"`
	Placement string `json:"placement"`
}

// Facts are the fixture's static facts, answered to initialize.
type Facts struct {
	ProviderName    string
	ProviderVersion string
	Profile         Profile
	Hooks           []Hook
	Locations       []Location
	HasChecker      bool
	IsRealBackend   bool
	Environment     map[string]string
}

// CreateRequest asks for one instance.
// CloudInit is secret: it must reach the backend and must never be logged.
type CreateRequest struct {
	Name      string  `json:"name"`
	UID       string  `json:"uid"`
	Tag       string  `json:"tag"`
	Placement string  `json:"placement"`
	Image     *string `json:"image"`
	CloudInit string  `json:"cloud_init"`
}

// State is an instance's lifecycle state.
type State string

// The states an instance reports.
const (
	Provisioning State = "Provisioning"
	Running      State = "Running"
	Stopped      State = "Stopped"
)

// Instance is what Get reports.
type Instance struct {
	ID        string
	Name      string
	State     State
	IPv4      string // empty for none
	UID       string
	Tag       string
	CreatedAt *time.Time
}

// UnreachableLocation is a location a listing could not read.
type UnreachableLocation struct {
	Location string `json:"location"`
	Reason   string `json:"reason"`
}

// Listing is the answer of ListByTag.
type Listing struct {
	Instances   []Instance
	Unreachable []UnreachableLocation
}

// HostHealth is one location's health as a Checker sees it.
type HostHealth struct {
	Location string            `json:"location"`
	Ready    bool              `json:"ready"`
	Reason   string            `json:"reason"`
	Message  string            `json:"message"`
	Details  map[string]string `json:"details"`
}

// Resource is a raw backend resource.
type Resource struct {
	Instance *string `json:"instance"`
	Kind     string  `json:"kind"`
	Primary  bool    `json:"primary"`
	Name     string  `json:"name"`
}

// Plant says what to plant behind the provider's back: Type is Unmarked, ForeignUid,
// EmptyUid or Unreadable.
type Plant struct {
	Type string `json:"type"`
	Tag  string `json:"tag,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Trigger says when an injected fault fires: Type is Nth (N, 1-based), Named (Name)
// or Always.
type Trigger struct {
	Type string `json:"type"`
	N    uint64 `json:"n,omitempty"`
	Name string `json:"name,omitempty"`
}

// FaultKind says what an injected fault does: Type is Transient, Permanent, NotFound,
// Quota, Hang, Delay (Micros), Drop or LostReply.
type FaultKind struct {
	Type   string `json:"type"`
	Micros uint64 `json:"micros,omitempty"`
}

// FaultSpec is one injection; a nil Location means every location.
type FaultSpec struct {
	Location *string   `json:"location"`
	Trigger  Trigger   `json:"trigger"`
	Kind     FaultKind `json:"kind"`
}

// BackendCall is one call the provider made to its backend.
type BackendCall struct {
	Location   string `json:"location"`
	Name       string `json:"name"`
	Connection uint64 `json:"connection"`
}
