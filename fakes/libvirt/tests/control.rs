//! The control API: every request over the control socket against a fake
//! served in process (its effect read back through the in-process handle),
//! bad requests refused with a reason and no change, and the `ctl` command
//! end to end with virsh against the daemon. Also the README's generated
//! table of the procedures the daemon serves (`UPDATE_DOCS=1` rewrites it).

mod support;

use std::path::Path;
use std::time::Duration;

use libvirt_fake::control::Control;
use libvirt_fake::control::{
    Code, ControlClient, ControlServer, DialModeSpec, ErrorSpec, FaultSpec, InterfaceSpec, Request,
    Response, RuleSpec, SourceSpec, TriggerSpec, answer,
};
use libvirt_fake::{AddressSource, CallError, DialMode, FakeLibvirt, StateFile};
use libvirt_wire::{DomainState, ErrorCode, Procedure};
use support::{Daemon, virsh, virsh_installed};

const XML: &str = "<domain type='kvm'><name>web</name><memory>65536</memory></domain>";

/// A guest that boots (its disk holds an image, see `boot_image`) and has
/// a guest agent.
const BOOT_XML: &str = "<domain type='kvm'><name>web</name><memory>65536</memory><devices>\
    <disk type='file' device='disk'><source file='/var/lib/libvirt/images/web.qcow2'/>\
    <target dev='vda' bus='virtio'/></disk>\
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>\
    </devices></domain>";

/// A fake with one pool, its control socket, and a runtime to make calls on.
struct Bed {
    rt: tokio::runtime::Runtime,
    fake: FakeLibvirt,
    client: ControlClient,
    _server: ControlServer,
    _dir: tempfile::TempDir,
}

impl Bed {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let fake = FakeLibvirt::new();
        fake.add_pool("default", "/var/lib/libvirt/images", 10 << 30);
        let path = dir.path().join("control.sock");
        let server = {
            let _g = rt.enter();
            ControlServer::bind(&path, std::sync::Arc::new(Control::new(fake.clone()))).unwrap()
        };
        let client = ControlClient::connect(&path).unwrap();
        Bed {
            rt,
            fake,
            client,
            _server: server,
            _dir: dir,
        }
    }

    fn ok(&mut self, req: Request) -> Response {
        self.client
            .call(&req)
            .unwrap_or_else(|e| panic!("{req:?} refused: {e}"))
    }

    fn refused(&mut self, req: Request) -> String {
        match self.client.call(&req) {
            Ok(r) => panic!("{req:?} was carried out: {r:?}"),
            Err(e) => e,
        }
    }

    /// An open connection, as a client dials one.
    fn conn(&self) -> libvirt_fake::FakeConnection {
        let c = self.fake.connect().unwrap();
        self.rt.block_on(c.open(Some("qemu:///system"), 0)).unwrap();
        c
    }
}

fn error(code: i32) -> FaultSpec {
    FaultSpec::Error {
        error: ErrorSpec {
            code: Code::Number(code),
            domain: None,
            message: Some("chosen".into()),
        },
    }
}

fn rule(trigger: TriggerSpec, fault: FaultSpec, once: bool) -> Request {
    Request::FaultAdd {
        rule: RuleSpec {
            trigger,
            fault,
            once,
            object: None,
            connection: None,
        },
    }
}

fn fault_id(r: Response) -> u64 {
    match r {
        Response::Fault { id } => id,
        r => panic!("not a fault id: {r:?}"),
    }
}

fn fired(bed: &mut Bed, id: u64) -> u64 {
    match bed.ok(Request::FaultFired { id }) {
        Response::Fired { count, fired } => {
            assert_eq!(fired, count > 0);
            count
        }
        r => panic!("{r:?}"),
    }
}

fn code_of<T: std::fmt::Debug>(r: Result<T, CallError>) -> Option<ErrorCode> {
    r.unwrap_err().code()
}

