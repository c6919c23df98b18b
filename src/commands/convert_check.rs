//! `laya-bench convert-check`: may a converted or compressed candidate stand in for its FP32
//! source? Loads both, runs the fidelity suite through the shared host path, writes the report
//! atomically and prints the verdict first, then the worst questions. The sides, the check's
//! shape and the report's parts are `fidelity/`'s; this file turns arguments into them,
//! prints, and maps the outcome to an exit code.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context};

use super::common::load_bundle;
use super::ticker::Ticker;
use super::{interrupt, Failure, Outcome};
use crate::backend::registry;
use crate::bench::outputs::{check_folder, refuse_existing};
use crate::bench::time::timestamp_stem;
use crate::cli::ConvertCheckArgs;
use crate::fidelity::bundle_checks::{check_same_model, ModelFiles};
use crate::fidelity::check::{run_suite, Plan};
use crate::fidelity::package::PackageAccounting;
use crate::fidelity::report::{
    compute_placement, final_verdict, is_pass, worst_questions, ConvertCheckReport, GateInfo, ShapeInfo,
    SuiteInfo,
};
use crate::fidelity::setup::{self, Candidate};
use crate::fidelity::{Suite, REPORT_SCHEMA_VERSION};
use crate::laya::bundle::{Bundle, Weights};
use crate::laya::host::CallOptions;
use crate::record::provenance::ToolInfo;
use crate::report::format::num;
use crate::report::write_atomic;

pub(crate) fn run(args: &ConvertCheckArgs) -> Outcome {
    // From the start, so a signal while the models load is not lost (a background run inherits
    // SIGINT ignored): the suite then stops before its first question, reported incomplete.
    let stop = interrupt::install_or_warn();
    if !(args.gate.is_finite() && args.gate > 0.0 && args.gate < 1.0) {
        return Err(Failure::input(anyhow!("--gate {} must be a number in (0, 1), e.g. 0.02", args.gate)));
    }
    if args.repeats < 2 {
        return Err(Failure::input(anyhow!(
            "--repeats {} must be at least 2: the bit-identity gate compares repeated calls",
            args.repeats
        )));
    }
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", timestamp_stem("convert-check"))));
    refuse_existing(&output, args.overwrite)?;
    check_folder("--output", &output)?;
    let suite = load_suite(args.suite.as_deref())?;
    let source_bundle = load_bundle(&args.source)?;
    if matches!(source_bundle.weights, Weights::CoreMl(_)) {
        return Err(Failure::input(anyhow!(
            "--source {} is a Core ML bundle; the source must be the FP32 checkpoint it was converted from",
            args.source
        )));
    }
    let kind = registry::classify(&args.candidate);
    setup::check_coreml_folder(&args.candidate, &kind)?;
    let candidate_bundle = match setup::candidate_model(&args.candidate, &kind) {
        None => None,
        Some(spec) => Some(load_candidate_model(&spec, &args.source, &source_bundle)?),
    };
    let cand = candidate_bundle.as_ref().unwrap_or(&source_bundle);
    let coreml = match &cand.weights {
        Weights::CoreMl(c) => Some(c),
        _ => None,
    };
    let shapes = setup::check_shapes(args.max_len, cand, coreml)?;
    let mut source = setup::build_source(&source_bundle, &args.source, &shapes)?;
    let mut candidate = Candidate::build(&args.candidate, kind, cand, &shapes)?;
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
    let (compute_placement, compute_placement_note) = compute_placement(&candidate_info);
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
    print_summary(&report, &output)?;
    if report.passed {
        Ok(())
    } else {
        let word = if report.verdict == "incomplete" {
            "INCOMPLETE".to_string()
        } else {
            report.verdict.replace('_', " ")
        };
        Err(Failure::run(anyhow!(
            "convert-check {}: {} (report: {})",
            word,
            report.verdict_reason,
            output.display()
        )))
    }
}

fn load_suite(path: Option<&Path>) -> Result<Suite, Failure> {
    let suite = match path {
        None => Suite::default_suite(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("--suite: cannot read {}", p.display()))
                .map_err(Failure::input)?;
            Suite::parse(&text, &p.display().to_string())
        }
    };
    suite.map_err(|e| Failure::input(anyhow!(e).context("the fidelity suite is invalid")))
}

/// Load a candidate model and refuse one that reads another tokenizer or config (exit 2).
fn load_candidate_model(spec: &str, source_spec: &str, source: &Bundle) -> Result<Bundle, Failure> {
    let bundle =
        load_bundle(spec).map_err(|f| Failure::input(f.error.context(format!("--candidate {spec}"))))?;
    let files = |s: &str| {
        super::hub_progress::model_spec(s)
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
            anyhow!(e).context(format!("--candidate {spec} is not a conversion of --source {source_spec}")),
        )
    })?;
    Ok(bundle)
}

