//! Pool lifecycle (define, build, start, XML, stop, delete, undefine, the
//! transient create) and domain pause/resume, through the wire: each call's
//! success and libvirt's error code, domain and message on failure.

use libvirt_fake::FakeLibvirt;
use libvirt_wire::{
    Decode, DomainArgs, DomainCreateWithFlagsArgs, DomainDefineXmlArgs, DomainDefineXmlRet,
    DomainDestroyArgs, DomainGetStateArgs, DomainGetStateRet, DomainLookupByNameArgs,
    DomainLookupByNameRet, Encode, ErrorCode, ErrorDomain, Procedure, RemoteError, Status,
    StoragePool, StoragePoolArgs, StoragePoolDefineXmlArgs, StoragePoolDefineXmlRet,
    StoragePoolFlagsArgs, StoragePoolGetInfoArgs, StoragePoolGetInfoRet, StoragePoolGetXmlDescRet,
    StoragePoolListAllVolumesArgs, StoragePoolListAllVolumesRet, StoragePoolLookupByNameArgs,
    StoragePoolRefreshArgs, StorageVol, StorageVolCreateXmlArgs, StorageVolCreateXmlRet,
    StorageVolDeleteArgs,
};
use tokio::io::DuplexStream;

use crate::common::{bios_xml, pool_fake};
use crate::wire::Raw;

type Conn = Raw<DuplexStream>;

async fn connect(fake: &FakeLibvirt) -> Conn {
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    c
}

async fn ok<A: Encode + ?Sized, R: Decode>(c: &mut Conn, p: Procedure, args: &A) -> R {
    let reply = c.call(p, args).await;
    if reply.header.status != Status::Ok {
        panic!(
            "{p:?} failed: {:?}",
            reply.remote_error().unwrap().message()
        );
    }
    reply.decode_payload::<R>().unwrap()
}

async fn fails<A: Encode + ?Sized>(c: &mut Conn, p: Procedure, args: &A) -> RemoteError {
    let reply = c.call(p, args).await;
    assert_eq!(reply.header.status, Status::Error, "{p:?} succeeded");
    reply.remote_error().unwrap()
}

/// Code, domain and message of an error.
fn parts(e: &RemoteError) -> (ErrorCode, ErrorDomain, String) {
    (e.code, e.domain, e.message().to_owned())
}

fn pool_xml(name: &str, path: &str) -> String {
    format!("<pool type='dir'><name>{name}</name><target><path>{path}</path></target></pool>")
}

fn xml_args(xml: &str) -> StoragePoolDefineXmlArgs {
    StoragePoolDefineXmlArgs {
        xml: xml.to_owned(),
        flags: 0,
    }
}

fn flags0(pool: &StoragePool) -> StoragePoolFlagsArgs {
    StoragePoolFlagsArgs {
        pool: pool.clone(),
        flags: 0,
    }
}

fn only(pool: &StoragePool) -> StoragePoolArgs {
    StoragePoolArgs { pool: pool.clone() }
}

async fn define(c: &mut Conn, name: &str, path: &str) -> StoragePool {
    ok::<_, StoragePoolDefineXmlRet>(
        c,
        Procedure::StoragePoolDefineXml,
        &xml_args(&pool_xml(name, path)),
    )
    .await
    .pool
}

async fn info(c: &mut Conn, pool: &StoragePool) -> StoragePoolGetInfoRet {
    ok(
        c,
        Procedure::StoragePoolGetInfo,
        &StoragePoolGetInfoArgs { pool: pool.clone() },
    )
    .await
}

async fn xml_of(c: &mut Conn, pool: &StoragePool) -> String {
    ok::<_, StoragePoolGetXmlDescRet>(c, Procedure::StoragePoolGetXmlDesc, &flags0(pool))
        .await
        .xml
}

async fn vol_names(c: &mut Conn, pool: &StoragePool) -> Vec<String> {
    let r: StoragePoolListAllVolumesRet = ok(
        c,
        Procedure::StoragePoolListAllVolumes,
        &StoragePoolListAllVolumesArgs {
            pool: pool.clone(),
            need_results: 1,
            flags: 0,
        },
    )
    .await;
    r.vols.into_iter().map(|v| v.name).collect()
}

