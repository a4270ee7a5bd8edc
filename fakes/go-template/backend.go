package gotemplate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	provider "kvm2conformance/sdk"
)

// The backend's procedures, named as the child-spans axis and the fault triggers
// name them.
const (
	procDial       = "dial"
	procLookup     = "lookup"
	procDefine     = "define"
	procCreateDisk = "create_disk"
	procCreateSeed = "create_seed"
	procStart      = "start"
	procAddresses  = "addresses"
	procStop       = "stop"
	procUndefine   = "undefine"
	procDeleteDisk = "delete_disk"
	procDeleteSeed = "delete_seed"
	procList       = "list"
	procReadMark   = "read_mark"
	procCapacity   = "capacity"
	procPing       = "ping"
)

const baseImageBytes = 512 << 20

// backendErrKind names what a backend call failed with.
type backendErrKind int

const (
	errNoObject backendErrKind = iota
	errBusy
	errDenied
	errNoSpace
	errExists
	errNoContainer
	errUnreadable
	errClosed
	errRefused
	errAuthFailed
	errHostKeyRejected
	errCredentialsMissing
)

// backendError is a failure the simulated backend reports.
type backendError struct {
	kind      backendErrKind
	what      string
	available uint64
	needed    uint64
}

func (e *backendError) Error() string {
	switch e.kind {
	case errNoObject:
		return "no such object: " + e.what
	case errBusy:
		return "backend busy: " + e.what
	case errDenied:
		return "operation denied: " + e.what
	case errNoSpace:
		return fmt.Sprintf("no space in %s: %d free, %d needed", e.what, e.available, e.needed)
	case errExists:
		return "already exists: " + e.what
	case errNoContainer:
		return "volume store missing at " + e.what
	case errUnreadable:
		return "mark of " + e.what + " cannot be read"
	case errClosed:
		return "connection closed"
	case errRefused:
		return "connection refused"
	case errAuthFailed:
		return "credential token rejected"
	case errHostKeyRejected:
		return "site identity differs from the trusted one"
	default:
		return "credential file " + e.what + " is missing"
	}
}

func berr(kind backendErrKind, format string, args ...interface{}) error {
	return &backendError{kind: kind, what: fmt.Sprintf(format, args...)}
}

// isKind reports whether err is a backend error of kind k.
func isKind(err error, k backendErrKind) bool {
	var b *backendError
	return errors.As(err, &b) && b.kind == k
}

// interrupted is a call stopped by its context.
type interrupted struct{ cancelled bool }

func (i *interrupted) Error() string {
	if i.cancelled {
		return "call cancelled"
	}
	return "deadline exceeded"
}

func interruption(ctx context.Context) error {
	return &interrupted{cancelled: !errors.Is(ctx.Err(), context.DeadlineExceeded)}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return interruption(ctx)
	}
}

type mark struct {
	tag, uid  string
	createdAt *time.Time
}

type record struct {
	mark        *mark
	power       string
	started     time.Time
	booted      bool
	ip          net.IP
	addresses   []net.IP
	hasAddrs    bool
	lookupFails bool
	unreadable  bool
}

type volume struct {
	instance string // empty for shared volumes
	kind     string
	size     uint64
	digest   uint64
	data     []byte
}

type site struct {
	instances    map[string]*record
	volumes      map[string]*volume
	container    bool
	capacity     uint64
	freeOverride *uint64
	reach        string
	token        string
	identity     string
	dials        uint64
	open         map[uint64]bool
}

func (s *site) free() uint64 {
	if s.freeOverride != nil {
		return *s.freeOverride
	}
	var used uint64
	for _, v := range s.volumes {
		used += v.size
	}
	if used > s.capacity {
		return 0
	}
	return s.capacity - used
}

type injection struct {
	id    uint64
	spec  provider.FaultSpec
	seen  uint64
	spent bool
}

// simBackend plays the backend: sites with instances, volumes, capacity,
// credentials, reachability, injected faults and a trace of every call.
type simBackend struct {
	latency   time.Duration
	bootDelay time.Duration

	mu       sync.Mutex
	sites    map[string]*site
	bootHeld bool
	nextIP   uint32
	nextConn uint64
	trace    []provider.BackendCall

	fmu      sync.Mutex
	nextID   uint64
	active   []*injection
	fired    map[uint64]bool
	released chan struct{}
}