fn print_summary(r: &ConvertCheckReport, output: &Path) -> Result<(), Failure> {
    let s = &r.summary;
    outln!(
        "convert-check: {} — {} ({}, gate {}, {} repeats)",
        r.verdict.to_uppercase().replace('_', " "),
        r.verdict_reason,
        s.fitting,
        r.gate.max_abs_drift,
        r.gate.repeats
    )?;
    match (&s.max_drift, &s.max_drift_question) {
        (Some(d), Some(q)) => outln!("max drift {d:.6} on `{q}`")?,
        _ => outln!("max drift: none ({})", s.max_drift_missing_reason.as_deref().unwrap_or("not computed"))?,
    }
    outln!(
        "source    {} on {} (fingerprint {})",
        r.source.spec,
        r.source.backend.as_deref().unwrap_or("-"),
        r.source.fingerprint.as_deref().unwrap_or("-")
    )?;
    outln!(
        "candidate {} [{}] precision {} (fingerprint {})",
        r.candidate.spec,
        r.candidate.kind,
        r.candidate.precision.as_deref().unwrap_or("-"),
        r.candidate.fingerprint.as_deref().unwrap_or("-")
    )?;
    for n in &r.candidate.notes {
        outln!("  note: {n}")?;
    }
    let judged = worst_questions(&r.questions);
    if !judged.is_empty() {
        outln!("worst questions:")?;
        outln!(
            "  {:<16} {:<6} {:>10} {:>10}  {:<32} verdict",
            "id",
            "type",
            "drift",
            "margin",
            "answer (source -> candidate)"
        )?;
        for q in judged.iter().take(10) {
            let Some(g) = &q.gates else { continue };
            let answer = format!(
                "{} -> {}",
                q.source_answer.as_deref().unwrap_or("?"),
                q.candidate_answer.as_deref().unwrap_or("?")
            );
            let mark = if !g.passed {
                format!("FAIL: {}", g.failures.join("; "))
            } else if g.allowed_flip {
                "pass (flip below margin)".into()
            } else {
                "pass".into()
            };
            let drift = if g.drift.is_finite() { format!("{:.6}", g.drift) } else { "non-finite".into() };
            // Ids and answers may hold wide characters (今日): pad by terminal columns.
            outln!(
                "  {} {:<6} {:>10} {:>10.6}  {} {mark}",
                crate::report::pad(&q.id, 16),
                q.qtype,
                drift,
                g.source_margin,
                crate::report::pad(&answer, 32)
            )?;
        }
    }
    if !s.not_fitting.is_empty() {
        outln!("not fitting ({}): {}", s.not_fitting.len(), s.not_fitting.join(", "))?;
    }
    if !s.allowed_flips.is_empty() {
        outln!(
            "allowed flips (source margin below {}): {}",
            r.gate.flip_allowed_below_margin,
            s.allowed_flips.join(", ")
        )?;
    }
    if let Some(b) = &r.bundle_checks {
        let bad: Vec<&str> = b.host_weights.iter().filter(|t| !t.matches).map(|t| t.name.as_str()).collect();
        outln!(
            "bundle: {} {} files verified, shape B{} L{} K{}{}; host weights {}",
            b.format,
            b.verified_files.len(),
            b.batch_size,
            b.max_length,
            b.max_options,
            if b.fixed_b1_k32 { " (fixed)" } else { "" },
            if b.host_weights.is_empty() {
                b.host_weights_note.clone().unwrap_or_default()
            } else if bad.is_empty() {
                format!("match the source ({})", b.host_weights.first().map_or("", |t| t.comparison.as_str()))
            } else {
                format!("DIFFER: {}", bad.join(", "))
            }
        )?;
        let list = |v: &[crate::backend::coreml::description::DeclaredFeature]| {
            v.iter().map(|f| f.summary()).collect::<Vec<_>>().join("; ")
        };
        outln!("declared_inputs:  {}", list(&b.declared_inputs))?;
        outln!("declared_outputs: {}", list(&b.declared_outputs))?;
        outln!("  {}", b.declared_interface_check)?;
    }
    let p = &r.package;
    outln!(
        "package (weights without host embedding tables, {}): source {} MB payload, {} MB per decision; candidate {} MB payload, {} MB per decision",
        p.note,
        num(p.source.weight_payload_mb, 3),
        num(p.source.streamed_mb_per_decision, 3),
        num(p.candidate.weight_payload_mb, 3),
        num(p.candidate.streamed_mb_per_decision, 3)
    )?;
    outln!("compute placement: {}", r.compute_placement_note)?;
    outln!("wrote {}", output.display())?;
    Ok(())
}
