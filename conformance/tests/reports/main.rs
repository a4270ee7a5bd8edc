//! The reporters over one fixed sample run that has every outcome, violations, a
//! failed property and evidence: a snapshot per format, the JSON checked against
//! the committed schema, the JUnit file read back, the HTML escaped and rendered by
//! headless Chromium, and the CLI end to end.
//!
//! The sample is built with fixed run IDs, times and durations, so the snapshots
//! need no redaction.

#![cfg(feature = "suite")]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use conformance::fixture::{Fixture, Hook, HookError, HookResult, Location, Testbed};
use conformance::profile::Axis;
use conformance::rules::Area;
use conformance::suite::cli;
use conformance::suite::outcome::{
    Event, InjectedFault, NotChecked, Outcome, PropertyFailure, REPORT_SCHEMA_VERSION, Report,
    RuleResult, RunInfo, RunSettings, Verdict, Violation,
};
use conformance::suite::report::{self, Format};
use conformance::{BoxFuture, Profile};
use serde_json::Value;

mod baseline;
mod end_to_end;
mod formats;
mod read_back;
mod runs;
mod sample;
mod schema;
mod shards;
mod stub;
mod verdict;

use end_to_end::*;
use read_back::*;
use sample::*;
use schema::*;
use stub::*;

// ---------------------------------------------------------------------------
// Snapshots. They stay in `tests/snapshots/`, under the names they had when this
// target was one file, hence the path set on each.

#[test]
fn json_snapshot() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("report.json", report::json::render(&sample()));
    });
}

#[test]
fn junit_snapshot() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("junit.xml", report::junit::render(&sample()));
    });
}

#[test]
fn markdown_snapshot() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("report.md", report::markdown::render(&sample()));
    });
}

#[test]
fn html_snapshot() {
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!("report.html", report::html::render(&sample()));
    });
}
