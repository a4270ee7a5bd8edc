// Package gotemplate is the template provider in Go: an in-memory provider over a
// simulated backend, and the fixture that opens a testbed with every hook for each
// rule of the conformance suite.
// It is served over the process protocol by cmd/go-template-serve.
package gotemplate

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	provider "kvm2conformance/sdk"
)

// Version is the template's provider version.
const Version = "0.1.0"

// Fixture opens a fresh simulated backend and provider per rule.
type Fixture struct {
	BootDelay time.Duration
	Latency   time.Duration
}

// NewFixture is the fixture with the template's default timings.
func NewFixture() *Fixture {
	return &Fixture{BootDelay: 5 * time.Millisecond, Latency: 200 * time.Microsecond}
}

// Facts are the template's static facts.
func (f *Fixture) Facts() provider.Facts {
	locs := []provider.Location{}
	for _, s := range defaultSites() {
		locs = append(locs, provider.Location{Name: s.name, Placement: s.placement})
	}
	return provider.Facts{
		ProviderName:    "template",
		ProviderVersion: Version,
		Profile:         templateProfile(),
		Hooks: []provider.Hook{
			provider.HookInventory, provider.HookPlanting, provider.HookStateControl, provider.HookCapacity,
			provider.HookFaults, provider.HookRotation, provider.HookObservation,
		},
		Locations:  locs,
		HasChecker: true,
		Environment: map[string]string{
			"backend":     "in-memory simulated backend",
			"bootDelay":   f.BootDelay.String(),
			"callLatency": f.Latency.String(),
			"language":    "go",
		},
	}
}

// Open writes each site's credential files into a fresh directory and starts a
// backend and a provider over them.
func (f *Fixture) Open(ctx context.Context) (provider.Testbed, error) {
	dir, err := os.MkdirTemp("", "go-template-")
	if err != nil {
		return nil, provider.Hookf("failed to create the credential directory: %v", err)
	}
	v := int32(1)
	cfg := config{name: "template", sites: defaultSites(), credDir: dir, diskBytes: 256 << 20, verbosity: &v}
	names := []string{}
	for _, s := range cfg.sites {
		names = append(names, s.name)
		if err := os.WriteFile(cfg.tokenFile(s.name), []byte(initialToken(s.name)), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, provider.Hookf("failed to write the credential files of %s: %v", s.name, err)
		}
		if err := os.WriteFile(cfg.knownHostFile(s.name), []byte(initialIdentity(s.name)), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, provider.Hookf("failed to write the credential files of %s: %v", s.name, err)
		}
	}
	b := newBackend(names, f.BootDelay, f.Latency)
	return &Testbed{cfg: cfg, backend: b, provider: newProvider(cfg, b)}, nil
}

// Testbed is one rule's backend and provider, with every hook.
type Testbed struct {
	cfg       config
	backend   *simBackend
	provider  *templateProvider
	rotations uint64
	mu        sync.Mutex // serialises credential file changes
}

func hookErr(err error) error {
	if err == nil {
		return nil
	}
	return &provider.HookError{Message: err.Error()}
}

// Provider is the testbed's provider.
func (t *Testbed) Provider() provider.Provider { return t.provider }

// Restart is a fresh provider over the same backend, as after a process restart.
func (t *Testbed) Restart(ctx context.Context) (provider.Provider, error) {
	return newProvider(t.cfg, t.backend), nil
}

// Teardown releases hung calls and removes the credential files.
func (t *Testbed) Teardown(ctx context.Context) error {
	t.backend.clearFaults()
	return hookErr(os.RemoveAll(t.cfg.credDir))
}

// Request is a valid request whose cloud-init names the instance.
func (t *Testbed) Request(name, tag string, loc provider.Location) provider.CreateRequest {
	return provider.CreateRequest{
		Name: name, UID: "owner-" + name, Tag: tag, Placement: loc.Placement,
		CloudInit: "#cloud-config\nhostname: " + name + "\n",
	}
}

// IDFor is the ID of name at location.
func (t *Testbed) IDFor(location, name string) string { return instanceID(location, name) }

// LocationOf is the site of a well-formed ID.
func (t *Testbed) LocationOf(id string) (string, bool) {
	site, _, ok := parseID(id)
	return site, ok
}

