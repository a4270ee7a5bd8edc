package gotemplate

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	provider "kvm2conformance/sdk"
)

func TestParseIDAcceptsOnlyWellFormedIDs(t *testing.T) {
	cases := []struct {
		id         string
		site, name string
		ok         bool
	}{
		{"sites/site-a/instances/web-1", "site-a", "web-1", true},
		{"sites/site-z/instances/x", "site-z", "x", true},
		{"", "", "", false},
		{"sites/site-a/instances", "", "", false},
		{"sites/site-a/instances/", "", "", false},
		{"sites//instances/x", "", "", false},
		{"sites/site-a/instances/x/", "", "", false},
		{"/sites/site-a/instances/x", "", "", false},
		{"hosts/site-a/domains/x", "", "", false},
		{"sites/site-a/instances/Web", "", "", false},
		{"sites/site-a/instances/a b", "", "", false},
		{"sites/site-a/instances/ü", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			site, name, ok := parseID(c.id)
			if site != c.site || name != c.name || ok != c.ok {
				t.Fatalf("parseID(%q) = %q %q %v", c.id, site, name, ok)
			}
		})
	}
	for _, id := range (&Testbed{}).MalformedIDs() {
		if _, _, ok := parseID(id); ok {
			t.Errorf("the fixture calls %q malformed but it parses", id)
		}
	}
}

func openTestbed(t *testing.T) *Testbed {
	t.Helper()
	f := &Fixture{BootDelay: time.Millisecond}
	tb, err := f.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Teardown(context.Background()) })
	return tb.(*Testbed)
}

