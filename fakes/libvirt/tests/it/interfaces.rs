//! Host interfaces through libvirt's interface driver (the udev backend):
//! lookup, XML and state of the bridge guests join, the error for a name the
//! host does not have, and the error of a host without the driver.

use libvirt_fake::{FakeLibvirt, HostConfig, HostInterface};
use libvirt_wire::{ErrorCode, ErrorDomain};
use rstest::rstest;

use crate::common::{code, message, open};

fn host_with(interfaces: Option<Vec<HostInterface>>) -> FakeLibvirt {
    FakeLibvirt::with_config(HostConfig {
        interfaces,
        ..Default::default()
    })
}

#[tokio::test]
async fn the_default_host_has_a_bridge_without_ports() {
    let c = open(&FakeLibvirt::new()).await;
    let (name, mac) = c.interface_lookup_by_name("br0").await.unwrap();
    assert_eq!(name, "br0");
    assert_eq!(mac.len(), 17, "{mac}");
    // No port, no carrier: the kernel's operational state is down.
    assert!(!c.interface_is_active("br0").await.unwrap());
    assert_eq!(
        c.interface_get_xml_desc("br0", 0).await.unwrap(),
        "<interface type='bridge' name='br0'>\n  <mtu size='1500'/>\n  \
         <bridge stp='off' delay='1500'>\n  </bridge>\n</interface>\n"
    );
}

#[tokio::test]
async fn an_ethernet_interface_shows_its_link_and_address() {
    let eth = HostInterface::ethernet("eth0", "02:00:00:00:00:01");
    let c = open(&host_with(Some(vec![eth]))).await;
    assert!(c.interface_is_active("eth0").await.unwrap());
    let xml = c.interface_get_xml_desc("eth0", 1).await.unwrap();
    assert!(
        xml.starts_with("<interface type='ethernet' name='eth0'>"),
        "{xml}"
    );
    assert!(xml.contains("<link state='up'/>"), "{xml}");
    assert!(xml.contains("<mac address='02:00:00:00:00:01'/>"), "{xml}");
    match c.interface_get_xml_desc("eth0", 2).await {
        Err(libvirt_fake::CallError::Libvirt(e)) => {
            assert_eq!(
                (e.code, e.domain),
                (ErrorCode::InvalidArg, ErrorDomain::Interface)
            );
            assert_eq!(
                e.message,
                "unsupported flags (0x2) in function udevInterfaceGetXMLDesc"
            );
        }
        other => panic!("expected a libvirt error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_interface_is_not_found() {
    let c = open(&FakeLibvirt::new()).await;
    let r = c.interface_lookup_by_name("br9").await;
    assert_eq!(
        message(r.clone()),
        "Interface not found: couldn't find interface named 'br9'"
    );
    assert_eq!(code(r), ErrorCode::NoInterface);
    assert_eq!(
        code(c.interface_is_active("br9").await),
        ErrorCode::NoInterface
    );
}

/// Without an interface driver every interface call is unsupported, naming
/// the public API call.
#[rstest]
#[case::lookup("virInterfaceLookupByName")]
#[case::xml("virInterfaceGetXMLDesc")]
#[case::active("virInterfaceIsActive")]
#[tokio::test]
async fn a_host_without_the_interface_driver_supports_no_interface_call(#[case] function: &str) {
    let c = open(&host_with(None)).await;
    let r = match function {
        "virInterfaceLookupByName" => c.interface_lookup_by_name("br0").await.map(|_| ()),
        "virInterfaceGetXMLDesc" => c.interface_get_xml_desc("br0", 0).await.map(|_| ()),
        _ => c.interface_is_active("br0").await.map(|_| ()),
    };
    let e = match r {
        Err(libvirt_fake::CallError::Libvirt(e)) => e,
        other => panic!("expected a libvirt error, got {other:?}"),
    };
    assert_eq!(
        (e.code, e.domain),
        (ErrorCode::NoSupport, ErrorDomain::None)
    );
    assert_eq!(
        e.message,
        format!("this function is not supported by the connection driver: {function}")
    );
}
