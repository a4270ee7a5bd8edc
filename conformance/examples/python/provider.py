#!/usr/bin/env python3
"""A minimal provider in Python, checked by the conformance suite over the process
protocol (docs/remote-protocol.md), with nothing but the standard library.

It serves an in-memory backend with two sites (site-a in zone-a, site-b in zone-b),
the provider that drives it, and a fixture with all seven hooks. Run it through the
suite with

    conformance run --provider-command 'python3 conformance/examples/python/provider.py'

The layout follows the protocol document's sections: the backend (where faults,
the call trace and the out-of-band hooks live), the provider (Create, Get, Delete,
ListByTag, Check), the fixture, and the server (lines in, replies and telemetry
out). Stdout carries protocol messages only: everything else goes to stderr.
"""

import datetime
import ipaddress
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zlib

PROTOCOL_VERSION = 1
SITES = [("site-a", "zone-a"), ("site-b", "zone-b")]
DISK_BYTES = 256 << 20
BASE_IMAGE_BYTES = 512 << 20
BOOT_DELAY = 0.005
# A site that does not answer gets this long when the caller gave no deadline.
UNBOUNDED_SITE_LIMIT = 2.0
PROFILE = {
    "create-return": "early", "provisioning-state": "get-reports",
    "child-spans": "span-decorator", "quota": "detected", "credentials": "mounted-files",
    "client-kind": "sdk", "gc-mark": "backend-tags", "created-at": "written-at-create",
    "ip-source": "allocated", "list-partial": "partial", "not-found": "error-code",
    "delete-return": "waits", "secondary-resources": "explicit", "timeouts": "per-call",
    "logging": "tiered", "backend-test": "none",
}
HOOKS = ["Inventory", "Planting", "StateControl", "Capacity", "Faults", "Rotation",
         "Observation"]


# --------------------------------------------------------------------------------
# Call context: deadline, cancellation and the telemetry of the request it serves.

class Interrupted(Exception):
    def __init__(self, cancelled):
        super().__init__("call cancelled" if cancelled else "deadline exceeded")


class Ctx:
    def __init__(self, deadline=None, cancel=None, tele=None, span=None):
        self.deadline = deadline          # time.monotonic() value, or None
        self.cancel = cancel or threading.Event()
        self.tele = tele                  # (server, request id), or None
        self.span = span                  # the current span's id, or None

    def bounded(self, limit):
        """A context whose deadline is at most `limit` seconds away."""
        d = time.monotonic() + limit
        if self.deadline is not None:
            d = min(d, self.deadline)
        return Ctx(d, self.cancel, self.tele, self.span)

    def check(self):
        if self.cancel.is_set():
            raise Interrupted(True)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise Interrupted(False)

    def sleep(self, seconds, until=None):
        """Waits `seconds` (forever with None), or until the event `until` is set;
        raises Interrupted when the context ends first."""
        end = None if seconds is None else time.monotonic() + seconds
        while True:
            self.check()
            if until is not None and until.is_set():
                return
            now = time.monotonic()
            if end is not None and now >= end:
                return
            step = 0.01 if end is None else min(0.01, end - now)
            self.cancel.wait(max(step, 0))


def start_span(ctx, name, level, fields=None):
    """Opens a span under the context's span and returns a context inside it."""
    if ctx.tele is None:
        return ctx, None
    server, request = ctx.tele
    sid = server.next_span()
    server.telemetry(request, "$/span/start", {
        "request": request, "span": sid, "parent": ctx.span, "name": name,
        "level": level, "fields": {k: str(v) for k, v in (fields or {}).items()}})
    return Ctx(ctx.deadline, ctx.cancel, ctx.tele, sid), sid


def end_span(ctx, sid):
    if ctx.tele is not None and sid is not None:
        server, request = ctx.tele
        server.telemetry(request, "$/span/end", {"span": sid})


def log(ctx, level, message, **fields):
    if ctx.tele is not None:
        server, request = ctx.tele
        server.telemetry(request, "$/event", {
            "request": request, "span": ctx.span, "level": level, "message": message,
            "fields": {k: str(v) for k, v in fields.items()}})


# --------------------------------------------------------------------------------
# The backend: sites, instances, volumes; faults, reachability and the call trace.

class BackendError(Exception):
    def __init__(self, kind, what="", available=0, needed=0):
        self.kind, self.what, self.available, self.needed = kind, what, available, needed
        super().__init__({
            "NoObject": "no such object: " + what,
            "Busy": "backend busy: " + what,
            "Denied": "operation denied: " + what,
            "NoSpace": "no space in %s: %d free, %d needed" % (what, available, needed),
            "Exists": "already exists: " + what,
            "NoContainer": "volume store missing at " + what,
            "Unreadable": "mark of " + what + " cannot be read",
            "Closed": "connection closed",
            "Refused": "connection refused",
            "AuthFailed": "credential token rejected",
            "HostKeyRejected": "site identity differs from the trusted one",
            "CredentialsMissing": "credential file " + what + " is missing",
        }[kind])


def is_kind(e, kind):
    return isinstance(e, BackendError) and e.kind == kind


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if t else None


class Record:
    def __init__(self, mark, power, ip, unreadable=False, booted=False):
        self.mark = mark              # dict(tag, uid, created_at) or None
        self.power = power
        self.ip = ip
        self.started = time.monotonic() if power == "Running" else None
        self.booted = booted
        self.addresses = None         # set by the state-control hook
        self.lookup_fails = False
        self.unreadable = unreadable


class Site:
    def __init__(self, name):
        self.instances = {}
        self.volumes = {"base-image": {"instance": None, "kind": "image",
                                       "size": BASE_IMAGE_BYTES, "data": b""}}
        self.container = True
        self.capacity = 1 << 40
        self.free_override = None
        self.reach = "Up"
        self.token = "token-%s-0" % name
        self.identity = "identity-%s-0" % name
        self.dials = 0
        self.open = set()

    def free(self):
        if self.free_override is not None:
            return self.free_override
        used = sum(v["size"] for v in self.volumes.values())
        return max(self.capacity - used, 0)


