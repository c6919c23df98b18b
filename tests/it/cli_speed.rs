//! `laya-bench speed` as a user runs it: the raw record, the report, exports, and every bad
//! input refused before measuring.

use std::process::Output;

use laya_bench::record::{self, Record};
use laya_bench::report::Render;
use serde_json::Value;

use crate::common::{laya_bench, one_cycle_progress_lines, stderr};

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
}

#[test]
fn two_arms_write_raw_report_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &[
            "speed",
            "--arm",
            "base=portable:f32",
            "--arm",
            "mock=mock:ok",
            "--calls",
            "6",
            "--cycles",
            "2",
            "--warmup",
            "3",
            "--raw",
            "r.raw.jsonl",
            "--output",
            "r.json",
            "--export-markdown",
            "r.md",
            "--export-csv",
            "r.csv",
            "--no-progress",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    assert!(run.complete);
    assert_eq!(run.header.arms.len(), 2);
    assert_eq!(run.header.workload.tokens_per_row, vec![vec![91]; 8]);
    assert_eq!(run.header.plan.order, ["base", "mock", "mock", "base", "base", "mock", "mock", "base"]);
    let blocks: Vec<&Record> = run.records.iter().filter(|r| matches!(r, Record::Block { .. })).collect();
    let calls = run.records.iter().filter(|r| matches!(r, Record::Call { .. })).count();
    assert_eq!(blocks.len(), 8);
    assert_eq!(calls, 48);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["arms"][0]["calls"], 24);
    assert_eq!(report["arms"][0]["vs_baseline"]["speed_gain"], 1.0);
    assert_eq!(report["stable"], true);
    // A scripted arm does no arithmetic: no FLOP rate.
    assert!(report["arms"][0]["achieved_gflops"].is_f64() && report["arms"][1]["achieved_gflops"].is_null());
    assert!(std::fs::read_to_string(dir.path().join("r.md")).unwrap().contains("| `base` |"));
    assert_eq!(std::fs::read_to_string(dir.path().join("r.csv")).unwrap().lines().count(), 3);
    // Linux counts stolen CPU time: every block carries it, and each arm's report sums its blocks.
    if cfg!(target_os = "linux") {
        let mut per_arm = std::collections::BTreeMap::<String, (u64, u64)>::new();
        for b in &blocks {
            let Record::Block { arm, host_steal: Some(s), .. } = b else {
                panic!("block without host_steal: {b:?}")
            };
            assert!(s.steal_ticks <= s.cpu_ticks);
            let e = per_arm.entry(arm.clone()).or_default();
            e.0 += s.steal_ticks;
            e.1 += s.cpu_ticks;
        }
        for (i, name) in ["base", "mock"].iter().enumerate() {
            let steal = &report["arms"][i]["host_steal"];
            assert_eq!(steal["steal_ticks"], per_arm[*name].0, "{name}");
            assert_eq!(steal["cpu_ticks"], per_arm[*name].1, "{name}");
        }
    }
}

/// `speed` of one scripted arm: 5 calls, one cycle, 8 warm-up calls, raw file `r.raw.jsonl`.
fn one_scripted_arm(dir: &std::path::Path, arm: &str) -> Output {
    let args = ["speed", "--arm", arm, "--calls", "5", "--cycles", "1", "--warmup", "8"];
    laya_bench(dir, &[&args[..], &["--raw", "r.raw.jsonl", "--no-progress"]].concat())
}

#[test]
fn unstable_results_exit_1_with_everything_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let o = one_scripted_arm(dir.path(), "m=mock:drift-after=12");
    assert_exit(&o, 1, "unstable");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["stable"], false);
    assert_eq!(report["arms"][0]["unstable_calls"], 6);
}

