//! Issue 49 (files and outputs): a failed write to standard output is an error, not a panic
//! (item 3); special files are never replaced (item 4); two runs never write one record and
//! default names never collide (item 8); a replayed record is never an output (item 9); a raw
//! record whose writes fail stops the run, names the file and says what it holds (item 12).
//! Linux only: the tests use `/dev/full`, `/proc/self/fd` and `ulimit -f` (EFBIG past the limit
//! as a full disk's stand-in).
#![cfg(target_os = "linux")]

use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{laya_bench, spawn_laya_bench, stderr, wait_for_text, wait_with_limit};
use laya_bench::record;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_laya-bench"))
}

/// A quick speed run: one mock arm, one cycle of `calls`-call blocks.
fn speed_args(calls: &str) -> Vec<&str> {
    vec!["speed", "--arm", "a=mock:ok", "--calls", calls, "--cycles", "1", "--no-progress"]
}

/// A meter printing 33.3 W every 50 ms.
const METER: &str = "exec:while true; do echo 33.3; sleep 0.05; done";

/// A short energy run's flags (one cycle of 300 ms blocks).
fn energy_args(raw: &str) -> Vec<&str> {
    vec![
        "energy",
        "--arm",
        "a=mock:ok",
        "--sensor",
        METER,
        "--sample-interval",
        "50ms",
        "--seconds",
        "300ms",
        "--idle-seconds",
        "200ms",
        "--idle-discard",
        "50ms",
        "--cycles",
        "1",
        "--warmup",
        "3",
        "--no-progress",
        "--raw",
        raw,
    ]
}

/// Run `laya-bench ARGS` in `dir` with stdout written to /dev/full; at most 120 s.
fn to_dev_full(dir: &Path, args: &[&str]) -> Output {
    let child = bin()
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::from(File::create("/dev/full").expect("/dev/full")))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn laya-bench");
    wait_with_limit(child, 120)
}

fn assert_stdout_failure(o: &Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {err}");
    assert!(err.contains("cannot write to standard output"), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
}

fn complete(path: &Path) -> bool {
    record::read(path).map(|r| r.complete).unwrap_or(false)
}

#[test]
fn a_failed_write_to_stdout_exits_1_and_the_run_keeps_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // speed: the record is closed and the report written before the table is printed
    let o = to_dev_full(d, &[&speed_args("20")[..], &["--raw", "s.raw.jsonl"]].concat());
    assert_stdout_failure(&o, "speed");
    assert!(complete(&d.join("s.raw.jsonl")), "speed's record has its footer");
    assert!(d.join("s.json").is_file(), "speed's report is written");
    // summary of that record
    let o = to_dev_full(d, &["summary", "s.raw.jsonl", "--output", "sum.json", "--bootstrap", "100"]);
    assert_stdout_failure(&o, "summary");
    assert!(d.join("sum.json").is_file());
    // energy
    let o = to_dev_full(d, &energy_args("e.raw.jsonl"));
    assert_stdout_failure(&o, "energy");
    assert!(complete(&d.join("e.raw.jsonl")), "energy's record has its footer");
    assert!(d.join("e.json").is_file(), "energy's report is written");
    // predict and doctor
    let o = to_dev_full(
        d,
        &[
            "predict",
            "--state",
            "I want my money back.",
            "--questions",
            r#"{"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}"#,
        ],
    );
    assert_stdout_failure(&o, "predict");
    let o = to_dev_full(d, &["doctor"]);
    assert_stdout_failure(&o, "doctor");
    let o = to_dev_full(d, &["doctor", "--json"]);
    assert_stdout_failure(&o, "doctor --json");
}

