//! `laya-bench speed --batch 1,2` and `--threads 1,2`: every value an arm of one balanced run,
//! named after it, its requests per call and threads in the header's arm info, its decisions
//! its calls × its value in the report and in what `summary` re-derives from the raw record;
//! a sweep that cannot run refused before anything is measured; one value as before.

use std::path::Path;
use std::process::Output;

use laya_bench::record::{self, Record};
use serde_json::Value;

use crate::common::{laya_bench, stderr};

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `speed` of `arms` with `extra` flags on builtin:tiny's invoice workload (8 requests):
/// 2 cycles of 3-call blocks, 1 warm-up call, raw `NAME.raw.jsonl`, report `NAME.json`.
fn speed(dir: &Path, name: &str, arms: &[&str], extra: &[&str]) -> Output {
    let (raw, report) = (format!("{name}.raw.jsonl"), format!("{name}.json"));
    let mut args = vec!["speed", "--calls", "3", "--cycles", "2", "--warmup", "1", "--no-progress"];
    for a in arms {
        args.extend(["--arm", a]);
    }
    args.extend(extra);
    args.extend(["--raw", &raw, "--output", &report]);
    laya_bench(dir, &args)
}

fn names(report: &Value) -> Vec<&str> {
    report["arms"].as_array().unwrap().iter().map(|a| a["arm"]["name"].as_str().unwrap()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// `summary` of `raw` exits 0, calls it complete, and derives every arm's decisions and t as
/// the `speed` report has them; returns the summary's run.
fn summary_matches(dir: &Path, raw: &str, report: &Value) -> Value {
    let out = format!("{raw}.summary.json");
    let o = laya_bench(dir, &["summary", raw, "--output", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = json(&dir.join(&out))["runs"][0].clone();
    assert_eq!(run["status"], "complete", "{}", run["status_reasons"]);
    let arms = run["arms"].as_array().unwrap();
    assert_eq!(arms.len(), report["arms"].as_array().unwrap().len());
    for (s, a) in arms.iter().zip(report["arms"].as_array().unwrap()) {
        assert_eq!(s["name"], a["arm"]["name"]);
        assert_eq!(s["totals"]["decisions"], a["totals"]["decisions"], "{}", s["name"]);
        let (ts, ta) = (
            s["totals"]["time_per_decision_s"].as_f64().unwrap(),
            a["totals"]["time_per_decision_s"].as_f64().unwrap(),
        );
        assert!(close(ts, ta), "{}: summary t {ts} != speed t {ta}", s["name"]);
    }
    run
}

#[test]
fn a_batch_list_runs_every_value_as_an_arm_of_one_balanced_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = speed(d, "s", &["a=portable:f32", "m=mock:ok"], &["--batch", "1,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--batch sweep: requests per call by arm: `a-b1` 1, `a-b2` 2"),
        "{}",
        stderr(&o)
    );
    let report = json(&d.join("s.json"));
    assert_eq!(names(&report), ["a-b1", "a-b2", "m-b1", "m-b2"]);
    assert!(report["plan"].get("batch").is_none(), "the plan's batch stays 1: {}", report["plan"]);
    let arms = report["arms"].as_array().unwrap();
    for (a, batch) in arms.iter().zip([1u64, 2, 1, 2]) {
        let name = a["arm"]["name"].as_str().unwrap();
        assert_eq!(a["arm"]["requests_per_call"], batch, "{name}");
        assert!(a["arm"].get("threads").is_none(), "{name}");
        // 2 cycles × 2 blocks × 3 calls of `batch` requests.
        assert_eq!(a["calls"], 12, "{name}");
        assert_eq!(a["totals"]["decisions"], 12 * batch, "{name}");
        let (t, total) =
            (a["totals"]["time_per_decision_s"].as_f64().unwrap(), a["totals"]["time_s"].as_f64().unwrap());
        assert!(close(t, total / (12 * batch) as f64), "{name}: t {t}, total {total}");
        assert_eq!(a["unstable_calls"], 0, "{name}");
        // One model at another batch is another configuration, not the run's noise.
        assert!(a.get("identical_to").is_none(), "{name}: {}", a["identical_to"]);
        // The answers check per arm: a batched arm's answers equal the ones answered alone.
        if batch == 1 {
            assert!(a.get("unbatched_identical").is_none(), "{name}");
        } else {
            assert_eq!(a["unbatched_identical"], true, "{name}");
        }
    }
    assert_eq!(arms[0]["answers"], arms[1]["answers"]);
    assert_eq!(arms[0]["vs_baseline"]["answer_mismatches"], 0);
    assert_eq!(arms[1]["vs_baseline"]["answer_mismatches"], 0);
    // b1 arms are built as a run at batch 1 (one row per forward), b2 arms hold 2 requests.
    assert_eq!(arms[0]["arm"]["batch"], 1);
    assert_eq!(arms[1]["arm"]["batch"], 2);

    let run = record::read(&d.join("s.raw.jsonl")).unwrap();
    assert!(run.complete);
    assert_eq!(run.header.plan.batch, 1);
    let per: Vec<Option<usize>> = run.header.arms.iter().map(|a| a.requests_per_call).collect();
    assert_eq!(per, [Some(1), Some(2), Some(1), Some(2)]);
    // Every arm in every cycle, forwards then backwards.
    assert_eq!(run.header.plan.order[..8], ["a-b1", "a-b2", "m-b1", "m-b2", "m-b2", "m-b1", "a-b2", "a-b1"]);
    let mut calls = 0;
    for r in &run.records {
        if let Record::Call { arm, requests, .. } = r {
            let want = if arm.ends_with("-b2") { Some(2) } else { None };
            assert_eq!(*requests, want, "a call of arm `{arm}`");
            calls += 1;
        }
    }
    assert_eq!(calls, 4 * 12);
    let summary = summary_matches(d, "s.raw.jsonl", &report);
    let blocks = summary["blocks"].as_array().unwrap();
    assert!(blocks
        .iter()
        .all(|b| b["decisions"] == if b["arm"].as_str().unwrap().ends_with("-b2") { 6 } else { 3 }));
    let warnings = summary["warnings"].to_string();
    assert!(warnings.contains("--batch sweep: requests per call by arm"), "{warnings}");
}

#[test]
fn a_threads_list_builds_each_portable_arm_at_every_count() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = speed(d, "t", &["a=portable:f32"], &["--threads", "1,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json(&d.join("t.json"));
    assert_eq!(names(&report), ["a-t1", "a-t2"]);
    let arms = report["arms"].as_array().unwrap();
    for (a, threads) in arms.iter().zip([1, 2]) {
        assert_eq!(a["arm"]["threads"], threads);
        assert!(a["arm"].get("requests_per_call").is_none());
        let device = a["arm"]["device"].as_str().unwrap();
        assert!(device.starts_with(&format!("cpu ({threads} threads")), "{device}");
        assert_eq!(a["totals"]["decisions"], 12);
    }
    assert_eq!(arms[0]["answers"], arms[1]["answers"]);
    let run = record::read(&d.join("t.raw.jsonl")).unwrap();
    let threads: Vec<Option<usize>> = run.header.arms.iter().map(|a| a.threads).collect();
    assert_eq!(threads, [Some(1), Some(2)]);
    summary_matches(d, "t.raw.jsonl", &report);
    // Both lists: the cross product, named after both values.
    let o = speed(d, "bt", &["a=portable:f32"], &["--batch", "1,2", "--threads", "1,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json(&d.join("bt.json"));
    assert_eq!(names(&report), ["a-b1-t1", "a-b1-t2", "a-b2-t1", "a-b2-t2"]);
    summary_matches(d, "bt.raw.jsonl", &report);
}

#[test]
fn one_value_records_as_before_and_a_sweep_that_cannot_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One --batch value: the arm keeps its name, the plan holds the batch, no arm sweep field.
    let o = speed(d, "one", &["a=portable:f32"], &["--batch", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let raw = std::fs::read_to_string(d.join("one.raw.jsonl")).unwrap();
    let header = raw.lines().next().unwrap();
    assert!(!header.contains("requests_per_call") && !header.contains("\"threads\""), "{header}");
    let run = record::read(&d.join("one.raw.jsonl")).unwrap();
    assert_eq!((run.header.plan.batch, run.header.arms[0].name.as_str()), (2, "a"));

    // A baseline record is compared arm by arm: `m-b2` of a sweep answered 2 requests per
    // call, a plain arm named `m-b2` one.
    let o = speed(d, "sweep", &["m=mock:ok"], &["--batch", "1,2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = speed(d, "plain", &["m-b2=mock:ok"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "plain.raw.jsonl", "--baseline-record", "sweep.raw.jsonl"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("differ in `arms[`m-b2`].requests_per_call` (1 here, 2 in the baseline record)"),
        "{}",
        stderr(&o)
    );

    let refused = |name: &str, arms: &[&str], extra: &[&str], needle: &str| {
        let o = speed(d, name, arms, extra);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{name}: stderr lacks {needle:?}:\n{}", stderr(&o));
        assert!(!d.join(format!("{name}.raw.jsonl")).exists(), "{name}: nothing was measured");
    };
    refused(
        "mock",
        &["a=portable:f32", "m=mock:ok"],
        &["--threads", "1,2"],
        "arm `m` (mock:ok) has no thread count",
    );
    refused("twice", &["a=portable:f32"], &["--batch", "1,2,2"], "--batch 1,2,2: the value 2 is given twice");
    refused("zero", &["a=portable:f32"], &["--batch", "1,0"], "--batch must be at least 1");
    refused(
        "many",
        &["a=portable:f32", "b=portable:f16"],
        &["--batch", "1,2,3,4,5,6,7,8,9", "--threads", "1,2"],
        "make 36 arms, more than the 32 a run compares",
    );
}