async fn create_vol(c: &mut Conn, pool: &StoragePool, name: &str) -> StorageVol {
    let xml = format!(
        "<volume><name>{name}</name><capacity unit='bytes'>1048576</capacity>\
         <target><format type='raw'/></target></volume>"
    );
    ok::<_, StorageVolCreateXmlRet>(
        c,
        Procedure::StorageVolCreateXml,
        &StorageVolCreateXmlArgs {
            pool: pool.clone(),
            xml,
            flags: 0,
        },
    )
    .await
    .vol
}

const ROOT: &str = "/var/lib/libvirt/fid";

#[tokio::test]
async fn define_build_start_stop_delete_undefine() {
    let fake = pool_fake();
    let mut c = connect(&fake).await;
    let path = format!("{ROOT}/p1");
    let pool = define(&mut c, "p1", &format!("{path}/")).await;
    assert_eq!(fake.pool_persistent("p1"), Some(true));

    // Inactive and never started: no sizes yet, no permissions.
    let i = info(&mut c, &pool).await;
    assert_eq!(
        (i.state, i.capacity, i.allocation, i.available),
        (0, 0, 0, 0)
    );
    let x = xml_of(&mut c, &pool).await;
    assert!(
        x.starts_with("<pool type='dir'>\n  <name>p1</name>\n"),
        "{x}"
    );
    assert!(x.contains(&format!("<uuid>{}</uuid>", pool.uuid)), "{x}");
    assert!(x.contains(&format!("<path>{path}</path>")), "{x}");
    assert!(x.contains("<capacity unit='bytes'>0</capacity>"), "{x}");
    assert!(!x.contains("<permissions>"), "{x}");

    // Calls that need a running pool.
    let e = fails(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::OperationInvalid,
            ErrorDomain::Storage,
            "Requested operation is not valid: storage pool 'p1' is not active".into()
        )
    );
    // The directory does not exist yet: start and delete fail as the
    // system calls do.
    let e = fails(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::SystemError,
            ErrorDomain::None,
            format!("cannot open directory '{path}': No such file or directory")
        )
    );
    let e = fails(&mut c, Procedure::StoragePoolDelete, &flags0(&pool)).await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::SystemError,
            ErrorDomain::Storage,
            format!("failed to remove pool '{path}': No such file or directory")
        )
    );

    // Build (twice: an existing directory is fine), then start.
    ok::<_, ()>(&mut c, Procedure::StoragePoolBuild, &flags0(&pool)).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolBuild, &flags0(&pool)).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    let i = info(&mut c, &pool).await;
    assert_eq!(i.state, 2);
    assert_eq!(i.capacity, 10 << 30, "the file system of the first pool");
    assert_eq!(i.available, i.capacity - i.allocation);
    let x = xml_of(&mut c, &pool).await;
    assert!(x.contains("<mode>0711</mode>"), "{x}");
    assert!(x.contains(&format!(
        "<capacity unit='bytes'>{}</capacity>",
        10u64 << 30
    )));

    // Calls refused while it runs.
    let e = fails(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    assert_eq!(
        e.message(),
        "Requested operation is not valid: storage pool 'p1' is already active"
    );
    let e = fails(&mut c, Procedure::StoragePoolBuild, &flags0(&pool)).await;
    assert_eq!(e.code, ErrorCode::OperationInvalid);
    assert_eq!(
        e.message(),
        "Requested operation is not valid: storage pool 'p1' is already active"
    );
    for p in [Procedure::StoragePoolUndefine, Procedure::StoragePoolDelete] {
        let e = if p == Procedure::StoragePoolUndefine {
            fails(&mut c, p, &only(&pool)).await
        } else {
            fails(&mut c, p, &flags0(&pool)).await
        };
        assert_eq!(
            parts(&e),
            (
                ErrorCode::OperationInvalid,
                ErrorDomain::Storage,
                "Requested operation is not valid: storage pool 'p1' is still active".into()
            ),
            "{p:?}"
        );
    }

    // A volume keeps the directory from being deleted.
    let vol = create_vol(&mut c, &pool, "v.img").await;
    assert_eq!(vol.key, format!("{path}/v.img"));
    ok::<_, ()>(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    assert_eq!(info(&mut c, &pool).await.state, 0);
    let e = fails(&mut c, Procedure::StoragePoolDelete, &flags0(&pool)).await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::SystemError,
            ErrorDomain::Storage,
            format!("failed to remove pool '{path}': Directory not empty")
        )
    );
    // Volumes are out of reach while the pool is stopped.
    let e = fails(
        &mut c,
        Procedure::StorageVolDelete,
        &StorageVolDeleteArgs {
            vol: vol.clone(),
            flags: 0,
        },
    )
    .await;
    assert_eq!(e.code, ErrorCode::OperationInvalid);
    ok::<_, ()>(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    assert_eq!(vol_names(&mut c, &pool).await, ["v.img"]);
    ok::<_, ()>(
        &mut c,
        Procedure::StorageVolDelete,
        &StorageVolDeleteArgs { vol, flags: 0 },
    )
    .await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolDelete, &flags0(&pool)).await;
    // Deleted: starting needs a build again.
    let e = fails(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    assert_eq!(e.code, ErrorCode::SystemError);

    ok::<_, ()>(&mut c, Procedure::StoragePoolUndefine, &only(&pool)).await;
    let e = fails(
        &mut c,
        Procedure::StoragePoolLookupByName,
        &StoragePoolLookupByNameArgs { name: "p1".into() },
    )
    .await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::NoStoragePool,
            ErrorDomain::Storage,
            "Storage pool not found: no storage pool with matching name 'p1'".into()
        )
    );
    let e = fails(&mut c, Procedure::StoragePoolUndefine, &only(&pool)).await;
    assert_eq!(e.code, ErrorCode::NoStoragePool);
    let e = fails(&mut c, Procedure::StoragePoolGetXmlDesc, &flags0(&pool)).await;
    assert_eq!(e.code, ErrorCode::NoStoragePool);
    assert!(fake.leftover_directories().is_empty());
    fake.check_invariants().unwrap();
}