func initialToken(site string) string    { return "token-" + site + "-0" }
func initialIdentity(site string) string { return "identity-" + site + "-0" }
func diskVolume(name string) string      { return name + "-disk" }
func seedVolume(name string) string      { return name + "-seed" }

func digest(b []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return h
}

func newBackend(sites []string, bootDelay, latency time.Duration) *simBackend {
	b := &simBackend{
		latency: latency, bootDelay: bootDelay, sites: map[string]*site{},
		fired: map[uint64]bool{}, released: make(chan struct{}),
	}
	for _, name := range sites {
		b.sites[name] = &site{
			instances: map[string]*record{},
			volumes: map[string]*volume{
				"base-image": {kind: "image", size: baseImageBytes},
			},
			container: true, capacity: 1 << 40, reach: "Up",
			token: initialToken(name), identity: initialIdentity(name), open: map[uint64]bool{},
		}
	}
	return b
}

func (b *simBackend) record(site, proc string, conn uint64) {
	b.trace = append(b.trace, provider.BackendCall{Location: site, Name: proc, Connection: conn})
}

// onCall counts a call against the active injections and returns the fault that
// fires, if any, with the channel that a Hang waits on.
func (b *simBackend) onCall(site, proc string) (*provider.FaultKind, chan struct{}) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	var hit *provider.FaultKind
	for _, inj := range b.active {
		if inj.spent || (inj.spec.Location != nil && *inj.spec.Location != site) {
			continue
		}
		inj.seen++
		fires := false
		switch inj.spec.Trigger.Type {
		case "Nth":
			fires = inj.seen == inj.spec.Trigger.N
		case "Named":
			fires = strings.EqualFold(inj.spec.Trigger.Name, proc)
		case "Always":
			fires = true
		}
		if fires && hit == nil {
			if inj.spec.Trigger.Type != "Always" {
				inj.spent = true
			}
			b.fired[inj.id] = true
			k := inj.spec.Kind
			hit = &k
		}
	}
	return hit, b.released
}

// suffer applies a fault before the call takes effect.
func (b *simBackend) suffer(ctx context.Context, siteName string, conn uint64, f *provider.FaultKind, released chan struct{}) error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case "Transient":
		return berr(errBusy, "injected transient fault")
	case "Permanent":
		return berr(errDenied, "injected permanent fault")
	case "NotFound":
		return berr(errNoObject, "injected not-found fault")
	case "Quota":
		b.mu.Lock()
		var free uint64
		if s := b.sites[siteName]; s != nil {
			free = s.free()
		}
		b.mu.Unlock()
		return &backendError{kind: errNoSpace, what: "volume store at " + siteName, available: free, needed: free + 1}
	case "Hang":
		select {
		case <-released:
			return nil
		case <-ctx.Done():
			return interruption(ctx)
		}
	case "Delay":
		return sleep(ctx, time.Duration(f.Micros)*time.Microsecond)
	default: // Drop, LostReply
		b.mu.Lock()
		if s := b.sites[siteName]; s != nil {
			delete(s.open, conn)
		}
		b.mu.Unlock()
		return &backendError{kind: errClosed}
	}
}

