//! `merge`: the reports of a run's shards (`--shard K/N`), or the fragments the
//! cargo-test harness writes one per test process, folded into the report one run of
//! the whole selection gives. Reports that cannot be parts of one run are refused,
//! naming what differs: catalogue, suite version, provider, profile, seed, options,
//! or rules that two parts both ran or that no part ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{EXIT_ERROR, EXIT_FAILED, EXIT_USAGE};
use crate::rules::CATALOGUE;
use crate::suite::outcome::{EntryStatus, Event, Report, RunInfo, RunSettings, WaiverEntry};
use crate::suite::report::{Format, find_payload, json, write_all};
use crate::suite::runner::selected;

/// The flags of `merge`.
#[derive(Clone, Debug, clap::Args)]
pub struct MergeArgs {
    /// The parts: `report.json` files, or directories whose `*.json` files are all
    /// parts (the fragments of a cargo-test run, `CONFORMANCE_REPORT_DIR/fragments`).
    #[arg(value_name = "REPORT.json|DIR", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Directory for the merged reports.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Report formats to write, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "json,junit,md,html",
        value_name = "FORMAT,..."
    )]
    pub format: Vec<Format>,

    /// Exit 0 on a partial verdict, as a run does.
    #[arg(long, env = "CONFORMANCE_ALLOW_PARTIAL")]
    pub allow_partial: bool,
}

/// What `merge --help` says of the exit codes.
pub const MERGE_EXIT_HELP: &str = "The parts must come from one run split into shards (or \
from one cargo-test run's fragments): the same catalogue, suite version, provider, profile, \
seed and options, and between them every selected rule exactly once. Exit codes: as a run's, \
one per verdict of the merged report (0 pass, 1 fail, 3 error, 4 partial unless \
--allow-partial); 2 when the parts cannot be read or cannot be merged.";

/// The parts named by `inputs`, each with the path it was read from, in the order
/// given (a directory's files sorted by name).
pub fn read_parts(inputs: &[PathBuf]) -> Result<Vec<(PathBuf, Report)>, String> {
    let mut paths = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|e| format!("failed to read the directory {}: {e}", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                .collect();
            if found.is_empty() {
                return Err(format!("{} holds no *.json report", input.display()));
            }
            found.sort();
            paths.extend(found);
        } else {
            paths.push(input.clone());
        }
    }
    paths
        .into_iter()
        .map(|p| json::read(&p).map(|r| (p, r)))
        .collect()
}

/// Folds `parts` into one report, or says why they are not parts of one run.
pub fn merge_reports(parts: &[(PathBuf, Report)]) -> Result<Report, String> {
    let Some((first_path, first)) = parts.first() else {
        return Err("no report to merge".into());
    };
    for (path, part) in &parts[1..] {
        let differs = differences(&first.run, &part.run);
        if !differs.is_empty() {
            return Err(format!(
                "{} and {} are not parts of one run: they differ in {}",
                first_path.display(),
                path.display(),
                differs.join("; ")
            ));
        }
    }
    check_shards(parts)?;
    let mut owner: BTreeMap<&str, &Path> = BTreeMap::new();
    for (path, part) in parts {
        for r in &part.results {
            if let Some(other) = owner.insert(&r.id, path) {
                return Err(format!(
                    "{} is in both {} and {}: the parts overlap",
                    r.id,
                    other.display(),
                    path.display()
                ));
            }
        }
    }
    let missing: Vec<&str> = CATALOGUE
        .iter()
        .filter(|r| selected(r, &first.run.options.rules))
        .map(|r| r.id)
        .filter(|id| !owner.contains_key(id))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no part ran {} of the selected rules: {}",
            missing.len(),
            missing.join(", ")
        ));
    }
    Ok(fold(parts))
}

/// What two parts' run metadata differ in, as `field: A vs B` entries; empty when they
/// can be parts of one run. Run IDs, start times, environments and shards may differ.
fn differences(a: &RunInfo, b: &RunInfo) -> Vec<String> {
    let mut out = Vec::new();
    let mut same = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what} ({x} vs {y})"));
        }
    };
    same(
        "catalogue",
        a.catalogue_hash.clone(),
        b.catalogue_hash.clone(),
    );
    same(
        "suite version",
        format!("{} {:?}", a.suite_version, a.suite_commit),
        format!("{} {:?}", b.suite_version, b.suite_commit),
    );
    same(
        "provider",
        format!(
            "{} {} {:?}",
            a.provider, a.provider_version, a.provider_commit
        ),
        format!(
            "{} {} {:?}",
            b.provider, b.provider_version, b.provider_commit
        ),
    );
    same(
        "profile",
        serde_json::to_string(&a.profile).unwrap_or_default(),
        serde_json::to_string(&b.profile).unwrap_or_default(),
    );
    same("seed", a.seed.to_string(), b.seed.to_string());
    same(
        "backend",
        if a.real_backend { "real" } else { "fake" }.into(),
        if b.real_backend { "real" } else { "fake" }.into(),
    );
    let options = |s: &RunSettings| {
        let mut v = serde_json::to_value(RunSettings {
            shard: None,
            ..s.clone()
        })
        .unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.retain(|_, x| !x.is_null());
        }
        v
    };
    let (oa, ob) = (options(&a.options), options(&b.options));
    if oa != ob {
        let keys: std::collections::BTreeSet<&String> = oa
            .as_object()
            .into_iter()
            .chain(ob.as_object())
            .flat_map(|o| o.keys())
            .collect();
        for k in keys {
            if oa.get(k) != ob.get(k) {
                out.push(format!(
                    "option {k} ({} vs {})",
                    oa.get(k).map_or("unset".into(), |v| v.to_string()),
                    ob.get(k).map_or("unset".into(), |v| v.to_string())
                ));
            }
        }
    }
    out
}

