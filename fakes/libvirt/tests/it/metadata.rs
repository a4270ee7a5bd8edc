//! Domain metadata: stored per namespace URI, returned without its
//! namespace, live versus config definitions, libvirt's errors.

use libvirt_fake::FakeLibvirt;
use libvirt_wire::{
    DOMAIN_AFFECT_CONFIG, DOMAIN_AFFECT_LIVE, DOMAIN_METADATA_ELEMENT, DOMAIN_METADATA_TITLE,
    ErrorCode,
};

use crate::common::{NS, bios_xml, code, message, open};

const ELEMENT: i32 = DOMAIN_METADATA_ELEMENT;

#[tokio::test]
async fn element_round_trips_without_its_namespace() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let d = c.domain_define_xml(&bios_xml("m")).await.unwrap();
    c.domain_set_metadata(
        &d,
        ELEMENT,
        Some("<instance managed='true' uid='u-1'><id>7</id></instance>"),
        Some("kvm2"),
        Some(NS),
        DOMAIN_AFFECT_CONFIG,
    )
    .await
    .unwrap();
    let got = c
        .domain_get_metadata(&d, ELEMENT, Some(NS), 0)
        .await
        .unwrap();
    // libxml2's formatted dump, as libvirt 11.3 returns it: child elements on
    // lines of their own.
    assert_eq!(
        got,
        "<instance managed=\"true\" uid=\"u-1\">\n  <id>7</id>\n</instance>"
    );
    // The argument checks answer in libvirt 11.3's words: no "invalid
    // argument: " prefix.
    assert_eq!(
        message(
            c.domain_get_metadata(
                &d,
                ELEMENT,
                Some(NS),
                DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG
            )
            .await
        ),
        "Flags 'VIR_DOMAIN_AFFECT_LIVE' and 'VIR_DOMAIN_AFFECT_CONFIG' are mutually exclusive"
    );
    assert_eq!(
        message(c.domain_get_metadata(&d, ELEMENT, None, 0).await),
        "uri in virDomainGetMetadata must not be NULL"
    );
    let xml = c.domain_get_xml_desc(&d, 0).await.unwrap();
    assert!(
        xml.contains(&format!(
            "<kvm2:instance xmlns:kvm2=\"{NS}\" managed=\"true\" uid=\"u-1\"><kvm2:id>7</kvm2:id></kvm2:instance>"
        )),
        "{xml}"
    );
    // Setting again replaces the element of that namespace.
    c.domain_set_metadata(&d, ELEMENT, Some("<i/>"), Some("k"), Some(NS), 0)
        .await
        .unwrap();
    assert_eq!(
        c.domain_get_metadata(&d, ELEMENT, Some(NS), 0)
            .await
            .unwrap(),
        "<i/>"
    );
    // No metadata removes it.
    c.domain_set_metadata(&d, ELEMENT, None, None, Some(NS), 0)
        .await
        .unwrap();
    assert_eq!(
        message(c.domain_get_metadata(&d, ELEMENT, Some(NS), 0).await),
        "metadata not found: Requested metadata element is not present"
    );
}

#[tokio::test]
async fn metadata_written_with_the_define_is_found() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let xml = bios_xml("w").replace(
        "</name>",
        &format!(
            "</name>\n  <metadata>\n    <kvm2:instance xmlns:kvm2='{NS}' managed='true' uid='abc' createdAt='2026-12-02T17:00:00Z'/>\n    <other:x xmlns:other='urn:other'><other:y/></other:x>\n  </metadata>"
        ),
    );
    let d = c.domain_define_xml(&xml).await.unwrap();
    assert_eq!(
        c.domain_get_metadata(&d, ELEMENT, Some(NS), 0)
            .await
            .unwrap(),
        "<instance managed=\"true\" uid=\"abc\" createdAt=\"2026-12-02T17:00:00Z\"/>"
    );
    assert_eq!(
        c.domain_get_metadata(&d, ELEMENT, Some("urn:other"), 0)
            .await
            .unwrap(),
        "<x>\n  <y/>\n</x>"
    );
    assert_eq!(
        code(
            c.domain_get_metadata(&d, ELEMENT, Some("urn:unknown"), 0)
                .await
        ),
        ErrorCode::NoDomainMetadata
    );
    // A redefinition without metadata drops it, as libvirt does.
    c.domain_define_xml(&bios_xml("w")).await.unwrap();
    assert_eq!(
        code(c.domain_get_metadata(&d, ELEMENT, Some(NS), 0).await),
        ErrorCode::NoDomainMetadata
    );
}

