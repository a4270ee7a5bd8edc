package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stragglerDone says the straggler's goroutine has sent (or dropped) its telemetry.
var stragglerDone = make(chan struct{}, 1)

// fakeProvider answers Get by the ID it is asked for, so each test picks a behaviour.
type fakeProvider struct{}

func (fakeProvider) Name() string                                { return "fake" }
func (fakeProvider) Profile() Profile                            { return Profile{"quota": "detected"} }
func (fakeProvider) Checker() Checker                            { return nil }
func (fakeProvider) Delete(ctx context.Context, id string) error { return nil }
func (fakeProvider) ListByTag(ctx context.Context, tag string) (Listing, error) {
	return Listing{}, nil
}

func (fakeProvider) Create(ctx context.Context, req *CreateRequest) (string, error) {
	return "fake/" + req.Name, nil
}

func (fakeProvider) Get(ctx context.Context, id string) (Instance, error) {
	switch id {
	case "slow":
		<-ctx.Done()
		msg := "call cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			msg = "deadline exceeded"
		}
		return Instance{}, NewError("fake", OpGet, Transient, msg, ctx.Err())
	case "quota":
		cause := fmt.Errorf("device quota: %w", errors.New("disk pool full"))
		return Instance{}, NewQuotaError("fake", OpGet, Quota{What: "site-a", Available: 1, Needed: 2}, cause)
	case "boom":
		return Instance{}, errors.New("wires crossed")
	case "straggler":
		// A goroutine that outlives the request and logs after its reply.
		ctx, sp := StartSpan(ctx, "fake.get", LevelInfo)
		go func() {
			time.Sleep(50 * time.Millisecond)
			Log(ctx, LevelWarn, "late")
			sp.End()
			stragglerDone <- struct{}{}
		}()
		return Instance{ID: id, Name: "web-1", State: Stopped}, nil
	case "traced":
		ctx, sp := StartSpan(ctx, "fake.get", LevelInfo, F("id", id))
		cctx, child := StartSpan(ctx, "fake.lookup", LevelDebug)
		Log(cctx, LevelDebug, "backend call")
		child.End()
		Log(ctx, LevelInfo, "succeeded", F("op", "get"))
		sp.End()
	}
	t := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	return Instance{ID: id, Name: "web-1", State: Running, IPv4: "10.0.0.5", UID: "u", Tag: "t", CreatedAt: &t}, nil
}

type fakeTestbed struct {
	mu        sync.Mutex
	tornDown  int
	verbosity string
}

func (t *fakeTestbed) Provider() Provider                            { return fakeProvider{} }
func (t *fakeTestbed) Restart(ctx context.Context) (Provider, error) { return fakeProvider{}, nil }
func (t *fakeTestbed) Teardown(ctx context.Context) error {
	t.mu.Lock()
	t.tornDown++
	t.mu.Unlock()
	return nil
}
func (t *fakeTestbed) Request(name, tag string, l Location) CreateRequest {
	return CreateRequest{Name: name, UID: "u", Tag: tag, Placement: l.Placement, CloudInit: "#cloud-config\n"}
}
func (t *fakeTestbed) IDFor(location, name string) string { return location + "/" + name }
func (t *fakeTestbed) LocationOf(id string) (string, bool) {
	i := strings.Index(id, "/")
	return id[:max(i, 0)], i > 0
}
func (t *fakeTestbed) MalformedIDs() []string            { return []string{""} }
func (t *fakeTestbed) UnconfiguredID(name string) string { return "nowhere/" + name }
func (t *fakeTestbed) UnknownPlacement() string          { return "no-such-zone" }

// Inventory is implemented but not declared; Observation is both.
func (t *fakeTestbed) Resources(ctx context.Context, location string) ([]Resource, error) {
	return nil, nil
}
func (t *fakeTestbed) Calls(ctx context.Context, since uint64) ([]BackendCall, error) {
	return nil, nil
}
func (t *fakeTestbed) Dials(ctx context.Context, location string) (uint64, error) {
	if location == "site-panic" {
		panic("dials exploded")
	}
	if location != "site-a" {
		return 0, Hookf("no site %s", location)
	}
	return 3, nil
}
func (t *fakeTestbed) SetVerbosity(ctx context.Context, v string) error {
	t.mu.Lock()
	t.verbosity = v
	t.mu.Unlock()
	return nil
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

type fakeFixture struct {
	mu       sync.Mutex
	testbeds []*fakeTestbed
}

func (f *fakeFixture) Facts() Facts {
	return Facts{
		ProviderName: "fake", ProviderVersion: "9.9.9", Profile: Profile{"quota": "detected"},
		Hooks: []Hook{HookObservation}, Locations: []Location{{"site-a", "zone-a"}}, HasChecker: false,
	}
}

func (f *fakeFixture) Open(ctx context.Context) (Testbed, error) {
	tb := &fakeTestbed{}
	f.mu.Lock()
	f.testbeds = append(f.testbeds, tb)
	f.mu.Unlock()
	return tb, nil
}

// client drives Serve over pipes as the suite would.
type client struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan map[string]interface{}
	done  chan error
}