#[test]
fn a_failing_call_exits_1_and_the_raw_file_keeps_the_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let o = one_scripted_arm(dir.path(), "m=mock:fail-after=15");
    assert_exit(&o, 1, "scripted failure");
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let calls = run.records.iter().filter(|r| matches!(r, Record::Call { .. })).count();
    assert_eq!(calls, 7, "8 warm-up calls, 5 in block 0 and 2 in block 1 succeed before call 16 fails");
    assert!(run
        .records
        .iter()
        .any(|r| matches!(r, Record::Error { message, .. } if message.contains("scripted failure"))));
    assert!(matches!(run.records.last(), Some(Record::Footer { status, .. }) if status.as_str() == "failed"));
}

#[test]
fn bad_inputs_exit_2_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_exit(&laya_bench(d, &["speed", "--arm", "a=gpu:x", "--calls", "1"]), 2, "unknown backend `gpu:x`");
    assert_exit(
        &laya_bench(d, &["speed", "--arm", "a=portable:f32", "--arm", "a=mock:ok", "--calls", "1"]),
        2,
        "the name `a` is used twice",
    );
    assert_exit(&laya_bench(d, &["speed", "--arm", "nospec", "--calls", "1"]), 2, "NAME=SPEC");
    assert_exit(
        &laya_bench(d, &["speed", "--tokens", "100", "--length", "96", "--calls", "1"]),
        2,
        "--tokens 100 does not fit --length 96",
    );
    let o = laya_bench(d, &["speed", "--tokens", "20", "--calls", "1"]);
    assert_exit(&o, 2, "even with an empty `note`");
    // the figure it gives fits every state: the workload builds at it, and not one token lower
    let err = stderr(&o);
    let floor: usize = err
        .split("use --tokens ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no figure in: {err}"));
    let below = (floor - 1).to_string();
    assert_exit(
        &laya_bench(d, &["speed", "--tokens", &below, "--calls", "1"]),
        2,
        &format!("use --tokens {floor} or more"),
    );
    let at = floor.to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let o = laya_bench(
        elsewhere.path(),
        &["speed", "--tokens", &at, "--calls", "1", "--cycles", "1", "--warmup", "1", "--arm", "a=mock:ok"],
    );
    assert!(!stderr(&o).contains("even with an empty"), "{}", stderr(&o));
    assert_exit(
        &laya_bench(d, &["speed", "--tokens", "500", "--length", "600", "--calls", "1"]),
        2,
        "--length 600 is longer than the model's max_len 512",
    );
    assert_exit(
        &laya_bench(d, &["speed", "--calls", "1", "--raw", "/nonexistent-dir/r.raw.jsonl"]),
        2,
        "--raw /nonexistent-dir/r.raw.jsonl: the folder /nonexistent-dir does not exist",
    );
    assert_exit(
        &laya_bench(d, &["speed", "--calls", "1", "--export-csv", "/nonexistent-dir/x.csv"]),
        2,
        "--export-csv /nonexistent-dir/x.csv: the folder /nonexistent-dir does not exist",
    );
    // The report must not replace the raw record, nor an export either of them.
    assert_exit(
        &laya_bench(d, &["speed", "--calls", "1", "--raw", "same.json", "--output", "same.json"]),
        2,
        "--raw and --output both name same.json",
    );
    assert_exit(
        &laya_bench(d, &["speed", "--calls", "1", "--raw", "r.raw.jsonl", "--export-markdown", "./r.json"]),
        2,
        "--output and --export-markdown both name ./r.json",
    );
    assert_exit(&laya_bench(d, &["speed", "--seconds", "fast"]), 2, "--seconds `fast`");
    std::fs::write(d.join("taken.raw.jsonl"), "x").unwrap();
    assert_exit(&laya_bench(d, &["speed", "--calls", "1", "--raw", "taken.raw.jsonl"]), 2, "--overwrite");
    // An existing export is a measurement too.
    std::fs::write(d.join("taken.md"), "x").unwrap();
    assert_exit(
        &laya_bench(d, &["speed", "--calls", "1", "--raw", "new.raw.jsonl", "--export-markdown", "taken.md"]),
        2,
        "taken.md exists",
    );
    assert_eq!(std::fs::read_to_string(d.join("taken.md")).unwrap(), "x");
    // Nothing was measured: no raw file appeared for the refused runs.
    let mut files: Vec<_> =
        std::fs::read_dir(d).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    files.sort();
    assert_eq!(files, ["taken.md", "taken.raw.jsonl"], "{files:?}");
}

