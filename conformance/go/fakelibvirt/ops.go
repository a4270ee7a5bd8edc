package fakelibvirt

import (
	"context"
	"encoding/json"
	"time"
)

// Trigger says which calls a Rule hits: Type is "always", "nth_call" (N),
// "procedure" (Name) or "nth_call_of" (Name, N). Procedures are named by
// libvirt's API name without "vir" (DomainCreate), as the trace names them.
type Trigger struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	N    uint64 `json:"n,omitempty"`
}

// LibvirtError is the error a fault answers with: Code is a virErrorNumber
// (55) or its name ("VIR_ERR_OPERATION_INVALID"), Domain likewise a
// virErrorDomain (nil: VIR_FROM_NONE), Message the detail after the code's
// standard prefix (empty: "injected fault").
type LibvirtError struct {
	Code    any    `json:"code"`
	Domain  any    `json:"domain,omitempty"`
	Message string `json:"message,omitempty"`
}

// Fault says what a Rule does: Type is "error" (Error), "delay" (Millis),
// "hang", "drop_connection" or "lose_reply".
type Fault struct {
	Type   string
	Error  *LibvirtError
	Millis uint64
}

// MarshalJSON flattens the error's fields into the fault, as the daemon reads it.
func (f Fault) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": f.Type}
	if f.Error != nil {
		m["code"] = f.Error.Code
		if f.Error.Domain != nil {
			m["domain"] = f.Error.Domain
		}
		if f.Error.Message != "" {
			m["message"] = f.Error.Message
		}
	}
	if f.Type == "delay" {
		m["millis"] = f.Millis
	}
	return json.Marshal(m)
}

// Rule is one fault rule of the daemon.
type Rule struct {
	Trigger Trigger `json:"trigger"`
	Fault   Fault   `json:"fault"`
	// Once makes it fire at most once.
	Once bool `json:"once"`
	// Object limits it to calls about the domain, pool or volume of this name.
	Object string `json:"object,omitempty"`
	// Connection limits it to calls on this connection (0: any).
	Connection uint64 `json:"connection,omitempty"`
}

// Call is one call that reached the daemon.
type Call struct {
	Seq        uint64 `json:"seq"`
	Connection uint64 `json:"connection"`
	// Procedure is libvirt's API name without "vir" (DomainCreate).
	Procedure string `json:"procedure"`
	Number    int32  `json:"number"`
	// AtMicros is the arrival time, microseconds since the Unix epoch.
	AtMicros uint64 `json:"at_us"`
	// Fault is the injected fault that hit it ("error(VIR_ERR_...)", "delay",
	// "hang", "drop", "lose-reply"), empty for none.
	Fault string `json:"fault"`
}

// Connection is one connection dialled to the daemon.
type Connection struct {
	ID             uint64 `json:"id"`
	DialedAtMicros uint64 `json:"dialed_at_us"`
	Closed         bool   `json:"closed"`
	Calls          uint64 `json:"calls"`
}

// Domain is one domain on the fake host.
type Domain struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
	// ID is the running id, -1 when inactive.
	ID int32 `json:"id"`
	// State is "running", "paused", "shutoff", ...
	State      string `json:"state"`
	Reason     int32  `json:"reason"`
	Persistent bool   `json:"persistent"`
}

// Volume is one volume of a pool.
type Volume struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	Capacity   uint64 `json:"capacity"`
	Allocation uint64 `json:"allocation"`
	Format     string `json:"format"`
	// ContentBytes is how many bytes were uploaded into it.
	ContentBytes uint64 `json:"content_bytes"`
}

// Pool is one storage pool with its volumes.
type Pool struct {
	Name       string   `json:"name"`
	Active     bool     `json:"active"`
	Capacity   uint64   `json:"capacity"`
	Allocation uint64   `json:"allocation"`
	Available  uint64   `json:"available"`
	Volumes    []Volume `json:"volumes"`
}

// Inventory is everything on the fake host.
type Inventory struct {
	Domains []Domain `json:"domains"`
	Pools   []Pool   `json:"pools"`
}

// Interface is one interface a domain reports; Addrs are "ADDR/PREFIX".
type Interface struct {
	Name   string   `json:"name"`
	HWAddr string   `json:"hwaddr,omitempty"`
	Addrs  []string `json:"addrs"`
}

func faultID(ctx context.Context, c *Client, cmd string, kv ...any) (uint64, error) {
	var r struct {
		ID uint64 `json:"id"`
	}
	err := c.do(ctx, cmd, &r, kv...)
	return r.ID, err
}

