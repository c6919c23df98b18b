//! The math bounds of one decision (energy-protocol.md, "Math bounds"): FLOP per decision,
//! weight bytes streamed, compute and bandwidth floors, the latency a target speed-up needs and
//! the throughput it implies, and Amdahl's law.
//!
//! Pure functions over configs and numbers; nothing here reads files, the clock or the
//! environment. The conventions are the published ones, so the article's figures come out
//! exactly (24.57 GFLOP at L96 for the multilingual shape; 248.9 MB / 736.6 MB of FP16 body
//! weights; 0.622 ms / 1.842 ms at 400 GB/s):
//!
//! - One decision is one question row at batch 1 and length `L` (a request with Q questions
//!   runs Q rows). FLOP = dense multiply-accumulates × 2.
//! - Counted: every encoder and decision-head projection at every position, and attention
//!   `QKᵀ` + `AV` = `2·L²·D` MACs per layer, full `L×L` in sliding-window layers too. The
//!   window-aware count is reported next to it, labelled. The scorer over K marker slots and the
//!   action head are reported separately and are not in the headline figure. The embedding
//!   gather, norms, activations, softmax and residual adds are 0 FLOP.
//! - Bytes streamed: the body's weight matrices (encoder `Wqkv`, `Wo`, `Wi`, `Wo`; head
//!   `in_proj`, `out_proj`, `linear1`, `linear2`), each read once per decision. The embedding
//!   table (only L rows are gathered), biases, norms, type embedding, scorer and action head are
//!   excluded and reported as such. MB = 10⁶ bytes, GB/s = 10⁹ bytes per second.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::laya::config::{decision_head_heads, AgentConfig, EncoderConfig, LayerKind};
use crate::model::weights::{tensor_specs, ACT_HIDDEN};

/// Version of the `laya-bench bounds --json` document.
pub const SCHEMA_VERSION: u32 = 1;

/// Marker slots the scorer runs over by default (the fixed K of the ANE bundles).
pub const DEFAULT_MARKER_SLOTS: usize = 32;

/// Bytes of one palettization lookup-table entry (FP16 centroids).
pub const LUT_ENTRY_BYTES: u64 = 2;

/// Measured fractions `f` shown in the Amdahl table.
pub const AMDAHL_FRACTIONS: [f64; 7] = [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];

/// Finite speed-ups `s` of the accelerated part shown in the Amdahl table (∞ is its own column).
pub const AMDAHL_PART_SPEEDUPS: [f64; 3] = [2.0, 5.0, 10.0];

/// An input the bounds cannot be computed for, with what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BoundsError {
    /// The sequence length is 0.
    #[error("invalid length 0: the sequence length must be at least 1 token (e.g. --length 96)")]
    ZeroLength,
    /// The scorer has no marker slots.
    #[error("invalid marker slots 0: the scorer needs at least 1 slot (the ANE bundles use 32)")]
    ZeroMarkerSlots,
    /// A target speed-up that is not a factor above 1.
    #[error("invalid target {0}: a target speed-up is a factor above 1, e.g. --target 10")]
    Target(f64),
    /// A quantity that must be positive is not.
    #[error("invalid {what} {value}: must be a finite number greater than 0 ({fix})")]
    NotPositive {
        /// Which quantity.
        what: &'static str,
        /// The value given.
        value: f64,
        /// An example of a good value.
        fix: &'static str,
    },
    /// A measured fraction outside [0, 1].
    #[error(
        "invalid fraction {0}: the measured fraction f of the latency must lie in [0, 1] \
         (e.g. --fraction 0.9 when the accelerated part is 90 % of the original latency)"
    )]
    Fraction(f64),
    /// A hardware profile name we do not know.
    #[error("unknown profile `{name}`: use one of {known}, or give --peak-tflops and --bandwidth-gbs")]
    UnknownProfile {
        /// The name given.
        name: String,
        /// The names we know, comma-separated.
        known: String,
    },
    /// A precision name we do not know.
    #[error("unknown precision `{0}`: use f32, f16, bf16, w8, w6 or w4")]
    UnknownPrecision(String),
    /// The profile has no bandwidth figure and none was given.
    #[error("profile `{profile}` has no known memory bandwidth ({reason}); pass --bandwidth-gbs")]
    MissingBandwidth {
        /// The profile.
        profile: String,
        /// Why the figure is unknown.
        reason: String,
    },
    /// A count does not fit 64 bits.
    #[error("the {0} of this shape overflows a 64-bit count; use a smaller length or model")]
    Overflow(&'static str),
}

// ------------------------------------------------------------------------------------------
// Precisions

/// How the body's weights are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 4 bytes per weight.
    F32,
    /// 2 bytes per weight (IEEE half).
    F16,
    /// 2 bytes per weight (bfloat16).
    Bf16,
    /// 8-bit palettized: 1 byte per weight + a 256-entry FP16 lookup table per tensor.
    W8,
    /// 6-bit palettized: 0.75 bytes per weight + a 64-entry FP16 lookup table per tensor.
    W6,
    /// 4-bit palettized: 0.5 bytes per weight + a 16-entry FP16 lookup table per tensor.
    W4,
}

/// The arithmetic a precision computes in, which picks the peak of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeType {
    /// FP32 arithmetic.
    F32,
    /// FP16 arithmetic.
    F16,
    /// BF16 arithmetic.
    Bf16,
}