#[test]
fn a_request_file_workload_runs_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let req = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/requests/support.json");
    let o = laya_bench(
        dir.path(),
        &[
            "speed",
            "--workload",
            req,
            "--length",
            "128",
            "--arm",
            "m=mock:ok",
            "--calls",
            "4",
            "--cycles",
            "1",
            "--raw",
            "r.raw.jsonl",
            "--no-progress",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    assert_eq!(run.header.workload.requests, 2);
    assert_eq!(run.header.workload.target_tokens, None);
}

#[test]
fn a_palettized_arm_that_palettizes_nothing_says_so() {
    // builtin:tiny has no projection matrix above 65,536 elements: portable:w8 is its f32 weights.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args =
        ["speed", "--no-progress", "--arm", "f=portable:f32", "--arm", "w=portable:w8", "--calls", "2"];
    let rest = ["--cycles", "1", "--warmup", "1", "--raw", "r.raw.jsonl", "--export-markdown", "r.md"];
    let o = laya_bench(d, &[&args[..], &rest].concat());
    assert_exit(&o, 0, "note: arm `w` (portable:w8): nothing palettized");
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    assert!(md.contains("1 balanced cycle.") && md.contains("Note on `w`: nothing palettized"), "{md}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert!(report["arms"][0]["arm"].get("notes").is_none());
    assert!(report["arms"][1]["arm"]["notes"][0].as_str().unwrap().contains("runs the f32 weights"));
}

/// A folder nobody can create files in, root included (sysfs refuses new files whatever the
/// permission bits say), so the test holds when it runs as root.
#[cfg(target_os = "linux")]
fn unwritable_folder() -> std::path::PathBuf {
    let dir = std::path::PathBuf::from("/sys");
    assert!(
        std::fs::File::create(dir.join("laya-bench-probe")).is_err(),
        "the test needs a folder that refuses new files"
    );
    dir
}

/// Every output is checked for writing before anything is measured (issue 14, item 4).
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_output_folder_exits_2_before_measuring() {
    let ro = unwritable_folder();
    let dir = tempfile::tempdir().unwrap();
    let report = ro.join("r.json").display().to_string();
    let csv = ro.join("r.csv").display().to_string();
    let md = ro.join("r.md").display().to_string();
    for extra in [
        vec!["--output", report.as_str()],
        vec!["--output", "r.json", "--export-csv", csv.as_str()],
        vec!["--output", "r.json", "--export-markdown", md.as_str()],
    ] {
        let mut args =
            vec!["speed", "--arm", "a=mock:ok", "--calls", "2", "--cycles", "1", "--raw", "r.raw.jsonl"];
        args.extend(extra.iter().copied());
        let o = laya_bench(dir.path(), &args);
        assert_exit(&o, 2, "cannot write in the folder /sys");
        assert!(!dir.path().join("r.raw.jsonl").exists(), "nothing was measured: {extra:?}");
    }
    let raw = ro.join("r.raw.jsonl").display().to_string();
    let o = laya_bench(
        dir.path(),
        &["speed", "--arm", "a=mock:ok", "--calls", "2", "--raw", &raw, "--output", "r.json"],
    );
    assert_exit(&o, 2, "--raw");
}

/// The default arms on builtin:tiny include w8, which palettizes nothing there: it is marked
/// IDENTICAL to f32 in the table and the report (issue 14, item 10); f16 is not.
#[test]
fn an_arm_that_is_the_same_model_as_another_is_marked_identical() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &["speed", "--no-progress", "--calls", "2", "--cycles", "1", "--warmup", "1", "--raw", "r.raw.jsonl"],
    );
    assert_exit(&o, 0, "is IDENTICAL to `f32`");
    let out = crate::common::stdout(&o);
    // The ratio stays (one cycle: no interval), with the mark beside it (issue 48, item 5).
    let row = out.lines().find(|l| l.starts_with("| `w8` |")).unwrap();
    assert!(
        row.contains(
            "× (no interval, no direction claimed) · IDENTICAL to `f32` (same model: the run's noise)"
        ),
        "{row}"
    );
    let row = out.lines().find(|l| l.starts_with("| `f16` |")).unwrap();
    assert!(!row.contains("IDENTICAL"), "{row}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let arms = report["arms"].as_array().unwrap();
    let by = |n: &str| arms.iter().find(|a| a["arm"]["name"] == n).unwrap();
    assert_eq!(by("w8")["identical_to"], "f32");
    assert!(by("f16").get("identical_to").is_none());
    // `summary` of the same record says so too.
    let o = laya_bench(d, &["summary", "r.raw.jsonl"]);
    assert_exit(&o, 0, "");
    let out = crate::common::stdout(&o);
    assert!(out.contains("arm `w8` (portable:w8) is IDENTICAL to `f32`"), "{out}");
    assert!(!out.contains("arm `f16` (portable:f16) is IDENTICAL"), "{out}");
    // …and its table marks the column (issue 48, item 5).
    assert!(out.contains("| `w8` · IDENTICAL to `f32` (same model: the run's noise) |"), "{out}");
    assert!(!out.contains("`f16` · IDENTICAL"), "{out}");
}

/// Issue 48, item 5: a deliberate A/A run (one model twice) shows what it is for, the run's
/// own noise: `b`'s ratio and its interval stay in the table, marked IDENTICAL, and the JSON
/// report and the CSV carry the ratio with `identical_to`.
#[test]
fn an_a_a_run_shows_its_ratio_and_interval_marked_identical() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &[
            "speed",
            "--no-progress",
            "--arm",
            "a=portable:f32",
            "--arm",
            "b=portable:f32",
            "--calls",
            "2",
            "--cycles",
            "2",
            "--warmup",
            "1",
            "--raw",
            "r.raw.jsonl",
            "--export-csv",
            "r.csv",
        ],
    );
    assert_exit(&o, 0, "arm `b` (portable:f32) is IDENTICAL to `a`");
    let out = crate::common::stdout(&o);
    let row = out.lines().find(|l| l.starts_with("| `b` |")).unwrap();
    let mark = " · IDENTICAL to `a` (same model: the run's noise) |";
    let cell = row.split(" | ").find(|c| c.contains("IDENTICAL")).unwrap();
    // `1.01× (no clear difference) [0.98, 1.03] · IDENTICAL to …`: the ratio, its bracket, the mark.
    assert!(row.contains(mark), "{row}");
    let (ratio, rest) = cell.split_once("× ").unwrap_or_else(|| panic!("no ratio in {cell}"));
    assert!(ratio.parse::<f64>().is_ok_and(|r| r > 0.0), "{cell}");
    assert!(rest.contains(" [") && rest.contains(", ") && rest.contains("] · IDENTICAL"), "{cell}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let b = &report["arms"][1];
    assert_eq!(b["identical_to"], "a");
    assert!(b["vs_baseline"]["speed_gain"].as_f64().is_some_and(|r| r > 0.0), "{b}");
    assert!(b["intervals"]["speed_gain"]["low"].as_f64().is_some(), "{b}");
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let b_row: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
    assert_eq!(b_row[col("identical_to")], "a", "{csv}");
    assert!(b_row[col("speed_ratio_vs_baseline")].parse::<f64>().is_ok(), "{csv}");
    assert!(b_row[col("speed_ratio_low")].parse::<f64>().is_ok(), "{csv}");
    // `summary` of the record twice: its CSV names the identical arm on each of `b`'s blocks,
    // and the side-by-side table marks `b` with the runs where it is identical.
    let o = laya_bench(
        d,
        &["summary", "r.raw.jsonl", "r.raw.jsonl", "--allow-same", "--csv", "s.csv", "--markdown", "s.md"],
    );
    assert_exit(&o, 0, "");
    let csv = std::fs::read_to_string(d.join("s.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 16, "2 runs of 2 cycles of 4 blocks: {csv}");
    for r in &rows {
        assert_eq!(r[col("identical_to")], if r[col("arm")] == "b" { "a" } else { "" }, "{csv}");
    }
    let md = std::fs::read_to_string(d.join("s.md")).unwrap();
    let side = &md[md.find("## Runs side by side").unwrap_or_else(|| panic!("{md}"))..];
    assert!(side.contains("| `b` · IDENTICAL to `a` (same model) in runs 0, 1 |"), "{side}");
    assert!(side.lines().filter(|l| l.starts_with("| `a` |")).count() > 0, "{side}");
}

/// The table gives mean ± σ, P50/P95/P99 and each ratio with its 95 % interval and in words
/// (issue 14, item 8). The slow arm sleeps 20 times longer than the fast one, so the interval
/// stays below 1 on a loaded machine too.
#[test]
fn the_speed_table_gives_spread_percentiles_and_ratio_intervals_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &[
            "speed",
            "--no-progress",
            "--arm",
            "fast=mock:ok:delay-us=200",
            "--arm",
            "slow=mock:ok:delay-us=4000",
            "--calls",
            "20",
            "--cycles",
            "3",
            "--warmup",
            "1",
            "--raw",
            "r.raw.jsonl",
        ],
    );
    assert_exit(&o, 0, "");
    let out = crate::common::stdout(&o);
    // 3 cycles give 10 distinct resamples: the bracket is their range, not a 95 % interval,
    // and too few cycles for a claim (issue 48).
    assert!(
        out.contains("Mean ± σ [ms]")
            && out.contains("P95 [ms]")
            && out.contains("vs baseline [resample range]"),
        "{out}"
    );
    assert!(out.contains("it is the range of 10 possible resamples, not a 95 % interval."), "{out}");
    assert!(out.contains("WARNING: only 3 whole balanced cycles") && out.contains("--cycles 10"), "{out}");
    assert!(out.contains("% slower ["), "the slow arm's ratio in words with its interval: {out}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    let slow = &report["arms"][1];
    let (low, high) = (
        slow["intervals"]["speed_gain"]["low"].as_f64().unwrap(),
        slow["intervals"]["speed_gain"]["high"].as_f64().unwrap(),
    );
    let s = slow["vs_baseline"]["speed_gain"].as_f64().unwrap();
    assert!(low <= s && s <= high && high < 1.0, "{low} {s} {high}");
    assert!(slow["latency"]["std_s"].as_f64().unwrap() >= 0.0);
    assert!(slow["latency"]["p90_s"].as_f64().unwrap() >= slow["latency"]["p50_s"].as_f64().unwrap());
    assert!(slow["vs_baseline"]["speed_gain_words"].as_str().unwrap().ends_with("% slower"));
    assert_eq!(slow["vs_baseline"]["speed_gain_direction"], "below");
    // One cycle: no interval, and the reason.
    let o = laya_bench(
        d,
        &[
            "speed",
            "--no-progress",
            "--arm",
            "a=mock:ok",
            "--arm",
            "b=mock:ok",
            "--calls",
            "3",
            "--cycles",
            "1",
            "--raw",
            "q.raw.jsonl",
        ],
    );
    assert_exit(&o, 0, "");
    let out = crate::common::stdout(&o);
    assert!(out.contains("No CI: 1 whole balanced cycle"), "{out}");
    // Without an interval no direction is claimed.
    assert!(out.contains("× (no interval, no direction claimed) |"), "{out}");
}

/// The `vs baseline` cell of arm `name` in a Markdown table.
fn ratio_cell<'a>(table: &'a str, name: &str) -> &'a str {
    let row =
        table.lines().find(|l| l.starts_with(&format!("| `{name}` |"))).unwrap_or_else(|| panic!("{table}"));
    // after the arm, the context's five columns (Model … CPU/GPU) and the spec
    row.split(" | ").nth(13).unwrap()
}

