//! `laya-bench verify`: a model and backends against parity goldens; a per-case table, a JSON
//! report, exit 0 (every case passed), 1 (a case or backend failed) or 2 (bad input).

use anyhow::{anyhow, Context};

use super::common::{build_backend, load_bundle};
use super::{Failure, Outcome};
use crate::backend::registry;
use crate::cli::VerifyArgs;
use crate::report::Render;
use crate::run::outputs::{check_folder, is_stdout, refuse_existing, write_output};
use crate::verify::report::{BackendReport, BackendTable, GoldensInfo, ModelCheck, VerifyReport};
use crate::verify::weights::{weights_sha256, Overrides, Pin, WeightsCheck};
use crate::verify::{self, Goldens};

pub(crate) fn run(args: &VerifyArgs, cx: &crate::backend::Context) -> Outcome {
    // Ctrl-C, SIGTERM or SIGHUP stops between cases; the report then says what ran
    let stop = super::interrupt::install_or_warn();
    let stopped = || stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
    // `--output -`: the report alone on standard output, the tables on standard error
    let to_stdout = args.output.as_deref().is_some_and(is_stdout);
    if let Some(out) = args.output.as_deref().filter(|p| !is_stdout(p)) {
        // the folder is checked before any case runs, so a run never ends unable to save
        check_folder("--output", out)?;
        refuse_existing(out, args.overwrite)?;
    }
    let overrides =
        Overrides { logit_atol: args.logit_atol, logit_rtol: args.logit_rtol, answer_tol: args.answer_tol };
    overrides.check()?;
    let file = args.goldens.display().to_string();
    let goldens = Goldens::read(&args.goldens)?;
    let specs =
        if args.backends.is_empty() { vec!["portable:f32".to_string()] } else { args.backends.clone() };
    // every spec is read before the model loads
    for spec in &specs {
        registry::BackendSpec::parse(spec).map_err(Failure::input)?;
    }
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    // The weights the goldens were made from: their own `source_weights_sha256`, else, for
    // goldens of a published checkpoint (`model` names a pin), the pinned weights' hash.
    let pin = crate::hub::pins::find(&goldens.model)
        .map(|p| Pin { name: p.name, weights_sha256: p.weights_sha256 });
    let weights = WeightsCheck::new(&goldens, pin, weights_sha256(&bundle.weights));
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
        let checked = verify::check_one(spec, &bundle, backend.as_mut(), &goldens, &overrides, &stopped)?;
        let (prompts, decodes, cases) = (checked.prompts, checked.decodes, checked.cases);
        if cases.len() < goldens.cases.len() {
            incomplete = Some(format!(
                "{}, after {} of {} cases",
                super::interrupt::reason(&format!("backend {spec}")),
                cases.len(),
                goldens.cases.len()
            ));
        }
        let cut = incomplete.is_some();
        let backend_report = BackendReport::new(spec, &checked.info, checked.tolerance, cases, cut);
        let table = BackendTable { backend: &backend_report, prompts: &prompts }.terminal();
        if to_stdout {
            eprint!("{table}");
        } else {
            super::write_stdout(&table)?;
        }
        backend_reports.push(backend_report);
        checks.get_or_insert((prompts, decodes));
        if cut {
            break;
        }
    }
    let model = ModelCheck::new(&args.model.model, &bundle.source, &weights);
    let report = VerifyReport::new(GoldensInfo::of(&goldens), model, checks, backend_reports, incomplete);
    if weights.matches().is_none() {
        eprintln!(
            "note: the weights of {} could not be compared with the goldens' source_weights_sha256",
            args.model.model
        );
    }
    if let Some(out) = &args.output {
        let json = report.to_json().map_err(|e| Failure::run(anyhow!(e)))?;
        if to_stdout {
            write_output(out, &json)?;
        } else {
            crate::report::write_atomic(out, &json)
                .with_context(|| format!("--output: cannot write {}", out.display()))
                .map_err(Failure::run)?;
            outln!("report: {}", out.display())?;
        }
    }
    match report.failure(&file, args.output.is_some()) {
        None => Ok(()),
        Some(why) => Err(Failure::run(anyhow!(why))),
    }
}