#[tokio::test]
async fn live_flag_on_an_inactive_domain_is_refused() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let d = c.domain_define_xml(&bios_xml("l")).await.unwrap();
    let r = c
        .domain_set_metadata(
            &d,
            ELEMENT,
            Some("<i/>"),
            Some("k"),
            Some(NS),
            DOMAIN_AFFECT_LIVE,
        )
        .await;
    assert_eq!(
        message(r),
        "Requested operation is not valid: domain is not running"
    );
    let r = c
        .domain_get_metadata(&d, ELEMENT, Some(NS), DOMAIN_AFFECT_LIVE)
        .await;
    assert_eq!(code(r), ErrorCode::OperationInvalid);
}

#[tokio::test]
async fn current_on_a_running_domain_touches_only_the_live_definition() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let d = c.domain_define_xml(&bios_xml("r")).await.unwrap();
    c.domain_create(&d).await.unwrap();
    c.domain_set_metadata(&d, ELEMENT, Some("<i id='1'/>"), Some("x"), Some(NS), 0)
        .await
        .unwrap();
    assert_eq!(
        c.domain_get_metadata(&d, ELEMENT, Some(NS), DOMAIN_AFFECT_LIVE)
            .await
            .unwrap(),
        "<i id=\"1\"/>"
    );
    assert_eq!(
        code(
            c.domain_get_metadata(&d, ELEMENT, Some(NS), DOMAIN_AFFECT_CONFIG)
                .await
        ),
        ErrorCode::NoDomainMetadata
    );
    // LIVE|CONFIG writes both; after a restart the config copy is live.
    c.domain_set_metadata(
        &d,
        ELEMENT,
        Some("<i id='2'/>"),
        Some("x"),
        Some(NS),
        DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG,
    )
    .await
    .unwrap();
    c.domain_destroy(&d).await.unwrap();
    assert_eq!(
        c.domain_get_metadata(&d, ELEMENT, Some(NS), 0)
            .await
            .unwrap(),
        "<i id=\"2\"/>"
    );
}

#[tokio::test]
async fn argument_rules() {
    let fake = FakeLibvirt::new();
    let c = open(&fake).await;
    let d = c.domain_define_xml(&bios_xml("a")).await.unwrap();
    let both = DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG;
    assert_eq!(
        code(c.domain_get_metadata(&d, ELEMENT, Some(NS), both).await),
        ErrorCode::InvalidArg
    );
    assert_eq!(
        code(c.domain_get_metadata(&d, ELEMENT, None, 0).await),
        ErrorCode::InvalidArg
    );
    assert_eq!(
        code(
            c.domain_set_metadata(&d, ELEMENT, Some("<i/>"), None, Some(NS), 0)
                .await
        ),
        ErrorCode::InvalidArg
    );
    assert_eq!(
        code(
            c.domain_set_metadata(&d, ELEMENT, Some("<i>"), Some("k"), Some(NS), 0)
                .await
        ),
        ErrorCode::XmlError
    );
    assert_eq!(
        code(
            c.domain_set_metadata(&d, ELEMENT, Some("<i/>"), Some("1bad"), Some(NS), 0)
                .await
        ),
        ErrorCode::InvalidArg
    );
    c.domain_set_metadata(&d, DOMAIN_METADATA_TITLE, Some("hello"), None, None, 0)
        .await
        .unwrap();
    assert_eq!(
        c.domain_get_metadata(&d, DOMAIN_METADATA_TITLE, None, 0)
            .await
            .unwrap(),
        "hello"
    );
}