/// Issue 48, item 3: a ratio whose interval contains 1 reads "no clear difference" in every
/// table (terminal, Markdown export, CSV export, JSON), never faster or slower; faster or slower
/// only when the whole interval is on one side. Two arms of the same mock: whatever the
/// machine's noise makes of their ratio, each output agrees with the interval. Then the same
/// report with the ratio and interval of the issue (1.03× [0.93, 1.12]) is rendered again.
#[test]
fn no_table_says_faster_or_slower_when_the_interval_contains_1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &[
            "speed",
            "--no-progress",
            "--arm",
            "a=mock:ok:delay-us=300",
            "--arm",
            "b=mock:ok:delay-us=300",
            "--calls",
            "10",
            "--cycles",
            "3",
            "--warmup",
            "1",
            "--raw",
            "r.raw.jsonl",
            "--export-markdown",
            "r.md",
            "--export-csv",
            "r.csv",
        ],
    );
    assert_exit(&o, 0, "");
    let out = crate::common::stdout(&o);
    let md = std::fs::read_to_string(d.join("r.md")).unwrap();
    let csv = std::fs::read_to_string(d.join("r.csv")).unwrap();
    let text = std::fs::read_to_string(d.join("r.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    let b = &report["arms"][1];
    let (low, high) = (
        b["intervals"]["speed_gain"]["low"].as_f64().unwrap(),
        b["intervals"]["speed_gain"]["high"].as_f64().unwrap(),
    );
    let (words, direction) = match () {
        _ if low > 1.0 => ("faster", "above"),
        _ if high < 1.0 => ("slower", "below"),
        _ => ("(no clear difference)", "no_clear_difference"),
    };
    for table in [&out, &md] {
        let cell = ratio_cell(table, "b");
        assert!(cell.contains(words), "[{low}, {high}] but {cell:?}");
        if direction == "no_clear_difference" {
            assert!(!cell.contains("faster") && !cell.contains("slower"), "{cell:?}");
        }
    }
    assert_eq!(b["vs_baseline"]["speed_gain_direction"], direction);
    assert!(b["vs_baseline"]["speed_gain_words"].as_str().unwrap().contains(words), "{b}");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "speed_ratio_direction").unwrap();
    assert_eq!(csv.lines().nth(2).unwrap().split(',').nth(col), Some(direction), "{csv}");
    // The numbers, rendered by the same report: every table says no clear difference.
    let mut edited = report.clone();
    edited["arms"][1]["vs_baseline"]["speed_gain"] = serde_json::json!(1.03);
    edited["arms"][1]["intervals"]["speed_gain"]["low"] = serde_json::json!(0.93);
    edited["arms"][1]["intervals"]["speed_gain"]["high"] = serde_json::json!(1.12);
    let r: laya_bench::report::speed::SpeedReport = serde_json::from_value(edited).unwrap();
    let md = r.markdown();
    assert_eq!(ratio_cell(&md, "b"), "1.03× (no clear difference) [0.93, 1.12]");
    for line in md.lines().filter(|l| l.starts_with("| `")) {
        assert!(!line.contains("faster") && !line.contains("slower"), "{line}");
    }
    let csv = r.csv().unwrap();
    assert_eq!(csv.lines().nth(2).unwrap().split(',').nth(col), Some("no_clear_difference"), "{csv}");
}