#[test]
fn faults_added_fired_removed_and_cleared_from_outside() {
    let mut bed = Bed::new();
    assert!(matches!(bed.ok(Request::Ping {}), Response::Pong { .. }));
    let dom = bed.fake.define_domain(XML).unwrap();
    let c = bed.conn();

    // By procedure, once, with the code chosen by name.
    let once = fault_id(bed.ok(rule(
        TriggerSpec::Procedure {
            name: "DomainCreate".into(),
        },
        FaultSpec::Error {
            error: ErrorSpec {
                code: Code::Name("VIR_ERR_OPERATION_INVALID".into()),
                domain: Some(Code::Name("qemu".into())),
                message: None,
            },
        },
        true,
    )));
    assert_eq!(fired(&mut bed, once), 0);
    let err = bed.rt.block_on(c.domain_create(&dom)).unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::OperationInvalid), "{err}");
    assert!(err.to_string().contains("injected fault"), "{err}");
    bed.rt.block_on(c.domain_create(&dom)).unwrap();
    assert_eq!(fired(&mut bed, once), 1);

    // The n-th call of a procedure, then removed before it fires.
    let nth = fault_id(bed.ok(rule(
        TriggerSpec::NthCallOf {
            name: "domainlookupbyname".into(),
            n: 2,
        },
        error(42),
        false,
    )));
    bed.rt.block_on(c.domain_lookup_by_name("web")).unwrap();
    bed.ok(Request::FaultRemove { id: nth });
    bed.rt.block_on(c.domain_lookup_by_name("web")).unwrap();
    assert_eq!(fired(&mut bed, nth), 0);

    // The n-th call of any procedure; then every call.
    let any = fault_id(bed.ok(rule(TriggerSpec::NthCall { n: 1 }, error(1), false)));
    assert_eq!(
        code_of(bed.rt.block_on(c.domain_lookup_by_name("web"))),
        Some(ErrorCode::InternalError)
    );
    assert_eq!(fired(&mut bed, any), 1);
    let always = fault_id(bed.ok(rule(TriggerSpec::Always, error(38), false)));
    assert!(bed.rt.block_on(c.get_hostname()).is_err());
    assert!(bed.rt.block_on(c.get_hostname()).is_err());
    assert_eq!(fired(&mut bed, always), 2);

    // The script and the seeded random rule.
    bed.ok(Request::FaultClear { release_hung: true });
    let pushed = fault_id(bed.ok(Request::FaultPush {
        fault: Some(error(9)),
    }));
    let passed = fault_id(bed.ok(Request::FaultPush { fault: None }));
    assert!(bed.rt.block_on(c.get_hostname()).is_err());
    bed.rt.block_on(c.get_hostname()).unwrap();
    assert_eq!((fired(&mut bed, pushed), fired(&mut bed, passed)), (1, 0));
    let random = fault_id(bed.ok(Request::FaultRandom {
        seed: 7,
        probability: 1.0,
        faults: vec![FaultSpec::Delay { millis: 1 }],
        procedures: Some(vec!["ConnectGetHostname".into()]),
    }));
    bed.rt.block_on(c.get_hostname()).unwrap();
    assert_eq!(fired(&mut bed, random), 1);
    let stream = fault_id(bed.ok(Request::FaultStreamError {
        after_bytes: 10,
        error: ErrorSpec {
            code: Code::Number(38),
            domain: None,
            message: None,
        },
    }));
    assert_eq!(fired(&mut bed, stream), 0);

    // A hung call is released by clear, which closes its connection.
    bed.ok(rule(
        TriggerSpec::Procedure {
            name: "ConnectGetHostname".into(),
        },
        FaultSpec::Hang,
        false,
    ));
    let hung = bed.conn();
    let call = {
        let hung = hung.clone();
        bed.rt.spawn(async move { hung.get_hostname().await })
    };
    let t = std::time::Instant::now();
    while !bed
        .fake
        .trace()
        .calls()
        .iter()
        .any(|c| c.fault.as_deref() == Some("hang"))
    {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the call never arrived"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(20));
    assert!(!call.is_finished());
    match bed.ok(Request::FaultClear { release_hung: true }) {
        Response::Closed { connections } => assert_eq!(connections, vec![hung.id()]),
        r => panic!("{r:?}"),
    }
    let result = bed.rt.block_on(call).unwrap();
    assert!(matches!(result, Err(CallError::Closed)), "{result:?}");
    bed.rt.block_on(c.get_hostname()).unwrap();

    // Delay, drop and lost reply.
    for (fault, closes) in [
        (FaultSpec::Delay { millis: 30 }, false),
        (FaultSpec::DropConnection, true),
        (FaultSpec::LoseReply, true),
    ] {
        let conn = bed.conn();
        bed.ok(rule(
            TriggerSpec::Procedure {
                name: "ConnectGetHostname".into(),
            },
            fault.clone(),
            true,
        ));
        let t = std::time::Instant::now();
        let r = bed.rt.block_on(conn.get_hostname());
        assert_eq!(r.is_err(), closes, "{fault:?}: {r:?}");
        assert_eq!(conn.is_closed(), closes, "{fault:?}");
        if !closes {
            assert!(t.elapsed() >= Duration::from_millis(30));
        }
    }

    // Object and connection limits.
    let other = bed.conn();
    bed.ok(Request::FaultAdd {
        rule: RuleSpec {
            trigger: TriggerSpec::Always,
            fault: error(1),
            once: false,
            object: Some("web".into()),
            connection: Some(other.id()),
        },
    });
    bed.rt.block_on(c.domain_lookup_by_name("web")).unwrap();
    assert!(bed.rt.block_on(other.get_hostname()).is_ok());
    assert!(bed.rt.block_on(other.domain_lookup_by_name("web")).is_err());
}