#[tokio::test]
async fn duplicates_and_bad_definitions() {
    let fake = pool_fake();
    let mut c = connect(&fake).await;
    let pool = define(&mut c, "p2", &format!("{ROOT}/p2")).await;

    // The same document again: a fresh UUID under a known name.
    let e = fails(
        &mut c,
        Procedure::StoragePoolDefineXml,
        &xml_args(&pool_xml("p2", &format!("{ROOT}/p2"))),
    )
    .await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::OperationFailed,
            ErrorDomain::Storage,
            format!(
                "operation failed: pool 'p2' already exists with uuid {}",
                uuid::Uuid::from_bytes(pool.uuid.0)
            )
        )
    );
    // Another name on a directory a pool uses.
    for p in [
        Procedure::StoragePoolDefineXml,
        Procedure::StoragePoolCreateXml,
    ] {
        let e = fails(
            &mut c,
            p,
            &xml_args(&pool_xml("other", "/var/lib/libvirt/images/")),
        )
        .await;
        assert_eq!(
            parts(&e),
            (
                ErrorCode::OperationFailed,
                ErrorDomain::Storage,
                "operation failed: Storage source conflict with pool: 'default'".into()
            ),
            "{p:?}"
        );
    }
    // The same UUID under another name.
    let uuid = uuid::Uuid::from_bytes(pool.uuid.0);
    let with_uuid = format!(
        "<pool type='dir'><name>p3</name><uuid>{uuid}</uuid><target><path>{ROOT}/p3</path></target></pool>"
    );
    let e = fails(
        &mut c,
        Procedure::StoragePoolDefineXml,
        &xml_args(&with_uuid),
    )
    .await;
    assert_eq!(
        e.message(),
        format!("operation failed: pool 'p2' is already defined with uuid {uuid}")
    );
    // The same name and UUID: the definition is updated.
    let moved = with_uuid.replace("<name>p3</name>", "<name>p2</name>");
    let again: StoragePoolDefineXmlRet =
        ok(&mut c, Procedure::StoragePoolDefineXml, &xml_args(&moved)).await;
    assert_eq!(again.pool, pool);
    assert!(
        xml_of(&mut c, &pool)
            .await
            .contains(&format!("<path>{ROOT}/p3</path>"))
    );

    // Documents libvirt's parser refuses.
    let cases: [(&str, ErrorCode, ErrorDomain, &str); 6] = [
        (
            "<pool type='dir'><name>",
            ErrorCode::XmlDetail,
            ErrorDomain::Storage,
            "",
        ),
        (
            "<pool><name>x</name><target><path>/x</path></target></pool>",
            ErrorCode::XmlError,
            ErrorDomain::Xml,
            "XML error: Missing required attribute 'type' in element 'pool'",
        ),
        (
            "<pool type='dir'><target><path>/x</path></target></pool>",
            ErrorCode::XmlError,
            ErrorDomain::Storage,
            "XML error: missing pool source name element",
        ),
        (
            "<pool type='dir'><name>x</name></pool>",
            ErrorCode::XmlError,
            ErrorDomain::Storage,
            "XML error: missing storage pool target path",
        ),
        (
            "<pool type='dir'><name>x</name><uuid>nope</uuid><target><path>/x</path></target></pool>",
            ErrorCode::XmlError,
            ErrorDomain::Storage,
            "XML error: malformed uuid element",
        ),
        (
            "<volume type='dir'><name>x</name></volume>",
            ErrorCode::XmlError,
            ErrorDomain::Xml,
            "XML error: expecting root element of 'pool', not 'volume'",
        ),
    ];
    for (doc, code, domain, message) in cases {
        let e = fails(&mut c, Procedure::StoragePoolDefineXml, &xml_args(doc)).await;
        assert_eq!((e.code, e.domain), (code, domain), "{doc}");
        if !message.is_empty() {
            assert_eq!(e.message(), message, "{doc}");
        }
    }
    // Flags the calls do not take.
    let e = fails(
        &mut c,
        Procedure::StoragePoolGetXmlDesc,
        &StoragePoolFlagsArgs {
            pool: pool.clone(),
            flags: 2,
        },
    )
    .await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::InvalidArg,
            ErrorDomain::Storage,
            "unsupported flags (0x2) in function storagePoolGetXMLDesc".into()
        )
    );
    assert_eq!(fake.pools(), ["default", "p2"]);
    fake.check_invariants().unwrap();
}

