//! SIGINT and SIGTERM on every long command, sent as a user's Ctrl-C or a `kill` would be, also
//! to a run started in the background (SIGINT ignored by its shell): the run stops between
//! calls, its raw record or report is readable and marked incomplete, and it exits 1.

use laya_bench::record::{self, Record};
use serde_json::Value;

use crate::common::{send_signal, spawn_laya_bench, stderr, stdout, wait_for_text, wait_with_limit};

/// A `speed` run that lasts minutes unless stopped: 20 s blocks of a 1 ms mock call.
const LONG_SPEED: &[&str] = &[
    "speed",
    "--no-progress",
    "--arm",
    "a=mock:ok:delay-us=1000",
    "--arm",
    "b=mock:ok:delay-us=1000",
    "--seconds",
    "20s",
    "--cycles",
    "2",
    "--warmup",
    "3",
    "--raw",
    "r.raw.jsonl",
    "--output",
    "r.json",
];

/// A `trace run` of 30 s of 1 ms mock calls, unless stopped.
const LONG_TRACE: &[&str] = &[
    "trace",
    "run",
    "--arm",
    "a=mock:ok:delay-us=1000",
    "--seconds",
    "30s",
    "--warmup",
    "3",
    "--raw",
    "t.raw.jsonl",
];

/// 67 questions × 2000 repeats on the tiny model: far longer than the tests wait.
const LONG_CONVERT_CHECK: &[&str] = &[
    "convert-check",
    "--source",
    "builtin:tiny",
    "--candidate",
    "portable:f16",
    "--repeats",
    "2000",
    "--output",
    "c.json",
];

/// Start `args` in `d` (as a background job with SIGINT ignored if asked), send `signal` after
/// `after_s` seconds, and wait at most `limit_s` for it to exit 1.
fn signal_after(
    d: &std::path::Path,
    args: &[&str],
    ignore_sigint: bool,
    after_s: u64,
    signal: &str,
    limit_s: u64,
) -> std::process::Output {
    let child = spawn_laya_bench(d, args, ignore_sigint);
    let pid = child.id();
    std::thread::sleep(std::time::Duration::from_secs(after_s));
    assert!(send_signal(signal, pid));
    let o = wait_with_limit(child, limit_s);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    o
}

fn footer(run: &record::RawRun) -> (String, Option<String>) {
    match run.records.last() {
        Some(Record::Footer { status, reason, .. }) => (status.to_string(), reason.clone()),
        other => panic!("no footer: {other:?}"),
    }
}

