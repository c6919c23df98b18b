//! `ref:` arms (a reference runtime in a Python worker) driven by the deterministic fake
//! runtime `fixtures/reference/fake_runtime.py` through `ref:factory:`: the protocol, every
//! failure a worker can have (each a clear exit 1 with the raw record kept and the worker's
//! stderr tail), and the set-up errors that exit 2 before measuring. Needs `python3`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{fixture, stderr, stdout};
use laya_bench::report::raw::{self, Record};

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
    let run = raw::read(&dir.join("r.raw.jsonl")).expect("the raw record is kept");
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
    let (t, rt) = (r["time_per_decision_s"].as_f64().unwrap(), r["round_trip_mean_s"].as_f64().unwrap());
    assert!(t > 0.0 && rt > t, "runtime {t} s inside its round trip {rt} s");
    assert!(report["arms"][0]["round_trip_mean_s"].is_null());
    let run = raw::read(&dir.path().join("r.raw.jsonl")).unwrap();
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
    let args = [
        "energy",
        "--no-progress",
        "--sensor",
        meter,
        "--arm",
        "m=mock:ok",
        "--arm",
        &spec,
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
        "--raw",
        "r.raw.jsonl",
        "--output",
        "r.json",
    ];
    let o = run(dir.path(), &[], &args);
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{}", stderr(&o));
    let run = raw::read(&dir.path().join("r.raw.jsonl")).unwrap();
    assert!(run
        .records
        .iter()
        .any(|r| matches!(r, Record::Call { arm, runtime_ns: Some(_), .. } if arm == "r")));
    assert!(matches!(run.records.last(), Some(Record::Footer { status, .. }) if status.as_str() != "failed"));
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

/// The published laya-mlx 0.5.0 against our engines on the same checkpoint (an export of
/// builtin:tiny, which carries the `encoder` key laya-mlx requires): the same answers and
/// probabilities within 1e-4 at fp32. Skipped where laya-mlx is not installed, unless
/// `LAYA_BENCH_REQUIRE_REF=1` (CI, after scripts/setup-ref.sh).
#[test]
fn laya_mlx_answers_as_our_engines_do() {
    let Some(python) = laya_mlx_python() else {
        assert!(
            std::env::var("LAYA_BENCH_REQUIRE_REF").is_err(),
            "LAYA_BENCH_REQUIRE_REF is set but laya-mlx is not installed"
        );
        eprintln!("skipped: laya-mlx is not installed (scripts/setup-ref.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), &[], &["export", "--model", "builtin:tiny", "--output", "ckpt"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reference = "r=ref:laya-mlx:ckpt:fp32";
    let mut args =
        vec!["speed", "--no-progress", "--model", "ckpt", "--arm", "p=portable:f32", "--arm", reference];
    if cfg!(feature = "mlx") {
        args.extend(["--arm", "m=mlx:fp32:ckpt"]);
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
        assert_eq!(arm["answer_mismatches_vs_baseline"], 0, "{arm}");
        assert!(arm["max_probability_diff_vs_baseline"].as_f64().unwrap() <= 1e-4, "{arm}");
    }
    let r = &report["arms"][1]["arm"];
    assert_eq!(r["backend"], "laya-mlx 0.5.0");
    assert!(r["device"].as_str().unwrap().contains("\"pad_to_multiple\":32"), "{r}");
}