/// Shards of different counts, or one shard given twice, are refused by name.
fn check_shards(parts: &[(PathBuf, Report)]) -> Result<(), String> {
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    let mut count = None;
    for (path, part) in parts {
        let Some(shard) = &part.run.options.shard else {
            continue;
        };
        match count {
            None => count = Some((shard.count, path)),
            Some((n, other)) if n != shard.count => {
                return Err(format!(
                    "{} is a shard of {n} but {} a shard of {}",
                    other.display(),
                    path.display(),
                    shard.count
                ));
            }
            Some(_) => {}
        }
        if let Some(other) = seen.insert(shard.index, path) {
            return Err(format!(
                "shard {} is given twice: {} and {}",
                shard.label(),
                other.display(),
                path.display()
            ));
        }
    }
    if let Some((n, _)) = count {
        let absent: Vec<String> = (1..=n)
            .filter(|k| !seen.contains_key(k))
            .map(|k| format!("{k}/{n}"))
            .collect();
        if !absent.is_empty() {
            return Err(format!("shard(s) {} missing", absent.join(", ")));
        }
    }
    Ok(())
}

/// The parts as one report: the first part's run metadata without a shard, from the
/// earliest start to the latest end, every result, every sweep, and each waiver entry
/// as the part that judged its rule left it.
fn fold(parts: &[(PathBuf, Report)]) -> Report {
    let mut info = parts[0].1.run.clone();
    info.options.shard = None;
    let start = parts
        .iter()
        .map(|(_, p)| p.run.started_at)
        .min()
        .unwrap_or(info.started_at);
    let end = parts
        .iter()
        .map(|(_, p)| p.run.started_at + p.duration)
        .max()
        .unwrap_or(start);
    info.started_at = start;
    let mut events = vec![Event::RunStarted(info)];
    let mut swept = Vec::new();
    let mut stopped = Vec::new();
    for (_, part) in parts {
        events.extend(part.results.iter().cloned().map(Event::CheckFinished));
        swept.extend(part.swept.iter().cloned());
        stopped.extend(part.stopped_early.iter().cloned());
    }
    events.push(Event::RunFinished {
        duration: end.duration_since(start).unwrap_or(Duration::ZERO),
        swept,
    });
    let mut report = Report::from_events(&events).expect("the stream starts with RunStarted");
    report.waivers = merge_waivers(parts);
    report.stopped_early = (!stopped.is_empty()).then(|| stopped.join("; "));
    report.refresh();
    report
}

/// Every part records every entry of the baseline files; the one that counts is the
/// part's that ran the rule (any status but unused), else unused.
fn merge_waivers(parts: &[(PathBuf, Report)]) -> Vec<WaiverEntry> {
    let mut out: Vec<WaiverEntry> = Vec::new();
    for (_, part) in parts {
        for w in &part.waivers {
            let same = |o: &WaiverEntry| {
                o.kind == w.kind
                    && o.rule == w.rule
                    && o.reason == w.reason
                    && o.expires == w.expires
            };
            match out.iter_mut().find(|o| same(o)) {
                None => out.push(w.clone()),
                Some(o) if o.status == EntryStatus::Unused => *o = w.clone(),
                Some(_) => {}
            }
        }
    }
    out
}

/// Copies each rule's log file (`logs/ID.log`) from beside the part that ran it to
/// beside the merged report, so that the report's `log` entries point at files.
fn copy_logs(inputs: &[PathBuf], report: &Report, out: &Path) -> std::io::Result<()> {
    let dirs: Vec<PathBuf> = inputs
        .iter()
        .map(|i| {
            if i.is_dir() {
                i.clone()
            } else {
                i.parent().map(Path::to_path_buf).unwrap_or_default()
            }
        })
        .collect();
    for r in &report.results {
        let name = format!("{}/{}.log", crate::suite::logs::LOG_DIR, r.id);
        if let Some(src) = dirs.iter().map(|d| d.join(&name)).find(|p| p.is_file()) {
            let dst = out.join(&name);
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Reads the parts, merges them, writes the merged report and returns the exit code.
pub fn merge(args: MergeArgs) -> u8 {
    let merged = read_parts(&args.inputs).and_then(|parts| {
        let names: Vec<String> = parts.iter().map(|(p, _)| p.display().to_string()).collect();
        merge_reports(&parts).map(|r| (r, names))
    });
    let (report, names) = match merged {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: failed to merge: {e}");
            return EXIT_USAGE;
        }
    };
    eprintln!("merged {} part(s): {}", names.len(), names.join(", "));
    if let Err(e) = copy_logs(&args.inputs, &report, &args.out) {
        eprintln!("warning: failed to copy the rules' log files: {e}");
    }
    eprint!("{}", super::summary_text(&report));
    let mut code = super::exit_code(&report, args.allow_partial);
    match write_all(&report, &args.out, &args.format) {
        Ok(paths) => {
            for p in &paths {
                eprintln!("wrote {}", p.display());
            }
            if let Some(found) = find_payload(&paths) {
                eprintln!("error: {found} (the suite failed to blank it)");
                code = EXIT_FAILED;
            }
        }
        Err(e) => {
            eprintln!("error: failed to write the reports: {e}");
            if code != EXIT_FAILED {
                code = EXIT_ERROR;
            }
        }
    }
    code
}
