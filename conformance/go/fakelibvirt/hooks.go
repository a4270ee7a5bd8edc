package fakelibvirt

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"

	provider "kvm2conformance/sdk"
)

// The hook methods below take the shapes of the SDK's hook interfaces
// (provider.Inventory, Faults, Observation, StateControl, Capacity) for one
// location served by one daemon, so a testbed's hook is a line that names its
// location and calls through.

// Owner tells which instance a volume belongs to and what kind of part it is
// ("disk", "seed", ...); ok is false for a volume no instance owns (an image
// shared by all). It is the provider's naming, which only the provider knows.
type Owner func(pool, volume string) (instance, kind string, ok bool)

// Resources lists every domain as a primary resource and every volume as a
// secondary one, owned as owner says (provider.Inventory's Resources).
func (c *Client) Resources(ctx context.Context, owner Owner) ([]provider.Resource, error) {
	inv, err := c.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	var out []provider.Resource
	for _, d := range inv.Domains {
		name := d.Name
		out = append(out, provider.Resource{Instance: &name, Kind: "domain", Primary: true, Name: d.Name})
	}
	for _, p := range inv.Pools {
		for _, v := range p.Volumes {
			r := provider.Resource{Kind: "volume", Name: v.Name}
			if inst, kind, ok := owner(p.Name, v.Name); ok {
				inst := inst
				r.Instance, r.Kind = &inst, kind
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Inspect is a fingerprint of everything of name: the domain's state and
// definitions (its mark in their metadata included) and the sizes of the
// volumes owner gives it; nil when nothing of that name exists
// (provider.Planting's Inspect).
func (c *Client) Inspect(ctx context.Context, name string, owner Owner) (*string, error) {
	inv, err := c.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, d := range inv.Domains {
		if d.Name == name {
			config, live, err := c.DomainXML(ctx, name)
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256([]byte(config + "\x00" + live))
			parts = append(parts, fmt.Sprintf("domain %s state=%s/%d persistent=%t xml=%x", d.UUID, d.State, d.Reason, d.Persistent, sum[:8]))
		}
	}
	for _, p := range inv.Pools {
		for _, v := range p.Volumes {
			if inst, _, ok := owner(p.Name, v.Name); ok && inst == name {
				parts = append(parts, fmt.Sprintf("volume %s/%s %d %d %s %d", p.Name, v.Name, v.Capacity, v.Allocation, v.Format, v.ContentBytes))
			}
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	sort.Strings(parts)
	fp := strings.Join(parts, "; ")
	return &fp, nil
}

// FaultFor is the daemon's rule for one of the suite's fault specs, with the
// libvirt error each reply-shaped kind stands for (those kvm2's fixtures use):
// Transient is VIR_ERR_OPERATION_TIMEOUT (a busy QEMU driver), Permanent
// VIR_ERR_ACCESS_DENIED, NotFound the "no such" error of the object the
// procedure names, Quota VIR_ERR_INTERNAL_ERROR "Not enough free space in
// pool". Nth and Named fire once. The daemon counts calls, not dials: an Nth
// trigger counts the calls after the dial.
func FaultFor(spec provider.FaultSpec) (Rule, error) {
	var rule Rule
	switch spec.Trigger.Type {
	case "Nth":
		if spec.Trigger.N == 0 {
			return rule, fmt.Errorf("trigger Nth: n is 1-based, 0 never fires")
		}
		rule.Trigger, rule.Once = Trigger{Type: "nth_call", N: spec.Trigger.N}, true
	case "Named":
		rule.Trigger, rule.Once = Trigger{Type: "procedure", Name: spec.Trigger.Name}, true
	case "Always":
		rule.Trigger = Trigger{Type: "always"}
	default:
		return rule, fmt.Errorf("unknown trigger type %q", spec.Trigger.Type)
	}
	procedure := strings.ToLower(spec.Trigger.Name)
	liberr := func(code int, domain int, msg string) Fault {
		return Fault{Type: "error", Error: &LibvirtError{Code: code, Domain: domain, Message: msg}}
	}
	switch spec.Kind.Type {
	case "Transient":
		rule.Fault = liberr(68, 10, "cannot acquire state change lock")
	case "Permanent":
		rule.Fault = liberr(88, 0, "'manage' denied by the access driver")
	case "NotFound":
		switch {
		case strings.HasPrefix(procedure, "storagevol"):
			rule.Fault = liberr(50, 18, "no storage vol with matching name")
		case strings.HasPrefix(procedure, "storagepool"):
			rule.Fault = liberr(49, 18, "no storage pool with matching name")
		default:
			rule.Fault = liberr(42, 10, "no domain with matching name")
		}
	case "Quota":
		rule.Fault = liberr(1, 18, "Not enough free space in pool")
	case "Hang":
		rule.Fault = Fault{Type: "hang"}
	case "Delay":
		rule.Fault = Fault{Type: "delay", Millis: (spec.Kind.Micros + 999) / 1000}
	case "Drop":
		rule.Fault = Fault{Type: "drop_connection"}
	case "LostReply":
		rule.Fault = Fault{Type: "lose_reply"}
	default:
		return rule, fmt.Errorf("unknown fault kind %q", spec.Kind.Type)
	}
	return rule, nil
}

// Inject adds the rule FaultFor gives for spec and returns its id
// (provider.Faults' Inject, for the location this daemon is).
func (c *Client) Inject(ctx context.Context, spec provider.FaultSpec) (uint64, error) {
	rule, err := FaultFor(spec)
	if err != nil {
		return 0, err
	}
	return c.AddFault(ctx, rule)
}

// SetReachability is provider.Faults' SetReachability: "Up", "Refused" or
// "BlackHole"; anything but Up also closes the open connections.
func (c *Client) SetReachability(ctx context.Context, reachability string) error {
	modes := map[string]string{"Up": "accept", "Refused": "refuse", "BlackHole": "black_hole"}
	mode, ok := modes[reachability]
	if !ok {
		return fmt.Errorf("unknown reachability %q (Up, Refused or BlackHole)", reachability)
	}
	if err := c.SetDialMode(ctx, mode); err != nil {
		return err
	}
	if reachability == "Up" {
		return nil
	}
	_, err := c.CloseConnections(ctx)
	return err
}

// Baseline is where a testbed's observation starts: the trace position and
// the number of connections dialled when it opened.
type Baseline struct {
	Mark  uint64
	Dials uint64
}

// Baseline takes one now.
func (c *Client) Baseline(ctx context.Context) (Baseline, error) {
	conns, err := c.Connections(ctx)
	if err != nil {
		return Baseline{}, err
	}
	mark, err := c.Mark(ctx)
	return Baseline{Mark: mark, Dials: uint64(len(conns))}, err
}

// BackendCalls lists every call since from as the observation hook reports
// them, at location, in arrival order, with each connection dialled since
// from as a call named "dial" before the calls it carried. The hook's own
// since skips the first entries of this list (provider.Observation's Calls).
func (c *Client) BackendCalls(ctx context.Context, location string, from Baseline) ([]provider.BackendCall, error) {
	conns, err := c.Connections(ctx)
	if err != nil {
		return nil, err
	}
	calls, _, err := c.Trace(ctx, from.Mark)
	if err != nil {
		return nil, err
	}
	type entry struct {
		at   uint64
		dial bool
		call provider.BackendCall
	}
	var all []entry
	for i, k := range conns {
		if uint64(i) >= from.Dials {
			all = append(all, entry{k.DialedAtMicros, true, provider.BackendCall{Location: location, Name: "dial", Connection: k.ID}})
		}
	}
	for _, k := range calls {
		all = append(all, entry{k.AtMicros, false, provider.BackendCall{Location: location, Name: k.Procedure, Connection: k.Connection}})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].at != all[j].at {
			return all[i].at < all[j].at
		}
		return all[i].dial && !all[j].dial
	})
	out := make([]provider.BackendCall, len(all))
	for i, e := range all {
		out[i] = e.call
	}
	return out, nil
}

// Dials counts the connections dialled since from (provider.Observation's
// Dials).
func (c *Client) Dials(ctx context.Context, from Baseline) (uint64, error) {
	conns, err := c.Connections(ctx)
	if err != nil {
		return 0, err
	}
	return uint64(len(conns)) - from.Dials, nil
}

// SetPower forces a domain's power state (provider.StateControl's SetPower):
// "Running", "Paused" or "Stopped".
func (c *Client) SetPower(ctx context.Context, name, power string) error {
	states := map[string]string{"Running": "running", "Paused": "paused", "Stopped": "shutoff"}
	state, ok := states[power]
	if !ok {
		return fmt.Errorf("unknown power state %q (Running, Paused or Stopped)", power)
	}
	return c.SetDomainState(ctx, name, state)
}

// SetFree makes pool report bytes free, or (nil) what its volumes leave free
// (provider.Capacity's SetFree).
func (c *Client) SetFree(ctx context.Context, pool string, bytes *uint64) error {
	if bytes != nil {
		return c.SetPoolAvailable(ctx, pool, *bytes)
	}
	inv, err := c.Inventory(ctx)
	if err != nil {
		return err
	}
	for _, p := range inv.Pools {
		if p.Name != pool {
			continue
		}
		var used uint64
		for _, v := range p.Volumes {
			used += v.Allocation
		}
		if used > p.Capacity {
			used = p.Capacity
		}
		return c.SetPoolAvailable(ctx, pool, p.Capacity-used)
	}
	return fmt.Errorf("no pool named %q", pool)
}
