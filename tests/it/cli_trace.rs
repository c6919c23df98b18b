//! `laya-bench trace` as a user runs it: summaries of the synthetic xctrace fixtures, a traced
//! run's ready file and raw record, and `trace record`'s plumbing with a stand-in for `xcrun`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use laya_bench::record::{self as raw, Record};
use laya_bench::trace::recorder::ReadyFile;
use laya_bench::trace::TraceSummary;

use crate::common::{laya_bench, stderr, stdout};

const BIN: &str = env!("CARGO_BIN_EXE_laya-bench");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/trace").join(name)
}

fn assert_exit(o: &Output, code: i32, needle: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(err.contains(needle), "stderr lacks {needle:?}:\n{err}");
}

fn summarize_args<'a>(hardware: &'a str, toc: &'a str, signposts: &'a str) -> Vec<&'a str> {
    vec!["trace", "summarize", "--hardware-xml", hardware, "--toc-xml", toc, "--signpost-xml", signposts]
}

mod summarize {
    use super::*;

    fn paths() -> [String; 3] {
        [
            fixture("synthetic_ane_hw_intervals.xml").display().to_string(),
            fixture("synthetic_toc.xml").display().to_string(),
            fixture("synthetic_coreml_os_signpost.xml").display().to_string(),
        ]
    }

    #[test]
    fn prints_the_caveats_first_then_counts_time_and_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let [hw, toc, sp] = paths();
        let o = laya_bench(dir.path(), &summarize_args(&hw, &toc, &sp));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.starts_with("Caveats:\n"), "{out}");
        let caveats_end = out.find("Recording:").unwrap();
        assert!(out[..caveats_end].contains("global"), "{out}");
        assert!(out[..caveats_end].contains("never latency results"), "{out}");
        assert!(out.contains("template \"Core ML\" · duration 3.000 s"), "{out}");
        assert!(out.contains("target process: laya-bench (pid 4242, attached)"), "{out}");
        assert!(out.contains("mobilenet_main Prediction  prediction      5      4      7.092 ms"), "{out}");
        assert!(out.contains("active 10.092 ms · busy union 9.092 ms · duty cycle 0.303 %"), "{out}");
        assert!(out.contains("Containment: 2 of 5"), "{out}");
    }

    #[test]
    fn json_is_the_trace_summary_and_output_writes_the_same_document() {
        let dir = tempfile::tempdir().unwrap();
        let [hw, toc, sp] = paths();
        let mut args = summarize_args(&hw, &toc, &sp);
        args.extend(["--json", "--output", "summary.json"]);
        let o = laya_bench(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let printed: TraceSummary = serde_json::from_str(&stdout(&o)).unwrap();
        let written: TraceSummary =
            serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
        assert_eq!(printed, written);
        assert_eq!(printed.schema_version, 1);
        assert_eq!(printed.recording.template_name.as_deref(), Some("Core ML"));
        assert_eq!(printed.recording.duration_s, Some(3.0));
        assert_eq!(printed.recording.target_process.as_ref().and_then(|p| p.pid), Some(4242));
        assert_eq!(printed.hardware.row_count, 7);
        assert_eq!(printed.hardware.all.active_ns, 10_091_834);
        assert_eq!(printed.hardware.all.busy_union_ns, 9_091_834);
        assert_eq!(printed.hardware.all.duty_cycle_fraction, Some(9_091_834.0 / 3e9));
        assert!(!printed.caveats.hardware_rows_have_process_identity);
        assert!(!printed.caveats.intervals_are_latency_results);
        assert_eq!(printed.containment.map(|c| c.within_signpost_predictions), Some(2));
    }

    #[test]
    fn output_dash_writes_the_json_alone_on_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let [hw, toc, sp] = paths();
        for extra in [&["--output", "-"][..], &["--output", "-", "--json"]] {
            let mut args = summarize_args(&hw, &toc, &sp);
            args.extend(extra);
            let o = laya_bench(dir.path(), &args);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            // one JSON document and nothing else: no caveats text, not the document twice
            let printed: TraceSummary = serde_json::from_str(&stdout(&o)).unwrap();
            assert_eq!(printed.hardware.row_count, 7);
            assert_eq!(printed.containment.map(|c| c.within_signpost_predictions), Some(2));
            assert!(!dir.path().join("-").exists());
        }
    }

    #[test]
    fn an_empty_table_is_zero_activity_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let hw = fixture("synthetic_ane_hw_intervals_empty.xml").display().to_string();
        let toc = fixture("synthetic_toc.xml").display().to_string();
        let o = laya_bench(dir.path(), &["trace", "summarize", "--hardware-xml", &hw, "--toc-xml", &toc]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("all: 0 intervals · active 0.000 ms"), "{out}");
        assert!(out.contains("has zero rows"), "{out}");
    }

    #[test]
    fn a_renamed_schema_exits_2_listing_the_tables_found() {
        let dir = tempfile::tempdir().unwrap();
        let hw = fixture("synthetic_renamed_schema.xml").display().to_string();
        let toc = fixture("synthetic_toc.xml").display().to_string();
        let o = laya_bench(dir.path(), &["trace", "summarize", "--hardware-xml", &hw, "--toc-xml", &toc]);
        assert_exit(&o, 2, &format!("--hardware-xml {hw}: unknown schema"));
        assert!(stderr(&o).contains("found tables [\"neural-engine-hw-intervals-v2\"]"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty());
    }

    #[test]
    fn a_missing_or_truncated_file_exits_2() {
        let dir = tempfile::tempdir().unwrap();
        let toc = fixture("synthetic_toc.xml").display().to_string();
        let o =
            laya_bench(dir.path(), &["trace", "summarize", "--hardware-xml", "nope.xml", "--toc-xml", &toc]);
        assert_exit(&o, 2, "--hardware-xml nope.xml: cannot read nope.xml");
        let cut = fixture("malformed_truncated.xml").display().to_string();
        let o = laya_bench(dir.path(), &["trace", "summarize", "--hardware-xml", &cut, "--toc-xml", &toc]);
        assert_exit(&o, 2, &format!("--hardware-xml {cut}: malformed XML"));
        // Files swapped: the message names the option that got the wrong file.
        let o = laya_bench(dir.path(), &["trace", "summarize", "--hardware-xml", &toc, "--toc-xml", &cut]);
        assert_exit(&o, 2, &format!("--toc-xml {cut}:"));
        // An output folder that does not exist is refused before any parsing.
        let hw = fixture("synthetic_ane_hw_intervals.xml").display().to_string();
        let args =
            ["trace", "summarize", "--hardware-xml", &hw, "--toc-xml", &toc, "--output", "nodir/t.json"];
        let o = laya_bench(dir.path(), &args);
        assert_exit(&o, 2, "--output nodir/t.json: the folder nodir does not exist");
        assert!(stdout(&o).is_empty());
    }
}