#[tokio::test]
async fn transient_pool_goes_away_when_stopped() {
    let fake = pool_fake();
    let mut c = connect(&fake).await;
    let path = format!("{ROOT}/t");
    // Its directory does not exist: the create fails and leaves nothing.
    let e = fails(
        &mut c,
        Procedure::StoragePoolCreateXml,
        &xml_args(&pool_xml("t", &path)),
    )
    .await;
    assert_eq!(
        e.message(),
        format!("cannot open directory '{path}': No such file or directory")
    );
    assert_eq!(fake.pools(), ["default"]);
    // With VIR_STORAGE_POOL_CREATE_WITH_BUILD it is made first.
    let pool = ok::<_, StoragePoolDefineXmlRet>(
        &mut c,
        Procedure::StoragePoolCreateXml,
        &StoragePoolDefineXmlArgs {
            xml: pool_xml("t", &path),
            flags: 1,
        },
    )
    .await
    .pool;
    assert_eq!(info(&mut c, &pool).await.state, 2);
    assert_eq!(fake.pool_persistent("t"), Some(false));
    let e = fails(
        &mut c,
        Procedure::StoragePoolCreateXml,
        &xml_args(&pool_xml("t", &path)),
    )
    .await;
    assert_eq!(e.code, ErrorCode::OperationFailed);
    let e = fails(&mut c, Procedure::StoragePoolUndefine, &only(&pool)).await;
    assert_eq!(
        e.message(),
        "Requested operation is not valid: storage pool 't' is still active"
    );
    create_vol(&mut c, &pool, "kept.img").await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    let e = fails(
        &mut c,
        Procedure::StoragePoolGetInfo,
        &StoragePoolGetInfoArgs { pool: pool.clone() },
    )
    .await;
    assert_eq!(e.code, ErrorCode::NoStoragePool);
    assert_eq!(fake.pools(), ["default"]);
    // Its directory and file stay on the host: a pool defined there sees
    // the file once it runs.
    assert_eq!(fake.leftover_directories(), vec![path.clone()]);
    let again = define(&mut c, "t2", &path).await;
    assert!(fake.leftover_directories().is_empty());
    ok::<_, ()>(&mut c, Procedure::StoragePoolCreate, &flags0(&again)).await;
    ok::<_, ()>(
        &mut c,
        Procedure::StoragePoolRefresh,
        &StoragePoolRefreshArgs {
            pool: again.clone(),
            flags: 0,
        },
    )
    .await;
    assert_eq!(vol_names(&mut c, &again).await, ["kept.img"]);
    assert!(xml_of(&mut c, &again).await.contains("<mode>0711</mode>"));
    fake.check_invariants().unwrap();
}

