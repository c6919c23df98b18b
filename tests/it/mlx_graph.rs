//! The compiled MLX graph against the portable FP32 engine (feature `mlx`). Linux CI runs
//! these on MLX's CPU build from the PyPI wheels; a Mac runs them on Metal.
//!
//! Two checkpoints: the embedded `builtin:tiny`, and one generated here with every code path
//! `builtin:tiny` leaves out: five layers (full, sliding, full, sliding, full with a ±4
//! window), biases in the encoder, two head layers, three actions, random weights scaled like a
//! trained model so logits are of order 1 (checked, so a comparison at 1e-4 means something).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use laya_bench::backend::mlx::graph::{Compile, MlxBackend};
use laya_bench::backend::mlx::{bucket_lengths, MlxSpec, BUCKET_TOKENS};
use laya_bench::backend::registry::{self, BackendSpec, Precision};
use laya_bench::backend::{Backend, Context, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::fidelity::check::{run_suite, Engines, Plan, SuiteSummary};
use laya_bench::fidelity::suite::Suite;
use laya_bench::laya::bundle::{Bundle, ModelSpec};
use laya_bench::laya::config::{AgentConfig, EncoderConfig, LayerKind};
use laya_bench::laya::host::{CallOptions, Host, StateResult};
use laya_bench::model::synthetic::{published_shape, random_weights};
use laya_bench::settings::Settings;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny");
const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/suites/default.json");

/// Writes the generated checkpoint (see the module doc) into `dir`; `parallel` switches the
/// option layout (explicit RoPE tables in the MLX graph).
fn generated_checkpoint(dir: &Path, parallel: bool) -> PathBuf {
    let root = dir.join(if parallel { "gen-parallel" } else { "gen" });
    crate::common::copy_tree(&Path::new(FIXTURE).join("tokenizer"), &root.join("tokenizer"));
    let mut enc: Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("encoder/config.json")).unwrap(),
    )
    .unwrap();
    for (k, v) in [
        ("num_hidden_layers", json!(5)),
        ("global_attn_every_n_layers", json!(2)),
        ("local_attention", json!(8)),
        ("norm_bias", json!(true)),
        ("attention_bias", json!(true)),
        ("mlp_bias", json!(true)),
    ] {
        enc.insert(k.into(), v);
    }
    let enc_text = serde_json::to_string_pretty(&enc).unwrap();
    let mut agent: Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("rl_agent_config.json")).unwrap(),
    )
    .unwrap();
    agent.insert("act_costs".into(), json!({"ask": 0.1, "escalate": 0.3}));
    agent.insert("option_layout".into(), json!(if parallel { "parallel" } else { "sequential" }));
    let agent_text = serde_json::to_string_pretty(&agent).unwrap();
    std::fs::create_dir_all(root.join("encoder")).unwrap();
    std::fs::write(root.join("encoder/config.json"), &enc_text).unwrap();
    std::fs::write(root.join("rl_agent_config.json"), &agent_text).unwrap();
    let e = EncoderConfig::from_json(&enc_text, "encoder/config.json").unwrap();
    let a = AgentConfig::from_json(&agent_text, "rl_agent_config.json").unwrap();
    assert_eq!(a.num_actions, 3);
    assert_eq!(a.head_layers, 2);
    assert_eq!(
        e.layer_kinds,
        [LayerKind::Full, LayerKind::Sliding, LayerKind::Full, LayerKind::Sliding, LayerKind::Full]
    );
    std::fs::write(
        root.join("model.safetensors"),
        random_weights(&e, &a, 20261201).to_safetensors().unwrap(),
    )
    .unwrap();
    root
}

fn load(path: &Path) -> Bundle {
    Bundle::load(&ModelSpec::parse(&path.display().to_string()).unwrap(), published_shape).unwrap()
}

fn portable(bundle: &Bundle, shapes: Option<ShapeCaps>) -> Box<dyn Backend> {
    registry::build(&BackendSpec::Portable(Precision::F32), "portable:f32", bundle, shapes, &Context::unset())
        .unwrap()
}

