//! `laya-bench convert-check`: may a converted or compressed candidate stand in for its FP32
//! source? Loads both, runs the fidelity suite through the shared host path, writes the report
//! atomically (or on standard output for `--output -`) and prints the verdict first, then the
//! worst questions. The sides, the check's shape and the report's parts are `fidelity/`'s;
//! this file turns arguments into them, prints, and maps the outcome to an exit code.

use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context};

use super::common::load_bundle;
use super::ticker::Ticker;
use super::{interrupt, Failure, Outcome};
use crate::backend::registry;
use crate::cli::ConvertCheckArgs;
use crate::fidelity::bundle_checks::{check_conversion, ModelFiles};
use crate::fidelity::check::{run_suite, Plan};
use crate::fidelity::gates::check_gate_and_repeats;
use crate::fidelity::report::{failure_text, ConvertCheckReport, GateInfo, ShapeInfo};
use crate::fidelity::setup::{self, Sides};
use crate::fidelity::Suite;
use crate::laya::bundle::Bundle;
use crate::laya::host::CallOptions;
use crate::report::write_atomic;
use crate::report::Render;
use crate::run::outputs::{check_new_output, given_or_claimed, is_stdout, shown, write_output};

pub(crate) fn run(args: &ConvertCheckArgs, cx: &crate::backend::Context) -> Outcome {
    // From the start, so a signal while the models load is not lost (a background run inherits
    // SIGINT ignored): the suite then stops before its first question, reported incomplete.
    let stop = interrupt::install_or_warn();
    check_gate_and_repeats(args.gate, args.repeats)?;
    // a default name is claimed for this run (`-2`… when a run of the same second took it)
    let (output, claim) = given_or_claimed(args.output.as_deref(), "convert-check", ".json", "report")?;
    // `--output -`: the report alone on standard output, the verdict text on standard error
    let to_stdout = is_stdout(&output);
    if claim.is_none() {
        check_new_output(&output, args.overwrite)?;
    }
    let suite = Suite::load(args.suite.as_deref())?;
    let source_bundle = load_bundle(&args.source, &cx.hub)?;
    setup::check_source(&args.source, &source_bundle)?;
    let kind = registry::classify(&args.candidate);
    setup::check_coreml_folder(&args.candidate, &kind)?;
    let candidate_model = setup::candidate_model(&args.candidate, &kind);
    let candidate_bundle = candidate_model
        .map(|spec| load_candidate_model(&spec, &args.source, &source_bundle, &cx.hub))
        .transpose()?;
    let cand = candidate_bundle.as_ref().unwrap_or(&source_bundle);
    let shapes = setup::check_shapes(args.max_len, cand, setup::coreml_of(cand))?;
    let (source, candidate) = ((args.source.as_str(), &source_bundle), (args.candidate.as_str(), kind, cand));
    let mut sides = Sides::build(source, candidate, &shapes, cx)?;
    let opts = CallOptions { max_len: args.max_len, ..CallOptions::default() };
    let plan = Plan { gate: args.gate, repeats: args.repeats, opts };
    for w in sides.candidate.rows_host().load_warnings() {
        eprintln!("warning: {w}");
    }
    let mut engines = sides.candidate.engines(&mut sides.source);
    // A runtime whose predict cannot take --max-len is refused before the first question.
    if let Some((_, why)) =
        engines.candidate.as_mut().ok().and_then(|c| crate::backend::first_refusal(&mut **c, [&plan.opts]))
    {
        return Err(Failure::input(anyhow!("--backend {}: {why}", args.candidate)));
    }
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let ticker = Ticker::new("convert-check", "questions", suite.items.len() as u64);
    let at_question = |done: usize| ticker.at(done as u64);
    let ran = run_suite(&suite, engines, &plan, &stopped, &at_question);
    ticker.finish();
    let ran = ran.map_err(|e| Failure::run(anyhow!(e)))?;
    let gate = GateInfo::new(args.gate, args.repeats, args.max_len);
    let gathered = sides.gathered(ShapeInfo::of(&shapes), gate, &suite, ran);
    let stopped = || interrupt::reason("the suite");
    let report = ConvertCheckReport::assemble(gathered, stopped, std::env::args().collect(), &cx.settings);
    let bytes = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let shown = shown(&output);
    if to_stdout {
        write_output(&output, &bytes)?;
        eprint!("{}", report.terminal());
    } else {
        write_atomic(&output, &bytes)
            .with_context(|| format!("cannot write {shown}"))
            .map_err(Failure::run)?;
        super::write_stdout(&report.terminal())?;
        outln!("wrote {shown}")?;
    }
    if report.passed {
        return Ok(());
    }
    let text = failure_text(&report.verdict, &report.verdict_reason);
    Err(Failure::run(anyhow!("{text} (report: {shown})")))
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
    let same = (source.encoder == bundle.encoder, source.agent == bundle.agent);
    check_conversion((source_spec, &files(source_spec)?), (spec, &files(spec)?), same)?;
    Ok(bundle)
}
