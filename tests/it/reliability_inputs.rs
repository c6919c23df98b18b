//! Issue 49 (reliability 2), inputs and records: every input is read with bounds (an input
//! without newlines, or one that never ends, is refused at once in little memory, naming the
//! file and line), the end of a raw record follows the same rule as its middle (only a last
//! line without its newline is a cut write), and a header that is not its records' own fails
//! the audit naming the line.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{laya_bench, stderr, SHORT_ENERGY};

/// The longest any bounded refusal below may take, on a loaded 2-core machine.
const LIMIT: Duration = Duration::from_secs(20);

/// `docs/summary.md`'s memory target, bytes.
const MEMORY_TARGET: u64 = 200 << 20;

/// A finished run of the binary, with its wall time and peak resident memory.
struct Ran {
    code: Option<i32>,
    stderr: String,
    wall: Duration,
    peak_rss_bytes: u64,
}

/// Run `laya-bench ARGS` in `dir` with nothing on stdin, through [`spawn_helper`]: a fresh
/// copy of this test binary that runs nothing else, spawns `laya-bench`, waits for it and says
/// its exit and peak resident memory. Why not here: on Linux a spawned child's `ru_maxrss` is
/// the larger of its own peak and the peak of the memory it was spawned from (`execve` folds the
/// old address space's high-water mark into the process's), and a vfork-style spawn execs from
/// the spawning process's own address space. Spawned from this binary, with its many tests in
/// flight, every child "peaked" at this binary's own 250 MB on a loaded machine; spawned from
/// the helper, the child's figure is its own (plus the helper's few MB at most).
fn run_bounded(dir: &Path, args: &[&str]) -> Ran {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args(["--exact", "reliability_inputs::spawn_helper", "--ignored", "--nocapture", "--test-threads=1"])
        .env(HELPER_ARGS, serde_json::to_string(args).unwrap())
        .env(HELPER_DIR, dir)
        .stdin(Stdio::null())
        .output()
        .expect("run the spawn helper");
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said
        .lines()
        .find_map(|l| l.split_once(HELPER_SAYS).map(|(_, said)| said))
        .unwrap_or_else(|| panic!("the spawn helper said nothing for {args:?}: {said}\n{}", stderr(&out)));
    let v: Value = serde_json::from_str(line).unwrap();
    if let Some(why) = v["failed"].as_str() {
        panic!("laya-bench {args:?}: {why}");
    }
    Ran {
        code: v["code"].as_i64().map(|c| c as i32),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        wall: Duration::from_secs_f64(v["wall_s"].as_f64().unwrap()),
        peak_rss_bytes: v["peak_rss_bytes"].as_u64().unwrap(),
    }
}

/// The environment variables that make [`spawn_helper`] run, and the prefix of its one line.
const HELPER_ARGS: &str = "LAYA_BENCH_IT_SPAWN_ARGS";
const HELPER_DIR: &str = "LAYA_BENCH_IT_SPAWN_DIR";
const HELPER_SAYS: &str = "spawn-helper: ";