// AddFault adds a rule and returns its id.
func (c *Client) AddFault(ctx context.Context, rule Rule) (uint64, error) {
	return faultID(ctx, c, "fault_add", "rule", rule)
}

// PushFault queues one entry of the fault script: the next call not yet
// scripted gets fault (nil: it passes untouched). Returns its id.
func (c *Client) PushFault(ctx context.Context, fault *Fault) (uint64, error) {
	if fault == nil {
		return faultID(ctx, c, "fault_push")
	}
	return faultID(ctx, c, "fault_push", "fault", fault)
}

// Fired says whether the injection fired and how many calls it hit.
func (c *Client) Fired(ctx context.Context, id uint64) (bool, uint64, error) {
	var r struct {
		Fired bool   `json:"fired"`
		Count uint64 `json:"count"`
	}
	err := c.do(ctx, "fault_fired", &r, "id", id)
	return r.Fired, r.Count, err
}

// RemoveFault takes one injection out.
func (c *Client) RemoveFault(ctx context.Context, id uint64) error {
	return c.do(ctx, "fault_remove", nil, "id", id)
}

// ClearFaults removes every injection and closes the connections that carry a
// hung call, which releases their clients; it returns those connections.
func (c *Client) ClearFaults(ctx context.Context) ([]uint64, error) {
	var r struct {
		Connections []uint64 `json:"connections"`
	}
	err := c.do(ctx, "fault_clear", &r, "release_hung", true)
	return r.Connections, err
}

// Mark is the trace position the next call will take.
func (c *Client) Mark(ctx context.Context) (uint64, error) {
	var r struct {
		Mark uint64 `json:"mark"`
	}
	err := c.do(ctx, "mark", &r)
	return r.Mark, err
}

// Trace returns the calls from position since on (a Mark, or the next of an
// earlier Trace) and the position to read from next time.
func (c *Client) Trace(ctx context.Context, since uint64) ([]Call, uint64, error) {
	var r struct {
		Calls []Call `json:"calls"`
		Next  uint64 `json:"next"`
	}
	err := c.do(ctx, "trace", &r, "since", since)
	return r.Calls, r.Next, err
}

// Connections lists every connection dialled so far.
func (c *Client) Connections(ctx context.Context) ([]Connection, error) {
	var r struct {
		Connections []Connection `json:"connections"`
	}
	err := c.do(ctx, "connections", &r)
	return r.Connections, err
}

// CloseConnections closes the open connections with these ids (all of them
// when ids is empty) and returns the ids closed.
func (c *Client) CloseConnections(ctx context.Context, ids ...uint64) ([]uint64, error) {
	var r struct {
		Connections []uint64 `json:"connections"`
	}
	var err error
	if len(ids) == 0 {
		err = c.do(ctx, "close_connections", &r)
	} else {
		err = c.do(ctx, "close_connections", &r, "ids", ids)
	}
	return r.Connections, err
}

// SetDialMode says how new connections are answered: "accept", "refuse" or
// "black_hole".
func (c *Client) SetDialMode(ctx context.Context, mode string) error {
	return c.do(ctx, "set_dial_mode", nil, "mode", mode)
}

// Restart does what restarting libvirtd does: the host stays, a wedge is
// cleared, and the open connections are closed (keepConnections: they stay
// open and are never answered again).
func (c *Client) Restart(ctx context.Context, keepConnections bool) error {
	return c.do(ctx, "restart", nil, "keep_connections", keepConnections)
}

// Wedge makes the daemon answer nothing until Restart.
func (c *Client) Wedge(ctx context.Context) error {
	return c.do(ctx, "wedge", nil)
}

// HoldBoot holds (or releases) the boot of the domain name, or of every domain
// when name is empty: a held guest's agent does not answer and it reports no
// address.
func (c *Client) HoldBoot(ctx context.Context, name string, hold bool) error {
	if name == "" {
		return c.do(ctx, "hold_boot", nil, "hold", hold)
	}
	return c.do(ctx, "hold_boot", nil, "name", name, "hold", hold)
}

// SetIPv4 makes a domain report addr from its guest agent and the ARP table.
func (c *Client) SetIPv4(ctx context.Context, name, addr string) error {
	return c.do(ctx, "set_ipv4", nil, "name", name, "addr", addr)
}