func start(t *testing.T, f Fixture) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, lines: make(chan map[string]interface{}, 100), done: make(chan error, 1)}
	go func() {
		err := Serve(context.Background(), f, inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]interface{}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the provider wrote a line that is not JSON: %v", err)
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() { inW.Close() })
	return c
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) next() map[string]interface{} {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the provider closed its output")
		}
		return m
	case <-time.After(5 * time.Second):
		c.t.Fatalf("no line from the provider within 5 s")
	}
	return nil
}

// reply skips notifications and returns the next reply.
func (c *client) reply() map[string]interface{} {
	c.t.Helper()
	for {
		m := c.next()
		if _, ok := m["method"]; !ok {
			return m
		}
	}
}

func (c *client) open() {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"fixture/open","params":{}}`)
	r := c.reply()
	res, ok := r["result"].(map[string]interface{})
	if !ok || res["testbed"] != 1.0 || res["provider"].(map[string]interface{})["provider"] != 2.0 {
		c.t.Fatalf("fixture/open answered %v, want testbed 1 and provider 2", r)
	}
}

func errCode(m map[string]interface{}) float64 {
	e, ok := m["error"].(map[string]interface{})
	if !ok {
		return 0
	}
	return e["code"].(float64)
}

func TestInitialize(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocol_versions":[1],"suite_version":"0.1.0"}}`)
	r := c.reply()
	res := r["result"].(map[string]interface{})
	if r["id"] != 7.0 || res["protocol_version"] != 1.0 || res["provider_name"] != "fake" || res["provider_version"] != "9.9.9" {
		t.Fatalf("initialize answered %v", r)
	}
	if hooks := res["hooks"].([]interface{}); len(hooks) != 1 || hooks[0] != "Observation" {
		t.Fatalf("hooks %v, want [Observation]", hooks)
	}
	if env, ok := res["environment"].(map[string]interface{}); !ok || len(env) != 0 {
		t.Fatalf("environment %v, want an empty object", res["environment"])
	}
	c.send(`{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocol_versions":[2,3],"suite_version":"0.1.0"}}`)
	if r := c.reply(); errCode(r) != CodeUnsupportedVersion || r["id"] != 8.0 {
		t.Fatalf("an unspoken version answered %v, want code 3", r)
	}
}