mod run {
    use super::*;

    fn read_ready(path: &Path) -> ReadyFile {
        ReadyFile::parse(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn writes_the_ready_file_and_a_complete_raw_record_of_one_block() {
        let dir = tempfile::tempdir().unwrap();
        let before =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        let o = laya_bench(
            dir.path(),
            &[
                "trace",
                "run",
                "--arm",
                "m=mock:ok",
                "--seconds",
                "300ms",
                "--ready",
                "ready.json",
                "--raw",
                "r.raw.jsonl",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let ready = read_ready(&dir.path().join("ready.json"));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("ready.json")).unwrap()).unwrap();
        assert!(json["pid"].as_u64().is_some_and(|p| p > 0), "{json}");
        assert_eq!(json["schema_version"], 1);
        assert!(ready.started_unix_s >= before - 1.0 && ready.ready_unix_s >= ready.started_unix_s);
        assert_eq!((ready.arm.as_str(), ready.spec.as_str()), ("m", "mock:ok"));
        assert_eq!(ready.block_seconds, 0.3);

        let run = raw::read(&dir.path().join("r.raw.jsonl")).unwrap();
        assert!(run.complete);
        assert_eq!(run.header.kind, "trace-run");
        assert_eq!(run.header.started_unix_s, ready.started_unix_s);
        assert_eq!(run.header.plan.order, vec!["m".to_string()]);
        let blocks: Vec<&Record> = run.records.iter().filter(|r| matches!(r, Record::Block { .. })).collect();
        assert_eq!(blocks.len(), 1, "one measured block");
        let Record::Block { calls, start_ns, end_ns, .. } = blocks[0] else { unreachable!() };
        assert!(end_ns - start_ns >= 300_000_000);
        let call_records = run.records.iter().filter(|r| matches!(r, Record::Call { .. })).count() as u64;
        assert_eq!(call_records, *calls);
        assert!(matches!(run.records.first(), Some(Record::Warmup { .. })));
        assert!(
            matches!(run.records.last(), Some(Record::Footer { total_calls, .. }) if *total_calls == *calls)
        );
        assert!(stdout(&o).contains(&format!("calls {calls}")), "{}", stdout(&o));
    }

    #[test]
    fn the_ready_file_appears_while_the_child_runs_and_names_its_pid() {
        let dir = tempfile::tempdir().unwrap();
        let ready_path = dir.path().join("ready.json");
        let mut child = Command::new(BIN)
            .current_dir(dir.path())
            .args(["trace", "run", "--arm", "m=mock:ok", "--seconds", "3s", "--ready", "ready.json"])
            .args(["--raw", "r.raw.jsonl"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let ready = loop {
            if ready_path.exists() {
                break read_ready(&ready_path);
            }
            assert!(child.try_wait().unwrap().is_none(), "trace run exited before it was ready");
            assert!(Instant::now() < deadline, "no ready file within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(ready.pid, child.id());
        assert!(child.try_wait().unwrap().is_none(), "the measured block runs after the ready file");
        assert!(child.wait().unwrap().success());
        assert!(raw::read(&dir.path().join("r.raw.jsonl")).unwrap().complete);
    }

    #[test]
    fn bad_input_exits_2_before_running() {
        let dir = tempfile::tempdir().unwrap();
        for (args, needle) in [
            (vec!["--arm", "=portable:f32"], "NAME=SPEC"),
            (vec!["--arm", "a=mock:ok", "--arm", "b=mock:ok"], "cannot be used multiple times"),
            (vec!["--seconds", "0"], "longer than zero"),
            (vec!["--seconds", "3 parsecs"], "--seconds"),
            (vec!["--ready", "no/such/dir/ready.json"], "does not exist"),
            (vec!["--tokens", "97"], "does not fit"),
        ] {
            let mut all = vec!["trace", "run", "--raw", "r.raw.jsonl"];
            all.extend(args);
            let o = laya_bench(dir.path(), &all);
            assert_exit(&o, 2, needle);
        }
        assert!(!dir.path().join("r.raw.jsonl").exists());
    }

    #[test]
    fn a_failing_arm_exits_1_and_keeps_the_raw_record() {
        let dir = tempfile::tempdir().unwrap();
        let o = laya_bench(
            dir.path(),
            &["trace", "run", "--arm", "m=mock:fail-after=30", "--seconds", "2s", "--raw", "r.raw.jsonl"],
        );
        assert_exit(&o, 1, "everything measured so far is in r.raw.jsonl");
        let run = raw::read(&dir.path().join("r.raw.jsonl")).unwrap();
        assert!(
            matches!(run.records.last(), Some(Record::Footer { status, .. }) if status.as_str() == "failed")
        );
    }
}

mod record {
    use super::*;

    #[cfg(not(target_os = "macos"))]
    #[test]
    fn needs_macos_and_says_what_to_do_instead() {
        let dir = tempfile::tempdir().unwrap();
        let o = laya_bench(dir.path(), &["trace", "record", "--seconds", "1s"]);
        assert_exit(
            &o,
            2,
            "trace record needs macOS with Xcode command-line tools (xcrun xctrace); on Linux use \
             `trace run --ready FILE` and attach perf",
        );
        assert!(!dir.path().join("artifacts").exists());
    }

    /// A stand-in for `xcrun`: logs its arguments, checks that the attached pid is alive, and
    /// answers the exports with the synthetic fixtures (the TOC names the attached pid).
    #[cfg(unix)]
    fn fake_xcrun(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let fixtures = fixture("");
        let script = format!(
            r#"#!/bin/sh
here=$(dirname "$0")
printf '%s\n' "$*" >> "$here/xcrun.log"
[ "$1" = xctrace ] || exit 64
cmd=$2; shift 2
pid=; out=; input=; xpath=; toc=
while [ $# -gt 0 ]; do
  case "$1" in
    --attach) pid=$2; shift 2;;
    --output) out=$2; shift 2;;
    --input) input=$2; shift 2;;
    --xpath) xpath=$2; shift 2;;
    --template|--time-limit) shift 2;;
    --toc) toc=1; shift;;
    *) shift;;
  esac
done
case "$cmd" in
  record) kill -0 "$pid" || exit 65; mkdir -p "$out"; echo "$pid" > "$out/pid";;
  export)
    if [ -n "$toc" ]; then
      sed "s/pid=\"4242\"/pid=\"$(cat "$input/pid")\"/" "{f}/synthetic_toc.xml" > "$out"
    else
      case "$xpath" in
        *ane-hw-intervals*) cp "{f}/synthetic_ane_hw_intervals.xml" "$out";;
        *coreml-os-signpost*) cp "{f}/synthetic_coreml_os_signpost.xml" "$out";;
        *) exit 66;;
      esac
    fi;;
  *) exit 64;;
