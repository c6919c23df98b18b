//! Engine tests on the tiny synthetic shape, against an independent f64 reference of §2.
#![allow(clippy::needless_range_loop)]

use super::*;
use crate::backend::ShapeMode;
use crate::model::synthetic::{random_weights, tiny_shape};
use crate::model::weights::Matrix;
use crate::settings::Settings;

/// The settings of the test process's environment, as the engine's own choices see them.
fn settings() -> Settings {
    Settings::of_test_process()
}

fn caps(batch: usize, len: usize, k: usize) -> ShapeCaps {
    ShapeCaps { batch_size: batch, max_length: len, min_length: 1, max_options: k, mode: ShapeMode::Range }
}

/// A batch of `rows` rows, each with `valid[r]` real tokens and `markers` options.
fn batch(rows: usize, len: usize, k: usize, valid: &[usize], vocab: i32) -> PreparedBatch {
    let mut b = PreparedBatch::default();
    b.reset(rows, len, k, 0, false);
    for r in 0..rows {
        for t in 0..len {
            let real = t < valid[r];
            b.input_ids[r * len + t] = if real { ((r * 131 + t * 17) as i32 * 7) % vocab } else { 0 };
            b.attention_mask[r * len + t] = real as i32;
        }
        let markers = 3.min(k);
        for j in 0..markers {
            b.marker_pos[r * k + j] = (valid[r] - markers + j) as i32;
            b.marker_mask[r * k + j] = 1;
        }
        b.qtype[r] = (r % 3) as i32;
    }
    b
}

fn engine(threads: usize, len: usize, rows: usize, k: usize) -> (PortableBackend, DecisionWeights) {
    let (enc, agent) = tiny_shape();
    let w = random_weights(&enc, &agent, 11);
    let b =
        PortableBackend::try_new(w.clone(), enc, agent, caps(rows, len, k), "x".into(), threads, &settings())
            .unwrap();
    (b, w)
}

// ---------- independent f64 reference (plain loops, no gemm, no shared kernels) ----------

fn ln(x: &[f64], w: &[f32], b: Option<&Vec<f32>>, eps: f64) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let r = 1.0 / (var + eps).sqrt();
    (0..x.len()).map(|i| (x[i] - mean) * r * w[i] as f64 + b.map_or(0.0, |b| b[i] as f64)).collect()
}

