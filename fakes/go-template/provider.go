package gotemplate

import (
	"context"
	"errors"
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

// containerMissing is the checker's extra reason for a site without its volume store.
const containerMissing = "ContainerMissing"

// siteConfig is one configured site and the placement that maps to it.
type siteConfig struct{ name, placement string }

// config is the provider's configuration; verbosity is shared with the testbed.
type config struct {
	name      string
	sites     []siteConfig
	credDir   string
	diskBytes uint64
	verbosity *int32 // 0, 1 or 2
}

func defaultSites() []siteConfig {
	return []siteConfig{{"site-a", "zone-a"}, {"site-b", "zone-b"}}
}

func (c *config) tokenFile(site string) string { return filepath.Join(c.credDir, site+".token") }
func (c *config) knownHostFile(site string) string {
	return filepath.Join(c.credDir, site+".known_host")
}

func (c *config) siteFor(placement string) (string, bool) {
	for _, s := range c.sites {
		if s.placement == placement {
			return s.name, true
		}
	}
	return "", false
}

func (c *config) hasSite(name string) bool {
	for _, s := range c.sites {
		if s.name == name {
			return true
		}
	}
	return false
}

func (c *config) level() int32 { return atomic.LoadInt32(c.verbosity) }

// templateProfile is the template's default profile.
func templateProfile() provider.Profile {
	return provider.Profile{
		"create-return": "early", "provisioning-state": "get-reports", "child-spans": "span-decorator",
		"quota": "detected", "credentials": "mounted-files", "client-kind": "sdk",
		"gc-mark": "backend-tags", "created-at": "written-at-create", "ip-source": "allocated",
		"list-partial": "partial", "not-found": "error-code", "delete-return": "waits",
		"secondary-resources": "explicit", "timeouts": "per-call", "logging": "tiered",
		"backend-test": "none",
	}
}

// slot is a site's cached connection and the lock that makes one dial at a time.
type slot struct {
	mu      sync.Mutex
	conn    uint64 // 0 for none
	dialing chan struct{}
}

// templateProvider implements the contract over the simulated backend.
type templateProvider struct {
	cfg     config
	backend *simBackend
	slots   map[string]*slot
	locks   nameLocks
}

func newProvider(cfg config, b *simBackend) *templateProvider {
	p := &templateProvider{cfg: cfg, backend: b, slots: map[string]*slot{}}
	for _, s := range cfg.sites {
		p.slots[s.name] = &slot{dialing: make(chan struct{}, 1)}
	}
	return p
}

func (p *templateProvider) Name() string              { return p.cfg.name }
func (p *templateProvider) Profile() provider.Profile { return templateProfile() }
func (p *templateProvider) Checker() provider.Checker { return p }
func (p *templateProvider) ExtraReasons() []string    { return []string{containerMissing} }
func (p *templateProvider) errorf(op provider.Op, k provider.ErrorKind, format string, args ...interface{}) *provider.Error {
	return provider.NewError(p.errName(), op, k, fmt.Sprintf(format, args...), nil)
}

// errName is the provider name every contract error carries.
func (p *templateProvider) errName() string {
	if broken("error-without-provider-name") {
		return ""
	}
	return p.cfg.name
}

// classify maps a failure to a contract error; the failure stays as its cause.
func (p *templateProvider) classify(op provider.Op, what string, err error) *provider.Error {
	var b *backendError
	kind := provider.Transient
	if errors.As(err, &b) {
		switch b.kind {
		case errNoObject:
			if op != provider.OpCreate {
				kind = provider.NotFound
			}
		case errDenied, errAuthFailed, errHostKeyRejected, errUnreadable, errNoContainer:
			kind = provider.Permanent
		case errNoSpace:
			return provider.NewQuotaError(p.errName(), op, provider.Quota{What: b.what, Available: b.available, Needed: b.needed}, err)
		}
	}
	return provider.NewError(p.errName(), op, kind, what, err)
}

// outcome logs an operation's end: one INFO line on success from V1, a WARN on failure.
func (p *templateProvider) outcome(ctx context.Context, op provider.Op, err error) {
	if err == nil {
		if p.cfg.level() >= 1 {
			provider.Log(ctx, provider.LevelInfo, "succeeded", provider.F("op", strings.ToLower(string(op))))
		}
		return
	}
	kind, _ := provider.KindOf(err)
	provider.Log(ctx, provider.LevelWarn, "failed", provider.F("op", strings.ToLower(string(op))), provider.F("kind", string(kind)), provider.F("error", err.Error()))
}

// call runs one backend procedure in its own span, logging it at V2.
func (p *templateProvider) call(ctx context.Context, site, proc string, f func(ctx context.Context) error) error {
	cctx, span := provider.StartSpan(ctx, "template."+proc, provider.LevelDebug, provider.F("site", site))
	defer span.End()
	if p.cfg.level() >= 2 {
		provider.Log(cctx, provider.LevelDebug, "backend call", provider.F("site", site), provider.F("call", proc))
	}
	if ctx.Err() != nil {
		return interruption(ctx)
	}
	return f(cctx)
}

// session is an open connection to a site for one operation.
type session struct {
	p    *templateProvider
	site string
	conn uint64
}

func (s *session) call(ctx context.Context, proc string, f func(ctx context.Context, conn uint64) error) error {
	err := s.p.call(ctx, s.site, proc, func(ctx context.Context) error { return f(ctx, s.conn) })
	if isKind(err, errClosed) {
		s.p.forget(s.site, s.conn)
	}
	return err
}

// read is a call that changes nothing, so a busy answer is retried once.
func (s *session) read(ctx context.Context, proc string, f func(ctx context.Context, conn uint64) error) error {
	err := s.call(ctx, proc, f)
	if isKind(err, errBusy) {
		err = s.call(ctx, proc, f)
	}
	return err
}

func (p *templateProvider) forget(site string, conn uint64) {
	sl := p.slots[site]
	sl.mu.Lock()
	if sl.conn == conn {
		sl.conn = 0
	}
	sl.mu.Unlock()
}

func readTrimmed(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", &backendError{kind: errCredentialsMissing, what: path}
	}
	return strings.TrimSpace(string(b)), nil
}