/// No output replaces what the run reads: the report named after the raw record is the workload
/// file here (`wk.raw.jsonl` → `wk.json`), refused even with --overwrite.
#[test]
fn no_output_replaces_the_workload_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wk = d.join("wk.json");
    std::fs::copy(crate::common::fixture("fixtures/requests/support.json"), &wk).unwrap();
    let before = std::fs::read(&wk).unwrap();
    let args =
        ["speed", "--workload", "wk.json", "--raw", "wk.raw.jsonl", "--arm", "a=mock:ok", "--calls", "2"];
    for extra in [&[][..], &["--overwrite"][..]] {
        let o = laya_bench(d, &[&args[..], extra].concat());
        assert_exit(
            &o,
            2,
            "--output wk.json is the input wk.json: an output never replaces what it is made from",
        );
    }
    assert_eq!(std::fs::read(&wk).unwrap(), before);
    assert!(!d.join("wk.raw.jsonl").exists());
    // the model's own files are inputs too; other files beside them are not
    crate::common::copy_tree(&crate::common::fixture("fixtures/tiny"), &d.join("ckpt"));
    let run = |out: &str| {
        let args = ["speed", "--model", "ckpt", "--arm", "a=mock:ok", "--calls", "2", "--cycles", "1"];
        laya_bench(d, &[&args[..], &["--raw", "ckpt/r.raw.jsonl", "--output", out, "--overwrite"]].concat())
    };
    assert_exit(&run("ckpt/rl_agent_config.json"), 2, "is the input");
    std::fs::write(d.join("ckpt/old-report.json"), "{}").unwrap();
    assert_exit(&run("ckpt/old-report.json"), 0, "");
}

