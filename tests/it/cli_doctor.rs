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

/// What cannot be asked exits 2 naming the flag: a --backend that is not a spec, a --model
/// folder that does not exist; a spec that parses but does not load stays a report (exit 0).
#[test]
fn doctor_refuses_a_spec_or_model_it_cannot_ask_about() {
    for (args, says) in [
        (&["doctor", "--backend", "portable:fp32"][..], "--backend portable:fp32: unknown backend"),
        (
            &["doctor", "--model", "/nonexistent-ckpt", "--backend", "portable:f32"][..],
            "--model /nonexistent-ckpt: no such folder",
        ),
    ] {
        let o = laya_bench(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    if cfg!(feature = "mlx") {
        let o = laya_bench(&["doctor", "--backend", "mlx:fp8:builtin:tiny"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("unknown MLX precision `fp8`") && !err.contains("available here"), "{err}");
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

#[test]
fn doctor_names_the_portable_kernels_and_honours_the_isa_cap() {
    // The cap `generic` runs on every CPU: every portable row names its kernels and the cap.
    // Without a cap the rows name whichever family this CPU has.
    let generic: &[&str] =
        &["(gemm crate kernels)", "generic kernels; LAYA_BENCH_ISA=generic: kernels capped"];
    let cases: [(Option<&str>, &[&str], &[&str]); 2] = [
        (Some("generic"), generic, &["portable:f32", "portable:f16", "portable:bf16", "portable:w8"]),
        (None, &[" kernels"], &["portable:f32", "portable:w8"]),
    ];
    for (cap, want, specs) in cases {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_laya-bench"));
        cmd.args(["doctor", "--json"]).env_remove("LAYA_BENCH_ISA");
        if let Some(c) = cap {
            cmd.env("LAYA_BENCH_ISA", c);
        }
        let o = cmd.output().expect("run laya-bench");
        assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
        let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
        let rows = doc["backends"].as_array().expect("backends");
        for spec in specs {
            let row = rows.iter().find(|r| r["spec"] == *spec).expect(spec);
            let detail = row["detail"].as_str().unwrap();
            assert!(want.iter().all(|w| detail.contains(w)), "{cap:?}: {detail}");
        }
    }
    // an unknown cap is ignored, and the rows say so
    let o = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .args(["doctor"])
        .env("LAYA_BENCH_ISA", "sse9")
        .output()
        .expect("run laya-bench");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("LAYA_BENCH_ISA=sse9 is not avx512, avx2 or generic; ignored"), "{text}");
}

#[test]
fn doctor_follows_laya_bench_bf16_and_names_it() {
    let row = |value: &str, spec: &str| -> String {
        let o = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
            .args(["doctor", "--json"])
            .env_remove("LAYA_BENCH_ISA")
            .env("LAYA_BENCH_BF16", value)
            .output()
            .expect("run laya-bench");
        assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
        let doc: Value = serde_json::from_slice(&o.stdout).expect("doctor --json prints JSON");
        let rows = doc["backends"].as_array().expect("backends");
        rows.iter().find(|r| r["spec"] == spec).expect(spec)["detail"].as_str().unwrap().to_string()
    };
    // decoded: FP32 arithmetic for bf16 and w8 on every CPU, and the variable named
    for spec in ["portable:bf16", "portable:w8"] {
        let d = row("decode", spec);
        assert!(d.contains("FP32 activations and compute"), "{d}");
        assert!(
            d.contains("LAYA_BENCH_BF16=decode: BF16 and 8-bit palette products decoded to FP32 panels"),
            "{d}"
        );
        assert!(!d.contains("load-time probe"), "a named product needs no probe: {d}");
    }
    // f32 weights are not concerned
    assert!(!row("decode", "portable:f32").contains("LAYA_BENCH_BF16"));
    // an unknown value is ignored, and the rows say so
    let d = row("fp8", "portable:bf16");
    assert!(d.contains("LAYA_BENCH_BF16=fp8 is not auto, amx, dot or decode; ignored"), "{d}");
}
