//! `laya-bench verify`: a model and backends against parity goldens; a per-case table, a JSON
//! report, exit 0 (every case passed), 1 (a case or backend failed) or 2 (bad input).

use anyhow::{anyhow, Context};

use super::common::{build_backend, load_bundle};
use super::{Failure, Outcome};
use crate::backend::registry;
use crate::cli::VerifyArgs;
use crate::laya::bundle::{sha256_hex, Weights};
use crate::report::Render;
use crate::run::outputs::{check_folder, refuse_existing};
use crate::verify::report::{BackendReport, BackendTable, GoldensInfo, ModelCheck, VerifyReport};
use crate::verify::weights::{Overrides, Pin, WeightsCheck};
use crate::verify::{self, Goldens, ModelFacts, Tolerance};

pub(crate) fn run(args: &VerifyArgs, cx: &crate::backend::Context) -> Outcome {
    // Ctrl-C, SIGTERM or SIGHUP stops between cases; the report then says what ran
    let stop = super::interrupt::install_or_warn();
    let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
    if let Some(out) = &args.output {
        // the folder is checked before any case runs, so a run never ends unable to save
        check_folder("--output", out)?;
        refuse_existing(out, args.overwrite)?;
    }
    let overrides =
        Overrides { logit_atol: args.logit_atol, logit_rtol: args.logit_rtol, answer_tol: args.answer_tol };
    if let Some((name, x)) = overrides.invalid() {
        return Err(Failure::input(anyhow!("{name} {x} must be a finite number ≥ 0")));
    }
    let file = args.goldens.display().to_string();
    let bytes = std::fs::read(&args.goldens)
        .with_context(|| format!("--goldens: cannot read {file}"))
        .map_err(Failure::input)?;
    let goldens = Goldens::parse(&bytes, &file).map_err(Failure::input)?;
    let specs =
        if args.backends.is_empty() { vec!["portable:f32".to_string()] } else { args.backends.clone() };
    // every spec is read before the model loads
    for spec in &specs {
        crate::backend::registry::BackendSpec::parse(spec).map_err(Failure::input)?;
    }
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    let weights_sha256 = match &bundle.weights {
        Weights::Safetensors(b) => Some(sha256_hex(b)),
        Weights::Static(b) => Some(sha256_hex(b)),
        Weights::Synthetic { .. } | Weights::CoreMl(_) => None,
    };
    // The weights the goldens were made from: their own `source_weights_sha256`, else, for
    // goldens of a published checkpoint (`model` names a pin), the pinned weights' hash.
    let pin = crate::hub::pins::find(&goldens.model)
        .map(|p| Pin { name: p.name, weights_sha256: p.weights_sha256 });
    let weights = WeightsCheck::new(&goldens, pin, weights_sha256);
    if let Some(refusal) = weights.mismatch(&file, &args.model.model).filter(|_| !args.any_weights) {
        return Err(Failure::input(anyhow!(refusal)));
    }
    // every backend is built before any case runs
    let backends =
        specs.iter().map(|spec| build_backend(spec, &bundle, cx)).collect::<Result<Vec<_>, _>>()?;
    let mut backend_reports = Vec::new();
    let mut checks = None;
    let mut incomplete = None;
    for (spec, mut backend) in specs.iter().zip(backends) {
        if stopped() {
            incomplete = Some(super::interrupt::reason(&format!("the set-up, before backend {spec} ran")));
            break;
        }
        let info = backend.info().clone();
        let host = registry::host_for(&bundle, info.shapes.clone(), &info);
        let facts = ModelFacts::of(&bundle, info.shapes.max_options);
        verify::check_fits(&goldens, &facts)
            .map_err(|e| Failure::input(anyhow!(e).context(format!("--backend {spec}"))))?;
        let prompts = verify::check_prompts(&host, &goldens).map_err(Failure::input)?;
        let decodes = verify::check_decoding(&host, &goldens).map_err(Failure::input)?;
        let tol = overrides.apply(Tolerance::for_precision(&info.precision));
        let cases =
            verify::check_backend(&host, backend.as_mut(), &goldens, &prompts, &decodes, tol, &stopped)
                .map_err(|e| Failure::of(e).context(format!("--backend {spec}")))?;
        if cases.len() < goldens.cases.len() {
            incomplete = Some(format!(
                "{}, after {} of {} cases",
                super::interrupt::reason(&format!("backend {spec}")),
                cases.len(),
                goldens.cases.len()
            ));
        }
        let cut = incomplete.is_some();
        let backend_report = BackendReport::new(spec, &info, tol, cases, cut);
        super::write_stdout(&BackendTable { backend: &backend_report, prompts: &prompts }.terminal())?;
        backend_reports.push(backend_report);
        checks.get_or_insert((prompts, decodes));
        if cut {
            break;
        }
    }
    let model = ModelCheck {
        spec: args.model.model.clone(),
        source: bundle.source.clone(),
        weights_match_goldens: weights.matches(),
        weights_sha256: weights.found.clone(),
    };
    let report = VerifyReport::new(GoldensInfo::of(&goldens), model, checks, backend_reports, incomplete);
    if weights.matches().is_none() {
        eprintln!(
            "note: the weights of {} could not be compared with the goldens' source_weights_sha256",
            args.model.model
        );
    }
    if let Some(out) = &args.output {
        let mut text = serde_json::to_string_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
        text.push('\n');
        crate::report::write_atomic(out, text.as_bytes())
            .with_context(|| format!("--output: cannot write {}", out.display()))
            .map_err(Failure::run)?;
        outln!("report: {}", out.display())?;
    }
    if let Some(reason) = &report.incomplete_reason {
        return Err(Failure::run(anyhow!(
            "verify INCOMPLETE: {reason}; no verdict is given{}",
            if args.output.is_some() { " (the report holds the cases that ran)" } else { "" }
        )));
    }
    if report.passed {
        Ok(())
    } else {
        let failed = report.cases_failed();
        if failed == 0 {
            return Err(Failure::run(anyhow!(
                "no case of {file} could run on a backend asked (every case was skipped; see the table)"
            )));
        }
        Err(Failure::run(anyhow!(
            "{failed} case(s) failed against {file} (see the table{})",
            if args.output.is_some() { " and the report" } else { "" }
        )))
    }
}