fn lin(x: &[Vec<f64>], l: &Linear) -> Vec<Vec<f64>> {
    let Matrix::F32(m) = l.weight.dequantized() else { panic!("dequantized weights are f32") };
    x.iter()
        .map(|row| {
            (0..m.rows())
                .map(|o| {
                    (0..m.cols()).map(|i| row[i] * m.get(o, i).unwrap_or(f32::NAN) as f64).sum::<f64>()
                        + l.bias.as_ref().map_or(0.0, |b| b[o] as f64)
                })
                .collect()
        })
        .collect()
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

fn mha(
    x: &[Vec<f64>],
    qkv_w: &Linear,
    heads: usize,
    allowed: &dyn Fn(usize, usize) -> bool,
    rope: Option<(&dyn Fn(usize) -> f64, f64)>,
) -> Vec<Vec<f64>> {
    let l = x.len();
    let qkv = lin(x, qkv_w);
    let d = qkv[0].len() / 3;
    let dh = d / heads;
    let mut out = vec![vec![0.0; d]; l];
    for h in 0..heads {
        let get = |t: usize, part: usize| -> Vec<f64> {
            let mut v: Vec<f64> = qkv[t][part * d + h * dh..part * d + (h + 1) * dh].to_vec();
            if let (Some((pos, base)), true) = (rope, part < 2) {
                let half = dh / 2;
                let p = pos(t);
                let orig = v.clone();
                for m in 0..half {
                    let ang = p * base.powf(-(2.0 * m as f64) / dh as f64);
                    v[m] = orig[m] * ang.cos() - orig[m + half] * ang.sin();
                    v[m + half] = orig[m + half] * ang.cos() + orig[m] * ang.sin();
                }
            }
            v
        };
        let qs: Vec<Vec<f64>> = (0..l).map(|t| get(t, 0)).collect();
        let ks: Vec<Vec<f64>> = (0..l).map(|t| get(t, 1)).collect();
        let vs: Vec<Vec<f64>> = (0..l).map(|t| get(t, 2)).collect();
        for q in 0..l {
            let s: Vec<f64> = (0..l)
                .map(|k| {
                    if allowed(q, k) {
                        (0..dh).map(|j| qs[q][j] * ks[k][j]).sum::<f64>() / (dh as f64).sqrt()
                    } else {
                        -1e4
                    }
                })
                .collect();
            let mx = s.iter().cloned().fold(f64::MIN, f64::max);
            let z: f64 = s.iter().map(|v| (v - mx).exp()).sum();
            for j in 0..dh {
                out[q][h * dh + j] = (0..l).map(|k| (s[k] - mx).exp() / z * vs[k][j]).sum();
            }
        }
    }
    out
}

fn add(x: &mut [Vec<f64>], y: &[Vec<f64>]) {
    for (a, b) in x.iter_mut().zip(y) {
        for (p, q) in a.iter_mut().zip(b) {
            *p += q;
        }
    }
}

/// §2 steps 1–11 for one row, in f64 (sequential layout unless `par` is given).
fn reference_row(
    w: &DecisionWeights,
    enc: &EncoderConfig,
    b: &PreparedBatch,
    r: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (l, k) = (b.length, b.max_options);
    let d = enc.hidden_size;
    let valid: Vec<bool> = (0..l).map(|t| b.attention_mask[r * l + t] != 0).collect();
    let pos = |t: usize| -> f64 { b.position_ids.as_ref().map_or(t as f64, |p| p[r * l + t] as f64) };
    let opt = |t: usize| -> i32 { b.option_ids.as_ref().map_or(0, |o| o[r * l + t]) };
    let other = |q: usize, kk: usize| opt(q) > 0 && opt(kk) > 0 && opt(q) != opt(kk);
    let hw = (enc.local_attention / 2) as f64;
    let mut x: Vec<Vec<f64>> = (0..l)
        .map(|t| {
            let mut e = vec![0.0f32; d];
            w.tok_embeddings.row_into(b.input_ids[r * l + t] as usize, &mut e);
            let e: Vec<f64> = e.iter().map(|&v| v as f64).collect();
            ln(&e, &w.emb_norm.weight, w.emb_norm.bias.as_ref(), enc.norm_eps)
        })
        .collect();
    for (layer, kind) in w.layers.iter().zip(&enc.layer_kinds) {
        let a: Vec<Vec<f64>> = match &layer.attn_norm {
            None => x.clone(),
            Some(n) => x.iter().map(|v| ln(v, &n.weight, n.bias.as_ref(), enc.norm_eps)).collect(),
        };
        let full = |q: usize, kk: usize| valid[kk] && !other(q, kk);
        let local = |q: usize, kk: usize| full(q, kk) && ((pos(q) - pos(kk)).abs() <= hw || !valid[q]);
        let base = enc.rope_theta(*kind);
        let allowed: &dyn Fn(usize, usize) -> bool = match kind {
            LayerKind::Full => &full,
            LayerKind::Sliding => &local,
        };
        let att = mha(&a, &layer.wqkv, enc.num_heads, allowed, Some((&pos, base)));
        let o = lin(&att, &layer.wo);
        add(&mut x, &o);
        let a: Vec<Vec<f64>> = x
            .iter()
            .map(|v| ln(v, &layer.mlp_norm.weight, layer.mlp_norm.bias.as_ref(), enc.norm_eps))
            .collect();
        let m = lin(&a, &layer.wi);
        let i_ = enc.intermediate_size;
        let g: Vec<Vec<f64>> =
            m.iter().map(|row| (0..i_).map(|i| gelu(row[i]) * row[i_ + i]).collect()).collect();
        let o = lin(&g, &layer.mlp_wo);
        add(&mut x, &o);
    }
    let q = b.qtype[r] as usize;
    let mut h: Vec<Vec<f64>> = x
        .iter()
        .map(|v| {
            let mut n = ln(v, &w.final_norm.weight, w.final_norm.bias.as_ref(), enc.norm_eps);
            for (i, t) in n.iter_mut().enumerate() {
                *t += w.type_emb[q * d + i] as f64;
            }
            n
        })
        .collect();
    for hl in &w.head {
        let a: Vec<Vec<f64>> =
            h.iter().map(|v| ln(v, &hl.norm1.weight, hl.norm1.bias.as_ref(), 1e-5)).collect();
        let keys = |_q: usize, kk: usize| valid[kk];
        let att = mha(&a, &hl.in_proj, decision_head_heads(d), &keys, None);
        add(&mut h, &lin(&att, &hl.out_proj));
        let a: Vec<Vec<f64>> =
            h.iter().map(|v| ln(v, &hl.norm2.weight, hl.norm2.bias.as_ref(), 1e-5)).collect();
        let f: Vec<Vec<f64>> = lin(&a, &hl.linear1)
            .into_iter()
            .map(|row| row.into_iter().map(|v| v.max(0.0)).collect())
            .collect();
        add(&mut h, &lin(&f, &hl.linear2));
    }
    let markers: Vec<Vec<f64>> = (0..k)
        .map(|j| {
            let p = b.marker_pos[r * k + j] as usize;
            let s = &w.scorer;
            ln(&h[p], &s.norm.weight, s.norm.bias.as_ref(), 1e-5)
        })
        .collect();
    let hid: Vec<Vec<f64>> =
        lin(&markers, &w.scorer.hidden).into_iter().map(|row| row.into_iter().map(gelu).collect()).collect();
    let mut logits: Vec<f64> = lin(&hid, &w.scorer.output).into_iter().map(|v| v[0]).collect();
    for j in 0..k {
        if b.marker_mask[r * k + j] == 0 {
            logits[j] = -1e4;
        }
    }
    let mx = logits.iter().cloned().fold(f64::MIN, f64::max);
    let z: f64 = logits.iter().map(|v| (v - mx).exp()).sum();
    let p: Vec<f64> = logits.iter().map(|v| (v - mx).exp() / z).collect();
    let count = (0..k).filter(|&j| b.marker_mask[r * k + j] != 0).count().max(2) as f64;
    let ent = -p.iter().map(|&v| v * v.max(1e-9).ln()).sum::<f64>() / count.ln();
    let mut sorted = p.clone();
    sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
    let top2 = sorted.get(1).copied().unwrap_or(0.0);
    let mut act_in = h[0].clone();
    act_in.extend([sorted[0], sorted[0] - top2, ent, count / 255.0]);
    let hid = lin(&[act_in], w.act_head.hidden());
    let hid: Vec<Vec<f64>> = vec![hid[0].iter().map(|&v| gelu(v)).collect()];
    let act = lin(&hid, w.act_head.output()).remove(0);
    (logits, act)
}

fn max_diff(got: &[f32], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(a, b)| (*a as f64 - b).abs()).fold(0.0, f64::max)
}

