//! The MLX arm (`mlx:fp32|fp16:SRC`, feature `mlx`) in every command that takes an arm, run
//! as a user runs them. On Linux this is MLX's CPU build from the PyPI wheels
//! (`scripts/setup-mlx.sh`); the numbers are checked against the portable FP32 engine.

use std::process::Output;

use laya_bench::record::{self, Record};
use serde_json::Value;

use crate::common::{laya_bench, stderr, stdout};

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "stdout:\n{}\nstderr:\n{}", stdout(o), stderr(o));
}

const MLX32: &str = "mlx:fp32:builtin:tiny";
const MLX16: &str = "mlx:fp16:builtin:tiny";

/// Numbers in two result documents: equal structure and strings, numbers within `tol`.
fn assert_close(a: &Value, b: &Value, tol: f64, path: &str) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= tol, "{path}: {x} vs {y}");
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{path}");
            for (k, v) in x {
                assert_close(v, &y[k], tol, &format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_close(v, w, tol, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn predict_on_mlx_fp32_prints_the_portable_result() {
    let dir = tempfile::tempdir().unwrap();
    let run = |backend: &str| {
        let o = laya_bench(
            dir.path(),
            &[
                "predict",
                "--request",
                &crate::common::fixture("fixtures/requests/support.json").display().to_string(),
                "--backend",
                backend,
                "--json",
            ],
        );
        ok(&o);
        stdout(&o).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect::<Vec<_>>()
    };
    let portable = run("portable:f32");
    let mlx = run(MLX32);
    assert!(!mlx.is_empty());
    // Results are rounded to 4 decimals: one unit of the last place is the tolerance.
    assert_close(&Value::Array(mlx), &Value::Array(portable), 1.00001e-4, "result");
}

#[test]
fn speed_runs_portable_and_mlx_side_by_side_with_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &[
            "speed",
            "--arm",
            "p=portable:f32",
            "--arm",
            &format!("m={MLX32}"),
            "--arm",
            &format!("h={MLX16}"),
            "--calls",
            "5",
            "--cycles",
            "1",
            "--warmup",
            "3",
            "--raw",
            "r.raw.jsonl",
            "--output",
            "r.json",
            "--no-progress",
        ],
    );
    ok(&o);
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    assert!(run.complete);
    let m = &run.header.arms[1];
    assert_eq!((m.backend.as_str(), m.precision.as_str()), ("mlx", "fp32"));
    #[cfg(target_os = "linux")]
    {
        assert!(m.device.starts_with("cpu (MLX 0.32.2 CPU build"), "{}", m.device);
        let blas = m.blas.as_deref().expect("the raw header names the BLAS");
        assert!(!blas.starts_with("netlib"), "{blas}");
    }
    assert_eq!(run.header.arms[0].blas, None, "the portable engine has its own kernels");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["stable"], true);
    assert_eq!(report["arms"][1]["vs_baseline"]["answer_mismatches"], 0);
    assert!(report["arms"][1]["vs_baseline"]["max_probability_diff"].as_f64().unwrap() <= 1e-4);
    assert!(report["arms"][2]["vs_baseline"]["max_probability_diff"].as_f64().unwrap() <= 0.02);
    assert_eq!(
        report["arms"][1]["arm"]["blas"],
        run.header.arms[1].blas.clone().map_or(Value::Null, Value::from)
    );
    let calls = run.records.iter().filter(|r| matches!(r, Record::Call { .. })).count();
    assert_eq!(calls, 3 * 2 * 5);
}