func TestProtocolFailures(t *testing.T) {
	cases := []struct {
		name string
		line string
		code float64
		id   interface{}
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,`, CodeParseError, nil},
		{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", CodeParseError, nil},
		{"not an object", `[1,2,3]`, CodeInvalidRequest, nil},
		{"no method", `{"jsonrpc":"2.0","id":4}`, CodeInvalidRequest, 4.0},
		{"wrong version", `{"jsonrpc":"1.0","id":5,"method":"shutdown"}`, CodeInvalidRequest, 5.0},
		{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"shutdown"}`, CodeInvalidRequest, nil},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"provider/reboot","params":{}}`, CodeMethodNotFound, 6.0},
		{"missing field", `{"jsonrpc":"2.0","id":7,"method":"provider/get","params":{"provider":2}}`, CodeInvalidParams, 7.0},
		{"wrong type", `{"jsonrpc":"2.0","id":8,"method":"provider/get","params":{"provider":"two","id":"x"}}`, CodeInvalidParams, 8.0},
		{"unknown provider", `{"jsonrpc":"2.0","id":9,"method":"provider/get","params":{"provider":99,"id":"x"}}`, CodeUnknownHandle, 9.0},
		{"unknown testbed", `{"jsonrpc":"2.0","id":10,"method":"testbed/malformed_ids","params":{"testbed":99}}`, CodeUnknownHandle, 10.0},
		{"undeclared hook", `{"jsonrpc":"2.0","id":11,"method":"inventory/resources","params":{"testbed":1,"location":"site-a"}}`, CodeInvalidRequest, 11.0},
		{"unimplemented hook", `{"jsonrpc":"2.0","id":12,"method":"faults/clear","params":{"testbed":1}}`, CodeInvalidRequest, 12.0},
		{"hook failure", `{"jsonrpc":"2.0","id":13,"method":"observation/dials","params":{"testbed":1,"location":"site-q"}}`, CodeHookFailed, 13.0},
		{"internal failure", `{"jsonrpc":"2.0","id":14,"method":"provider/get","params":{"provider":2,"id":"boom"}}`, CodeInternalError, 14.0},
		{"no checker", `{"jsonrpc":"2.0","id":15,"method":"checker/check","params":{"provider":2}}`, CodeInvalidRequest, 15.0},
	}
	c := start(t, &fakeFixture{})
	c.open()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.line)
			r := c.reply()
			if errCode(r) != tc.code || r["id"] != tc.id {
				t.Fatalf("answered %v, want code %v for id %v", r, tc.code, tc.id)
			}
			if _, ok := r["result"]; ok {
				t.Fatalf("an error reply also carries a result: %v", r)
			}
		})
	}
}

func TestHookErrorMessageIsTheHooks(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"observation/dials","params":{"testbed":1,"location":"site-q"}}`)
	r := c.reply()
	if msg := r["error"].(map[string]interface{})["message"]; msg != "no site site-q" {
		t.Fatalf("hook failure message %q, want the hook's own", msg)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"observation/dials","params":{"testbed":1,"location":"site-a"}}`)
	if r := c.reply(); r["result"].(map[string]interface{})["dials"] != 3.0 {
		t.Fatalf("dials answered %v", r)
	}
}

func TestAPanicIsAnsweredAsAPanic(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"observation/dials","params":{"testbed":1,"location":"site-panic"}}`)
	r := c.reply()
	if errCode(r) != CodeProviderPanicked {
		t.Fatalf("a panicking method answered %v, want code %d", r, CodeProviderPanicked)
	}
	if msg := r["error"].(map[string]interface{})["message"].(string); !strings.Contains(msg, "dials exploded") {
		t.Fatalf("panic message %q, want the panic's own", msg)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"observation/dials","params":{"testbed":1,"location":"site-a"}}`)
	if r := c.reply(); r["result"].(map[string]interface{})["dials"] != 3.0 {
		t.Fatalf("after a panic, dials answered %v", r)
	}
}

func TestOutOfOrderRepliesAndCancel(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":10,"method":"provider/get","params":{"provider":2,"deadline_ms":null,"id":"slow"}}`)
	c.send(`{"jsonrpc":"2.0","id":11,"method":"provider/get","params":{"provider":2,"deadline_ms":5000,"id":"fast"}}`)
	first := c.reply()
	if first["id"] != 11.0 {
		t.Fatalf("the fast request should be answered while the slow one runs; got %v", first)
	}
	inst := first["result"].(map[string]interface{})["ok"].(map[string]interface{})
	if inst["created_at"] != "2024-05-01T12:00:00.123456789Z" || inst["ipv4"] != "10.0.0.5" || inst["state"] != "Running" {
		t.Fatalf("instance encoded as %v", inst)
	}
	c.send(`{"jsonrpc":"2.0","method":"$/cancel","params":{"id":10}}`)
	r := c.reply()
	if r["id"] != 10.0 {
		t.Fatalf("the cancelled request got no answer; got %v", r)
	}
	ce := r["result"].(map[string]interface{})["error"].(map[string]interface{})
	if ce["kind"] != "Transient" || ce["message"] != "call cancelled" || ce["op"] != "Get" {
		t.Fatalf("the cancelled request answered %v, want Transient call cancelled", ce)
	}
}

func TestDeadlineReachesTheContext(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	began := time.Now()
	c.send(`{"jsonrpc":"2.0","id":5,"method":"provider/get","params":{"provider":2,"deadline_ms":50,"id":"slow"}}`)
	r := c.reply()
	took := time.Since(began)
	ce := r["result"].(map[string]interface{})["error"].(map[string]interface{})
	if ce["message"] != "deadline exceeded" || took < 50*time.Millisecond || took > 2*time.Second {
		t.Fatalf("answered %v after %v, want deadline exceeded after about 50 ms", ce, took)
	}
}

func TestContractErrorCarriesQuotaAndChain(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":5,"method":"provider/get","params":{"provider":2,"id":"quota"}}`)
	ce := c.reply()["result"].(map[string]interface{})["error"].(map[string]interface{})
	q := ce["quota"].(map[string]interface{})
	if ce["kind"] != "QuotaExceeded" || q["what"] != "site-a" || q["available"] != 1.0 || q["needed"] != 2.0 {
		t.Fatalf("quota error encoded as %v", ce)
	}
	src := ce["source"].([]interface{})
	if len(src) != 2 || src[0] != "device quota: disk pool full" || src[1] != "disk pool full" {
		t.Fatalf("source chain %v, want outermost first", src)
	}
}