#[test]
fn forward_matches_f64_reference_on_tiny_shape() {
    let (enc, _) = tiny_shape();
    for threads in [1, 2] {
        let (mut e, w) = engine(threads, 24, 2, 5);
        let b = batch(2, 24, 5, &[24, 15], 512);
        let mut out = ForwardOutput::default();
        e.forward(&b, &mut out).unwrap();
        assert_eq!((out.batch, out.max_options, out.num_actions), (2, 5, 2));
        for r in 0..2 {
            let (logits, act) = reference_row(&w, &enc, &b, r);
            let dl = max_diff(&out.logits[r * 5..(r + 1) * 5], &logits);
            let da = max_diff(&out.action_logits[r * 2..(r + 1) * 2], &act);
            assert!(dl < 2e-5 && da < 2e-5, "row {r} threads {threads}: Δlogit {dl:e} Δaction {da:e}");
            assert!(out.logits[r * 5 + 3..(r + 1) * 5].iter().all(|&v| v == -1e4));
        }
    }
}

/// Every kernel family on the same forward: the AVX-512 and AVX2 kernels where this CPU runs
/// them (the AVX2 path forced on an AVX-512 machine, as `LAYA_BENCH_ISA=avx2` does), and the
/// generic one (`gemm`) everywhere; a family the CPU lacks is skipped with a printed reason.
#[test]
fn every_kernel_family_matches_f64_reference_and_names_itself() {
    let (enc, agent) = tiny_shape();
    let w = random_weights(&enc, &agent, 11);
    let b = batch(2, 24, 5, &[24, 15], 512);
    for isa in [Isa::Avx512, Isa::Avx2, Isa::Generic] {
        if !isa.runs_here() {
            eprintln!("skipping the {} kernels: this CPU does not run them", isa.name());
            continue;
        }
        for threads in [1, 2] {
            let tuning = Tuning { isa, ..Tuning::new(&settings()) };
            let mut e = PortableBackend::new_tuned(
                w.clone(),
                enc.clone(),
                agent.clone(),
                caps(2, 24, 5),
                "x".into(),
                EngineKnobs { threads, tuning },
                &settings(),
            );
            assert_eq!(e.isa(), isa);
            let device = &e.info().device;
            assert!(device.contains(&format!("{} kernels: f32 ", isa.name())), "{device}");
            assert!(device.contains(&isa.f32_kernel()), "{device}");
            let mut out = ForwardOutput::default();
            e.forward(&b, &mut out).unwrap();
            for r in 0..2 {
                let (logits, act) = reference_row(&w, &enc, &b, r);
                let dl = max_diff(&out.logits[r * 5..(r + 1) * 5], &logits);
                let da = max_diff(&out.action_logits[r * 2..(r + 1) * 2], &act);
                assert!(
                    dl < 2e-5 && da < 2e-5,
                    "{} row {r} threads {threads}: Δlogit {dl:e} Δaction {da:e}",
                    isa.name()
                );
            }
        }
    }
}

