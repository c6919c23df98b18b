//! FLOP per decision, part by part, and the body weight bytes one decision streams at each
//! precision (the counting conventions are in the [module docs](super)).

use serde::Serialize;

use super::BoundsError;
use crate::laya::config::{AgentConfig, EncoderConfig, LayerKind};
use crate::model::weights::{tensor_specs, ACT_HIDDEN};
use crate::model::Precision;

/// Marker slots the scorer runs over by default (the fixed K of the ANE bundles).
pub const DEFAULT_MARKER_SLOTS: usize = 32;

/// Bytes of one palettization lookup-table entry (FP16 centroids).
pub const LUT_ENTRY_BYTES: u64 = 2;

/// Multiply-accumulates of one decision, part by part (FLOP = MACs × 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlopBreakdown {
    /// Sequence length `L`.
    pub length: usize,
    /// Marker slots `K` the scorer runs over.
    pub marker_slots: usize,
    /// Encoder `Wqkv`, `Wo`, `Wi`, MLP `Wo` at every position: `N·L·(3D² + D² + 2ID + ID)`.
    pub encoder_projections_macs: u64,
    /// Encoder `QKᵀ` + `AV` with full `L×L` in every layer (published): `N·2·L²·D`.
    pub encoder_attention_macs: u64,
    /// Encoder `QKᵀ` + `AV` counting only the keys a sliding layer can see.
    pub encoder_attention_windowed_macs: u64,
    /// Decision-head `in_proj`, `out_proj`, `linear1`, `linear2`: `H·L·12D²`.
    pub head_projections_macs: u64,
    /// Decision-head `QKᵀ` + `AV` over all `L` positions: `H·2·L²·D`.
    pub head_attention_macs: u64,
    /// Scorer `Linear(D→D)` and `Linear(D→1)` over K slots: `K·(D² + D)`.
    pub scorer_macs: u64,
    /// Action head `Linear(D+4→256)` and `Linear(256→A)`: `256·(D+4) + 256·A`.
    pub action_head_macs: u64,
}

impl FlopBreakdown {
    /// FLOP of the published convention: encoder and decision head, full attention (headline).
    pub fn published_flop(&self) -> u64 {
        2 * (self.encoder_projections_macs
            + self.encoder_attention_macs
            + self.head_projections_macs
            + self.head_attention_macs)
    }

    /// Published FLOP plus the scorer and the action head.
    pub fn with_tail_flop(&self) -> u64 {
        self.published_flop() + 2 * (self.scorer_macs + self.action_head_macs)
    }

    /// Published FLOP with sliding layers' attention counted over visible keys only.
    pub fn windowed_flop(&self) -> u64 {
        self.published_flop() - 2 * self.encoder_attention_macs + 2 * self.encoder_attention_windowed_macs
    }
}

fn mul(values: &[u64], what: &'static str) -> Result<u64, BoundsError> {
    values.iter().try_fold(1u64, |acc, &v| acc.checked_mul(v)).ok_or(BoundsError::Overflow(what))
}

fn add(values: &[u64], what: &'static str) -> Result<u64, BoundsError> {
    values.iter().try_fold(0u64, |acc, &v| acc.checked_add(v)).ok_or(BoundsError::Overflow(what))
}

fn u(x: usize) -> u64 {
    x as u64
}

/// Query–key pairs visible in a sliding layer of length `len` with largest distance `half`.
fn visible_pairs(len: u64, half: u64) -> Result<u64, BoundsError> {
    // Each query sees itself and up to `m` keys on each side: L + 2·Σ_{d=1..m} (L − d).
    let m = half.min(len.saturating_sub(1));
    let side = mul(&[m, len], "attention")? - m * (m + 1) / 2;
    add(&[len, mul(&[2, side], "attention")?], "attention")
}

