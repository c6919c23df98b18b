//! `laya-bench bounds`: read a model's shape, compute its math bounds on a hardware profile
//! (`crate::bounds`), print a compact table or one JSON document.

use std::fmt::Write as _;

use anyhow::anyhow;

use super::hub_progress::model_spec;
use super::{Failure, Outcome};
use crate::bounds::{self, BoundBy, BoundsInput, BoundsReport, Precision};
use crate::cli::BoundsArgs;
use crate::hub::Hub;
use crate::laya::batch::ShapeCaps;
use crate::laya::bundle::Bundle;
use crate::laya::config::{AgentConfig, EncoderConfig};
use crate::laya::host::Host;
use crate::model::synthetic::published_shape;
use crate::run::arm::fixed_shapes;
use crate::run::measure_speed;
use crate::run::workload::WorkloadPlan;

pub(crate) fn run(args: &BoundsArgs, cx: &crate::backend::Context) -> Outcome {
    if args.measure {
        let (encoder, agent) = load_configs(&args.model, &cx.hub)?;
        let m = bounds::measure::measure(0, &cx.settings);
        let floors =
            bounds::measure::arm_floors(&m, &encoder, &agent, args.length, args.marker_slots, &cx.settings)
                .map_err(|e| Failure::input(anyhow!(e).context("cannot compute the floors")))?;
        let text = if args.json {
            let doc = serde_json::json!({ "measured": m, "arm_floors": floors });
            format!("{}\n", serde_json::to_string_pretty(&doc).map_err(|e| Failure::run(anyhow!(e)))?)
        } else {
            bounds::measure::render(&m, &args.model, args.length, &floors)
        };
        return write_out(&text);
    }
    let report = plan(args, &cx.hub)?;
    let text = if args.json {
        let mut json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::run(anyhow!(e).context("cannot write the bounds as JSON")))?;
        json.push('\n');
        json
    } else {
        render(&report)
    };
    write_out(&text)
}

fn write_out(text: &str) -> Outcome {
    super::write_stdout(text)
}

/// Validate the arguments and compute the report (exit 2 on any bad input).
fn plan(args: &BoundsArgs, hub: &Hub) -> Result<BoundsReport, Failure> {
    let input_err = |e: bounds::BoundsError| Failure::input(anyhow!(e).context("cannot compute the bounds"));
    let precision: Precision = args.precision.parse().map_err(input_err)?;
    let profile_name = match (&args.profile, args.peak_tflops, args.bandwidth_gbs) {
        (Some(name), _, _) => name.as_str(),
        (None, Some(_), Some(_)) => bounds::CUSTOM.name,
        (None, _, _) => bounds::M3_MAX.name,
    };
    let profile = bounds::profile(profile_name).map_err(input_err)?;
    let hardware = bounds::resolve_hardware(&profile, precision, args.peak_tflops, args.bandwidth_gbs)
        .map_err(input_err)?;
    let (encoder, agent) = load_configs(&args.model, hub)?;
    let input = BoundsInput {
        source: &args.model,
        encoder: &encoder,
        agent: &agent,
        length: args.length,
        marker_slots: args.marker_slots,
        precision,
        hardware,
        baseline_ms: args.baseline_ms,
        target_speedup: args.target,
        fraction: args.fraction,
    };
    let mut report = bounds::evaluate(&input).map_err(input_err)?;
    if let Some(name) = &args.workload {
        report.workload = Some(workload_flop(args, name, hub)?);
    }
    Ok(report)
}

/// FLOP per decision of `speed --workload NAME` at `--length` and `--marker-slots`: the rows
/// its requests run, built with the model's tokenizer exactly as `speed` builds them, each
/// padded to the length `speed`'s arms run (one request per call), counted by the same
/// [`measure_speed::rows_run`] and [`bounds::workload_flops`] as `speed`'s `gflop_per_decision`.
fn workload_flop(args: &BoundsArgs, name: &str, hub: &Hub) -> Result<bounds::WorkloadFlopReport, Failure> {
    let bundle = model_spec(&args.model, hub)
        .and_then(|parsed| Ok(Bundle::load(&parsed, published_shape)?))
        .map_err(|e| Failure::input(e.context(format!("cannot load model `{}`", args.model))))?;
    let plan = WorkloadPlan::checked(name, args.tokens, args.length)?;
    if args.length > bundle.agent.max_len {
        return Err(Failure::input(anyhow!(
            "--workload: --length {} is longer than the model's max_len {}; `speed` refuses this run",
            args.length,
            bundle.agent.max_len
        )));
    }
    let shapes = ShapeCaps { max_options: args.marker_slots, ..fixed_shapes(args.length) };
    let host = Host::new(&bundle.tokenizer, &bundle.agent, shapes.clone());
    let (built, _) = plan.build(&host)?;
    let (lengths, decisions) = measure_speed::rows_run(&built.tokens_per_row, &shapes, 1);
    let flop = bounds::workload_flops(&bundle.encoder, &bundle.agent, &lengths, decisions, args.marker_slots)
        .map_err(|e| Failure::input(anyhow!(e).context("cannot count the workload's FLOP")))?;
    Ok(bounds::WorkloadFlopReport::new(
        &built.name,
        built.requests.len(),
        args.length,
        args.marker_slots,
        &flop,
    ))
}

/// The two configs of a model spec; a checkpoint folder's weights and tokenizer are not read.
fn load_configs(spec: &str, hub: &Hub) -> Result<(EncoderConfig, AgentConfig), Failure> {
    model_spec(spec, hub)
        .and_then(|parsed| Ok(Bundle::read_configs(&parsed, published_shape)?))
        .map_err(|e| Failure::input(e.context(format!("cannot read the shape of model `{spec}`"))))
}

fn yes_no(v: bool) -> &'static str {
    if v {
        "yes"
    } else {
        "no"
    }
}

/// The human-readable table.
fn render(r: &BoundsReport) -> String {
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
    let _ =
        writeln!(o, "  bandwidth  {:.3} MB / {} GB/s = {:.3} ms", w.mb, hw.bandwidth_gbs, fl.bandwidth_ms);
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
