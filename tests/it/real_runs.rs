//! The records of runs on real hardware (`docs/runs/`) stay re-derivable: `summary` on each raw
//! record gives the verdict and the figures its committed summary holds. These are the only
//! records in the project read from a real power sensor, so a change that alters how a record
//! is audited or integrated shows here against real samples, not only against scripted ones.

use serde_json::Value;

use crate::common::{fixture, laya_bench, stderr};

fn summarize(raw: &str) -> (Option<i32>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let raw = fixture(raw);
    let o = laya_bench(dir.path(), &["summary", raw.to_str().unwrap(), "--output", "s.json"]);
    let s: Value = serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap_or_else(|e| {
        panic!("summary wrote no report ({e}): {}", stderr(&o));
    }))
    .unwrap();
    (o.status.code(), s)
}

#[test]
fn the_h200_run_is_complete_and_its_figures_are_re_derived() {
    let (code, s) = summarize("docs/runs/2026-12-04-h200/h200.raw.jsonl");
    assert_eq!(code, Some(0));
    let run = &s["runs"][0];
    assert_eq!(run["status"], "complete", "{}", run["status_reasons"]);
    for check in run["audit"].as_array().unwrap() {
        assert_eq!(check["outcome"], "pass", "{check}");
    }
    // Everything but the record's path equals the summary committed beside it, which the GPU
    // machine wrote with the binary that measured.
    let committed: Value =
        serde_json::from_slice(&std::fs::read(fixture("docs/runs/2026-12-04-h200/summary.json")).unwrap())
            .unwrap();
    let theirs = &committed["runs"][0];
    for key in ["arms", "blocks", "cross_check", "samples", "audit", "bootstrap", "claim"] {
        assert_eq!(run[key], theirs[key], "`{key}` differs from docs/runs/2026-12-04-h200/summary.json");
    }
    // Hand-read from the record: block 0 (p32) took 1004.243 J on the counter, 1004.837 J by
    // integrated board power.
    let b0 = &run["cross_check"]["blocks"][0];
    assert!((b0["total_j"].as_f64().unwrap() - 1004.243).abs() < 1e-3, "{b0}");
    assert!((b0["other_j"].as_f64().unwrap() - 1004.837).abs() < 1e-3, "{b0}");
}

#[test]
fn the_h200_first_try_stays_rejected_for_a_counter_read_faster_than_it_refreshed() {
    let (code, s) = summarize("docs/runs/2026-12-04-h200/first-try-rejected/h200-first-try.raw.jsonl");
    assert_eq!(code, Some(1));
    let run = &s["runs"][0];
    assert_eq!(run["status"], "rejected");
    let reasons = run["status_reasons"].to_string();
    assert!(reasons.contains("counter_not_advancing"), "{reasons}");
}