#[test]
fn the_trace_is_read_from_a_mark() {
    let mut bed = Bed::new();
    let c = bed.conn();
    let mark = match bed.ok(Request::Mark {}) {
        Response::Mark { mark } => mark,
        r => panic!("{r:?}"),
    };
    bed.ok(rule(
        TriggerSpec::Procedure {
            name: "ConnectGetHostname".into(),
        },
        error(55),
        true,
    ));
    let _ = bed.rt.block_on(c.get_hostname());
    bed.rt.block_on(c.get_hostname()).unwrap();
    let (calls, next) = match bed.ok(Request::Trace { since: mark }) {
        Response::Trace {
            calls,
            next,
            forgotten,
        } => {
            assert_eq!(forgotten, 0);
            (calls, next)
        }
        r => panic!("{r:?}"),
    };
    let seen: Vec<(&str, Option<&str>)> = calls
        .iter()
        .map(|c| (c.procedure.as_str(), c.fault.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "ConnectGetHostname",
                Some("error(VIR_ERR_OPERATION_INVALID)")
            ),
            ("ConnectGetHostname", None)
        ]
    );
    assert!(calls.iter().all(|x| x.connection == c.id()));
    assert_eq!(calls[0].number, Procedure::ConnectGetHostname.to_raw());
    assert_eq!(next, mark + 2);
    match bed.ok(Request::Trace { since: next }) {
        Response::Trace { calls, .. } => assert!(calls.is_empty()),
        r => panic!("{r:?}"),
    }

    // A trace with a limit forgets the oldest calls and says so.
    bed.fake.trace().set_limit(Some(1));
    bed.rt.block_on(c.get_hostname()).unwrap();
    match bed.ok(Request::Trace { since: mark }) {
        Response::Trace {
            calls, forgotten, ..
        } => {
            assert_eq!((calls.len(), forgotten), (1, 2));
            assert_eq!(calls[0].seq, mark + 2);
        }
        r => panic!("{r:?}"),
    }

    // Connections, and closing them.
    match bed.ok(Request::Connections {}) {
        Response::Connections { connections } => {
            let me = connections.iter().find(|x| x.id == c.id()).unwrap();
            assert!(!me.closed);
            assert_eq!(me.calls, 4);
        }
        r => panic!("{r:?}"),
    }
    match bed.ok(Request::CloseConnections {
        ids: Some(vec![c.id()]),
    }) {
        Response::Closed { connections } => assert_eq!(connections, vec![c.id()]),
        r => panic!("{r:?}"),
    }
    assert!(c.is_closed());
    let d = bed.conn();
    bed.ok(Request::CloseConnections { ids: None });
    assert!(d.is_closed());
}

#[test]
fn the_daemon_restarted_wedged_and_refusing_dials() {
    let mut bed = Bed::new();
    for (mode, want) in [
        (DialModeSpec::Refuse, DialMode::Refuse),
        (DialModeSpec::BlackHole, DialMode::BlackHole),
        (DialModeSpec::Accept, DialMode::Accept),
    ] {
        bed.ok(Request::SetDialMode { mode });
        assert_eq!(bed.fake.dial_mode(), want);
    }
    let c = bed.conn();
    bed.ok(Request::Wedge {});
    assert!(bed.fake.is_wedged() && c.daemon_lost());
    bed.ok(Request::Restart {
        keep_connections: true,
    });
    assert!(!bed.fake.is_wedged() && c.daemon_lost() && !c.is_closed());
    match bed.ok(Request::Restart {
        keep_connections: false,
    }) {
        Response::Closed { connections } => assert_eq!(connections, vec![c.id()]),
        r => panic!("{r:?}"),
    }
    assert!(c.is_closed());
    let fresh = bed.conn();
    bed.rt.block_on(fresh.get_hostname()).unwrap();
    bed.ok(Request::SetLatency { millis: 20 });
    assert_eq!(bed.fake.host_config().latency, Duration::from_millis(20));
    bed.ok(Request::SetAgentBootDelay { millis: 5 });
    assert_eq!(
        bed.fake.host_config().agent_boot_delay,
        Duration::from_millis(5)
    );
}

