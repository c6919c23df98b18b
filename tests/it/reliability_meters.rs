//! Issue 49 (reliability 2): `exec:` meters that misbehave, run through `laya-bench energy` as
//! a user runs it: a meter printing as fast as it can (`yes 30.5`), one that never prints a
//! newline, one whose background child keeps its stdout open after it exits, one printing a
//! decimal comma, and meters whose path has spaces or follows `VAR=value` words.
//!
//! Every wait is bounded: a run that hangs or grows past the memory bound is killed and the
//! test fails. The raw record is read as plain JSON lines.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{send_signal, stderr};

/// Short-run defaults as (flag, value); a test's own flags replace these.
const FAST: &[(&str, &str)] = &[
    ("--sample-interval", "50ms"),
    ("--seconds", "300ms"),
    ("--idle-seconds", "200ms"),
    ("--idle-discard", "50ms"),
    ("--cycles", "1"),
    ("--warmup", "3"),
    ("--raw", "r.raw.jsonl"),
    ("--output", "r.json"),
];

/// The most a run may hold in memory (peak resident set) whatever its meter prints. The
/// unbounded reader reached 0.58 GB in 2 s with `yes`; a bounded run stays near 40 MB.
const RSS_LIMIT_KB: u64 = 300 * 1024;

/// `energy` with the arms, the sensor, the short-run defaults and `extra` flags (which win).
fn energy_command(dir: &Path, arms: &[&str], sensor: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_laya-bench"));
    c.current_dir(dir).args(["energy", "--no-progress", "--sensor", sensor]);
    for a in arms {
        c.args(["--arm", a]);
    }
    for (flag, value) in FAST {
        if !extra.contains(flag) {
            c.args([flag, value]);
        }
    }
    c.args(extra);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Peak resident set of a running process, kB (`VmHWM`); `None` once it is gone.
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Wait for `child` to end within `seconds`, watching its peak memory; kill it and fail when
/// it passes [`RSS_LIMIT_KB`] or the time. Its output and the highest peak seen.
fn wait_bounded(mut child: Child, seconds: u64) -> (Output, u64) {
    let t = Instant::now();
    let mut peak = 0;
    loop {
        if let Some(kb) = peak_rss_kb(child.id()) {
            peak = peak.max(kb);
        }
        if child.try_wait().expect("try_wait").is_some() {
            return (child.wait_with_output().expect("output"), peak);
        }
        let over = peak > RSS_LIMIT_KB;
        if over || t.elapsed() > Duration::from_secs(seconds) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "laya-bench {} (peak RSS {} MB after {:.1} s); stderr: {}",
                if over { "grew past the memory bound" } else { "did not end in time" },
                peak / 1024,
                t.elapsed().as_secs_f64(),
                stderr(&o)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The raw record's lines as JSON.
fn raw_records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("r.raw.jsonl")).expect("raw file written");
    text.lines().map(|l| serde_json::from_str(l).expect("raw line is JSON")).collect()
}

fn record<'a>(records: &'a [Value], kind: &str) -> Option<&'a Value> {
    records.iter().find(|r| r["record"] == kind)
}

/// The footer's status and its rejections as text.
fn footer(records: &[Value]) -> (String, String) {
    let f = records.last().filter(|r| r["record"] == "footer").expect("the raw record ends with a footer");
    (f["status"].as_str().unwrap_or_default().to_string(), f["rejections"].to_string())
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Processes of a process group that are still running (zombies not counted). Linux `/proc`.
fn live_members(group: i64) -> Vec<i64> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i64 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            let mut f = rest.split_whitespace();
            let state = f.next()?;
            let pgrp: i64 = f.nth(1)?.parse().ok()?;
            (pgrp == group && state != "Z" && state != "X").then_some(pid)
        })
        .collect()
}

/// The meter's process group, from the sensor notes in the header.
fn meter_group(records: &[Value]) -> i64 {
    let notes = records[0]["sensor"]["notes"].as_array().expect("sensor notes");
    let note = notes.iter().filter_map(Value::as_str).find(|n| n.contains("process group")).unwrap();
    note.split("process group ").nth(1).unwrap().split(';').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_meter_printing_as_fast_as_it_can_runs_in_bounded_memory_and_counts_what_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let child = energy_command(
        dir.path(),
        &["a=mock:ok", "b=mock:ok"],
        "exec:yes 30.5",
        &["--seconds", "1s", "--idle-seconds", "500ms", "--idle-discard", "100ms"],
    )
    .spawn()
    .unwrap();
    let (o, peak) = wait_bounded(child, 120);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(peak < RSS_LIMIT_KB, "peak {peak} kB");
    let records = raw_records(dir.path());
    assert_eq!(footer(&records).0, "complete");
    let sampler = record(&records, "sampler").expect("sampler record");
    let skipped = sampler["skipped"]["readings"].as_u64().expect("skipped readings recorded");
    let sent = sampler["samples_sent"].as_u64().unwrap();
    let wall_ms = sampler["wall_ns"].as_u64().unwrap() / 1_000_000;
    assert!(skipped > sent, "skipped {skipped}, sent {sent}");
    assert!(sent <= wall_ms + 1, "at most one sample a millisecond: {sent} in {wall_ms} ms");
    assert_eq!(sampler["skipped"]["faults"].as_u64(), Some(0));
    // Every sample kept is a reading of what the meter printed; nothing else.
    let samples: Vec<&Value> = records.iter().filter(|r| r["record"] == "sample").collect();
    assert_eq!(samples.len() as u64, sent);
    assert!(samples.iter().all(|s| s["outcome"]["reading"]["raw"] == "30.5"), "a sample is not `30.5`");
}

