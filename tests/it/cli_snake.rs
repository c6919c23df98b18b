//! `laya-bench snake` as a user runs it: headless play with a recording that replays, the
//! paired check of two portable arms, the rate benchmark with --resume, and every bad input
//! refused with exit 2.

use std::path::Path;
use std::process::Output;

use laya_bench::snake::paired::PairedReport;
use laya_bench::snake::rate_search::RateReport;
use laya_bench::snake::recording::{read_recording, Record};
use serde_json::{json, Value};

use crate::common::{laya_bench, stderr, stdout};

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stdout: {}\nstderr: {err}", stdout(o));
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
}

/// The JSON document printed last on stdout (the summary).
fn summary(o: &Output) -> Value {
    let text = stdout(o);
    let start = text.find('{').expect("a JSON summary on stdout");
    serde_json::from_str(&text[start..]).expect("summary is JSON")
}

#[test]
fn headless_play_records_a_run_that_replays() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &[
            "snake",
            "play",
            "--headless",
            "--max-speed",
            "--steps",
            "12",
            "--seed",
            "101",
            "--row-length",
            "96",
            "--record",
            "run.jsonl",
        ],
    );
    assert_exit(&o, 0, "");
    assert!(!stderr(&o).contains("warning"), "L96 holds every row: {}", stderr(&o));
    assert!(!stderr(&o).contains("automatic"), "--length was given: {}", stderr(&o));
    let s = summary(&o);
    assert_eq!(s["steps"], 12);
    assert_eq!(s["inference_calls"], 12);
    assert_eq!(s["deaths"], 0);
    assert_eq!(s["guarded"], true);
    assert_eq!(s["network"], "offline");
    assert!(s["mean_inference_ms"].as_f64().unwrap() > 0.0);

    let file = std::fs::File::open(dir.path().join("run.jsonl")).unwrap();
    let recording = read_recording(std::io::BufReader::new(file)).unwrap();
    assert_eq!(recording.metadata.format, "laya-coreml-snake-v1");
    assert_eq!(recording.metadata.settings["seed"], 101);
    assert_eq!(recording.frames().count(), 12);
    let first = recording.frames().next().unwrap();
    assert_eq!((first.game.seed, first.game.ticks, first.stats.round), (101, 0, 1));
    assert_eq!(first.stats.steps_per_second, None, "no rate from a single frame");
    assert!(matches!(recording.records.last(), Some(Record::End(_))));

    let o = laya_bench(dir.path(), &["snake", "replay", "run.jsonl", "--headless"]);
    assert_exit(&o, 0, "");
    let r = summary(&o);
    assert_eq!(r["verified"], true);
    assert_eq!(r["frames"], 12);
    assert_eq!(r["rounds"], 1);
    assert_eq!(r["interventions"], s["interventions"]);
    assert_eq!(r["end_summary"]["steps"], 12);
    assert_eq!(
        (r["schema_version"].clone(), r["kind"].clone()),
        (json!(1), json!("laya-bench-snake-replay"))
    );
    assert_eq!((s["schema_version"].clone(), s["kind"].clone()), (json!(1), json!("laya-bench-snake-play")));
    assert_eq!((r["complete"].clone(), r["cut_line"].clone()), (json!(true), Value::Null));

    // A run killed while writing a line: the cut last line is left out, every whole frame
    // before it replays, and the recording is marked incomplete (not refused).
    let text = std::fs::read(dir.path().join("run.jsonl")).unwrap();
    let lines = text.iter().filter(|&&b| b == b'\n').count();
    let last_frame_end = text[..text.len() - 1].iter().rposition(|&b| b == b'\n').unwrap();
    let cut = &text[..last_frame_end + 1 + 40];
    std::fs::write(dir.path().join("cut.jsonl"), cut).unwrap();
    let o = laya_bench(dir.path(), &["snake", "replay", "cut.jsonl", "--headless"]);
    assert_exit(&o, 0, "");
    let c = summary(&o);
    assert_eq!((c["complete"].clone(), c["cut_line"].clone()), (json!(false), json!(lines)));
    assert_eq!(c["frames"], 12);
    // A bad line that is not the last one cut short is still refused, naming it.
    let mut broken = cut.to_vec();
    broken.push(b'\n');
    std::fs::write(dir.path().join("broken.jsonl"), &broken).unwrap();
    let o = laya_bench(dir.path(), &["snake", "replay", "broken.jsonl", "--headless"]);
    assert_exit(&o, 2, &format!("recording line {lines}:"));

    // The same file again is refused: recordings are never overwritten.
    let o = laya_bench(dir.path(), &["snake", "play", "--headless", "--steps", "1", "--record", "run.jsonl"]);
    assert_exit(&o, 2, "never overwritten");
}

