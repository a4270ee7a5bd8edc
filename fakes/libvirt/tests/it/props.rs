//! Property: random sequences of define, start, destroy, undefine and
//! volume operations keep the model's invariants.

use libvirt_fake::{FakeLibvirt, flags};
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
                Just(flags::UNDEFINE_NVRAM),
                Just(flags::UNDEFINE_KEEP_NVRAM)
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
