//! Weight-precision arms of the portable engine on the tiny fixture checkpoint: FP16, BF16 and
//! palettized (W8/W6/W4) forwards against the FP32 engine, palettizer determinism, the palette
//! file round trip, source-hash checks and the registry specs.
//!
//! The tiny fixture's matrices are all below the 65,536-element palettization threshold
//! (D = 64: the largest is 256 × 64), so the palettized arms here use `above_elements = 0` to
//! palettize every projection; the registry's default (threshold 65,536) leaves them FP32.

use laya_bench::backend::portable::{Bf16Kernel, EngineKnobs, PaletteKernel, PortableBackend, Tuning};
use laya_bench::backend::registry::{build_portable, BackendSpec, Precision};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::laya::bundle::{Bundle, ModelSpec};
use laya_bench::model::loader::converted_fingerprint;
use laya_bench::model::lowp::HalfKind;
use laya_bench::model::palettize::{
    palettize, read_palette, write_palette, PaletteConfig, PaletteMeta, PaletteReport,
};
use laya_bench::model::weights::{fingerprint, DecisionWeights, Matrix};
use laya_bench::settings::Settings;

use crate::common::{fixture, forward_golden_cases, golden_batch, tiny_configs};

/// The golden request batches (inputs only), with whether each is a parallel-layout case.
fn batches() -> Vec<(String, PreparedBatch, bool)> {
    forward_golden_cases()
        .iter()
        .map(|c| {
            let batch = golden_batch(c);
            let parallel = batch.position_ids.is_some();
            (c["name"].as_str().expect("name").to_string(), batch, parallel)
        })
        .collect()
}

fn source_bytes() -> Vec<u8> {
    std::fs::read(fixture("fixtures/tiny/model.safetensors")).expect("weights")
}

fn fp32_weights() -> DecisionWeights {
    let (enc, agent) = tiny_configs(false);
    DecisionWeights::from_safetensors(&source_bytes(), &enc, &agent, "model.safetensors")
        .expect("weights load")
}

fn engine(w: DecisionWeights, parallel: bool) -> PortableBackend {
    engine_tuned(w, parallel, Tuning::new(&Settings::UNSET))
}

fn engine_tuned(w: DecisionWeights, parallel: bool, tuning: Tuning) -> PortableBackend {
    let (enc, agent) = tiny_configs(parallel);
    let caps = ShapeCaps {
        batch_size: 8,
        max_length: agent.max_len,
        min_length: 16,
        max_options: 32,
        mode: ShapeMode::Range,
    };
    let knobs = EngineKnobs { threads: 2, tuning };
    PortableBackend::new_tuned(w, enc, agent, caps, "test".into(), knobs, &Settings::UNSET)
}

/// Logits and action logits of every golden batch (option logits of unmasked slots only).
fn outputs(w: &DecisionWeights) -> Vec<(Vec<f32>, Vec<f32>)> {
    outputs_tuned(w, Tuning::new(&Settings::UNSET))
}

fn outputs_tuned(w: &DecisionWeights, tuning: Tuning) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut engines = [engine_tuned(w.clone(), false, tuning), engine_tuned(w.clone(), true, tuning)];
    batches()
        .into_iter()
        .map(|(name, b, parallel)| {
            let mut out = ForwardOutput::default();
            engines[parallel as usize].forward(&b, &mut out).unwrap_or_else(|e| panic!("{name}: {e}"));
            let logits =
                out.logits.iter().zip(&b.marker_mask).filter(|(_, &m)| m != 0).map(|(l, _)| *l).collect();
            (logits, out.action_logits)
        })
        .collect()
}

/// Largest |Δ logit| and |Δ action logit| between two runs.
fn drift(a: &[(Vec<f32>, Vec<f32>)], b: &[(Vec<f32>, Vec<f32>)]) -> (f32, f32) {
    let max = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
    a.iter()
        .zip(b)
        .fold((0.0, 0.0), |(l, act), ((la, aa), (lb, ab))| (l.max(max(la, lb)), act.max(max(aa, ab))))
}

fn all_matrices(bits: u8) -> PaletteConfig {
    PaletteConfig { above_elements: 0, ..PaletteConfig::new(bits) }
}