// dial reads the credentials on every dial, so a rotation needs no restart.
func (p *templateProvider) dial(ctx context.Context, site string) (uint64, error) {
	token, err := readTrimmed(p.cfg.tokenFile(site))
	if err != nil {
		return 0, err
	}
	trusted, err := readTrimmed(p.cfg.knownHostFile(site))
	if err != nil {
		return 0, err
	}
	var conn uint64
	err = p.call(ctx, site, procDial, func(ctx context.Context) error {
		var e error
		conn, e = p.backend.dial(ctx, site, token, trusted)
		return e
	})
	return conn, err
}

func (p *templateProvider) session(ctx context.Context, site string) (*session, error) {
	sl := p.slots[site]
	sl.mu.Lock()
	conn := sl.conn
	sl.mu.Unlock()
	if conn != 0 {
		return &session{p, site, conn}, nil
	}
	select {
	case sl.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, interruption(ctx)
	}
	defer func() { <-sl.dialing }()
	sl.mu.Lock()
	conn = sl.conn
	sl.mu.Unlock()
	if conn != 0 {
		return &session{p, site, conn}, nil
	}
	c, err := p.dial(ctx, site)
	if isKind(err, errBusy) {
		c, err = p.dial(ctx, site)
	}
	if err != nil {
		return nil, err
	}
	sl.mu.Lock()
	sl.conn = c
	sl.mu.Unlock()
	return &session{p, site, c}, nil
}

// firstUsable is the first IPv4 address that is not loopback, link-local,
// unspecified or broadcast.
func firstUsable(addrs []net.IP) net.IP {
	for _, a := range addrs {
		v4 := a.To4()
		if v4 == nil || v4.IsLoopback() || v4.IsLinkLocalUnicast() || v4.IsUnspecified() || v4.Equal(net.IPv4bcast) {
			continue
		}
		return v4
	}
	return nil
}

// nameLocks serialises Create and Delete of one name; waiting honours the context.
type nameLocks struct {
	mu    sync.Mutex
	table map[string]*nameLock
}

type nameLock struct {
	ch    chan struct{}
	users int
}

func (l *nameLocks) lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.table == nil {
		l.table = map[string]*nameLock{}
	}
	e := l.table[key]
	if e == nil {
		e = &nameLock{ch: make(chan struct{}, 1)}
		l.table[key] = e
	}
	e.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		e.users--
		if e.users == 0 {
			delete(l.table, key)
		}
		l.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, interruption(ctx)
	}
}