func oneConn(t *testing.T, b *simBackend) uint64 {
	t.Helper()
	c, err := b.dial(context.Background(), "site-a", initialToken("site-a"), initialIdentity("site-a"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNthFaultFiresOnceCountingFromInjection(t *testing.T) {
	b := newBackend([]string{"site-a"}, 0, 0)
	ctx := context.Background()
	c := oneConn(t, b)
	if _, err := b.ping(ctx, c, "site-a"); err != nil {
		t.Fatal(err)
	}
	loc := "site-a"
	id, _ := b.inject(provider.FaultSpec{Location: &loc, Trigger: provider.Trigger{Type: "Nth", N: 2}, Kind: provider.FaultKind{Type: "Transient"}})
	if _, err := b.ping(ctx, c, "site-a"); err != nil {
		t.Fatalf("first call after injection failed: %v", err)
	}
	if _, err := b.ping(ctx, c, "site-a"); !isKind(err, errBusy) {
		t.Fatalf("second call = %v, want busy", err)
	}
	if _, err := b.ping(ctx, c, "site-a"); err != nil {
		t.Fatalf("an Nth fault fired twice: %v", err)
	}
	b.clearFaults()
	if !b.wasFired(id) {
		t.Fatal("fired was forgotten by clear")
	}
}

func TestHangLastsUntilClearedOrCancelled(t *testing.T) {
	b := newBackend([]string{"site-a"}, 0, 0)
	c := oneConn(t, b)
	b.inject(provider.FaultSpec{Trigger: provider.Trigger{Type: "Always"}, Kind: provider.FaultKind{Type: "Hang"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	var in *interrupted
	if _, err := b.ping(ctx, c, "site-a"); !errors.As(err, &in) || in.cancelled {
		t.Fatalf("a hung call under a deadline = %v, want deadline exceeded", err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.ping(context.Background(), c, "site-a"); done <- err }()
	time.Sleep(10 * time.Millisecond)
	b.clearFaults()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a released call failed: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("clear did not release the hung call")
	}
}

func TestCreateGetDeleteRoundTrip(t *testing.T) {
	tb := openTestbed(t)
	p := tb.Provider()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := tb.Request("web-1", "managed", provider.Location{Name: "site-a", Placement: "zone-a"})
	id, err := p.Create(ctx, &req)
	if err != nil || id != "sites/site-a/instances/web-1" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	again, err := p.Create(ctx, &req)
	if err != nil || again != id {
		t.Fatalf("a repeated Create = %q, %v; want the same ID", again, err)
	}
	for {
		inst, err := p.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if inst.State == provider.Running {
			if !strings.HasPrefix(inst.IPv4, "10.77.") || inst.UID != "owner-web-1" || inst.CreatedAt == nil {
				t.Fatalf("running instance %+v", inst)
			}
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := p.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, id); !isContract(err, provider.NotFound) {
		t.Fatalf("Get after Delete = %v, want NotFound", err)
	}
	res, _ := tb.Resources(ctx, "site-a")
	if len(res) != 1 || res[0].Name != "base-image" {
		t.Fatalf("Delete left %+v behind", res)
	}
}

func isContract(err error, k provider.ErrorKind) bool {
	got, ok := provider.KindOf(err)
	return ok && got == k
}

func TestQuotaIsDetectedBeforeAnythingIsWritten(t *testing.T) {
	tb := openTestbed(t)
	ctx := context.Background()
	free := uint64(1024)
	tb.SetFree(ctx, "site-a", &free)
	req := tb.Request("big", "managed", provider.Location{Name: "site-a", Placement: "zone-a"})
	_, err := tb.Provider().Create(ctx, &req)
	var ce *provider.Error
	if !errors.As(err, &ce) || ce.Kind != provider.QuotaExceeded || ce.Quota == nil || ce.Quota.Available != 1024 {
		t.Fatalf("Create = %v, want QuotaExceeded with 1024 available", err)
	}
	if fp, _ := tb.Inspect(ctx, "site-a", "big"); fp != nil {
		t.Fatalf("a refused Create left %s", *fp)
	}
}

func TestCloudInitNeverReachesErrors(t *testing.T) {
	tb := openTestbed(t)
	ctx := context.Background()
	tb.Plant(ctx, "site-a", "taken", provider.Plant{Type: "ForeignUid", Tag: "managed", UID: "someone"})
	req := tb.Request("taken", "managed", provider.Location{Name: "site-a", Placement: "zone-a"})
	req.CloudInit = "#cloud-config\npassword: hunter2\n"
	_, err := tb.Provider().Create(ctx, &req)
	if !isContract(err, provider.Permanent) {
		t.Fatalf("Create over a foreign instance = %v, want Permanent", err)
	}
	var ce *provider.Error
	errors.As(err, &ce)
	if strings.Contains(err.Error()+strings.Join(ce.Chain(), " "), "hunter2") {
		t.Fatal("the error carries the cloud-init payload")
	}
}

func TestRemovedCredentialsMakeTheCheckerSaySo(t *testing.T) {
	tb := openTestbed(t)
	ctx := context.Background()
	if _, err := tb.BreakAccess(ctx, "site-b", "RemoveCredentials"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tb.cfg.tokenFile("site-b")); !os.IsNotExist(err) {
		t.Fatal("the token file is still in place")
	}
	h := tb.provider.Check(ctx)
	if !h[0].Ready || h[1].Ready || h[1].Reason != "CredentialsUnavailable" {
		t.Fatalf("health %+v", h)
	}
	if err := tb.RestoreAccess(ctx, "site-b"); err != nil {
		t.Fatal(err)
	}
	if h := tb.provider.Check(ctx); !h[1].Ready {
		t.Fatalf("after restore %+v", h[1])
	}
}

func TestTheDeclaredCauseIsProducedAndUndone(t *testing.T) {
	tb := openTestbed(t)
	ctx := context.Background()
	var _ provider.Causes = tb
	if ok, err := tb.Cause(ctx, "site-a", "PoolNotFound"); ok || err != nil {
		t.Fatalf("an undeclared reason: %v %v", ok, err)
	}
	if ok, err := tb.Cause(ctx, "site-a", containerMissing); !ok || err != nil {
		t.Fatalf("ContainerMissing: %v %v", ok, err)
	}
	h := tb.provider.Check(ctx)
	if h[0].Ready || h[0].Reason != containerMissing || !h[1].Ready {
		t.Fatalf("health %+v", h)
	}
	if err := tb.UndoCause(ctx, "site-a"); err != nil {
		t.Fatal(err)
	}
	if h := tb.provider.Check(ctx); !h[0].Ready || !h[1].Ready {
		t.Fatalf("after undo %+v", h)
	}
	if _, err := tb.Cause(ctx, "site-z", containerMissing); err == nil {
		t.Fatal("an unknown site is no hook failure")
	}
}

func TestMutantTableCoversEveryRuleArea(t *testing.T) {
	table := Mutants()
	if len(table) < 10 {
		t.Fatalf("%d mutants, want at least ten", len(table))
	}
	areas := map[string]bool{}
	for name, declared := range table {
		if len(declared) == 0 {
			t.Errorf("mutant %s declares no rule", name)
		}
		for _, id := range declared {
			areas[strings.SplitN(id, "-", 2)[0]] = true
		}
	}
	for _, a := range []string{"CRE", "GET", "DEL", "LST", "GEN", "CHK"} {
		if !areas[a] {
			t.Errorf("no mutant declares a %s rule", a)
		}
	}
	if err := SelectMutant("no-such-mutant"); err == nil {
		t.Error("an unknown mutant was accepted")
	}
	if SelectedMutant() != "" {
		t.Errorf("the selected mutant is %q, want none", SelectedMutant())
	}
}