impl Precision {
    /// Every precision, in the order the help lists them.
    pub const ALL: [Precision; 6] =
        [Precision::F32, Precision::F16, Precision::Bf16, Precision::W8, Precision::W6, Precision::W4];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::W8 => "w8",
            Precision::W6 => "w6",
            Precision::W4 => "w4",
        }
    }

    /// Stored bits per weight (palette indices for `w*`).
    pub fn bits_per_weight(self) -> u64 {
        match self {
            Precision::F32 => 32,
            Precision::F16 | Precision::Bf16 => 16,
            Precision::W8 => 8,
            Precision::W6 => 6,
            Precision::W4 => 4,
        }
    }

    /// Lookup-table entries per palettized tensor (`2^bits` FP16 centroids), `None` if dense.
    pub fn lut_entries(self) -> Option<u64> {
        match self {
            Precision::W8 | Precision::W6 | Precision::W4 => Some(1 << self.bits_per_weight()),
            _ => None,
        }
    }

    /// The arithmetic it runs in: palettized weights are expanded to FP16 (as Core ML does).
    pub fn compute(self) -> ComputeType {
        match self {
            Precision::F32 => ComputeType::F32,
            Precision::Bf16 => ComputeType::Bf16,
            Precision::F16 | Precision::W8 | Precision::W6 | Precision::W4 => ComputeType::F16,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Precision {
    type Err = BoundsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        let alias = match lower.as_str() {
            "fp32" => "f32",
            "fp16" => "f16",
            "int8" | "w8a16" => "w8",
            other => other,
        };
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == alias)
            .ok_or_else(|| BoundsError::UnknownPrecision(s.to_string()))
    }
}

impl fmt::Display for ComputeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ComputeType::F32 => "FP32",
            ComputeType::F16 => "FP16",
            ComputeType::Bf16 => "BF16",
        })
    }
}

// ------------------------------------------------------------------------------------------
// FLOP per decision

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

// ------------------------------------------------------------------------------------------
// Hardware profiles

/// A published or measured figure, or `None` with the reason it is unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The value (TFLOP/s or GB/s), `None` when unknown.
    pub value: Option<f64>,
    /// Where the value comes from, or why it is unknown.
    pub source: &'static str,
}

/// A named hardware profile: one compute device and the memory it streams weights from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// The name used with `--profile`.
    pub name: &'static str,
    /// The device whose peak applies.
    pub device: &'static str,
    /// Memory bandwidth in GB/s.
    pub bandwidth_gbs: Figure,
    /// Dense FP32 peak in TFLOP/s.
    pub peak_f32_tflops: Figure,
    /// Dense FP16 peak in TFLOP/s (also used for palettized weights, which expand to FP16).
    pub peak_f16_tflops: Figure,
    /// Dense BF16 peak in TFLOP/s.
    pub peak_bf16_tflops: Figure,
}

impl Profile {
    /// The peak for an arithmetic type.
    pub fn peak(&self, compute: ComputeType) -> Figure {
        match compute {
            ComputeType::F32 => self.peak_f32_tflops,
            ComputeType::F16 => self.peak_f16_tflops,
            ComputeType::Bf16 => self.peak_bf16_tflops,
        }
    }
}

const fn known(value: f64, source: &'static str) -> Figure {
    Figure { value: Some(value), source }
}

const fn unknown(reason: &'static str) -> Figure {
    Figure { value: None, source: reason }
}

/// Apple M3 Max (16-core CPU, 40-core GPU), Neural Engine: 400 GB/s unified memory (Apple
/// MacBook Pro technical specifications, 2023; the 30-core-GPU M3 Max has 300 GB/s). Peak: the
/// 16-core Neural Engine's 18 TOPS (Apple, M3 family announcement, 30 Oct 2023), read as dense
/// FP16 FLOP/s; the Neural Engine computes in FP16 only.
pub const M3_MAX: Profile = Profile {
    name: "m3-max",
    device: "Apple M3 Max Neural Engine (16-core ANE), 400 GB/s unified memory",
    bandwidth_gbs: known(
        400.0,
        "Apple M3 Max (16-core CPU / 40-core GPU) technical specifications: 400 GB/s",
    ),
    peak_f32_tflops: unknown(
        "the Neural Engine has no FP32 arithmetic; use --profile m3-max-gpu or --peak-tflops",
    ),
    peak_f16_tflops: known(
        18.0,
        "Apple: 16-core Neural Engine, 18 TOPS (M3 family announcement, 2023), taken as dense FP16",
    ),
    peak_bf16_tflops: unknown("the Neural Engine has no published BF16 rate; pass --peak-tflops"),
};

/// Apple M3 Max, 40-core GPU: 400 GB/s (as [`M3_MAX`]). Peak ≈ 14.2 TFLOP/s FP32: 40 cores × 128
/// FP32 ALUs × 2 FLOP per FMA × ≈ 1.39 GHz (Apple publishes no TFLOP/s figure; this is the widely
/// quoted derived value). Apple GPUs run FP16 at the FP32 rate.
pub const M3_MAX_GPU: Profile = Profile {
    name: "m3-max-gpu",
    device: "Apple M3 Max 40-core GPU, 400 GB/s unified memory",
    bandwidth_gbs: M3_MAX.bandwidth_gbs,
    peak_f32_tflops: known(
        14.2,
        "40 cores x 128 FP32 ALUs x 2 FLOP x ~1.39 GHz (derived; Apple publishes none)",
    ),
    peak_f16_tflops: known(14.2, "Apple GPUs run FP16 at the FP32 rate (40 x 128 x 2 x ~1.39 GHz)"),
    peak_bf16_tflops: unknown("the M3 GPU has no published BF16 rate; pass --peak-tflops"),
};