#[test]
fn parallel_layout_matches_f64_reference() {
    let (enc, mut agent) = tiny_shape();
    agent.option_layout = OptionLayout::Parallel;
    let w = random_weights(&enc, &agent, 5);
    let mut e =
        PortableBackend::try_new(w.clone(), enc.clone(), agent, caps(1, 20, 4), "x".into(), 2, &settings())
            .unwrap();
    let mut b = PreparedBatch::default();
    b.reset(1, 20, 4, 0, true);
    // shared prefix of 8 tokens, then 3 options of 4 tokens restarting at position 8
    for t in 0..20 {
        b.input_ids[t] = (t as i32 * 37) % 512;
        b.attention_mask[t] = 1;
        let (pos, opt) = if t < 8 { (t, 0) } else { (8 + (t - 8) % 4, 1 + (t - 8) / 4) };
        b.position_ids.as_mut().unwrap()[t] = pos as i32;
        b.option_ids.as_mut().unwrap()[t] = opt as i32;
    }
    for j in 0..3 {
        b.marker_pos[j] = (8 + 4 * j) as i32;
        b.marker_mask[j] = 1;
    }
    let mut out = ForwardOutput::default();
    e.forward(&b, &mut out).unwrap();
    let (logits, act) = reference_row(&w, &enc, &b, 0);
    let dl = max_diff(&out.logits, &logits);
    let da = max_diff(&out.action_logits, &act);
    assert!(dl < 2e-5 && da < 2e-5, "Δlogit {dl:e} Δaction {da:e}");
}

#[test]
fn padding_and_batch_neighbours_do_not_change_a_row() {
    let (mut e, _) = engine(2, 32, 3, 4);
    let mut alone = ForwardOutput::default();
    e.forward(&batch(1, 16, 4, &[16], 512), &mut alone).unwrap();
    let mut padded = ForwardOutput::default();
    e.forward(&batch(3, 32, 4, &[16, 32, 9], 512), &mut padded).unwrap();
    for j in 0..4 {
        assert!((alone.logits[j] - padded.logits[j]).abs() < 1e-5);
    }
    for j in 0..2 {
        assert!((alone.action_logits[j] - padded.action_logits[j]).abs() < 1e-4);
    }
}

#[test]
fn forward_is_deterministic_and_reuses_scratch() {
    let (mut e, _) = engine(2, 32, 2, 4);
    let b = batch(2, 32, 4, &[32, 20], 512);
    let mut o1 = ForwardOutput::default();
    e.forward(&b, &mut o1).unwrap();
    let ptrs = (e.scratch.x.as_ptr(), e.scratch.qkv.as_ptr(), e.scratch.mlp.as_ptr());
    let mut o2 = ForwardOutput::default();
    e.forward(&b, &mut o2).unwrap();
    assert_eq!(o1, o2);
    assert_eq!(ptrs, (e.scratch.x.as_ptr(), e.scratch.qkv.as_ptr(), e.scratch.mlp.as_ptr()));
}