fn mlx(
    bundle: &Bundle,
    source: &str,
    dtype: &str,
    shapes: Option<ShapeCaps>,
    compile: Compile,
) -> Box<dyn Backend> {
    let text = format!("mlx:{dtype}:{source}");
    let spec = MlxSpec::parse(&format!("{dtype}:{source}")).unwrap();
    Box::new(MlxBackend::build_with(&spec, &text, bundle, shapes, compile, &Context::unset()).unwrap())
}

/// The default convert-check suite as (state, questions) requests, one per state.
fn suite_requests() -> Vec<(Value, Value)> {
    let suite: Value = serde_json::from_str(&std::fs::read_to_string(SUITE).unwrap()).unwrap();
    let states = suite["states"].as_object().unwrap();
    let mut out: Vec<(String, Map<String, Value>)> = Vec::new();
    for q in suite["questions"].as_array().unwrap() {
        // The tiny models hold 32 option slots; the suite's larger questions are for others.
        let options = q["question"]["criteria"]
            .as_array()
            .map(Vec::len)
            .or_else(|| q["question"]["criteria"].as_object().map(Map::len));
        if options.is_some_and(|n| n > 16) {
            continue;
        }
        let state = q["state"].as_str().unwrap().to_string();
        let id = q["id"].as_str().unwrap().to_string();
        match out.iter_mut().find(|(s, _)| *s == state) {
            Some((_, m)) => {
                m.insert(id, q["question"].clone());
            }
            None => out.push((state, Map::from_iter([(id, q["question"].clone())]))),
        }
    }
    out.into_iter().map(|(s, m)| (states[&s].clone(), Value::Object(m))).collect()
}

fn predict_all(host: &Host<'_>, backend: &mut dyn Backend, requests: &[(Value, Value)]) -> Vec<StateResult> {
    requests
        .iter()
        .flat_map(|(state, questions)| {
            host.predict_batch(backend, std::slice::from_ref(state), questions, &CallOptions::default(), None)
                .unwrap()
        })
        .collect()
}

/// convert-check's own suite run (`fidelity::check`), MLX `dtype` as the candidate and the
/// portable FP32 engine as the source, over the default suite at `gate` (every calibrated and
/// action probability, unrounded; an answer may differ only where the source's margin is below
/// 2 × gate); the rows come from the MLX arm's own host (prefix cache on).
fn suite_against_portable(bundle: &Bundle, source: &str, dtype: &str, gate: f64) -> SuiteSummary {
    let suite = Suite::default_suite().unwrap();
    let caps = ShapeCaps {
        batch_size: 1,
        max_length: bundle.agent.max_len,
        min_length: 1,
        max_options: 32,
        mode: ShapeMode::Range,
    };
    let mut p = portable(bundle, Some(caps.clone()));
    let mut m = mlx(bundle, source, dtype, Some(caps.clone()), Compile::Yes);
    let rows_host = registry::host_for(bundle, caps.clone(), m.info());
    let source_host = registry::host_for(bundle, caps, p.info());
    assert!(rows_host.prefix_cache.is_some() && source_host.prefix_cache.is_none());
    let engines = Engines {
        rows_host: &rows_host,
        source_host: &source_host,
        source: p.as_mut(),
        candidate: Ok(m.as_mut()),
    };
    let plan = Plan { gate, repeats: 2, opts: CallOptions::default() };
    let (_, summary) = run_suite(&suite, engines, &plan, &|| false, &|_| {}).unwrap();
    assert!(summary.gates_run, "{summary:?}");
    assert!(summary.fitting_count > 50, "{}", summary.fitting);
    assert!(summary.failed.is_empty(), "mlx:{dtype}:{source} failed the {gate} gate on {:?}", summary.failed);
    summary
}

#[test]
fn mlx_fp32_answers_the_suite_like_the_portable_engine_on_builtin_tiny() {
    let b = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let s = suite_against_portable(&b, "builtin:tiny", "fp32", 1e-4);
    assert!(s.allowed_flips.is_empty(), "fp32 changed answers: {:?}", s.allowed_flips);
    let drift = s.max_drift.unwrap();
    assert!(drift > 0.0, "two different engines agree to the last bit: is MLX really running?");
}

