package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"
)

const rfc3339Nano = "2006-01-02T15:04:05.999999999Z"

type wireInstance struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	State     State   `json:"state"`
	IPv4      *string `json:"ipv4"`
	UID       string  `json:"uid"`
	Tag       string  `json:"tag"`
	CreatedAt *string `json:"created_at"`
}

func toWire(i Instance) wireInstance {
	w := wireInstance{ID: i.ID, Name: i.Name, State: i.State, UID: i.UID, Tag: i.Tag}
	if i.IPv4 != "" {
		ip := i.IPv4
		w.IPv4 = &ip
	}
	if i.CreatedAt != nil {
		t := i.CreatedAt.UTC().Format(rfc3339Nano)
		w.CreatedAt = &t
	}
	return w
}

type wireError struct {
	Provider string    `json:"provider"`
	Op       Op        `json:"op"`
	Kind     ErrorKind `json:"kind"`
	Message  string    `json:"message"`
	Source   []string  `json:"source"`
	Quota    *Quota    `json:"quota,omitempty"`
}

// outcome encodes an operation's answer: {"ok": v} or {"error": ContractError}; an
// error that is no contract error is the provider's own failure.
func outcome(v interface{}, err error) (interface{}, *rpcError) {
	if err == nil {
		return map[string]interface{}{"ok": v}, nil
	}
	var ce *Error
	if !errors.As(err, &ce) {
		return nil, fail(CodeInternalError, "the provider failed: %v", err)
	}
	we := wireError{Provider: ce.Provider, Op: ce.Op, Kind: ce.Kind, Message: ce.Message, Source: ce.Chain()}
	if ce.Kind == QuotaExceeded {
		q := Quota{}
		if ce.Quota != nil {
			q = *ce.Quota
		}
		we.Quota = &q
	}
	return map[string]interface{}{"error": we}, nil
}

func (s *server) operation(ctx context.Context, method string, id uint64, params json.RawMessage) (interface{}, *rpcError) {
	var q struct {
		Provider   uint64         `json:"provider"`
		DeadlineMs *uint64        `json:"deadline_ms"`
		ID         string         `json:"id"`
		Tag        string         `json:"tag"`
		Request    *CreateRequest `json:"request"`
	}
	required := []string{"provider"}
	switch method {
	case "provider/create":
		required = append(required, "request")
	case "provider/get", "provider/delete":
		required = append(required, "id")
	case "provider/list_by_tag":
		required = append(required, "tag")
	}
	if e := decode(method, params, &q, required...); e != nil {
		return nil, e
	}
	p, e := s.provider(q.Provider)
	if e != nil {
		return nil, e
	}
	if q.DeadlineMs != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*q.DeadlineMs)*time.Millisecond)
		defer cancel()
	}
	ctx = withScope(ctx, &scope{send: s.telemetry(id), request: id})
	switch method {
	case "provider/create":
		newID, err := p.Create(ctx, q.Request)
		return outcome(map[string]string{"id": newID}, err)
	case "provider/get":
		inst, err := p.Get(ctx, q.ID)
		return outcome(toWire(inst), err)
	case "provider/delete":
		return outcome(struct{}{}, p.Delete(ctx, q.ID))
	case "provider/list_by_tag":
		l, err := p.ListByTag(ctx, q.Tag)
		items := make([]wireInstance, 0, len(l.Instances))
		for _, i := range l.Instances {
			items = append(items, toWire(i))
		}
		un := l.Unreachable
		if un == nil {
			un = []UnreachableLocation{}
		}
		return outcome(map[string]interface{}{"instances": items, "unreachable": un}, err)
	default: // checker/check
		c := p.Checker()
		if c == nil {
			return nil, fail(CodeInvalidRequest, "provider %d has no checker", q.Provider)
		}
		health := c.Check(ctx)
		for i := range health {
			if health[i].Details == nil {
				health[i].Details = map[string]string{}
			}
		}
		if health == nil {
			health = []HostHealth{}
		}
		return map[string]interface{}{"health": health}, nil
	}
}

