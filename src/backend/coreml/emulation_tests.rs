//! The ANE tensors mean what the graph needs: a plain FP32 emulation of the ANE package that
//! consumes exactly the five built tensors (BC1L embeddings read channel-first, masks added to
//! the scores at `[key, query]`, type vectors added, markers gathered by multiplying with the
//! one-hot marker map), then the host tail, must equal the portable engine's whole forward on
//! the same prepared batch. Byte equality with the reference proves the layout; this proves
//! its semantics (docs/host-path.md §1.7 "Graph internals", §2).

use serde_json::Value;

use super::decode::{ArrayType, RawArray};
use super::layout::AneInputs;
use super::*;
use crate::backend::portable::PortableBackend;
use crate::backend::{Backend, ForwardOutput, PreparedBatch};
use crate::laya::bundle::{builtin, Bundle, ModelSpec};
use crate::laya::config::{decision_head_heads, EncoderConfig};
use crate::model::ops;
use crate::model::weights::{DecisionWeights, Linear, Matrix, Norm};

const HEAD_EPS: f32 = 1e-5;

fn f16(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

/// `y[r] = lin(x[r])` for every row of a row-major `[rows, in]` matrix.
fn rows(lin: &Linear, x: &[f32], n: usize) -> Vec<f32> {
    let (i, o) = (lin.in_features(), lin.out_features());
    let mut y = vec![0.0; n * o];
    for r in 0..n {
        assert!(lin.forward_vec(&x[r * i..(r + 1) * i], &mut y[r * o..(r + 1) * o]));
    }
    y
}

fn norm_rows(n: &Norm, x: &[f32], d: usize, eps: f32) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    for (a, b) in x.chunks(d).zip(y.chunks_mut(d)) {
        ops::layer_norm(a, &n.weight, n.bias.as_deref(), eps, b);
    }
    y
}

/// Multi-head attention with an additive mask `mask(q, k)`; optional RoPE base.
fn attend(
    qkv: &[f32],
    l: usize,
    d: usize,
    heads: usize,
    rope: Option<f64>,
    mask: &dyn Fn(usize, usize) -> f32,
) -> Vec<f32> {
    let dh = d / heads;
    let rot = |v: &mut [f32], t: usize, base: f64| {
        let half = dh / 2;
        for m in 0..half {
            let angle = t as f64 / base.powf(2.0 * m as f64 / dh as f64);
            let (s, c) = (angle.sin() as f32, angle.cos() as f32);
            let (u, w) = (v[m], v[m + half]);
            v[m] = u * c - w * s;
            v[m + half] = w * c + u * s;
        }
    };
    let mut out = vec![0.0; l * d];
    for h in 0..heads {
        let take = |part: usize, t: usize| {
            let start = t * 3 * d + part * d + h * dh;
            let mut v = qkv[start..start + dh].to_vec();
            if let (Some(base), true) = (rope, part < 2) {
                rot(&mut v, t, base);
            }
            v
        };
        let (q, k, v): (Vec<_>, Vec<_>, Vec<_>) = (
            (0..l).map(|t| take(0, t)).collect(),
            (0..l).map(|t| take(1, t)).collect(),
            (0..l).map(|t| take(2, t)).collect(),
        );
        let scale = (dh as f32).powf(-0.5);
        for qi in 0..l {
            let mut s: Vec<f32> = (0..l).map(|ki| ops::dot(&q[qi], &k[ki]) * scale + mask(qi, ki)).collect();
            ops::softmax_in_place(&mut s);
            for (ki, p) in s.iter().enumerate() {
                for c in 0..dh {
                    out[qi * d + h * dh + c] += p * v[ki][c];
                }
            }
        }
    }
    out
}

