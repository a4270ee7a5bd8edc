//! The UEFI domain through its whole lifecycle: defined, queried, given
//! metadata, started twice, stopped and undefined with its NVRAM.

use super::*;

/// Defines the UEFI domain, then takes it through each stage in turn; a stage
/// that leaves no domain to go on with ends the sequence.
pub(super) async fn uefi_lifecycle(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("uefi domain");
    let (name, uuid) = &names.uefi;
    let xml = uefi_xml(name, uuid);
    let Some(dom) = rec.call(
        "define",
        Procedure::DomainDefineXml,
        c.domain_define_xml(&xml).await,
        show_dom,
    ) else {
        return;
    };
    defined(c, names, &dom, &xml, rec).await;
    metadata_while_inactive(c, &dom, rec).await;
    needs_running(c, &dom, rec).await;
    let Some(running) = rec.call(
        "start",
        Procedure::DomainCreateWithFlags,
        c.domain_create_with_flags(&dom, 0).await,
        show_dom,
    ) else {
        return;
    };
    first_run(c, names, &dom, &running, rec).await;
    metadata_while_running(c, &dom, &running, rec).await;
    stop_first_run(c, &dom, &running, rec).await;
    second_run_and_undefine(c, names, &dom, rec).await;
}

/// Reads the element metadata in the script's namespace (or `uri`).
async fn get_meta(c: &Client, dom: &Domain, flags: u32, uri: &str) -> libvirt_rpc::Result<String> {
    c.domain_get_metadata(dom, DOMAIN_METADATA_ELEMENT, Some(uri), flags)
        .await
}

/// Sets the element metadata in the script's namespace to `value`.
async fn set_meta(c: &Client, dom: &Domain, flags: u32, value: &str) -> libvirt_rpc::Result<()> {
    c.domain_set_metadata(
        dom,
        DOMAIN_METADATA_ELEMENT,
        Some(&metadata(value)),
        Some("fid"),
        Some(META_URI),
        flags,
    )
    .await
}

/// The defined domain seen every way: lookups, state, info, XML, listings,
/// and defining it again (with its UUID, then with another).
async fn defined(c: &Client, names: &RunNames, dom: &Domain, xml: &str, rec: &mut Recorder) {
    let (name, uuid) = &names.uefi;
    rec.call(
        "lookup by name",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "lookup by uuid",
        Procedure::DomainLookupByUuid,
        c.domain_lookup_by_uuid(*uuid).await,
        show_dom,
    );
    rec.call(
        "state defined",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "info defined",
        Procedure::DomainGetInfo,
        c.domain_get_info(dom).await,
        show_info,
    );
    rec.call(
        "xml defined",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(dom, 0).await,
        show_xml,
    );
    rec.call(
        "list all",
        Procedure::ConnectListAllDomains,
        list_ours(c, &names.prefix, 0).await,
        show_doms,
    );
    rec.call(
        "list active",
        Procedure::ConnectListAllDomains,
        list_ours(c, &names.prefix, CONNECT_LIST_DOMAINS_ACTIVE).await,
        show_doms,
    );
    rec.call(
        "list inactive",
        Procedure::ConnectListAllDomains,
        list_ours(c, &names.prefix, CONNECT_LIST_DOMAINS_INACTIVE).await,
        show_doms,
    );
    rec.call(
        "define again",
        Procedure::DomainDefineXml,
        c.domain_define_xml(xml).await,
        show_dom,
    );
    rec.call(
        "define the name with another uuid",
        Procedure::DomainDefineXml,
        c.domain_define_xml(&uefi_xml(name, &names.missing.1)).await,
        show_dom,
    );
}

/// Metadata, title and the element without a URI on the inactive domain.
async fn metadata_while_inactive(c: &Client, dom: &Domain, rec: &mut Recorder) {
    element_while_inactive(c, dom, rec).await;
    title_and_element_without_uri(c, dom, rec).await;
}

