//! `laya-bench convert-check`: may a converted or compressed candidate stand in for its FP32
//! source? Loads both, runs the fidelity suite through the shared host path, writes the report
//! atomically and prints the verdict first, then the worst questions.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::{anyhow, Context};
use serde_json::Value;

use super::predict::load_bundle;
use super::{interrupt, Failure, Outcome};
use crate::backend::portable::PortableBackend;
use crate::backend::registry::{self, build_portable, default_threads, BackendSpec, Precision};
use crate::backend::{Backend, ShapeCaps, ShapeMode};
use crate::bench::outputs::{check_folder, refuse_existing};
use crate::bench::time::timestamp_stem;
use crate::cli::ConvertCheckArgs;
use crate::fidelity::bundle_checks::{bundle_checks, check_same_model, BundleChecks, ModelFiles};
use crate::fidelity::check::{run_suite, Engines, Plan, QuestionResult};
use crate::fidelity::package::{coreml_side, missing_side, portable_side, PackageAccounting, PackageSide};
use crate::fidelity::report::{verdict, ConvertCheckReport, GateInfo, ShapeInfo, SideInfo, SuiteInfo};
use crate::fidelity::{Suite, REPORT_SCHEMA_VERSION};
use crate::laya::bundle::{sha256_hex, Bundle, CoreMlBundle, ModelSpec, Weights};
use crate::laya::host::{CallOptions, Host};
use crate::model::palettize::{read_palette_meta, PaletteReport};
use crate::report::energy::num;
use crate::report::raw::ToolInfo;
use crate::report::write_atomic;
use crate::trace::ComputePlanReport;

/// What the candidate argument names.
enum CandidateKind {
    /// A backend spec run on the source model.
    Backend(String),
    /// A model folder or spec: a checkpoint (portable:f32) or a Core ML bundle.
    Model(String),
}

/// The candidate's engine: a portable one (with its weight sizes), a scripted one, or none
/// with the reason its decisions cannot be computed here.
enum Engine {
    Portable(Box<PortableBackend>),
    Other(Box<dyn Backend>),
    Unavailable(String),
}

fn classify(text: &str) -> CandidateKind {
    match text.split_once(':').map(|(k, _)| k).unwrap_or(text) {
        "portable" | "mock" | "mlx" => CandidateKind::Backend(text.to_string()),
        "coreml" => CandidateKind::Model(text["coreml:".len()..].to_string()),
        _ => CandidateKind::Model(text.to_string()),
    }
}

/// Where the candidate's compute would be placed. Only Core ML's `MLComputePlan` answers
/// that; every other candidate gets `None` and the reason.
fn compute_placement(candidate: &SideInfo) -> (Option<ComputePlanReport>, String) {
    if candidate.kind != "coreml_bundle" {
        return (
            None,
            format!(
                "not applicable: placement comes from Core ML's MLComputePlan, and the candidate is a {} on {}",
                if candidate.kind == "backend" { "backend spec" } else { "checkpoint" },
                candidate.backend.as_deref().unwrap_or("no backend")
            ),
        );
    }
    let units = candidate
        .spec
        .strip_prefix("coreml:")
        .and_then(|rest| crate::backend::coreml::CoreMlSpec::parse(rest).ok())
        .and_then(|s| s.units);
    let bundle = Path::new(&candidate.model);
    let units = units.unwrap_or_else(|| crate::backend::coreml::default_units_for(bundle));
    match crate::backend::coreml::compute_plan_for(bundle, units) {
        Ok(report) => (
            Some(report),
            format!(
                "expected placement from MLComputePlan with compute units {} (what Core ML prefers \
                 before running; not proof that the accelerator ran: use `laya-bench trace` for that)",
                units.name()
            ),
        ),
        Err(e) => (None, format!("not computed: {e}")),
    }
}