#[test]
fn replay_rejects_a_tampered_recording_and_a_file_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &["snake", "play", "--headless", "--max-speed", "--steps", "6", "--record", "run.jsonl"],
    );
    assert_exit(&o, 0, "");
    let text = std::fs::read_to_string(dir.path().join("run.jsonl")).unwrap();
    let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Frame 2 (line 3) claims another executed move: the boards after it no longer follow.
    let executed = lines[3]["decision"]["executed"].as_str().unwrap().to_string();
    let other = ["UP", "DOWN", "LEFT", "RIGHT"].into_iter().find(|d| *d != executed).unwrap();
    lines[3]["decision"]["executed"] = Value::from(other);
    let tampered: Vec<String> = lines.iter().map(|l| serde_json::to_string(l).unwrap()).collect();
    std::fs::write(dir.path().join("bad.jsonl"), tampered.join("\n") + "\n").unwrap();
    let o = laya_bench(dir.path(), &["snake", "replay", "bad.jsonl", "--headless"]);
    assert_exit(&o, 1, "does not replay");

    std::fs::write(dir.path().join("junk.jsonl"), "{\"type\": \"nonsense\"}\n").unwrap();
    let o = laya_bench(dir.path(), &["snake", "replay", "junk.jsonl", "--headless"]);
    assert_exit(&o, 2, "not a valid recording");
    // Another format version is refused, naming the field.
    let mut other = text.lines().map(String::from).collect::<Vec<_>>();
    other[0] = other[0].replace("laya-coreml-snake-v1", "laya-coreml-snake-v2");
    std::fs::write(dir.path().join("v2.jsonl"), other.join("\n") + "\n").unwrap();
    let o = laya_bench(dir.path(), &["snake", "replay", "v2.jsonl", "--headless"]);
    assert_exit(&o, 2, "the metadata's `format` is \"laya-coreml-snake-v2\"");
    let o = laya_bench(dir.path(), &["snake", "replay", "missing.jsonl", "--headless"]);
    assert_exit(&o, 2, "cannot open the recording");
    let o = laya_bench(dir.path(), &["snake", "replay", "run.jsonl", "--headless", "--speed", "0"]);
    assert_exit(&o, 2, "--speed");
}

/// `snake compare` of `a=portable:f32` and arm `b` on `seeds`, `steps` each, into `output`.
fn compare(dir: &Path, b: &str, seeds: &[&str], steps: &str, output: &str) -> Output {
    let mut args = vec!["snake", "compare", "--arm", "a=portable:f32", "--arm", b, "--seeds"];
    args.extend_from_slice(seeds);
    args.extend(["--steps", steps, "--output", output]);
    laya_bench(dir, &args)
}