#[test]
fn domains_planted_steered_and_removed() {
    let mut bed = Bed::new();
    let c = bed.conn();
    bed.rt.block_on(async {
        let pool = c.storage_pool_lookup_by_name("default").await.unwrap();
        let xml = "<volume><name>web.qcow2</name><capacity>1048576</capacity>\
                   <target><format type='qcow2'/></target></volume>";
        let vol = c.storage_vol_create_xml(&pool, xml, 0).await.unwrap();
        let mut up = c.storage_vol_upload(&vol, 0, 0, 0).await.unwrap();
        up.send(b"QFI\xfb an image").unwrap();
        up.finish().unwrap();
    });
    match bed.ok(Request::DefineDomain {
        xml: BOOT_XML.into(),
        running: true,
    }) {
        Response::Domain { name, uuid } => {
            assert_eq!(name, "web");
            assert_eq!(uuid.len(), 36);
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(bed.fake.domain("web").unwrap().state, DomainState::Running);
    bed.ok(Request::SetDomainState {
        name: "web".into(),
        state: "paused".into(),
        reason: None,
    });
    assert_eq!(bed.fake.domain("web").unwrap().state, DomainState::Paused);
    bed.ok(Request::SetDomainState {
        name: "web".into(),
        state: "VIR_DOMAIN_SHUTOFF".into(),
        reason: Some(2),
    });
    let d = bed.fake.domain("web").unwrap();
    assert_eq!((d.state, d.reason), (DomainState::Shutoff, 2));
    bed.ok(Request::SetDomainState {
        name: "web".into(),
        state: "running".into(),
        reason: None,
    });

    // Addresses, from the agent and by hand; the agent and ARP switches.
    let dom = bed.fake.domain("web").unwrap().handle;
    let agent = libvirt_wire::DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT;
    bed.ok(Request::SetIpv4 {
        name: "web".into(),
        addr: "192.0.2.7".into(),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addrs = |c: &libvirt_fake::FakeConnection, src| {
        rt.block_on(c.domain_interface_addresses(&dom, src, 0))
            .map(|ifs| {
                ifs.into_iter()
                    .flat_map(|i| i.addrs.into_iter().map(|a| a.addr))
                    .collect::<Vec<_>>()
            })
    };
    assert!(addrs(&c, agent).unwrap().contains(&"192.0.2.7".to_owned()));
    bed.ok(Request::SetAddresses {
        name: "web".into(),
        source: SourceSpec::Agent,
        interfaces: vec![InterfaceSpec {
            name: "eth0".into(),
            hwaddr: Some("52:54:00:00:00:09".into()),
            addrs: vec!["198.51.100.1/25".into(), "2001:db8::1".into()],
        }],
    });
    assert_eq!(
        addrs(&c, agent).unwrap(),
        ["198.51.100.1".to_owned(), "2001:db8::1".to_owned()]
    );
    bed.ok(Request::ClearAddresses {
        name: "web".into(),
        source: SourceSpec::Agent,
    });
    assert!(
        !addrs(&c, agent)
            .unwrap()
            .contains(&"198.51.100.1".to_owned())
    );
    bed.ok(Request::SetAgentUnresponsive {
        name: "web".into(),
        unresponsive: true,
    });
    assert!(addrs(&c, agent).is_err());
    bed.ok(Request::SetAgentUnresponsive {
        name: "web".into(),
        unresponsive: false,
    });
    bed.ok(Request::SetArpFailure { fail: true });
    let arp = libvirt_wire::DOMAIN_INTERFACE_ADDRESSES_SRC_ARP;
    assert!(addrs(&c, arp).is_err());
    bed.ok(Request::SetArpFailure { fail: false });
    assert!(addrs(&c, arp).is_ok());

    // Held boots report no address until released.
    bed.ok(Request::HoldBoot {
        name: Some("web".into()),
        hold: true,
    });
    assert!(addrs(&c, agent).is_err());
    bed.ok(Request::HoldBoot {
        name: Some("web".into()),
        hold: false,
    });
    bed.ok(Request::HoldBoot {
        name: None,
        hold: true,
    });
    assert!(addrs(&c, agent).is_err());
    bed.ok(Request::HoldBoot {
        name: None,
        hold: false,
    });
    assert!(addrs(&c, agent).is_ok());

    match bed.ok(Request::DomainXml { name: "web".into() }) {
        Response::Xml { config, live } => {
            assert!(config.contains("<name>web</name>") && !config.contains(" id="));
            assert!(live.unwrap().contains("<domain type='kvm' id="));
        }
        r => panic!("{r:?}"),
    }
    bed.ok(Request::RemoveDomain { name: "web".into() });
    assert!(bed.fake.domain("web").is_none());
    let e = bed.refused(Request::DomainXml { name: "web".into() });
    assert!(e.contains("'web'"), "{e}");
    let _ = AddressSource::Agent;
}

#[test]
fn pools_and_volumes_planted_sized_and_dumped() {
    let mut bed = Bed::new();
    bed.ok(Request::AddPool {
        name: "extra".into(),
        path: "/srv/extra".into(),
        capacity: 1 << 30,
    });
    bed.ok(Request::CreateVolume {
        pool: "default".into(),
        name: "base.qcow2".into(),
        capacity: 1 << 20,
        format: Some("qcow2".into()),
    });
    bed.ok(Request::CreateVolume {
        pool: "extra".into(),
        name: "gone".into(),
        capacity: 4096,
        format: None,
    });
    bed.ok(Request::RemoveVolume {
        pool: "extra".into(),
        name: "gone".into(),
    });
    assert!(bed.fake.volume("extra", "gone").is_none());
    bed.ok(Request::SetPoolCapacity {
        pool: "default".into(),
        capacity: 5 << 30,
    });
    assert_eq!(bed.fake.pool_info("default").unwrap().capacity, 5 << 30);
    bed.ok(Request::SetPoolAvailable {
        pool: "default".into(),
        available: 1 << 30,
    });
    assert_eq!(bed.fake.pool_info("default").unwrap().available, 1 << 30);
    bed.ok(Request::SetPoolActive {
        pool: "extra".into(),
        active: false,
    });
    match bed.ok(Request::Inventory {}) {
        Response::Inventory(inv) => {
            let names: Vec<(&str, bool)> = inv
                .pools
                .iter()
                .map(|p| (p.name.as_str(), p.active))
                .collect();
            assert_eq!(names, [("default", true), ("extra", false)]);
            let v = &inv.pools[0].volumes[0];
            assert_eq!(
                (v.name.as_str(), v.capacity, v.format.as_deref()),
                ("base.qcow2", 1 << 20, Some("qcow2"))
            );
        }
        r => panic!("{r:?}"),
    }
    bed.ok(Request::SetPoolActive {
        pool: "extra".into(),
        active: true,
    });
    bed.ok(Request::DefineDomain {
        xml: XML.into(),
        running: true,
    });

    // The dump loads into a new host with the same objects.
    let state = match bed.ok(Request::Dump {}) {
        Response::State { state } => state,
        r => panic!("{r:?}"),
    };
    let text = serde_json::to_string(&state).unwrap();
    let loaded = StateFile::parse(&text, Path::new(".")).unwrap();
    let copy = FakeLibvirt::new();
    bed.rt.block_on(loaded.apply(&copy)).unwrap();
    assert_eq!(copy.pools(), ["default", "extra"]);
    assert_eq!(
        copy.volume("default", "base.qcow2").unwrap().capacity,
        1 << 20
    );
    assert_eq!(copy.domain("web").unwrap().state, DomainState::Running);

    bed.ok(Request::RemovePool {
        name: "extra".into(),
    });
    assert_eq!(bed.fake.pools(), ["default"]);
}

/// Each bad request is refused with a reason naming what was wrong, and the
/// host, its faults and its trace are as they were.
#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let mut bed = Bed::new();
    bed.fake.define_domain(XML).unwrap();
    let before = |bed: &mut Bed| {
        let state = bed.ok(Request::Dump {});
        let inv = bed.ok(Request::Inventory {});
        (state, inv, bed.fake.trace().next_seq())
    };
    let was = before(&mut bed);
    let lines = [
        ("not json", "bad request"),
        ("{\"cmd\":\"fly\"}", "unknown variant `fly`"),
        ("{\"cmd\":\"mark\",\"extra\":1}", "unknown field `extra`"),
        ("{\"cmd\":\"fault_fired\"}", "missing field `id`"),
        (
            "{\"cmd\":\"fault_add\",\"rule\":{\"trigger\":{\"type\":\"procedure\",\"name\":\"DomainFly\"},\"fault\":{\"type\":\"hang\"}}}",
            "unknown procedure \"DomainFly\"",
        ),
        (
            "{\"cmd\":\"fault_add\",\"rule\":{\"trigger\":{\"type\":\"nth_call\",\"n\":0},\"fault\":{\"type\":\"hang\"}}}",
            "1-based",
        ),
        (
            "{\"cmd\":\"fault_add\",\"rule\":{\"trigger\":{\"type\":\"always\"},\"fault\":{\"type\":\"error\",\"code\":\"VIR_ERR_NOPE\"}}}",
            "unknown error code \"VIR_ERR_NOPE\"",
        ),
        (
            "{\"cmd\":\"fault_random\",\"seed\":1,\"probability\":2.0,\"faults\":[]}",
            "probability 2",
        ),
        ("{\"cmd\":\"fault_fired\",\"id\":99}", "no fault with id 99"),
        (
            "{\"cmd\":\"set_domain_state\",\"name\":\"web\",\"state\":\"dancing\"}",
            "unknown domain state \"dancing\"",
        ),
        (
            "{\"cmd\":\"set_domain_state\",\"name\":\"nope\",\"state\":\"running\"}",
            "'nope'",
        ),
        (
            "{\"cmd\":\"set_ipv4\",\"name\":\"web\",\"addr\":\"300.1.1.1\"}",
            "address \"300.1.1.1\"",
        ),
        (
            "{\"cmd\":\"set_pool_capacity\",\"pool\":\"nope\",\"capacity\":1}",
            "'nope'",
        ),
        (
            "{\"cmd\":\"create_volume\",\"pool\":\"default\",\"name\":\"v\",\"capacity\":1,\"format\":\"vmdk\"}",
            "only raw and qcow2",
        ),
        (
            "{\"cmd\":\"create_volume\",\"pool\":\"default\",\"name\":\"v\",\"capacity\":99999999999999}",
            "VIR_ERR",
        ),
        (
            "{\"cmd\":\"define_domain\",\"xml\":\"<domain>\"}",
            "VIR_ERR_XML_DETAIL",
        ),
        (
            "{\"cmd\":\"remove_domain\",\"name\":\"nope\"}",
            "no domain named \"nope\"",
        ),
        (
            "{\"cmd\":\"remove_volume\",\"pool\":\"default\",\"name\":\"nope\"}",
            "no volume named \"nope\"",
        ),
    ];
    for (line, why) in lines {
        let reply = bed.client.raw(line).unwrap();
        let reply: libvirt_fake::control::Reply = serde_json::from_str(&reply).unwrap();
        assert!(!reply.ok, "{line} was carried out");
        let error = reply.error.unwrap();
        assert!(
            error.contains(why),
            "{line}: {error:?} does not say {why:?}"
        );
    }
    assert_eq!(before(&mut bed), was, "a refused request changed the host");

    // The same through the typed client; the control socket stays usable.
    let e = bed.refused(Request::SetDomainState {
        name: "web".into(),
        state: "zombie".into(),
        reason: None,
    });
    assert!(e.contains("zombie"), "{e}");
    assert!(matches!(bed.ok(Request::Ping {}), Response::Pong { .. }));

    // A line past the limit is refused and ends the connection.
    let control = Control::new(FakeLibvirt::new());
    let reply = answer(&control, "{\"cmd\":\"ping\"");
    assert!(!reply.ok && reply.error.unwrap().contains("EOF"));
    let long = format!(
        "{{\"cmd\":\"define_domain\",\"xml\":\"{}\"}}",
        "x".repeat(libvirt_fake::control::MAX_LINE)
    );
    let e = bed.client.raw(&long).unwrap();
    assert!(e.contains("longer than"), "{e}");
}

/// The acceptance scenario: a fault added with `ctl` makes `virsh start`
/// fail once with the chosen code, the next start succeeds, and `ctl trace`
/// shows both calls; a dump starts a second daemon with the same host.
#[test]
fn virsh_start_fails_once_with_a_fault_added_by_ctl() {
    if !virsh_installed("virsh_start_fails_once_with_a_fault_added_by_ctl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let state = format!(
        "{{\"domains\":[{{\"xml\":\"{}\"}}]}}",
        XML.replace('\'', "\\u0027")
    );
    let daemon = Daemon::start_with_state(dir.path(), &state);
    let uri = daemon.unix_uri();
    let out = daemon.ctl(&["mark"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let mark = out.stdout.trim().to_owned();
    let out = daemon.ctl(&[
        "fault",
        "add",
        "--procedure",
        "DomainCreate",
        "--error",
        "VIR_ERR_OPERATION_INVALID",
        "--message",
        "held by the test",
        "--once",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let id = out.stdout.trim().to_owned();

    let first = virsh(&uri, &["start".into(), "web".into()]);
    assert_eq!(first.code, Some(1), "{first:?}");
    // virsh prints the message of code 55 (VIR_ERR_OPERATION_INVALID).
    assert!(
        first
            .stderr
            .contains("Requested operation is not valid: held by the test"),
        "{first:?}"
    );
    let second = virsh(&uri, &["start".into(), "web".into()]);
    assert_eq!(second.code, Some(0), "{second:?}");
    assert!(second.stdout.contains("Domain 'web' started"), "{second:?}");

    let fired = daemon.ctl(&["fault", "fired", &id]);
    assert!(fired.stdout.contains("\"count\": 1"), "{fired:?}");
    let trace = daemon.ctl(&["trace", "--since", &mark]);
    assert_eq!(trace.code, Some(0), "{trace:?}");
    let creates: Vec<&str> = trace
        .stdout
        .lines()
        .filter(|l| l.contains(" DomainCreate"))
        .collect();
    assert_eq!(creates.len(), 2, "{}", trace.stdout);
    assert!(
        creates[0].ends_with("fault=error(VIR_ERR_OPERATION_INVALID)"),
        "{}",
        trace.stdout
    );
    assert!(!creates[1].contains("fault="), "{}", trace.stdout);

    // A dump is a state file: a second daemon started from it lists the
    // domain running.
    let dump = daemon.ctl(&["dump"]);
    assert_eq!(dump.code, Some(0), "{dump:?}");
    let dir2 = tempfile::tempdir().unwrap();
    let copy = Daemon::start_with_state(dir2.path(), &dump.stdout);
    let list = virsh(&copy.unix_uri(), &["list".into(), "--name".into()]);
    assert_eq!(list.stdout.trim(), "web", "{list:?}");

    // A bad command is refused by the daemon with its reason.
    let bad = daemon.ctl(&["set-state", "web", "dancing"]);
    assert_eq!(bad.code, Some(1));
    assert!(bad.stderr.contains("unknown domain state"), "{bad:?}");
}

/// The README's table of procedures, from the table the daemon dispatches.
fn procedures_table() -> String {
    let mut out = String::from(
        "| number | API name (`vir…`) | `REMOTE_PROC_…` | notes |\n|---:|---|---|---|\n",
    );
    let mut all: Vec<Procedure> = Procedure::ALL.to_vec();
    all.sort_by_key(|p| p.to_raw());
    for p in all {
        let mut notes = Vec::new();
        if !p.needs_open() {
            notes.push("answered before `ConnectOpen`");
        }
        if p.uses_storage_driver() {
            notes.push("storage driver");
        }
        if p.is_upload_stream() {
            notes.push("upload stream");
        }
        if p.is_download_stream() {
            notes.push("download stream");
        }
        out.push_str(&format!(
            "| {} | `{}` | `{}` | {} |\n",
            p.to_raw(),
            p.api_name(),
            p.remote_name().unwrap_or("?"),
            notes.join(", ")
        ));
    }
    out
}

#[test]
fn readme_table_of_procedures_is_current() {
    const START: &str = "<!-- procedures: generated, do not edit -->\n";
    const END: &str = "<!-- end of procedures -->";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let have = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = have
        .split_once(START)
        .expect("the README has the start marker");
    let (_, tail) = rest.split_once(END).expect("the README has the end marker");
    let want = format!("{head}{START}{}{END}{tail}", procedures_table());
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    assert!(
        have == want,
        "fakes/libvirt/README.md's table of procedures is stale; run \
         `UPDATE_DOCS=1 cargo test -p libvirt-fake --test control`"
    );
}

/// Each `ctl` command line sends the request it names.
#[test]
fn ctl_command_lines_become_their_requests() {
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ctl: libvirt_fake::control::CtlArgs,
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("web.xml");
    std::fs::write(&xml, XML).unwrap();
    let define = format!("define {} --running", xml.display());
    let error_rule = |code: Code, once, object: Option<&str>| Request::FaultAdd {
        rule: RuleSpec {
            trigger: TriggerSpec::Procedure {
                name: "DomainCreate".into(),
            },
            fault: FaultSpec::Error {
                error: ErrorSpec {
                    code,
                    domain: Some(Code::Name("qemu".into())),
                    message: Some("m".into()),
                },
            },
            once,
            object: object.map(str::to_owned),
            connection: None,
        },
    };
    let simple = |trigger, fault| Request::FaultAdd {
        rule: RuleSpec {
            trigger,
            fault,
            once: false,
            object: None,
            connection: Some(3),
        },
    };
    let cases: Vec<(&str, Request)> = vec![
        ("ping", Request::Ping {}),
        (
            "fault add --procedure DomainCreate --error 55 --domain qemu --message m --once",
            error_rule(Code::Number(55), true, None),
        ),
        (
            "fault add --procedure DomainCreate --error VIR_ERR_NO_DOMAIN --domain qemu --message m --object web",
            error_rule(Code::Name("VIR_ERR_NO_DOMAIN".into()), false, Some("web")),
        ),
        (
            "fault add --nth 2 --delay-ms 40 --connection 3",
            simple(
                TriggerSpec::NthCall { n: 2 },
                FaultSpec::Delay { millis: 40 },
            ),
        ),
        (
            "fault add --procedure DomainLookupByName --nth 2 --hang --connection 3",
            simple(
                TriggerSpec::NthCallOf {
                    name: "DomainLookupByName".into(),
                    n: 2,
                },
                FaultSpec::Hang,
            ),
        ),
        (
            "fault add --always --drop --connection 3",
            simple(TriggerSpec::Always, FaultSpec::DropConnection),
        ),
        (
            "fault add --always --lose-reply --connection 3",
            simple(TriggerSpec::Always, FaultSpec::LoseReply),
        ),
        ("fault fired 4", Request::FaultFired { id: 4 }),
        ("fault remove 4", Request::FaultRemove { id: 4 }),
        ("fault clear", Request::FaultClear { release_hung: true }),
        (
            "fault clear --keep-hung",
            Request::FaultClear {
                release_hung: false,
            },
        ),
        ("trace --since 7", Request::Trace { since: 7 }),
        ("trace", Request::Trace { since: 0 }),
        ("mark", Request::Mark {}),
        ("connections", Request::Connections {}),
        (
            "close-connections 1 2",
            Request::CloseConnections {
                ids: Some(vec![1, 2]),
            },
        ),
        ("close-connections", Request::CloseConnections { ids: None }),
        (
            "dial-mode black-hole",
            Request::SetDialMode {
                mode: DialModeSpec::BlackHole,
            },
        ),
        (
            "dial-mode refuse",
            Request::SetDialMode {
                mode: DialModeSpec::Refuse,
            },
        ),
        (
            "dial-mode accept",
            Request::SetDialMode {
                mode: DialModeSpec::Accept,
            },
        ),
        (
            "restart",
            Request::Restart {
                keep_connections: false,
            },
        ),
        (
            "restart --keep-connections",
            Request::Restart {
                keep_connections: true,
            },
        ),
        ("wedge", Request::Wedge {}),
        (
            "hold-boot web",
            Request::HoldBoot {
                name: Some("web".into()),
                hold: true,
            },
        ),
        (
            "release-boot",
            Request::HoldBoot {
                name: None,
                hold: false,
            },
        ),
        (
            "set-ipv4 web 192.0.2.1",
            Request::SetIpv4 {
                name: "web".into(),
                addr: "192.0.2.1".into(),
            },
        ),
        (
            "set-state web paused --reason 2",
            Request::SetDomainState {
                name: "web".into(),
                state: "paused".into(),
                reason: Some(2),
            },
        ),
        (
            "pool-capacity default 1024",
            Request::SetPoolCapacity {
                pool: "default".into(),
                capacity: 1024,
            },
        ),
        (
            "pool-available default 512",
            Request::SetPoolAvailable {
                pool: "default".into(),
                available: 512,
            },
        ),
        (
            define.as_str(),
            Request::DefineDomain {
                xml: XML.into(),
                running: true,
            },
        ),
        (
            "remove-domain web",
            Request::RemoveDomain { name: "web".into() },
        ),
        (
            "vol-create default v 4096 --format qcow2",
            Request::CreateVolume {
                pool: "default".into(),
                name: "v".into(),
                capacity: 4096,
                format: Some("qcow2".into()),
            },
        ),
        (
            "vol-remove default v",
            Request::RemoveVolume {
                pool: "default".into(),
                name: "v".into(),
            },
        ),
        ("inventory", Request::Inventory {}),
        ("dump", Request::Dump {}),
        ("dump-xml web", Request::DomainXml { name: "web".into() }),
        (
            r#"raw {"cmd":"set_arp_failure","fail":true}"#,
            Request::SetArpFailure { fail: true },
        ),
    ];
    for (line, want) in cases {
        let mut argv = vec!["ctl", "--control", "/nowhere"];
        match line.strip_prefix("raw ") {
            Some(json) => argv.extend(["raw", json]),
            None => argv.extend(line.split(' ')),
        }
        let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(cli.ctl.command.request().unwrap(), want, "{line}");
    }
    for (line, why) in [
        ("fault add --procedure DomainCreate", "--error"),
        ("fault add --error 55", "--procedure"),
        ("fault add --always --nth 2 --hang", "cannot be used with"),
        ("fault add --always --hang --drop", "cannot be used with"),
        ("dial-mode sideways", "invalid value"),
    ] {
        let mut argv = vec!["ctl", "--control", "/nowhere"];
        argv.extend(line.split(' '));
        let e = Cli::try_parse_from(&argv).err().map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains(why)),
            "{line}: {e:?} does not say {why:?}"
        );
    }
}

/// A domain that is defined but cannot start is taken out again: the
/// refused request leaves nothing behind.
#[test]
fn a_planted_domain_that_cannot_start_is_not_left_defined() {
    let mut bed = Bed::new();
    let e = bed.refused(Request::DefineDomain {
        xml: BOOT_XML.into(),
        running: true,
    });
    // The define went through; the start found no disk file.
    assert!(e.contains("web.qcow2"), "{e}");
    assert!(bed.fake.domain("web").is_none(), "{e}");
}