/// Not a test: [`run_bounded`]'s helper (ignored, so a plain test run skips it; run only with
/// [`HELPER_ARGS`] set). Spawns `laya-bench` with the arguments given, its stderr this process's
/// own, kills it past [`LIMIT`], and prints one JSON line after [`HELPER_SAYS`]: the exit code
/// (null when killed by a signal), the wall time and the peak RSS from `wait4`.
#[test]
#[ignore = "run by run_bounded in a fresh process, not a test of its own"]
#[allow(clippy::zombie_processes)] // reaped by wait4 / waitpid below
fn spawn_helper() {
    let (Ok(args), Ok(dir)) = (std::env::var(HELPER_ARGS), std::env::var(HELPER_DIR)) else {
        panic!("spawn_helper is run by run_bounded, with {HELPER_ARGS} and {HELPER_DIR} set");
    };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let say = |v: Value| println!("{HELPER_SAYS}{v}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("run laya-bench");
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child only; both pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let wall = start.elapsed();
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            // ru_maxrss is in KiB on Linux, in bytes on macOS.
            let unit = if cfg!(target_os = "macos") { 1 } else { 1024 };
            let peak_rss_bytes = usage.ru_maxrss.max(0) as u64 * unit;
            return say(serde_json::json!({
                "code": code, "wall_s": wall.as_secs_f64(), "peak_rss_bytes": peak_rss_bytes
            }));
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            // SAFETY: reaps our own killed child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return say(serde_json::json!({"failed": format!("still running after {LIMIT:?} (killed)")}));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Assert a bounded refusal: exit 2, fast, in less memory than the target, the message naming
/// `needle`.
fn refused_fast(dir: &Path, args: &[&str], needle: &str) -> Ran {
    let ran = run_bounded(dir, args);
    assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.stderr);
    assert!(ran.stderr.contains(needle), "{args:?}: expected `{needle}` in: {}", ran.stderr);
    assert!(ran.wall < LIMIT, "{args:?} took {:?}", ran.wall);
    assert!(
        ran.peak_rss_bytes < MEMORY_TARGET,
        "{args:?} peaked at {} MB resident",
        ran.peak_rss_bytes >> 20
    );
    eprintln!("{args:?}: exit 2 in {:?}, peak RSS {} MB", ran.wall, ran.peak_rss_bytes >> 20);
    ran
}

/// A 2 GiB file of zeros holding no data blocks (sparse).
fn sparse_zeros(path: &Path) {
    std::fs::File::create(path).unwrap().set_len(2 << 30).unwrap();
}

#[cfg(unix)]
#[test]
fn summary_of_an_input_without_newlines_exits_2_at_line_1_fast_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    sparse_zeros(&d.join("zeros.raw.jsonl"));
    // Before: 11.8 s and 2.1 GB for the 2 GB file; /dev/zero read until memory ran out.
    refused_fast(d, &["summary", "zeros.raw.jsonl"], "zeros.raw.jsonl: line 1 runs past 32 MiB");
    refused_fast(d, &["summary", "/dev/zero", "--output", "s.json"], "/dev/zero: line 1 runs past 32 MiB");
    // Given with another record, the same bounds hold (the same-record check reads no device).
    refused_fast(d, &["summary", "zeros.raw.jsonl", "/dev/zero"], "zeros.raw.jsonl: line 1 runs past 32 MiB");
    refused_fast(d, &["summary", "/dev/zero", "zeros.raw.jsonl"], "/dev/zero: line 1 runs past 32 MiB");
    assert!(!d.join("s.json").exists());
    // A correction is never appended to a device.
    refused_fast(
        d,
        &["summary", "--correct", "/dev/zero", "--field", "host.os", "--note", "x"],
        "/dev/zero: line 1 runs past 32 MiB",
    );
}

#[cfg(unix)]
#[test]
fn predict_and_workload_inputs_that_never_end_exit_2_fast_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    sparse_zeros(&d.join("zeros.json"));
    // Before: `predict --questions /dev/zero` read until memory ran out (7.1 GB in 4 s).
    let too_large = "more than 67108864 bytes (64 MiB)";
    refused_fast(d, &["predict", "--state", "x", "--questions", "/dev/zero"], too_large);
    refused_fast(d, &["predict", "--state", "x", "--questions", "zeros.json"], "zeros.json: more than");
    refused_fast(d, &["predict", "--request", "/dev/zero"], "/dev/zero: more than");
    refused_fast(d, &["predict", "--request", "zeros.json"], "zeros.json: more than");
    let run = ["speed", "--no-progress", "--arm", "a=mock:ok", "--calls", "2", "--raw", "w.raw.jsonl"];
    refused_fast(d, &[&run[..], &["--workload", "/dev/zero"]].concat(), "/dev/zero: more than");
    assert!(!d.join("w.raw.jsonl").exists());
}

