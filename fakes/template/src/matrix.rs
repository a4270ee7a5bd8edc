//! The covering set of profiles the template runs the suite under: every value of
//! every behaviour-checked axis, and every legal pair of the interacting axes
//! (create-return × provisioning-state, delete-return × secondary-resources,
//! gc-mark × list-partial, gc-mark × created-at). The profile matrix runs the suite
//! under each; the kill matrix's axis coverage table names the rows.

use conformance::Profile;

use crate::TemplateConfig;

/// One profile per row; the pairs of interacting axes are spread over the rows so that
/// each pair of values meets at least once.
pub fn covering_rows() -> Vec<String> {
    let delete = [
        ("waits", "explicit"),
        ("waits", "cascaded"),
        ("waits", "none"),
        ("early", "explicit"),
        ("early", "cascaded"),
        ("early", "none"),
        ("waits", "explicit"),
        ("early", "cascaded"),
    ];
    let marks = [
        ("written-metadata", "written-at-create", "fail-whole"),
        ("written-metadata", "backend-reported", "partial"),
        ("written-metadata", "none", "fail-whole"),
        ("backend-tags", "written-at-create", "partial"),
        ("backend-tags", "backend-reported", "fail-whole"),
        ("backend-tags", "none", "partial"),
        ("name-prefix", "backend-reported", "partial"),
        ("name-prefix", "none", "fail-whole"),
    ];
    let create = [("blocking", "create-blocks"), ("early", "get-reports")];
    let three = |i: usize, v: [&'static str; 3]| v[i % 3];
    let two = |i: usize, v: [&'static str; 2]| v[i % 2];
    (0..delete.len())
        .map(|i| {
            let (dr, sr) = delete[i];
            let (gc, ca, lp) = marks[i];
            let (cr, ps) = create[i % 2];
            [
                format!("create-return={cr}"),
                format!("provisioning-state={ps}"),
                format!("child-spans={}", two(i / 2, ["span-decorator", "none"])),
                format!(
                    "quota={}",
                    three(i, ["detected", "backend-reported", "none"])
                ),
                format!(
                    "credentials={}",
                    three(i + 1, ["mounted-files", "env", "inline"])
                ),
                format!("gc-mark={gc}"),
                format!("created-at={ca}"),
                format!(
                    "ip-source={}",
                    three(i + 2, ["discovered", "allocated", "none"])
                ),
                format!("list-partial={lp}"),
                format!("delete-return={dr}"),
                format!("secondary-resources={sr}"),
                format!("logging={}", two(i / 3 + i, ["tiered", "none"])),
            ]
            .join(",")
        })
        .collect()
}

/// [`covering_rows`] as profiles over [`TemplateConfig::default_profile`].
pub fn covering_profiles() -> Vec<Profile> {
    covering_rows()
        .iter()
        .map(|pairs| {
            TemplateConfig::default_profile()
                .with_pairs(pairs)
                .unwrap_or_else(|e| panic!("covering profile {pairs}: {e}"))
        })
        .collect()
}
