package gotemplate

import (
	"fmt"
	"net"
	"sort"
	"time"

	provider "kvm2conformance/sdk"
)

// The out-of-band side of the backend, used by the fixture's hooks.

func (b *simBackend) site(name string) (*site, error) {
	s := b.sites[name]
	if s == nil {
		return nil, fmt.Errorf("no site %s", name)
	}
	return s, nil
}

func (b *simBackend) instance(siteName, name string) (*record, error) {
	s, err := b.site(siteName)
	if err != nil {
		return nil, err
	}
	r := s.instances[name]
	if r == nil {
		return nil, fmt.Errorf("no instance %s at %s", name, siteName)
	}
	return r, nil
}

func (b *simBackend) setToken(siteName, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil {
		s.token = token
	}
	return err
}

func (b *simBackend) setIdentity(siteName, identity string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil {
		s.identity = identity
	}
	return err
}

func (b *simBackend) calls() []provider.BackendCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]provider.BackendCall(nil), b.trace...)
}

func (b *simBackend) dialsAt(siteName string) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sites[siteName]; s != nil {
		return s.dials
	}
	return 0
}

func (b *simBackend) inject(spec provider.FaultSpec) (uint64, error) {
	if spec.Location != nil {
		b.mu.Lock()
		_, ok := b.sites[*spec.Location]
		b.mu.Unlock()
		if !ok {
			return 0, fmt.Errorf("no site %s", *spec.Location)
		}
	}
	b.fmu.Lock()
	defer b.fmu.Unlock()
	b.nextID++
	b.active = append(b.active, &injection{id: b.nextID, spec: spec})
	return b.nextID, nil
}

func (b *simBackend) wasFired(id uint64) bool {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	return b.fired[id]
}

// clearFaults removes every injection and releases hung calls.
func (b *simBackend) clearFaults() {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	b.active = nil
	close(b.released)
	b.released = make(chan struct{})
}

func (b *simBackend) setReachability(siteName, r string) error {
	switch r {
	case "Up", "Refused", "BlackHole":
	default:
		return fmt.Errorf("unknown reachability %q", r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err != nil {
		return err
	}
	s.reach = r
	if r != "Up" {
		s.open = map[uint64]bool{}
	}
	return nil
}

func (b *simBackend) setFree(siteName string, bytes *uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil {
		s.freeOverride = bytes
	}
	return err
}

func (b *simBackend) holdBoot(hold bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bootHeld = hold
}

func (b *simBackend) setPower(siteName, name, power string) error {
	switch power {
	case "Running", "Paused", "Stopped":
	default:
		return fmt.Errorf("unknown power state %q", power)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.instance(siteName, name)
	if err != nil {
		return err
	}
	switch {
	case power == "Running" && r.power == "Stopped":
		r.started, r.booted = time.Now(), false
	case power == "Stopped":
		r.booted = false
	}
	r.power = power
	return nil
}

func (b *simBackend) setAddresses(siteName, name string, addrs []net.IP) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.instance(siteName, name)
	if err == nil {
		r.addresses, r.hasAddrs = addrs, true
	}
	return err
}

func (b *simBackend) failAddressLookup(siteName, name string, fail bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, err := b.instance(siteName, name)
	if err == nil {
		r.lookupFails = fail
	}
	return err
}

func (b *simBackend) resources(siteName string) ([]provider.Resource, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err != nil {
		return nil, err
	}
	out := []provider.Resource{}
	for _, n := range sortedKeys(s.instances) {
		n := n
		out = append(out, provider.Resource{Instance: &n, Kind: "instance", Primary: true, Name: n})
	}
	if s.container {
		for _, n := range sortedKeys(s.volumes) {
			v := s.volumes[n]
			var owner *string
			if v.instance != "" {
				o := v.instance
				owner = &o
			}
			out = append(out, provider.Resource{Instance: owner, Kind: v.kind, Primary: false, Name: n})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (b *simBackend) plant(siteName, name string, what provider.Plant) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ip := b.allocateIP()
	s, err := b.site(siteName)
	if err != nil {
		return err
	}
	if _, ok := s.instances[name]; ok {
		return fmt.Errorf("%s already exists at %s", name, siteName)
	}
	now := time.Now()
	var m *mark
	unreadable := false
	switch what.Type {
	case "Unmarked":
	case "ForeignUid":
		m = &mark{tag: what.Tag, uid: what.UID, createdAt: &now}
	case "EmptyUid":
		m = &mark{tag: what.Tag, createdAt: &now}
	case "Unreadable":
		m = &mark{tag: what.Tag, uid: "unknown", createdAt: &now}
		unreadable = true
	default:
		return fmt.Errorf("unknown plant %q", what.Type)
	}
	s.instances[name] = &record{mark: m, power: "Running", started: now, booted: true, ip: ip, unreadable: unreadable}
	if s.container {
		if err := addVolume(s, siteName, diskVolume(name), name, "disk", 1<<20, nil); err != nil {
			return err
		}
		if err := addVolume(s, siteName, seedVolume(name), name, "seed", 9, []byte("#planted\n")); err != nil {
			return err
		}
	}
	return nil
}

// inspect fingerprints everything of name: the record and every volume it owns.
func (b *simBackend) inspect(siteName, name string) (*string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err != nil {
		return nil, err
	}
	parts := []string{}
	for _, n := range sortedKeys(s.volumes) {
		if v := s.volumes[n]; v.instance == name {
			parts = append(parts, fmt.Sprintf("%s:%d:%d", n, v.size, v.digest))
		}
	}
	r := s.instances[name]
	if r == nil && len(parts) == 0 {
		return nil, nil
	}
	rec := "none"
	if r != nil {
		m := "unmarked"
		if r.mark != nil {
			created := "none"
			if r.mark.createdAt != nil {
				created = r.mark.createdAt.UTC().Format(time.RFC3339Nano)
			}
			m = fmt.Sprintf("tag=%s uid=%s created=%s", r.mark.tag, r.mark.uid, created)
		}
		rec = fmt.Sprintf("%s power=%s booted=%t addrs=%v/%t unreadable=%t", m, r.power, r.booted, r.addresses, r.hasAddrs, r.unreadable)
	}
	fp := fmt.Sprintf("%s parts %v", rec, parts)
	return &fp, nil
}

func (b *simBackend) removeSecondary(siteName, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err != nil {
		return err
	}
	for n, v := range s.volumes {
		if v.instance == name {
			delete(s.volumes, n)
		}
	}
	return nil
}

func (b *simBackend) removePrimary(siteName, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil {
		delete(s.instances, name)
	}
	return err
}

// restoreContainer brings back a removed volume store, empty but for the base
// image.
func (b *simBackend) restoreContainer(siteName string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil && !s.container {
		s.container = true
		s.volumes = map[string]*volume{"base-image": {kind: "image", size: baseImageBytes}}
	}
	return err
}

func (b *simBackend) removeContainer(siteName string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.site(siteName)
	if err == nil {
		s.container = false
		s.volumes = map[string]*volume{}
	}
	return err
}
