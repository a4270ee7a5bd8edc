//! `docs/provider-contract.md` is generated from the catalogue; this test fails when
//! it is stale. `UPDATE_DOCS=1` rewrites it.

use std::path::PathBuf;

#[test]
fn provider_contract_doc_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/provider-contract.md");
    let want = conformance::contract_doc::render();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/provider-contract.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/provider-contract.md is stale; run `UPDATE_DOCS=1 cargo test -p conformance --test docs`"
    );
}