/// The ANE graph on its five input tensors: raw `[32]` logits and the pooled CLS `[D]`.
/// `swap_mask_axes` reads the masks as `[query, key]` instead (the ablation that must fail).
fn emulate(
    w: &DecisionWeights,
    enc: &EncoderConfig,
    x_in: &AneInputs,
    swap_mask_axes: bool,
) -> (Vec<f32>, Vec<f32>) {
    let shape = x_in.shape();
    let (l, d) = (shape.length, shape.width);
    let eps = enc.norm_eps as f32;
    // embeddings are [1, D, 1, L]: token t, channel c at c * L + t
    let mut x: Vec<f32> = (0..l * d).map(|i| f16(x_in.embeddings[(i % d) * l + i / d])).collect();
    x = norm_rows(&w.emb_norm, &x, d, eps);
    // masks are [1, key, 1, query]: added to the score of query q and key k
    let at = move |q: usize, k: usize| if swap_mask_axes { q * l + k } else { k * l + q };
    let full = |q: usize, k: usize| f16(x_in.full_mask[at(q, k)]);
    let local = |q: usize, k: usize| f16(x_in.local_mask[at(q, k)]);
    for (i, layer) in w.layers.iter().enumerate() {
        let a = match &layer.attn_norm {
            Some(n) => norm_rows(n, &x, d, eps),
            None => x.clone(),
        };
        let qkv = rows(&layer.wqkv, &a, l);
        let kind = enc.layer_kinds[i];
        let mask: &dyn Fn(usize, usize) -> f32 = match kind {
            crate::laya::config::LayerKind::Full => &full,
            crate::laya::config::LayerKind::Sliding => &local,
        };
        let o = rows(&layer.wo, &attend(&qkv, l, d, enc.num_heads, Some(enc.rope_theta(kind)), mask), l);
        x.iter_mut().zip(&o).for_each(|(x, o)| *x += o);
        let m = rows(&layer.wi, &norm_rows(&layer.mlp_norm, &x, d, eps), l);
        let inter = enc.intermediate_size;
        let gated: Vec<f32> = (0..l * inter)
            .map(|j| {
                let (t, c) = (j / inter, j % inter);
                ops::gelu(m[t * 2 * inter + c]) * m[t * 2 * inter + inter + c]
            })
            .collect();
        let y = rows(&layer.mlp_wo, &gated, l);
        x.iter_mut().zip(&y).for_each(|(x, y)| *x += y);
    }
    let mut h = norm_rows(&w.final_norm, &x, d, eps);
    for (i, v) in h.iter_mut().enumerate() {
        *v += f16(x_in.type_vectors[i % d]);
    }
    let heads = decision_head_heads(d);
    for layer in &w.head {
        let qkv = rows(&layer.in_proj, &norm_rows(&layer.norm1, &h, d, HEAD_EPS), l);
        let o = rows(&layer.out_proj, &attend(&qkv, l, d, heads, None, &full), l);
        h.iter_mut().zip(&o).for_each(|(h, o)| *h += o);
        let mut up = rows(&layer.linear1, &norm_rows(&layer.norm2, &h, d, HEAD_EPS), l);
        up.iter_mut().for_each(|v| *v = v.max(0.0));
        let down = rows(&layer.linear2, &up, l);
        h.iter_mut().zip(&down).for_each(|(h, y)| *h += y);
    }
    // markers[j] = sum_t marker_map[t, j] * h[t]  (marker_map is [1, L, 1, 32])
    let mut markers = vec![0.0f32; ANE_SLOTS * d];
    for j in 0..ANE_SLOTS {
        for t in 0..l {
            let m = f16(x_in.marker_map[t * ANE_SLOTS + j]);
            for c in 0..d {
                markers[j * d + c] += m * h[t * d + c];
            }
        }
    }
    let mut hidden = rows(&w.scorer.hidden, &norm_rows(&w.scorer.norm, &markers, d, HEAD_EPS), ANE_SLOTS);
    hidden.iter_mut().for_each(|v| *v = ops::gelu(*v));
    (rows(&w.scorer.output, &hidden, ANE_SLOTS), h[..d].to_vec())
}