fn palettized(bits: u8) -> (DecisionWeights, PaletteReport) {
    palettize(fp32_weights(), &all_matrices(bits)).expect("palettize")
}

#[test]
fn each_precision_stays_close_to_fp32() {
    let base = outputs(&fp32_weights());
    let scale = base.iter().flat_map(|(l, _)| l.iter()).fold(0.0f32, |m, x| m.max(x.abs()));
    eprintln!("fp32: max |logit| {scale:.3}");
    let mut rows = Vec::new();
    let decode = Tuning { bf16: Bf16Kernel::Decode, ..Tuning::new(&Settings::UNSET) };
    let (dl, da) = drift(&base, &outputs_tuned(&fp32_weights().into_half(HalfKind::BF16), decode));
    eprintln!(
        "bf16 weights, f32 activations (decode path): max |Δ logit| {dl:.3e}, max |Δ action logit| {da:.3e}"
    );
    assert!(dl > 0.0 && dl <= 0.1 && da <= 0.1);
    // 8-bit palettes with their tables decoded to f32 (the product wherever AMX does not run)
    let decode = Tuning { palette: PaletteKernel::Decode, ..Tuning::new(&Settings::UNSET) };
    let (dl, da) = drift(&base, &outputs_tuned(&palettized(8).0, decode));
    eprintln!(
        "w8 tables decoded to f32, f32 activations: max |Δ logit| {dl:.3e}, max |Δ action logit| {da:.3e}"
    );
    assert!(dl > 0.0 && dl <= 0.3 && da <= 0.3);
    for (name, w, bound) in [
        ("f16", fp32_weights().into_half(HalfKind::F16), 2e-2f32),
        // where the engine picks the AVX-512 BF16 pair-dot (or AMX) the activations are rounded
        // to BF16 too
        ("bf16", fp32_weights().into_half(HalfKind::BF16), 0.1),
        // the tiny model's groups hold 32 × 64 weights: 8 per centroid at 8 bits, so its
        // palettes are much coarser than a real checkpoint's (96–384 weights per centroid);
        // on the BF16 palette product (AMX, or the pair-dot where the probe keeps it) the tables
        // and the activations are rounded to BF16 too
        ("w8", palettized(8).0, 0.3),
        ("w6", palettized(6).0, 1.0),
        ("w4", palettized(4).0, 3.0),
    ] {
        let (dl, da) = drift(&base, &outputs(&w));
        eprintln!("{name:>4}: max |Δ logit| {dl:.3e}, max |Δ action logit| {da:.3e} (bound {bound:.0e})");
        assert!(dl > 0.0, "{name}: conversion changed nothing");
        assert!(dl <= bound && da <= bound, "{name}: drift {dl:e} / {da:e} above {bound:e}");
        rows.push((name, dl));
    }
    let get = |n: &str| rows.iter().find(|(m, _)| *m == n).map(|(_, d)| *d).unwrap_or(0.0);
    assert!(get("f16") < get("bf16"), "FP16 keeps 3 more mantissa bits than BF16");
    assert!(get("w4") > get("w8"), "4-bit palettes drift more than 8-bit ones");
}

#[test]
fn palettization_error_grows_as_bits_shrink() {
    let mut last = 0.0;
    for bits in [8u8, 6, 4] {
        let (w, report) = palettized(bits);
        let n = w.projections().len();
        assert_eq!(report.tensors.len(), n, "every projection palettized with above_elements 0");
        assert!(report.skipped.is_empty());
        let mean_rel = report.tensors.iter().map(|t| t.rel_rms_error).sum::<f64>() / n as f64;
        let max_abs = report.tensors.iter().map(|t| t.max_abs_error).fold(0.0, f64::max);
        eprintln!(
            "w{bits}: {} tensors, {} elements, mean rel RMS {mean_rel:.3e}, max rel RMS {:.3e}, max |err| {max_abs:.3e}, {} → {} bytes, {:.3} s",
            report.tensors.len(),
            report.elements,
            report.max_rel_rms_error,
            report.bytes_before,
            report.bytes_after,
            report.seconds
        );
        for t in &report.tensors {
            assert_eq!((t.bits, t.group_size, t.groups), (bits, 32, t.rows.div_ceil(32)), "{}", t.name);
            assert!(t.mean_abs_error <= t.max_abs_error && t.rel_rms_error > 0.0, "{}", t.name);
        }
        assert!(mean_rel > last, "w{bits}: mean relative RMS error {mean_rel} not above {last}");
        last = mean_rel;
        let json = serde_json::to_string(&report).expect("report serializes");
        assert!(json.contains("\"rel_rms_error\"") && json.contains("encoder.layers.0.attn.Wqkv.weight"));
    }
    // The registry's default threshold leaves the tiny model's small matrices alone.
    let (_, report) = palettize(fp32_weights(), &PaletteConfig::new(8)).expect("palettize");
    assert!(report.tensors.is_empty() && report.skipped.len() == fp32_weights().projections().len());
}

