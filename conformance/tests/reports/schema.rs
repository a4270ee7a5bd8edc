//! The JSON report against its committed schema, and the schema against what
//! the code emits.

use super::*;

pub(super) fn schema() -> Value {
    serde_json::from_str(report::json::SCHEMA).expect("the schema is JSON")
}

/// Validates `instance` against the committed schema; the error lists every failure.
pub(super) fn validate(instance: &Value) -> Result<(), String> {
    let mut compiler = boon::Compiler::new();
    let mut schemas = boon::Schemas::new();
    compiler
        .add_resource("urn:report-schema", schema())
        .map_err(|e| format!("add the schema: {e}"))?;
    let index = compiler
        .compile("urn:report-schema", &mut schemas)
        .map_err(|e| format!("compile the schema: {e:#}"))?;
    schemas
        .validate(instance, index)
        .map_err(|e| format!("{e:#}"))
}

pub(super) fn json_of(report: &Report) -> Value {
    serde_json::from_str(&report::json::render(report)).expect("the report is JSON")
}

#[test]
fn the_sample_report_matches_the_schema() {
    validate(&json_of(&sample())).unwrap();
}

#[test]
fn an_empty_run_matches_the_schema() {
    let events = vec![sample_events().remove(0)];
    validate(&json_of(&Report::from_events(&events).unwrap())).unwrap();
}

#[test]
fn unknown_provenance_matches_the_schema() {
    let mut r = sample();
    r.run.provider_commit = None;
    r.run.suite_commit = None;
    let v = json_of(&r);
    assert_eq!(v["run"]["provider_commit"], Value::Null);
    assert_eq!(v["run"]["suite_commit"], Value::Null);
    validate(&v).unwrap();
}

/// A named way to break a valid report.
type Breakage = (&'static str, Box<dyn Fn(&mut Value)>);

#[test]
fn the_schema_rejects_broken_reports() {
    let good = json_of(&sample());
    let broken: Vec<Breakage> = vec![
        (
            "unknown outcome",
            Box::new(|v| v["results"][0]["outcome"] = "Maybe".into()),
        ),
        (
            "missing field",
            Box::new(|v| {
                v["summary"].as_object_mut().unwrap().remove("fail");
            }),
        ),
        (
            "extra field",
            Box::new(|v| v["run"]["colour"] = "blue".into()),
        ),
        (
            "unknown axis value",
            Box::new(|v| v["run"]["profile"]["quota"] = "lots".into()),
        ),
        (
            "fail without violations",
            Box::new(|v| {
                let fail = v["results"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|r| r["outcome"] == "Fail")
                    .unwrap();
                fail["violations"] = Value::Array(vec![]);
            }),
        ),
        (
            "other version",
            Box::new(|v| v["schema_version"] = "0.9.0".into()),
        ),
        (
            "empty provider commit",
            Box::new(|v| v["run"]["provider_commit"] = "".into()),
        ),
        (
            "negative duration",
            Box::new(|v| v["duration"] = (-1.0).into()),
        ),
    ];
    for (what, breaks) in broken {
        let mut v = good.clone();
        breaks(&mut v);
        assert!(
            validate(&v).is_err(),
            "the schema accepted a report with {what}"
        );
    }
}

fn enum_of(v: &Value) -> Vec<String> {
    v["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("no enum in {v}"))
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_schema_names_what_the_code_emits() {
    let s = schema();
    assert_eq!(
        s["properties"]["schema_version"]["const"],
        REPORT_SCHEMA_VERSION
    );
    assert!(
        s["$id"].as_str().unwrap().ends_with(REPORT_SCHEMA_VERSION),
        "the $id carries the version"
    );
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let defs = &s["$defs"];
    let outcomes: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["outcome"]), outcomes);
    let verdicts: Vec<_> = Verdict::ALL.iter().map(|v| v.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["verdict"]), verdicts);
    let areas: Vec<_> = Area::ALL.iter().map(|a| a.as_str().to_owned()).collect();
    assert_eq!(enum_of(&defs["area"]), areas);
    let hooks: Vec<_> = Hook::ALL
        .iter()
        .map(|h| {
            serde_json::to_value(h)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(enum_of(&defs["hook"]), hooks);
    let axes = defs["profile"]["properties"].as_object().unwrap();
    let keys: Vec<_> = axes.keys().cloned().collect();
    let mut want: Vec<_> = Axis::ALL.iter().map(|a| a.key().to_owned()).collect();
    want.sort();
    assert_eq!(keys, want, "one property per axis");
    for a in Axis::ALL {
        assert_eq!(enum_of(&axes[a.key()]), a.values(), "{}", a.key());
    }
    let required: Vec<_> = defs["profile"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    let want: Vec<_> = Axis::ALL.iter().map(|a| a.key().to_owned()).collect();
    assert_eq!(required, want, "every axis is required, in contract order");
}