/// Apple M4 Max (16-core CPU, 40-core GPU): 546 GB/s unified memory (Apple MacBook Pro technical
/// specifications, 2024; the 32-core-GPU M4 Max has 410 GB/s). Apple quotes 38 TOPS for the M4
/// Neural Engine without naming the precision (read widely as INT8), so no FP16 peak is assumed.
pub const M4_MAX: Profile = Profile {
    name: "m4-max",
    device: "Apple M4 Max Neural Engine, 546 GB/s unified memory",
    bandwidth_gbs: known(546.0, "Apple M4 Max (16-core CPU / 40-core GPU) technical specifications: 546 GB/s"),
    peak_f32_tflops: unknown("the Neural Engine has no FP32 arithmetic; pass --peak-tflops"),
    peak_f16_tflops: unknown(
        "Apple's 38 TOPS for the M4 Neural Engine names no precision (read widely as INT8); pass --peak-tflops",
    ),
    peak_bf16_tflops: unknown("the Neural Engine has no published BF16 rate; pass --peak-tflops"),
};

/// NVIDIA H200 SXM: 4.8 TB/s HBM3e; dense FP16/BF16 tensor-core peak ≈ 989 TFLOP/s (the data
/// sheet's 1,979 TFLOP/s is with 2:4 sparsity); FP32 (no tensor cores) 67 TFLOP/s.
pub const H200: Profile = Profile {
    name: "h200",
    device: "NVIDIA H200 SXM, 4.8 TB/s HBM3e",
    bandwidth_gbs: known(4800.0, "NVIDIA H200 data sheet: 4.8 TB/s"),
    peak_f32_tflops: known(67.0, "NVIDIA H200 data sheet: FP32 67 TFLOP/s (TF32 tensor cores not assumed)"),
    peak_f16_tflops: known(
        989.0,
        "NVIDIA H200 data sheet: FP16 tensor core 1,979 TFLOP/s with sparsity, ~989 dense",
    ),
    peak_bf16_tflops: known(
        989.0,
        "NVIDIA H200 data sheet: BF16 tensor core 1,979 TFLOP/s with sparsity, ~989 dense",
    ),
};

/// This development VM: 2 AMD EPYC Zen 4 cores. FP32 FMA peak 228.6 GFLOP/s measured
/// (performance-anchors.md, 2026-11-29); BF16 dot products ≈ 2× that; no FP16 arithmetic
/// (no avx512_fp16), so FP16 weights compute at the FP32 rate. Bandwidth not measured: the VM
/// shares its host with other work, so `--bandwidth-gbs` is required.
pub const ZEN4_2CORE: Profile = Profile {
    name: "zen4-2core",
    device: "2 AMD EPYC Zen 4 cores (this development VM)",
    bandwidth_gbs: unknown(
        "not measured: this VM shares memory bandwidth with other work, so a figure would not be reproducible",
    ),
    peak_f32_tflops: known(0.2286, "measured FP32 FMA peak on 2 cores, 228.6 GFLOP/s (performance-anchors.md)"),
    peak_f16_tflops: known(
        0.2286,
        "no FP16 arithmetic (no avx512_fp16): FP16 weights widen to FP32, 228.6 GFLOP/s measured",
    ),
    peak_bf16_tflops: known(0.4572, "avx512_bf16 dot products measured at ~2x the FP32 rate (performance-anchors.md)"),
};

/// No named hardware: both figures come from `--peak-tflops` and `--bandwidth-gbs`.
pub const CUSTOM: Profile = Profile {
    name: "custom",
    device: "user-supplied figures",
    bandwidth_gbs: unknown("the custom profile has no bandwidth of its own"),
    peak_f32_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
    peak_f16_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
    peak_bf16_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
};

/// Every named profile.
pub const PROFILES: [Profile; 6] = [M3_MAX, M3_MAX_GPU, M4_MAX, H200, ZEN4_2CORE, CUSTOM];

/// The named profile, or an error that lists the known names.
pub fn profile(name: &str) -> Result<Profile, BoundsError> {
    PROFILES.iter().find(|p| p.name.eq_ignore_ascii_case(name)).copied().ok_or_else(|| {
        BoundsError::UnknownProfile {
            name: name.to_string(),
            known: PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
        }
    })
}

/// The hardware a bound is computed for: a profile with any overrides applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hardware {
    /// Profile name.
    pub profile: String,
    /// The device whose peak applies.
    pub device: String,
    /// The arithmetic the precision runs in.
    pub compute: ComputeType,
    /// Peak for that arithmetic in TFLOP/s; `null` when unknown.
    pub peak_tflops: Option<f64>,
    /// Where the peak comes from, or why it is unknown.
    pub peak_source: String,
    /// Memory bandwidth in GB/s.
    pub bandwidth_gbs: f64,
    /// Where the bandwidth comes from.
    pub bandwidth_source: String,
}

/// A target speed-up: a factor above 1 (at or below 1 every configuration already meets it).
fn speedup_target(value: f64) -> Result<f64, BoundsError> {
    if value.is_finite() && value > 1.0 {
        Ok(value)
    } else {
        Err(BoundsError::Target(value))
    }
}

fn positive(value: f64, what: &'static str, fix: &'static str) -> Result<f64, BoundsError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(BoundsError::NotPositive { what, value, fix })
    }
}

/// Resolve a profile for a precision; `--peak-tflops` and `--bandwidth-gbs` override it.
pub fn resolve_hardware(
    profile: &Profile,
    precision: Precision,
    peak_tflops: Option<f64>,
    bandwidth_gbs: Option<f64>,
) -> Result<Hardware, BoundsError> {
    let compute = precision.compute();
    let (peak_tflops, peak_source) = match peak_tflops {
        Some(v) => (Some(positive(v, "peak", "e.g. --peak-tflops 18")?), "--peak-tflops".to_string()),
        None => {
            let f = profile.peak(compute);
            (f.value, f.source.to_string())
        }
    };
    let (bandwidth_gbs, bandwidth_source) = match bandwidth_gbs {
        Some(v) => (positive(v, "bandwidth", "e.g. --bandwidth-gbs 400")?, "--bandwidth-gbs".to_string()),
        None => match profile.bandwidth_gbs.value {
            Some(v) => (v, profile.bandwidth_gbs.source.to_string()),
            None => {
                return Err(BoundsError::MissingBandwidth {
                    profile: profile.name.to_string(),
                    reason: profile.bandwidth_gbs.source.to_string(),
                })
            }
        },
    };
    Ok(Hardware {
        profile: profile.name.to_string(),
        device: profile.device.to_string(),
        compute,
        peak_tflops,
        peak_source,
        bandwidth_gbs,
        bandwidth_source,
    })
}