#[test]
fn ctrl_c_stops_a_run_whose_meter_prints_as_fast_as_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let child =
        energy_command(dir.path(), &["a=mock:ok"], "exec:yes 30.5", &["--seconds", "20s", "--cycles", "2"])
            .spawn()
            .unwrap();
    let pid = child.id();
    // Into the first block (or, for a run that never gets there, give up waiting after 30 s
    // and interrupt it anyway).
    crate::common::wait_for_text(dir.path(), "r.raw.jsonl", "\"record\":\"idle\"", 30);
    let t = Instant::now();
    assert!(send_signal("-INT", pid));
    let (o, peak) = wait_bounded(child, 30);
    let stopped_after = t.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stopped_after < Duration::from_secs(20), "stopped {stopped_after:?} after SIGINT");
    assert!(peak < RSS_LIMIT_KB, "peak {peak} kB");
    let records = raw_records(dir.path());
    assert_eq!(footer(&records).0, "incomplete");
    let sampler = record(&records, "sampler").expect("sampler record");
    assert!(sampler["skipped"]["readings"].as_u64().unwrap() > 0, "{sampler}");
}

#[test]
fn a_meter_that_never_prints_a_newline_is_rejected_naming_the_over_long_line() {
    let dir = tempfile::tempdir().unwrap();
    // A second of good lines, then bytes without end and without a newline.
    let meter =
        "exec:i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo 30.5; sleep 0.05; done; tr '\\0' x < /dev/zero";
    let child = energy_command(
        dir.path(),
        &["a=mock:ok"],
        meter,
        &["--seconds", "1s", "--idle-seconds", "500ms", "--idle-discard", "100ms"],
    )
    .spawn()
    .unwrap();
    let (o, peak) = wait_bounded(child, 120);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(peak < RSS_LIMIT_KB, "peak {peak} kB");
    let records = raw_records(dir.path());
    let (status, rejections) = footer(&records);
    assert_eq!(status, "rejected");
    assert!(rejections.contains("missing_reading"), "{rejections}");
    assert!(rejections.contains("longer than 4096 bytes"), "{rejections}");
    assert!(rejections.contains(&"x".repeat(120)), "the fault keeps the line's first bytes: {rejections}");
    // The fault is in the raw record as a sample, never a value.
    let fault = records
        .iter()
        .filter(|r| r["record"] == "sample")
        .find(|r| r["outcome"]["fault"]["message"].as_str().is_some_and(|m| m.contains("longer than")))
        .expect("the over-long line's fault is recorded");
    assert_eq!(fault["outcome"]["fault"]["kind"], "malformed");
}

#[test]
fn a_meter_that_exits_while_its_child_holds_stdout_stops_the_run_and_leaves_no_orphan() {
    let dir = tempfile::tempdir().unwrap();
    // The meter prints for a second, leaving a sleeper that inherited its stdout, and exits 0.
    let meter =
        "exec:sleep 987 & i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo 42.5; sleep 0.05; done; exit 0";
    let child = energy_command(dir.path(), &["a=mock:ok"], meter, &["--cycles", "4"]).spawn().unwrap();
    let (o, _) = wait_bounded(child, 60);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let records = raw_records(dir.path());
    let (status, rejections) = footer(&records);
    assert_eq!(status, "rejected");
    assert!(rejections.contains("sensor_stopped"), "{rejections}");
    assert!(
        rejections.contains("exit status: 0") && rejections.contains("stdout stayed open"),
        "{rejections}"
    );
    // The sleeper went with the meter's process group.
    let group = meter_group(&records);
    let t = Instant::now();
    while !live_members(group).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(live_members(group), Vec::<i64>::new(), "the meter's child outlived the run");
}

#[test]
fn a_decimal_comma_meter_is_refused_before_measuring_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:while :; do echo 30,5; sleep 0.05; done";
    let child = energy_command(dir.path(), &["a=mock:ok"], meter, &[]).spawn().unwrap();
    let (o, _) = wait_bounded(child, 60);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`30,5`") && err.contains("decimal point"), "{err}");
    // The probe is judged before the model or any arm loads (issue 51): a refused probe writes
    // no raw record, so nothing was measured.
    assert!(!dir.path().join("r.raw.jsonl").exists(), "no raw record for a refused probe");
}

#[test]
fn a_meter_path_with_spaces_or_after_assignments_keeps_its_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("dir with space");
    std::fs::create_dir(&folder).unwrap();
    let exe = folder.join("my meter.sh");
    write_script(
        &exe,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'my meter 1.0'; exit 0; }\n\
         [ \"${LAYA_METER_MODE:-plain}\" = \"$1\" ] || { echo \"mode ${LAYA_METER_MODE:-plain}\" >&2; exit 5; }\n\
         while :; do echo 30.5; sleep 0.05; done\n",
    );
    let exe = std::fs::canonicalize(&exe).unwrap();
    let sha = {
        use sha2::Digest;
        let bytes = std::fs::read(&exe).unwrap();
        sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    for sensor in [
        format!("exec:'{}' plain", exe.display()),
        format!("exec:LAYA_METER_MODE=env OTHER='a b' '{}' env", exe.display()),
    ] {
        let child = energy_command(dir.path(), &["a=mock:ok"], &sensor, &["--overwrite"]).spawn().unwrap();
        let (o, _) = wait_bounded(child, 60);
        assert_eq!(o.status.code(), Some(0), "{sensor}: {}", stderr(&o));
        let records = raw_records(dir.path());
        let program = &records[0]["sensor"]["program"];
        assert_eq!(program["executable"].as_str(), exe.to_str(), "{sensor}: {program}");
        assert_eq!(program["sha256"].as_str(), Some(sha.as_str()), "{program}");
        assert_eq!(program["version"].as_str(), Some("my meter 1.0"), "{program}");
    }
}