fn interrupted_speed(signal: &str, ignore_sigint: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = spawn_laya_bench(d, LONG_SPEED, ignore_sigint);
    let pid = child.id();
    assert!(wait_for_text(d, "r.raw.jsonl", "\"record\":\"warmup\"", 60), "the run never warmed up");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t = std::time::Instant::now();
    assert!(send_signal(signal, pid));
    let o = wait_with_limit(child, 10);
    assert!(t.elapsed().as_secs() < 5, "{signal} did not stop the 20 s block promptly");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{signal}: {err}");
    assert!(err.contains("INCOMPLETE"), "{err}");
    let run = record::read(&d.join("r.raw.jsonl")).expect("the raw record stays readable");
    assert!(run.truncated_tail.is_none());
    let (status, reason) = footer(&run);
    assert_eq!(status, "incomplete");
    assert!(reason.unwrap().contains("interrupted by a signal"));
    let block = run.records.iter().find_map(|r| match r {
        Record::Block { ended_early, calls, .. } => Some((*ended_early, *calls)),
        _ => None,
    });
    let (ended_early, calls) = block.expect("the interrupted block is recorded");
    assert!(ended_early && calls > 0, "{calls}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "incomplete");
    assert!(stdout(&o).contains("**INCOMPLETE**"), "{}", stdout(&o));
    // Arm b never ran: its figures are n/a with the reason, never NaN or a made-up zero.
    assert!(!stdout(&o).contains("NaN"), "{}", stdout(&o));
    let b = &report["arms"][1];
    assert_eq!((b["calls"].clone(), b["totals"]["time_per_decision_s"].clone()), (0.into(), Value::Null));
    assert!(b["missing_reason"].as_str().unwrap().contains("made no call"), "{b}");
    assert!(report["arms"][0].get("missing_reason").is_none());
}

#[test]
fn ctrl_c_stops_speed_with_an_incomplete_record_and_a_report() {
    interrupted_speed("-INT", false);
}

#[test]
fn sigterm_stops_speed_with_an_incomplete_record_and_a_report() {
    interrupted_speed("-TERM", false);
}

#[test]
fn sigint_stops_a_background_speed_run_whose_shell_ignored_it() {
    interrupted_speed("-INT", true);
}

/// `speed --no-progress` with `args` in `d`, writing `r.raw.jsonl` and `r.json`, stopped by
/// Ctrl-C once `needle` is in its raw record: its output (exit 1) and its report.
fn speed_stopped_at(d: &std::path::Path, args: &[&str], needle: &str) -> (std::process::Output, Value) {
    let tail = ["--warmup", "3", "--raw", "r.raw.jsonl", "--output", "r.json"];
    let child = spawn_laya_bench(d, &[&["speed", "--no-progress"][..], args, &tail].concat(), false);
    let pid = child.id();
    assert!(wait_for_text(d, "r.raw.jsonl", needle, 60), "the run never wrote {needle}");
    assert!(send_signal("-INT", pid));
    let o = wait_with_limit(child, 10);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    (o, report)
}

/// A `speed` run of 4 cycles stopped in its second: the report's figures are those of its one
/// whole cycle (the blocks of the cut cycle left out, so both arms weigh the same), and the
/// Markdown says so.
#[test]
fn an_interrupted_speed_run_reports_its_whole_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args =
        ["--arm", "a=mock:ok", "--arm", "b=mock:ok:delay-us=200", "--seconds", "300ms", "--cycles", "4"];
    // A block line of cycle 1 (only block lines carry a cycle): cycle 0 is whole.
    let (o, report) = speed_stopped_at(d, &args, "\"cycle\":1");
    assert_eq!((report["status"].as_str(), report["whole_cycles"].as_u64()), (Some("incomplete"), Some(1)));
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    let mut calls = [0u64; 2];
    let mut blocks = 0;
    for r in &run.records {
        if let Record::Block { index, arm, calls: n, .. } = r {
            blocks += 1;
            if *index < 4 {
                calls[usize::from(arm == "b")] += n;
            }
        }
    }
    assert!(blocks > 4, "the cut cycle ran a block: {blocks}");
    assert_eq!(report["arms"][0]["calls"].as_u64(), Some(calls[0]));
    assert_eq!(report["arms"][1]["calls"].as_u64(), Some(calls[1]));
    assert!(
        stdout(&o).contains("the figures below cover its first whole balanced cycle of 4 planned (the blocks of the cut cycle are left out"),
        "{}",
        stdout(&o)
    );
}

/// A `speed` run stopped in its second cycle after arm b's results drifted there: the figures
/// cover the whole first cycle, where every call was stable, but the run is still unstable.
#[test]
fn an_unstable_call_left_out_with_the_cut_cycle_still_makes_the_run_unstable() {
    let dir = tempfile::tempdir().unwrap();
    // b: 8 warm-up calls, then 5 calls a block; its results drift after its 20th call, in
    // block 5 (cycle 1).
    let args = [
        "--arm",
        "a=mock:ok",
        "--arm",
        "b=mock:drift-after=20:delay-us=100000",
        "--calls",
        "5",
        "--cycles",
        "3",
    ];
    let (o, report) = speed_stopped_at(dir.path(), &args, "\"index\":5");
    assert_eq!(report["whole_cycles"].as_u64(), Some(1));
    assert_eq!(report["arms"][1]["unstable_calls"].as_u64(), Some(0), "the whole cycle was stable");
    assert_eq!(report["stable"], false);
    let warning =
        "call(s) of the cut cycle, left out of the figures, did not reproduce their arm's warm-up result";
    assert!(
        report["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains(warning)),
        "{report}"
    );
    assert!(stderr(&o).contains(warning), "{}", stderr(&o));
}

/// A background run (SIGINT ignored by its shell) signalled as soon as it starts, while the
/// model loads or the arms warm up: the handler is installed before loading, so the signal is
/// not lost and the run stops before its first block instead of running its 40 s.
#[test]
fn sigint_at_start_of_a_background_run_stops_it_before_it_measures() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = spawn_laya_bench(d, LONG_SPEED, true);
    let pid = child.id();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(send_signal("-INT", pid));
    let o = wait_with_limit(child, 20);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("INCOMPLETE") && err.contains("interrupted by a signal"), "{err}");
    assert!(err.contains("laya-bench: stopping cleanly"), "the handler says so: {err}");
    let run = record::read(&d.join("r.raw.jsonl")).expect("the raw record stays readable");
    assert_eq!(footer(&run).0, "incomplete");
}