// Create makes the instance, or finishes one an earlier Create left half way.
func (p *templateProvider) Create(ctx context.Context, req *provider.CreateRequest) (string, error) {
	ctx, span := provider.StartSpan(ctx, "template.create", provider.LevelInfo, provider.F("name", req.Name), provider.F("placement", req.Placement))
	defer span.End()
	id, err := p.create(ctx, req)
	p.outcome(ctx, provider.OpCreate, err)
	if err != nil {
		return "", err
	}
	return id, nil
}

func (p *templateProvider) create(ctx context.Context, req *provider.CreateRequest) (string, error) {
	op := provider.OpCreate
	if err := validateRequest(req); err != nil {
		return "", provider.NewError(p.errName(), op, provider.Permanent, "invalid request", err)
	}
	site, ok := p.cfg.siteFor(req.Placement)
	if !ok {
		return "", p.errorf(op, provider.Permanent, "unknown placement %q", req.Placement)
	}
	name := req.Name
	id := instanceID(site, name)
	unlock, err := p.locks.lock(ctx, site+"/"+name)
	if err != nil {
		return "", p.classify(op, "waiting for "+name, err)
	}
	defer unlock()
	s, err := p.session(ctx, site)
	if err != nil {
		return "", p.classify(op, "connecting to "+site, err)
	}
	var info instanceInfo
	err = s.call(ctx, procLookup, func(ctx context.Context, c uint64) error {
		var e error
		info, e = p.backend.lookup(ctx, c, site, name)
		return e
	})
	exists := err == nil
	if err != nil && !isKind(err, errNoObject) {
		return "", p.classify(op, "looking up "+name, err)
	}
	if exists {
		var m *mark
		err := s.call(ctx, procReadMark, func(ctx context.Context, c uint64) error {
			var e error
			m, e = p.backend.readMark(ctx, c, site, name)
			return e
		})
		if err != nil {
			return "", p.classify(op, "reading the mark of "+name, err)
		}
		switch {
		case m == nil && broken("adopts-unmarked"):
			// Taken over as if it were ours.
		case m == nil:
			return "", p.errorf(op, provider.Permanent, "%s exists at %s and is not managed by this provider", name, site)
		case m.uid != "" && m.uid != req.UID:
			return "", p.errorf(op, provider.Permanent, "%s exists at %s and belongs to another owner", name, site)
		case m.uid == "":
			// Marked but of unknown owner: the same instance, returned as it is.
			return id, nil
		}
		// Our own instance: finish what an earlier Create left, change nothing that exists.
	}
	if err := p.converge(ctx, s, req, exists, info); err != nil {
		return "", err
	}
	return id, nil
}

func (p *templateProvider) converge(ctx context.Context, s *session, req *provider.CreateRequest, exists bool, info instanceInfo) error {
	op, site, name := provider.OpCreate, s.site, req.Name
	payload := []byte(req.CloudInit)
	needDisk := !exists || !info.disk
	needSeed := !exists || info.seed == nil
	var needed uint64
	if needDisk {
		needed += p.cfg.diskBytes
	}
	if needSeed {
		needed += uint64(len(payload))
	}
	if needed > 0 {
		var free uint64
		err := s.call(ctx, procCapacity, func(ctx context.Context, c uint64) error {
			var e error
			free, e = p.backend.capacity(ctx, c, site)
			return e
		})
		if err != nil {
			return p.classify(op, "reading free capacity at "+site, err)
		}
		if needed > free {
			return provider.NewQuotaError(p.errName(), op, provider.Quota{What: "volume store at " + site, Available: free, Needed: needed}, nil)
		}
	}
	if !exists {
		now := time.Now()
		m := mark{tag: req.Tag, uid: req.UID, createdAt: &now}
		if broken("no-created-at") {
			m.createdAt = nil
		}
		if err := s.call(ctx, procDefine, func(ctx context.Context, c uint64) error {
			return p.backend.define(ctx, c, site, name, m)
		}); err != nil {
			return p.classify(op, "defining "+name, err)
		}
	}
	if needDisk {
		err := s.call(ctx, procCreateDisk, func(ctx context.Context, c uint64) error {
			return p.backend.createDisk(ctx, c, site, name, p.cfg.diskBytes)
		})
		if err != nil && !isKind(err, errExists) {
			return p.classify(op, "creating the disk of "+name, err)
		}
	}
	if needSeed {
		err := s.call(ctx, procCreateSeed, func(ctx context.Context, c uint64) error {
			return p.backend.createSeed(ctx, c, site, name, seedVolume(name), payload)
		})
		if err != nil && !isKind(err, errExists) {
			return p.classify(op, "creating the seed of "+name, err)
		}
	}
	if !exists || info.power == "Stopped" {
		if err := s.call(ctx, procStart, func(ctx context.Context, c uint64) error {
			return p.backend.start(ctx, c, site, name)
		}); err != nil {
			return p.classify(op, "starting "+name, err)
		}
	}
	return nil
}

