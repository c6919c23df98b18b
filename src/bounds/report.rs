//! The `laya-bench bounds --json` document: the model shape, the FLOP report, and
//! [`evaluate`], which computes every bound for one model, length, precision and hardware.

use std::fmt::Write as _;

use serde::Serialize;

use super::amdahl::{amdahl_table, floors, target_check, AmdahlTable, Floors, TargetCheck};
use super::flops::{body_weight_bytes, flops_per_decision, BodyWeights, FlopBreakdown, WorkloadFlop};
use super::hardware::Hardware;
use super::{BoundBy, BoundsError};
use crate::laya::config::{decision_head_heads, AgentConfig, EncoderConfig, LayerKind};
use crate::model::Precision;
use crate::report::Render;

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

fn yes_no(v: bool) -> &'static str {
    if v {
        "yes"
    } else {
        "no"
    }
}

impl Render for BoundsReport {
    /// The human-readable table `bounds` prints.
    fn terminal(&self) -> String {
        let r = self;
        let mut o = String::new();
        let m = &r.model;
        let f = &r.flop_per_decision;
        let w = &r.weights_streamed;
        let hw = &r.hardware;
        let fl = &r.floors;
        let g = |flop: u64| flop as f64 / 1e9;
        // Writing to a String cannot fail.
        let _ = writeln!(
            o,
            "{} (D {}, N {}, I {}, {} head layers) at L {}, {} weights",
            m.source,
            m.hidden_size,
            m.num_layers,
            m.intermediate_size,
            m.head_layers,
            r.length_tokens,
            w.precision
        );
        let _ = writeln!(o, "hardware: {} = {}", hw.profile, hw.device);
        match hw.peak_tflops {
            Some(p) => {
                let _ = writeln!(o, "  peak {p} TFLOP/s {}: {}", hw.compute, hw.peak_source);
            }
            None => {
                let _ = writeln!(o, "  peak {} unknown: {}", hw.compute, hw.peak_source);
            }
        }
        let _ = writeln!(o, "  bandwidth {} GB/s: {}", hw.bandwidth_gbs, hw.bandwidth_source);
        let _ = writeln!(o);
        let _ = writeln!(o, "FLOP per decision (dense MACs x 2)                   GFLOP");
        let rows = [
            (format!("encoder projections ({} layers)", m.num_layers), f.encoder_projections_flop),
            ("encoder attention QK^T+AV (full L x L)".to_string(), f.encoder_attention_flop),
            (format!("decision-head projections ({} layers)", m.head_layers), f.head_projections_flop),
            ("decision-head attention".to_string(), f.head_attention_flop),
        ];
        for (label, flop) in rows {
            let _ = writeln!(o, "  {label:<46} {:>9.3}", g(flop));
        }
        let _ = writeln!(o, "  {:<46} {:>9.3}", "total (published convention)", f.gflop);
        let _ = writeln!(
            o,
            "  {:<46} {:>9.3}  (scorer {:.3} over {} slots, action head {:.4})",
            "with scorer and action head",
            f.with_scorer_and_action_head_gflop,
            g(f.scorer_flop),
            f.scorer_marker_slots,
            g(f.action_head_flop)
        );
        let _ = writeln!(
            o,
            "  {:<46} {:>9.3}  (sliding layers: only keys within {} positions)",
            "with windowed sliding attention",
            f.windowed_gflop,
            m.local_attention / 2
        );
        if let Some(wl) = &r.workload {
            let _ = writeln!(
                o,
                "  workload {} ({} requests): {:.2} question rows per decision, each at L {} with {} slots",
                wl.name, wl.requests, wl.rows_per_decision, wl.length_tokens, wl.marker_slots
            );
            let _ = writeln!(o, "    {:<44} {:>9.3}", "total per decision (published convention)", wl.gflop);
            let _ = writeln!(
                o,
                "    {:<44} {:>9.3}  (speed's gflop_per_decision)",
                "with scorer and action head", wl.with_scorer_and_action_head_gflop
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "weights streamed per decision (encoder + decision-head matrices, read once)");
        let lut = if w.lut_bytes > 0 {
            format!(
                " + {:.3} MB lookup tables ({} x {} FP16)",
                w.lut_bytes as f64 / 1e6,
                w.body_tensors,
                w.lut_entries_per_tensor.unwrap_or(0)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:.2} M params at {} bits{} = {:.3} MB",
            w.body_params as f64 / 1e6,
            w.bits_per_weight,
            lut,
            w.mb
        );
        let _ = writeln!(
            o,
            "  excluded: embedding {:.2} M (L rows gathered), biases/norms/scorer/action head {:.2} M",
            w.embedding_params as f64 / 1e6,
            w.excluded_small_params as f64 / 1e6
        );
        let _ = writeln!(o);
        let _ = writeln!(o, "floors: t >= max(FLOP / peak, bytes / bandwidth)");
        match (fl.compute_ms, hw.peak_tflops) {
            (Some(ms), Some(peak)) => {
                let _ = writeln!(o, "  compute    {:.3} GFLOP / {peak} TFLOP/s = {ms:.3} ms", f.gflop);
            }
            _ => {
                let _ = writeln!(o, "  compute    unknown (no {} peak; pass --peak-tflops)", hw.compute);
            }
        }
        let _ = writeln!(
            o,
            "  bandwidth  {:.3} MB / {} GB/s = {:.3} ms",
            w.mb, hw.bandwidth_gbs, fl.bandwidth_ms
        );
        let bound = match (fl.bound_by, fl.complete) {
            (BoundBy::Compute, _) => "compute-bound",
            (BoundBy::Bandwidth, true) => "bandwidth-bound",
            (BoundBy::Bandwidth, false) => "bandwidth only: compute floor unknown",
        };
        let _ = writeln!(o, "  floor      {:.3} ms ({bound})", fl.floor_ms);
        let _ = writeln!(o);
        match &r.target {
            Some(t) => {
                let _ = writeln!(o, "target {}x over {} ms", t.target_speedup, t.baseline_ms);
                let _ = writeln!(
                    o,
                    "  needs {:.3} ms = {:.2} TFLOP/s effective and {:.1} GB/s effective",
                    t.required_ms, t.required_tflops, t.required_gbs
                );
                let _ = writeln!(
                    o,
                    "  below the compute floor: {}; below the bandwidth floor: {}",
                    t.below_compute_floor.map_or("unknown", yes_no),
                    yes_no(t.below_bandwidth_floor)
                );
                let (floor, most) = (fl.floor_ms, t.max_speedup_at_floor);
                let _ = match t.below_floor {
                Some(true) => writeln!(
                    o,
                    "  impossible on this hardware: the {floor:.3} ms floor allows at most {most:.2}x over the baseline"
                ),
                Some(false) => writeln!(
                    o,
                    "  possible in principle: the {floor:.3} ms floor allows up to {most:.2}x over the baseline"
                ),
                None => writeln!(
                    o,
                    "  undecided: the bandwidth floor ({floor:.3} ms) allows up to {most:.2}x; the compute floor is unknown"
                ),
            };
            }
            None => {
                let _ = writeln!(
                    o,
                    "target {}x: {}",
                    r.amdahl.target_speedup,
                    r.target_missing_reason.as_deref().unwrap_or("no baseline")
                );
            }
        }
        let _ = writeln!(o);
        let a = &r.amdahl;
        let _ = write!(o, "Amdahl: {}\n  {:>6}", a.formula, "f");
        for s in &a.part_speedups {
            let _ = write!(o, " {:>8}", format!("s={s}"));
        }
        let _ = writeln!(o, " {:>8}", "s=inf");
        for row in &a.rows {
            let label = format!("{}{}", row.fraction, if row.measured { "*" } else { "" });
            let _ = write!(o, "  {label:>6}");
            for s in &row.overall_speedup {
                let _ = write!(o, " {s:>8.3}");
            }
            match row.limit_speedup {
                Some(s) => {
                    let _ = writeln!(o, " {s:>8.3}");
                }
                None => {
                    let _ = writeln!(o, " {:>8}", "unbounded");
                }
            }
        }
        let _ = write!(o, "  f needed for {}x:", a.target_speedup);
        let needed = a.required_fraction.iter().zip(&a.part_speedups).map(|(f, s)| (format!("s={s}"), *f));
        for (label, f) in needed.chain(std::iter::once(("s=inf".to_string(), a.required_fraction_limit))) {
            match f {
                Some(f) => {
                    let _ = write!(o, "  {label} {f:.3}");
                }
                None => {
                    let _ = write!(o, "  {label} impossible");
                }
            }
        }
        let _ = writeln!(o);
        if let (Some(row), Some(reaches)) = (a.rows.iter().find(|r| r.measured), a.measured_reaches_target) {
            match (reaches, a.measured_required_part_speedup) {
                (true, Some(s)) => {
                    let _ = writeln!(
                        o,
                        "  * measured f {}: the part must run {s:.2}x faster for {}x",
                        row.fraction, a.target_speedup
                    );
                }
                _ => {
                    let limit = row.limit_speedup.unwrap_or(f64::INFINITY);
                    let how = if limit >= a.target_speedup * (1.0 - 1e-9) {
                        "is reached only in the limit of an infinitely fast part".to_string()
                    } else {
                        format!("is never reached: even an infinitely fast part gives {limit:.3}x")
                    };
                    let _ = writeln!(o, "  * measured f {}: {}x {how}", row.fraction, a.target_speedup);
                }
            }
        }
        for note in &r.notes {
            let _ = writeln!(o, "note: {note}");
        }
        o
    }
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