pub(crate) fn run(args: &ConvertCheckArgs) -> Outcome {
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
    let kind = classify(&args.candidate);
    if let Some(dir) = args.candidate.strip_prefix("coreml:").map(std::path::Path::new) {
        if !dir.join("coreml_config.json").is_file() {
            let what = if dir.is_dir() { "has no coreml_config.json" } else { "does not exist" };
            return Err(Failure::input(anyhow!(
                "--candidate {}: the folder {} {what}, so it is not a Core ML bundle (a folder with coreml_config.json)",
                args.candidate,
                dir.display()
            )));
        }
    }
    let candidate_bundle = match &kind {
        CandidateKind::Backend(_) => None,
        CandidateKind::Model(spec) => Some(load_candidate_model(spec, &args.source, &source_bundle)?),
    };
    let cand = candidate_bundle.as_ref().unwrap_or(&source_bundle);
    let coreml = match &cand.weights {
        Weights::CoreMl(c) => Some(c.clone()),
        _ => None,
    };
    let shapes = check_shapes(args, cand, coreml.as_ref())?;
    let threads = default_threads();
    let (mut source, _) = build_portable(
        &BackendSpec::Portable(Precision::F32),
        "portable:f32",
        &source_bundle,
        Some(shapes.clone()),
        threads,
    )
    .map_err(|e| Failure::input(anyhow!(e).context(format!("--source {}", args.source))))?;
    let (mut engine, palette) =
        build_candidate(&kind, &args.candidate, cand, coreml.is_some(), &shapes, threads)?;
    let checks = match &coreml {
        Some(c) => Some(static_checks(c, &source_bundle)?),
        None => None,
    };
    let source_info = SideInfo {
        spec: args.source.clone(),
        kind: "checkpoint".into(),
        model: source_bundle.source.clone(),
        backend: Some("portable:f32".into()),
        precision: Some(source.info().precision.clone()),
        device: Some(source.info().device.clone()),
        fingerprint: Some(source.info().fingerprint.clone()),
        notes: Vec::new(),
    };
    let candidate_info = candidate_side(args, &kind, cand, &engine, palette.as_ref(), coreml.as_ref());
    let package = PackageAccounting::new(
        portable_side(&format!("{} on portable:f32", args.source), source.weight_bytes()),
        candidate_package(&args.candidate, &engine, cand, coreml.as_ref()),
    );
    let plan = Plan {
        gate: args.gate,
        repeats: args.repeats,
        opts: CallOptions { max_len: args.max_len, ..CallOptions::default() },
    };
    // The candidate's rows come from its own arm's host (MLX: with the prefix cache, which
    // changes no row); the source decodes them with a plain host.
    let rows_host = match &engine {
        Engine::Portable(b) => registry::host_for(cand, shapes.clone(), b.info()),
        Engine::Other(b) => registry::host_for(cand, shapes.clone(), b.info()),
        Engine::Unavailable(_) => Host::new(&cand.tokenizer, &cand.agent, shapes.clone()),
    };
    let source_host = Host::new(&source_bundle.tokenizer, &source_bundle.agent, shapes.clone());
    for w in rows_host.load_warnings() {
        eprintln!("warning: {w}");
    }
    let candidate: Result<&mut dyn Backend, String> = match &mut engine {
        Engine::Portable(b) => Ok(b.as_mut()),
        Engine::Other(b) => Ok(b.as_mut()),
        Engine::Unavailable(reason) => Err(reason.clone()),
    };
    let engines =
        Engines { rows_host: &rows_host, source_host: &source_host, source: &mut source, candidate };
    let stop = interrupt::install_or_warn();
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let (questions, summary) =
        run_suite(&suite, engines, &plan, &stopped).map_err(|e| Failure::run(anyhow!(e)))?;
    let (verdict, verdict_reason) = if questions.len() < suite.items.len() {
        (
            "incomplete".to_string(),
            format!(
                "{} after {} of {} questions; the figures cover only those, so no verdict is given",
                interrupt::reason("the suite"),
                questions.len(),
                suite.items.len()
            ),
        )
    } else {
        let (v, why) = verdict(&summary, checks.as_ref());
        match identical_model(&source_info, &candidate_info) {
            Some(same) if v == "passed" => ("identical".to_string(), same),
            _ => (v, why),
        }
    };
    let (compute_placement, compute_placement_note) = compute_placement(&candidate_info);
    let report = ConvertCheckReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: "convert-check".into(),
        tool: ToolInfo::current(),
        command_line: std::env::args().collect(),
        passed: verdict == "passed" || verdict == "identical",
        verdict,
        verdict_reason,
        source: source_info,
        candidate: candidate_info,
        shape: ShapeInfo {
            batch_size: shapes.batch_size,
            max_length_tokens: shapes.max_length,
            max_options: shapes.max_options,
            mode: match shapes.mode {
                ShapeMode::Fixed => "fixed",
                ShapeMode::Range => "range",
                ShapeMode::Enumerated(_) => "enumerated",
            }
            .into(),
        },
        gate: GateInfo {
            max_abs_drift: args.gate,
            flip_allowed_below_margin: 2.0 * args.gate,
            repeats: args.repeats,
            max_len_tokens: args.max_len,
        },
        suite: SuiteInfo {
            source: suite.source.clone(),
            name: suite.name.clone(),
            sha256: suite.sha256.clone(),
        },
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
    print_summary(&report, &output);
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

/// When the candidate is the source model itself (the same weights fingerprint on the same
/// engine, e.g. a palettization that changed nothing), what the verdict says instead of
/// PASSED: the check compared it with itself.
fn identical_model(source: &SideInfo, candidate: &SideInfo) -> Option<String> {
    let fingerprint = source.fingerprint.as_ref()?;
    // Same weights on another engine (e.g. mlx:fp32 of the source) is a real comparison.
    let same_engine = candidate.backend.as_deref().is_some_and(|b| b.starts_with("portable:"))
        || candidate.backend == source.backend;
    (same_engine && candidate.fingerprint.as_ref() == Some(fingerprint)).then(|| {
        format!(
            "the candidate runs the source's own weights (fingerprint {}, {}): every gate passed because it was compared with itself, which says nothing about a conversion",
            &fingerprint[..fingerprint.len().min(12)],
            source.backend.as_deref().unwrap_or("-")
        )
    })
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
        ModelSpec::parse(s)
            .map_err(|e| Failure::input(anyhow!(e)))
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

/// The shape rows are built and packed for: the Core ML bundle's, or the portable engine's
/// with one row per call and `--max-len` as the longest row.
fn check_shapes(
    args: &ConvertCheckArgs,
    cand: &Bundle,
    coreml: Option<&CoreMlBundle>,
) -> Result<ShapeCaps, Failure> {
    if args.max_len == Some(0) {
        return Err(Failure::input(anyhow!("--max-len must be at least 1")));
    }
    if let Some(c) = coreml {
        let ane = c.format == "laya-coreml-ane";
        if let Some(n) = args.max_len.filter(|&n| n > c.max_length || (ane && n != c.max_length)) {
            return Err(Failure::input(anyhow!(
                "--max-len {n}: Requested length does not match the bundle ({} tokens{}); omit --max-len or pass {}",
                c.max_length,
                if ane { ", fixed" } else { " at most" },
                c.max_length
            )));
        }
        return Ok(ShapeCaps {
            batch_size: c.batch_size.max(1),
            max_length: c.max_length,
            min_length: if ane { c.max_length } else { 16.min(c.max_length) },
            max_options: c.max_options,
            mode: if ane { ShapeMode::Fixed } else { ShapeMode::Range },
        });
    }
    let max_len = cand.agent.max_len;
    if let Some(n) = args.max_len.filter(|&n| n > max_len) {
        return Err(Failure::input(anyhow!(
            "--max-len {n} is longer than the model's max_len {max_len}; pass at most {max_len}"
        )));
    }
    let mut caps = registry::portable_shapes(cand);
    caps.batch_size = 1;
    caps.max_length = args.max_len.unwrap_or(max_len);
    caps.min_length = caps.min_length.min(caps.max_length);
    Ok(caps)
}

fn build_candidate(
    kind: &CandidateKind,
    text: &str,
    cand: &Bundle,
    is_coreml: bool,
    shapes: &ShapeCaps,
    threads: usize,
) -> Result<(Engine, Option<PaletteReport>), Failure> {
    let context =
        |e: registry::RegistryError| Failure::input(anyhow!(e).context(format!("--candidate {text}")));
    if is_coreml {
        let path = match kind {
            CandidateKind::Model(p) => p.as_str(),
            CandidateKind::Backend(p) => p.as_str(),
        };
        let spec = format!("coreml:{path}");
        let engine = match BackendSpec::parse(&spec)
            .and_then(|s| registry::build(&s, &spec, cand, Some(shapes.clone())))
        {
            Ok(b) => Engine::Other(b),
            Err(e) => Engine::Unavailable(e.to_string()),
        };
        return Ok((engine, None));
    }
    let spec_text = match kind {
        CandidateKind::Backend(s) => s.as_str(),
        CandidateKind::Model(_) => "portable:f32",
    };
    let parsed = match BackendSpec::parse(spec_text) {
        Ok(p) => p,
        Err(e @ registry::RegistryError::Unavailable { .. }) => {
            return Ok((Engine::Unavailable(e.to_string()), None))
        }
        Err(e) if spec_text.starts_with("mlx") => return Ok((Engine::Unavailable(e.to_string()), None)),
        Err(e) => return Err(context(e)),
    };
    if matches!(parsed, BackendSpec::Mock { .. } | BackendSpec::Mlx(_)) {
        return Ok((
            Engine::Other(registry::build(&parsed, spec_text, cand, Some(shapes.clone())).map_err(context)?),
            None,
        ));
    }
    let (backend, report) =
        build_portable(&parsed, spec_text, cand, Some(shapes.clone()), threads).map_err(context)?;
    Ok((Engine::Portable(Box::new(backend)), report))
}

/// Re-read the manifest's optional quantization name (`w8`, `w8-pt`, ...).
fn manifest_quantization(c: &CoreMlBundle) -> Option<String> {
    let dir = c.package.parent()?;
    let text = std::fs::read_to_string(dir.join("coreml_config.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    ["quantization", "ane_quantization"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
}

fn static_checks(c: &CoreMlBundle, source: &Bundle) -> Result<BundleChecks, Failure> {
    let weights = match c.host_weights {
        Some(_) => Some(
            crate::model::loader::load_source("portable:f32", source)
                .map_err(|e| Failure::input(anyhow!(e).context("--source")))?
                .0,
        ),
        None => None,
    };
    bundle_checks(c, weights.as_ref()).map_err(|e| Failure::input(anyhow!(e).context("--candidate")))
}

fn candidate_side(
    args: &ConvertCheckArgs,
    kind: &CandidateKind,
    cand: &Bundle,
    engine: &Engine,
    palette: Option<&PaletteReport>,
    coreml: Option<&CoreMlBundle>,
) -> SideInfo {
    let mut notes = Vec::new();
    if let Some(p) = palette {
        if p.tensors.is_empty() {
            notes.push(format!(
                "{}-bit palettization changed nothing: no projection matrix of this model has more than {} elements, so the candidate's weights equal the source's and this run says nothing about {}-bit palettization of a real checkpoint",
                p.config.bits, p.config.above_elements, p.config.bits
            ));
        } else {
            notes.push(format!(
                "{} of {} projection matrices palettized at {} bits (largest relative RMS error {:.5})",
                p.tensors.len(),
                p.tensors.len() + p.skipped.len(),
                p.config.bits,
                p.max_rel_rms_error
            ));
        }
    }
    if let Ok(BackendSpec::PortablePalette { path, .. }) = BackendSpec::parse(&args.candidate) {
        let meta =
            std::fs::read(&path).ok().and_then(|b| read_palette_meta(&b, &path.display().to_string()).ok());
        if let Some(m) = meta {
            notes.push(format!(
                "palette file {}: {}-bit indices, groups of {} rows, every projection matrix above {} elements palettized ({})",
                path.display(),
                m.bits,
                m.group_size,
                m.above_elements,
                m.method
            ));
        }
    }
    let info = match engine {
        Engine::Portable(b) => Some(b.info().clone()),
        Engine::Other(b) => Some(b.info().clone()),
        Engine::Unavailable(reason) => {
            notes.push(format!("the candidate cannot run here: {reason}"));
            None
        }
    };
    let (kind_name, backend) = match (kind, coreml) {
        (_, Some(_)) => ("coreml_bundle", info.as_ref().map(|_| format!("coreml:{}", cand.source))),
        (CandidateKind::Backend(s), None) => ("backend", Some(s.clone())),
        (CandidateKind::Model(_), None) => ("checkpoint", Some("portable:f32".to_string())),
    };
    let fingerprint = match (coreml, &info) {
        (Some(c), _) => c
            .package
            .parent()
            .and_then(|d| std::fs::read(d.join("coreml_config.json")).ok())
            .map(|b| sha256_hex(&b)),
        (None, Some(i)) => Some(i.fingerprint.clone()),
        (None, None) => None,
    };
    if coreml.is_some() {
        notes.push("fingerprint: sha256 of coreml_config.json (which lists every file's sha256)".into());
    }
    SideInfo {
        spec: args.candidate.clone(),
        kind: kind_name.into(),
        model: cand.source.clone(),
        backend,
        precision: info
            .as_ref()
            .map(|i| i.precision.clone())
            .or_else(|| coreml.and_then(|c| c.precision.clone())),
        device: info.as_ref().map(|i| i.device.clone()),
        fingerprint,
        notes,
    }
}

fn candidate_package(
    spec: &str,
    engine: &Engine,
    cand: &Bundle,
    coreml: Option<&CoreMlBundle>,
) -> PackageSide {
    if let Some(c) = coreml {
        return coreml_side(spec, c, manifest_quantization(c).as_deref(), &cand.encoder, &cand.agent);
    }
    match engine {
        Engine::Portable(b) => portable_side(spec, b.weight_bytes()),
        Engine::Other(b) if b.info().name == crate::backend::mlx::NAME => missing_side(
            spec,
            "not counted for MLX arms: MLX holds every tensor of the source checkpoint as one array in the graph dtype",
        ),
        Engine::Other(_) => missing_side(spec, "a scripted backend has no weights"),
        Engine::Unavailable(reason) => missing_side(spec, reason),
    }
}

fn print_summary(r: &ConvertCheckReport, output: &Path) {
    let s = &r.summary;
    println!(
        "convert-check: {} — {} ({}, gate {}, {} repeats)",
        r.verdict.to_uppercase().replace('_', " "),
        r.verdict_reason,
        s.fitting,
        r.gate.max_abs_drift,
        r.gate.repeats
    );
    match (&s.max_drift, &s.max_drift_question) {
        (Some(d), Some(q)) => println!("max drift {d:.6} on `{q}`"),
        _ => {
            println!("max drift: none ({})", s.max_drift_missing_reason.as_deref().unwrap_or("not computed"))
        }
    }
    println!(
        "source    {} on {} (fingerprint {})",
        r.source.spec,
        r.source.backend.as_deref().unwrap_or("-"),
        r.source.fingerprint.as_deref().unwrap_or("-")
    );
    println!(
        "candidate {} [{}] precision {} (fingerprint {})",
        r.candidate.spec,
        r.candidate.kind,
        r.candidate.precision.as_deref().unwrap_or("-"),
        r.candidate.fingerprint.as_deref().unwrap_or("-")
    );
    for n in &r.candidate.notes {
        println!("  note: {n}");
    }
    let mut judged: Vec<&QuestionResult> = r.questions.iter().filter(|q| q.gates.is_some()).collect();
    judged.sort_by(|a, b| {
        let (ga, gb) = (a.gates.as_ref(), b.gates.as_ref());
        let key = |g: Option<&crate::fidelity::Judgement>| g.map_or((true, 0.0), |g| (g.passed, -g.drift));
        key(ga).partial_cmp(&key(gb)).unwrap_or(std::cmp::Ordering::Equal)
    });
    if !judged.is_empty() {
        println!("worst questions:");
        println!(
            "  {:<16} {:<6} {:>10} {:>10}  {:<32} verdict",
            "id", "type", "drift", "margin", "answer (source -> candidate)"
        );
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
            println!(
                "  {} {:<6} {:>10} {:>10.6}  {} {mark}",
                crate::report::pad(&q.id, 16),
                q.qtype,
                drift,
                g.source_margin,
                crate::report::pad(&answer, 32)
            );
        }
    }
    if !s.not_fitting.is_empty() {
        println!("not fitting ({}): {}", s.not_fitting.len(), s.not_fitting.join(", "));
    }
    if !s.allowed_flips.is_empty() {
        println!(
            "allowed flips (source margin below {}): {}",
            r.gate.flip_allowed_below_margin,
            s.allowed_flips.join(", ")
        );
    }
    if let Some(b) = &r.bundle_checks {
        let bad: Vec<&str> = b.host_weights.iter().filter(|t| !t.matches).map(|t| t.name.as_str()).collect();
        println!(
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
        );
        let list = |v: &[crate::backend::coreml::description::DeclaredFeature]| {
            v.iter().map(|f| f.summary()).collect::<Vec<_>>().join("; ")
        };
        println!("declared_inputs:  {}", list(&b.declared_inputs));
        println!("declared_outputs: {}", list(&b.declared_outputs));
        println!("  {}", b.declared_interface_check);
    }
    let p = &r.package;
    println!(
        "package (weights without host embedding tables, {}): source {} MB payload, {} MB per decision; candidate {} MB payload, {} MB per decision",
        p.note,
        num(p.source.weight_payload_mb, 3),
        num(p.source.streamed_mb_per_decision, 3),
        num(p.candidate.weight_payload_mb, 3),
        num(p.candidate.streamed_mb_per_decision, 3)
    );
    println!("compute placement: {}", r.compute_placement_note);
    println!("wrote {}", output.display());
}