// Get reports the instance's state from its power and addresses.
func (p *templateProvider) Get(ctx context.Context, id string) (provider.Instance, error) {
	ctx, span := provider.StartSpan(ctx, "template.get", provider.LevelInfo, provider.F("id", id))
	defer span.End()
	inst, err := p.get(ctx, id)
	p.outcome(ctx, provider.OpGet, err)
	return inst, err
}

func (p *templateProvider) get(ctx context.Context, id string) (provider.Instance, error) {
	op := provider.OpGet
	site, name, ok := parseID(id)
	if !ok && broken("malformed-get-is-not-found") {
		return provider.Instance{}, p.errorf(op, provider.NotFound, "malformed instance id")
	}
	if !ok {
		return provider.Instance{}, p.errorf(op, provider.Permanent, "malformed instance id")
	}
	if !p.cfg.hasSite(site) {
		return provider.Instance{}, p.errorf(op, provider.Permanent, "site %q is not configured", site)
	}
	s, err := p.session(ctx, site)
	if err != nil {
		return provider.Instance{}, p.classify(op, "connecting to "+site, err)
	}
	var info instanceInfo
	if err := s.call(ctx, procLookup, func(ctx context.Context, c uint64) error {
		var e error
		info, e = p.backend.lookup(ctx, c, site, name)
		return e
	}); err != nil {
		return provider.Instance{}, p.classify(op, "looking up "+name, err)
	}
	var m *mark
	if err := s.call(ctx, procReadMark, func(ctx context.Context, c uint64) error {
		var e error
		m, e = p.backend.readMark(ctx, c, site, name)
		return e
	}); err != nil {
		return provider.Instance{}, p.classify(op, "reading the mark of "+name, err)
	}
	if m == nil {
		return provider.Instance{}, p.errorf(op, provider.NotFound, "%s is not managed by this provider", name)
	}
	state, ip := provider.Stopped, ""
	if info.power == "Running" {
		var addrs []net.IP
		err := s.call(ctx, procAddresses, func(ctx context.Context, c uint64) error {
			var e error
			addrs, e = p.backend.addresses(ctx, c, site, name)
			return e
		})
		var in *interrupted
		switch {
		case err == nil:
			state = provider.Provisioning
			if v4 := firstUsable(addrs); v4 != nil {
				state, ip = provider.Running, v4.String()
			}
		case errors.As(err, &in) || isKind(err, errClosed) || isKind(err, errNoObject):
			return provider.Instance{}, p.classify(op, "reading the addresses of "+name, err)
		default:
			state = provider.Provisioning
		}
	}
	return provider.Instance{ID: id, Name: name, State: state, IPv4: ip, UID: m.uid, Tag: m.tag, CreatedAt: m.createdAt}, nil
}

// Delete removes the instance and its parts and returns once they are gone.
func (p *templateProvider) Delete(ctx context.Context, id string) error {
	ctx, span := provider.StartSpan(ctx, "template.delete", provider.LevelInfo, provider.F("id", id))
	defer span.End()
	err := p.delete(ctx, id)
	p.outcome(ctx, provider.OpDelete, err)
	return err
}