/// Multiply-accumulates of one decision (one row, batch 1) at `length` with `marker_slots` slots.
pub fn flops_per_decision(
    enc: &EncoderConfig,
    agent: &AgentConfig,
    length: usize,
    marker_slots: usize,
) -> Result<FlopBreakdown, BoundsError> {
    if length == 0 {
        return Err(BoundsError::ZeroLength);
    }
    if marker_slots == 0 {
        return Err(BoundsError::ZeroMarkerSlots);
    }
    let (l, d) = (u(length), u(enc.hidden_size));
    let (n, h, k) = (u(enc.num_layers), u(agent.head_layers), u(marker_slots));
    let enc_layer_params = encoder_layer_matrix_params(enc)?;
    let head_layer_params = head_layer_matrix_params(enc)?;
    let full_pairs = mul(&[l, l], "attention")?;
    let per_layer_full = mul(&[2, full_pairs, d], "attention")?;
    let sliding_pairs = visible_pairs(l, u(enc.half_window()))?;
    let per_layer_sliding = mul(&[2, sliding_pairs, d], "attention")?;
    let mut windowed = 0u64;
    for kind in &enc.layer_kinds {
        let part = if *kind == LayerKind::Sliding { per_layer_sliding } else { per_layer_full };
        windowed = add(&[windowed, part], "attention")?;
    }
    let act_in = add(&[d, 4], "action head")?;
    let b = FlopBreakdown {
        length,
        marker_slots,
        encoder_projections_macs: mul(&[n, l, enc_layer_params], "encoder projections")?,
        encoder_attention_macs: mul(&[n, per_layer_full], "attention")?,
        encoder_attention_windowed_macs: windowed,
        head_projections_macs: mul(&[h, l, head_layer_params], "head projections")?,
        head_attention_macs: mul(&[h, per_layer_full], "attention")?,
        scorer_macs: mul(&[k, add(&[mul(&[d, d], "scorer")?, d], "scorer")?], "scorer")?,
        action_head_macs: add(
            &[
                mul(&[u(ACT_HIDDEN), act_in], "action head")?,
                mul(&[u(ACT_HIDDEN), u(agent.num_actions)], "action head")?,
            ],
            "action head",
        )?,
    };
    // Every total below (× 2 for FLOP) must fit too.
    let all = add(
        &[
            b.encoder_projections_macs,
            b.encoder_attention_macs,
            b.head_projections_macs,
            b.head_attention_macs,
            b.scorer_macs,
            b.action_head_macs,
        ],
        "FLOP",
    )?;
    mul(&[2, all], "FLOP")?;
    Ok(b)
}

/// FLOP of the rows a workload runs over one period of the protocol's cycle through its
/// requests, and the decisions they answer: what `speed` reports per decision and `bounds
/// --workload` prints. Every row is counted at the length the backend pads it to (the work the
/// arm does, not the row's real tokens) and over the scorer's `K` slots, all of which it scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkloadFlop {
    /// Decisions (requests answered) in the period.
    pub decisions: u64,
    /// Question rows the backend ran for them (a forward's padding rows included).
    pub rows: u64,
    /// FLOP of all those rows, published convention (encoder and decision head).
    pub flop: u64,
    /// The same with the scorer and the action head of every row.
    pub with_scorer_and_action_head_flop: u64,
}

impl WorkloadFlop {
    /// Rows run per decision.
    pub fn rows_per_decision(&self) -> f64 {
        self.rows as f64 / self.decisions as f64
    }

    /// GFLOP per decision, published convention.
    pub fn gflop_per_decision(&self) -> f64 {
        self.flop as f64 / self.decisions as f64 / 1e9
    }

    /// GFLOP per decision with the scorer and the action head (`speed`'s `gflop_per_decision`).
    pub fn with_tail_gflop_per_decision(&self) -> f64 {
        self.with_scorer_and_action_head_flop as f64 / self.decisions as f64 / 1e9
    }
}