func TestTelemetryAfterTheReplyIsDropped(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":21,"method":"provider/get","params":{"provider":2,"id":"straggler"}}`)
	if m := c.next(); m["method"] != "$/span/start" {
		t.Fatalf("first line %v, want the span's start", m)
	}
	if r := c.next(); r["id"] != 21.0 {
		t.Fatalf("second line %v, want the reply", r)
	}
	select {
	case <-stragglerDone:
	case <-time.After(5 * time.Second):
		t.Fatalf("the straggler never finished")
	}
	c.send(`{"jsonrpc":"2.0","id":22,"method":"testbed/malformed_ids","params":{"testbed":1}}`)
	if m := c.next(); m["id"] != 22.0 {
		t.Fatalf("after the reply the provider sent %v, want nothing before the next reply", m)
	}
}

func TestTelemetryPrecedesTheReply(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":20,"method":"provider/get","params":{"provider":2,"id":"traced"}}`)
	var methods []string
	var root, child float64
	for {
		m := c.next()
		method, ok := m["method"].(string)
		if !ok {
			if m["id"] != 20.0 {
				t.Fatalf("reply %v", m)
			}
			break
		}
		p := m["params"].(map[string]interface{})
		methods = append(methods, method)
		if method == "$/span/start" {
			if p["request"] != 20.0 {
				t.Fatalf("span of request %v, want 20", p["request"])
			}
			if p["parent"] == nil {
				root = p["span"].(float64)
			} else {
				child = p["span"].(float64)
				if p["parent"] != root || p["name"] != "fake.lookup" || p["level"] != "DEBUG" {
					t.Fatalf("child span %v, want fake.lookup under %v", p, root)
				}
			}
		}
		if method == "$/event" && p["message"] == "backend call" && p["span"] != child {
			t.Fatalf("event in span %v, want %v", p["span"], child)
		}
	}
	want := "$/span/start $/span/start $/event $/span/end $/event $/span/end"
	if got := strings.Join(methods, " "); got != want {
		t.Fatalf("notifications %q, want %q", got, want)
	}
}

func TestTracerOutsideARequestIsSilent(t *testing.T) {
	ctx, sp := StartSpan(context.Background(), "x", LevelInfo)
	Log(ctx, LevelError, "nobody hears this")
	sp.End()
	if ctx != context.Background() {
		t.Fatal("a span outside a request changed the context")
	}
}

func TestClosingTearsDownOpenTestbeds(t *testing.T) {
	f := &fakeFixture{}
	c := start(t, f)
	c.open()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"provider/get","params":{"provider":2,"id":"slow"}}`)
	time.Sleep(20 * time.Millisecond)
	c.w.Close()
	r := c.reply()
	if r["id"] != 3.0 {
		t.Fatalf("the running request was not answered on close: %v", r)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its input closed")
	}
	if f.testbeds[0].tornDown != 1 {
		t.Fatalf("the open testbed was torn down %d times, want once", f.testbeds[0].tornDown)
	}
}

func TestTeardownInvalidatesHandles(t *testing.T) {
	c := start(t, &fakeFixture{})
	c.open()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"testbed/teardown","params":{"testbed":1}}`)
	if r := c.reply(); r["result"] == nil {
		t.Fatalf("teardown answered %v", r)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"provider/get","params":{"provider":2,"id":"fast"}}`)
	if r := c.reply(); errCode(r) != CodeUnknownHandle {
		t.Fatalf("a torn-down provider answered %v, want code 2", r)
	}
}

func TestLineTooLong(t *testing.T) {
	c := start(t, &fakeFixture{})
	go func() {
		io.WriteString(c.w, `{"jsonrpc":"2.0","id":1,"method":"shutdown","params":{"pad":"`)
		chunk := strings.Repeat("x", 1<<20)
		for i := 0; i < 17; i++ {
			if _, err := io.WriteString(c.w, chunk); err != nil {
				return
			}
		}
	}()
	r := c.reply()
	if errCode(r) != CodeInvalidRequest || r["id"] != nil {
		t.Fatalf("an over-long line answered %v, want -32600", r)
	}
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve kept reading after an over-long line")
	}
}

func TestServeSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeSocket(ctx, &fakeFixture{}, path) }()
	var conn net.Conn
	var err error
	for i := 0; i < 100; i++ {
		if conn, err = net.Dial("unix", path); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	fmt.Fprintln(conn, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_versions":[1],"suite_version":"x"}}`)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, `"protocol_version":1`) {
		t.Fatalf("initialize over the socket answered %q (%v)", line, err)
	}
	conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ServeSocket returned %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file is still there after ServeSocket returned (%v)", err)
	}
}

