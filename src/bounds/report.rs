//! The `laya-bench bounds --json` document: the model shape, the FLOP report, and
//! [`evaluate`], which computes every bound for one model, length, precision and hardware.

use serde::Serialize;

use super::amdahl::{amdahl_table, floors, target_check, AmdahlTable, Floors, TargetCheck};
use super::flops::{body_weight_bytes, flops_per_decision, BodyWeights, FlopBreakdown, WorkloadFlop};
use super::hardware::Hardware;
use super::BoundsError;
use crate::laya::config::{decision_head_heads, AgentConfig, EncoderConfig, LayerKind};
use crate::model::Precision;

/// Version of the `laya-bench bounds --json` document.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// FLOP per decision of a `speed` workload (`bounds --workload`); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadFlopReport>,
}

/// FLOP per decision of a workload as `speed` runs it: every question row of its requests at
/// the padded length, averaged over the decisions of one cycle through the workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadFlopReport {
    /// `invoice` or the request file.
    pub name: String,
    /// Requests in the workload.
    pub requests: usize,
    /// Padded length every row runs at.
    pub length_tokens: usize,
    /// Marker slots the scorer runs over in every row.
    pub marker_slots: usize,
    /// Question rows run per decision (mean over the workload's requests).
    pub rows_per_decision: f64,
    /// Published convention (encoder and decision head), per decision, in GFLOP.
    pub gflop: f64,
    /// With the scorer and the action head of every row, per decision, in GFLOP: `speed`'s
    /// `gflop_per_decision` for the same workload, model and length.
    pub with_scorer_and_action_head_gflop: f64,
}

impl WorkloadFlopReport {
    /// The report of `flop`, the rows of workload `name` (`requests` requests) at `length` with
    /// `marker_slots` slots.
    pub fn new(name: &str, requests: usize, length: usize, marker_slots: usize, flop: &WorkloadFlop) -> Self {
        Self {
            name: name.to_string(),
            requests,
            length_tokens: length,
            marker_slots,
            rows_per_decision: flop.rows_per_decision(),
            gflop: flop.gflop_per_decision(),
            with_scorer_and_action_head_gflop: flop.with_tail_gflop_per_decision(),
        }
    }
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
        workload: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::test_support::shape;
    use crate::bounds::{resolve_hardware, M3_MAX};

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