#[test]
fn compare_f32_and_f16_on_tiny_agree_on_every_executed_move() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(dir.path(), "b=portable:f16", &["101", "102"], "30", "compare.json");
    assert_exit(&o, 0, "");
    assert!(stdout(&o).contains("executed agreement 60/60"), "{}", stdout(&o));
    let report: PairedReport =
        serde_json::from_slice(&std::fs::read(dir.path().join("compare.json")).unwrap()).unwrap();
    assert_eq!((report.head.schema_version, report.head.kind.as_str()), (1, "snake-compare"));
    assert!(report.passed && report.failures.is_empty());
    assert_eq!(report.settings.seeds, vec![101, 102]);
    let roles: Vec<(&str, &str)> =
        report.arms.iter().map(|a| (a.role.as_str(), a.identity.precision.as_str())).collect();
    assert_eq!(roles, [("A", "f32"), ("B", "f16")]);
    assert_ne!(report.arms[0].identity.fingerprint, report.arms[1].identity.fingerprint);
    // No --row-length: the probe walk finds builtin:tiny's longest row (81 tokens), so L96.
    assert!(stderr(&o).contains("row length: 96 tokens (automatic"), "{}", stderr(&o));
    assert_eq!((report.arms[0].identity.batch, report.arms[0].identity.length), (3, 96));
    assert_eq!(report.settings.row_length_tokens, 96);
    assert_eq!(report.runs.len(), 2);
    for run in &report.runs {
        assert_eq!((run.steps, run.executed_agreement), (30, 30));
        assert!(run.alive);
        let d = run.max_move_probability_difference.unwrap();
        assert!((0.0..0.05).contains(&d), "f16 weights move a probability by {d}");
        for arm in [&run.a, &run.b] {
            let l = arm.decision_latency.unwrap();
            assert_eq!(l.calls, 30);
            assert!(l.p50_ms <= l.p95_ms && l.p95_ms <= l.p99_ms && l.p99_ms <= l.max_ms);
            assert!(l.mean_ms > 0.0);
        }
    }
    assert_eq!(report.totals.steps, 60);
    assert_eq!(report.totals.deaths, 0);
    for arm in &report.arms {
        assert_eq!((arm.decisions, arm.state_truncated_decisions), (60, 0));
    }
    assert!(!stderr(&o).contains("raise --length"), "{}", stderr(&o));
}

#[test]
fn a_row_length_too_short_for_the_tokenizer_cuts_every_state_and_says_so() {
    // builtin:tiny's byte-level tokenizer needs 77 tokens for the first move row: at L64 its
    // state is cut in every decision, counted and warned about.
    let dir = tempfile::tempdir().unwrap();
    let args = ["snake", "play", "--headless", "--max-speed", "--steps", "5", "--row-length", "64"];
    let o = laya_bench(dir.path(), &args);
    assert_exit(&o, 0, "the state was cut to fit 64 tokens per row in 5 of 5 decisions; raise --length");
}

#[test]
fn compare_output_dash_writes_the_report_alone_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(dir.path(), "b=portable:f16", &["101"], "5", "-");
    assert_exit(&o, 0, "report: standard output");
    // Standard output holds the report and nothing else; the seed and total lines go to stderr.
    let report: PairedReport = serde_json::from_slice(&o.stdout).expect("stdout is the JSON report");
    assert!(report.passed);
    assert_eq!((report.head.kind.as_str(), report.runs.len(), report.totals.steps), ("snake-compare", 1, 5));
    let err = stderr(&o);
    assert!(err.contains("seed 101: 5 steps") && err.contains("total: executed agreement 5/5"), "{err}");
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn compare_fails_with_exit_1_when_an_arm_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(dir.path(), "b=mock:fail-after=13", &["7", "8"], "5", "c.json");
    // 6 warm-up calls, seed 7's 5 decisions, then B fails during seed 8.
    assert_exit(&o, 1, "arm B");
    assert!(stderr(&o).contains("the report keeps the seeds finished before it"), "{}", stderr(&o));
    let report: PairedReport =
        serde_json::from_slice(&std::fs::read(dir.path().join("c.json")).unwrap()).unwrap();
    assert!(!report.passed);
    assert_eq!(report.runs.len(), 1);
    assert_eq!((report.runs[0].seed, report.runs[0].steps), (7, 5));
    assert!(report.failures.iter().any(|f| f.starts_with("stopped: seed 8")), "{:?}", report.failures);
}

