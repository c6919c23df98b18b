//! `laya-bench bounds` as a user runs it: the published figures come out of `--json` (the field
//! names are the contract), the table prints, and every kind of bad input exits 2 saying what to do.

use std::process::{Command, Output};

use serde_json::Value;

fn laya_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench")).args(args).output().expect("run laya-bench")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bounds_json(args: &[&str]) -> Value {
    let mut all = vec!["bounds", "--json"];
    all.extend_from_slice(args);
    let o = laya_bench(&all);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("bounds --json prints one JSON document")
}

fn num(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for key in path.split('.') {
        cur = &cur[key];
    }
    cur.as_f64().unwrap_or_else(|| panic!("{path} is not a number: {cur}"))
}

fn assert_close(v: &Value, path: &str, want: f64, tol: f64) {
    let got = num(v, path);
    assert!((got - want).abs() <= tol, "{path}: got {got}, want {want} ± {tol}");
}

fn assert_exit_2(args: &[&str], needle: &str) {
    let mut all = vec!["bounds"];
    all.extend_from_slice(args);
    let o = laya_bench(&all);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: stderr: {err}");
    assert!(err.contains(needle), "{args:?}: stderr lacks {needle:?}:\n{err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout on failure");
}

#[test]
fn multilingual_reproduces_the_published_figures() {
    let r = bounds_json(&["--baseline-ms", "7.87", "--target", "10"]);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["model"]["source"], "synthetic:multilingual");
    assert_eq!(r["length_tokens"], 96);
    assert_eq!(r["flop_per_decision"]["flop"], 24_574_427_136u64);
    assert_close(&r, "flop_per_decision.gflop", 24.57, 0.01);
    assert_eq!(r["weights_streamed"]["bytes"], 248_905_728u64);
    assert_close(&r, "weights_streamed.mb", 248.9, 0.05);
    assert_eq!(r["hardware"]["profile"], "m3-max");
    assert_eq!(r["hardware"]["bandwidth_gbs"], 400.0);
    assert_close(&r, "floors.bandwidth_ms", 0.622, 0.0005);
    assert_close(&r, "target.required_ms", 0.787, 1e-9);
    assert_close(&r, "target.required_tflops", 31.2, 0.1);
    assert_eq!(r["target"]["below_bandwidth_floor"], false);
}

#[test]
fn english_target_is_below_the_bandwidth_floor() {
    let r =
        bounds_json(&["--model", "synthetic:english", "--baseline-ms", "13.33", "--bandwidth-gbs", "400"]);
    assert_close(&r, "weights_streamed.mb", 736.6, 0.05);
    assert_close(&r, "floors.bandwidth_ms", 1.842, 0.0005);
    assert_close(&r, "target.required_ms", 1.333, 1e-9);
    assert_eq!(r["target"]["below_bandwidth_floor"], true);
    assert_eq!(r["target"]["below_floor"], true);
}

#[test]
fn amdahl_needs_ninety_percent_for_ten_x() {
    let r = bounds_json(&["--fraction", "0.9"]);
    let a = &r["amdahl"];
    assert_close(a, "required_fraction_limit", 0.9, 1e-12);
    let row = a["rows"].as_array().unwrap().iter().find(|row| row["measured"] == true).unwrap();
    assert_close(row, "limit_speedup", 10.0, 1e-9);
    assert_eq!(a["measured_reaches_target"], false);
    assert!(a["measured_required_part_speedup"].is_null());
    assert!(r["target"].is_null());
    assert!(r["target_missing_reason"].as_str().unwrap().contains("--baseline-ms"));
}

#[test]
fn unknown_peak_is_null_with_a_reason_never_zero() {
    let r = bounds_json(&["--profile", "m4-max"]);
    assert!(r["floors"]["compute_ms"].is_null());
    assert!(r["floors"]["compute_missing_reason"].as_str().unwrap().contains("--peak-tflops"));
    assert_eq!(r["floors"]["complete"], false);
    assert!(r["hardware"]["peak_tflops"].is_null());
    let r = bounds_json(&["--profile", "m4-max", "--peak-tflops", "19"]);
    assert!(num(&r, "floors.compute_ms") > 0.0);
}