#[tokio::test]
async fn undefined_pool_files_come_back_with_a_new_definition() {
    let fake = pool_fake();
    let mut c = connect(&fake).await;
    let path = format!("{ROOT}/u");
    let pool = define(&mut c, "u", &path).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolBuild, &flags0(&pool)).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolCreate, &flags0(&pool)).await;
    create_vol(&mut c, &pool, "a.img").await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    ok::<_, ()>(&mut c, Procedure::StoragePoolUndefine, &only(&pool)).await;
    assert_eq!(fake.volumes("u"), None);
    let again = define(&mut c, "u", &path).await;
    assert_ne!(again.uuid, pool.uuid);
    ok::<_, ()>(&mut c, Procedure::StoragePoolCreate, &flags0(&again)).await;
    assert_eq!(vol_names(&mut c, &again).await, ["a.img"]);
    // The old handle names a pool that is gone.
    let e = fails(&mut c, Procedure::StoragePoolDestroy, &only(&pool)).await;
    assert_eq!(
        e.message(),
        format!(
            "Storage pool not found: no storage pool with matching uuid '{}' (u)",
            uuid::Uuid::from_bytes(pool.uuid.0)
        )
    );
    fake.check_invariants().unwrap();
}

async fn dom_state(c: &mut Conn, dom: &libvirt_wire::Domain) -> (i32, i32) {
    let r: DomainGetStateRet = ok(
        c,
        Procedure::DomainGetState,
        &DomainGetStateArgs {
            dom: dom.clone(),
            flags: 0,
        },
    )
    .await;
    (r.state, r.reason)
}

#[tokio::test]
async fn suspend_and_resume() {
    let fake = FakeLibvirt::new();
    let mut c = connect(&fake).await;
    let dom = ok::<_, DomainDefineXmlRet>(
        &mut c,
        Procedure::DomainDefineXml,
        &DomainDefineXmlArgs {
            xml: bios_xml("sr"),
        },
    )
    .await
    .dom;
    let args = DomainArgs { dom: dom.clone() };
    for p in [Procedure::DomainSuspend, Procedure::DomainResume] {
        let e = fails(&mut c, p, &args).await;
        assert_eq!(
            parts(&e),
            (
                ErrorCode::OperationInvalid,
                ErrorDomain::Domain,
                "Requested operation is not valid: domain is not running".into()
            ),
            "{p:?}"
        );
    }
    ok::<_, libvirt_wire::DomainCreateWithFlagsRet>(
        &mut c,
        Procedure::DomainCreateWithFlags,
        &DomainCreateWithFlagsArgs {
            dom: dom.clone(),
            flags: 0,
        },
    )
    .await;
    let e = fails(&mut c, Procedure::DomainResume, &args).await;
    assert_eq!(
        parts(&e),
        (
            ErrorCode::OperationInvalid,
            ErrorDomain::Qemu,
            "Requested operation is not valid: domain is already running".into()
        )
    );
    ok::<_, ()>(&mut c, Procedure::DomainSuspend, &args).await;
    assert_eq!(dom_state(&mut c, &dom).await, (3, 1), "paused by the user");
    // Pausing a paused domain changes nothing.
    ok::<_, ()>(&mut c, Procedure::DomainSuspend, &args).await;
    assert_eq!(dom_state(&mut c, &dom).await, (3, 1));
    ok::<_, ()>(&mut c, Procedure::DomainResume, &args).await;
    assert_eq!(dom_state(&mut c, &dom).await, (1, 5), "running, unpaused");
    let found: DomainLookupByNameRet = ok(
        &mut c,
        Procedure::DomainLookupByName,
        &DomainLookupByNameArgs { name: "sr".into() },
    )
    .await;
    assert!(found.dom.id >= 1);
    ok::<_, ()>(
        &mut c,
        Procedure::DomainDestroy,
        &DomainDestroyArgs { dom: dom.clone() },
    )
    .await;
    let e = fails(&mut c, Procedure::DomainSuspend, &args).await;
    assert_eq!(e.code, ErrorCode::OperationInvalid);
    // A domain that does not exist.
    let ghost = DomainArgs {
        dom: libvirt_wire::Domain {
            name: "ghost".into(),
            uuid: libvirt_wire::Uuid([7; 16]),
            id: -1,
        },
    };
    let e = fails(&mut c, Procedure::DomainResume, &ghost).await;
    assert_eq!((e.code, e.domain), (ErrorCode::NoDomain, ErrorDomain::Qemu));
    fake.check_invariants().unwrap();
}