/// The [`WorkloadFlop`] of rows run at `row_lengths` (one entry per row the backend ran, its
/// padded length) answering `decisions` requests, each row with `marker_slots` scorer slots.
pub fn workload_flops(
    enc: &EncoderConfig,
    agent: &AgentConfig,
    row_lengths: &[usize],
    decisions: u64,
    marker_slots: usize,
) -> Result<WorkloadFlop, BoundsError> {
    if decisions == 0 || row_lengths.is_empty() {
        return Err(BoundsError::EmptyWorkload);
    }
    let mut w = WorkloadFlop { decisions, rows: 0, flop: 0, with_scorer_and_action_head_flop: 0 };
    for &length in row_lengths {
        let b = flops_per_decision(enc, agent, length, marker_slots)?;
        w.rows += 1;
        w.flop = add(&[w.flop, b.published_flop()], "FLOP")?;
        w.with_scorer_and_action_head_flop =
            add(&[w.with_scorer_and_action_head_flop, b.with_tail_flop()], "FLOP")?;
    }
    Ok(w)
}

/// Weights of one encoder layer's matrices: `Wqkv` 3D·D, `Wo` D·D, `Wi` 2I·D, MLP `Wo` D·I.
fn encoder_layer_matrix_params(enc: &EncoderConfig) -> Result<u64, BoundsError> {
    let (d, i_) = (u(enc.hidden_size), u(enc.intermediate_size));
    let dd = mul(&[d, d], "parameter count")?;
    let di = mul(&[d, i_], "parameter count")?;
    add(&[mul(&[3, dd], "parameter count")?, dd, mul(&[2, di], "parameter count")?, di], "parameter count")
}

/// Weights of one decision-head layer's matrices: `in_proj` 3D², `out_proj` D², FFN 2·4D².
fn head_layer_matrix_params(enc: &EncoderConfig) -> Result<u64, BoundsError> {
    let d = u(enc.hidden_size);
    mul(&[12, d, d], "parameter count")
}

// ------------------------------------------------------------------------------------------
// Weight bytes

/// The body weights one decision streams, at one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BodyWeights {
    /// Storage precision.
    pub precision: Precision,
    /// Stored bits per weight.
    pub bits_per_weight: u64,
    /// FP16 lookup-table entries per palettized tensor (`null` when dense).
    pub lut_entries_per_tensor: Option<u64>,
    /// Encoder matrix weights: `N·(3D² + D² + 2ID + ID)`.
    pub encoder_matrix_params: u64,
    /// Decision-head matrix weights: `H·12D²`.
    pub head_matrix_params: u64,
    /// Streamed body weights: encoder + decision-head matrices (the published count).
    pub body_params: u64,
    /// Weight matrices in the body (one lookup table each when palettized).
    pub body_tensors: u64,
    /// Packed weight bytes: per tensor `ceil(params · bits / 8)`.
    pub weight_bytes: u64,
    /// Lookup-table bytes (`body_tensors · entries · 2`; 0 when dense).
    pub lut_bytes: u64,
    /// Bytes streamed per decision: `weight_bytes + lut_bytes`.
    pub bytes: u64,
    /// The same in MB (10⁶ bytes).
    pub mb: f64,
    /// Token embedding table (not streamed: only L rows are gathered).
    pub embedding_params: u64,
    /// Biases, norms, type embedding, scorer and action head: not in the published count.
    pub excluded_small_params: u64,
}