#[test]
fn a_closed_pipe_still_ends_the_run_quietly_with_its_record_complete() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut child = bin()
        .current_dir(d)
        .args([&speed_args("20")[..], &["--raw", "p.raw.jsonl"]].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = wait_with_limit(child, 120);
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
    assert!(complete(&d.join("p.raw.jsonl")));
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

#[test]
fn special_files_are_never_replaced_even_with_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    std::os::unix::fs::symlink("/dev/null", d.join("null-link")).unwrap();
    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("stdout-link")).unwrap();
    for target in ["fifo", "null-link", "/dev/null", "stdout-link"] {
        for flag in ["--raw", "--output"] {
            for overwrite in [false, true] {
                let mut args = speed_args("5");
                let other = if flag == "--raw" { ["--output", "x.json"] } else { ["--raw", "x.raw.jsonl"] };
                args.extend([flag, target]);
                args.extend(other);
                if overwrite {
                    args.push("--overwrite");
                }
                // a bounded wait: a run that opened the FIFO would block on it
                let child = spawn_laya_bench(d, &args, false);
                let o = wait_with_limit(child, 60);
                let err = stderr(&o);
                assert_eq!(o.status.code(), Some(2), "{target} as {flag} (overwrite {overwrite}): {err}");
                assert!(err.contains(flag) && err.contains(target), "{err}");
                assert!(err.contains("not a regular file") && err.contains("choose another path"), "{err}");
                assert!(!d.join("x.raw.jsonl").exists() && !d.join("x.json").exists(), "nothing measured");
            }
        }
    }
    assert!(std::fs::symlink_metadata(d.join("fifo")).unwrap().file_type().is_fifo());
    for link in ["null-link", "stdout-link"] {
        assert!(std::fs::symlink_metadata(d.join(link)).unwrap().file_type().is_symlink(), "{link}");
    }
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device());
    // summary's outputs too
    let o = laya_bench(d, &[&speed_args("5")[..], &["--raw", "r.raw.jsonl"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "fifo", "--overwrite"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--output") && stderr(&o).contains("(a FIFO)"), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("fifo")).unwrap().file_type().is_fifo());
}

#[test]
fn a_link_to_a_regular_file_is_written_through_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("target.json"), "old").unwrap();
    std::os::unix::fs::symlink("target.json", d.join("link.json")).unwrap();
    let o = laya_bench(
        d,
        &[&speed_args("5")[..], &["--raw", "r.raw.jsonl", "--output", "link.json", "--overwrite"]].concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("link.json")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(d.join("target.json")).unwrap().contains("\"schema_version\""));
}

#[test]
fn a_second_run_on_a_raw_record_in_use_refuses_and_names_the_other_process() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = spawn_laya_bench(
        d,
        &[
            "speed",
            "--arm",
            "a=mock:ok:delay-us=1000",
            "--seconds",
            "1500ms",
            "--cycles",
            "1",
            "--no-progress",
            "--raw",
            "same.raw.jsonl",
        ],
        false,
    );
    let pid = first.id();
    assert!(wait_for_text(d, "same.raw.jsonl", "\"header\"", 60), "the first run started");
    let t = Instant::now();
    let o = laya_bench(d, &[&speed_args("5")[..], &["--raw", "same.raw.jsonl", "--overwrite"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("same.raw.jsonl") && err.contains(&format!("process {pid}")), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30));
    let o = wait_with_limit(first, 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = record::read(&d.join("same.raw.jsonl")).expect("the first run's record is intact");
    assert!(run.complete && run.truncated_tail.is_none());
    assert_eq!(run.header.command_line.iter().filter(|a| a.contains("delay-us")).count(), 1);
}

#[test]
fn two_runs_started_together_take_different_default_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = speed_args("20");
    let runs: Vec<_> = (0..3).map(|_| spawn_laya_bench(d, &args, false)).collect();
    for o in runs.into_iter().map(|c| wait_with_limit(c, 120)) {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let mut raws: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".raw.jsonl"))
        .collect();
    raws.sort();
    assert_eq!(raws.len(), 3, "{raws:?}");
    for r in &raws {
        assert!(complete(&d.join(r)), "{r}");
        assert!(d.join(r.replace(".raw.jsonl", ".json")).is_file(), "{r}'s report");
    }
}

#[test]
fn convert_check_and_trace_run_started_together_keep_every_default_named_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let suite = r#"{"schema_version": 1, "name": "two", "states": {"s": "I was charged twice. Please refund it."},
        "questions": [{"id": "n", "state": "s", "question": {"type": "noul", "instructions": "Refund?"}},
                      {"id": "c", "state": "s", "question": {"type": "choice", "instructions": "Team?", "criteria": ["billing", "shipping"]}}]}"#;
    std::fs::write(d.join("suite.json"), suite).unwrap();
    let check =
        ["convert-check", "--source", "builtin:tiny", "--candidate", "portable:f16", "--suite", "suite.json"];
    let check = [&check[..], &["--repeats", "2"]].concat();
    let trace = ["trace", "run", "--arm", "m=mock:ok", "--seconds", "300ms"];
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(spawn_laya_bench(d, &check, false));
        runs.push(spawn_laya_bench(d, &trace, false));
    }
    for o in runs.into_iter().map(|c| wait_with_limit(c, 120)) {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let names = |prefix: &str, ext: &str| -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix) && n.ends_with(ext))
            .collect();
        n.sort();
        n
    };
    let reports = names("convert-check-", ".json");
    assert_eq!(reports.len(), 3, "{reports:?}");
    for r in &reports {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(r)).unwrap()).expect(r);
        assert_eq!(v["kind"], "convert-check", "{r}");
    }
    let raws = names("trace-run-", ".raw.jsonl");
    assert_eq!(raws.len(), 3, "{raws:?}");
    for r in &raws {
        assert!(complete(&d.join(r)), "{r}");
    }
    // a default-named run refused before it writes leaves nothing behind
    let mut missing = check.clone();
    missing[2] = "missing-model";
    let o = laya_bench(d, &missing);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing-model"), "{}", stderr(&o));
    assert_eq!(names("convert-check-", ".json").len(), 3);
}