// ------------------------------------------------------------------------------------------
// Floors and targets

/// What limits the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundBy {
    /// FLOP / peak is the larger floor.
    Compute,
    /// Bytes / bandwidth is the larger floor.
    Bandwidth,
}

/// Latency floors: `t ≥ max(FLOP / peak, bytes / bandwidth)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Floors {
    /// FLOP / peak in ms; `null` when the peak is unknown.
    pub compute_ms: Option<f64>,
    /// Why `compute_ms` is null.
    pub compute_missing_reason: Option<String>,
    /// Bytes / bandwidth in ms.
    pub bandwidth_ms: f64,
    /// The larger known floor in ms (a lower bound on latency).
    pub floor_ms: f64,
    /// Which floor `floor_ms` is; bandwidth when the compute floor is unknown.
    pub bound_by: BoundBy,
    /// Whether both floors are known (otherwise `floor_ms` is the bandwidth floor only).
    pub complete: bool,
}

/// Milliseconds to do `flop` at `tflops`.
pub fn compute_floor_ms(flop: u64, tflops: f64) -> f64 {
    flop as f64 / (tflops * 1e12) * 1e3
}

/// Milliseconds to stream `bytes` at `gbs` GB/s.
pub fn bandwidth_floor_ms(bytes: u64, gbs: f64) -> f64 {
    bytes as f64 / (gbs * 1e9) * 1e3
}

/// Achieved TFLOP/s of `flop` done in `latency_ms` (for `speed`'s per-arm column); `None` if the
/// latency is not a positive finite number.
pub fn achieved_tflops(flop: u64, latency_ms: f64) -> Option<f64> {
    (latency_ms.is_finite() && latency_ms > 0.0).then(|| flop as f64 / (latency_ms * 1e-3) / 1e12)
}

/// The floors of `flop` and `bytes` on `hw`.
pub fn floors(flop: u64, bytes: u64, hw: &Hardware) -> Floors {
    let compute_ms = hw.peak_tflops.map(|p| compute_floor_ms(flop, p));
    let bandwidth_ms = bandwidth_floor_ms(bytes, hw.bandwidth_gbs);
    let (floor_ms, bound_by) = match compute_ms {
        Some(c) if c > bandwidth_ms => (c, BoundBy::Compute),
        _ => (bandwidth_ms, BoundBy::Bandwidth),
    };
    Floors {
        compute_ms,
        compute_missing_reason: compute_ms
            .is_none()
            .then(|| format!("no {} peak: {}", hw.compute, hw.peak_source)),
        bandwidth_ms,
        floor_ms,
        bound_by,
        complete: compute_ms.is_some(),
    }
}

/// What a target speed-up over a measured baseline requires.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetCheck {
    /// Measured baseline latency in ms.
    pub baseline_ms: f64,
    /// Target speed-up over the baseline.
    pub target_speedup: f64,
    /// `baseline / target` in ms.
    pub required_ms: f64,
    /// Effective compute the required latency implies: FLOP / required, in TFLOP/s.
    pub required_tflops: f64,
    /// Effective bandwidth it implies: bytes / required, in GB/s.
    pub required_gbs: f64,
    /// Whether the required latency is below the compute floor; `null` when the peak is unknown.
    pub below_compute_floor: Option<bool>,
    /// Whether the required latency is below the bandwidth floor.
    pub below_bandwidth_floor: bool,
    /// Whether the target is impossible on this hardware: `true` if below any known floor,
    /// `null` if it clears the known floor but the compute floor is unknown.
    pub below_floor: Option<bool>,
    /// The largest speed-up the known floor allows: `baseline / floor_ms`.
    pub max_speedup_at_floor: f64,
}

/// Check a target speed-up over `baseline_ms` against the floors of `flop` and `bytes`.
pub fn target_check(
    baseline_ms: f64,
    target_speedup: f64,
    flop: u64,
    bytes: u64,
    floors: &Floors,
) -> Result<TargetCheck, BoundsError> {
    let baseline_ms = positive(baseline_ms, "baseline", "e.g. --baseline-ms 7.87")?;
    let target_speedup = speedup_target(target_speedup)?;
    let required_ms = baseline_ms / target_speedup;
    let below_compute_floor = floors.compute_ms.map(|c| required_ms < c);
    let below_bandwidth_floor = required_ms < floors.bandwidth_ms;
    let below_floor = match below_compute_floor {
        Some(c) => Some(c || below_bandwidth_floor),
        None if below_bandwidth_floor => Some(true),
        None => None,
    };
    Ok(TargetCheck {
        baseline_ms,
        target_speedup,
        required_ms,
        required_tflops: flop as f64 / (required_ms * 1e-3) / 1e12,
        required_gbs: bytes as f64 / (required_ms * 1e-3) / 1e9,
        below_compute_floor,
        below_bandwidth_floor,
        below_floor,
        max_speedup_at_floor: baseline_ms / floors.floor_ms,
    })
}

// ------------------------------------------------------------------------------------------
// Amdahl

/// Overall speed-up `S = 1 / (1 − f + f/s)` when a fraction `f` of the latency runs `s`× faster;
/// `s = None` means infinitely faster. Infinite when `f = 1` and `s = ∞`.
pub fn amdahl_speedup(fraction: f64, part_speedup: Option<f64>) -> f64 {
    let accelerated = part_speedup.map_or(0.0, |s| fraction / s);
    1.0 / (1.0 - fraction + accelerated)
}