var hookOf = map[string]Hook{
	"inventory":     HookInventory,
	"planting":      HookPlanting,
	"state_control": HookStateControl,
	"capacity":      HookCapacity,
	"faults":        HookFaults,
	"rotation":      HookRotation,
	"observation":   HookObservation,
}

var testbedMethods = map[string]bool{
	"testbed/teardown": true, "testbed/restart": true, "testbed/request": true, "testbed/id_for": true,
	"testbed/location_of": true, "testbed/malformed_ids": true, "testbed/unconfigured_id": true,
	"testbed/unknown_placement": true,
	"inventory/resources":       true,
	"planting/plant":            true, "planting/inspect": true, "planting/remove_part": true, "planting/remove": true,
	"state_control/set_power": true, "state_control/set_addresses": true,
	"state_control/fail_address_lookup": true, "state_control/hold_boot": true,
	"capacity/set_free": true,
	"faults/inject":     true, "faults/fired": true, "faults/clear": true, "faults/set_reachability": true,
	"faults/cause": true, "faults/undo_cause": true,
	"rotation/rotate": true, "rotation/break_access": true, "rotation/restore_access": true,
	"observation/calls": true, "observation/dials": true, "observation/set_verbosity": true,
}

func (s *server) declares(h Hook) bool {
	for _, d := range s.fixture.Facts().Hooks {
		if d == h {
			return true
		}
	}
	return false
}

type tbParams struct {
	Testbed      uint64          `json:"testbed"`
	Location     string          `json:"location"`
	Name         string          `json:"name"`
	Tag          string          `json:"tag"`
	ID           json.RawMessage `json:"id"`
	What         Plant           `json:"what"`
	Part         string          `json:"part"`
	Power        string          `json:"power"`
	Addrs        []string        `json:"addrs"`
	Fail         bool            `json:"fail"`
	Hold         bool            `json:"hold"`
	Bytes        *uint64         `json:"bytes"`
	Spec         FaultSpec       `json:"spec"`
	Reachability string          `json:"reachability"`
	How          string          `json:"how"`
	Reason       string          `json:"reason"`
	Since        uint64          `json:"since"`
	Verbosity    string          `json:"verbosity"`
}

