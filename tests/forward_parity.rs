//! Parity of the portable FP32 engine with PyTorch goldens (`laya_coreml.torch_model`, explicit
//! attention, float32, CPU) on the tiny fixture checkpoint, and proof that the check bites.

use std::path::Path;

use laya_bench::backend::portable::{Ablation, PortableBackend};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::laya::config::{AgentConfig, EncoderConfig, OptionLayout};
use laya_bench::model::weights::{fingerprint, DecisionWeights};
use serde_json::Value;

const TOL: f64 = 1e-4;

struct Case {
    name: String,
    batch: PreparedBatch,
    parallel: bool,
    real_rows: Vec<usize>,
    logits: Vec<f64>,
    action_logits: Vec<f64>,
}

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn ints(v: &Value) -> Vec<i32> {
    match v {
        Value::Array(items) => items.iter().flat_map(ints).collect(),
        x => vec![x.as_i64().expect("integer") as i32],
    }
}

fn floats(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items.iter().flat_map(floats).collect(),
        x => vec![x.as_f64().expect("number")],
    }
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(fixture("fixtures/goldens/forward.json")).expect("goldens");
    let doc: Value = serde_json::from_str(&text).expect("goldens json");
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let a = &c["arrays"];
            let ids = &a["input_ids"];
            let b = ids.as_array().expect("rows").len();
            let l = ids[0].as_array().expect("row").len();
            let k = a["marker_pos"][0].as_array().expect("row").len();
            let batch = PreparedBatch {
                batch: b,
                length: l,
                max_options: k,
                input_ids: ints(ids),
                attention_mask: ints(&a["attention_mask"]),
                marker_pos: ints(&a["marker_pos"]),
                marker_mask: ints(&a["marker_mask"]),
                qtype: ints(&a["qtype"]),
                position_ids: a.get("position_ids").map(ints),
                option_ids: a.get("option_ids").map(ints),
            };
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
    let enc_text = std::fs::read_to_string(dir.join("encoder/config.json")).expect("config");
    let agent_text = std::fs::read_to_string(dir.join("rl_agent_config.json")).expect("agent config");
    let enc = EncoderConfig::from_json(&enc_text, "encoder/config.json").expect("encoder config");
    let mut agent = AgentConfig::from_json(&agent_text, "rl_agent_config.json").expect("agent config");
    if parallel {
        agent.option_layout = OptionLayout::Parallel;
    }
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
    PortableBackend::try_new(w, enc, agent, caps, fingerprint(&bytes), 2).expect("engine")
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