#[test]
fn a_run_that_never_starts_leaves_no_default_raw_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // a model that does not load is found after the default names are claimed
    let o = laya_bench(d, &["speed", "--arm", "a=mock:ok", "--calls", "1", "--model", "missing-model"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn a_replayed_record_is_never_the_run_s_own_raw_record() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("R.raw.jsonl"), "recorded\n").unwrap();
    std::os::unix::fs::symlink("R.raw.jsonl", d.join("alias.raw.jsonl")).unwrap();
    for raw in ["R.raw.jsonl", "./R.raw.jsonl", "alias.raw.jsonl"] {
        let mut args = energy_args(raw);
        let at = args.iter().position(|a| *a == METER).unwrap();
        args[at] = "replay:R.raw.jsonl";
        args.push("--overwrite");
        let o = laya_bench(d, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{raw}: {err}");
        assert!(err.contains("--raw") && err.contains("is the input"), "{err}");
        assert_eq!(std::fs::read_to_string(d.join("R.raw.jsonl")).unwrap(), "recorded\n");
    }
}

#[test]
fn a_raw_record_on_a_full_device_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(dir.path(), &[&speed_args("5")[..], &["--raw", "/dev/full", "--overwrite"]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--raw /dev/full"), "{}", stderr(&o));
}

/// `laya-bench ARGS` in `dir` where writes past `blocks` 512-byte blocks fail (EFBIG, a
/// full disk's stand-in: `ulimit -f`, SIGXFSZ ignored); at most 120 s.
fn with_file_limit(dir: &Path, blocks: u32, args: &[&str]) -> (Output, Duration) {
    let script = format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\"");
    let t = Instant::now();
    let child = Command::new("sh")
        .current_dir(dir)
        .args(["-c", &script, env!("CARGO_BIN_EXE_laya-bench")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_with_limit(child, 120);
    (o, t.elapsed())
}

fn assert_cut_record(o: &Output, raw_name: &str, dir: &Path) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(raw_name) && err.contains("File too large"), "{err}");
    assert!(!err.contains("everything measured so far"), "{err}");
    let text = std::fs::read(dir.join(raw_name)).unwrap();
    let note = if text.ends_with(b"\n") { "has no footer" } else { "ends with a cut line" };
    assert!(err.contains(note), "{err}");
    let run = record::read(&dir.join(raw_name)).expect("readable up to its last whole record");
    assert!(!run.complete);
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_full_disk_stops_energy_promptly_and_says_what_the_record_holds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // ~10 s of plan; the limit is reached within about a second
    let mut args = energy_args("r.raw.jsonl");
    for (flag, value) in [("--cycles", "3"), ("--seconds", "1s"), ("--idle-seconds", "500ms")] {
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = value;
    }
    let (o, took) = with_file_limit(d, 16, &args);
    assert_cut_record(&o, "r.raw.jsonl", d);
    assert!(took < Duration::from_secs(6), "stopped after {took:?}, not after the whole plan");
}

#[test]
fn a_full_disk_stops_speed_and_says_what_the_record_holds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["speed", "--arm", "a=mock:ok", "--calls", "200", "--cycles", "3", "--no-progress"];
    let (o, _) = with_file_limit(d, 8, &[&args[..], &["--raw", "r.raw.jsonl"]].concat());
    assert_cut_record(&o, "r.raw.jsonl", d);
}

#[test]
fn a_failed_report_write_names_the_file_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(d, &[&speed_args("20")[..], &["--raw", "r.raw.jsonl"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // the summary's JSON is larger than 1 block
    let (o, _) =
        with_file_limit(d, 1, &["summary", "r.raw.jsonl", "--output", "s.json", "--bootstrap", "100"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write") && err.contains("s.json"), "{err}");
    let names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "only the record and its report: {names:?}");
}