#[test]
fn mlx_fp32_answers_like_the_portable_engine_on_a_generated_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    for parallel in [false, true] {
        let path = generated_checkpoint(dir.path(), parallel);
        let b = load(&path);
        let s = suite_against_portable(&b, &path.display().to_string(), "fp32", 1e-4);
        assert!(
            s.allowed_flips.is_empty(),
            "parallel={parallel}: fp32 changed answers: {:?}",
            s.allowed_flips
        );
    }
}

#[test]
fn mlx_fp16_stays_within_the_fidelity_gate() {
    let b = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let s = suite_against_portable(&b, "builtin:tiny", "fp16", 0.02);
    // FP16 really is FP16: it moves probabilities more than FP32's last-bit noise.
    let drift = s.max_drift.unwrap();
    assert!(drift > 1e-4, "fp16 drift {drift:e} is as small as fp32's: were the weights cast?");
}

/// A batch of `rows` rows of `valid` real tokens each at length `len`, three markers a row.
fn batch(rows: usize, len: usize, k: usize, valid: usize, vocab: i32) -> PreparedBatch {
    let mut b = PreparedBatch::default();
    b.reset(rows, len, k, 3, false);
    for r in 0..rows {
        for t in 0..len {
            let real = t < valid;
            b.input_ids[r * len + t] =
                if real { 5 + ((r * 131 + t * 17) as i32 * 7) % (vocab - 5) } else { 3 };
            b.attention_mask[r * len + t] = real as i32;
        }
        for j in 0..3.min(k) {
            b.marker_pos[r * k + j] = (valid - 3 + j) as i32;
            b.marker_mask[r * k + j] = 1;
        }
        b.qtype[r] = (r % 3) as i32;
    }
    b
}

fn close(a: &ForwardOutput, b: &ForwardOutput, tol: f32, what: &str) {
    assert_eq!((a.batch, a.max_options, a.num_actions), (b.batch, b.max_options, b.num_actions), "{what}");
    for (i, (x, y)) in a.logits.iter().zip(&b.logits).enumerate() {
        assert!((x - y).abs() <= tol, "{what}: logit {i}: {x} vs {y}");
    }
    for (i, (x, y)) in a.action_logits.iter().zip(&b.action_logits).enumerate() {
        assert!((x - y).abs() <= tol, "{what}: action logit {i}: {x} vs {y}");
    }
}

#[test]
fn every_bucket_matches_the_portable_engine_compiled_and_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = generated_checkpoint(dir.path(), false);
    let b = load(&path);
    let source = path.display().to_string();
    let max_len = b.agent.max_len;
    let caps = ShapeCaps {
        batch_size: 2,
        max_length: max_len,
        min_length: 1,
        max_options: 4,
        mode: ShapeMode::Range,
    };
    let mut p = portable(&b, Some(caps.clone()));
    let mut compiled = mlx(&b, &source, "fp32", Some(caps.clone()), Compile::Yes);
    let mut plain = mlx(&b, &source, "fp32", Some(caps), Compile::No);
    let buckets = bucket_lengths(max_len);
    assert_eq!(buckets.len(), max_len / BUCKET_TOKENS, "{buckets:?}");
    let mut spread = 0.0f32;
    for &bucket in &buckets {
        // A packed length inside the bucket (padded up by the adapter) and the bucket itself.
        for len in [bucket - 7, bucket] {
            let x = batch(2, len, 4, len.min(bucket - 7).max(4), b.encoder.vocab_size as i32);
            let (mut op, mut oc, mut ou) =
                (ForwardOutput::default(), ForwardOutput::default(), ForwardOutput::default());
            p.forward(&x, &mut op).unwrap();
            compiled.forward(&x, &mut oc).unwrap();
            plain.forward(&x, &mut ou).unwrap();
            close(&oc, &op, 1e-4, &format!("compiled vs portable at L{len} (bucket {bucket})"));
            close(&oc, &ou, 1e-5, &format!("compiled vs uncompiled at L{len} (bucket {bucket})"));
            let (lo, hi) = op.logits.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
            spread = spread.max(hi - lo);
        }
    }
    // Order-1 logits: a 1e-4 tolerance is four orders below the signal.
    assert!(spread > 0.5, "the generated checkpoint's logits span only {spread}");
}