#[test]
fn compare_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["snake", "compare", "--steps", "2", "--output", "c.json"];
    let run = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        laya_bench(dir.path(), &args)
    };
    assert_exit(&run(&["--arm", "a=portable:f32"]), 2, "exactly two arms");
    assert_exit(&run(&["--arm", "a=portable:f32", "--arm", "a=portable:f16"]), 2, "used twice");
    assert_exit(&run(&["--arm", "a=portable:f32", "--arm", "portable:f16"]), 2, "NAME=SPEC");
    assert_exit(&run(&["--arm", "a=portable:f32", "--arm", "b=nope:x"]), 2, "nope:x");
    let two = ["--arm", "a=portable:f32", "--arm", "b=portable:f16"];
    assert_exit(&run(&[&two[..], &["--width", "5", "--height", "5"]].concat()), 2, "at least one even");
    assert_exit(&run(&[&two[..], &["--initial-length", "1"]].concat()), 2, "Initial length");
    assert_exit(&run(&[&two[..], &["--prompt", "verbose"]].concat()), 2, "verbose");
    assert_exit(&run(&[&two[..], &["--steps", "0"]].concat()), 2, "steps");
    assert_exit(&run(&[&two[..], &["--model", "nope:x"]].concat()), 2, "cannot load the model");
    // The report's folder is checked before anything is played.
    let o = laya_bench(
        dir.path(),
        &[&["snake", "compare", "--steps", "2", "--output", "nodir/c.json"][..], &two].concat(),
    );
    assert_exit(&o, 2, "--output nodir/c.json: the folder nodir does not exist");
    std::fs::write(dir.path().join("c.json"), "{}").unwrap();
    assert_exit(&run(&two), 2, "--overwrite");
}

fn bench_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "snake",
        "bench",
        "--rates",
        "2",
        "--sweep-steps",
        "2",
        "--soak-steps",
        "2",
        "--raw-steps",
        "3",
        "--seeds",
        "101,102",
        "--output",
        "bench.json",
    ];
    args.extend_from_slice(extra);
    args
}

fn read_bench(dir: &Path) -> RateReport {
    serde_json::from_slice(&std::fs::read(dir.join("bench.json")).unwrap()).unwrap()
}

/// Exit 0 exactly when the bench found a stable rate, else 1.
fn exits_as_its_verdict(o: &Output, report: &RateReport) {
    assert_eq!(
        o.status.code(),
        Some(if report.fastest_tested_stable_fps.is_some() { 0 } else { 1 }),
        "{}",
        stderr(o)
    );
}