/// The metadata element set and read in each state flag, and the XML that holds it.
async fn element_while_inactive(c: &Client, dom: &Domain, rec: &mut Recorder) {
    rec.call_detailed(
        "metadata absent",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CURRENT, META_URI).await,
        show_metadata,
    );
    rec.call(
        "set metadata live while inactive",
        Procedure::DomainSetMetadata,
        set_meta(c, dom, DOMAIN_AFFECT_LIVE, "v0").await,
        show_unit,
    );
    rec.call(
        "set metadata config",
        Procedure::DomainSetMetadata,
        set_meta(c, dom, DOMAIN_AFFECT_CONFIG, "v1").await,
        show_unit,
    );
    rec.call_detailed(
        "get metadata config",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CONFIG, META_URI).await,
        show_metadata,
    );
    rec.call_detailed(
        "get metadata current",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CURRENT, META_URI).await,
        show_metadata,
    );
    rec.call_detailed(
        "get metadata live while inactive",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_LIVE, META_URI).await,
        show_metadata,
    );
    rec.call_detailed(
        "get metadata live and config",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG, META_URI).await,
        show_metadata,
    );
    rec.call_detailed(
        "get metadata of another namespace",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CURRENT, "https://example.org/other/1").await,
        show_metadata,
    );
    rec.call(
        "xml with metadata",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(dom, 0).await,
        show_xml,
    );
}

/// The title set and read, and the element asked for without a URI.
async fn title_and_element_without_uri(c: &Client, dom: &Domain, rec: &mut Recorder) {
    rec.call(
        "set title",
        Procedure::DomainSetMetadata,
        c.domain_set_metadata(
            dom,
            DOMAIN_METADATA_TITLE,
            Some("fidelity title"),
            None,
            None,
            DOMAIN_AFFECT_CONFIG,
        )
        .await,
        show_unit,
    );
    rec.call(
        "get title",
        Procedure::DomainGetMetadata,
        c.domain_get_metadata(dom, DOMAIN_METADATA_TITLE, None, 0)
            .await,
        |t| t.clone(),
    );
    rec.call_detailed(
        "element without uri",
        Procedure::DomainGetMetadata,
        c.domain_get_metadata(dom, DOMAIN_METADATA_ELEMENT, None, 0)
            .await,
        show_metadata,
    );
}

/// Calls that need a running domain, made while it is not.
async fn needs_running(c: &Client, dom: &Domain, rec: &mut Recorder) {
    rec.call(
        "destroy inactive",
        Procedure::DomainDestroy,
        c.domain_destroy(dom).await,
        show_unit,
    );
    rec.call(
        "shutdown inactive",
        Procedure::DomainShutdownFlags,
        c.domain_shutdown_flags(dom, 0).await,
        show_unit,
    );
    rec.call(
        "addresses inactive",
        Procedure::DomainInterfaceAddresses,
        c.domain_interface_addresses(dom, DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, 0)
            .await,
        |v| show_ifaces(v),
    );
    rec.call(
        "suspend inactive",
        Procedure::DomainSuspend,
        c.domain_suspend(dom).await,
        show_unit,
    );
    rec.call(
        "resume inactive",
        Procedure::DomainResume,
        c.domain_resume(dom).await,
        show_unit,
    );
}

/// The first start: state (also through the handle from before the start),
/// info, lookup, listing, starting again and both XMLs.
async fn first_run(
    c: &Client,
    names: &RunNames,
    dom: &Domain,
    running: &Domain,
    rec: &mut Recorder,
) {
    let (name, _) = &names.uefi;
    rec.call(
        "state running",
        Procedure::DomainGetState,
        c.domain_get_state(running).await,
        show_state,
    );
    rec.call(
        "state through the old handle",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "info running",
        Procedure::DomainGetInfo,
        c.domain_get_info(running).await,
        show_info,
    );
    rec.call(
        "lookup running",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "list active running",
        Procedure::ConnectListAllDomains,
        list_ours(c, &names.prefix, CONNECT_LIST_DOMAINS_ACTIVE).await,
        show_doms,
    );
    rec.call(
        "start again",
        Procedure::DomainCreate,
        c.domain_create(running).await,
        show_unit,
    );
    rec.call_detailed(
        "xml running",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(running, 0).await,
        show_live_xml,
    );
    rec.call(
        "xml inactive while running",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(running, DOMAIN_XML_INACTIVE).await,
        show_xml,
    );
}