// MalformedIDs are IDs the provider rejects.
func (t *Testbed) MalformedIDs() []string {
	return []string{
		"", "sites", "sites/site-a", "sites/site-a/instances", "sites/site-a/instances/",
		"sites//instances/web", "sites/site-a/instances/web/disk", "/sites/site-a/instances/web",
		"hosts/site-a/domains/web", "sites/site-a/instances/Web", "sites/site-a/instances/../web",
		"sites/site-a/instances/web<1>",
	}
}

// UnconfiguredID is a well-formed ID at a site the configuration lacks.
func (t *Testbed) UnconfiguredID(name string) string { return instanceID("site-z", name) }

// UnknownPlacement is a placement no site has.
func (t *Testbed) UnknownPlacement() string { return "no-such-zone" }

// Resources lists the raw resources at a site.
func (t *Testbed) Resources(ctx context.Context, location string) ([]provider.Resource, error) {
	r, err := t.backend.resources(location)
	return r, hookErr(err)
}

// Plant plants an instance behind the provider's back.
func (t *Testbed) Plant(ctx context.Context, location, name string, what provider.Plant) error {
	return hookErr(t.backend.plant(location, name, what))
}

// Inspect fingerprints everything of name.
func (t *Testbed) Inspect(ctx context.Context, location, name string) (*string, error) {
	fp, err := t.backend.inspect(location, name)
	return fp, hookErr(err)
}

// RemovePart removes a part out of band.
func (t *Testbed) RemovePart(ctx context.Context, location, name, part string) error {
	switch part {
	case "Secondary":
		return hookErr(t.backend.removeSecondary(location, name))
	case "Primary":
		return hookErr(t.backend.removePrimary(location, name))
	case "Container":
		return hookErr(t.backend.removeContainer(location))
	}
	return provider.Hookf("unknown part %q", part)
}

// Remove removes everything of name.
func (t *Testbed) Remove(ctx context.Context, location, name string) error {
	if err := t.backend.removePrimary(location, name); err != nil {
		return hookErr(err)
	}
	return hookErr(t.backend.removeSecondary(location, name))
}

// SetPower forces a power state.
func (t *Testbed) SetPower(ctx context.Context, location, name, power string) error {
	return hookErr(t.backend.setPower(location, name, power))
}

// SetAddresses sets the addresses an instance reports.
func (t *Testbed) SetAddresses(ctx context.Context, location, name string, addrs []net.IP) error {
	return hookErr(t.backend.setAddresses(location, name, addrs))
}

// FailAddressLookup makes the address lookup fail or work again.
func (t *Testbed) FailAddressLookup(ctx context.Context, location, name string, fail bool) error {
	return hookErr(t.backend.failAddressLookup(location, name, fail))
}

// HoldBoot holds or releases boots everywhere.
func (t *Testbed) HoldBoot(ctx context.Context, hold bool) error {
	t.backend.holdBoot(hold)
	return nil
}

// SetFree sets a site's free capacity.
func (t *Testbed) SetFree(ctx context.Context, location string, bytes *uint64) error {
	return hookErr(t.backend.setFree(location, bytes))
}

// Inject injects a fault below the provider.
func (t *Testbed) Inject(ctx context.Context, spec provider.FaultSpec) (uint64, error) {
	id, err := t.backend.inject(spec)
	return id, hookErr(err)
}

// Fired reports whether an injection fired.
func (t *Testbed) Fired(ctx context.Context, id uint64) (bool, error) {
	return t.backend.wasFired(id), nil
}

// ClearFaults removes every injection and releases hung calls.
func (t *Testbed) ClearFaults(ctx context.Context) error {
	t.backend.clearFaults()
	return nil
}

// SetReachability sets how a site answers new connections.
func (t *Testbed) SetReachability(ctx context.Context, location, r string) error {
	return hookErr(t.backend.setReachability(location, r))
}

// Cause produces the checker's declared reason: ContainerMissing is the site's
// volume store gone, with everything in it.
func (t *Testbed) Cause(ctx context.Context, location, reason string) (bool, error) {
	if reason != containerMissing {
		return false, nil
	}
	if err := t.backend.removeContainer(location); err != nil {
		return false, hookErr(err)
	}
	return true, nil
}

