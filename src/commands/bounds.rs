//! `laya-bench bounds`: read a model's shape, compute its math bounds on a hardware profile
//! (`crate::bounds`), print a compact table or one JSON document.

use anyhow::anyhow;

use super::hub_progress::model_spec;
use super::{Failure, Outcome};
use crate::bounds::{self, BoundsInput, BoundsReport, Precision};
use crate::cli::BoundsArgs;
use crate::hub::Hub;
use crate::laya::batch::ShapeCaps;
use crate::laya::bundle::Bundle;
use crate::laya::config::{AgentConfig, EncoderConfig};
use crate::laya::host::Host;
use crate::model::synthetic::published_shape;
use crate::report::Render;
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
        let doc = bounds::measure::MeasureReport {
            measured: &m,
            arm_floors: &floors,
            model: &args.model,
            length: args.length,
        };
        let text = if args.json {
            format!("{}\n", serde_json::to_string_pretty(&doc).map_err(|e| Failure::run(anyhow!(e)))?)
        } else {
            doc.terminal()
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
        report.terminal()
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
