//! `ref:` arms (a reference runtime in a Python worker) driven by the deterministic fake
//! runtime `fixtures/reference/fake_runtime.py` through `ref:factory:`: the protocol, every
//! failure a worker can have (each a clear exit 1 with the raw record kept and the worker's
//! stderr tail), and the set-up errors that exit 2 before measuring. Needs `python3`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{fixture, stderr, stdout, SHORT_ENERGY};
use laya_bench::record::{self, Record};

fn fake(mode: &str) -> String {
    format!("ref:factory:{}:make:{mode}", fixture("fixtures/reference/fake_runtime.py").display())
}

fn run(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_laya-bench"));
    c.current_dir(dir).args(args).env_remove("LAYA_BENCH_PYTHON");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("run laya-bench")
}

/// `speed` of the arms: 4 calls a block, one cycle, 8 warm-up calls, raw file `r.raw.jsonl`.
fn speed(dir: &Path, arms: &[&str]) -> Output {
    let mut args = vec!["speed", "--no-progress", "--calls", "4", "--cycles", "1", "--warmup", "8"];
    for a in arms {
        args.extend(["--arm", a]);
    }
    args.extend(["--raw", "r.raw.jsonl", "--output", "r.json"]);
    run(dir, &[], &args)
}

fn assert_failed_with(dir: &Path, o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing `{n}` in: {err}");
    }
    let run = record::read(&dir.join("r.raw.jsonl")).expect("the raw record is kept");
    assert!(matches!(run.records.last(), Some(Record::Footer { status, .. }) if status.as_str() == "failed"));
    assert!(run.records.iter().any(|r| matches!(r, Record::Error { .. })));
}

#[test]
fn a_reference_arm_runs_beside_ours_with_its_own_time_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &["m=mock:ok", &format!("r={}", fake("ok"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("is a reference runtime in a Python worker"), "{}", stdout(&o));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let r = &report["arms"][1];
    assert_eq!(r["arm"]["backend"], "fake_runtime 0.0.1");
    assert!(r["arm"]["device"].as_str().unwrap().starts_with("Python 3."), "{}", r["arm"]["device"]);
    let (t, rt) =
        (r["totals"]["time_per_decision_s"].as_f64().unwrap(), r["round_trip_mean_s"].as_f64().unwrap());
    assert!(t > 0.0 && rt > t, "runtime {t} s inside its round trip {rt} s");
    assert!(report["arms"][0]["round_trip_mean_s"].is_null());
    // A factory callable's arithmetic is its own: no FLOP rate is made up for it.
    assert!(r["achieved_gflops"].is_null() && r["gflop_per_decision"].is_number(), "{r}");
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let mut ours = 0;
    let mut theirs = 0;
    for rec in &run.records {
        if let Record::Call { arm, runtime_ns, duration_ns, .. } = rec {
            match (arm.as_str(), runtime_ns) {
                ("m", None) => ours += 1,
                ("r", Some(ns)) if ns <= duration_ns => theirs += 1,
                other => panic!("unexpected call record {other:?}"),
            }
        }
    }
    assert_eq!((ours, theirs), (8, 8));
}

#[test]
fn predict_answers_through_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let req = fixture("fixtures/requests/invoice.json");
    let mut args = vec!["predict", "--backend"];
    let spec = fake("ok");
    args.push(&spec);
    let req_text = req.display().to_string();
    if req.exists() {
        args.extend(["--request", &req_text]);
    } else {
        return;
    }
    let o = run(dir.path(), &[], &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"noul\": 0.75"), "{}", stdout(&o));
}

#[test]
fn a_worker_that_crashes_mid_run_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10", fake("crash"))]);
    assert_failed_with(
        dir.path(),
        &o,
        &["the worker exited", "during a call", "fake runtime: crash on call 11"],
    );
}

#[test]
fn a_worker_that_hangs_is_stopped_at_the_call_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10:call-timeout=1", fake("hang"))]);
    assert_failed_with(dir.path(), &o, &["no answer within 1 s", "fake runtime: hang on call 11"]);
}

#[test]
fn garbage_on_stdout_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10", fake("garbage"))]);
    assert_failed_with(dir.path(), &o, &["not the protocol's", "this is not json", "fake runtime: garbage"]);
}

#[test]
fn a_result_that_is_not_json_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10", fake("nonjson"))]);
    assert_failed_with(dir.path(), &o, &["the runtime's result is not JSON", "fake runtime: nonjson"]);
}

