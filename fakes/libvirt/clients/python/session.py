#!/usr/bin/env python3
"""One python3-libvirt session against a libvirt daemon, as JSON lines.

Usage: session.py SOCKET PREFIX DIR

Connects to the daemon on the Unix socket SOCKET and runs the session that
fakes/libvirt/tests/clients.rs compares between fake-libvirtd and libvirtd:
host facts, a domain through its life, a pool and a volume, an upload and a
download over the stream protocol, concurrent calls on one connection, and
the connection closed under the client. Every object it makes is named after
PREFIX; the pool's directory is DIR/pool. Each step prints one line,
{"step": NAME, "value": ...} or {"step": NAME, "error": {"code": N,
"message": TEXT}}; the test masks host facts, UUIDs and paths afterwards.
The upload's bytes are compared with the download here, byte for byte.
"""

import json
import os
import socket
import sys
import threading

import libvirt

UPLOAD_LEN = 300_000
VOLUME_LEN = 1 << 20
CHUNK = 65536


def emit(step, value=None, error=None):
    line = {"step": step}
    if error is not None:
        line["error"] = error
    else:
        line["value"] = value
    print(json.dumps(line, sort_keys=True), flush=True)


def run(step, fn):
    """Runs one step; a libvirt error is its result, not the script's end."""
    try:
        value = fn()
    except libvirt.libvirtError as e:
        emit(step, error={"code": e.get_error_code(), "message": e.get_error_message()})
        return None
    emit(step, value)
    return value


def upload_data():
    return bytes((i * 7) % 251 for i in range(UPLOAD_LEN))


class Relay:
    """A Unix socket relayed to the daemon's, so the session can close its
    own connection under the library (the daemon never sees a ConnectClose)."""

    def __init__(self, path, target):
        self.path, self.target = path, target
        self.socks = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
            self.socks += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.listener.close()


def host_facts(conn):
    run("lib_version", conn.getLibVersion)
    run("hypervisor_version", conn.getVersion)
    run("hostname", conn.getHostname)
    run("capabilities", conn.getCapabilities)


def domain_life(conn, prefix, dom_name):
    def listed():
        doms = conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE | libvirt.VIR_CONNECT_LIST_DOMAINS_INACTIVE)
        return sorted(d.name() for d in doms if d.name().startswith(prefix))

    xml = (
        "<domain type='qemu'>\n  <name>%s</name>\n  <memory unit='MiB'>64</memory>\n"
        "  <vcpu>1</vcpu>\n  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n</domain>\n"
    ) % dom_name
    run("list_domains", listed)
    run("define", lambda: conn.defineXML(xml).name())
    dom = conn.lookupByName(dom_name)
    run("lookup", lambda: conn.lookupByName(dom_name).name())
    info = lambda: dom.info()[:4]  # noqa: E731 (CPU time left out)
    run("info", info)
    run("state", dom.state)
    run("xml", lambda: dom.XMLDesc(0))
    run("start", dom.create)
    run("start_again", dom.create)
    run("info_running", info)
    run("list_domains_running", listed)
    run("suspend", dom.suspend)
    run("state_paused", dom.state)
    run("resume", dom.resume)
    run("state_resumed", dom.state)
    run("destroy", dom.destroy)
    run("state_destroyed", dom.state)
    run("destroy_again", dom.destroy)
    run("suspend_inactive", dom.suspend)
    return dom


def storage(conn, prefix, pool_name, pool_dir, data):
    pool_xml = "<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>" % (pool_name, pool_dir)
    vol_xml = (
        "<volume><name>v.img</name><capacity unit='bytes'>%d</capacity>"
        "<target><format type='raw'/></target></volume>" % VOLUME_LEN
    )
    run("pool_define", lambda: conn.storagePoolDefineXML(pool_xml, 0).name())
    pool = conn.storagePoolLookupByName(pool_name)
    run("pool_build", lambda: pool.build(0))
    run("pool_start", lambda: pool.create(0))
    run("pool_list", lambda: sorted(p.name() for p in conn.listAllStoragePools(0) if p.name().startswith(prefix)))
    run("pool_state", lambda: pool.info()[0])
    run("vol_create", lambda: pool.createXML(vol_xml, 0).name())
    run("vol_create_again", lambda: pool.createXML(vol_xml, 0).name())
    run("vol_list", lambda: sorted(v.name() for v in pool.listAllVolumes(0)))
    vol = pool.storageVolLookupByName("v.img")
    run("vol_info", vol.info)
    run("vol_path", vol.path)

    def upload():
        st = conn.newStream(0)
        vol.upload(st, 0, len(data), 0)
        for at in range(0, len(data), CHUNK):
            st.send(data[at:at + CHUNK])
        st.finish()
        return len(data)

    def download():
        st = conn.newStream(0)
        vol.download(st, 0, 0, 0)
        got = bytearray()
        while True:
            chunk = st.recv(262144)
            if not chunk:
                break
            got += chunk
        st.finish()
        want = data + bytes(VOLUME_LEN - len(data))
        return {"bytes": len(got), "identical": bytes(got) == want}

    run("upload", upload)
    run("download", download)
    run("vol_info_uploaded", vol.info)
    run("vol_delete", lambda: vol.delete(0))
    run("vol_lookup_deleted", lambda: pool.storageVolLookupByName("v.img").name())
    return pool


def concurrent(conn, dom_name, n=8):
    """n calls at once on the one connection (libvirtd works on 5 at a time)."""
    results = [None] * n

    def call(i):
        try:
            if i % 2:
                results[i] = conn.lookupByName(dom_name).name() == dom_name
            else:
                results[i] = conn.getLibVersion() > 0
        except libvirt.libvirtError as e:
            results[i] = "error %d" % e.get_error_code()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def closed_under(target, relay_path, dom_name):
    relay = Relay(relay_path, target)
    conn = libvirt.open("qemu+unix:///system?socket=" + relay_path)
    run("before_cut_hostname_known", lambda: bool(conn.getHostname()))
    relay.cut()

    def after_cut():
        conn.lookupByName(dom_name)
        return "answered"

    try:
        value = after_cut()
    except libvirt.libvirtError:
        value = "failed"
    emit("call_after_close", value)
    try:
        conn.close()
    except libvirt.libvirtError:
        pass


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: session.py SOCKET PREFIX DIR")
    target, prefix, workdir = sys.argv[1:]
    dom_name, pool_name = prefix + "-dom", prefix + "-pool"
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)
    data = upload_data()
    conn = libvirt.open("qemu+unix:///system?socket=" + target)
    emit("connect", "ok")
    host_facts(conn)
    dom = domain_life(conn, prefix, dom_name)
    pool = storage(conn, prefix, pool_name, os.path.join(workdir, "pool"), data)
    run("concurrent", lambda: concurrent(conn, dom_name))
    run("undefine", lambda: dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_NVRAM))
    run("lookup_undefined", lambda: conn.lookupByName(dom_name).name())
    run("pool_destroy", pool.destroy)
    run("pool_undefine", pool.undefine)
    run("pool_lookup_undefined", lambda: conn.storagePoolLookupByName(pool_name).name())
    conn.close()
    closed_under(target, os.path.join(workdir, "relay.sock"), dom_name)
    # The daemon still answers a new connection after one was cut.
    again = libvirt.open("qemu+unix:///system?socket=" + target)
    run("reconnect_lib_version_known", lambda: again.getLibVersion() > 0)
    again.close()


if __name__ == "__main__":
    main()