/// The fraction `f` a part sped up `s`× must take for an overall `target`:
/// `f = (1 − 1/S) / (1 − 1/s)`, `1 − 1/S` for `s = ∞`; 0 for `S ≤ 1`; `None` if no `f ≤ 1` works.
pub fn required_fraction(target: f64, part_speedup: Option<f64>) -> Option<f64> {
    if target <= 1.0 {
        return Some(0.0);
    }
    let need = 1.0 - 1.0 / target;
    let gain = part_speedup.map_or(1.0, |s| 1.0 - 1.0 / s);
    let f = need / gain;
    (gain > 0.0 && f <= 1.0 + 1e-12).then_some(f.min(1.0))
}

/// The speed-up `s` the part taking fraction `f` needs for an overall `target`:
/// `s = f / (1/S − (1 − f))`; 1 for `S ≤ 1`; `None` if even `s = ∞` falls short or only reaches
/// the target in the limit (`f = 1 − 1/S` exactly, e.g. f 0.9 for 10×).
pub fn required_part_speedup(fraction: f64, target: f64) -> Option<f64> {
    if target <= 1.0 {
        return Some(1.0);
    }
    let room = 1.0 / target - (1.0 - fraction);
    // Rounding (1 − 0.9 ≠ 0.1 in binary) must not turn "only at s = ∞" into a finite s.
    (room > 1e-12 / target).then(|| fraction / room)
}

/// One row of the Amdahl table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmdahlRow {
    /// Fraction `f` of the original latency that is accelerated.
    pub fraction: f64,
    /// Whether this is the measured fraction (`--fraction`).
    pub measured: bool,
    /// `S` for each finite `s` of [`AmdahlTable::part_speedups`], in order.
    pub overall_speedup: Vec<f64>,
    /// `S` for `s = ∞`: `1 / (1 − f)`; `null` only for `f = 1`, where it is unbounded.
    pub limit_speedup: Option<f64>,
}

/// Amdahl's law over a grid of fractions and part speed-ups, and what a target needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AmdahlTable {
    /// The law.
    pub formula: &'static str,
    /// Finite part speed-ups `s` (the `∞` column is `limit_speedup`).
    pub part_speedups: Vec<f64>,
    /// One row per fraction (the measured one marked, in order).
    pub rows: Vec<AmdahlRow>,
    /// The overall speed-up wanted.
    pub target_speedup: f64,
    /// `f` needed for the target at each finite `s`; `null` where no `f ≤ 1` reaches it.
    pub required_fraction: Vec<Option<f64>>,
    /// `f` needed for the target at `s = ∞`: `1 − 1/S`.
    pub required_fraction_limit: Option<f64>,
    /// For the measured fraction: the `s` the part needs for the target; `null` if even `s = ∞`
    /// falls short (or no fraction was given).
    pub measured_required_part_speedup: Option<f64>,
    /// For the measured fraction: whether any `s` reaches the target.
    pub measured_reaches_target: Option<bool>,
}

fn amdahl_row(fraction: f64, measured: bool) -> AmdahlRow {
    let limit = amdahl_speedup(fraction, None);
    AmdahlRow {
        fraction,
        measured,
        overall_speedup: AMDAHL_PART_SPEEDUPS.iter().map(|&s| amdahl_speedup(fraction, Some(s))).collect(),
        limit_speedup: limit.is_finite().then_some(limit),
    }
}

/// The Amdahl table for `target`, with a row for the measured `fraction` if given.
pub fn amdahl_table(target: f64, fraction: Option<f64>) -> Result<AmdahlTable, BoundsError> {
    let target = speedup_target(target)?;
    if let Some(f) = fraction {
        if !(0.0..=1.0).contains(&f) {
            return Err(BoundsError::Fraction(f));
        }
    }
    let mut rows: Vec<AmdahlRow> = AMDAHL_FRACTIONS.iter().map(|&f| amdahl_row(f, false)).collect();
    if let Some(f) = fraction {
        match rows.iter_mut().find(|r| r.fraction == f) {
            Some(row) => row.measured = true,
            None => {
                let at = rows.iter().position(|r| r.fraction > f).unwrap_or(rows.len());
                rows.insert(at, amdahl_row(f, true));
            }
        }
    }
    Ok(AmdahlTable {
        formula: "S = 1 / (1 - f + f/s)",
        part_speedups: AMDAHL_PART_SPEEDUPS.to_vec(),
        rows,
        target_speedup: target,
        required_fraction: AMDAHL_PART_SPEEDUPS.iter().map(|&s| required_fraction(target, Some(s))).collect(),
        required_fraction_limit: required_fraction(target, None),
        measured_required_part_speedup: fraction.and_then(|f| required_part_speedup(f, target)),
        measured_reaches_target: fraction.map(|f| required_part_speedup(f, target).is_some()),
    })
}

// ------------------------------------------------------------------------------------------
// The whole report

/// The model shape the bounds were computed for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelShape {
    /// How the model was named (`synthetic:multilingual`, a folder, ...).
    pub source: String,
    /// `D`.
    pub hidden_size: usize,
    /// `N`.
    pub num_layers: usize,
    /// Encoder attention heads.
    pub num_heads: usize,
    /// `I`.
    pub intermediate_size: usize,
    /// Encoder layers with full attention.
    pub full_attention_layers: usize,
    /// Encoder layers with sliding-window attention.
    pub sliding_attention_layers: usize,
    /// Sliding window width (`local_attention`).
    pub local_attention: usize,
    /// `H`, decision-head layers.
    pub head_layers: usize,
    /// Decision-head attention heads.
    pub head_heads: usize,
    /// `V`.
    pub vocab_size: usize,
    /// `A`.
    pub num_actions: usize,
    /// The checkpoint's token budget per row.
    pub max_len: usize,
}