#[test]
fn bench_runs_every_phase_and_resumes_a_partial_report() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(dir.path(), &bench_args(&[]));
    let report = read_bench(dir.path());
    // Exit 0 exactly when a stable rate was found.
    exits_as_its_verdict(&o, &report);
    assert!(report.complete);
    assert_eq!((report.head.schema_version, report.head.kind.as_str()), (1, "snake-bench"));
    assert_eq!(report.settings.rates_fps, vec![2.0]);
    assert_eq!(report.raw_top1.len(), 2);
    assert!(report.raw_top1.iter().all(|e| !e.guarded && e.target_fps.is_none()));
    let uncapped = report.uncapped.as_ref().unwrap();
    assert!(uncapped.guarded && uncapped.target_fps.is_none() && uncapped.steps == 2);
    assert_eq!(report.sweep.len(), 1);
    assert_eq!(report.sweep[0].target_fps, Some(2.0));
    assert_eq!(report.uncapped_soak.len(), 2);
    for e in report.uncapped_soak.iter().chain(&report.sweep) {
        assert_eq!(e.trace.len() as u64, e.steps);
        let tick = e.active_tick.unwrap();
        let decision = e.decision.unwrap();
        assert!(tick.max_ms >= decision.max_ms * 0.999, "an active tick contains its decision");
    }
    let text = stdout(&o);
    assert!(
        text.contains("raw_top1") && text.contains("top-1 seed=101") && text.contains("target=2/s"),
        "{text}"
    );
    assert!(!text.to_lowercase().contains("frame time"), "no latency is called a frame time: {text}");

    // Cut the report back to a partial one and resume it: only the missing episodes run.
    let mut value: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("bench.json")).unwrap()).unwrap();
    value["uncapped_soak"].as_array_mut().unwrap().pop();
    value["soak_attempts"] = Value::Array(vec![]);
    value["fastest_tested_stable_fps"] = Value::Null;
    value["complete"] = Value::Bool(false);
    std::fs::write(dir.path().join("bench.json"), serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    // The rates given here are ignored: a resumed run keeps the report's settings.
    let o = laya_bench(dir.path(), &bench_args(&["--resume", "--rates", "99"]));
    let resumed = read_bench(dir.path());
    exits_as_its_verdict(&o, &resumed);
    assert!(resumed.complete);
    assert_eq!(resumed.resumed_sessions, 1);
    assert_eq!(resumed.settings.rates_fps, vec![2.0]);
    assert_eq!(resumed.uncapped_soak.len(), 2);
    assert_eq!(resumed.raw_top1, report.raw_top1, "finished episodes are kept as measured");
    let printed = stdout(&o);
    assert!(!printed.contains("raw_top1") && printed.contains("uncapped_soak"), "{printed}");

    // Another arm cannot continue this report.
    let o = laya_bench(dir.path(), &bench_args(&["--resume", "--arm", "portable:f16"]));
    assert_exit(&o, 2, "different model or arm");
    // Without --resume an existing report is refused.
    let o = laya_bench(dir.path(), &bench_args(&[]));
    assert_exit(&o, 2, "--overwrite");
}

#[test]
fn bench_output_dash_writes_the_report_once_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = bench_args(&[]);
    let at = args.iter().position(|a| *a == "bench.json").unwrap();
    args[at] = "-";
    let o = laya_bench(dir.path(), &args);
    let report: RateReport = serde_json::from_slice(&o.stdout).expect("stdout is the JSON report alone");
    exits_as_its_verdict(&o, &report);
    assert!(report.complete);
    assert_eq!(
        (report.head.kind.as_str(), report.settings.seeds.as_slice()),
        ("snake-bench", &[101, 102][..])
    );
    let err = stderr(&o);
    assert!(err.contains("raw_top1") && err.contains("report: standard output"), "{err}");
    assert!(!dir.path().join("-").exists(), "no file named -");
    // A report on standard output cannot be read back to resume.
    args.push("--resume");
    assert_exit(&laya_bench(dir.path(), &args), 2, "--resume --output -");
}

#[test]
fn bench_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    assert_exit(&laya_bench(dir.path(), &bench_args(&["--resume"])), 2, "cannot read");
    std::fs::write(dir.path().join("bench.json"), "{\"kind\": \"speed\"}").unwrap();
    assert_exit(&laya_bench(dir.path(), &bench_args(&["--resume"])), 2, "not a snake bench report");
    let fresh = ["snake", "bench", "--output", "new.json", "--rates"];
    assert_exit(&laya_bench(dir.path(), &[&fresh[..], &["0"]].concat()), 2, "positive");
    assert_exit(&laya_bench(dir.path(), &[&fresh[..], &["-5"]].concat()), 2, "positive");
    assert_exit(
        &laya_bench(dir.path(), &["snake", "bench", "--output", "n.json", "--soak-steps", "0"]),
        2,
        "soak-steps",
    );
    assert_exit(
        &laya_bench(dir.path(), &["snake", "bench", "--output", "n.json", "--arm", "x=nope:y"]),
        2,
        "nope:y",
    );
    assert!(!dir.path().join("new.json").exists() && !dir.path().join("n.json").exists());
}

