//! Domains beside the UEFI one: one defined and never started, and a transient
//! one.

use super::*;

pub(super) async fn never_started(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("uefi domain never started");
    let (name, uuid) = &names.cold;
    // With a title and a description in the definition itself.
    let xml = uefi_xml(name, uuid).replacen(
        "</uuid>",
        "</uuid>\n  <title>cold title</title>\n  <description>cold description</description>",
        1,
    );
    let Some(dom) = rec.call(
        "define",
        Procedure::DomainDefineXml,
        c.domain_define_xml(&xml).await,
        show_dom,
    ) else {
        return;
    };
    rec.call(
        "title from the definition",
        Procedure::DomainGetMetadata,
        c.domain_get_metadata(&dom, DOMAIN_METADATA_TITLE, None, 0)
            .await,
        |t| t.clone(),
    );
    rec.call(
        "description from the definition",
        Procedure::DomainGetMetadata,
        c.domain_get_metadata(&dom, DOMAIN_METADATA_DESCRIPTION, None, 0)
            .await,
        |t| t.clone(),
    );
    rec.call(
        "xml defined",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(&dom, 0).await,
        show_xml,
    );
    rec.call(
        "undefine without nvram flag",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(&dom, 0).await,
        show_unit,
    );
    rec.call(
        "lookup after undefine",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
}

pub(super) async fn transient(b: &Backend, names: &RunNames, rec: &mut Recorder) {
    let c = &b.client;
    rec.sequence("bios domain made transient");
    let (name, uuid) = &names.transient;
    let Some(dom) = rec.call(
        "define",
        Procedure::DomainDefineXmlFlags,
        c.domain_define_xml_flags(&bios_xml(name, uuid), 0).await,
        show_dom,
    ) else {
        return;
    };
    rec.call(
        "xml defined",
        Procedure::DomainGetXmlDesc,
        c.domain_get_xml_desc(&dom, 0).await,
        show_xml,
    );
    let Some(running) = rec.call(
        "start",
        Procedure::DomainCreateWithFlags,
        c.domain_create_with_flags(&dom, 0).await,
        show_dom,
    ) else {
        return;
    };
    undefine_while_running(c, names, &running, rec).await;
    suspend_and_resume(c, &running, rec).await;
}

/// Undefines the running domain, looks for it, and sets metadata on it now that it is transient.
async fn undefine_while_running(
    c: &Client,
    names: &RunNames,
    running: &Domain,
    rec: &mut Recorder,
) {
    let name = &names.transient.0;
    rec.call(
        "undefine while running",
        Procedure::DomainUndefineFlags,
        c.domain_undefine_flags(running, 0).await,
        show_unit,
    );
    rec.call(
        "state after undefine",
        Procedure::DomainGetState,
        c.domain_get_state(running).await,
        show_state,
    );
    rec.call(
        "lookup after undefine",
        Procedure::DomainLookupByName,
        c.domain_lookup_by_name(name).await,
        show_dom,
    );
    rec.call(
        "list inactive",
        Procedure::ConnectListAllDomains,
        list_ours(c, &names.prefix, CONNECT_LIST_DOMAINS_INACTIVE).await,
        show_doms,
    );
    rec.call(
        "set metadata config on a transient domain",
        Procedure::DomainSetMetadata,
        c.domain_set_metadata(
            running,
            DOMAIN_METADATA_ELEMENT,
            Some(&metadata("t")),
            Some("fid"),
            Some(META_URI),
            DOMAIN_AFFECT_CONFIG,
        )
        .await,
        show_unit,
    );
    rec.call(
        "set metadata current on a transient domain",
        Procedure::DomainSetMetadata,
        c.domain_set_metadata(
            running,
            DOMAIN_METADATA_ELEMENT,
            Some(&metadata("t")),
            Some("fid"),
            Some(META_URI),
            DOMAIN_AFFECT_CURRENT,
        )
        .await,
        show_unit,
    );
}

/// Resumes, suspends (twice) and resumes the transient domain, then asks it to shut down.
async fn suspend_and_resume(c: &Client, running: &Domain, rec: &mut Recorder) {
    rec.call(
        "resume running",
        Procedure::DomainResume,
        c.domain_resume(running).await,
        show_unit,
    );
    rec.call(
        "suspend",
        Procedure::DomainSuspend,
        c.domain_suspend(running).await,
        show_unit,
    );
    rec.call(
        "state suspended",
        Procedure::DomainGetState,
        c.domain_get_state(running).await,
        show_state,
    );
    rec.call(
        "info suspended",
        Procedure::DomainGetInfo,
        c.domain_get_info(running).await,
        show_info,
    );
    rec.call(
        "suspend again",
        Procedure::DomainSuspend,
        c.domain_suspend(running).await,
        show_unit,
    );
    rec.call(
        "state after suspending again",
        Procedure::DomainGetState,
        c.domain_get_state(running).await,
        show_state,
    );
    rec.call(
        "resume",
        Procedure::DomainResume,
        c.domain_resume(running).await,
        show_unit,
    );
    rec.call(
        "state resumed",
        Procedure::DomainGetState,
        c.domain_get_state(running).await,
        show_state,
    );
    // A guest with no operating system ignores the request; the fake's guests
    // shut down at once. Only the call's answer is compared.
    rec.call(
        "shutdown",
        Procedure::DomainShutdownFlags,
        c.domain_shutdown_flags(running, 0).await,
        show_unit,
    );
}
