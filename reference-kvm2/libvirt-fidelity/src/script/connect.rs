//! Sequences on the connection itself: opening it, opening it twice, and the
//! host's interfaces.

use super::*;

/// The bridge every guest joins: `scripts/libvirt-host.sh` makes it on the
/// real host and the fake has it by default, without ports on either side.
const BRIDGE: &str = "br0";

/// The host's bridge through libvirt's interface driver: its handle, XML and
/// state, a name the host does not have, and an unknown flag.
pub(super) async fn host_interfaces(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("host interfaces");
    let iface = rec.call(
        "lookup the bridge",
        Procedure::InterfaceLookupByName,
        c.interface_lookup_by_name(BRIDGE).await,
        |i| {
            let mac_ok = i.mac.len() == 17
                && i.mac
                    .split(':')
                    .all(|o| o.len() == 2 && o.chars().all(|c| c.is_ascii_hexdigit()));
            format!("name={} mac-well-formed={mac_ok}", i.name)
        },
    );
    rec.call(
        "lookup a missing interface",
        Procedure::InterfaceLookupByName,
        c.interface_lookup_by_name(&format!("{}-if", names.prefix))
            .await,
        |i| i.name.clone(),
    );
    let Some(iface) = iface else {
        rec.push(
            "bridge XML",
            Procedure::InterfaceGetXmlDesc,
            Outcome::Skipped(NO_HANDLE.into()),
        );
        return;
    };
    rec.call(
        "bridge XML",
        Procedure::InterfaceGetXmlDesc,
        c.interface_get_xml_desc(&iface).await,
        |x| x.clone(),
    );
    let flagged = c
        .call::<calls::InterfaceGetXmlDesc>(&InterfaceGetXmlDescArgs {
            iface: iface.clone(),
            flags: 2,
        })
        .await;
    rec.call(
        "bridge XML with an unknown flag",
        Procedure::InterfaceGetXmlDesc,
        flagged,
        |r| format!("{} bytes", r.xml.len()),
    );
    rec.call(
        "bridge active (no ports)",
        Procedure::InterfaceIsActive,
        c.interface_is_active(&iface).await,
        |a| a.to_string(),
    );
}

/// A second `CONNECT_OPEN` on an open connection, on a connection of its own
/// (what it does to the connection is part of what is compared).
pub(super) async fn second_open(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    rec.sequence("second open");
    let c = match b.new_client().await {
        Ok(c) => c,
        Err(e) => {
            rec.push("connect", "-", Outcome::Failed(e));
            return;
        }
    };
    rec.call("auth list", Procedure::AuthList, c.auth_list().await, |t| {
        format!("{t:?}")
    });
    // After AUTH_LIST has authenticated the client (root, or a socket
    // without authentication); before it libvirtd would try polkit itself,
    // which depends on the host's D-Bus.
    //
    // libvirtd 9.0 refuses it without setting an error of its own, so the
    // client receives whatever error the worker thread last held: "did not
    // set virError" on a quiet daemon, another client's error on a busy one
    // (measured: a guest agent error from a concurrent test). Only the
    // refusal is compared, not its code.
    let polkit = match c.auth_polkit().await {
        Ok(done) => Outcome::Value(format!("accepted ({done})")),
        Err(e) if e.as_remote().is_some() => Outcome::Value("refused".to_owned()),
        Err(e) => Outcome::Failed(e.to_string()),
    };
    rec.push(
        "polkit on a socket that does not ask for it",
        Procedure::AuthPolkit,
        polkit,
    );
    open_again_and_close(b, names, &c, rec).await;
}

/// Opens the connection up to three times, asks what it answers in between, closes it and calls once more.
async fn open_again_and_close(b: &Backend, names: &RunNames, c: &Client, rec: &mut Recorder) {
    let uri = crate::target::URI;
    rec.call("open", Procedure::ConnectOpen, c.open(uri).await, show_unit);
    rec.call(
        "open again",
        Procedure::ConnectOpen,
        c.connect_open(uri).await,
        show_unit,
    );
    rec.call(
        "uri after",
        Procedure::ConnectGetUri,
        c.connect_get_uri().await,
        |u| u.clone(),
    );
    rec.call(
        "lookup domain after",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(&names.missing.0).await,
        show_dom,
    );
    rec.call(
        "lookup pool after",
        Procedure::StoragePoolLookupByName,
        c.storage_pool_lookup_by_name(&b.pool).await,
        show_pool,
    );
    rec.call(
        "open a third time",
        Procedure::ConnectOpen,
        c.connect_open(uri).await,
        show_unit,
    );
    rec.call(
        "uri after the third open",
        Procedure::ConnectGetUri,
        c.connect_get_uri().await,
        |u| u.clone(),
    );
    rec.call(
        "close",
        Procedure::ConnectClose,
        c.connect_close().await,
        show_unit,
    );
    rec.call(
        "call after close",
        Procedure::ConnectGetLibVersion,
        c.connect_get_lib_version().await,
        |_| "answered".to_owned(),
    );
}