#[test]
fn ctrl_c_stops_trace_run_with_an_incomplete_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = spawn_laya_bench(d, LONG_TRACE, true);
    let pid = child.id();
    assert!(wait_for_text(d, "t.raw.jsonl", "\"record\":\"warmup\"", 60), "the run never warmed up");
    assert!(send_signal("-INT", pid));
    let o = wait_with_limit(child, 10);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("INCOMPLETE"), "{}", stderr(&o));
    let run = record::read(&d.join("t.raw.jsonl")).unwrap();
    assert_eq!(footer(&run).0, "incomplete");
    assert!(run.records.iter().any(|r| matches!(r, Record::Block { ended_early: true, .. })));
}

#[test]
fn ctrl_c_stops_convert_check_with_an_incomplete_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = signal_after(d, LONG_CONVERT_CHECK, true, 3, "-TERM", 20);
    assert!(stderr(&o).contains("INCOMPLETE"), "{}", stderr(&o));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("c.json")).unwrap()).unwrap();
    assert_eq!(report["verdict"], "incomplete");
    assert_eq!(report["passed"], false);
    let asked = report["questions"].as_array().unwrap().len();
    assert!(asked < 67, "{asked} questions: the run was not stopped");
}

#[test]
fn ctrl_c_stops_snake_bench_with_its_report_saved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["snake", "bench", "--rates", "10,20", "--output", "s.json"];
    let child = spawn_laya_bench(d, &args, true);
    let pid = child.id();
    assert!(wait_for_text(d, "s.json", "\"complete\"", 60), "no report saved");
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(send_signal("-INT", pid));
    let o = wait_with_limit(child, 20);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("s.json")).unwrap()).unwrap();
    assert_eq!(report["complete"], false);
}

#[test]
fn sigterm_stops_snake_compare_with_its_report_saved() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "snake",
        "compare",
        "--arm",
        "a=portable:f32",
        "--arm",
        "b=portable:f16",
        "--seeds",
        "101",
        "102",
        "--steps",
        "100000",
        "--output",
        "c.json",
    ];
    let o = signal_after(d, &args, false, 3, "-TERM", 30);
    assert!(stderr(&o).contains("interrupted by a signal"), "{}", stderr(&o));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("c.json")).unwrap()).unwrap();
    assert_eq!(report["passed"], false);
    let failures = report["failures"].to_string();
    assert!(failures.contains("stopped: interrupted by a signal"), "{failures}");
}

/// `timeout -s TERM N CMD` signals CMD and then its whole process group: two SIGTERMs at once.
/// They are one press (issue 49, item 2): the run closes its record and exits 1. `-k 60` ends
/// a regression (a hung or killed run) as a failure instead of a hang.
fn under_timeout(d: &std::path::Path, after_s: u32, args: &[&str]) -> std::process::Output {
    let o = std::process::Command::new("timeout")
        .args(["--preserve-status", "-k", "60", "-s", "TERM", &after_s.to_string()])
        .arg(env!("CARGO_BIN_EXE_laya-bench"))
        .args(args)
        .current_dir(d)
        .output()
        .expect("run timeout");
    assert_eq!(o.status.code(), Some(1), "{:?}: {}", o.status, stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    o
}

#[test]
fn timeout_s_term_ends_speed_and_trace_run_with_a_footer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    under_timeout(d, 3, LONG_SPEED);
    let run = record::read(&d.join("r.raw.jsonl")).expect("the raw record stays readable");
    let (status, reason) = footer(&run);
    assert_eq!(status, "incomplete");
    assert!(reason.unwrap().contains("SIGTERM"));
    assert!(d.join("r.json").exists(), "no report");
    under_timeout(d, 3, LONG_TRACE);
    assert_eq!(footer(&record::read(&d.join("t.raw.jsonl")).unwrap()).0, "incomplete");
}