/// The fixture's weights with the two tables the ANE host feeds in FP16 rounded to FP16, so the
/// portable engine sees the same values as the emulated package.
fn fp16_fed_weights(bundle: &Bundle) -> DecisionWeights {
    let mut w =
        DecisionWeights::from_safetensors(builtin::MODEL, &bundle.encoder, &bundle.agent, "tiny").unwrap();
    let round = |v: &mut [f32]| v.iter_mut().for_each(|x| *x = half::f16::from_f32(*x).to_f32());
    let (rows, cols) = (w.tok_embeddings.rows(), w.tok_embeddings.cols());
    let mut e = w.tok_embeddings.to_row_major_f32().unwrap();
    round(&mut e);
    w.tok_embeddings = Matrix::f32_row_major(rows, cols, e).unwrap();
    round(&mut w.type_emb);
    w
}

#[test]
fn the_ane_tensors_drive_the_same_model_as_the_portable_forward() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
    let weights = fp16_fed_weights(&bundle);
    let shapes =
        ShapeCaps { batch_size: 1, max_length: 96, min_length: 96, max_options: 32, mode: ShapeMode::Fixed };
    let mut portable = PortableBackend::new(
        weights.clone(),
        bundle.encoder.clone(),
        bundle.agent.clone(),
        shapes,
        "test".into(),
        1,
        &crate::settings::Settings::of_test_process(),
    );
    let mut host = AneHost::new(
        HostWeights::from_safetensors(builtin::MODEL, "tiny").unwrap(),
        96,
        bundle.encoder.local_attention,
    );
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/goldens/ane.json")).unwrap(),
    )
    .unwrap();
    let (mut want, mut got) = (ForwardOutput::default(), ForwardOutput::default());
    let mut ablation_differs = false;
    for case in doc["cases"].as_array().unwrap() {
        let b = &case["batch"];
        let field = |k: &str| -> Vec<i32> {
            b[k].as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r.as_array().cloned().unwrap_or_else(|| vec![r.clone()]))
                .map(|v| v.as_i64().unwrap() as i32)
                .collect()
        };
        let batch = PreparedBatch {
            batch: 1,
            length: 96,
            max_options: 32,
            input_ids: field("input_ids"),
            attention_mask: field("attention_mask"),
            marker_pos: field("marker_pos"),
            marker_mask: field("marker_mask"),
            qtype: field("qtype"),
            position_ids: None,
            option_ids: None,
        };
        portable.forward(&batch, &mut want).unwrap();
        let inputs = host.prepare(&batch).unwrap().clone();
        let (swapped, _) = emulate(&weights, &bundle.encoder, &inputs, true);
        let (logits, cls) = emulate(&weights, &bundle.encoder, &inputs, false);
        ablation_differs |= swapped.iter().zip(&logits).any(|(a, b)| (a - b).abs() > 1e-2);
        // hand them back the way Core ML would: FP32 outputs, CLS first, told apart by shape
        let (lb, cb): (Vec<u8>, Vec<u8>) = (
            logits.iter().flat_map(|x| x.to_le_bytes()).collect(),
            cls.iter().flat_map(|x| x.to_le_bytes()).collect(),
        );
        let d = cls.len();
        let outputs = [
            RawArray {
                name: "cls",
                dtype: ArrayType::Float32,
                shape: &[1, d, 1, 1],
                strides: &[d, 1, 1, 1],
                bytes: &cb,
            },
            RawArray {
                name: "logits",
                dtype: ArrayType::Float32,
                shape: &[1, 1, 1, 32],
                strides: &[32, 32, 32, 1],
                bytes: &lb,
            },
        ];
        host.finish(&batch, &outputs, &mut got).unwrap();
        let name = case["name"].as_str().unwrap();
        assert_eq!(got.logits.len(), want.logits.len());
        for (g, w) in
            got.logits.iter().zip(&want.logits).chain(got.action_logits.iter().zip(&want.action_logits))
        {
            let err = (g - w).abs() / w.abs().max(1.0);
            assert!(err < 1e-4, "{name}: emulated {g} vs portable {w}\n{:?}\n{:?}", got.logits, want.logits);
        }
    }
    assert!(ablation_differs, "reading the masks as [query, key] must change the logits");
}