/// A short speed run of two mock arms writing `NAME.raw.jsonl`.
fn speed_run(dir: &Path, name: &str) -> String {
    let raw = format!("{name}.raw.jsonl");
    let args = [
        "speed",
        "--no-progress",
        "--arm",
        "base=mock:ok",
        "--arm",
        "slow=mock:ok:delay-us=100",
        "--calls",
        "10",
        "--cycles",
        "1",
        "--warmup",
        "2",
        "--raw",
        &raw,
        "--output",
        &format!("{name}.json"),
    ];
    let o = laya_bench(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read_to_string(dir.join(raw)).unwrap()
}

/// Short energy runs ([`SHORT_ENERGY`]): 300 ms blocks, 200 ms idle windows, a reading
/// every 50 ms, the arms `base` and `slow` as in [`speed_run`].
fn energy_run(dir: &Path, name: &str, meter: &str) -> (Output, String) {
    let (raw, out) = (format!("{name}.raw.jsonl"), format!("{name}.json"));
    let mut args = SHORT_ENERGY.to_vec();
    args.extend([
        "--sensor",
        meter,
        "--arm",
        "base=mock:ok",
        "--arm",
        "slow=mock:ok:delay-us=100",
        "--cycles",
        "1",
        "--raw",
        &raw,
        "--output",
        &out,
    ]);
    let o = laya_bench(dir, &args);
    let text = std::fs::read_to_string(dir.join(raw)).unwrap();
    (o, text)
}

/// A meter printing 31.5 … 37.5 W in turn every 50 ms.
const METER: &str = "exec:i=0; while true; do i=$((i+1)); echo \"$((30 + i % 7)).5\"; sleep 0.05; done";

/// Every line of a raw record as JSON.
fn lines(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The lines as a raw record.
fn unlines(lines: &[Value]) -> String {
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

/// `summary FILE --output s-FILE.json`: the exit code, stderr and (when written) the run's JSON.
fn summarize(dir: &Path, file: &str, text: &str) -> (Option<i32>, String, Option<Value>) {
    std::fs::write(dir.join(file), text).unwrap();
    let out = format!("s-{file}.json");
    let o = laya_bench(dir, &["summary", file, "--output", &out]);
    let json = std::fs::read(dir.join(&out))
        .ok()
        .map(|b| serde_json::from_slice::<Value>(&b).unwrap()["runs"][0].clone());
    (o.status.code(), stderr(&o), json)
}

/// The named audit check of a summarized run: its outcome and detail.
fn check(run: &Value, name: &str) -> (String, String) {
    let c = run["audit"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
    (c["outcome"].as_str().unwrap().into(), c["detail"].as_str().unwrap().into())
}

/// A record whose header is not its own: audit failed (exit 1), `record_integrity` failing
/// with `needle` first among its problems.
fn audit_fails_naming(dir: &Path, file: &str, text: &str, needle: &str) -> String {
    let (code, err, run) = summarize(dir, file, text);
    let run = run.unwrap_or_else(|| panic!("{file}: no summary written: {err}"));
    assert_eq!(code, Some(1), "{file}: {err}");
    assert_eq!(run["status"], "audit_failed", "{file}: {}", run["status_reasons"]);
    let (outcome, detail) = check(&run, "record_integrity");
    assert_eq!(outcome, "fail", "{file}");
    assert!(detail.contains(needle), "{file}: expected `{needle}` in: {detail}");
    detail
}

#[test]
fn the_end_of_a_record_follows_the_rule_of_its_middle() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = speed_run(d, "r");
    let n = text.lines().count();
    let (code, err, _) = summarize(d, "ok.raw.jsonl", &text);
    assert_eq!(code, Some(0), "{err}");
    // A complete line after the footer that is no record: bad input naming it (before: "the
    // last line is cut mid-write", exit 1), exactly as in the middle of the file.
    let (code, err, json) = summarize(d, "g.raw.jsonl", &format!("{text}garbage\n"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("g.raw.jsonl: line {} is not a valid record", n + 1)), "{err}");
    assert!(json.is_none());
    let mut middle: Vec<&str> = text.lines().collect();
    middle.insert(2, "garbage");
    let (code, err, _) = summarize(d, "m.raw.jsonl", &(middle.join("\n") + "\n"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("m.raw.jsonl: line 3 is not a valid record"), "{err}");
    // Only a last line without its newline is a write cut mid-line.
    let (code, err, json) = summarize(d, "c.raw.jsonl", &format!("{text}{{\"record\":\"call\",\"blo"));
    assert_eq!(code, Some(1), "{err}");
    let run = json.unwrap();
    assert_ne!(run["status"], "complete");
    assert!(check(&run, "header_and_footer").1.contains("the last line is cut mid-write"));
    // A whole, valid record after the footer: the audit fails naming its line.
    let call = text.lines().find(|l| l.contains("\"record\":\"call\"")).unwrap();
    let _ = audit_fails_naming(
        d,
        "a.raw.jsonl",
        &format!("{text}{call}\n"),
        &format!("line {}: a call record after the footer", n + 1),
    );
}

#[test]
fn a_schema_version_this_build_does_not_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut l = lines(&speed_run(d, "r"));
    for (version, hint) in [(0, "damaged or was edited"), (3, "upgrade laya-bench")] {
        l[0]["schema_version"] = Value::from(version);
        let (code, err, json) = summarize(d, "v.raw.jsonl", &unlines(&l));
        assert_eq!(code, Some(2), "{version}: {err}");
        assert!(
            err.contains(&format!(
                "v.raw.jsonl: schema_version {version} is not one this laya-bench reads (1 to 2)"
            )) && err.contains(hint),
            "{err}"
        );
        assert!(json.is_none());
    }
}

#[test]
fn a_header_that_is_not_its_records_own_fails_the_audit_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A REJECTED energy run relabelled `speed`, its sensor and energy settings dropped and its
    // footer set to complete: before, it summarized COMPLETE (exit 0).
    let spike = "exec:i=0; while true; do i=$((i+1)); if [ $((i % 9)) -eq 5 ]; then echo 40089; else echo 33.5; fi; sleep 0.05; done";
    let (o, rejected) = energy_run(d, "rej", spike);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let mut l = lines(&rejected);
    assert_eq!(l[1]["record"], "probe", "an energy run's probe follows its header");
    let h = l[0].as_object_mut().unwrap();
    h.insert("kind".into(), "speed".into());
    for field in ["sensor", "energy", "power_boundary"] {
        h.remove(field);
    }
    let footer = l.last_mut().unwrap().as_object_mut().unwrap();
    footer.insert("status".into(), "complete".into());
    footer.remove("rejections");
    let _ = audit_fails_naming(
        d,
        "relabelled.raw.jsonl",
        &unlines(&l),
        "line 2: a probe record in a `speed` record",
    );
    // An energy record under a speed run's header (the same arms and plan shape).
    let (o, energy) = energy_run(d, "e", METER);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (code, err, _) = summarize(d, "e-copy.raw.jsonl", &energy);
    assert_eq!(code, Some(0), "the untouched record is complete: {err}");
    let speed_header = speed_run(d, "s").lines().next().unwrap().to_string();
    let mut swapped: Vec<&str> = energy.lines().collect();
    swapped[0] = &speed_header;
    let _ = audit_fails_naming(
        d,
        "swapped.raw.jsonl",
        &(swapped.join("\n") + "\n"),
        "line 2: a probe record in a `speed` record: only energy runs write probe records",
    );
    // Another run's header of the same plan, from a run an hour earlier or later: the wall
    // clock between its start and this footer does not fit the records' own clock.
    let ended = lines(&energy).last().unwrap()["ended_unix_s"].as_f64().unwrap();
    let footer_line = energy.lines().count();
    for (file, shift, needle) in [
        ("earlier.raw.jsonl", -3600.0, "a complete run's footer is written right after it"),
        ("later.raw.jsonl", 3600.0, "the header (or the footer) is not this run's"),
    ] {
        let mut l = lines(&energy);
        let started = l[0]["started_unix_s"].as_f64().unwrap();
        l[0]["started_unix_s"] = Value::from(started + shift);
        assert!(ended - started > 0.0);
        let detail = audit_fails_naming(
            d,
            file,
            &unlines(&l),
            &format!("line {footer_line}: the footer's ended_unix_s is"),
        );
        assert!(detail.contains(needle), "{file}: {detail}");
    }
    // A speed record whose header carries an energy run's sensor.
    let mut l = lines(&speed_run(d, "s2"));
    l[0]["sensor"] = lines(&energy)[0]["sensor"].clone();
    let _ = audit_fails_naming(
        d,
        "sensor.raw.jsonl",
        &unlines(&l),
        "line 1: the header says `speed` but carries",
    );
}