#[test]
fn the_scratch_estimate_is_what_a_forward_sizes() {
    // 3 rows of 32 tokens, 4 option slots, 2 workers, on the tiny shape.
    let (mut e, _) = engine(2, 32, 3, 4);
    e.forward(&batch(3, 32, 4, &[32, 20, 9], 512), &mut ForwardOutput::default()).unwrap();
    let s = &e.scratch;
    let f32s =
        [&s.x, &s.a, &s.qkv, &s.attn, &s.mlp, &s.gated, &s.scores, &s.markers, &s.markers_n, &s.scorer_h]
            .iter()
            .map(|v| v.len())
            .sum::<usize>();
    let masks = s.masks.full.len() + s.masks.local.len() + s.masks.head.len();
    let (enc, _) = tiny_shape();
    let estimate = forward_scratch_bytes(enc.hidden_size, enc.intermediate_size, 3, 32, 4, 2);
    assert_eq!(estimate, Some((f32s * 4 + masks) as u64));
    // By hand: hidden 64, MLP 96: per token 6·64 + max(192, 256) + 96 = 736 floats; 96
    // tokens; scores 2 · 32²; markers 3 rows · 4 · 3 · 64; masks 3 · 3 · 32² bytes.
    assert_eq!((enc.hidden_size, enc.intermediate_size), (64, 96));
    assert_eq!(estimate, Some((96 * 736 + 2 * 1024 + 3 * 4 * 192) * 4 + 9 * 1024));
    assert_eq!(forward_scratch_bytes(64, 128, usize::MAX, 96, 4, 2), None);
}

#[test]
fn info_names_the_engine_and_its_resident_weight_bytes() {
    let (e, w) = engine(1, 32, 1, 4);
    let info = e.info();
    assert_eq!((info.kind, info.name.as_str()), (BackendKind::Portable, "portable"));
    assert_eq!(info.host_hints, HostHints::default(), "no prefix cache in front of the portable engine");
    assert_eq!(info.weight_bytes, Some(w.weight_bytes().total as u64));
    assert_eq!(info.weight_bytes, Some(e.weight_bytes().total as u64));
}

/// The default BF16 product is the one the probe picks, and the engine says so: with BF16
/// weights, the device names the pair-dot where the probe kept it and FP32 panels where it
/// turned it down, and the notes carry the probe's rates; FP32 weights get no such note.
#[test]
fn the_default_bf16_product_follows_the_probe_and_the_notes_say_so() {
    use crate::model::lowp::HalfKind;
    if bf16_selection(std::env::var(BF16_ENV).ok().as_deref()).0.is_some() {
        eprintln!("skipping: {BF16_ENV} names the BF16 product in this environment");
        return;
    }
    let (enc, agent) = tiny_shape();
    let w = random_weights(&enc, &agent, 11);
    let isa = Isa::selected(&settings());
    let probe = if isa.has_bf16_dot() { probe::bf16_dot_probe() } else { None };
    let build = |w: DecisionWeights| {
        PortableBackend::try_new(w, enc.clone(), agent.clone(), caps(1, 16, 4), "x".into(), 1, &settings())
            .unwrap()
    };
    let f32_engine = build(w.clone());
    assert!(
        !f32_engine.info().notes.iter().any(|n| n.contains("load-time probe")),
        "{:?}",
        f32_engine.info()
    );
    let bf16 = build(w.into_half(HalfKind::BF16));
    let (device, notes) = (&bf16.info().device, &bf16.info().notes);
    let want = Bf16Kernel::default_for(isa);
    match want {
        Bf16Kernel::Amx if isa.has_amx_bf16() => assert!(device.contains("amx-bf16"), "{device}"),
        Bf16Kernel::Amx | Bf16Kernel::Dot => assert!(device.contains("pair-dot"), "{device}"),
        Bf16Kernel::Decode => assert!(device.contains("bf16 weights decoded to f32"), "{device}"),
    }
    match probe {
        Some(p) => {
            assert_eq!(want == Bf16Kernel::Dot, p.dot_pays(), "{p:?}");
            assert!(
                notes.iter().any(|n| n.starts_with("load-time probe, one thread: vdpbf16ps")),
                "{notes:?}"
            );
        }
        None => assert!(!notes.iter().any(|n| n.contains("load-time probe")), "{notes:?}"),
    }
}