// UndoCause brings the volume store back with its base image.
func (t *Testbed) UndoCause(ctx context.Context, location string) error {
	return hookErr(t.backend.restoreContainer(location))
}

// Rotate writes a new token file and makes the site accept only it.
func (t *Testbed) Rotate(ctx context.Context, location string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := atomic.AddUint64(&t.rotations, 1)
	token := fmt.Sprintf("token-%s-%d", location, n)
	if err := os.WriteFile(t.cfg.tokenFile(location), []byte(token), 0o600); err != nil {
		return provider.Hookf("failed to write the credential file: %v", err)
	}
	return hookErr(t.backend.setToken(location, token))
}

func aside(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".token.removed"
}

// BreakAccess revokes the token, presents a foreign identity or moves the token
// file aside.
func (t *Testbed) BreakAccess(ctx context.Context, location, how string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cfg.hasSite(location) {
		return false, provider.Hookf("no site %s", location)
	}
	switch how {
	case "Revoke":
		n := atomic.AddUint64(&t.rotations, 1)
		return true, hookErr(t.backend.setToken(location, fmt.Sprintf("revoked-%s-%d", location, n)))
	case "ForeignHostKey":
		return true, hookErr(t.backend.setIdentity(location, "foreign-identity-"+location))
	case "RemoveCredentials":
		file := t.cfg.tokenFile(location)
		if _, err := os.Stat(file); err == nil {
			if err := os.Rename(file, aside(file)); err != nil {
				return false, provider.Hookf("failed to move the credential file aside: %v", err)
			}
		}
		return true, nil
	}
	return false, provider.Hookf("unknown access break %q", how)
}

// RestoreAccess undoes every break at a site.
func (t *Testbed) RestoreAccess(ctx context.Context, location string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	file := t.cfg.tokenFile(location)
	moved := aside(file)
	if _, err := os.Stat(moved); err == nil {
		var rerr error
		if _, err := os.Stat(file); err == nil {
			// Rotated while removed: the new file stands.
			rerr = os.Remove(moved)
		} else {
			rerr = os.Rename(moved, file)
		}
		if rerr != nil {
			return provider.Hookf("failed to put the credential file back: %v", rerr)
		}
	}
	token, err := readTrimmed(file)
	if err != nil {
		return provider.Hookf("failed to read %s", file)
	}
	if err := t.backend.setToken(location, token); err != nil {
		return hookErr(err)
	}
	trusted, err := readTrimmed(t.cfg.knownHostFile(location))
	if err != nil {
		return provider.Hookf("failed to read %s", t.cfg.knownHostFile(location))
	}
	return hookErr(t.backend.setIdentity(location, trusted))
}

// Calls are the backend calls after the first since.
func (t *Testbed) Calls(ctx context.Context, since uint64) ([]provider.BackendCall, error) {
	all := t.backend.calls()
	if since >= uint64(len(all)) {
		return []provider.BackendCall{}, nil
	}
	return all[since:], nil
}

// Dials is how many connections the provider opened to a site.
func (t *Testbed) Dials(ctx context.Context, location string) (uint64, error) {
	return t.backend.dialsAt(location), nil
}

// SetVerbosity sets the provider's verbosity tier.
func (t *Testbed) SetVerbosity(ctx context.Context, v string) error {
	n := map[string]int32{"V0": 0, "V1": 1, "V2": 2}
	level, ok := n[v]
	if !ok {
		return provider.Hookf("unknown verbosity %q", v)
	}
	atomic.StoreInt32(t.cfg.verbosity, level)
	return nil
}

// The testbed has every hook; a signature drift fails the build instead of silently
// dropping a hook.
var (
	_ provider.Testbed      = (*Testbed)(nil)
	_ provider.Inventory    = (*Testbed)(nil)
	_ provider.Planting     = (*Testbed)(nil)
	_ provider.StateControl = (*Testbed)(nil)
	_ provider.Capacity     = (*Testbed)(nil)
	_ provider.Faults       = (*Testbed)(nil)
	_ provider.Rotation     = (*Testbed)(nil)
	_ provider.Observation  = (*Testbed)(nil)
	_ provider.Checker      = (*templateProvider)(nil)
)