// invoke runs one procedure on an open connection: it records the call, applies an
// injected fault, waits the latency, then runs op under the world lock.
func (b *simBackend) invoke(ctx context.Context, conn uint64, siteName, proc string, op func(s *site) error) error {
	b.mu.Lock()
	s := b.sites[siteName]
	if s == nil {
		b.mu.Unlock()
		return berr(errDenied, "no site %s", siteName)
	}
	if !s.open[conn] {
		b.mu.Unlock()
		return &backendError{kind: errClosed}
	}
	b.record(siteName, proc, conn)
	b.mu.Unlock()
	fault, released := b.onCall(siteName, proc)
	lose := fault != nil && fault.Type == "LostReply"
	if !lose {
		if err := b.suffer(ctx, siteName, conn, fault, released); err != nil {
			return err
		}
	}
	if b.latency > 0 {
		if err := sleep(ctx, b.latency); err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !s.open[conn] {
		return &backendError{kind: errClosed}
	}
	err := op(s)
	if lose {
		delete(s.open, conn)
		return &backendError{kind: errClosed}
	}
	return err
}

func (b *simBackend) dial(ctx context.Context, siteName, token, trusted string) (uint64, error) {
	b.mu.Lock()
	s := b.sites[siteName]
	if s == nil {
		b.mu.Unlock()
		return 0, berr(errDenied, "no site %s", siteName)
	}
	reach := s.reach
	b.nextConn++
	conn := b.nextConn
	b.record(siteName, procDial, conn)
	b.mu.Unlock()
	switch reach {
	case "Refused":
		return 0, &backendError{kind: errRefused}
	case "BlackHole":
		<-ctx.Done()
		return 0, interruption(ctx)
	}
	fault, released := b.onCall(siteName, procDial)
	if fault != nil && (fault.Type == "Drop" || fault.Type == "LostReply") {
		return 0, &backendError{kind: errClosed}
	}
	if err := b.suffer(ctx, siteName, conn, fault, released); err != nil {
		return 0, err
	}
	if b.latency > 0 {
		if err := sleep(ctx, b.latency); err != nil {
			return 0, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.reach != "Up" {
		return 0, &backendError{kind: errRefused}
	}
	if s.identity != trusted {
		return 0, &backendError{kind: errHostKeyRejected}
	}
	if s.token != token {
		return 0, &backendError{kind: errAuthFailed}
	}
	s.dials++
	s.open[conn] = true
	return conn, nil
}

func (b *simBackend) close(siteName string, conn uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.sites[siteName]; s != nil {
		delete(s.open, conn)
	}
}

func (b *simBackend) allocateIP() net.IP {
	b.nextIP++
	n := b.nextIP
	return net.IPv4(10, 77, byte(n>>8), byte(n)).To4()
}

func (b *simBackend) progress(r *record) {
	if r.power == "Running" && !r.booted && !b.bootHeld && !r.started.IsZero() && time.Since(r.started) >= b.bootDelay {
		r.booted = true
	}
}

func addVolume(s *site, siteName, name, owner, kind string, size uint64, data []byte) error {
	if !s.container {
		return berr(errNoContainer, "%s", siteName)
	}
	if kind == "disk" {
		if _, ok := s.volumes["base-image"]; !ok {
			return berr(errNoObject, "base image")
		}
	}
	if _, ok := s.volumes[name]; ok {
		return berr(errExists, "volume %s", name)
	}
	if free := s.free(); size > free {
		return &backendError{kind: errNoSpace, what: "volume store at " + siteName, available: free, needed: size}
	}
	s.volumes[name] = &volume{instance: owner, kind: kind, size: size, digest: digest(data), data: data}
	return nil
}

func removeVolume(s *site, siteName, name string) error {
	if !s.container {
		return berr(errNoContainer, "%s", siteName)
	}
	if _, ok := s.volumes[name]; !ok {
		return berr(errNoObject, "volume %s", name)
	}
	delete(s.volumes, name)
	return nil
}

type instanceInfo struct {
	power string
	disk  bool
	seed  *uint64
}

func (b *simBackend) lookup(ctx context.Context, c uint64, siteName, name string) (instanceInfo, error) {
	var info instanceInfo
	err := b.invoke(ctx, c, siteName, procLookup, func(s *site) error {
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		info.power = r.power
		if s.container {
			_, info.disk = s.volumes[diskVolume(name)]
			if v := s.volumes[seedVolume(name)]; v != nil {
				d := v.digest
				info.seed = &d
			}
		}
		return nil
	})
	return info, err
}

func (b *simBackend) define(ctx context.Context, c uint64, siteName, name string, m mark) error {
	return b.invoke(ctx, c, siteName, procDefine, func(s *site) error {
		ip := b.allocateIP()
		if _, ok := s.instances[name]; ok {
			return berr(errExists, "instance %s", name)
		}
		s.instances[name] = &record{mark: &m, power: "Stopped", ip: ip}
		return nil
	})
}

func (b *simBackend) createDisk(ctx context.Context, c uint64, siteName, name string, size uint64) error {
	return b.invoke(ctx, c, siteName, procCreateDisk, func(s *site) error {
		return addVolume(s, siteName, diskVolume(name), name, "disk", size, nil)
	})
}

func (b *simBackend) createSeed(ctx context.Context, c uint64, siteName, name, vol string, data []byte) error {
	data = append([]byte(nil), data...)
	return b.invoke(ctx, c, siteName, procCreateSeed, func(s *site) error {
		return addVolume(s, siteName, vol, name, "seed", uint64(len(data)), data)
	})
}

func (b *simBackend) start(ctx context.Context, c uint64, siteName, name string) error {
	return b.invoke(ctx, c, siteName, procStart, func(s *site) error {
		_, disk := s.volumes[diskVolume(name)]
		_, seed := s.volumes[seedVolume(name)]
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		if !(s.container && disk && seed) {
			return berr(errNoObject, "a volume of %s", name)
		}
		if r.power == "Running" {
			return berr(errDenied, "%s is already running", name)
		}
		r.power, r.started, r.booted = "Running", time.Now(), false
		return nil
	})
}

func (b *simBackend) addresses(ctx context.Context, c uint64, siteName, name string) ([]net.IP, error) {
	var out []net.IP
	err := b.invoke(ctx, c, siteName, procAddresses, func(s *site) error {
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		b.progress(r)
		if r.lookupFails {
			return berr(errBusy, "address lookup of %s failed", name)
		}
		switch {
		case r.hasAddrs:
			out = append(out, r.addresses...)
		case r.booted:
			out = []net.IP{r.ip}
		}
		return nil
	})
	return out, err
}

func (b *simBackend) stop(ctx context.Context, c uint64, siteName, name string) error {
	return b.invoke(ctx, c, siteName, procStop, func(s *site) error {
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		if r.power == "Stopped" {
			return berr(errDenied, "%s is not running", name)
		}
		r.power, r.booted = "Stopped", false
		return nil
	})
}

func (b *simBackend) undefine(ctx context.Context, c uint64, siteName, name string) error {
	return b.invoke(ctx, c, siteName, procUndefine, func(s *site) error {
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		if r.power != "Stopped" {
			return berr(errBusy, "%s must be stopped first", name)
		}
		delete(s.instances, name)
		return nil
	})
}

func (b *simBackend) deleteVolume(ctx context.Context, c uint64, siteName, proc, vol string) error {
	return b.invoke(ctx, c, siteName, proc, func(s *site) error { return removeVolume(s, siteName, vol) })
}

type listed struct{ name, power string }

func (b *simBackend) list(ctx context.Context, c uint64, siteName string) ([]listed, error) {
	var out []listed
	err := b.invoke(ctx, c, siteName, procList, func(s *site) error {
		for n, r := range s.instances {
			out = append(out, listed{n, r.power})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return nil
	})
	return out, err
}

func (b *simBackend) readMark(ctx context.Context, c uint64, siteName, name string) (*mark, error) {
	var m *mark
	err := b.invoke(ctx, c, siteName, procReadMark, func(s *site) error {
		r := s.instances[name]
		if r == nil {
			return berr(errNoObject, "instance %s", name)
		}
		if r.unreadable {
			return berr(errUnreadable, "instance %s", name)
		}
		if r.mark != nil {
			cp := *r.mark
			m = &cp
		}
		return nil
	})
	return m, err
}

func (b *simBackend) capacity(ctx context.Context, c uint64, siteName string) (uint64, error) {
	var free uint64
	err := b.invoke(ctx, c, siteName, procCapacity, func(s *site) error {
		if !s.container {
			return berr(errNoContainer, "%s", siteName)
		}
		free = s.free()
		return nil
	})
	return free, err
}

func (b *simBackend) ping(ctx context.Context, c uint64, siteName string) (int, error) {
	var n int
	err := b.invoke(ctx, c, siteName, procPing, func(s *site) error { n = len(s.instances); return nil })
	return n, err
}