func (p *templateProvider) delete(ctx context.Context, id string) error {
	op := provider.OpDelete
	site, name, ok := parseID(id)
	if !ok {
		return p.errorf(op, provider.Permanent, "malformed instance id")
	}
	if !p.cfg.hasSite(site) && broken("unconfigured-delete-is-permanent") {
		return p.errorf(op, provider.Permanent, "site %q is not configured", site)
	}
	if !p.cfg.hasSite(site) {
		// Nothing of ours can live where we were never configured to go.
		return nil
	}
	unlock, err := p.locks.lock(ctx, site+"/"+name)
	if err != nil {
		return p.classify(op, "waiting for "+name, err)
	}
	defer unlock()
	s, err := p.session(ctx, site)
	if err != nil {
		return p.classify(op, "connecting to "+site, err)
	}
	var info instanceInfo
	err = s.call(ctx, procLookup, func(ctx context.Context, c uint64) error {
		var e error
		info, e = p.backend.lookup(ctx, c, site, name)
		return e
	})
	if isKind(err, errNoObject) {
		return p.removeParts(ctx, s, name)
	}
	if err != nil {
		return p.classify(op, "looking up "+name, err)
	}
	var m *mark
	err = s.call(ctx, procReadMark, func(ctx context.Context, c uint64) error {
		var e error
		m, e = p.backend.readMark(ctx, c, site, name)
		return e
	})
	if isKind(err, errNoObject) {
		return p.removeParts(ctx, s, name)
	}
	if err != nil {
		return p.classify(op, "reading the mark of "+name, err)
	}
	if m == nil && !broken("delete-ignores-ownership") {
		return p.errorf(op, provider.Permanent, "%s at %s is not managed by this provider; left alone", name, site)
	}
	if info.power != "Stopped" {
		err := s.call(ctx, procStop, func(ctx context.Context, c uint64) error { return p.backend.stop(ctx, c, site, name) })
		if err != nil && !isKind(err, errNoObject) {
			return p.classify(op, "stopping "+name, err)
		}
	}
	err = s.call(ctx, procUndefine, func(ctx context.Context, c uint64) error { return p.backend.undefine(ctx, c, site, name) })
	if err != nil && !isKind(err, errNoObject) {
		return p.classify(op, "undefining "+name, err)
	}
	return p.removeParts(ctx, s, name)
}

// removeParts deletes the disk and the seed, tolerating parts already gone.
func (p *templateProvider) removeParts(ctx context.Context, s *session, name string) error {
	parts := []struct{ part, proc, vol string }{
		{"disk", procDeleteDisk, diskVolume(name)},
		{"seed", procDeleteSeed, seedVolume(name)},
	}
	errs := make([]error, len(parts))
	for i, pt := range parts {
		pt := pt
		errs[i] = s.call(ctx, pt.proc, func(ctx context.Context, c uint64) error {
			return p.backend.deleteVolume(ctx, c, s.site, pt.proc, pt.vol)
		})
	}
	for i, err := range errs {
		if err == nil || isKind(err, errNoObject) || isKind(err, errNoContainer) {
			continue
		}
		return p.classify(provider.OpDelete, fmt.Sprintf("deleting the %s of %s", parts[i].part, name), err)
	}
	return nil
}

// ListByTag lists every site at once; a site that does not answer in time is named
// unreachable rather than failing the listing.
func (p *templateProvider) ListByTag(ctx context.Context, tag string) (provider.Listing, error) {
	ctx, span := provider.StartSpan(ctx, "template.list_by_tag", provider.LevelInfo, provider.F("tag", tag))
	defer span.End()
	l, err := p.list(ctx, tag)
	p.outcome(ctx, provider.OpListByTag, err)
	return l, err
}

func (p *templateProvider) list(ctx context.Context, tag string) (provider.Listing, error) {
	siteCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		siteCtx, cancel = context.WithTimeout(ctx, time.Until(dl)*3/4)
		defer cancel()
	}
	type result struct {
		found []provider.Instance
		err   error
	}
	results := make([]result, len(p.cfg.sites))
	var wg sync.WaitGroup
	for i, sc := range p.cfg.sites {
		wg.Add(1)
		go func(i int, site string) {
			defer wg.Done()
			found, err := p.listSite(siteCtx, site, tag)
			results[i] = result{found, err}
		}(i, sc.name)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return provider.Listing{}, p.classify(provider.OpListByTag, "listing", interruption(ctx))
	}
	anyOK := false
	for _, r := range results {
		anyOK = anyOK || r.err == nil
	}
	if !anyOK && len(results) > 0 {
		// With no site answering, an empty listing could pass for an empty backend.
		return provider.Listing{}, p.classify(provider.OpListByTag, "listing: no site answered", results[0].err)
	}
	l := provider.Listing{Instances: []provider.Instance{}, Unreachable: []provider.UnreachableLocation{}}
	for i, r := range results {
		site := p.cfg.sites[i].name
		if r.err != nil {
			provider.Log(ctx, provider.LevelWarn, "site skipped", provider.F("site", site), provider.F("error", r.err.Error()))
			l.Unreachable = append(l.Unreachable, provider.UnreachableLocation{Location: site, Reason: r.err.Error()})
			continue
		}
		l.Instances = append(l.Instances, r.found...)
	}
	if broken("list-reversed") {
		for i, j := 0, len(l.Instances)-1; i < j; i, j = i+1, j-1 {
			l.Instances[i], l.Instances[j] = l.Instances[j], l.Instances[i]
		}
	}
	return l, nil
}

