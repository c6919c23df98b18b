//! Parity of the portable FP32 engine with PyTorch goldens (`laya_coreml.torch_model`, explicit
//! attention, float32, CPU) on the tiny fixture checkpoint, and proof that the check bites.

use laya_bench::backend::portable::{Ablation, PortableBackend};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::model::weights::{fingerprint, DecisionWeights};
use laya_bench::settings::Settings;
use serde_json::Value;

use crate::common::{fixture, forward_golden_cases, golden_batch, tiny_configs};

const TOL: f64 = 1e-4;

struct Case {
    name: String,
    batch: PreparedBatch,
    parallel: bool,
    real_rows: Vec<usize>,
    logits: Vec<f64>,
    action_logits: Vec<f64>,
}

fn floats(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        x => vec![x.as_f64().expect("number")],
    }
}

fn cases() -> Vec<Case> {
    forward_golden_cases()
        .iter()
        .map(|c| {
            let batch = golden_batch(c);
            Case {
                name: c["name"].as_str().expect("name").to_string(),
                parallel: batch.position_ids.is_some(),
                batch,
                real_rows: c["real_rows"]
                    .as_array()
                    .expect("real_rows")
                    .iter()
                    .map(|r| r.as_u64().expect("row") as usize)
                    .collect(),
                logits: floats(&c["logits"]),
                action_logits: floats(&c["action_logits"]),
            }
        })
        .collect()
}

fn engine(parallel: bool) -> PortableBackend {
    let dir = fixture("fixtures/tiny");
    let (enc, agent) = tiny_configs(parallel);
    let bytes = std::fs::read(dir.join("model.safetensors")).expect("weights");
    let w =
        DecisionWeights::from_safetensors(&bytes, &enc, &agent, "model.safetensors").expect("weights load");
    let caps = ShapeCaps {
        batch_size: 8,
        max_length: agent.max_len,
        min_length: 16,
        max_options: 32,
        mode: ShapeMode::Range,
    };
    PortableBackend::try_new(w, enc, agent, caps, fingerprint(&bytes), 2, &Settings::UNSET).expect("engine")
}

fn run(engines: &mut [PortableBackend; 2], case: &Case) -> ForwardOutput {
    let mut out = ForwardOutput::default();
    engines[case.parallel as usize]
        .forward(&case.batch, &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    out
}

#[test]
fn portable_fp32_matches_pytorch_goldens() {
    let mut engines = [engine(false), engine(true)];
    let (mut worst_l, mut worst_a) = (0.0f64, 0.0f64);
    for case in cases() {
        let out = run(&mut engines, &case);
        assert_eq!(out.logits.len(), case.logits.len(), "{}", case.name);
        assert_eq!(out.action_logits.len(), case.action_logits.len(), "{}", case.name);
        let dl = out.logits.iter().zip(&case.logits).map(|(a, b)| (*a as f64 - b).abs()).fold(0.0, f64::max);
        // absolute 1e-4, relative 1e-4 for large action logits
        let da = out
            .action_logits
            .iter()
            .zip(&case.action_logits)
            .map(|(a, b)| (*a as f64 - b).abs() / b.abs().max(1.0))
            .fold(0.0, f64::max);
        eprintln!(
            "{:<32} B{} L{:<4} max|Δlogit| {dl:.2e}  max|Δaction| {da:.2e}",
            case.name, case.batch.batch, case.batch.length
        );
        assert!(dl <= TOL, "{}: max |Δ logit| {dl:e} > {TOL:e}", case.name);
        assert!(da <= TOL, "{}: max |Δ action logit| {da:e} > {TOL:e}", case.name);
        worst_l = worst_l.max(dl);
        worst_a = worst_a.max(da);
    }
    eprintln!("all cases: max|Δlogit| {worst_l:.2e}, max|Δaction| {worst_a:.2e}");
}

#[test]
fn each_ablation_breaks_parity() {
    let mut engines = [engine(false), engine(true)];
    let cases = cases();
    for (name, ab) in [
        ("no_rope", Ablation { no_rope: true, ..Ablation::default() }),
        ("double_window", Ablation { window_scale: 2, ..Ablation::default() }),
        ("tanh_gelu", Ablation { tanh_gelu: true, ..Ablation::default() }),
    ] {
        for e in engines.iter_mut() {
            e.set_ablation(ab);
        }
        let mut worst = 0.0f64;
        for case in &cases {
            let out = run(&mut engines, case);
            let k = case.batch.max_options;
            for &r in &case.real_rows {
                for j in 0..k {
                    if case.batch.marker_mask[r * k + j] != 0 {
                        let d = (out.logits[r * k + j] as f64 - case.logits[r * k + j]).abs();
                        worst = worst.max(d);
                    }
                }
            }
        }
        eprintln!("ablation {name}: max |Δ logit| {worst:.3e}");
        assert!(worst > 1e-2, "ablation {name} moved logits by only {worst:e}");
    }
}