class Backend:
    def __init__(self, names):
        self.lock = threading.Lock()
        self.sites = {n: Site(n) for n in names}
        self.trace = []
        self.next_conn = 0
        self.next_ip = 0
        self.boot_held = False
        self.injections = []          # dicts: id, spec, seen, spent
        self.next_fault = 0
        self.fired = set()
        self.released = threading.Event()

    # The one entry point of every procedure: trace, fault, then the effect.

    def on_call(self, site, proc):
        """Counts the call against the active injections; the fault that fires."""
        hit = None
        with self.lock:
            for inj in self.injections:
                loc = inj["spec"].get("location")
                if inj["spent"] or (loc is not None and loc != site):
                    continue
                inj["seen"] += 1
                trig = inj["spec"]["trigger"]
                fires = {"Nth": lambda: inj["seen"] == trig.get("n"),
                         "Named": lambda: trig.get("name", "").lower() == proc.lower(),
                         "Always": lambda: True}[trig["type"]]()
                if fires and hit is None:
                    inj["spent"] = trig["type"] != "Always"
                    self.fired.add(inj["id"])
                    hit = inj["spec"]["kind"]
            return hit, self.released

    def suffer(self, ctx, site, conn, fault, released):
        """Applies a fault before the call takes effect."""
        if fault is None:
            return
        t = fault["type"]
        if t == "Transient":
            raise BackendError("Busy", "injected transient fault")
        if t == "Permanent":
            raise BackendError("Denied", "injected permanent fault")
        if t == "NotFound":
            raise BackendError("NoObject", "injected not-found fault")
        if t == "Quota":
            with self.lock:
                free = self.sites[site].free()
            raise BackendError("NoSpace", "volume store at " + site, free, free + 1)
        if t == "Hang":
            ctx.sleep(None, until=released)
            return
        if t == "Delay":
            ctx.sleep(fault.get("micros", 0) / 1e6)
            return
        # Drop: the connection closes under the call, which has no effect.
        with self.lock:
            self.sites[site].open.discard(conn)
        raise BackendError("Closed")

    def invoke(self, ctx, conn, site_name, proc, op):
        with self.lock:
            s = self.sites.get(site_name)
            if s is None:
                raise BackendError("Denied", "no site " + site_name)
            if conn not in s.open:
                raise BackendError("Closed")
            self.trace.append({"location": site_name, "name": proc, "connection": conn})
        fault, released = self.on_call(site_name, proc)
        lose = fault is not None and fault["type"] == "LostReply"
        if not lose:
            self.suffer(ctx, site_name, conn, fault, released)
        with self.lock:
            if conn not in s.open:
                raise BackendError("Closed")
            if lose:
                # The backend acts, then the reply (success or error) is lost.
                s.open.discard(conn)
                try:
                    op(s)
                except BackendError:
                    pass
                raise BackendError("Closed")
            return op(s)

    def dial(self, ctx, site_name, token, trusted):
        with self.lock:
            s = self.sites.get(site_name)
            if s is None:
                raise BackendError("Denied", "no site " + site_name)
            reach = s.reach
            self.next_conn += 1
            conn = self.next_conn
            self.trace.append({"location": site_name, "name": "dial", "connection": conn})
        if reach == "Refused":
            raise BackendError("Refused")
        if reach == "BlackHole":
            ctx.sleep(None)
        fault, released = self.on_call(site_name, "dial")
        if fault is not None and fault["type"] in ("Drop", "LostReply"):
            raise BackendError("Closed")
        self.suffer(ctx, site_name, conn, fault, released)
        with self.lock:
            if s.reach != "Up":
                raise BackendError("Refused")
            if s.identity != trusted:
                raise BackendError("HostKeyRejected")
            if s.token != token:
                raise BackendError("AuthFailed")
            s.dials += 1
            s.open.add(conn)
        return conn

    def close(self, site_name, conn):
        with self.lock:
            self.sites[site_name].open.discard(conn)

    def allocate_ip(self):
        self.next_ip += 1
        n = self.next_ip
        return "10.77.%d.%d" % (n >> 8 & 255, n & 255)

    def progress(self, r):
        if (r.power == "Running" and not r.booted and not self.boot_held
                and r.started is not None and time.monotonic() - r.started >= BOOT_DELAY):
            r.booted = True

    # Procedures.

    def lookup(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            seed = s.volumes.get(name + "-seed") if s.container else None
            return {"power": r.power,
                    "disk": s.container and (name + "-disk") in s.volumes,
                    "seed": seed is not None}
        return self.invoke(ctx, c, site, "lookup", op)

    def define(self, ctx, c, site, name, mark):
        def op(s):
            if name in s.instances:
                raise BackendError("Exists", "instance " + name)
            s.instances[name] = Record(mark, "Stopped", self.allocate_ip())
        return self.invoke(ctx, c, site, "define", op)

    @staticmethod
    def add_volume(s, site, name, owner, kind, size, data):
        if not s.container:
            raise BackendError("NoContainer", site)
        if name in s.volumes:
            raise BackendError("Exists", "volume " + name)
        if size > s.free():
            raise BackendError("NoSpace", "volume store at " + site, s.free(), size)
        s.volumes[name] = {"instance": owner, "kind": kind, "size": size, "data": data}

    def create_disk(self, ctx, c, site, name):
        return self.invoke(ctx, c, site, "create_disk", lambda s: self.add_volume(
            s, site, name + "-disk", name, "disk", DISK_BYTES, b""))

    def create_seed(self, ctx, c, site, name, data):
        return self.invoke(ctx, c, site, "create_seed", lambda s: self.add_volume(
            s, site, name + "-seed", name, "seed", len(data), data))

    def start(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            if not (s.container and name + "-disk" in s.volumes and name + "-seed" in s.volumes):
                raise BackendError("NoObject", "a volume of " + name)
            if r.power == "Running":
                raise BackendError("Denied", name + " is already running")
            r.power, r.started, r.booted = "Running", time.monotonic(), False
        return self.invoke(ctx, c, site, "start", op)

    def addresses(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            self.progress(r)
            if r.lookup_fails:
                raise BackendError("Busy", "address lookup of %s failed" % name)
            if r.addresses is not None:
                return list(r.addresses)
            return [r.ip] if r.booted else []
        return self.invoke(ctx, c, site, "addresses", op)

    def stop(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            if r.power == "Stopped":
                raise BackendError("Denied", name + " is not running")
            r.power, r.booted = "Stopped", False
        return self.invoke(ctx, c, site, "stop", op)

    def undefine(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            if r.power != "Stopped":
                raise BackendError("Busy", name + " must be stopped first")
            del s.instances[name]
        return self.invoke(ctx, c, site, "undefine", op)

    def delete_volume(self, ctx, c, site, proc, vol):
        def op(s):
            if not s.container:
                raise BackendError("NoContainer", site)
            if vol not in s.volumes:
                raise BackendError("NoObject", "volume " + vol)
            del s.volumes[vol]
        return self.invoke(ctx, c, site, proc, op)

    def list(self, ctx, c, site):
        return self.invoke(ctx, c, site, "list", lambda s: sorted(
            (n, r.power) for n, r in s.instances.items()))

    def read_mark(self, ctx, c, site, name):
        def op(s):
            r = s.instances.get(name)
            if r is None:
                raise BackendError("NoObject", "instance " + name)
            if r.unreadable:
                raise BackendError("Unreadable", "instance " + name)
            return dict(r.mark) if r.mark else None
        return self.invoke(ctx, c, site, "read_mark", op)

    def capacity_of(self, ctx, c, site):
        def op(s):
            if not s.container:
                raise BackendError("NoContainer", site)
            return s.free()
        return self.invoke(ctx, c, site, "capacity", op)

    def ping(self, ctx, c, site):
        return self.invoke(ctx, c, site, "ping", lambda s: len(s.instances))


# --------------------------------------------------------------------------------
# The provider.

class ContractError(Exception):
    def __init__(self, op, kind, message, cause=None, quota=None):
        super().__init__(message)
        self.op, self.kind, self.message, self.quota = op, kind, message, quota
        self.source = [str(cause)] if cause is not None else []

    def wire(self, provider):
        e = {"provider": provider, "op": self.op, "kind": self.kind,
             "message": self.message, "source": self.source}
        if self.quota is not None:
            e["quota"] = self.quota
        return e


LABEL = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
UID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def instance_id(site, name):
    return "sites/%s/instances/%s" % (site, name)


def parse_id(id_):
    parts = id_.split("/")
    if (len(parts) == 4 and parts[0] == "sites" and parts[2] == "instances"
            and LABEL.match(parts[1]) and LABEL.match(parts[3])):
        return parts[1], parts[3]
    return None


def first_usable(addrs):
    for a in addrs:
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            continue
        if (ip.version == 4 and not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)
                and str(ip) != "255.255.255.255"):
            return str(ip)
    return None


class Config:
    def __init__(self, cred_dir):
        self.name = "python-example"
        self.cred_dir = cred_dir
        self.verbosity = 1            # V1 unless the observation hook says otherwise

    def token_file(self, site):
        return os.path.join(self.cred_dir, site + ".token")

    def known_host_file(self, site):
        return os.path.join(self.cred_dir, site + ".known_host")

    def site_for(self, placement):
        return next((n for n, p in SITES if p == placement), None)

    def has_site(self, name):
        return any(n == name for n, _ in SITES)


def read_trimmed(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        raise BackendError("CredentialsMissing", path)


def acquire(lock, ctx):
    while not lock.acquire(timeout=0.01):
        ctx.check()


class Provider:
    def __init__(self, cfg, backend):
        self.cfg, self.backend = cfg, backend
        self.slots = {n: {"conn": None, "dialing": threading.Lock()} for n, _ in SITES}
        self.slot_lock = threading.Lock()
        self.names = {}               # per-name locks: key -> [lock, users]
        self.names_lock = threading.Lock()

    def classify(self, op, what, e):
        if isinstance(e, ContractError):
            return e
        kind = "Transient"
        if isinstance(e, BackendError):
            if e.kind == "NoObject" and op != "Create":
                kind = "NotFound"
            elif e.kind in ("Denied", "AuthFailed", "HostKeyRejected", "Unreadable",
                            "NoContainer"):
                kind = "Permanent"
            elif e.kind == "NoSpace":
                return ContractError(op, "QuotaExceeded", what, e, {
                    "what": e.what, "available": e.available, "needed": e.needed})
        return ContractError(op, kind, what, e)

    def call(self, ctx, site, proc, f):
        """Every backend call: its own span, a DEBUG line at V2, the context checked."""
        cctx, sid = start_span(ctx, "python." + proc, "DEBUG", {"site": site})
        try:
            if self.cfg.verbosity >= 2:
                log(cctx, "DEBUG", "backend call", site=site, call=proc)
            ctx.check()
            return f(cctx)
        finally:
            end_span(cctx, sid)

    def session_call(self, ctx, site, conn, proc, f):
        try:
            return self.call(ctx, site, proc, lambda c: f(c, conn))
        except BackendError as e:
            if e.kind == "Closed":
                self.forget(site, conn)
            raise

    def read(self, ctx, site, conn, proc, f):
        """A call that changes nothing: a busy answer is retried once."""
        try:
            return self.session_call(ctx, site, conn, proc, f)
        except BackendError as e:
            if e.kind != "Busy":
                raise
            return self.session_call(ctx, site, conn, proc, f)

    def forget(self, site, conn):
        with self.slot_lock:
            if self.slots[site]["conn"] == conn:
                self.slots[site]["conn"] = None

    def dial(self, ctx, site):
        # Credentials are read on every dial, so a rotation needs no restart.
        token = read_trimmed(self.cfg.token_file(site))
        trusted = read_trimmed(self.cfg.known_host_file(site))
        return self.call(ctx, site, "dial",
                         lambda c: self.backend.dial(c, site, token, trusted))

    def session(self, ctx, site):
        slot = self.slots[site]
        with self.slot_lock:
            if slot["conn"] is not None:
                return slot["conn"]
        acquire(slot["dialing"], ctx)
        try:
            with self.slot_lock:
                if slot["conn"] is not None:
                    return slot["conn"]
            try:
                conn = self.dial(ctx, site)
            except BackendError as e:
                if e.kind != "Busy":
                    raise
                conn = self.dial(ctx, site)
            with self.slot_lock:
                slot["conn"] = conn
            return conn
        finally:
            slot["dialing"].release()

    def lock_name(self, ctx, key):
        with self.names_lock:
            entry = self.names.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1

        def release_entry():
            with self.names_lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self.names[key]
        try:
            acquire(entry[0], ctx)
        except Interrupted:
            release_entry()
            raise

        def unlock():
            entry[0].release()
            release_entry()
        return unlock

    def operation(self, ctx, op, span_name, fields, body):
        """An operation's span and its one line: INFO on success from V1, WARN on
        failure."""
        cctx, sid = start_span(ctx, span_name, "INFO", fields)
        try:
            result = body(cctx)
            if self.cfg.verbosity >= 1:
                log(cctx, "INFO", "succeeded", op=op.lower())
            return result
        except ContractError as e:
            log(cctx, "WARN", "failed", op=op.lower(), kind=e.kind, error=e.message)
            raise
        finally:
            end_span(cctx, sid)

    # Create.

    def create(self, ctx, req):
        return self.operation(ctx, "Create", "python.create",
                              {"name": req["name"], "placement": req["placement"]},
                              lambda c: self._create(c, req))

    def _create(self, ctx, req):
        op, name = "Create", req["name"]
        for field, ok in (("name", LABEL.match(name)), ("uid", UID.match(req["uid"])),
                          ("tag", LABEL.match(req["tag"]))):
            if not ok:
                raise ContractError(op, "Permanent", "invalid request: bad " + field)
        site = self.cfg.site_for(req["placement"])
        if site is None:
            raise ContractError(op, "Permanent", "unknown placement %r" % req["placement"])
        try:
            unlock = self.lock_name(ctx, site + "/" + name)
        except Interrupted as e:
            raise self.classify(op, "waiting for " + name, e)
        try:
            return self._create_locked(ctx, req, site, name)
        finally:
            unlock()

    def _create_locked(self, ctx, req, site, name):
        op, b = "Create", self.backend
        try:
            conn = self.session(ctx, site)
        except (BackendError, Interrupted) as e:
            raise self.classify(op, "connecting to " + site, e)
        call = lambda proc, f: self.session_call(ctx, site, conn, proc, f)  # noqa: E731
        try:
            info = call("lookup", lambda c, k: b.lookup(c, k, site, name))
        except BackendError as e:
            if e.kind != "NoObject":
                raise self.classify(op, "looking up " + name, e)
            info = None
        except Interrupted as e:
            raise self.classify(op, "looking up " + name, e)
        if info is not None:
            try:
                mark = call("read_mark", lambda c, k: b.read_mark(c, k, site, name))
            except (BackendError, Interrupted) as e:
                raise self.classify(op, "reading the mark of " + name, e)
            if mark is None:
                raise ContractError(op, "Permanent", "%s exists at %s and is not managed "
                                    "by this provider" % (name, site))
            if mark["uid"] and mark["uid"] != req["uid"]:
                raise ContractError(op, "Permanent", "%s exists at %s and belongs to "
                                    "another owner" % (name, site))
            if not mark["uid"]:
                return instance_id(site, name)
        self.converge(ctx, call, req, site, name, info)
        return instance_id(site, name)

    def converge(self, ctx, call, req, site, name, info):
        op, b = "Create", self.backend
        payload = req["cloud_init"].encode()
        need_disk = info is None or not info["disk"]
        need_seed = info is None or not info["seed"]
        needed = (DISK_BYTES if need_disk else 0) + (len(payload) if need_seed else 0)
        steps = []
        if needed:
            steps.append(("capacity", "reading free capacity at " + site, None))
        if info is None:
            mark = {"tag": req["tag"], "uid": req["uid"], "created_at": now_utc()}
            steps.append(("define", "defining " + name,
                          lambda c, k: b.define(c, k, site, name, mark)))
        if need_disk:
            steps.append(("create_disk", "creating the disk of " + name,
                          lambda c, k: b.create_disk(c, k, site, name)))
        if need_seed:
            steps.append(("create_seed", "creating the seed of " + name,
                          lambda c, k: b.create_seed(c, k, site, name, payload)))
        if info is None or info["power"] == "Stopped":
            steps.append(("start", "starting " + name,
                          lambda c, k: b.start(c, k, site, name)))
        for proc, what, f in steps:
            try:
                if proc == "capacity":
                    free = call(proc, lambda c, k: b.capacity_of(c, k, site))
                    if needed > free:
                        raise ContractError(op, "QuotaExceeded", "%s: %d available, %d needed"
                                            % (site, free, needed), quota={
                                                "what": "volume store at " + site,
                                                "available": free, "needed": needed})
                    continue
                call(proc, f)
            except BackendError as e:
                if e.kind == "Exists" and proc in ("create_disk", "create_seed"):
                    continue
                raise self.classify(op, what, e)
            except Interrupted as e:
                raise self.classify(op, what, e)

    # Get.

    def get(self, ctx, id_):
        return self.operation(ctx, "Get", "python.get", {"id": id_},
                              lambda c: self._get(c, id_))

    def _get(self, ctx, id_):
        op, b = "Get", self.backend
        parsed = parse_id(id_)
        if parsed is None:
            raise ContractError(op, "Permanent", "malformed instance id")
        site, name = parsed
        if not self.cfg.has_site(site):
            raise ContractError(op, "Permanent", "site %r is not configured" % site)
        try:
            conn = self.session(ctx, site)
            call = lambda proc, f: self.session_call(ctx, site, conn, proc, f)  # noqa: E731
            info = call("lookup", lambda c, k: b.lookup(c, k, site, name))
            mark = call("read_mark", lambda c, k: b.read_mark(c, k, site, name))
        except (BackendError, Interrupted) as e:
            raise self.classify(op, "looking up " + name, e)
        if mark is None:
            raise ContractError(op, "NotFound", name + " is not managed by this provider")
        state, ip = "Stopped", None
        if info["power"] == "Running":
            state = "Provisioning"
            try:
                addrs = call("addresses", lambda c, k: b.addresses(c, k, site, name))
                ip = first_usable(addrs)
                if ip is not None:
                    state = "Running"
            except Interrupted as e:
                raise self.classify(op, "reading the addresses of " + name, e)
            except BackendError as e:
                if e.kind in ("Closed", "NoObject"):
                    raise self.classify(op, "reading the addresses of " + name, e)
        return {"id": id_, "name": name, "state": state, "ipv4": ip, "uid": mark["uid"],
                "tag": mark["tag"], "created_at": rfc3339(mark["created_at"])}

    # Delete.

    def delete(self, ctx, id_):
        return self.operation(ctx, "Delete", "python.delete", {"id": id_},
                              lambda c: self._delete(c, id_))

    def _delete(self, ctx, id_):
        op = "Delete"
        parsed = parse_id(id_)
        if parsed is None:
            raise ContractError(op, "Permanent", "malformed instance id")
        site, name = parsed
        if not self.cfg.has_site(site):
            return {}                 # nothing of ours lives where we never go
        try:
            unlock = self.lock_name(ctx, site + "/" + name)
        except Interrupted as e:
            raise self.classify(op, "waiting for " + name, e)
        try:
            self._delete_locked(ctx, site, name)
            return {}
        finally:
            unlock()

    def _delete_locked(self, ctx, site, name):
        op, b = "Delete", self.backend
        try:
            conn = self.session(ctx, site)
        except (BackendError, Interrupted) as e:
            raise self.classify(op, "connecting to " + site, e)
        call = lambda proc, f: self.session_call(ctx, site, conn, proc, f)  # noqa: E731
        try:
            info = call("lookup", lambda c, k: b.lookup(c, k, site, name))
            mark = call("read_mark", lambda c, k: b.read_mark(c, k, site, name))
        except BackendError as e:
            if e.kind == "NoObject":
                return self.remove_parts(call, site, name)
            raise self.classify(op, "looking up " + name, e)
        except Interrupted as e:
            raise self.classify(op, "looking up " + name, e)
        if mark is None:
            raise ContractError(op, "Permanent", "%s at %s is not managed by this "
                                "provider; left alone" % (name, site))
        steps = []
        if info["power"] != "Stopped":
            steps.append(("stop", lambda c, k: b.stop(c, k, site, name)))
        steps.append(("undefine", lambda c, k: b.undefine(c, k, site, name)))
        for proc, f in steps:
            try:
                call(proc, f)
            except BackendError as e:
                if e.kind != "NoObject":
                    raise self.classify(op, proc + " " + name, e)
            except Interrupted as e:
                raise self.classify(op, proc + " " + name, e)
        self.remove_parts(call, site, name)

    def remove_parts(self, call, site, name):
        b = self.backend
        for part, proc in (("disk", "delete_disk"), ("seed", "delete_seed")):
            vol = "%s-%s" % (name, part)
            try:
                call(proc, lambda c, k: b.delete_volume(c, k, site, proc, vol))
            except BackendError as e:
                if e.kind not in ("NoObject", "NoContainer"):
                    raise self.classify("Delete", "deleting the %s of %s" % (part, name), e)
            except Interrupted as e:
                raise self.classify("Delete", "deleting the %s of %s" % (part, name), e)
        return {}

    # ListByTag.

    def list_by_tag(self, ctx, tag):
        return self.operation(ctx, "ListByTag", "python.list_by_tag", {"tag": tag},
                              lambda c: self._list(c, tag))

    def _list(self, ctx, tag):
        # Every site at once, each within 3/4 of the deadline (or a bound of its own),
        # so a silent site is named unreachable and the rest still answer.
        if ctx.deadline is not None:
            site_ctx = ctx.bounded((ctx.deadline - time.monotonic()) * 3 / 4)
        else:
            site_ctx = ctx.bounded(UNBOUNDED_SITE_LIMIT)
        results = [None] * len(SITES)

        def visit(i, site):
            try:
                results[i] = (self.list_site(site_ctx, site, tag), None)
            except (BackendError, Interrupted) as e:
                results[i] = (None, e)
        threads = [threading.Thread(target=visit, args=(i, n)) for i, (n, _) in enumerate(SITES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            ctx.check()
        except Interrupted as e:
            raise self.classify("ListByTag", "listing", e)
        if all(err is not None for _, err in results):
            raise self.classify("ListByTag", "listing: no site answered", results[0][1])
        listing = {"instances": [], "unreachable": []}
        for (site, _), (found, err) in zip(SITES, results):
            if err is not None:
                log(ctx, "WARN", "site skipped", site=site, error=err)
                listing["unreachable"].append({"location": site, "reason": str(err)})
            else:
                listing["instances"].extend(found)
        return listing

    def list_site(self, ctx, site, tag):
        b = self.backend
        conn = self.session(ctx, site)
        items = self.read(ctx, site, conn, "list", lambda c, k: b.list(c, k, site))
        out = []
        for name, power in items:
            try:
                mark = self.read(ctx, site, conn, "read_mark",
                                 lambda c, k: b.read_mark(c, k, site, name))
            except BackendError as e:
                if e.kind == "NoObject":
                    continue
                if e.kind == "Unreadable":
                    log(ctx, "WARN", "skipping an unreadable mark", site=site, instance=name)
                    continue
                if e.kind == "Denied":
                    # Refused for good: this one cannot be read, the others still can.
                    log(ctx, "WARN", "skipping an instance whose mark read is refused",
                        site=site, instance=name)
                    continue
                raise
            if mark is None or mark["tag"] != tag:
                continue
            out.append({"id": instance_id(site, name), "name": name,
                        "state": "Provisioning" if power == "Running" else "Stopped",
                        "ipv4": None, "uid": mark["uid"], "tag": mark["tag"],
                        "created_at": rfc3339(mark["created_at"])})
        return out

    # Check: every site at once, each on a fresh connection of its own.

    def check(self, ctx):
        cctx, sid = start_span(ctx, "python.check", "INFO")
        try:
            out = [None] * len(SITES)
            site_ctx = cctx if cctx.deadline is not None else cctx.bounded(UNBOUNDED_SITE_LIMIT)
            threads = [threading.Thread(target=lambda i=i, n=n: out.__setitem__(
                i, self.check_site(site_ctx, n))) for i, (n, _) in enumerate(SITES)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if self.cfg.verbosity >= 1:
                log(cctx, "INFO", "succeeded", op="check")
            return {"health": out}
        finally:
            end_span(cctx, sid)

    def check_site(self, ctx, site):
        b = self.backend
        details = {"location": site}
        try:
            conn = self.dial(ctx, site)
            try:
                n = self.call(ctx, site, "ping", lambda c: b.ping(c, conn, site))
                free = self.call(ctx, site, "capacity", lambda c: b.capacity_of(c, conn, site))
            finally:
                b.close(site, conn)
            details.update(instances=str(n), freeBytes=str(free))
            return {"location": site, "ready": True, "reason": "Ready",
                    "message": site + " is ready", "details": details}
        except (BackendError, Interrupted) as e:
            reason = "Timeout" if isinstance(e, Interrupted) else {
                # A site that denies the calls: our identity lacks what they need.
                "AuthFailed": "AuthFailed", "Denied": "AuthFailed",
                "HostKeyRejected": "HostKeyRejected",
                "CredentialsMissing": "CredentialsUnavailable",
                "NoContainer": "ContainerMissing"}.get(e.kind, "Unreachable")
            return {"location": site, "ready": False, "reason": reason,
                    "message": "%s: %s" % (site, e), "details": details}


# --------------------------------------------------------------------------------
# The fixture: a fresh backend, credential directory and provider per testbed.

class HookError(Exception):
    pass


class Testbed:
    def __init__(self):
        self.cfg = Config(tempfile.mkdtemp(prefix="python-provider-"))
        for site, _ in SITES:
            self.write(self.cfg.token_file(site), "token-%s-0" % site)
            self.write(self.cfg.known_host_file(site), "identity-%s-0" % site)
        self.backend = Backend([n for n, _ in SITES])
        self.rotations = 0
        self.lock = threading.Lock()

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def site(self, name):
        s = self.backend.sites.get(name)
        if s is None:
            raise HookError("no site " + name)
        return s

    def instance(self, site, name):
        r = self.site(site).instances.get(name)
        if r is None:
            raise HookError("no instance %s at %s" % (name, site))
        return r

    def teardown(self):
        self.clear()
        shutil.rmtree(self.cfg.cred_dir, ignore_errors=True)

    def request(self, name, tag, location):
        return {"name": name, "uid": "owner-" + name, "tag": tag,
                "placement": location["placement"], "image": None,
                "cloud_init": "#cloud-config\nhostname: %s\n" % name}

    # Inventory and planting.

    def resources(self, location):
        with self.backend.lock:
            s = self.site(location)
            out = [{"instance": n, "kind": "instance", "primary": True, "name": n}
                   for n in sorted(s.instances)]
            if s.container:
                out += [{"instance": v["instance"], "kind": v["kind"], "primary": False,
                         "name": n} for n, v in sorted(s.volumes.items())]
            return out

    def plant(self, location, name, what):
        b = self.backend
        with b.lock:
            s = self.site(location)
            if name in s.instances:
                raise HookError("%s already exists at %s" % (name, location))
            t, created = what["type"], now_utc()
            mark = None
            if t == "ForeignUid":
                mark = {"tag": what["tag"], "uid": what["uid"], "created_at": created}
            elif t in ("EmptyUid", "Unreadable"):
                mark = {"tag": what["tag"], "uid": "" if t == "EmptyUid" else "unknown",
                        "created_at": created}
            elif t != "Unmarked":
                raise HookError("unknown plant " + t)
            s.instances[name] = Record(mark, "Running", b.allocate_ip(),
                                       unreadable=t == "Unreadable", booted=True)
            if s.container:
                try:
                    Backend.add_volume(s, location, name + "-disk", name, "disk", 1 << 20, b"")
                    Backend.add_volume(s, location, name + "-seed", name, "seed", 9,
                                       b"#planted\n")
                except BackendError as e:
                    raise HookError(str(e))

    def inspect(self, location, name):
        """Everything of `name`: its mark, power state, boot, addresses and every
        part with its size and content, so any change shows."""
        with self.backend.lock:
            s = self.site(location)
            parts = ["%s:%d:%d" % (n, v["size"], zlib.crc32(v["data"]))
                     for n, v in sorted(s.volumes.items()) if v["instance"] == name]
            r = s.instances.get(name)
            if r is None and not parts:
                return None
            rec = "none"
            if r is not None:
                m = "unmarked" if r.mark is None else "tag=%s uid=%s created=%s" % (
                    r.mark["tag"], r.mark["uid"], rfc3339(r.mark["created_at"]))
                addrs = "-" if r.addresses is None else ",".join(r.addresses)
                rec = "%s power=%s booted=%s addrs=%s unreadable=%s" % (
                    m, r.power, r.booted, addrs, r.unreadable)
            return "%s parts=[%s]" % (rec, " ".join(parts))

    def remove_part(self, location, name, part):
        with self.backend.lock:
            s = self.site(location)
            if part == "Secondary":
                for n in [n for n, v in s.volumes.items() if v["instance"] == name]:
                    del s.volumes[n]
            elif part == "Primary":
                s.instances.pop(name, None)
            elif part == "Container":
                s.container, s.volumes = False, {}
            else:
                raise HookError("unknown part " + part)

    def remove(self, location, name):
        self.remove_part(location, name, "Primary")
        self.remove_part(location, name, "Secondary")

    # State control and capacity.

    def set_power(self, location, name, power):
        with self.backend.lock:
            r = self.instance(location, name)
            if power == "Running" and r.power == "Stopped":
                r.started, r.booted = time.monotonic(), False
            elif power == "Stopped":
                r.booted = False
            r.power = power

    def set_addresses(self, location, name, addrs):
        with self.backend.lock:
            self.instance(location, name).addresses = list(addrs)

    def fail_address_lookup(self, location, name, fail):
        with self.backend.lock:
            self.instance(location, name).lookup_fails = fail

    def hold_boot(self, hold):
        with self.backend.lock:
            self.backend.boot_held = hold

    def set_free(self, location, free):
        with self.backend.lock:
            self.site(location).free_override = free

    # Faults.

    def inject(self, spec):
        b = self.backend
        if spec.get("location") is not None:
            self.site(spec["location"])
        with b.lock:
            b.next_fault += 1
            b.injections.append({"id": b.next_fault, "spec": spec, "seen": 0, "spent": False})
            return b.next_fault

    def fired(self, id_):
        with self.backend.lock:
            return id_ in self.backend.fired

    def clear(self):
        b = self.backend
        with b.lock:
            b.injections = []
            b.released.set()
            b.released = threading.Event()

    def set_reachability(self, location, reach):
        with self.backend.lock:
            s = self.site(location)
            s.reach = reach
            if reach != "Up":
                s.open = set()

    def cause(self, location, reason):
        """Makes the site unhealthy for a reason the checker declares: ContainerMissing
        is the site's volume store gone, with everything in it."""
        if reason != "ContainerMissing":
            return False
        with self.backend.lock:
            s = self.site(location)
            s.container, s.volumes = False, {}
        return True

    def undo_cause(self, location):
        """Brings the volume store back, empty but for the base image."""
        with self.backend.lock:
            s = self.site(location)
            if not s.container:
                s.container = True
                s.volumes = {"base-image": {"instance": None, "kind": "image",
                                            "size": BASE_IMAGE_BYTES, "data": b""}}

    # Rotation.

    def rotate(self, location):
        with self.lock:
            self.site(location)
            self.rotations += 1
            token = "token-%s-%d" % (location, self.rotations)
            self.write(self.cfg.token_file(location), token)
            with self.backend.lock:
                self.backend.sites[location].token = token

    def break_access(self, location, how):
        with self.lock:
            s = self.site(location)
            if how == "Revoke":
                self.rotations += 1
                with self.backend.lock:
                    s.token = "revoked-%s-%d" % (location, self.rotations)
            elif how == "ForeignHostKey":
                with self.backend.lock:
                    s.identity = "foreign-identity-" + location
            elif how == "RemoveCredentials":
                f = self.cfg.token_file(location)
                if os.path.exists(f):
                    os.replace(f, f + ".removed")
            else:
                raise HookError("unknown access break " + how)
            return True

    def restore_access(self, location):
        with self.lock:
            s = self.site(location)
            f = self.cfg.token_file(location)
            if os.path.exists(f + ".removed"):
                if os.path.exists(f):
                    os.remove(f + ".removed")     # rotated while removed: the new file stands
                else:
                    os.replace(f + ".removed", f)
            try:
                token = read_trimmed(f)
                trusted = read_trimmed(self.cfg.known_host_file(location))
            except BackendError as e:
                raise HookError(str(e))
            with self.backend.lock:
                s.token, s.identity = token, trusted

    # Observation.

    def calls(self, since):
        with self.backend.lock:
            return list(self.backend.trace[since:])

    def dials(self, location):
        with self.backend.lock:
            return self.site(location).dials

    def set_verbosity(self, v):
        if v not in ("V0", "V1", "V2"):
            raise HookError("unknown verbosity " + v)
        self.cfg.verbosity = int(v[1])


# --------------------------------------------------------------------------------
# The server: one thread per request, replies in completion order.

class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class Server:
    def __init__(self, out):
        self.out = out
        self.write_lock = threading.Lock()
        self.lock = threading.Lock()
        self.testbeds, self.providers, self.inflight = {}, {}, {}
        self.handle_seq, self.span_seq = 0, 0
        # The requests whose telemetry is still sent; a request's telemetry stops
        # when its reply is written, so none follows the reply.
        self.open_requests = set()

    def write(self, msg):
        line = json.dumps(msg) + "\n"
        self.out.write(line.encode())
        self.out.flush()

    def next_span(self):
        with self.lock:
            self.span_seq += 1
            return self.span_seq

    def telemetry(self, request, method, params):
        with self.write_lock:
            if request in self.open_requests:
                self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, id_, result=None, error=None):
        msg = {"jsonrpc": "2.0", "id": id_}
        if error is not None:
            msg["error"] = {"code": error.code, "message": error.message}
        else:
            msg["result"] = result
        with self.write_lock:
            self.open_requests.discard(id_)
            self.write(msg)

    def new_handle(self):
        with self.lock:
            self.handle_seq += 1
            return self.handle_seq

    def testbed(self, params):
        tb = self.testbeds.get(params.get("testbed"))
        if tb is None:
            raise RpcError(2, "no testbed %s" % params.get("testbed"))
        return tb

    def register(self, tb, provider):
        h = self.new_handle()
        self.providers[h] = provider
        return {"provider": h, "name": provider.cfg.name, "profile": PROFILE,
                "checker": {"extra_reasons": ["ContainerMissing"]}}

    def run(self, inp):
        for raw in inp:
            if not raw.strip():
                continue
            try:
                msg = json.loads(raw)
            except ValueError:
                self.reply(None, error=RpcError(-32700, "the line is not JSON"))
                continue
            method, id_ = msg.get("method"), msg.get("id")
            params = msg.get("params") or {}
            if id_ is None:
                if method == "$/cancel":
                    ev = self.inflight.get(params.get("id"))
                    if ev is not None:
                        ev.set()
                continue
            cancel = threading.Event()
            with self.lock:
                self.inflight[id_] = cancel
            with self.write_lock:
                self.open_requests.add(id_)
            threading.Thread(target=self.serve_one, args=(id_, method, params, cancel),
                             daemon=True).start()
        for tb in list(self.testbeds.values()):
            tb.teardown()

    def serve_one(self, id_, method, params, cancel):
        try:
            result = self.dispatch(id_, method, params, cancel)
            self.reply(id_, result=result)
        except RpcError as e:
            self.reply(id_, error=e)
        except HookError as e:
            self.reply(id_, error=RpcError(1, str(e)))
        except Exception as e:  # a bug of ours: code -32603, with the traceback on stderr
            import traceback
            traceback.print_exc(file=sys.stderr)
            self.reply(id_, error=RpcError(-32603, "%s: %s" % (type(e).__name__, e)))
        finally:
            with self.lock:
                self.inflight.pop(id_, None)

    def dispatch(self, id_, method, params, cancel):
        if method == "initialize":
            if PROTOCOL_VERSION not in params.get("protocol_versions", []):
                raise RpcError(3, "this provider speaks protocol version 1 only")
            return {"protocol_version": PROTOCOL_VERSION, "provider_name": "python-example",
                    "provider_version": "0.1.0", "profile": PROFILE, "hooks": HOOKS,
                    "locations": [{"name": n, "placement": p} for n, p in SITES],
                    "has_checker": True, "is_real_backend": False,
                    "environment": {"backend": "in-memory", "language": "python %d.%d"
                                    % sys.version_info[:2]}}
        if method == "shutdown":
            return {}
        if method == "fixture/open":
            tb = Testbed()
            h = self.new_handle()
            self.testbeds[h] = tb
            return {"testbed": h, "provider": self.register(tb, Provider(tb.cfg, tb.backend))}
        if method.startswith("provider/") or method == "checker/check":
            return self.operation(id_, method, params, cancel)
        return self.hook(method, params)

    def operation(self, id_, method, params, cancel):
        provider = self.providers.get(params.get("provider"))
        if provider is None:
            raise RpcError(2, "no provider %s" % params.get("provider"))
        ms = params.get("deadline_ms")
        deadline = None if ms is None else time.monotonic() + ms / 1000
        ctx = Ctx(deadline, cancel, (self, id_))
        if method == "checker/check":
            return provider.check(ctx)
        op = {"provider/create": ("Create", lambda: {"id": provider.create(ctx, params["request"])}),
              "provider/get": ("Get", lambda: provider.get(ctx, params["id"])),
              "provider/delete": ("Delete", lambda: provider.delete(ctx, params["id"])),
              "provider/list_by_tag": ("ListByTag",
                                       lambda: provider.list_by_tag(ctx, params["tag"]))}
        if method not in op:
            raise RpcError(-32601, "unknown method " + method)
        name, run = op[method]
        try:
            return {"ok": run()}
        except ContractError as e:
            return {"error": e.wire(provider.cfg.name)}
        except Interrupted as e:
            return {"error": provider.classify(name, "interrupted", e).wire(provider.cfg.name)}

    def hook(self, method, p):
        tb = self.testbed(p)
        loc, name = p.get("location"), p.get("name")
        table = {
            "testbed/teardown": lambda: (tb.teardown(), self.testbeds.pop(p["testbed"]), {})[2],
            "testbed/restart": lambda: self.register(tb, Provider(tb.cfg, tb.backend)),
            "testbed/request": lambda: tb.request(name, p["tag"], loc),
            "testbed/id_for": lambda: {"id": instance_id(loc, name)},
            "testbed/location_of": lambda: {"location": (parse_id(p["id"]) or (None,))[0]},
            "testbed/malformed_ids": lambda: {"ids": [
                "", "sites", "sites/site-a", "sites/site-a/instances/",
                "sites//instances/web", "sites/site-a/instances/web/disk",
                "hosts/site-a/domains/web", "sites/site-a/instances/Web",
                "sites/site-a/instances/../web"]},
            "testbed/unconfigured_id": lambda: {"id": instance_id("site-z", name)},
            "testbed/unknown_placement": lambda: {"placement": "no-such-zone"},
            "inventory/resources": lambda: {"resources": tb.resources(loc)},
            "planting/plant": lambda: tb.plant(loc, name, p["what"]) or {},
            "planting/inspect": lambda: {"fingerprint": tb.inspect(loc, name)},
            "planting/remove_part": lambda: tb.remove_part(loc, name, p["part"]) or {},
            "planting/remove": lambda: tb.remove(loc, name) or {},
            "state_control/set_power": lambda: tb.set_power(loc, name, p["power"]) or {},
            "state_control/set_addresses": lambda: tb.set_addresses(loc, name, p["addrs"]) or {},
            "state_control/fail_address_lookup":
                lambda: tb.fail_address_lookup(loc, name, p["fail"]) or {},
            "state_control/hold_boot": lambda: tb.hold_boot(p["hold"]) or {},
            "capacity/set_free": lambda: tb.set_free(loc, p.get("bytes")) or {},
            "faults/inject": lambda: {"id": tb.inject(p["spec"])},
            "faults/fired": lambda: {"fired": tb.fired(p["id"])},
            "faults/clear": lambda: tb.clear() or {},
            "faults/set_reachability": lambda: tb.set_reachability(loc, p["reachability"]) or {},
            "faults/cause": lambda: {"produced": tb.cause(loc, p["reason"])},
            "faults/undo_cause": lambda: tb.undo_cause(loc) or {},
            "rotation/rotate": lambda: tb.rotate(loc) or {},
            "rotation/break_access": lambda: {"produced": tb.break_access(loc, p["how"])},
            "rotation/restore_access": lambda: tb.restore_access(loc) or {},
            "observation/calls": lambda: {"calls": tb.calls(p.get("since", 0))},
            "observation/dials": lambda: {"dials": tb.dials(loc)},
            "observation/set_verbosity": lambda: tb.set_verbosity(p["verbosity"]) or {},
        }
        if method not in table:
            raise RpcError(-32601, "unknown method " + method)
        return table[method]()


def main():
    # Stdout is the protocol's: keep the real one, and send any stray print() to
    # stderr, where the suite copies it to provider-stderr.log.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr
    Server(out).run(sys.stdin)


if __name__ == "__main__":
    main()