#[test]
fn timeout_s_term_ends_energy_with_a_footer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "energy",
        "--no-progress",
        "--arm",
        "a=mock:ok:delay-us=1000",
        "--sensor",
        "exec:while true; do echo 42.5; sleep 0.05; done",
        "--sample-interval",
        "100ms",
        "--seconds",
        "20s",
        "--idle-seconds",
        "1s",
        "--idle-discard",
        "100ms",
        "--cycles",
        "2",
        "--warmup",
        "3",
        "--raw",
        "e.raw.jsonl",
        "--output",
        "e.json",
    ];
    under_timeout(d, 4, &args);
    let run = record::read(&d.join("e.raw.jsonl")).expect("the raw record stays readable");
    assert_eq!(footer(&run).0, "incomplete");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("e.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "incomplete");
}

#[test]
fn timeout_s_term_ends_convert_check_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    under_timeout(d, 4, LONG_CONVERT_CHECK);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(d.join("c.json")).unwrap()).unwrap();
    assert_eq!(report["verdict"], "incomplete");
}

/// A `speed` run whose every call takes 3 s, so that stopping takes a while: the call in
/// flight (the tests signal during the first warm-up call) ends before the footer is written.
const SLOW_CALLS: &[&str] = &[
    "speed",
    "--no-progress",
    "--arm",
    "a=mock:ok:delay-us=3000000",
    "--seconds",
    "60s",
    "--cycles",
    "1",
    "--warmup",
    "1",
    "--raw",
    "r.raw.jsonl",
    "--output",
    "r.json",
];

/// Issue 49, item 2: a second press (1.5 s after the first, so not the same one) no longer ends
/// the run at once: the record is still closed with its footer and report, exit 1.
#[test]
fn a_second_ctrl_c_still_closes_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = spawn_laya_bench(d, SLOW_CALLS, false);
    let pid = child.id();
    // Inside the first 3 s warm-up call.
    assert!(wait_for_text(d, "r.raw.jsonl", "\"record\":\"header\"", 60), "the run never started");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(send_signal("-INT", pid));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(send_signal("-INT", pid), "the run had already ended: the test did not test a second press");
    let o = wait_with_limit(child, 30);
    assert_eq!(o.status.code(), Some(1), "{:?}: {}", o.status, stderr(&o));
    assert!(stderr(&o).contains("closing the record now"), "{}", stderr(&o));
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    assert_eq!(footer(&run).0, "incomplete");
    assert!(d.join("r.json").exists());
}

/// A third press ends the process at once by the signal (for a call that never returns); the
/// raw record stays readable up to its last flushed record.
#[test]
fn a_third_ctrl_c_ends_the_run_at_once() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = SLOW_CALLS.to_vec();
    args[3] = "a=mock:ok:delay-us=30000000";
    let child = spawn_laya_bench(d, &args, false);
    let pid = child.id();
    // Inside the first 30 s warm-up call.
    assert!(wait_for_text(d, "r.raw.jsonl", "\"record\":\"header\"", 60), "the run never started");
    std::thread::sleep(std::time::Duration::from_millis(500));
    for _ in 0..3 {
        assert!(send_signal("-INT", pid));
        std::thread::sleep(std::time::Duration::from_millis(1300));
    }
    let o = wait_with_limit(child, 10);
    assert_eq!(o.status.signal(), Some(libc::SIGINT), "{:?}: {}", o.status, stderr(&o));
    let run = record::read(&d.join("r.raw.jsonl")).expect("readable up to its last flushed record");
    assert!(!matches!(run.records.last(), Some(Record::Footer { .. })));
}

/// SIGHUP (the terminal closed) stops a run like SIGTERM (issue 49, item 12).
#[test]
fn sighup_stops_speed_with_an_incomplete_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let child = spawn_laya_bench(d, LONG_SPEED, false);
    let pid = child.id();
    assert!(wait_for_text(d, "r.raw.jsonl", "\"record\":\"call\"", 60), "the run never started");
    assert!(send_signal("-HUP", pid));
    let o = wait_with_limit(child, 20);
    assert_eq!(o.status.code(), Some(1), "{:?}: {}", o.status, stderr(&o));
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    let (status, reason) = footer(&run);
    assert_eq!(status, "incomplete");
    assert!(reason.unwrap().contains("SIGHUP"));
}