/// A negative number given to an option names the option (issue 14, item 12), not
/// "unexpected argument '-1'".
#[test]
fn a_negative_number_names_its_option() {
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in [
        (&["speed", "--cycles", "-1"][..], "--cycles"),
        (&["speed", "--seconds", "-2"][..], "--seconds"),
        // a negative duration with its unit, as users write them
        (&["speed", "--seconds", "-2s"][..], "--seconds"),
        (
            &["energy", "--sample-interval", "-1s", "--arm", "a=mock:ok", "--sensor", "exec:echo 1"][..],
            "--sample-interval",
        ),
        (&["snake", "play", "--headless", "--duration", "-5s"][..], "--seconds"),
        (
            &["energy", "--max-watts", "-5", "--arm", "a=mock:ok", "--sensor", "exec:echo 1"][..],
            "--max-watts",
        ),
    ] {
        let o = laya_bench(dir.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(flag) && !err.contains("unexpected argument"), "{args:?}: {err}");
    }
}

/// Where stderr is not a terminal (a CI log, as here) the progress bar cannot draw, so a plain
/// line follows each block, with its arm and cycle; `--no-progress` silences them too.
#[test]
fn a_log_gets_one_progress_line_per_block() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["speed", "--arm", "a=mock:ok", "--arm", "b=mock:ok", "--calls", "3", "--cycles", "1"];
    let o = laya_bench(dir.path(), &[&args[..], &["--raw", "p.raw.jsonl"]].concat());
    assert_exit(&o, 0, "warm-up done for 2 arm(s); measuring 4 blocks");
    let err = stderr(&o);
    let lines = one_cycle_progress_lines(&err);
    for line in &lines {
        assert!(line.contains(" · cycle 0 · 3 calls in "), "{line}");
    }
    assert!(lines[0].contains("left"), "{}", lines[0]);
    assert!(!lines[3].contains("left"), "{}", lines[3]);
    let o = laya_bench(dir.path(), &[&args[..], &["--raw", "q.raw.jsonl", "--no-progress"]].concat());
    assert_exit(&o, 0, "");
    let err = stderr(&o);
    assert!(!err.contains("block 0 (1 of 4)") && !err.contains("warm-up done"), "{err}");
}

