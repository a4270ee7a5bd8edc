//! The fidelity check: the scripted sequences on the fake and on a real
//! libvirtd, compared step by step. Every difference names its sequence,
//! step and procedure, with what each side answered.
//!
//! Without a real host the comparison is skipped with its reason; the fake
//! is then still run twice and compared with itself, which proves the
//! script and its normalisation are deterministic.

use libvirt_fidelity::record::side_by_side;
use libvirt_fidelity::target::{DEFAULT_POOL, announce};
use libvirt_fidelity::{Backend, RunNames, compare, real_or_skip, run_side};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_agrees_with_itself() {
    let names = RunNames::new();
    let a = run_side(&Backend::fake(DEFAULT_POOL).await, &names).await;
    let b = run_side(&Backend::fake(DEFAULT_POOL).await, &names).await;
    assert!(a.cleanup.is_empty(), "clean-up: {:?}", a.cleanup);
    let c = compare(&a.steps, &b.steps);
    assert!(c.agrees() && c.notes.is_empty(), "{c}");
    assert!(c.compared > 100, "only {} steps", c.compared);
    // A few anchors, so a script that records nothing useful cannot pass.
    let find = |label: &str| {
        a.steps
            .iter()
            .find(|s| s.label == label)
            .unwrap_or_else(|| panic!("no step {label}"))
            .outcome
            .to_string()
    };
    assert!(
        find("get metadata config").contains("<instance managed=\"yes\""),
        "{}",
        find("get metadata config")
    );
    assert!(find("read back").contains("as uploaded: true"));
    assert!(find("hypervisor version").contains("at least 1.0.0: true"));
    assert!(find("undefine without nvram flag").contains("VIR_ERR_OPERATION_INVALID"));
    assert!(find("delete with a volume").contains("Directory not empty"));
    assert!(find("list volumes of the redefined pool").contains("-in-pool.img"));
    assert!(find("lookup destroyed").contains("VIR_ERR_NO_STORAGE_POOL"));
    assert!(find("state suspended").contains("VIR_DOMAIN_PAUSED"));
    assert!(find("state resumed").contains("VIR_DOMAIN_RUNNING"));
    // Missing files refuse a start, and the start works once the
    // disk is there.
    for what in ["disk", "backing file", "disk outside the pool"] {
        let start = find(&format!("start with a missing {what}"));
        assert!(start.contains("VIR_FROM_STORAGE"), "{what}: {start}");
        let state = find(&format!("state after the missing {what}"));
        assert!(state.contains("reason=6"), "{what}: {state}");
    }
    assert!(find("start with a missing nvram template").contains("Failed to open file"));
    assert!(find("create overlay of the deleted base").contains("VIR_ERR_SYSTEM_ERROR"));
    assert!(find("start once the disk exists").contains("active"));
    // What virsh's commands ask.
    assert!(find("driver type").contains("QEMU"));
    assert!(find("security model").contains("model=\"none\""));
    assert!(find("taints running").contains("elevated privileges"));
    assert!(find("lookup by key").contains("same-key=true"));
    assert!(find("lookup a missing path").contains("VIR_ERR_NO_STORAGE_VOL"));
    assert!(find("shutdown a missing domain").contains("VIR_ERR_NO_DOMAIN"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_and_real_libvirt_agree() {
    let Some(real) = real_or_skip("fake_and_real_libvirt_agree").await else {
        return;
    };
    let names = RunNames::new();
    let fake = Backend::fake(&real.pool).await;
    let f = run_side(&fake, &names).await;
    let r = run_side(&real, &names).await;
    let c = compare(&f.steps, &r.steps);
    println!("{}", side_by_side(&f.steps, &r.steps));
    announce(&format!(
        "fidelity (prefix {}): {c}real clean-up problems: {:?}",
        names.prefix, r.cleanup
    ));
    assert!(r.cleanup.is_empty(), "real clean-up: {:?}", r.cleanup);
    assert!(f.cleanup.is_empty(), "fake clean-up: {:?}", f.cleanup);
    assert!(c.agrees(), "the fake and the real libvirtd disagree:\n{c}");
}
