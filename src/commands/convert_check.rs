//! `laya-bench convert-check`: may a converted or compressed candidate stand in for its FP32
//! source? Loads both, runs the fidelity suite through the shared host path, writes the report
//! atomically and prints the verdict first, then the worst questions. The sides, the check's
//! shape and the report's parts are `fidelity/`'s; this file turns arguments into them,
//! prints, and maps the outcome to an exit code.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context};

use super::common::load_bundle;
use super::ticker::Ticker;
use super::{interrupt, Failure, Outcome};
use crate::backend::registry;
use crate::cli::ConvertCheckArgs;
use crate::fidelity::bundle_checks::{check_same_model, ModelFiles};
use crate::fidelity::check::{run_suite, Plan};
use crate::fidelity::gates::check_gate_and_repeats;
use crate::fidelity::package::PackageAccounting;
use crate::fidelity::report::{
    compute_placement, failure_text, final_verdict, is_pass, ConvertCheckReport, GateInfo, ShapeInfo,
    SuiteInfo,
};
use crate::fidelity::setup::{self, Candidate};
use crate::fidelity::{Suite, REPORT_SCHEMA_VERSION};
use crate::laya::bundle::{Bundle, Weights};
use crate::laya::host::CallOptions;
use crate::record::provenance::ToolInfo;
use crate::report::write_atomic;
use crate::report::Render;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::time::timestamp_stem;

pub(crate) fn run(args: &ConvertCheckArgs, cx: &crate::backend::Context) -> Outcome {
    // From the start, so a signal while the models load is not lost (a background run inherits
    // SIGINT ignored): the suite then stops before its first question, reported incomplete.
    let stop = interrupt::install_or_warn();
    check_gate_and_repeats(args.gate, args.repeats)?;
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", timestamp_stem("convert-check"))));
    refuse_existing(&output, args.overwrite)?;
    check_folder("--output", &output)?;
    let suite = Suite::load(args.suite.as_deref())?;
    let source_bundle = load_bundle(&args.source, &cx.hub)?;
    if matches!(source_bundle.weights, Weights::CoreMl(_)) {
        return Err(Failure::input(anyhow!(
            "--model {} is a Core ML bundle; the source must be the FP32 checkpoint it was converted from",
            args.source
        )));
    }
    let kind = registry::classify(&args.candidate);
    setup::check_coreml_folder(&args.candidate, &kind)?;
    let candidate_bundle = match setup::candidate_model(&args.candidate, &kind) {
        None => None,
        Some(spec) => Some(load_candidate_model(&spec, &args.source, &source_bundle, &cx.hub)?),
    };
    let cand = candidate_bundle.as_ref().unwrap_or(&source_bundle);
    let coreml = match &cand.weights {
        Weights::CoreMl(c) => Some(c),
        _ => None,
    };
    let shapes = setup::check_shapes(args.max_len, cand, coreml)?;
    let mut source = setup::build_source(&source_bundle, &args.source, &shapes, &cx.settings)?;
    let mut candidate = Candidate::build(&args.candidate, kind, cand, &shapes, cx)?;
    let checks = candidate.static_checks(&source_bundle)?;
    let source_info = setup::source_info(&args.source, &source_bundle, &source);
    let candidate_info = candidate.side_info();
    let package = PackageAccounting::new(setup::source_package(&args.source, &source), candidate.package());
    let plan = Plan {
        gate: args.gate,
        repeats: args.repeats,
        opts: CallOptions { max_len: args.max_len, ..CallOptions::default() },
    };
    for w in candidate.rows_host().load_warnings() {
        eprintln!("warning: {w}");
    }
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let ticker = Ticker::new("convert-check", "questions", suite.items.len() as u64);
    let at_question = |done: usize| ticker.at(done as u64);
    let ran = run_suite(&suite, candidate.engines(&mut source), &plan, &stopped, &at_question);
    ticker.finish();
    let (questions, summary) = ran.map_err(|e| Failure::run(anyhow!(e)))?;
    let (verdict, verdict_reason) = final_verdict(
        &summary,
        checks.as_ref(),
        (questions.len(), suite.items.len()),
        || interrupt::reason("the suite"),
        (&source_info, &candidate_info),
    );
    let (compute_placement, compute_placement_note) = compute_placement(&candidate_info, &cx.settings);
    let report = ConvertCheckReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: "convert-check".into(),
        tool: ToolInfo::current(),
        command_line: std::env::args().collect(),
        passed: is_pass(&verdict),
        verdict,
        verdict_reason,
        source: source_info,
        candidate: candidate_info,
        shape: ShapeInfo::of(&shapes),
        gate: GateInfo::new(args.gate, args.repeats, args.max_len),
        suite: SuiteInfo::of(&suite),
        summary,
        questions,
        bundle_checks: checks,
        package,
        compute_placement,
        compute_placement_note,
    };
    let bytes = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    write_atomic(&output, &bytes)
        .with_context(|| format!("cannot write {}", output.display()))
        .map_err(Failure::run)?;
    super::write_stdout(&report.terminal())?;
    outln!("wrote {}", output.display())?;
    if report.passed {
        Ok(())
    } else {
        let text = failure_text(&report.verdict, &report.verdict_reason);
        Err(Failure::run(anyhow!("{text} (report: {})", output.display())))
    }
}

/// Load a candidate model and refuse one that reads another tokenizer or config (exit 2).
fn load_candidate_model(
    spec: &str,
    source_spec: &str,
    source: &Bundle,
    hub: &crate::hub::Hub,
) -> Result<Bundle, Failure> {
    let bundle =
        load_bundle(spec, hub).map_err(|f| Failure::input(f.error.context(format!("--backend {spec}"))))?;
    let files = |s: &str| {
        super::hub_progress::model_spec(s, hub)
            .map_err(Failure::input)
            .and_then(|m| ModelFiles::load(&m).map_err(|e| Failure::input(anyhow!(e))))
    };
    check_same_model(
        &files(source_spec)?,
        &files(spec)?,
        (source.encoder == bundle.encoder, source.agent == bundle.agent),
    )
    .map_err(|e| {
        Failure::input(
            anyhow!(e).context(format!("--backend {spec} is not a conversion of --model {source_spec}")),
        )
    })?;
    Ok(bundle)
}