#[test]
fn a_result_of_another_shape_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10", fake("shape"))]);
    assert_failed_with(
        dir.path(),
        &o,
        &["a result of another shape", "no `answers` object", "fake runtime: shape"],
    );
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:10", fake("raise"))]);
    assert_failed_with(dir.path(), &o, &["the runtime failed", "the fake runtime refuses"]);
}

#[test]
fn a_slow_load_is_outside_the_call_timeout_but_not_the_load_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:0:1.5:call-timeout=0.5", fake("ok"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &[&format!("r={}:0:30:load-timeout=0.5", fake("ok"))]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no answer within 0.5 s during loading") && err.contains("fake runtime: loading"),
        "{err}"
    );
}

#[test]
fn a_missing_interpreter_or_package_exits_2_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["speed", "--no-progress", "--calls", "1", "--arm", "r=ref:factory:no_such_module_laya:make"];
    let o = run(dir.path(), &[], &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`no_such_module_laya` is missing") && err.contains("pip install no_such_module_laya"),
        "{err}"
    );
    let o = run(dir.path(), &[("LAYA_BENCH_PYTHON", "/nonexistent/python")], &args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot start the Python interpreter `/nonexistent/python`"), "{err}");
    let o = run(dir.path(), &[], &["speed", "--calls", "1", "--arm", "r=ref:laya-mlx"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ref:laya-mlx:CKPT[:fp32|fp16]"), "{}", stderr(&o));
    assert!(!dir.path().join("r.raw.jsonl").exists());
}

#[test]
fn energy_runs_a_reference_arm_with_an_exec_meter() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    let spec = format!("r={}", fake("ok"));
    let mut args = SHORT_ENERGY.to_vec();
    args.extend(["--sensor", meter, "--arm", "m=mock:ok", "--arm", &spec, "--cycles", "1"]);
    args.extend(["--raw", "r.raw.jsonl", "--output", "r.json"]);
    let o = run(dir.path(), &[], &args);
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{}", stderr(&o));
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    assert!(run
        .records
        .iter()
        .any(|r| matches!(r, Record::Call { arm, runtime_ns: Some(_), .. } if arm == "r")));
    assert!(matches!(run.records.last(), Some(Record::Footer { status, .. }) if status.as_str() != "failed"));
}

/// `ref:laya`'s precision: asked for in the spec, set through laya's own switches, and recorded
/// as the precision laya says it runs, here against `fixtures/reference/fake_laya`, a stand-in
/// for laya 0.4.15's load-time policy (on CUDA it autocasts to FP16 unless told otherwise).
#[test]
fn a_laya_arm_records_the_precision_laya_runs_and_refuses_one_it_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = fixture("fixtures/tiny").display().to_string();
    let path = fixture("fixtures/reference/fake_laya").display().to_string();
    let envs = [("PYTHONPATH", path.as_str()), ("LAYA_CUDA_AMP", "bf16")];
    let arms: Vec<String> = ["cuda", "cuda:fp32", "cuda:fp16", "cpu:bf16", "cpu"]
        .iter()
        .enumerate()
        .map(|(i, rest)| format!("a{i}=ref:laya:{ckpt}:{rest}"))
        .collect();
    let mut args = vec!["speed", "--no-progress", "--calls", "2", "--cycles", "1", "--warmup", "2"];
    for a in &arms {
        args.extend(["--arm", a.as_str()]);
    }
    args.extend(["--raw", "r.raw.jsonl", "--output", "r.json"]);
    let o = run(dir.path(), &envs, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let got: Vec<(String, String)> = report["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let a = &r["arm"];
            (a["precision"].as_str().unwrap().to_string(), a["device"].as_str().unwrap().to_string())
        })
        .collect();
    // No precision asked: whatever laya chose, here the caller's LAYA_CUDA_AMP=bf16.
    assert_eq!(got[0].0, "bf16 autocast", "{got:?}");
    assert!(got[0].1.contains(r#"options {"device":"cuda"}"#), "{got:?}");
    // fp32 on CUDA: laya's autocast flag turned off after load, and said so.
    assert_eq!(got[1].0, "fp32", "{got:?}");
    assert!(got[1].1.contains(r#""amp_enabled":false"#), "{got:?}");
    // Asked precisions win over the caller's environment.
    assert_eq!(got[2].0, "fp16 autocast", "{got:?}");
    assert!(got[2].1.contains(r#""LAYA_CUDA_AMP":"fp16""#), "{got:?}");
    assert_eq!(got[3].0, "bf16 autocast", "{got:?}");
    assert!(got[3].1.contains(r#""LAYA_CPU_AMP":"bf16""#), "{got:?}");
    assert_eq!(got[4].0, "fp32", "{got:?}");
    // The header the audit reads says the same.
    let header = std::fs::read_to_string(dir.path().join("r.raw.jsonl")).unwrap();
    let header: Value = serde_json::from_str(header.lines().next().unwrap()).unwrap();
    assert_eq!(header["arms"][1]["precision"], "fp32", "{header}");
    assert_eq!(header["arms"][1]["spec"], format!("ref:laya:{ckpt}:cuda:fp32"));

    // laya has no FP16 on the CPU: asked for, the arm is refused before anything is measured.
    let spec = format!("r=ref:laya:{ckpt}:cpu:fp16");
    let o = run(
        dir.path(),
        &envs,
        &["speed", "--no-progress", "--calls", "1", "--arm", &spec, "--raw", "x.raw.jsonl"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("fp16 was asked, but laya on cpu runs fp32"), "{err}");
    assert!(!dir.path().join("x.raw.jsonl").exists());
}

/// Whether the interpreter a `ref:` arm would start imports laya_mlx (the venv
/// `scripts/setup-ref.sh` makes, or `$LAYA_BENCH_PYTHON`).
fn laya_mlx_python() -> Option<String> {
    let python = std::env::var("LAYA_BENCH_PYTHON").ok().filter(|p| !p.is_empty()).or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
        let venv = cache.join("laya-bench/ref-venv/bin/python");
        venv.is_file().then(|| venv.display().to_string())
    })?;
    let ok = Command::new(&python).args(["-c", "import laya_mlx"]).output().is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

/// The interpreter with laya-mlx, or `None` after saying why the test is skipped (a failure
/// where `LAYA_BENCH_REQUIRE_REF=1`: CI, after scripts/setup-ref.sh).
fn laya_mlx_or_skip() -> Option<String> {
    let python = laya_mlx_python();
    if python.is_none() {
        assert!(
            std::env::var("LAYA_BENCH_REQUIRE_REF").is_err(),
            "LAYA_BENCH_REQUIRE_REF is set but laya-mlx is not installed"
        );
        eprintln!("skipped: laya-mlx is not installed (scripts/setup-ref.sh)");
    }
    python
}

/// The published laya-mlx 0.5.0 against our engines on the committed checkpoint
/// `fixtures/tiny` (which carries the `encoder` key laya-mlx requires, as the published
/// checkpoints do): the same answers and probabilities within 1e-4 at fp32.
#[test]
fn laya_mlx_answers_as_our_engines_do() {
    let Some(python) = laya_mlx_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tiny = fixture("fixtures/tiny").display().to_string();
    let reference = format!("r=ref:laya-mlx:{tiny}:fp32");
    let mlx = format!("m=mlx:fp32:{tiny}");
    let mut args =
        vec!["speed", "--no-progress", "--model", &tiny, "--arm", "p=portable:f32", "--arm", &reference];
    if cfg!(feature = "mlx") {
        args.extend(["--arm", &mlx]);
    }
    args.extend([
        "--calls",
        "2",
        "--cycles",
        "1",
        "--warmup",
        "8",
        "--raw",
        "r.raw.jsonl",
        "--output",
        "r.json",
    ]);
    let o = run(dir.path(), &[("LAYA_BENCH_PYTHON", &python)], &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    for arm in report["arms"].as_array().unwrap() {
        assert_eq!(arm["vs_baseline"]["answer_mismatches"], 0, "{arm}");
        assert!(arm["vs_baseline"]["max_probability_diff"].as_f64().unwrap() <= 1e-4, "{arm}");
    }
    let r = &report["arms"][1]["arm"];
    assert_eq!(r["backend"], "laya-mlx 0.5.0");
    assert!(r["device"].as_str().unwrap().contains("\"pad_to_multiple\":32"), "{r}");
}

/// A three-question suite (noul, choice, score) about one state, written to `dir/suite.json`.
fn small_suite(dir: &Path) -> String {
    let suite = serde_json::json!({
        "schema_version": 1,
        "name": "ref-small",
        "states": {"s": "I was charged twice for order 1182, please refund one charge."},
        "questions": [
            {"id": "n", "state": "s", "question": {"type": "noul", "instructions": "Refund owed?"}},
            {"id": "c", "state": "s", "question": {"type": "choice", "instructions": "Topic?", "criteria": ["billing", "shipping", "account"]}},
            {"id": "g", "state": "s", "question": {"type": "score", "instructions": "Urgency?", "criteria": ["low", "medium", "high"]}},
        ]
    });
    let path = dir.join("suite.json");
    std::fs::write(&path, suite.to_string()).unwrap();
    path.display().to_string()
}

/// `convert-check` of `candidate` against `source` on [`small_suite`], 2 repeats, report `cc.json`.
fn convert_check(dir: &Path, envs: &[(&str, &str)], source: &str, candidate: &str) -> Output {
    let suite = small_suite(dir);
    let args = [
        "convert-check",
        "--source",
        source,
        "--candidate",
        candidate,
        "--suite",
        &suite,
        "--repeats",
        "2",
        "--output",
        "cc.json",
    ];
    run(dir, envs, &args)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A `ref:` candidate is judged on the result dict it returns. The fake runtime answers every
/// question as a noul at 0.75: the noul question is judged on its numbers, the choice and
/// score questions fail as answered in another type, and the report names the runtime.
#[test]
fn convert_check_judges_a_reference_runtime_on_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let o = convert_check(dir.path(), &[], "builtin:tiny", &fake("ok"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = read_json(&dir.path().join("cc.json"));
    assert_eq!(report["candidate"]["kind"], "reference_runtime");
    assert!(report["candidate"]["notes"][0]
        .as_str()
        .unwrap()
        .contains("rounds every probability to 4 decimals"));
    assert!(report["package"]["candidate"]["missing_reason"]
        .as_str()
        .unwrap()
        .contains("reference runtimes"));
    let q = report["questions"].as_array().unwrap();
    let noul = &q[0]["gates"];
    // The fake's P(true) = 0.75 and act_probability = 0.5, against the source's own numbers.
    assert_eq!(noul["repeats_identical"], true, "{noul}");
    assert!(noul["probability_drift"].as_f64().unwrap() > 0.0, "{noul}");
    assert_eq!(q[0]["candidate_answer"], "true");
    for (i, kind) in [(1, "choice"), (2, "score")] {
        let failures = q[i]["gates"]["failures"][0].as_str().unwrap();
        assert!(failures.contains(&format!("answered a {kind} question as noul")), "{failures}");
    }
}

/// The published runtime as a convert-check candidate against our FP32 source on the same
/// checkpoint: laya-mlx fp32 passes every gate with only its 4-decimal rounding as drift.
#[test]
fn laya_mlx_passes_convert_check_against_our_fp32_source() {
    let Some(python) = laya_mlx_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tiny = fixture("fixtures/tiny").display().to_string();
    let candidate = format!("ref:laya-mlx:{tiny}:fp32");
    let o = convert_check(dir.path(), &[("LAYA_BENCH_PYTHON", &python)], &tiny, &candidate);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let report = read_json(&dir.path().join("cc.json"));
    assert_eq!(report["summary"]["passed_count"], 3, "{}", report["summary"]);
    assert!(report["summary"]["max_drift"].as_f64().unwrap() <= 1e-4, "{}", report["summary"]);
}

/// The published Snake comparison ran the Python runtimes: laya-mlx and our portable engine
/// decide the same moves on the same live states.
#[test]
fn laya_mlx_plays_snake_beside_the_portable_engine() {
    let Some(python) = laya_mlx_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let tiny = fixture("fixtures/tiny").display().to_string();
    let reference = format!("b=ref:laya-mlx:{tiny}:fp32");
    let args = [
        "snake",
        "compare",
        "--model",
        &tiny,
        "--arm",
        "a=portable:f32",
        "--arm",
        &reference,
        "--seeds",
        "101",
        "--steps",
        "12",
        "--output",
        "sc.json",
    ];
    let o = run(dir.path(), &[("LAYA_BENCH_PYTHON", &python)], &args);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("executed agreement 12/12"), "{}", stdout(&o));
}

/// `trace run` on a `ref:` arm names the worker's process in the ready file: the runtime's
/// work happens there, so that is where a profiler attaches.
#[test]
fn trace_run_names_the_worker_process_a_profiler_attaches_to() {
    let dir = tempfile::tempdir().unwrap();
    let arm = format!("r={}", fake("ok"));
    let args = [
        "trace",
        "run",
        "--arm",
        &arm,
        "--seconds",
        "200ms",
        "--warmup",
        "2",
        "--ready",
        "ready.json",
        "--raw",
        "t.raw.jsonl",
    ];
    let o = run(dir.path(), &[], &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ready = read_json(&dir.path().join("ready.json"));
    let (pid, model) = (ready["pid"].as_u64().unwrap(), ready["model_pid"].as_u64().unwrap());
    assert_ne!(pid, model);
    assert!(stdout(&o).contains(&format!("the model runs in the worker, pid {model}")), "{}", stdout(&o));
    // A native arm runs the model in the trace run itself.
    let o = run(
        dir.path(),
        &[],
        &["trace", "run", "--seconds", "200ms", "--ready", "ready.json", "--raw", "u.raw.jsonl"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read_json(&dir.path().join("ready.json"))["model_pid"].is_null());
}

/// `summary` re-derives a speed record's figures as `speed` reported them: a `ref:` arm's
/// block time is the runtime's own (Σ runtime_ns), its wall time kept beside it.
#[test]
fn summary_times_a_reference_arm_by_its_runtime_as_speed_does() {
    let dir = tempfile::tempdir().unwrap();
    let o = speed(dir.path(), &["m=mock:ok", &format!("r={}", fake("ok"))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(dir.path(), &[], &["summary", "r.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary = read_json(&dir.path().join("s.json"));
    let speed_report = read_json(&dir.path().join("r.json"));
    let run_summary = &summary["runs"][0];
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let runtime_ns: u64 = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Call { arm, runtime_ns: Some(ns), .. } if arm == "r" => Some(*ns),
            _ => None,
        })
        .sum();
    let blocks: Vec<&Value> =
        run_summary["blocks"].as_array().unwrap().iter().filter(|b| b["arm"] == "r").collect();
    let time: f64 = blocks.iter().map(|b| b["time_s"].as_f64().unwrap()).sum();
    assert!((time - runtime_ns as f64 / 1e9).abs() < 1e-9, "{time} vs {runtime_ns} ns");
    for b in &blocks {
        assert_eq!(b["time_s"], b["runtime_s"]);
        assert!(b["wall_s"].as_f64().unwrap() > b["runtime_s"].as_f64().unwrap(), "{b}");
    }
    let ours = run_summary["blocks"].as_array().unwrap().iter().find(|b| b["arm"] == "m").unwrap();
    assert!(ours["runtime_s"].is_null() && ours["time_s"] == ours["wall_s"], "{ours}");
    let t_summary = run_summary["arms"][1]["totals"]["time_per_decision_s"].as_f64();
    let t_speed = speed_report["arms"][1]["totals"]["time_per_decision_s"].as_f64().unwrap();
    assert!(t_summary.is_some_and(|t| (t - t_speed).abs() <= 1e-9 * t_speed), "{t_summary:?} vs {t_speed}");
}

/// `ref:laya-cuda` against `fixtures/reference/fake_laya_cuda`, a stand-in for laya-cuda
/// 0.1.1.post1's `Engine` that answers in laya 0.3's shape (no `answer_confidence`, `usage` with
/// `input_tokens` only) and takes no per-call options.
fn fake_laya_cuda() -> String {
    fixture("fixtures/reference/fake_laya_cuda").display().to_string()
}

#[test]
fn a_laya_cuda_arm_answers_in_laya_0_3_shape_and_is_compared_by_what_both_carry() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_laya_cuda();
    let cuda = format!("c=ref:laya-cuda:{}:cuda:0", fixture("fixtures/tiny").display());
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    let mut args = SHORT_ENERGY.to_vec();
    args.extend([
        "--boundary",
        "wall",
        "--sensor",
        meter,
        "--arm",
        "p=portable:f32",
        "--arm",
        &cuda,
        "--cycles",
        "1",
    ]);
    args.extend(["--raw", "r.raw.jsonl", "--output", "r.json", "--export-markdown", "r.md"]);
    let o = run(dir.path(), &[("PYTHONPATH", path.as_str())], &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = read_json(&dir.path().join("r.json"));
    let c = &report["arms"][1];
    assert_eq!(c["arm"]["backend"], "laya-cuda 0.1.1.post1+stand-in", "{c}");
    assert_eq!(c["arm"]["precision"], "fp16", "{c}");
    let notes = c["arm"]["notes"].to_string();
    assert!(notes.contains("laya 0.3's shape: they lack `answer_confidence`"), "{notes}");
    assert!(notes.contains("takes no per-call options"), "{notes}");
    // Compared with the baseline by what both carry: the stand-in's uniform answers are not
    // the model's, its rows are counted in characters, and what it lacks is named.
    let cmp = &c["answers_vs_baseline"];
    assert_eq!(cmp["requests"], 8, "{cmp}");
    assert_eq!(cmp["lacks"], serde_json::json!(["answer_confidence", "usage.state_tokens"]), "{cmp}");
    assert_eq!(cmp["rows_differ"], 8, "{cmp}");
    assert!(cmp["max_probability_diff"].as_f64().unwrap() > 0.0, "{cmp}");
    assert!(report["arms"][0].get("answers_vs_baseline").is_none());
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.contains("Answers against the baseline `p`"), "{md}");
    assert!(md.contains("(its results lack `answer_confidence`, `usage.state_tokens`)"), "{md}");
    // The raw record keeps each warm-up result as the runtime stated it.
    let raw = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let warm = raw
        .records
        .iter()
        .find_map(|r| match r {
            Record::Warmup { arm, results, .. } if arm == "c" => Some(results.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(warm.len(), 8);
    assert!(warm[0]["answers"].as_object().unwrap().values().all(|a| a.get("answer_confidence").is_none()));
    // summary re-derives the same comparison from the record alone
    let o = run(dir.path(), &[], &["summary", "r.raw.jsonl", "--output", "-"]);
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let arm =
        summary["runs"][0]["arms"].as_array().unwrap().iter().find(|a| a["name"] == "c").unwrap().clone();
    assert_eq!(arm["answers_vs_baseline"], *cmp, "{arm}");
}

#[test]
fn a_per_call_option_laya_cuda_cannot_take_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake_laya_cuda();
    let envs = [("PYTHONPATH", path.as_str())];
    let backend = format!("ref:laya-cuda:{}", fixture("fixtures/tiny").display());
    let q = r#"{"refund": {"type": "noul", "instructions": "Refund asked for?"}}"#;
    let o = run(
        dir.path(),
        &envs,
        &["predict", "--backend", &backend, "--state", "a refund", "--questions", q, "--max-len", "64"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("laya-cuda's predict(state, questions) takes no per-call options, and the request passes `max_len`"), "{}", stderr(&o));
    // Without it, the same request is answered, in laya 0.3's shape.
    let o = run(
        dir.path(),
        &envs,
        &["predict", "--backend", &backend, "--state", "a refund", "--questions", q, "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let answer: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(answer["answers"]["refund"]["noul"], 0.5, "{answer}");
    assert!(answer["answers"]["refund"].get("answer_confidence").is_none(), "{answer}");
    // A workload whose request passes it: exit 2 naming the arm and the request, no raw record.
    let requests = r#"[{"state": "a", "questions": {"q": {"type": "noul", "instructions": "ok?"}}},
                      {"state": "b", "questions": {"q": {"type": "noul", "instructions": "ok?"}}, "max_len": 64}]"#;
    std::fs::write(dir.path().join("w.json"), requests).unwrap();
    let arm = format!("c={backend}");
    let o = run(
        dir.path(),
        &envs,
        &[
            "speed",
            "--no-progress",
            "--workload",
            "w.json",
            "--arm",
            "p=portable:f32",
            "--arm",
            &arm,
            "--raw",
            "r.raw.jsonl",
            "--output",
            "r.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("arm `c`"), "{}", stderr(&o));
    assert!(stderr(&o).contains("request 1 of workload"), "{}", stderr(&o));
    assert!(!dir.path().join("r.raw.jsonl").exists());
    // convert-check passes --max-len to the runtime: refused before the first question
    let suite = small_suite(dir.path());
    let tiny = fixture("fixtures/tiny").display().to_string();
    let o = run(
        dir.path(),
        &envs,
        &[
            "convert-check",
            "--model",
            &tiny,
            "--backend",
            &backend,
            "--suite",
            &suite,
            "--max-len",
            "64",
            "--output",
            "cc.json",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("takes no per-call options, and the request passes `max_len`"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("cc.json").exists());
}
