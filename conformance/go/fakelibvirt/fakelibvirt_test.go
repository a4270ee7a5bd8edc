package fakelibvirt

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	provider "kvm2conformance/sdk"
)

const state = `{
  "pools": [{"name": "default", "path": "/var/lib/libvirt/images", "capacity": 10737418240,
             "volumes": [{"name": "base.qcow2", "capacity": 1048576, "format": "qcow2"}]}],
  "domains": [{"xml": "<domain type='kvm'><name>web</name><memory>65536</memory></domain>", "running": true}]
}`

// testBinary is the daemon the tests start: $FAKE_LIBVIRTD (scripts/go-check.sh
// sets it), else the one Cargo built into the workspace's target directory
// (`cargo test --workspace` builds it before the Go side runs), else PATH's.
func testBinary() (string, error) {
	if os.Getenv("FAKE_LIBVIRTD") == "" {
		target := os.Getenv("CARGO_TARGET_DIR")
		if target == "" {
			target = filepath.Join("..", "..", "..", "target")
		} else if !filepath.IsAbs(target) {
			target = filepath.Join("..", "..", "..", target)
		}
		built := filepath.Join(target, "debug", "fake-libvirtd")
		if _, err := os.Stat(built); err == nil {
			return filepath.Abs(built)
		}
	}
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	_, err = os.Stat(bin)
	return bin, err
}