/// `LAYA_BENCH_BF16` names a product (any case, spaces around it), `auto` or nothing leaves the
/// choice to the engine, and anything else is ignored with a note that says so.
#[test]
fn the_bf16_variable_names_a_product_or_is_ignored_with_a_note() {
    assert_eq!(bf16_selection(None), (None, None));
    assert_eq!(bf16_selection(Some("  ")), (None, None));
    assert_eq!(bf16_selection(Some("AUTO")), (None, None));
    for (v, k) in [
        ("amx", Bf16Kernel::Amx),
        ("dot", Bf16Kernel::Dot),
        ("Pair-Dot", Bf16Kernel::Dot),
        (" decode ", Bf16Kernel::Decode),
    ] {
        let (got, note) = bf16_selection(Some(v));
        assert_eq!(got, Some(k), "{v}");
        let note = note.unwrap();
        assert!(
            note.starts_with(&format!("LAYA_BENCH_BF16={}: BF16 and 8-bit palette products", v.trim())),
            "{note}"
        );
    }
    let (got, note) = bf16_selection(Some("fp8"));
    assert_eq!(got, None);
    assert_eq!(
        note.as_deref(),
        Some(
            "LAYA_BENCH_BF16=fp8 is not auto, amx, dot or decode; ignored, the engine picks the BF16 product"
        )
    );
}

#[test]
fn ablations_change_the_logits() {
    let (mut e, _) = engine(1, 32, 1, 4);
    let b = batch(1, 32, 4, &[32], 512);
    let mut base = ForwardOutput::default();
    e.forward(&b, &mut base).unwrap();
    for ab in [
        Ablation { no_rope: true, ..Ablation::default() },
        Ablation { window_scale: 2, ..Ablation::default() },
        Ablation { tanh_gelu: true, ..Ablation::default() },
    ] {
        e.set_ablation(ab);
        let mut o = ForwardOutput::default();
        e.forward(&b, &mut o).unwrap();
        let d = o.logits.iter().zip(&base.logits).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(d > 1e-4, "{ab:?} moved logits by only {d:e}");
    }
}

#[test]
fn rejects_bad_inputs_with_shape_errors() {
    let (mut e, _) = engine(1, 16, 2, 4);
    let good = batch(1, 16, 4, &[16], 512);
    let mut out = ForwardOutput::default();
    let check = |e: &mut PortableBackend, b: PreparedBatch, needle: &str| {
        let mut out = ForwardOutput::default();
        match e.forward(&b, &mut out) {
            Err(BackendError::Shape(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected a shape error containing {needle:?}, got {other:?}"),
        }
    };
    let mut b = good.clone();
    b.input_ids[3] = 512;
    check(&mut e, b, "vocabulary");
    let mut b = good.clone();
    b.input_ids[3] = -1;
    check(&mut e, b, "vocabulary");
    let mut b = good.clone();
    b.marker_pos[0] = 16;
    check(&mut e, b, "marker_pos");
    let mut b = good.clone();
    b.qtype[0] = 3;
    check(&mut e, b, "question type");
    let mut b = good.clone();
    b.input_ids.pop();
    check(&mut e, b, "input_ids has 15 values");
    let mut b = good.clone();
    b.marker_mask.push(1);
    check(&mut e, b, "marker_mask");
    let mut b = good.clone();
    b.attention_mask[2] = 2;
    check(&mut e, b, "zero or one");
    let mut b = good.clone();
    b.position_ids = Some(vec![0; 16]);
    check(&mut e, b, "sequential");
    check(&mut e, batch(1, 17, 4, &[17], 512), "max_length");
    check(&mut e, batch(3, 16, 4, &[16, 16, 16], 512), "batch_size");
    let mut b = good.clone();
    b.attention_mask.iter_mut().for_each(|m| *m = 0);
    check(&mut e, b, "no valid attention key");
    e.forward(&good, &mut out).unwrap();
}

#[test]
fn mismatched_weights_are_reported_not_panicked() {
    let (enc, agent) = tiny_shape();
    let mut w = random_weights(&enc, &agent, 1);
    w.layers.pop();
    assert!(PortableBackend::try_new(
        w.clone(),
        enc.clone(),
        agent.clone(),
        caps(1, 8, 2),
        "x".into(),
        1,
        &settings()
    )
    .is_err());
    let mut e = PortableBackend::new(w, enc, agent, caps(1, 8, 2), "x".into(), 1, &settings());
    let mut out = ForwardOutput::default();
    assert!(matches!(e.forward(&batch(1, 8, 2, &[8], 512), &mut out), Err(BackendError::Runtime(_))));
}