func TestErrorChainAndKind(t *testing.T) {
	inner := errors.New("connection refused")
	e := NewError("p", OpCreate, Transient, "connecting to site-a", fmt.Errorf("dial: %w", inner))
	wrapped := fmt.Errorf("outer: %w", e)
	if k, ok := KindOf(wrapped); !ok || k != Transient {
		t.Fatalf("KindOf = %v %v", k, ok)
	}
	if !errors.Is(wrapped, inner) {
		t.Fatal("the cause chain does not reach the innermost error")
	}
	if got := e.Chain(); len(got) != 2 || got[0] != "dial: connection refused" {
		t.Fatalf("Chain = %q", got)
	}
	if _, ok := KindOf(inner); ok {
		t.Fatal("a plain error has no contract kind")
	}
}

// faultsTestbed has the Faults hook; causingTestbed also produces one declared reason.
type faultsTestbed struct{ fakeTestbed }

func (t *faultsTestbed) Inject(ctx context.Context, spec FaultSpec) (uint64, error) { return 1, nil }
func (t *faultsTestbed) Fired(ctx context.Context, id uint64) (bool, error)         { return false, nil }
func (t *faultsTestbed) ClearFaults(ctx context.Context) error                      { return nil }
func (t *faultsTestbed) SetReachability(ctx context.Context, location, r string) error {
	return nil
}

type causingTestbed struct {
	faultsTestbed
	caused map[string]string
}

func (t *causingTestbed) Cause(ctx context.Context, location, reason string) (bool, error) {
	if location != "site-a" {
		return false, Hookf("no site %s", location)
	}
	if reason != "ContainerMissing" {
		return false, nil
	}
	t.mu.Lock()
	t.caused[location] = reason
	t.mu.Unlock()
	return true, nil
}

func (t *causingTestbed) UndoCause(ctx context.Context, location string) error {
	t.mu.Lock()
	delete(t.caused, location)
	t.mu.Unlock()
	return nil
}

type faultsFixture struct {
	fakeFixture
	causes bool
	opened []*causingTestbed
}

func (f *faultsFixture) Facts() Facts {
	facts := f.fakeFixture.Facts()
	facts.Hooks = []Hook{HookFaults}
	return facts
}

func (f *faultsFixture) Open(ctx context.Context) (Testbed, error) {
	if !f.causes {
		return &faultsTestbed{}, nil
	}
	tb := &causingTestbed{caused: map[string]string{}}
	f.opened = append(f.opened, tb)
	return tb, nil
}

func TestCausesAreOptional(t *testing.T) {
	cases := []struct {
		name   string
		causes bool
		line   string
		want   string
		code   float64
	}{
		{"no Causes: not produced", false, `{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-a","reason":"ContainerMissing"}}`, `{"produced":false}`, 0},
		{"no Causes: nothing to undo", false, `{"jsonrpc":"2.0","id":3,"method":"faults/undo_cause","params":{"testbed":1,"location":"site-a"}}`, `{}`, 0},
		{"produced", true, `{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-a","reason":"ContainerMissing"}}`, `{"produced":true}`, 0},
		{"a reason it cannot make", true, `{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-a","reason":"PoolNotFound"}}`, `{"produced":false}`, 0},
		{"a hook failure", true, `{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-q","reason":"ContainerMissing"}}`, ``, CodeHookFailed},
		{"no reason", true, `{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-a"}}`, ``, CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultsFixture{causes: tc.causes}
			c := start(t, f)
			c.open()
			c.send(tc.line)
			r := c.reply()
			if errCode(r) != tc.code {
				t.Fatalf("answered %v, want code %v", r, tc.code)
			}
			if tc.code != 0 {
				return
			}
			got, _ := json.Marshal(r["result"])
			if string(got) != tc.want {
				t.Fatalf("answered %s, want %s", got, tc.want)
			}
		})
	}
	// A produced cause is held until undone.
	f := &faultsFixture{causes: true}
	c := start(t, f)
	c.open()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"faults/cause","params":{"testbed":1,"location":"site-a","reason":"ContainerMissing"}}`)
	c.reply()
	tb := f.opened[0]
	tb.mu.Lock()
	held := tb.caused["site-a"]
	tb.mu.Unlock()
	if held != "ContainerMissing" {
		t.Fatalf("cause held %q, want ContainerMissing", held)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"faults/undo_cause","params":{"testbed":1,"location":"site-a"}}`)
	c.reply()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.caused) != 0 {
		t.Fatalf("after undo_cause %v is still caused", tb.caused)
	}
}
