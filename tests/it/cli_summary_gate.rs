//! `laya-bench summary RUN --baseline-record BASE --fail-if-slower PCT`, the regression gate,
//! as CI runs it: a `mock:` arm recorded once as the baseline, then recorded again unchanged
//! (no change detected, exit 0) and with a longer delay per call (slower, exit 1); baselines
//! of another arm or another length are refused (exit 2). The delays (20 ms against 24 ms: the
//! 20 % slowdown of the issue, read against a 10 % threshold) are long enough that a loaded
//! machine's scheduler jitter (well under a millisecond a call) cannot flip a verdict.

use std::path::Path;

use laya_bench::summary::regression::Verdict;
use laya_bench::summary::report::SummaryReport;

use crate::common::{laya_bench, stderr, stdout};

/// A speed run of one arm `NAME=SPEC` into `RAW`: 6 cycles of 4 calls.
fn record(d: &Path, arm: &str, raw: &str, extra: &[&str]) {
    let report = format!("{raw}.json");
    let args = [
        &["speed", "--no-progress", "--arm", arm, "--cycles", "6", "--calls", "4", "--warmup", "1"][..],
        extra,
        &["--raw", raw, "--output", &report],
    ]
    .concat();
    let o = laya_bench(d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

fn gate(d: &Path, run: &str, extra: &[&str]) -> std::process::Output {
    let args = [
        &["summary", run, "--baseline-record", "base.raw.jsonl", "--fail-if-slower", "10"][..],
        &["--bootstrap", "2000", "--seed", "3"],
        extra,
    ]
    .concat();
    laya_bench(d, &args)
}

#[test]
fn a_slower_arm_fails_the_gate_and_an_unchanged_one_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d, "m=mock:ok:delay-us=20000", "base.raw.jsonl", &[]);
    record(d, "m=mock:ok:delay-us=20000", "same.raw.jsonl", &[]);
    record(d, "m=mock:ok:delay-us=24000", "slow.raw.jsonl", &[]);

    let o = gate(d, "same.raw.jsonl", &["--output", "same.json"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("- `m`: no change detected ("), "{}", stdout(&o));
    assert!(stdout(&o).contains("Gate passed"), "{}", stdout(&o));
    let s: SummaryReport =
        serde_json::from_str(&std::fs::read_to_string(d.join("same.json")).unwrap()).unwrap();
    let r = &s.regression[0];
    assert_eq!((r.run.as_str(), r.baseline_record.as_str()), ("same.raw.jsonl", "base.raw.jsonl"));
    assert_eq!((r.arms[0].verdict, r.failed), (Verdict::NoChange, false));

    let o = gate(d, "slow.raw.jsonl", &["--output", "slow.json", "--markdown", "slow.md"]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("- `m`: slower by "), "{out}");
    // Arms are matched by name; a spec that differs is said.
    assert!(
        out.contains(
            "the spec differs (baseline `mock:ok:delay-us=20000`, this run `mock:ok:delay-us=24000`)"
        ),
        "{out}"
    );
    assert!(stderr(&o).contains("slow.raw.jsonl: arm `m` slower by"), "{}", stderr(&o));
    let s: SummaryReport =
        serde_json::from_str(&std::fs::read_to_string(d.join("slow.json")).unwrap()).unwrap();
    let a = &s.regression[0].arms[0];
    assert!(s.regression[0].failed && a.verdict == Verdict::Slower);
    assert!(a.interval_pct.low > 10.0 && a.change_pct > 15.0, "{a:?}");
    assert!(std::fs::read_to_string(d.join("slow.md")).unwrap().contains("**REGRESSION**"));
    // Without --fail-if-slower the comparison is reported, never failed.
    let o = laya_bench(d, &["summary", "slow.raw.jsonl", "--baseline-record", "base.raw.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("slower by") && stdout(&o).contains("reported only"), "{}", stdout(&o));
}

#[test]
fn a_baseline_of_other_arms_or_another_length_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d, "m=mock:ok", "base.raw.jsonl", &[]);
    record(d, "other=mock:ok", "other.raw.jsonl", &[]);
    record(d, "m=mock:ok", "long.raw.jsonl", &["--length", "128"]);
    let o = gate(d, "other.raw.jsonl", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("other.raw.jsonl has no arm of the --baseline-record base.raw.jsonl (its arms: other; the baseline record's: m)"), "{}", stderr(&o));
    let o = gate(d, "long.raw.jsonl", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("differ in `workload.length` (128 here, 96 in the baseline record)"),
        "{}",
        stderr(&o)
    );
    // The baseline record itself, given as the run, compares a record with itself.
    let o = gate(d, "base.raw.jsonl", &[]);
    assert!(o.status.code() == Some(2) && stderr(&o).contains("are the same file"), "{}", stderr(&o));
    // The flags: a threshold below 0, and --fail-if-slower without a baseline record.
    let o = laya_bench(
        d,
        &["summary", "other.raw.jsonl", "--baseline-record", "base.raw.jsonl", "--fail-if-slower", "-5"],
    );
    assert!(
        o.status.code() == Some(2)
            && stderr(&o).contains("--fail-if-slower must be a slowdown of 0 % or more"),
        "{}",
        stderr(&o)
    );
    let o = laya_bench(d, &["summary", "base.raw.jsonl", "--fail-if-slower", "10"]);
    assert!(o.status.code() == Some(2) && stderr(&o).contains("--baseline-record"), "{}", stderr(&o));
}

#[test]
fn a_report_given_instead_of_its_raw_record_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    record(d, "m=mock:ok", "r.raw.jsonl", &[]);
    // `record` wrote the report as `r.raw.jsonl.json`; a report named by the usual stem:
    std::fs::copy(d.join("r.raw.jsonl.json"), d.join("r.json")).unwrap();
    let o = laya_bench(d, &["summary", "r.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("RAW r.json is a report, not a raw record")
            && stderr(&o).contains("r.raw.jsonl exists: give it instead"),
        "{}",
        stderr(&o)
    );
    std::fs::copy(d.join("r.json"), d.join("gone.json")).unwrap();
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--baseline-record", "gone.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--baseline-record gone.json is a report")
            && stderr(&o).contains("gone.raw.jsonl does not exist here"),
        "{}",
        stderr(&o)
    );
}