impl ModelShape {
    /// The shape of `enc` and `agent`, named `source`.
    pub fn new(source: &str, enc: &EncoderConfig, agent: &AgentConfig) -> Self {
        let full = enc.layer_kinds.iter().filter(|k| **k == LayerKind::Full).count();
        Self {
            source: source.to_string(),
            hidden_size: enc.hidden_size,
            num_layers: enc.num_layers,
            num_heads: enc.num_heads,
            intermediate_size: enc.intermediate_size,
            full_attention_layers: full,
            sliding_attention_layers: enc.layer_kinds.len() - full,
            local_attention: enc.local_attention,
            head_layers: agent.head_layers,
            head_heads: decision_head_heads(enc.hidden_size),
            vocab_size: enc.vocab_size,
            num_actions: agent.num_actions,
            max_len: agent.max_len,
        }
    }
}

/// FLOP per decision, per part and in total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlopReport {
    /// Headline FLOP (published convention: encoder + decision head, full attention).
    pub flop: u64,
    /// The same in GFLOP (10⁹).
    pub gflop: f64,
    /// What the headline counts.
    pub convention: &'static str,
    /// Encoder projections, FLOP.
    pub encoder_projections_flop: u64,
    /// Encoder attention (full `L×L` in every layer), FLOP.
    pub encoder_attention_flop: u64,
    /// Decision-head projections, FLOP.
    pub head_projections_flop: u64,
    /// Decision-head attention, FLOP.
    pub head_attention_flop: u64,
    /// Scorer over the marker slots, FLOP (not in the headline).
    pub scorer_flop: u64,
    /// Marker slots the scorer runs over.
    pub scorer_marker_slots: usize,
    /// Action head, FLOP (not in the headline).
    pub action_head_flop: u64,
    /// Embedding gather: 0 FLOP.
    pub embedding_flop: u64,
    /// Headline + scorer + action head, FLOP.
    pub with_scorer_and_action_head_flop: u64,
    /// The same in GFLOP.
    pub with_scorer_and_action_head_gflop: f64,
    /// Encoder attention counting only keys a sliding layer sees, FLOP.
    pub windowed_encoder_attention_flop: u64,
    /// Headline with windowed sliding attention, FLOP.
    pub windowed_flop: u64,
    /// The same in GFLOP.
    pub windowed_gflop: f64,
}

impl FlopReport {
    /// The report of a breakdown.
    pub fn new(b: &FlopBreakdown) -> Self {
        let flop = b.published_flop();
        let with_tail = b.with_tail_flop();
        let windowed = b.windowed_flop();
        Self {
            flop,
            gflop: flop as f64 / 1e9,
            convention: "dense MACs x 2 of the encoder and decision-head projections and attention \
                         (QK^T + AV = 2*L^2*D MACs per layer, full L x L in sliding layers too); \
                         embedding gather, norms and activations 0; scorer and action head separate",
            encoder_projections_flop: 2 * b.encoder_projections_macs,
            encoder_attention_flop: 2 * b.encoder_attention_macs,
            head_projections_flop: 2 * b.head_projections_macs,
            head_attention_flop: 2 * b.head_attention_macs,
            scorer_flop: 2 * b.scorer_macs,
            scorer_marker_slots: b.marker_slots,
            action_head_flop: 2 * b.action_head_macs,
            embedding_flop: 0,
            with_scorer_and_action_head_flop: with_tail,
            with_scorer_and_action_head_gflop: with_tail as f64 / 1e9,
            windowed_encoder_attention_flop: 2 * b.encoder_attention_windowed_macs,
            windowed_flop: windowed,
            windowed_gflop: windowed as f64 / 1e9,
        }
    }
}

/// What to compute bounds for.
#[derive(Debug, Clone)]
pub struct BoundsInput<'a> {
    /// How the model was named.
    pub source: &'a str,
    /// Encoder config.
    pub encoder: &'a EncoderConfig,
    /// Agent config.
    pub agent: &'a AgentConfig,
    /// Sequence length `L`.
    pub length: usize,
    /// Marker slots `K` of the scorer.
    pub marker_slots: usize,
    /// Weight storage precision.
    pub precision: Precision,
    /// Hardware (a resolved profile).
    pub hardware: Hardware,
    /// Measured baseline latency in ms, if any.
    pub baseline_ms: Option<f64>,
    /// Target overall speed-up.
    pub target_speedup: f64,
    /// Measured fraction of the latency that would be accelerated, if any.
    pub fraction: Option<f64>,
}

/// Every bound for one model, length, precision and hardware (`laya-bench bounds --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundsReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The model shape.
    pub model: ModelShape,
    /// Sequence length `L` in tokens.
    pub length_tokens: usize,
    /// FLOP per decision.
    pub flop_per_decision: FlopReport,
    /// Body weights streamed per decision.
    pub weights_streamed: BodyWeights,
    /// The hardware.
    pub hardware: Hardware,
    /// The latency floors.
    pub floors: Floors,
    /// What the target needs over the baseline; `null` without `--baseline-ms`.
    pub target: Option<TargetCheck>,
    /// Why `target` is null.
    pub target_missing_reason: Option<String>,
    /// Amdahl's law.
    pub amdahl: AmdahlTable,
    /// Caveats that apply to this run.
    pub notes: Vec<String>,
}