#[test]
fn palettizer_is_deterministic_per_seed() {
    let meta = |cfg: &PaletteConfig| PaletteMeta::new(cfg, &fingerprint(&source_bytes()));
    let cfg = PaletteConfig { max_iters: 2, ..all_matrices(6) };
    let a = write_palette(&palettize(fp32_weights(), &cfg).unwrap().0, &meta(&cfg)).unwrap();
    let b = write_palette(&palettize(fp32_weights(), &cfg).unwrap().0, &meta(&cfg)).unwrap();
    assert_eq!(fingerprint(&a), fingerprint(&b), "same seed, same bytes");
    let other = PaletteConfig { seed: cfg.seed + 1, ..cfg };
    let (wc, _) = palettize(fp32_weights(), &other).unwrap();
    assert_ne!(wc, palettize(fp32_weights(), &cfg).unwrap().0, "another seed starts elsewhere");
    // and it does not depend on the thread count
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let c = one.install(|| write_palette(&palettize(fp32_weights(), &cfg).unwrap().0, &meta(&cfg)).unwrap());
    assert_eq!(fingerprint(&a), fingerprint(&c));
}

#[test]
fn palette_file_round_trips_bit_identically() {
    let (enc, agent) = tiny_configs(false);
    for bits in [8u8, 6, 4] {
        let cfg = all_matrices(bits);
        let (w, _) = palettize(fp32_weights(), &cfg).unwrap();
        let bytes = write_palette(&w, &PaletteMeta::new(&cfg, &fingerprint(&source_bytes()))).unwrap();
        let (back, meta) = read_palette(&bytes, &enc, &agent, "palette.safetensors").unwrap();
        assert_eq!(back, w, "w{bits}: weights differ after the round trip");
        assert_eq!((meta.bits, meta.group_size, meta.seed), (bits, 32, cfg.seed));
        assert_eq!(meta.source_sha256, fingerprint(&source_bytes()));
        assert_eq!(write_palette(&back, &meta).unwrap(), bytes, "w{bits}: rewritten file differs");
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let idx = st.tensor("encoder.layers.0.mlp.Wi.weight.indices").unwrap();
        assert_eq!(idx.dtype(), safetensors::Dtype::U8);
        assert_eq!(idx.shape(), [192, 64 * bits as usize / 8], "packed {bits}-bit indices");
        assert_eq!(st.tensor("encoder.layers.0.mlp.Wi.weight.lut").unwrap().shape(), [6, 1 << bits]);
        assert!(st.tensor("encoder.embeddings.tok_embeddings.weight").is_ok(), "embedding kept as is");
        assert!(matches!(back.tok_embeddings, Matrix::F32(_)));
    }
}

fn tiny_bundle() -> Bundle {
    Bundle::load(&ModelSpec::Builtin, |_| None).expect("builtin bundle")
}

