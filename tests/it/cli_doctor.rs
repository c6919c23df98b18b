//! `laya-bench doctor` as a user runs it: the Apple section, and `--backend SPEC` load checks.

use std::process::{Command, Output};

use serde_json::Value;

fn laya_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench")).args(args).output().expect("run laya-bench")
}

#[test]
fn doctor_json_reports_backend_loads_and_the_apple_section() {
    let o = laya_bench(&[
        "doctor",
        "--json",
        "--backend",
        "portable:f32",
        "--backend",
        "mlx:fp16:builtin:tiny",
        "--backend",
        "coreml:/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
    assert_eq!(doc["schema_version"], 1);
    let loads = doc["loads"].as_array().expect("loads");
    assert_eq!(loads.len(), 3);
    assert_eq!(loads[0]["spec"], "portable:f32");
    assert_eq!(loads[0]["model"], "builtin:tiny");
    assert_eq!(loads[0]["loaded"], true, "{}", loads[0]);
    assert_eq!(loads[2]["loaded"], false, "{}", loads[2]);
    if cfg!(target_os = "macos") {
        assert!(doc["apple"].is_object(), "{doc}");
        assert!(doc["apple"]["mlx"]["detail"].is_string());
    } else {
        assert!(doc["apple"].is_null());
        assert!(doc["apple_missing_reason"].as_str().unwrap().contains("only on macOS"), "{doc}");
        if cfg!(feature = "mlx") {
            // MLX's CPU build runs on Linux (docs/mlx.md).
            assert_eq!(loads[1]["loaded"], true, "{}", loads[1]);
        } else {
            assert_eq!(loads[1]["loaded"], false);
            let detail = loads[1]["detail"].as_str().unwrap();
            assert!(
                detail.contains("--features mlx") && detail.contains("scripts/setup-mlx.sh"),
                "{}",
                loads[1]
            );
        }
    }
}

#[test]
fn doctor_text_lists_the_loads() {
    let o = laya_bench(&["doctor", "--backend", "portable:f16"]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Backend loads (--backend SPEC for --model builtin:tiny):"), "{text}");
    assert!(text.contains("portable:f16  loads: yes"), "{text}");
    assert!(text.contains("mlx:CHECKPOINT"), "{text}");
}