/// Compute every bound for `input`.
pub fn evaluate(input: &BoundsInput<'_>) -> Result<BoundsReport, BoundsError> {
    let breakdown = flops_per_decision(input.encoder, input.agent, input.length, input.marker_slots)?;
    let flop = FlopReport::new(&breakdown);
    let weights = body_weight_bytes(input.encoder, input.agent, input.precision)?;
    let floors = floors(flop.flop, weights.bytes, &input.hardware);
    let amdahl = amdahl_table(input.target_speedup, input.fraction)?;
    let (target, target_missing_reason) = match input.baseline_ms {
        Some(b) => (Some(target_check(b, input.target_speedup, flop.flop, weights.bytes, &floors)?), None),
        None => (None, Some("no --baseline-ms given: pass the measured P50 latency in ms".to_string())),
    };
    let mut notes = Vec::new();
    if input.length > input.agent.max_len {
        notes.push(format!(
            "length {} exceeds the checkpoint's max_len {}: the model never runs this shape",
            input.length, input.agent.max_len
        ));
    }
    if input.precision.lut_entries().is_some() {
        notes.push(format!(
            "{}: one {}-entry FP16 lookup table per weight matrix (per-tensor palettization); \
             grouped palettization adds one table per group",
            input.precision,
            input.precision.lut_entries().unwrap_or(0)
        ));
    }
    if !floors.complete {
        notes.push("the compute floor is unknown, so floor_ms is the bandwidth floor alone".to_string());
    }
    Ok(BoundsReport {
        schema_version: SCHEMA_VERSION,
        model: ModelShape::new(input.source, input.encoder, input.agent),
        length_tokens: input.length,
        flop_per_decision: flop,
        weights_streamed: weights,
        hardware: input.hardware.clone(),
        floors,
        target,
        target_missing_reason,
        amdahl,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::synthetic::{published_shape, tiny_shape};

    fn shape(name: &str) -> (EncoderConfig, AgentConfig) {
        published_shape(name).unwrap()
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn multilingual_l96_is_24_57_gflop_with_published_parts() {
        let (e, a) = shape("multilingual");
        let b = flops_per_decision(&e, &a, 96, DEFAULT_MARKER_SLOTS).unwrap();
        // energy-protocol.md: 10.589 G + 0.311 G + 1.359 G + 0.028 G MACs.
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
    fn bandwidth_floors_at_400_gbs_are_0_622_and_1_842_ms() {
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, None).unwrap();
        assert_eq!(hw.bandwidth_gbs, 400.0);
        let (e, a) = shape("multilingual");
        let ml = bandwidth_floor_ms(body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes, 400.0);
        assert!(close(ml, 0.622, 0.0005), "{ml}");
        let (e, a) = shape("english");
        let en = bandwidth_floor_ms(body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes, 400.0);
        assert!(close(en, 1.842, 0.0005), "{en}");
    }

    #[test]
    fn multilingual_target_10x_from_7_87_ms_needs_0_787_ms_and_31_tflops() {
        let (e, a) = shape("multilingual");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        let bytes = body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes;
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, None).unwrap();
        let f = floors(flop, bytes, &hw);
        let t = target_check(7.87, 10.0, flop, bytes, &f).unwrap();
        assert!(close(t.required_ms, 0.787, 1e-12));
        assert!(close(t.required_tflops, 31.2, 0.1), "{}", t.required_tflops);
        assert!(!t.below_bandwidth_floor);
        // 24.57 GFLOP at the ANE's 18 TFLOP/s takes 1.365 ms: the target is below that floor.
        assert!(close(f.compute_ms.unwrap(), 1.365, 0.001));
        assert_eq!(f.bound_by, BoundBy::Compute);
        assert_eq!(t.below_compute_floor, Some(true));
        assert_eq!(t.below_floor, Some(true));
    }

    #[test]
    fn english_target_10x_from_13_33_ms_is_below_the_bandwidth_floor() {
        let (e, a) = shape("english");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        let bytes = body_weight_bytes(&e, &a, Precision::F16).unwrap().bytes;
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, Some(400.0)).unwrap();
        let f = floors(flop, bytes, &hw);
        let t = target_check(13.33, 10.0, flop, bytes, &f).unwrap();
        assert!(close(t.required_ms, 1.333, 1e-12));
        assert!(t.below_bandwidth_floor);
        assert!(close(f.bandwidth_ms, 1.842, 0.0005));
        assert_eq!(t.below_floor, Some(true));
    }

    #[test]
    fn unknown_peak_gives_a_null_compute_floor_with_its_reason() {
        let hw = resolve_hardware(&M4_MAX, Precision::F16, None, None).unwrap();
        assert_eq!(hw.peak_tflops, None);
        let f = floors(1_000_000_000, 1_000_000, &hw);
        assert_eq!(f.compute_ms, None);
        assert!(f.compute_missing_reason.as_deref().unwrap().contains("38 TOPS"));
        assert!(!f.complete);
        assert_eq!(f.bound_by, BoundBy::Bandwidth);
        // A target that clears the bandwidth floor cannot be judged without the peak.
        let t = target_check(10.0, 2.0, 1_000_000_000, 1_000_000, &f).unwrap();
        assert_eq!(t.below_compute_floor, None);
        assert_eq!(t.below_floor, None);
        // --peak-tflops fills it in.
        let hw = resolve_hardware(&M4_MAX, Precision::F16, Some(19.0), None).unwrap();
        assert_eq!(hw.peak_tflops, Some(19.0));
        assert_eq!(hw.peak_source, "--peak-tflops");
    }

    #[test]
    fn profiles_resolve_by_name_and_missing_bandwidth_is_an_error() {
        assert_eq!(profile("M3-MAX").unwrap().name, "m3-max");
        assert_eq!(profile("m4-max").unwrap().bandwidth_gbs.value, Some(546.0));
        assert_eq!(profile("h200").unwrap().peak(ComputeType::Bf16).value, Some(989.0));
        let err = profile("m9").unwrap_err();
        assert!(err.to_string().contains("zen4-2core"), "{err}");
        let zen = profile("zen4-2core").unwrap();
        let err = resolve_hardware(&zen, Precision::F32, None, None).unwrap_err();
        assert!(matches!(err, BoundsError::MissingBandwidth { .. }));
        assert!(err.to_string().contains("--bandwidth-gbs"));
        let hw = resolve_hardware(&zen, Precision::F32, None, Some(30.0)).unwrap();
        assert_eq!(hw.peak_tflops, Some(0.2286));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(resolve_hardware(&M3_MAX, Precision::F16, Some(bad), None).is_err());
            assert!(resolve_hardware(&M3_MAX, Precision::F16, None, Some(bad)).is_err());
        }
    }

    #[test]
    fn zen4_fp32_compute_floor_matches_the_performance_anchor() {
        let (e, a) = shape("multilingual");
        let flop = flops_per_decision(&e, &a, 96, 32).unwrap().published_flop();
        // performance-anchors.md: ≈ 107 ms FP32, ≈ 53 ms BF16.
        assert!(close(compute_floor_ms(flop, 0.2286), 107.5, 0.5));
        assert!(close(compute_floor_ms(flop, 0.4572), 53.7, 0.5));
    }

    #[test]
    fn precisions_parse_and_map_to_their_arithmetic() {
        assert_eq!("F16".parse::<Precision>().unwrap(), Precision::F16);
        assert_eq!("fp32".parse::<Precision>().unwrap(), Precision::F32);
        assert_eq!("w8".parse::<Precision>().unwrap().compute(), ComputeType::F16);
        assert_eq!(Precision::Bf16.compute(), ComputeType::Bf16);
        assert_eq!(Precision::W6.lut_entries(), Some(64));
        assert_eq!(Precision::F16.lut_entries(), None);
        assert!(matches!("q3".parse::<Precision>(), Err(BoundsError::UnknownPrecision(_))));
    }

    #[test]
    fn amdahl_infinite_speedup_of_90_percent_is_10x_and_10x_needs_90_percent() {
        assert!(close(amdahl_speedup(0.9, None), 10.0, 1e-9));
        assert!(close(required_fraction(10.0, None).unwrap(), 0.9, 1e-12));
        assert!(close(amdahl_speedup(0.5, Some(2.0)), 4.0 / 3.0, 1e-12));
        // f = (1 - 1/S) / (1 - 1/s): S 10 needs f = 1 at s 10, and s 5 cannot reach it.
        assert!(close(required_fraction(10.0, Some(10.0)).unwrap(), 1.0, 1e-12));
        assert_eq!(required_fraction(10.0, Some(5.0)), None);
        assert!(close(required_fraction(2.0, Some(4.0)).unwrap(), 2.0 / 3.0, 1e-12));
        assert_eq!(required_fraction(0.5, Some(2.0)), Some(0.0));
        // The measured side: f = 0.95 needs s = 0.95 / (0.1 - 0.05) = 19.
        assert!(close(required_part_speedup(0.95, 10.0).unwrap(), 19.0, 1e-9));
        assert_eq!(required_part_speedup(0.9, 10.0), None);
        assert_eq!(required_part_speedup(0.8, 10.0), None);
        assert!(amdahl_speedup(1.0, None).is_infinite());
    }

    #[test]
    fn amdahl_table_marks_or_inserts_the_measured_fraction() {
        let t = amdahl_table(10.0, Some(0.9)).unwrap();
        assert_eq!(t.rows.len(), AMDAHL_FRACTIONS.len());
        let row = t.rows.iter().find(|r| r.measured).unwrap();
        assert_eq!(row.fraction, 0.9);
        assert!(close(row.limit_speedup.unwrap(), 10.0, 1e-9));
        assert_eq!(t.measured_reaches_target, Some(false));
        assert!(close(t.required_fraction_limit.unwrap(), 0.9, 1e-12));
        let t = amdahl_table(10.0, Some(0.97)).unwrap();
        assert_eq!(t.rows.len(), AMDAHL_FRACTIONS.len() + 1);
        let pos = t.rows.iter().position(|r| r.measured).unwrap();
        assert_eq!((t.rows[pos - 1].fraction, t.rows[pos + 1].fraction), (0.95, 0.99));
        let one = amdahl_table(10.0, Some(1.0)).unwrap();
        assert_eq!(one.rows.last().unwrap().limit_speedup, None);
        assert_eq!(one.measured_required_part_speedup, Some(10.0));
        for bad in [-0.1, 1.1, f64::NAN] {
            assert!(matches!(amdahl_table(10.0, Some(bad)), Err(BoundsError::Fraction(_))));
        }
        // A target speed-up is a factor above 1: at or below 1 it is met by anything.
        for bad in [0.0, -10.0, 0.5, 1.0, f64::NAN] {
            assert!(matches!(amdahl_table(bad, None), Err(BoundsError::Target(_))));
        }
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

    #[test]
    fn evaluate_reports_target_and_notes() {
        let (e, a) = shape("english");
        let hw = resolve_hardware(&M3_MAX, Precision::F16, None, None).unwrap();
        let input = BoundsInput {
            source: "synthetic:english",
            encoder: &e,
            agent: &a,
            length: 96,
            marker_slots: 32,
            precision: Precision::F16,
            hardware: hw,
            baseline_ms: Some(13.33),
            target_speedup: 10.0,
            fraction: None,
        };
        let r = evaluate(&input).unwrap();
        assert_eq!(r.schema_version, 1);
        assert!(r.target.as_ref().unwrap().below_bandwidth_floor);
        assert!(r.target_missing_reason.is_none());
        let r = evaluate(&BoundsInput { baseline_ms: None, length: 4096, ..input }).unwrap();
        assert!(r.target.is_none() && r.target_missing_reason.is_some());
        assert!(r.notes.iter().any(|n| n.contains("max_len 512")));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["weights_streamed"]["precision"], "f16");
        assert_eq!(json["hardware"]["compute"], "f16");
        assert_eq!(json["floors"]["bound_by"], "compute");
    }
}