#[test]
fn play_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let play =
        |extra: &[&str]| laya_bench(dir.path(), &[&["snake", "play", "--headless"][..], extra].concat());
    assert_exit(&play(&["--fps", "0"]), 2, "--rate");
    assert_exit(&play(&["--fps", "1e-320"]), 2, "at least one per 7 days");
    assert_exit(&play(&["--steps", "0"]), 2, "steps");
    assert_exit(&play(&["--duration", "0s"]), 2, "--seconds");
    assert_exit(&play(&["--height", "3"]), 2, "Board dimensions");
    assert_exit(&play(&["--arm", "nope:x"]), 2, "nope:x");
    assert_exit(&play(&["--row-length", "1000"]), 2, "--length 1000 is longer than the model's max_len 512");
    // a recording in a folder that does not exist: said of the folder, before the model loads
    assert_exit(
        &play(&["--record", "absent/r.jsonl"]),
        2,
        "--record absent/r.jsonl: the folder absent does not exist; create it or choose another path",
    );
}

#[test]
fn shield_keeps_a_scripted_arm_alive_through_many_rounds_and_unassisted_play_stops_at_a_death() {
    let dir = tempfile::tempdir().unwrap();
    let small = ["--arm", "mock:ok", "--width", "6", "--height", "6", "--initial-length", "3"];
    let play = |extra: &[&str]| {
        let args =
            [&["snake", "play", "--headless", "--max-speed", "--steps", "3000"][..], &small, extra].concat();
        laya_bench(dir.path(), &args)
    };
    // The scripted arm's proposals are often unsafe; the shield replaces them every time.
    let o = play(&["--record", "guarded.jsonl"]);
    assert_exit(&o, 0, "");
    let s = summary(&o);
    assert_eq!((s["steps"].as_u64(), s["deaths"].as_u64()), (Some(3000), Some(0)));
    assert!(s["interventions"].as_u64().unwrap() > 100, "{s}");
    assert_eq!(s["best_score"], 33, "a 6x6 board from length 3 is cleared at least once");
    let o = laya_bench(dir.path(), &["snake", "replay", "guarded.jsonl", "--headless"]);
    assert_exit(&o, 0, "");
    assert!(summary(&o)["rounds"].as_u64().unwrap() > 1, "rounds continue after a cleared board");

    // Without the shield the same arm's first proposal reverses into its neck: one death, stop.
    let o = play(&["--unassisted", "--record", "top1.jsonl"]);
    assert_exit(&o, 0, "");
    let s = summary(&o);
    assert_eq!(
        (s["steps"].as_u64(), s["deaths"].as_u64(), s["guarded"].as_bool()),
        (Some(1), Some(1), Some(false))
    );
    let o = laya_bench(dir.path(), &["snake", "replay", "top1.jsonl", "--headless"]);
    assert_exit(&o, 0, "");
    assert_eq!(summary(&o)["end_summary"]["deaths"], 1);
}

#[test]
fn runs_started_together_without_output_each_keep_their_own_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["snake", "compare", "--arm", "a=portable:f32", "--arm", "b=portable:f16", "--seeds", "101"];
    let args = [&args[..], &["--steps", "2", "--row-length", "96"]].concat();
    let runs: Vec<_> = (0..3).map(|_| crate::common::spawn_laya_bench(d, &args, false)).collect();
    for o in runs.into_iter().map(|c| crate::common::wait_with_limit(c, 120)) {
        assert_exit(&o, 0, "");
    }
    let mut names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in &names {
        assert!(n.starts_with("snake-compare-") && n.ends_with(".json"), "{n}");
        let report: PairedReport = serde_json::from_slice(&std::fs::read(d.join(n)).unwrap()).expect(n);
        assert_eq!(report.runs.len(), 1, "{n}");
    }
    // a default-named run that stops before its first save leaves nothing behind
    let o = laya_bench(d, &["snake", "bench", "--model", "missing-model"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 3);
}