esac
"#,
            f = fixtures.display()
        );
        let path = dir.join("xcrun");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[cfg(unix)]
    #[test]
    fn record_plumbing_attaches_to_the_ready_pid_exports_and_summarizes() {
        use laya_bench::cli::{ModelArgs, TraceRecordArgs, TraceWorkloadArgs};
        use laya_bench::commands::trace::{record_with, RecordTools};

        let dir = tempfile::tempdir().unwrap();
        let xcrun = fake_xcrun(dir.path());
        let artifacts = dir.path().join("artifacts");
        let args = TraceRecordArgs {
            workload: TraceWorkloadArgs {
                model: ModelArgs { model: "builtin:tiny".into() },
                arm: laya_bench::run::arm::ArmSpec::parse_named("m=mock:ok").unwrap(),
                workload: "invoice".into(),
                tokens: Some(91),
                length: 96,
                warmup: 5,
            },
            seconds: std::time::Duration::from_secs(1),
            margin: std::time::Duration::ZERO,
            ready_timeout: std::time::Duration::from_secs(20),
            artifacts: artifacts.clone(),
            template: "Core ML".into(),
            json: true,
        };
        let tools = RecordTools { exe: PathBuf::from(BIN), xcrun };
        if let Err(failure) = record_with(&args, &tools, &laya_bench::settings::Settings::UNSET) {
            panic!("trace record failed: {failure}");
        }
        let folders: Vec<PathBuf> =
            std::fs::read_dir(&artifacts).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(folders.len(), 1);
        let folder = &folders[0];
        assert!(folder.file_name().unwrap().to_string_lossy().starts_with("trace-"));
        let ready = ReadyFile::parse(&std::fs::read(folder.join("ready.json")).unwrap()).unwrap();

        let log = std::fs::read_to_string(dir.path().join("xcrun.log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        let trace = folder.join("run.trace");
        assert_eq!(
            lines,
            [
                format!(
                    "xctrace record --template Core ML --attach {} --time-limit 1s --output {} --no-prompt",
                    ready.pid,
                    trace.display()
                ),
                format!(
                    "xctrace export --input {} --toc --output {}",
                    trace.display(),
                    folder.join("toc.xml").display()
                ),
                format!(
                    "xctrace export --input {} --xpath /trace-toc/run[@number=\"1\"]/data/table[@schema=\"ane-hw-intervals\"] --output {}",
                    trace.display(),
                    folder.join("ane-hw-intervals.xml").display()
                ),
                format!(
                    "xctrace export --input {} --xpath /trace-toc/run[@number=\"1\"]/data/table[@schema=\"coreml-os-signpost\"] --output {}",
                    trace.display(),
                    folder.join("coreml-os-signpost.xml").display()
                ),
            ]
        );

        let summary: TraceSummary =
            serde_json::from_slice(&std::fs::read(folder.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary.recording.target_process.as_ref().and_then(|p| p.pid), Some(ready.pid));
        assert!(summary.notes.iter().all(|n| !n.contains("target pid")), "{:?}", summary.notes);
        assert_eq!(summary.hardware.all.busy_union_ns, 9_091_834);
        let run = raw::read(&folder.join("trace-run.raw.jsonl")).unwrap();
        assert!(run.complete);
        assert_eq!(run.header.kind, "trace-run");
        assert!(std::fs::read_to_string(folder.join("trace-run.log"))
            .unwrap()
            .contains("trace run: arm `m`"));
    }
}