#[test]
fn the_prefix_cache_changes_no_result() {
    let b = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let requests = suite_requests();
    let mut m = mlx(&b, "builtin:tiny", "fp32", None, Compile::Yes);
    let cached = registry::host_for(&b, m.info().shapes.clone(), m.info());
    let plain = Host::new(&b.tokenizer, &b.agent, m.info().shapes.clone());
    assert!(cached.prefix_cache.is_some() && plain.prefix_cache.is_none());
    // Twice through the cached host: the second pass answers every head from the cache.
    let first = predict_all(&cached, m.as_mut(), &requests);
    let second = predict_all(&cached, m.as_mut(), &requests);
    let uncached = predict_all(&plain, m.as_mut(), &requests);
    assert_eq!(first, uncached);
    assert_eq!(second, uncached);
}

#[test]
fn the_arm_records_its_device_and_an_optimised_blas() {
    let b = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let m = mlx(&b, "builtin:tiny", "fp32", None, Compile::Yes);
    let info = m.info();
    assert!(info.device.contains(&laya_bench::backend::mlx::graph::mlx_version()), "{}", info.device);
    #[cfg(target_os = "linux")]
    {
        assert!(info.device.starts_with("cpu (MLX 0.32.2 CPU build"), "{}", info.device);
        let blas = info.blas.as_deref().expect("the BLAS is recorded on Linux");
        if option_env!("LAYA_BENCH_MLX_BLAS_CHOICE") == Some("openblas") {
            assert!(blas.starts_with("OpenBLAS"), "{blas}");
        }
    }
    let probe = laya_bench::backend::mlx::graph::probe(&Settings::UNSET).unwrap();
    assert!(probe.contains("evaluated a 2×2 product"), "{probe}");
}

/// Where the arm runs (`backend::mlx::device`): the device check's real MLX path. On Linux
/// MLX's CPU build has no GPU, so the GPU check must come back as an error (the process lives
/// on: a failing GPU stream is reported, not fatal), the CPU passes it against itself in
/// float32 and float16, and the arm runs on the CPU with no fallback note. On a Mac the check
/// and the process's choice must agree: the GPU kept where it passes, else the CPU with the
/// reason in the device text and the notes.
#[test]
fn the_device_check_and_the_choice_agree() {
    use laya_bench::backend::mlx::device::MlxDevice;
    use laya_bench::backend::mlx::graph::{device_choice, mlx_version, product_check};

    assert_eq!(product_check(MlxDevice::Cpu), Ok(()));
    let b = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let m = mlx(&b, "builtin:tiny", "fp32", None, Compile::Yes);
    let info = m.info();
    let choice = device_choice(&Settings::UNSET).expect("LAYA_BENCH_REQUIRE_MLX_GPU is not set in the tests");
    assert_eq!(info.device, choice.device_text(&mlx_version(), cfg!(target_os = "macos")));
    assert_eq!(info.notes, choice.note().into_iter().collect::<Vec<_>>());
    #[cfg(target_os = "linux")]
    {
        let e = product_check(MlxDevice::Gpu).unwrap_err();
        assert!(!e.to_string().trim().is_empty());
        assert_eq!((choice.device, choice.metal_unusable.as_ref()), (MlxDevice::Cpu, None));
    }
    #[cfg(target_os = "macos")]
    match product_check(MlxDevice::Gpu) {
        Ok(()) => assert_eq!((choice.device, choice.metal_unusable.as_ref()), (MlxDevice::Gpu, None)),
        // (a second check may word its failure differently: MLX retries the device's set-up)
        Err(e) => {
            let reason = choice
                .metal_unusable
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_else(|| panic!("the GPU check fails ({e})"));
            assert_eq!(choice.device, MlxDevice::Cpu);
            assert!(info.device.contains(&format!("Metal unusable: {reason}")), "{info:?}");
            assert!(info.notes[0].contains(&reason), "{info:?}");
        }
    }
}