// start launches a daemon for one test, or skips saying why it cannot.
func start(t *testing.T, st string) *Daemon {
	t.Helper()
	bin, err := testBinary()
	if err != nil {
		t.Skipf("no daemon to test against: %v (scripts/go-check.sh builds it and sets FAKE_LIBVIRTD)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := Start(ctx, Options{Binary: bin, Dir: t.TempDir(), State: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

func opened(t *testing.T, d *Daemon) *libvirtConn {
	t.Helper()
	l, err := dialLibvirt(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.conn.Close() })
	if err := l.open(); err != nil {
		t.Fatal(err)
	}
	return l
}

// closedErr says whether err is the end of a connection the daemon closed.
func closedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// owner gives each volume "<instance>-disk" to its instance.
func owner(_, volume string) (string, string, bool) {
	if i := strings.TrimSuffix(volume, "-disk"); i != volume {
		return i, "disk", true
	}
	return "", "", false
}

func TestInventoryAndPlanting(t *testing.T) {
	ctx := context.Background()
	d := start(t, state)
	if v, err := d.Ping(ctx); err != nil || v == "" {
		t.Fatalf("ping: %q %v", v, err)
	}
	if d.URI() != "qemu+unix:///system?socket="+d.Socket {
		t.Errorf("uri %q", d.URI())
	}
	uuid, err := d.DefineDomain(ctx, "<domain type='kvm'><name>db</name><memory>65536</memory></domain>", false)
	must(t, err)
	if len(uuid) != 36 {
		t.Errorf("uuid %q", uuid)
	}
	must(t, d.CreateVolume(ctx, "default", "db-disk", 4096, ""))
	res, err := d.Resources(ctx, owner)
	must(t, err)
	var got []string
	for _, r := range res {
		inst := "-"
		if r.Instance != nil {
			inst = *r.Instance
		}
		got = append(got, inst+":"+r.Kind+":"+r.Name)
	}
	want := "db:domain:db web:domain:web -:volume:base.qcow2 db:disk:db-disk"
	if strings.Join(got, " ") != want {
		t.Errorf("resources %v, want %s", got, want)
	}

	before, err := d.Inspect(ctx, "db", owner)
	must(t, err)
	must(t, d.SetPower(ctx, "db", "Running"))
	after, err := d.Inspect(ctx, "db", owner)
	must(t, err)
	if before == nil || after == nil || *before == *after {
		t.Errorf("the fingerprint did not change with the power state: %v %v", before, after)
	}
	// A mark written into the definition changes the fingerprint too.
	config, live, err := d.DomainXML(ctx, "db")
	must(t, err)
	if !strings.Contains(config, "<name>db</name>") || !strings.Contains(live, " id=") {
		t.Errorf("xml %q / %q", config, live)
	}
	marked := strings.Replace(config, "</domain>", "<description>owned</description></domain>", 1)
	_, err = d.DefineDomain(ctx, marked, false)
	must(t, err)
	remarked, err := d.Inspect(ctx, "db", owner)
	must(t, err)
	if *remarked == *after {
		t.Error("the fingerprint did not change with the definition")
	}
	must(t, d.SetDomainState(ctx, "db", "paused"))
	inv, err := d.Inventory(ctx)
	must(t, err)
	if inv.Domains[0].Name != "db" || inv.Domains[0].State != "paused" {
		t.Errorf("domains %+v", inv.Domains)
	}
	must(t, d.RemoveVolume(ctx, "default", "db-disk"))
	must(t, d.RemoveDomain(ctx, "db"))
	if fp, err := d.Inspect(ctx, "db", owner); err != nil || fp != nil {
		t.Errorf("inspect after remove: %v %v", fp, err)
	}

	var refused *RefusedError
	err = d.RemoveDomain(ctx, "db")
	if !errors.As(err, &refused) || !strings.Contains(refused.Message, `"db"`) {
		t.Errorf("removing a missing domain: %v", err)
	}
	if err := d.SetPower(ctx, "web", "Dancing"); err == nil {
		t.Error("an unknown power state was accepted")
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	d := start(t, state)
	l := opened(t, d)

	named := "ConnectGetHostname"
	cases := []struct {
		kind string
		code int32
	}{
		{"Transient", 68},
		{"Permanent", 88},
		{"NotFound", 42},
		{"Quota", 1},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			id, err := d.Inject(ctx, provider.FaultSpec{
				Trigger: provider.Trigger{Type: "Named", Name: named},
				Kind:    provider.FaultKind{Type: c.kind},
			})
			must(t, err)
			_, err = l.hostname(5 * time.Second)
			var re *remoteErr
			if !errors.As(err, &re) || re.Code != c.code {
				t.Fatalf("hostname with %s injected: %v, want code %d", c.kind, err, c.code)
			}
			if _, err := l.hostname(5 * time.Second); err != nil {
				t.Fatalf("a Named fault fired twice: %v", err)
			}
			fired, count, err := d.Fired(ctx, id)
			if err != nil || !fired || count != 1 {
				t.Errorf("fired %v %d %v", fired, count, err)
			}
		})
	}

	// A rule of the daemon's own, by error name; then removed.
	id, err := d.AddFault(ctx, Rule{
		Trigger: Trigger{Type: "nth_call_of", Name: "DomainLookupByName", N: 2},
		Fault:   Fault{Type: "error", Error: &LibvirtError{Code: "VIR_ERR_OPERATION_INVALID", Message: "chosen"}},
	})
	must(t, err)
	must(t, l.lookup("web"))
	var re *remoteErr
	if err := l.lookup("web"); !errors.As(err, &re) || re.Code != 55 || !strings.Contains(re.Message, "chosen") {
		t.Errorf("second lookup: %v", err)
	}
	must(t, d.RemoveFault(ctx, id))

	// The script: one call fails, the next passes.
	_, err = d.PushFault(ctx, &Fault{Type: "error", Error: &LibvirtError{Code: 9}})
	must(t, err)
	pass, err := d.PushFault(ctx, nil)
	must(t, err)
	if _, err := l.hostname(5 * time.Second); err == nil {
		t.Error("the scripted fault did not fire")
	}
	must(t, l.lookup("web"))
	if fired, _, _ := d.Fired(ctx, pass); fired {
		t.Error("a passing script entry reports fired")
	}

	// Nth counts calls from now; Delay holds the call.
	_, err = d.Inject(ctx, provider.FaultSpec{Trigger: provider.Trigger{Type: "Nth", N: 2}, Kind: provider.FaultKind{Type: "Delay", Micros: 80000}})
	must(t, err)
	must(t, l.lookup("web"))
	t0 := time.Now()
	must(t, l.lookup("web"))
	if time.Since(t0) < 80*time.Millisecond {
		t.Errorf("the delayed call took %v", time.Since(t0))
	}

	// Hang holds the call until ClearFaults closes its connection.
	_, err = d.Inject(ctx, provider.FaultSpec{Trigger: provider.Trigger{Type: "Always"}, Kind: provider.FaultKind{Type: "Hang"}})
	must(t, err)
	hung := make(chan error, 1)
	go func() {
		_, err := l.hostname(10 * time.Second)
		hung <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		calls, _, err := d.Trace(ctx, 0)
		must(t, err)
		if n := len(calls); n > 0 && calls[n-1].Fault == "hang" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hung call never arrived")
		}
		time.Sleep(2 * time.Millisecond)
	}
	closed, err := d.ClearFaults(ctx)
	must(t, err)
	if len(closed) != 1 {
		t.Errorf("clear closed %v", closed)
	}
	if err := <-hung; !closedErr(err) {
		t.Errorf("the hung call ended with %v, want EOF", err)
	}

	// Drop and LostReply close the connection.
	for _, kind := range []string{"Drop", "LostReply"} {
		l := opened(t, d)
		_, err := d.Inject(ctx, provider.FaultSpec{Trigger: provider.Trigger{Type: "Named", Name: "domainlookupbyname"}, Kind: provider.FaultKind{Type: kind}})
		must(t, err)
		if err := l.lookup("web"); !closedErr(err) {
			t.Errorf("%s: %v, want EOF", kind, err)
		}
	}

	var refused *RefusedError
	_, err = d.AddFault(ctx, Rule{Trigger: Trigger{Type: "procedure", Name: "DomainFly"}, Fault: Fault{Type: "hang"}})
	if !errors.As(err, &refused) || !strings.Contains(refused.Message, "DomainFly") {
		t.Errorf("unknown procedure: %v", err)
	}
	if _, err := FaultFor(provider.FaultSpec{Trigger: provider.Trigger{Type: "Nth"}, Kind: provider.FaultKind{Type: "Hang"}}); err == nil {
		t.Error("Nth 0 was accepted")
	}
}