func (p *templateProvider) listSite(ctx context.Context, site, tag string) ([]provider.Instance, error) {
	s, err := p.session(ctx, site)
	if err != nil {
		return nil, err
	}
	var items []listed
	if err := s.read(ctx, procList, func(ctx context.Context, c uint64) error {
		var e error
		items, e = p.backend.list(ctx, c, site)
		return e
	}); err != nil {
		return nil, err
	}
	out := []provider.Instance{}
	for _, it := range items {
		it := it
		var m *mark
		err := s.read(ctx, procReadMark, func(ctx context.Context, c uint64) error {
			var e error
			m, e = p.backend.readMark(ctx, c, site, it.name)
			return e
		})
		switch {
		case err == nil && m != nil && m.tag == tag:
		case err == nil && m == nil && broken("list-leaks-unmarked"):
			m = &mark{}
		case err == nil, isKind(err, errNoObject):
			continue
		case isKind(err, errUnreadable):
			provider.Log(ctx, provider.LevelWarn, "skipping an unreadable mark", provider.F("site", site), provider.F("instance", it.name))
			continue
		case isKind(err, errDenied):
			// The backend refuses this one read for good; the others can still be read.
			provider.Log(ctx, provider.LevelWarn, "skipping an instance whose mark read is refused", provider.F("site", site), provider.F("instance", it.name))
			continue
		default:
			return nil, err
		}
		state := provider.Stopped
		if it.power == "Running" {
			state = provider.Provisioning
		}
		out = append(out, provider.Instance{ID: instanceID(site, it.name), Name: it.name, State: state, UID: m.uid, Tag: m.tag, CreatedAt: m.createdAt})
	}
	return out, nil
}

// Check dials every site afresh, so it sees what a new connection would.
func (p *templateProvider) Check(ctx context.Context) []provider.HostHealth {
	ctx, span := provider.StartSpan(ctx, "template.check", provider.LevelInfo)
	defer span.End()
	out := make([]provider.HostHealth, len(p.cfg.sites))
	var wg sync.WaitGroup
	for i, sc := range p.cfg.sites {
		if broken("check-sequential") {
			out[i] = p.checkSite(ctx, sc.name)
			continue
		}
		wg.Add(1)
		go func(i int, site string) {
			defer wg.Done()
			out[i] = p.checkSite(ctx, site)
		}(i, sc.name)
	}
	wg.Wait()
	p.outcome(ctx, provider.OpCheck, nil)
	return out
}

func (p *templateProvider) checkSite(ctx context.Context, site string) provider.HostHealth {
	details := map[string]string{"location": site}
	var n int
	var free uint64
	conn, err := p.dial(ctx, site)
	if err == nil {
		s := &session{p, site, conn}
		err = s.call(ctx, procPing, func(ctx context.Context, c uint64) error {
			var e error
			n, e = p.backend.ping(ctx, c, site)
			return e
		})
		if err == nil {
			err = s.call(ctx, procCapacity, func(ctx context.Context, c uint64) error {
				var e error
				free, e = p.backend.capacity(ctx, c, site)
				return e
			})
		}
		p.backend.close(site, conn)
	}
	if err == nil {
		details["instances"] = fmt.Sprint(n)
		details["freeBytes"] = fmt.Sprint(free)
		reason := "Ready"
		if broken("check-invents-a-reason") {
			reason = "AllGood"
		}
		return provider.HostHealth{Location: site, Ready: true, Reason: reason, Message: site + " is ready", Details: details}
	}
	reason := "Unreachable"
	var in *interrupted
	switch {
	case errors.As(err, &in):
		reason = "Timeout"
	case isKind(err, errAuthFailed), isKind(err, errDenied):
		// A site that takes the connection and denies the calls: our identity
		// lacks what the calls need.
		reason = "AuthFailed"
	case isKind(err, errHostKeyRejected):
		reason = "HostKeyRejected"
	case isKind(err, errCredentialsMissing):
		reason = "CredentialsUnavailable"
	case isKind(err, errNoContainer) && !broken("check-container-missing-is-unreachable"):
		reason = containerMissing
	}
	return provider.HostHealth{Location: site, Ready: false, Reason: reason, Message: site + ": " + err.Error(), Details: details}
}