/// The report's warnings are in the Markdown on stdout and again on stderr, so `> report.md`
/// still shows them; where both streams go to one place (a terminal, one log) they appear once.
#[test]
fn warnings_appear_once_where_stdout_and_stderr_are_one_log() {
    let dir = tempfile::tempdir().unwrap();
    let args =
        ["speed", "--no-progress", "--calls", "2", "--cycles", "1", "--warmup", "1", "--raw", "r.raw.jsonl"];
    let identical = "is IDENTICAL to `f32`";
    // separate streams: in both
    let o = laya_bench(dir.path(), &args);
    assert_exit(&o, 0, identical);
    assert!(crate::common::stdout(&o).contains(identical));
    // one log for both: once
    let log = std::fs::File::create(dir.path().join("both.log")).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir.path())
        .args(args)
        .arg("--overwrite")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(dir.path().join("both.log")).unwrap();
    let warning = format!("WARNING: arm `w8` (portable:w8) {identical}");
    assert_eq!(text.matches(&warning).count(), 1, "{text}");
}

/// Issue 48, item 4: the FLOP per decision counts every question row a request runs.
/// support.json's requests run 3 and 1 rows on builtin:tiny, each padded to --length 96 with 32
/// marker slots: 2 rows per decision × 60,070,912 FLOP per row (the arithmetic is in
/// `bench::speed`'s unit test `gflop_per_decision_counts_every_row_a_request_runs`) =
/// 0.120141824 GFLOP, twice the one-row invoice figure; `bounds --workload` says the same.
#[test]
fn gflop_per_decision_counts_the_rows_of_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    let support = crate::common::fixture("fixtures/requests/support.json");
    let support = support.to_str().unwrap();
    let run = |workload: &str, name: &str| -> Value {
        let raw = format!("{name}.raw.jsonl");
        let args = [
            "speed",
            "--workload",
            workload,
            "--arm",
            "base=portable:f32",
            "--calls",
            "2",
            "--cycles",
            "1",
            "--warmup",
            "1",
            "--raw",
            &raw,
            "--no-progress",
        ];
        let o = laya_bench(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(format!("{name}.json"))).unwrap())
            .unwrap()
    };
    let gflop = |r: &Value| r["arms"][0]["gflop_per_decision"].as_f64().unwrap();
    let support_report = run(support, "support");
    assert!((gflop(&support_report) - 0.120_141_824).abs() < 1e-12, "{support_report}");
    let invoice_report = run("invoice", "invoice");
    assert!((gflop(&invoice_report) - 0.060_070_912).abs() < 1e-12, "{invoice_report}");
    let o = laya_bench(dir.path(), &["bounds", "--model", "builtin:tiny", "--workload", support, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let b: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(b["workload"]["rows_per_decision"], 2.0);
    assert_eq!(b["workload"]["with_scorer_and_action_head_gflop"].as_f64(), Some(gflop(&support_report)));
    assert!((b["workload"]["gflop"].as_f64().unwrap() - 0.119_537_664).abs() < 1e-12, "{b}");
}

/// `--quiet` (issue 51, item 3): no progress, notes or tables; only the paths of the files
/// written on stdout, nothing on stderr, the exit code unchanged. The same run without it
/// prints the table; `--quiet` on a command that does not take it is refused (exit 2).
#[test]
fn quiet_prints_only_the_paths_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = ["speed", "--arm", "a=mock:ok", "--calls", "3", "--cycles", "1", "--warmup", "1"];
    let o = laya_bench(d, &[&run[..], &["-q", "--raw", "q.raw.jsonl", "--output", "q.json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "raw record: q.raw.jsonl\nreport: q.json\n");
    assert_eq!(stderr(&o), "", "nothing but errors on stderr");
    assert!(d.join("q.raw.jsonl").is_file() && d.join("q.json").is_file());
    let o = laya_bench(d, &[&run[..], &["--raw", "l.raw.jsonl", "--output", "l.json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("| Arm | Model |"),
        "the plain table without --quiet"
    );
    assert!(!stderr(&o).is_empty(), "the plan and progress without --quiet");
    // a failing run keeps its exit code and says why on stderr
    let o = laya_bench(d, &["speed", "--quiet", "--arm", "a=gpu:x", "--calls", "1"]);
    assert_exit(&o, 2, "unknown backend `gpu:x`");
    assert_exit(&laya_bench(d, &["doctor", "-q"]), 2, "--quiet applies to speed and energy only");
}