// SetAddresses sets the interfaces a domain reports from source ("agent",
// "lease" or "arp").
func (c *Client) SetAddresses(ctx context.Context, name, source string, ifaces []Interface) error {
	return c.do(ctx, "set_addresses", nil, "name", name, "source", source, "interfaces", ifaces)
}

// ClearAddresses drops what SetAddresses or SetIPv4 set for one source.
func (c *Client) ClearAddresses(ctx context.Context, name, source string) error {
	return c.do(ctx, "clear_addresses", nil, "name", name, "source", source)
}

// SetAgentUnresponsive makes a domain's guest agent stop answering (or answer
// again): an address lookup from the agent fails.
func (c *Client) SetAgentUnresponsive(ctx context.Context, name string, unresponsive bool) error {
	return c.do(ctx, "set_agent_unresponsive", nil, "name", name, "unresponsive", unresponsive)
}

// SetDomainState forces a domain's state ("running", "paused", "shutoff", ...)
// with state reason 1 (booted, user, shutdown).
func (c *Client) SetDomainState(ctx context.Context, name, state string) error {
	return c.do(ctx, "set_domain_state", nil, "name", name, "state", state)
}

// SetPoolCapacity sets a pool's capacity in bytes.
func (c *Client) SetPoolCapacity(ctx context.Context, pool string, capacity uint64) error {
	return c.do(ctx, "set_pool_capacity", nil, "pool", pool, "capacity", capacity)
}

// SetPoolAvailable makes a pool report exactly this many free bytes.
func (c *Client) SetPoolAvailable(ctx context.Context, pool string, available uint64) error {
	return c.do(ctx, "set_pool_available", nil, "pool", pool, "available", available)
}

// SetPoolActive starts or stops a pool.
func (c *Client) SetPoolActive(ctx context.Context, pool string, active bool) error {
	return c.do(ctx, "set_pool_active", nil, "pool", pool, "active", active)
}

// AddPool adds an active directory pool (or updates an existing one).
func (c *Client) AddPool(ctx context.Context, name, path string, capacity uint64) error {
	return c.do(ctx, "add_pool", nil, "name", name, "path", path, "capacity", capacity)
}

// RemovePool removes a pool and its volumes.
func (c *Client) RemovePool(ctx context.Context, name string) error {
	return c.do(ctx, "remove_pool", nil, "name", name)
}

// DefineDomain defines a domain from its XML, with the rules of a define call,
// and starts it when running is true. It returns the domain's UUID.
func (c *Client) DefineDomain(ctx context.Context, xml string, running bool) (string, error) {
	var r struct {
		UUID string `json:"uuid"`
	}
	err := c.do(ctx, "define_domain", &r, "xml", xml, "running", running)
	return r.UUID, err
}

// RemoveDomain removes a domain whatever its state.
func (c *Client) RemoveDomain(ctx context.Context, name string) error {
	return c.do(ctx, "remove_domain", nil, "name", name)
}

// CreateVolume creates a volume in pool; format is "raw" (or empty) or "qcow2".
func (c *Client) CreateVolume(ctx context.Context, pool, name string, capacity uint64, format string) error {
	if format == "" {
		format = "raw"
	}
	return c.do(ctx, "create_volume", nil, "pool", pool, "name", name, "capacity", capacity, "format", format)
}

// RemoveVolume removes a volume.
func (c *Client) RemoveVolume(ctx context.Context, pool, name string) error {
	return c.do(ctx, "remove_volume", nil, "pool", pool, "name", name)
}

// Inventory lists every domain, pool and volume.
func (c *Client) Inventory(ctx context.Context) (Inventory, error) {
	var r Inventory
	err := c.do(ctx, "inventory", &r)
	return r, err
}

// DomainXML returns a domain's persistent definition and, while it runs, its
// running one (empty otherwise), metadata included.
func (c *Client) DomainXML(ctx context.Context, name string) (config, live string, err error) {
	var r struct {
		Config string `json:"config"`
		Live   string `json:"live"`
	}
	err = c.do(ctx, "domain_xml", &r, "name", name)
	return r.Config, r.Live, err
}

// Dump returns the host as a state file, which a daemon started with
// --state loads.
func (c *Client) Dump(ctx context.Context) (json.RawMessage, error) {
	var r struct {
		State json.RawMessage `json:"state"`
	}
	err := c.do(ctx, "dump", &r)
	return r.State, err
}

// SetLatency adds a network round trip to every call.
func (c *Client) SetLatency(ctx context.Context, rtt time.Duration) error {
	return c.do(ctx, "set_latency", nil, "millis", rtt.Milliseconds())
}
