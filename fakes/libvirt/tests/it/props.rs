//! Property: random sequences of define, start, destroy, undefine and
//! volume operations keep the model's invariants.

use libvirt_fake::FakeLibvirt;
use libvirt_wire::{
    DOMAIN_METADATA_ELEMENT, DOMAIN_UNDEFINE_KEEP_NVRAM, DOMAIN_UNDEFINE_NVRAM, DOMAIN_XML_INACTIVE,
};
use proptest::prelude::*;

use crate::common::{bios_xml, open, uefi_xml};

#[derive(Debug, Clone)]
enum Op {
    Define(u8, bool),
    Start(u8),
    Destroy(u8),
    Undefine(u8, u32),
    Stop(u8),
    CreateVol(u8, u32),
    DeleteVol(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let n = 0u8..4;
    prop_oneof![
        (n.clone(), any::<bool>()).prop_map(|(n, u)| Op::Define(n, u)),
        n.clone().prop_map(Op::Start),
        n.clone().prop_map(Op::Destroy),
        (
            n.clone(),
            prop_oneof![
                Just(0u32),
                Just(DOMAIN_UNDEFINE_NVRAM),
                Just(DOMAIN_UNDEFINE_KEEP_NVRAM)
            ]
        )
            .prop_map(|(n, f)| Op::Undefine(n, f)),
        n.clone().prop_map(Op::Stop),
        (n.clone(), 0u32..5000).prop_map(|(n, s)| Op::CreateVol(n, s)),
        n.prop_map(Op::DeleteVol),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_sequences_keep_invariants(ops in proptest::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let fake = FakeLibvirt::new();
            fake.add_pool("p", "/pool", 10_000);
            let c = open(&fake).await;
            let pool = c.storage_pool_lookup_by_name("p").await.unwrap();
            for op in ops {
                let name = |n: u8| format!("vm{n}");
                match op {
                    Op::Define(n, uefi) => {
                        let xml = if uefi { uefi_xml(&name(n)) } else { bios_xml(&name(n)) };
                        let _ = c.domain_define_xml(&xml).await;
                    }
                    Op::Start(n) => {
                        if let Ok(d) = c.domain_lookup_by_name(&name(n)).await {
                            let _ = c.domain_create(&d).await;
                        }
                    }
                    Op::Destroy(n) => {
                        if let Ok(d) = c.domain_lookup_by_name(&name(n)).await {
                            let _ = c.domain_destroy(&d).await;
                        }
                    }
                    Op::Undefine(n, f) => {
                        if let Ok(d) = c.domain_lookup_by_name(&name(n)).await {
                            let _ = c.domain_undefine_flags(&d, f).await;
                        }
                    }
                    Op::Stop(n) => {
                        let _ = fake.stop(&name(n));
                    }
                    Op::CreateVol(n, size) => {
                        let xml = format!("<volume><name>v{n}</name><capacity>{size}</capacity></volume>");
                        let _ = c.storage_vol_create_xml(&pool, &xml, 0).await;
                    }
                    Op::DeleteVol(n) => {
                        if let Ok(v) = c.storage_vol_lookup_by_name(&pool, &format!("v{n}")).await {
                            let _ = c.storage_vol_delete(&v, 0).await;
                        }
                    }
                }
                prop_assert!(fake.check_invariants().is_ok(), "{:?}", fake.check_invariants());
                let info = fake.pool_info("p").unwrap();
                prop_assert!(info.allocation <= 10_000);
                prop_assert_eq!(info.available, 10_000 - info.allocation);
                for d in c.list_all_domains(0).await.unwrap() {
                    let running = fake.domain(&d.name).unwrap().state.is_active();
                    prop_assert_eq!(d.id >= 1, running);
                    prop_assert_eq!(d.id == -1, !running);
                }
            }
            Ok(())
        })?;
    }
}

/// A random metadata element: nested elements with attributes whose values
/// need escaping.
fn element() -> impl Strategy<Value = String> {
    let name = "[a-z][a-z0-9]{0,6}";
    let value = "[ -~]{0,12}";
    let leaf = (name, proptest::collection::vec((name, value), 0..3)).prop_map(|(n, attrs)| {
        let mut seen = std::collections::BTreeSet::new();
        let attrs: String = attrs
            .into_iter()
            .filter(|(k, _)| seen.insert(k.clone()))
            .map(|(k, v)| {
                let v = v
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('"', "&quot;");
                format!(" {k}=\"{v}\"")
            })
            .collect();
        format!("<{n}{attrs}/>")
    });
    leaf.prop_recursive(3, 12, 4, |inner| {
        ("[a-z][a-z0-9]{0,6}", proptest::collection::vec(inner, 0..4))
            .prop_map(|(n, kids)| format!("<{n}>{}</{n}>", kids.concat()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn metadata_round_trips_through_set_get_and_redefine(m in element()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let fake = FakeLibvirt::new();
            let c = open(&fake).await;
            let d = c.domain_define_xml(&bios_xml("p")).await.unwrap();
            let ns = crate::common::NS;
            let el = DOMAIN_METADATA_ELEMENT;
            c.domain_set_metadata(&d, el, Some(&m), Some("k"), Some(ns), 0).await.unwrap();
            let got = c.domain_get_metadata(&d, el, Some(ns), 0).await.unwrap();
            // Setting what a get returned changes nothing.
            c.domain_set_metadata(&d, el, Some(&got), Some("k"), Some(ns), 0).await.unwrap();
            prop_assert_eq!(&c.domain_get_metadata(&d, el, Some(ns), 0).await.unwrap(), &got);
            // A redefinition from the described XML keeps it.
            let xml = c.domain_get_xml_desc(&d, DOMAIN_XML_INACTIVE).await.unwrap();
            c.domain_define_xml(&xml).await.unwrap();
            prop_assert_eq!(&c.domain_get_metadata(&d, el, Some(ns), 0).await.unwrap(), &got);
            Ok(())
        })?;
    }
}