func (s *server) testbedMethod(ctx context.Context, method string, params json.RawMessage) (interface{}, *rpcError) {
	if !testbedMethods[method] {
		return nil, fail(CodeMethodNotFound, "unknown method %q", method)
	}
	required := map[string][]string{
		"testbed/request":                   {"name", "tag", "location"},
		"testbed/id_for":                    {"location", "name"},
		"testbed/location_of":               {"id"},
		"testbed/unconfigured_id":           {"name"},
		"inventory/resources":               {"location"},
		"planting/plant":                    {"location", "name", "what"},
		"planting/inspect":                  {"location", "name"},
		"planting/remove_part":              {"location", "name", "part"},
		"planting/remove":                   {"location", "name"},
		"state_control/set_power":           {"location", "name", "power"},
		"state_control/set_addresses":       {"location", "name", "addrs"},
		"state_control/fail_address_lookup": {"location", "name", "fail"},
		"state_control/hold_boot":           {"hold"},
		"capacity/set_free":                 {"location"},
		"faults/inject":                     {"spec"},
		"faults/fired":                      {"id"},
		"faults/set_reachability":           {"location", "reachability"},
		"faults/cause":                      {"location", "reason"},
		"faults/undo_cause":                 {"location"},
		"rotation/rotate":                   {"location"},
		"rotation/break_access":             {"location", "how"},
		"rotation/restore_access":           {"location"},
		"observation/calls":                 {"since"},
		"observation/dials":                 {"location"},
		"observation/set_verbosity":         {"verbosity"},
	}[method]
	var q tbParams
	// testbed/request carries its location as an object; it is decoded apart.
	if method == "testbed/request" {
		var r struct {
			Testbed  uint64   `json:"testbed"`
			Name     string   `json:"name"`
			Tag      string   `json:"tag"`
			Location Location `json:"location"`
		}
		if e := decode(method, params, &r, append(required, "testbed")...); e != nil {
			return nil, e
		}
		tb, e := s.testbed(r.Testbed)
		if e != nil {
			return nil, e
		}
		return tb.Request(r.Name, r.Tag, r.Location), nil
	}
	if e := decode(method, params, &q, append(required, "testbed")...); e != nil {
		return nil, e
	}
	tb, e := s.testbed(q.Testbed)
	if e != nil {
		return nil, e
	}
	hook := method[:indexSlash(method)]
	if h, ok := hookOf[hook]; ok && !s.declares(h) {
		return nil, fail(CodeInvalidRequest, "the testbed has no %s hook", h)
	}
	absent := func(h Hook) *rpcError { return fail(CodeInvalidRequest, "the testbed has no %s hook", h) }
	empty := struct{}{}
	orHook := func(v interface{}, err error) (interface{}, *rpcError) {
		if err != nil {
			return nil, hookFailure(err)
		}
		return v, nil
	}
	switch method {
	case "testbed/teardown":
		err := tb.Teardown(ctx)
		s.mu.Lock()
		delete(s.testbeds, q.Testbed)
		for h, p := range s.providers {
			if p.testbed == q.Testbed {
				delete(s.providers, h)
			}
		}
		s.mu.Unlock()
		return orHook(empty, err)
	case "testbed/restart":
		p, err := tb.Restart(ctx)
		if err != nil {
			return nil, hookFailure(err)
		}
		return s.register(q.Testbed, p), nil
	case "testbed/id_for":
		return map[string]string{"id": tb.IDFor(q.Location, q.Name)}, nil
	case "testbed/location_of":
		var raw string
		if err := json.Unmarshal(q.ID, &raw); err != nil {
			return nil, fail(CodeInvalidParams, "params of %s do not fit the protocol: id must be a string", method)
		}
		l, ok := tb.LocationOf(raw)
		if !ok {
			return map[string]interface{}{"location": nil}, nil
		}
		return map[string]string{"location": l}, nil
	case "testbed/malformed_ids":
		ids := tb.MalformedIDs()
		if ids == nil {
			ids = []string{}
		}
		return map[string][]string{"ids": ids}, nil
	case "testbed/unconfigured_id":
		return map[string]string{"id": tb.UnconfiguredID(q.Name)}, nil
	case "testbed/unknown_placement":
		return map[string]string{"placement": tb.UnknownPlacement()}, nil
	}
	switch method {
	case "inventory/resources":
		h, ok := tb.(Inventory)
		if !ok {
			return nil, absent(HookInventory)
		}
		r, err := h.Resources(ctx, q.Location)
		if r == nil {
			r = []Resource{}
		}
		return orHook(map[string]interface{}{"resources": r}, err)
	case "planting/plant", "planting/inspect", "planting/remove_part", "planting/remove":
		h, ok := tb.(Planting)
		if !ok {
			return nil, absent(HookPlanting)
		}
		switch method {
		case "planting/plant":
			return orHook(empty, h.Plant(ctx, q.Location, q.Name, q.What))
		case "planting/inspect":
			fp, err := h.Inspect(ctx, q.Location, q.Name)
			return orHook(map[string]interface{}{"fingerprint": fp}, err)
		case "planting/remove_part":
			return orHook(empty, h.RemovePart(ctx, q.Location, q.Name, q.Part))
		default:
			return orHook(empty, h.Remove(ctx, q.Location, q.Name))
		}
	case "state_control/set_power", "state_control/set_addresses", "state_control/fail_address_lookup", "state_control/hold_boot":
		h, ok := tb.(StateControl)
		if !ok {
			return nil, absent(HookStateControl)
		}
		switch method {
		case "state_control/set_power":
			return orHook(empty, h.SetPower(ctx, q.Location, q.Name, q.Power))
		case "state_control/set_addresses":
			addrs := make([]net.IP, 0, len(q.Addrs))
			for _, a := range q.Addrs {
				ip := net.ParseIP(a)
				if ip == nil {
					return nil, fail(CodeInvalidParams, "params of %s do not fit the protocol: %q is no IP address", method, a)
				}
				addrs = append(addrs, ip)
			}
			return orHook(empty, h.SetAddresses(ctx, q.Location, q.Name, addrs))
		case "state_control/fail_address_lookup":
			return orHook(empty, h.FailAddressLookup(ctx, q.Location, q.Name, q.Fail))
		default:
			return orHook(empty, h.HoldBoot(ctx, q.Hold))
		}
	case "capacity/set_free":
		h, ok := tb.(Capacity)
		if !ok {
			return nil, absent(HookCapacity)
		}
		return orHook(empty, h.SetFree(ctx, q.Location, q.Bytes))
	case "faults/inject", "faults/fired", "faults/clear", "faults/set_reachability",
		"faults/cause", "faults/undo_cause":
		h, ok := tb.(Faults)
		if !ok {
			return nil, absent(HookFaults)
		}
		switch method {
		case "faults/inject":
			fid, err := h.Inject(ctx, q.Spec)
			return orHook(map[string]uint64{"id": fid}, err)
		case "faults/fired":
			var n uint64
			if err := json.Unmarshal(q.ID, &n); err != nil {
				return nil, fail(CodeInvalidParams, "params of %s do not fit the protocol: id must be a non-negative integer", method)
			}
			fired, err := h.Fired(ctx, n)
			return orHook(map[string]bool{"fired": fired}, err)
		case "faults/clear":
			return orHook(empty, h.ClearFaults(ctx))
		case "faults/cause":
			c, ok := tb.(Causes)
			if !ok {
				return map[string]bool{"produced": false}, nil
			}
			produced, err := c.Cause(ctx, q.Location, q.Reason)
			return orHook(map[string]bool{"produced": produced}, err)
		case "faults/undo_cause":
			c, ok := tb.(Causes)
			if !ok {
				return empty, nil
			}
			return orHook(empty, c.UndoCause(ctx, q.Location))
		default:
			return orHook(empty, h.SetReachability(ctx, q.Location, q.Reachability))
		}
	case "rotation/rotate", "rotation/break_access", "rotation/restore_access":
		h, ok := tb.(Rotation)
		if !ok {
			return nil, absent(HookRotation)
		}
		switch method {
		case "rotation/rotate":
			return orHook(empty, h.Rotate(ctx, q.Location))
		case "rotation/break_access":
			produced, err := h.BreakAccess(ctx, q.Location, q.How)
			return orHook(map[string]bool{"produced": produced}, err)
		default:
			return orHook(empty, h.RestoreAccess(ctx, q.Location))
		}
	default: // observation
		h, ok := tb.(Observation)
		if !ok {
			return nil, absent(HookObservation)
		}
		switch method {
		case "observation/calls":
			calls, err := h.Calls(ctx, q.Since)
			if calls == nil {
				calls = []BackendCall{}
			}
			return orHook(map[string]interface{}{"calls": calls}, err)
		case "observation/dials":
			n, err := h.Dials(ctx, q.Location)
			return orHook(map[string]uint64{"dials": n}, err)
		default:
			return orHook(empty, h.SetVerbosity(ctx, q.Verbosity))
		}
	}
}

func indexSlash(m string) int {
	for i := 0; i < len(m); i++ {
		if m[i] == '/' {
			return i
		}
	}
	return len(m)
}