/// Metadata on the running domain: current, live and config, and removed live.
async fn metadata_while_running(c: &Client, dom: &Domain, running: &Domain, rec: &mut Recorder) {
    rec.call(
        "set metadata current while running",
        Procedure::DomainSetMetadata,
        set_meta(c, dom, DOMAIN_AFFECT_CURRENT, "v2").await,
        show_unit,
    );
    rec.call_detailed(
        "get metadata live",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_LIVE, META_URI).await,
        show_metadata,
    );
    rec.call_detailed(
        "get metadata config while running",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CONFIG, META_URI).await,
        show_metadata,
    );
    rec.call(
        "set metadata live and config",
        Procedure::DomainSetMetadata,
        set_meta(c, dom, DOMAIN_AFFECT_LIVE | DOMAIN_AFFECT_CONFIG, "v3").await,
        show_unit,
    );
    rec.call_detailed(
        "get metadata config after both",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_CONFIG, META_URI).await,
        show_metadata,
    );
    rec.call(
        "remove metadata live",
        Procedure::DomainSetMetadata,
        c.domain_set_metadata(
            running,
            DOMAIN_METADATA_ELEMENT,
            None,
            None,
            Some(META_URI),
            DOMAIN_AFFECT_LIVE,
        )
        .await,
        show_unit,
    );
    rec.call_detailed(
        "get metadata live after removal",
        Procedure::DomainGetMetadata,
        get_meta(c, dom, DOMAIN_AFFECT_LIVE, META_URI).await,
        show_metadata,
    );
}

/// Addresses of the running domain, the refused undefine, and the stop.
async fn stop_first_run(c: &Client, dom: &Domain, running: &Domain, rec: &mut Recorder) {
    rec.call(
        "agent addresses without an agent",
        Procedure::DomainInterfaceAddresses,
        c.domain_interface_addresses(running, DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT, 0)
            .await,
        |v| show_ifaces(v),
    );
    rec.call(
        "lease addresses",
        Procedure::DomainInterfaceAddresses,
        c.domain_interface_addresses(running, DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, 0)
            .await,
        |v| show_ifaces(v),
    );
    rec.call(
        "undefine while running without nvram flag",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(running, 0).await,
        show_unit,
    );
    rec.call(
        "destroy",
        Procedure::DomainDestroy,
        c.domain_destroy(running).await,
        show_unit,
    );
    rec.call(
        "state destroyed",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "info destroyed",
        Procedure::DomainGetInfo,
        c.domain_get_info(dom).await,
        show_info,
    );
    rec.call(
        "destroy again",
        Procedure::DomainDestroy,
        c.domain_destroy(running).await,
        show_unit,
    );
}

/// The second start, through the older procedure, stopped with flags; then
/// undefining without and with the NVRAM flag, and the domain gone.
async fn second_run_and_undefine(c: &Client, names: &RunNames, dom: &Domain, rec: &mut Recorder) {
    let (name, _) = &names.uefi;
    rec.call(
        "start with DomainCreate",
        Procedure::DomainCreate,
        c.domain_create(dom).await,
        show_unit,
    );
    rec.call(
        "state restarted",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "destroy with flags",
        Procedure::DomainDestroyFlags,
        c.domain_destroy_flags(dom, 0).await,
        show_unit,
    );
    rec.call(
        "state after destroy with flags",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "undefine without nvram flag",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(dom, 0).await,
        show_unit,
    );
    rec.call(
        "lookup after refused undefine",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "undefine with nvram flag",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(dom, DOMAIN_UNDEFINE_NVRAM).await,
        show_unit,
    );
    rec.call(
        "lookup undefined",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "state undefined",
        Procedure::DomainGetState,
        c.domain_get_state(dom).await,
        show_state,
    );
    rec.call(
        "undefine undefined",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(dom, DOMAIN_UNDEFINE_NVRAM).await,
        show_unit,
    );
}
