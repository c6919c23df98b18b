//! `laya-bench speed --batch N`: N requests per call in one packed forward, counted as N
//! decisions, every request checked against its warm-up result, the answers equal to
//! `--batch 1`'s, `summary` re-deriving the same figures from the raw record alone, and every
//! arm or workload that cannot batch refused before measuring.

use std::path::Path;
use std::process::Output;

use laya_bench::record::{self, Record};
use serde_json::Value;

use crate::common::{fixture, laya_bench, stderr};

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `speed` of `arms` on builtin:tiny's invoice workload (8 requests) at `--batch batch`:
/// 2 cycles of 2-call blocks, 1 warm-up call, raw `NAME.raw.jsonl`, report `NAME.json`.
fn speed(dir: &Path, name: &str, batch: &str, arms: &[&str]) -> Output {
    let raw = format!("{name}.raw.jsonl");
    let report = format!("{name}.json");
    let mut args = vec!["speed", "--batch", batch, "--calls", "2", "--cycles", "2", "--warmup", "1"];
    for a in arms {
        args.extend(["--arm", a]);
    }
    let csv = format!("{name}.csv");
    args.extend(["--raw", &raw, "--output", &report, "--export-csv", &csv, "--no-progress"]);
    laya_bench(dir, &args)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

#[test]
fn batch_4_counts_four_decisions_per_call_and_answers_as_batch_1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let arms = ["f32=portable:f32", "m=mock:ok"];
    let o = speed(d, "b4", "4", &arms);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("Latency is per batch of 4"), "{}", stderr(&o));
    let report = json(&d.join("b4.json"));
    assert_eq!(report["plan"]["batch"], 4);
    assert_eq!(report["stable"], true);
    for a in report["arms"].as_array().unwrap() {
        let name = a["arm"]["name"].as_str().unwrap();
        // 2 cycles × 2 blocks × 2 calls of 4 requests.
        assert_eq!(a["calls"], 8, "{name}");
        assert_eq!(a["totals"]["decisions"], 32, "{name}");
        assert_eq!(a["latency"]["calls"], 8, "{name}: latency is per call (per batch)");
        let (t, total) =
            (a["totals"]["time_per_decision_s"].as_f64().unwrap(), a["totals"]["time_s"].as_f64().unwrap());
        assert!(close(t, total / 32.0), "{name}: t {t} is not total {total} / 32 decisions");
        assert!(close(a["totals"]["decisions_per_s"].as_f64().unwrap(), 32.0 / total), "{name}");
        assert_eq!(a["unstable_calls"], 0, "{name}");
        assert_eq!(a["unbatched_identical"], true, "{name}");
        assert_eq!(a["max_probability_diff_vs_unbatched"], 0.0, "{name}");
    }
    // The CSV export carries the decisions too (calls × 4).
    let csv = std::fs::read_to_string(d.join("b4.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (calls_col, decisions_col) = (
        header.iter().position(|h| *h == "calls").unwrap(),
        header.iter().position(|h| *h == "decisions").unwrap(),
    );
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!((cells[calls_col], cells[decisions_col]), ("8", "32"), "{line}");
    }
    let run = record::read(&d.join("b4.raw.jsonl")).unwrap();
    assert!(run.complete);
    assert_eq!(run.header.plan.batch, 4);
    let calls: Vec<(u32, Option<u32>, &str, bool)> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Call { state, requests, answer, stable, .. } => {
                Some((*state, *requests, answer.as_str(), *stable))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 16);
    for (state, requests, answer, stable) in &calls {
        assert_eq!(*requests, Some(4));
        assert!(*state == 0 || *state == 4, "calls start at request 0 or 4 of 8, got {state}");
        assert_eq!(answer.split(" | ").count(), 4, "{answer}");
        assert!(stable);
    }
    for r in &run.records {
        if let Record::Warmup { unbatched_identical, .. } = r {
            assert_eq!(*unbatched_identical, Some(true));
        }
    }
    // The same arms one request per call: the same answers, request by request.
    let o = speed(d, "b1", "1", &arms);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let one = json(&d.join("b1.json"));
    assert!(one["plan"].get("batch").is_none(), "batch 1 records stay as they were: {}", one["plan"]);
    for (a, b) in report["arms"].as_array().unwrap().iter().zip(one["arms"].as_array().unwrap()) {
        assert_eq!(a["answers"], b["answers"], "{}", a["arm"]["name"]);
        assert_eq!(b["calls"], b["totals"]["decisions"]);
        assert!(b.get("unbatched_identical").is_none());
    }
    // `summary` derives the same decisions and t from the raw record alone.
    let o = laya_bench(d, &["summary", "b4.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = json(&d.join("s.json"));
    let run = &summary["runs"][0];
    assert_eq!(run["status"], "complete", "{}", run["status_reasons"]);
    for (s, a) in run["arms"].as_array().unwrap().iter().zip(report["arms"].as_array().unwrap()) {
        assert_eq!(s["name"], a["arm"]["name"]);
        assert_eq!(s["totals"]["decisions"], a["totals"]["decisions"]);
        let (ts, ta) = (
            s["totals"]["time_per_decision_s"].as_f64().unwrap(),
            a["totals"]["time_per_decision_s"].as_f64().unwrap(),
        );
        assert!(close(ts, ta), "{}: summary t {ts} != speed t {ta}", s["name"]);
    }
    assert!(run["blocks"].as_array().unwrap().iter().all(|b| b["decisions"] == 8));
}

#[test]
fn requests_sharing_several_questions_pack_into_one_forward() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Three tickets asking support.json's first three questions: 3 rows each, 6 per forward.
    let support = json(&fixture("fixtures/requests/support.json"));
    let q = support[0]["questions"].clone();
    let states =
        ["Charged twice, refund me.", "Where is my parcel? It is late.", "The app crashes on login."];
    let file: Vec<Value> = states.iter().map(|s| serde_json::json!({"state": s, "questions": q})).collect();
    std::fs::write(d.join("three.json"), serde_json::to_string(&file).unwrap()).unwrap();
    let args = [
        "speed",
        "--workload",
        "three.json",
        "--length",
        "256",
        "--arm",
        "f32=portable:f32",
        "--batch",
        "2",
        "--calls",
        "2",
        "--cycles",
        "1",
        "--warmup",
        "1",
        "--output",
        "r.json",
        "--raw",
        "r.raw.jsonl",
        "--no-progress",
    ];
    let o = laya_bench(d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json(&d.join("r.json"));
    let a = &report["arms"][0];
    assert_eq!(a["arm"]["batch"], 2 * q.as_object().unwrap().len());
    assert_eq!((a["calls"].as_u64(), a["totals"]["decisions"].as_u64()), (Some(4), Some(8)));
    assert_eq!(a["unstable_calls"], 0);
    assert_eq!(a["unbatched_identical"], true);
    // 3 requests in calls of 2 cycle: 0-1, 2-0, 1-2, 0-1.
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    let starts: Vec<u32> = run
        .records
        .iter()
        .filter_map(|r| if let Record::Call { state, .. } = r { Some(*state) } else { None })
        .collect();
    assert_eq!(starts, [0, 2, 1, 0]);
}

#[test]
fn every_request_of_a_batch_is_checked_against_its_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    // 8 batched warm-up calls (forwards 1-8), each request alone (9-16); forwards from 19 on
    // drift: calls 1-2 of block 0 are stable, its other 3 and all 5 of block 1 are not.
    let args = [
        "speed",
        "--arm",
        "m=mock:drift-after=18",
        "--batch",
        "2",
        "--calls",
        "5",
        "--cycles",
        "1",
        "--warmup",
        "8",
        "--raw",
        "r.raw.jsonl",
        "--no-progress",
    ];
    let o = laya_bench(dir.path(), &args);
    assert_exit(&o, 1, "unstable");
    let report = json(&dir.path().join("r.json"));
    assert_eq!(report["arms"][0]["unstable_calls"], 8);
    assert_eq!(report["arms"][0]["totals"]["decisions"], 20);
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let unstable: Vec<&str> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Call { stable: false, answer, .. } => Some(answer.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(unstable.len(), 8);
    assert!(unstable.iter().all(|a| a.split(" | ").count() == 2), "{unstable:?}");
}

#[test]
fn what_cannot_batch_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = ["speed", "--calls", "1", "--cycles", "1", "--no-progress", "--arm", "f32=portable:f32"];
    let with = |extra: &[&str]| laya_bench(d, &[&base[..], extra].concat());
    assert_exit(&with(&["--batch", "0"]), 2, "--batch must be at least 1");
    assert_exit(&with(&["--batch", "-1"]), 2, "--batch");
    // A batch far beyond any machine's memory (10^9 rows of 96 tokens) is refused up front,
    // naming one that fits, instead of swapping until the kernel kills the run.
    let o = with(&["--batch", "1000000000"]);
    assert_exit(&o, 2, "--batch 1000000000: one packed forward needs about");
    assert_exit(&o, 2, "GiB available");
    assert_exit(&o, 2, "or less");
    let o = with(&["--batch", "18446744073709551615"]);
    assert_exit(&o, 2, "needs more than 2^64 bytes");
    // So is a cycle count whose schedule alone would not fit (2^32 + 1 aborted on allocation).
    let o = laya_bench(
        d,
        &["speed", "--calls", "1", "--cycles", "4294967297", "--no-progress", "--arm", "f32=portable:f32"],
    );
    assert_exit(&o, 2, "--cycles 4294967297 is more than 100000");
    let reference =
        format!("r=ref:factory:{}:make:ok", fixture("fixtures/reference/fake_runtime.py").display());
    let o = with(&["--batch", "2", "--arm", &reference]);
    assert_exit(&o, 2, "arm `r`");
    assert_exit(&o, 2, "answers one request per call in its worker");
    let support = fixture("fixtures/requests/support.json").display().to_string();
    let o = with(&["--batch", "2", "--workload", &support, "--length", "256"]);
    assert_exit(&o, 2, "--batch 2: request 1 of workload");
    assert_exit(&o, 2, "run this workload with --batch 1");
    // Nothing was measured: no raw record was left behind.
    assert!(std::fs::read_dir(d).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".jsonl")));
}