#[test]
fn energy_measures_an_mlx_arm_with_a_scripted_meter() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:while true; do echo 41.5; sleep 0.05; done";
    let o = laya_bench(
        dir.path(),
        &[
            "energy",
            "--sensor",
            meter,
            "--arm",
            "p=portable:f32",
            "--arm",
            &format!("m={MLX32}"),
            "--cycles",
            "1",
            "--seconds",
            "400ms",
            "--idle-seconds",
            "300ms",
            "--idle-discard",
            "0s",
            "--sample-interval",
            "50ms",
            "--warmup",
            "3",
            "--raw",
            "e.raw.jsonl",
            "--output",
            "e.json",
            "--no-progress",
        ],
    );
    ok(&o);
    let run = record::read(&dir.path().join("e.raw.jsonl")).unwrap();
    assert!(run.complete);
    assert_eq!(run.header.arms[1].backend, "mlx");
}

#[test]
fn convert_check_passes_mlx_fp32_at_1e_4_and_fp16_at_the_default_gate() {
    let dir = tempfile::tempdir().unwrap();
    for (cand, gate) in [(MLX32, "0.0001"), (MLX16, "0.02")] {
        let o = laya_bench(
            dir.path(),
            &[
                "convert-check",
                "--source",
                "builtin:tiny",
                "--candidate",
                cand,
                "--gate",
                gate,
                "--repeats",
                "2",
                "--output",
                "c.json",
                "--overwrite",
            ],
        );
        ok(&o);
        let r: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).unwrap()).unwrap();
        assert_eq!(r["verdict"], "passed", "{cand}: {r}");
        assert_eq!(r["candidate"]["backend"], cand);
    }
}

#[test]
fn snake_plays_compares_and_benches_on_mlx() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &[
            "snake",
            "play",
            "--headless",
            "--max-speed",
            "--steps",
            "8",
            "--seed",
            "101",
            "--arm",
            MLX32,
            "--record",
            "run.jsonl",
        ],
    );
    ok(&o);
    ok(&laya_bench(dir.path(), &["snake", "replay", "run.jsonl", "--headless"]));
    let o = laya_bench(
        dir.path(),
        &[
            "snake",
            "compare",
            "--arm",
            "a=portable:f32",
            "--arm",
            &format!("b={MLX32}"),
            "--seeds",
            "101",
            "--steps",
            "20",
            "--output",
            "cmp.json",
        ],
    );
    ok(&o);
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cmp.json")).unwrap()).unwrap();
    assert_eq!(r["arms"][1]["backend"], "mlx", "{r}");
    let o = laya_bench(
        dir.path(),
        &[
            "snake",
            "bench",
            "--arm",
            MLX32,
            "--rates",
            "2",
            "--sweep-steps",
            "2",
            "--soak-steps",
            "2",
            "--raw-steps",
            "3",
            "--seeds",
            "101",
            "--output",
            "bench.json",
        ],
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("bench.json")).unwrap()).unwrap();
    // As for the portable arm: exit 0 exactly when a stable rate was found (two soak ticks may
    // not find one), and the report is complete either way.
    let expected = if r["fastest_tested_stable_fps"].is_null() { 1 } else { 0 };
    assert_eq!(o.status.code(), Some(expected), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(r["complete"], true, "{r}");
    assert_eq!(r["arm"]["backend"], "mlx", "{r}");
}

#[test]
fn trace_run_and_doctor_name_the_mlx_device_and_blas() {
    let dir = tempfile::tempdir().unwrap();
    let o = laya_bench(
        dir.path(),
        &[
            "trace",
            "run",
            "--arm",
            &format!("m={MLX32}"),
            "--seconds",
            "500ms",
            "--warmup",
            "3",
            "--raw",
            "t.raw.jsonl",
        ],
    );
    ok(&o);
    let run = record::read(&dir.path().join("t.raw.jsonl")).unwrap();
    assert_eq!(run.header.arms[0].backend, "mlx");
    let o = laya_bench(dir.path(), &["doctor", "--backend", MLX32]);
    ok(&o);
    let text = stdout(&o);
    assert!(text.contains("evaluated a 2×2 product"), "{text}");
    #[cfg(target_os = "linux")]
    assert!(
        text.contains("BLAS OpenBLAS") || text.contains("BLAS oneMKL") || text.contains("BLAS BLIS"),
        "{text}"
    );
}