pub(super) async fn connect(b: &Backend, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("connect");
    identity_calls(c, rec).await;
    capabilities_calls(c, rec).await;
    features_and_pools(b, rec).await;
}

/// The authentication schemes, the URI, the versions and the host name.
async fn identity_calls(c: &Client, rec: &mut Recorder) {
    rec.call("auth list", Procedure::AuthList, c.auth_list().await, |t| {
        format!("{t:?}")
    });
    rec.call(
        "uri",
        Procedure::ConnectGetUri,
        c.connect_get_uri().await,
        |u| u.clone(),
    );
    rec.call(
        "lib version",
        Procedure::ConnectGetLibVersion,
        c.connect_get_lib_version().await,
        |v| format!("at least 9.0.0: {}", *v >= 9_000_000),
    );
    rec.call(
        "hypervisor version",
        Procedure::ConnectGetVersion,
        c.connect_get_version().await,
        |v| format!("at least 1.0.0: {}", *v >= 1_000_000),
    );
    rec.call(
        "hostname",
        Procedure::ConnectGetHostname,
        c.connect_get_hostname().await,
        |h| format!("non-empty: {}", !h.is_empty()),
    );
}

/// The host's and the domain capabilities, also with an unknown flag.
async fn capabilities_calls(c: &Client, rec: &mut Recorder) {
    rec.call(
        "capabilities",
        Procedure::ConnectGetCapabilities,
        c.connect_get_capabilities().await,
        |x| {
            format!(
                "root={} x86_64={} hvm={} qemu-domains={}",
                x.trim_start().starts_with("<capabilities>"),
                x.contains("<arch>x86_64</arch>"),
                x.contains("<os_type>hvm</os_type>"),
                x.contains("<domain type='qemu'")
            )
        },
    );
    rec.call(
        "domain capabilities",
        Procedure::ConnectGetDomainCapabilities,
        c.connect_get_domain_capabilities(Some("qemu"), Some("x86_64"))
            .await,
        |x| {
            let loader = x
                .split_once("<loader supported='yes'>")
                .and_then(|(_, rest)| rest.split_once("</loader>"))
                .map_or("", |(inside, _)| inside);
            format!(
                "root={} domain-qemu={} efi={} loader-paths={}",
                x.trim_start().starts_with("<domainCapabilities>"),
                x.contains("<domain>qemu</domain>"),
                x.contains("<value>efi</value>"),
                loader.contains("<value>/")
            )
        },
    );
    let flagged = c
        .call::<calls::ConnectGetDomainCapabilities>(&ConnectGetDomainCapabilitiesArgs {
            emulatorbin: None,
            arch: None,
            machine: None,
            virttype: Some("qemu".to_owned()),
            // 1 (leave deprecated features out) is known since libvirt 9.8.
            flags: 2,
        })
        .await;
    rec.call(
        "domain capabilities with an unknown flag",
        Procedure::ConnectGetDomainCapabilities,
        flagged,
        |r| format!("{} bytes", r.capabilities.len()),
    );
}

/// The keepalive and an unknown feature, and the list of pools.
async fn features_and_pools(b: &Backend, rec: &mut Recorder) {
    let c = &b.client;
    rec.call(
        "keepalive feature",
        Procedure::ConnectSupportsFeature,
        c.connect_supports_feature(FEATURE_PROGRAM_KEEPALIVE).await,
        |s| s.to_string(),
    );
    rec.call(
        "unknown feature",
        Procedure::ConnectSupportsFeature,
        c.connect_supports_feature(9999).await,
        |s| s.to_string(),
    );
    let pools = c
        .call::<calls::ConnectListAllStoragePools>(&ConnectListAllStoragePoolsArgs {
            need_results: 1,
            flags: 0,
        })
        .await;
    rec.call(
        "list pools",
        Procedure::ConnectListAllStoragePools,
        pools,
        |r| {
            format!(
                "includes {}: {}, count matches: {}",
                b.pool,
                r.pools.iter().any(|p| p.name == b.pool),
                r.ret as usize == r.pools.len()
            )
        },
    );
}