#[test]
fn registry_loads_palette_files_and_rejects_other_sources() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = all_matrices(8);
    let (w, _) = palettize(fp32_weights(), &cfg).unwrap();
    let source = fingerprint(&source_bytes());
    let good = dir.path().join("w8.safetensors");
    std::fs::write(&good, write_palette(&w, &PaletteMeta::new(&cfg, &source)).unwrap()).unwrap();
    let bundle = tiny_bundle();

    for spec in [format!("portable:w8:{}", good.display()), format!("portable:palette:{}", good.display())] {
        let parsed = BackendSpec::parse(&spec).unwrap();
        let (mut b, report) = build_portable(&parsed, &spec, &bundle, None, 2, &Settings::UNSET).unwrap();
        assert!(report.is_none());
        assert_eq!(b.info().precision, "w8");
        assert_eq!(
            b.info().fingerprint,
            fingerprint(&std::fs::read(&good).unwrap()),
            "hash of the palette file"
        );
        // same forward as the in-memory palettized weights
        let (name, batch, _) = batches().into_iter().next().unwrap();
        let (mut o1, mut o2) = (ForwardOutput::default(), ForwardOutput::default());
        b.forward(&batch, &mut o1).unwrap();
        engine(w.clone(), false).forward(&batch, &mut o2).unwrap();
        assert_eq!(o1, o2, "{name}");
    }

    let spec = format!("portable:w4:{}", good.display());
    let err = build_portable(&BackendSpec::parse(&spec).unwrap(), &spec, &bundle, None, 1, &Settings::UNSET)
        .err()
        .expect("bits differ");
    assert!(err.to_string().contains("8-bit") && err.to_string().contains("4-bit"), "{err}");

    let stranger = "0".repeat(64);
    let bad = dir.path().join("other.safetensors");
    std::fs::write(&bad, write_palette(&w, &PaletteMeta::new(&cfg, &stranger)).unwrap()).unwrap();
    let spec = format!("portable:w8:{}", bad.display());
    let err = build_portable(&BackendSpec::parse(&spec).unwrap(), &spec, &bundle, None, 1, &Settings::UNSET)
        .err()
        .expect("mismatch");
    let msg = err.to_string();
    assert!(msg.contains(&stranger) && msg.contains(&source), "names both hashes: {msg}");

    // a plain checkpoint is not a palette
    let spec = format!("portable:palette:{}", fixture("fixtures/tiny/model.safetensors").display());
    let err = build_portable(&BackendSpec::parse(&spec).unwrap(), &spec, &bundle, None, 1, &Settings::UNSET)
        .err()
        .expect("not a palette");
    assert!(err.to_string().contains("laya-bench-palette"), "{err}");

    let spec = format!("portable:w8:{}", dir.path().join("absent.safetensors").display());
    let err = build_portable(&BackendSpec::parse(&spec).unwrap(), &spec, &bundle, None, 1, &Settings::UNSET)
        .err()
        .expect("absent");
    assert!(err.to_string().contains("absent.safetensors"), "{err}");
}

#[test]
fn registry_builds_every_precision_with_its_name_and_fingerprint() {
    let bundle = tiny_bundle();
    let source = fingerprint(&source_bytes());
    for p in Precision::ALL {
        let spec = format!("portable:{}", p.name());
        let (b, report) =
            build_portable(&BackendSpec::parse(&spec).unwrap(), &spec, &bundle, None, 1, &Settings::UNSET)
                .unwrap();
        assert_eq!(b.info().precision, p.name());
        // A palettization that changed no matrix (every one is small here) keeps the source's
        // weights, so it keeps the source's fingerprint.
        let unchanged = report.as_ref().is_some_and(|r| r.tensors.is_empty());
        let expected = if unchanged { source.clone() } else { converted_fingerprint(&source, p) };
        assert_eq!(b.info().fingerprint, expected);
        assert_eq!(report.is_some(), p.palette_bits().is_some());
        let bytes = b.weight_bytes();
        let f32_bytes = fp32_weights().weight_bytes();
        match p {
            Precision::F16 | Precision::Bf16 => assert_eq!(bytes.projections * 2, f32_bytes.projections),
            // nothing above 65,536 elements in the tiny model
            _ => assert_eq!(bytes, f32_bytes),
        }
    }
}

#[test]
fn corrupt_or_foreign_palette_bytes_are_errors_not_panics() {
    let (enc, agent) = tiny_configs(false);
    let cfg = all_matrices(4);
    let (w, _) = palettize(fp32_weights(), &cfg).unwrap();
    let bytes = write_palette(&w, &PaletteMeta::new(&cfg, "x")).unwrap();
    for cut in [0, 7, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(read_palette(&bytes[..cut], &enc, &agent, "p").is_err(), "cut {cut}");
    }
    // another shape's configs
    let mut other = enc.clone();
    other.num_layers = 3;
    other.layer_kinds.pop();
    let err = read_palette(&bytes, &other, &agent, "p.safetensors").unwrap_err();
    assert!(err.to_string().contains("encoder.layers.3"), "{err}");
}