#[test]
fn custom_hardware_and_palettized_weights() {
    let r = bounds_json(&["--peak-tflops", "10", "--bandwidth-gbs", "100", "--precision", "w8"]);
    assert_eq!(r["hardware"]["profile"], "custom");
    assert_eq!(r["hardware"]["compute"], "f16");
    assert_eq!(r["weights_streamed"]["lut_entries_per_tensor"], 256);
    assert_eq!(r["weights_streamed"]["bytes"], 124_452_864u64 + 96 * 256 * 2);
    assert_close(&r, "floors.compute_ms", 24.574_427_136 / 10.0, 1e-9);
}

#[test]
fn table_prints_the_headline_numbers() {
    let o = laya_bench(&["bounds", "--baseline-ms", "7.87"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    for needle in ["24.574", "248.906 MB", "0.622 ms", "0.787 ms", "31.23 TFLOP/s", "s=inf"] {
        assert!(out.contains(needle), "table lacks {needle:?}:\n{out}");
    }
}

#[test]
fn bad_inputs_exit_2_and_say_what_to_do() {
    assert_exit_2(&["--length", "0"], "--length 96");
    assert_exit_2(&["--target", "0"], "--target-speedup 10");
    assert_exit_2(&["--target", "-2"], "--target-speedup 10");
    assert_exit_2(&["--fraction", "1.5"], "[0, 1]");
    assert_exit_2(&["--fraction", "-0.1"], "[0, 1]");
    assert_exit_2(&["--profile", "m9-ultra"], "use one of m3-max");
    assert_exit_2(&["--precision", "q3"], "use f32, f16");
    assert_exit_2(&["--profile", "zen4-2core"], "--bandwidth-gbs");
    assert_exit_2(&["--baseline-ms", "0"], "--baseline-ms 7.87");
    assert_exit_2(&["--peak-tflops", "nan"], "--peak-tflops 18");
    assert_exit_2(&["--marker-slots", "0"], "at least 1 slot");
    assert_exit_2(&["--model", "synthetic:nope"], "unknown model");
    assert_exit_2(&["--model", "/no/such/checkpoint"], "/no/such/checkpoint: does not exist");
    assert_exit_2(&["--length", "99999999999"], "smaller length");
}

/// `--workload` counts every question row of `speed`'s workload at --length (issue 48, item 4):
/// the invoice workload is one row per decision (the one-row figure), support.json 2 (3 rows
/// and 1 row over its 2 requests); without it the document has no `workload`.
#[test]
fn a_workload_counts_every_row_its_requests_run() {
    let support = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/requests/support.json");
    let r = bounds_json(&["--model", "builtin:tiny", "--workload", support]);
    assert_eq!(r["workload"]["requests"], 2);
    assert_eq!(r["workload"]["rows_per_decision"], 2.0);
    assert_eq!(r["workload"]["length_tokens"], 96);
    assert_eq!(r["flop_per_decision"]["with_scorer_and_action_head_flop"], 60_070_912u64);
    assert_close(&r, "workload.with_scorer_and_action_head_gflop", 0.120_141_824, 1e-12);
    assert_close(&r, "workload.gflop", 2.0 * 0.059_768_832, 1e-12);
    let i = bounds_json(&["--model", "builtin:tiny", "--workload", "invoice"]);
    assert_eq!(i["workload"]["rows_per_decision"], 1.0);
    assert_close(&i, "workload.with_scorer_and_action_head_gflop", 0.060_070_912, 1e-12);
    assert!(bounds_json(&["--model", "builtin:tiny"]).get("workload").is_none());
    assert_exit_2(&["--model", "builtin:tiny", "--tokens", "50"], "--workload");
}