/// The body weights the configs imply and the bytes one decision streams at `precision`.
pub fn body_weight_bytes(
    enc: &EncoderConfig,
    agent: &AgentConfig,
    precision: Precision,
) -> Result<BodyWeights, BoundsError> {
    let (d, i_) = (u(enc.hidden_size), u(enc.intermediate_size));
    let (n, h) = (u(enc.num_layers), u(agent.head_layers));
    let bits = precision.bits_per_weight();
    // ceil(weights · bits / 8) bytes for a matrix of `factors` weights.
    let packed = |factors: &[u64]| -> Result<u64, BoundsError> {
        Ok(mul(&[mul(factors, "weight bytes")?, bits], "weight bytes")?.div_ceil(8))
    };
    let enc_layer_bytes = add(
        &[packed(&[3, d, d])?, packed(&[d, d])?, packed(&[2, i_, d])?, packed(&[d, i_])?],
        "weight bytes",
    )?;
    let head_layer_bytes = add(
        &[packed(&[3, d, d])?, packed(&[d, d])?, packed(&[4, d, d])?, packed(&[d, 4, d])?],
        "weight bytes",
    )?;
    let weight_bytes = add(
        &[mul(&[n, enc_layer_bytes], "weight bytes")?, mul(&[h, head_layer_bytes], "weight bytes")?],
        "weight bytes",
    )?;
    let encoder_matrix_params = mul(&[n, encoder_layer_matrix_params(enc)?], "parameter count")?;
    let head_matrix_params = mul(&[h, head_layer_matrix_params(enc)?], "parameter count")?;
    let body_params = add(&[encoder_matrix_params, head_matrix_params], "parameter count")?;
    let body_tensors = mul(&[4, add(&[n, h], "tensor count")?], "tensor count")?;
    let lut_bytes = match precision.lut_entries() {
        Some(entries) => mul(&[body_tensors, entries, LUT_ENTRY_BYTES], "weight bytes")?,
        None => 0,
    };
    let bytes = add(&[weight_bytes, lut_bytes], "weight bytes")?;
    let embedding_params = mul(&[u(enc.vocab_size), d], "parameter count")?;
    let mut all_params = 0u64;
    for spec in tensor_specs(enc, agent) {
        let count = spec.shape.iter().try_fold(1u64, |acc, &x| acc.checked_mul(u(x)));
        all_params =
            add(&[all_params, count.ok_or(BoundsError::Overflow("parameter count"))?], "parameter count")?;
    }
    let excluded_small_params = all_params.saturating_sub(body_params).saturating_sub(embedding_params);
    Ok(BodyWeights {
        precision,
        bits_per_weight: bits,
        lut_entries_per_tensor: precision.lut_entries(),
        encoder_matrix_params,
        head_matrix_params,
        body_params,
        body_tensors,
        weight_bytes,
        lut_bytes,
        bytes,
        mb: bytes as f64 / 1e6,
        embedding_params,
        excluded_small_params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::test_support::{close, shape};
    use crate::model::synthetic::tiny_shape;

    #[test]
    fn multilingual_l96_is_24_57_gflop_with_published_parts() {
        let (e, a) = shape("multilingual");
        let b = flops_per_decision(&e, &a, 96, DEFAULT_MARKER_SLOTS).unwrap();
        // docs/methodology.md, "Math bounds": 10.589 G + 0.311 G + 1.359 G + 0.028 G MACs.
        assert_eq!(b.encoder_projections_macs, 10_588_520_448);
        assert_eq!(b.encoder_attention_macs, 311_427_072);
        assert_eq!(b.head_projections_macs, 1_358_954_496);
        assert_eq!(b.head_attention_macs, 28_311_552);
        assert_eq!(b.published_flop(), 24_574_427_136);
        assert!(close(b.published_flop() as f64 / 1e9, 24.57, 0.01));
    }

    #[test]
    fn scorer_and_action_head_are_separate_and_small() {
        let (e, a) = shape("multilingual");
        let b = flops_per_decision(&e, &a, 96, 32).unwrap();
        assert_eq!(b.scorer_macs, 32 * (768 * 768 + 768));
        assert_eq!(b.action_head_macs, 256 * 772 + 256 * 2);
        assert_eq!(b.with_tail_flop() - b.published_flop(), 2 * (b.scorer_macs + b.action_head_macs));
        // At four marker slots the tail is under 0.01 GFLOP, as published.
        let four = flops_per_decision(&e, &a, 96, 4).unwrap();
        assert!((four.with_tail_flop() - four.published_flop()) < 10_000_000);
    }

    #[test]
    fn windowed_attention_counts_only_visible_keys() {
        let (e, a) = shape("multilingual");
        // Window 128: |q - k| <= 64. At L96, 992 of 9216 pairs are out of reach.
        let b = flops_per_decision(&e, &a, 96, 32).unwrap();
        let sliding = e.layer_kinds.iter().filter(|k| **k == LayerKind::Sliding).count() as u64;
        let full = 22 - sliding;
        assert_eq!(
            b.encoder_attention_windowed_macs,
            full * 2 * 9216 * 768 + sliding * 2 * (9216 - 992) * 768
        );
        assert!(b.windowed_flop() < b.published_flop());
        // Below the half window every key is visible: both counts agree.
        let short = flops_per_decision(&e, &a, 65, 32).unwrap();
        assert_eq!(short.encoder_attention_windowed_macs, short.encoder_attention_macs);
        assert_eq!(visible_pairs(3, 1).unwrap(), 7);
        assert_eq!(visible_pairs(1, 64).unwrap(), 1);
    }

    #[test]
    fn published_body_weights_are_248_9_and_736_6_mb_fp16() {
        let (e, a) = shape("multilingual");
        let w = body_weight_bytes(&e, &a, Precision::F16).unwrap();
        assert_eq!(w.body_params, 124_452_864);
        assert_eq!(w.bytes, 248_905_728);
        assert!(close(w.mb, 248.9, 0.05));
        assert_eq!(w.embedding_params, 196_608_000);
        let (e, a) = shape("english");
        let w = body_weight_bytes(&e, &a, Precision::F16).unwrap();
        assert_eq!(w.encoder_matrix_params, 343_146_496);
        assert_eq!(w.head_matrix_params, 25_165_824);
        assert_eq!(w.body_params, 368_312_320);
        assert!(close(w.mb, 736.6, 0.05));
    }

    #[test]
    fn excluded_small_params_cover_the_rest_of_the_checkpoint() {
        let (e, a) = tiny_shape();
        let w = body_weight_bytes(&e, &a, Precision::F32).unwrap();
        let total: u64 = tensor_specs(&e, &a).iter().map(|s| s.shape.iter().product::<usize>() as u64).sum();
        assert_eq!(w.body_params + w.embedding_params + w.excluded_small_params, total);
        assert!(w.excluded_small_params > 64 * 64); // the scorer's D x D at least
        assert_eq!(w.bytes, 4 * w.body_params);
    }

    #[test]
    fn palettized_bytes_add_one_fp16_table_per_matrix() {
        let (e, a) = shape("multilingual");
        let w8 = body_weight_bytes(&e, &a, Precision::W8).unwrap();
        assert_eq!(w8.body_tensors, 4 * (22 + 2));
        assert_eq!(w8.lut_bytes, 96 * 256 * 2);
        assert_eq!(w8.bytes, 124_452_864 + 96 * 512);
        let w4 = body_weight_bytes(&e, &a, Precision::W4).unwrap();
        assert_eq!(w4.bytes, 124_452_864 / 2 + 96 * 16 * 2);
        let w6 = body_weight_bytes(&e, &a, Precision::W6).unwrap();
        assert_eq!(w6.weight_bytes, 124_452_864 * 6 / 8);
        assert_eq!(body_weight_bytes(&e, &a, Precision::Bf16).unwrap().bytes, 2 * 124_452_864);
    }

    #[test]
    fn zero_length_and_zero_slots_are_rejected_and_huge_shapes_do_not_panic() {
        let (e, a) = shape("multilingual");
        assert_eq!(flops_per_decision(&e, &a, 0, 32), Err(BoundsError::ZeroLength));
        assert_eq!(flops_per_decision(&e, &a, 96, 0), Err(BoundsError::ZeroMarkerSlots));
        assert!(matches!(flops_per_decision(&e, &a, usize::MAX, 32), Err(BoundsError::Overflow(_))));
        let mut huge = e.clone();
        huge.hidden_size = usize::MAX / 2;
        assert!(body_weight_bytes(&huge, &a, Precision::F16).is_err());
    }
}