func TestObservation(t *testing.T) {
	ctx := context.Background()
	d := start(t, state)
	base, err := d.Baseline(ctx)
	must(t, err)
	l := opened(t, d)
	must(t, l.lookup("web"))
	calls, err := d.BackendCalls(ctx, "site-a", base)
	must(t, err)
	var names []string
	for _, c := range calls {
		if c.Location != "site-a" {
			t.Errorf("location %q", c.Location)
		}
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "dial ConnectOpen DomainLookupByName" {
		t.Errorf("calls %q", got)
	}
	if calls[0].Connection != calls[2].Connection {
		t.Errorf("one connection, two numbers: %+v", calls)
	}
	if n, err := d.Dials(ctx, base); err != nil || n != 1 {
		t.Errorf("dials %d %v", n, err)
	}
	mark, err := d.Mark(ctx)
	must(t, err)
	must(t, l.lookup("web"))
	trace, next, err := d.Trace(ctx, mark)
	must(t, err)
	if len(trace) != 1 || trace[0].Procedure != "DomainLookupByName" || trace[0].Seq != mark || next != mark+1 {
		t.Errorf("trace from %d: %+v next %d", mark, trace, next)
	}
	conns, err := d.Connections(ctx)
	must(t, err)
	if last := conns[len(conns)-1]; last.Closed || last.Calls != 3 {
		t.Errorf("connection %+v", last)
	}

	// Unreachable and back: open connections are closed, new ones refused.
	must(t, d.SetReachability(ctx, "Refused"))
	if err := l.lookup("web"); !closedErr(err) {
		t.Errorf("a call after Refused: %v", err)
	}
	if refused, err := dialLibvirt(d.Socket); err == nil {
		if err := refused.open(); err == nil {
			t.Error("a dial was answered while refused")
		}
		_ = refused.conn.Close()
	}
	must(t, d.SetReachability(ctx, "Up"))
	keep, drop := opened(t, d), opened(t, d)
	conns, err = d.Connections(ctx)
	must(t, err)
	dropID := conns[len(conns)-1].ID
	if closed, err := d.CloseConnections(ctx, dropID); err != nil || len(closed) != 1 || closed[0] != dropID {
		t.Errorf("closing connection %d: %v %v", dropID, closed, err)
	}
	if err := drop.lookup("web"); !closedErr(err) {
		t.Errorf("a call on a closed connection: %v", err)
	}
	must(t, keep.lookup("web"))
	l = keep
	_, err = d.CloseConnections(ctx)
	must(t, err)
	if err := l.lookup("web"); !closedErr(err) {
		t.Errorf("a call after CloseConnections: %v", err)
	}
	if err := d.SetReachability(ctx, "Sideways"); err == nil {
		t.Error("an unknown reachability was accepted")
	}

	// Wedge and restart: a restart keeping connections leaves them silent,
	// one without closes them.
	l = opened(t, d)
	must(t, d.Wedge(ctx))
	if _, err := l.hostname(200 * time.Millisecond); err == nil {
		t.Error("a wedged daemon answered")
	}
	must(t, d.Restart(ctx, true))
	l = opened(t, d)
	must(t, d.Restart(ctx, true))
	if _, err := l.hostname(200 * time.Millisecond); err == nil || closedErr(err) {
		t.Errorf("a connection from before a restart: %v", err)
	}
	l = opened(t, d)
	must(t, d.Restart(ctx, false))
	if _, err := l.hostname(5 * time.Second); !closedErr(err) {
		t.Errorf("a connection from before a restart that closes them: %v", err)
	}
	fresh := opened(t, d)
	if _, err := fresh.hostname(5 * time.Second); err != nil {
		t.Errorf("after restart: %v", err)
	}
	must(t, d.SetLatency(ctx, 30*time.Millisecond))
	t0 := time.Now()
	if _, err := fresh.hostname(5 * time.Second); err != nil || time.Since(t0) < 30*time.Millisecond {
		t.Errorf("latency: %v after %v", err, time.Since(t0))
	}
}

func TestStateControlCapacityAndDump(t *testing.T) {
	ctx := context.Background()
	d := start(t, state)
	must(t, d.HoldBoot(ctx, "web", true))
	must(t, d.HoldBoot(ctx, "web", false))
	must(t, d.HoldBoot(ctx, "", true))
	must(t, d.HoldBoot(ctx, "", false))
	must(t, d.SetIPv4(ctx, "web", "192.0.2.5"))
	must(t, d.SetAddresses(ctx, "web", "lease", []Interface{{Name: "vnet0", Addrs: []string{"192.0.2.6/24"}}}))
	must(t, d.ClearAddresses(ctx, "web", "lease"))
	must(t, d.SetAgentUnresponsive(ctx, "web", true))
	for _, err := range []error{
		d.SetIPv4(ctx, "nope", "192.0.2.5"),
		d.SetIPv4(ctx, "web", "192.0.2"),
		d.SetAddresses(ctx, "web", "carrier-pigeon", nil),
		d.SetAgentUnresponsive(ctx, "nope", true),
	} {
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("a bad request was not refused: %v", err)
		}
	}

	must(t, d.AddPool(ctx, "extra", "/srv/extra", 1<<30))
	must(t, d.SetPoolCapacity(ctx, "default", 4<<30))
	free := uint64(1 << 20)
	must(t, d.SetFree(ctx, "default", &free))
	pool := func(name string) Pool {
		inv, err := d.Inventory(ctx)
		must(t, err)
		for _, p := range inv.Pools {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no pool %s", name)
		return Pool{}
	}
	if p := pool("default"); p.Capacity != 4<<30 || p.Available != free {
		t.Errorf("pool %+v", p)
	}
	must(t, d.SetFree(ctx, "default", nil))
	if p := pool("default"); p.Available != p.Capacity-p.Volumes[0].Allocation {
		t.Errorf("restored pool %+v", p)
	}
	must(t, d.SetPoolAvailable(ctx, "default", 4096))
	must(t, d.SetPoolActive(ctx, "extra", false))
	if p := pool("extra"); p.Active {
		t.Errorf("pool %+v", p)
	}
	must(t, d.RemovePool(ctx, "extra"))

	dump, err := d.Dump(ctx)
	must(t, err)
	copy := start(t, string(dump))
	inv, err := copy.Inventory(ctx)
	must(t, err)
	if len(inv.Domains) != 1 || inv.Domains[0].Name != "web" || inv.Domains[0].State != "running" ||
		len(inv.Pools) != 1 || inv.Pools[0].Volumes[0].Name != "base.qcow2" {
		t.Errorf("the dump loaded as %+v", inv)
	}
}

func TestCancelledRequest(t *testing.T) {
	d := start(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Ping(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled ping: %v", err)
	}
	// Nothing was sent: the connection is still in step.
	if _, err := d.Ping(context.Background()); err != nil {
		t.Error(err)
	}
	// So is one whose deadline has passed.
	short, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	time.Sleep(time.Millisecond)
	if _, err := d.Inventory(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an expired request: %v", err)
	}
	c, err := Dial(context.Background(), d.Control)
	must(t, err)
	defer c.Close()
	if _, err := c.Ping(context.Background()); err != nil {
		t.Error(err)
	}
}
