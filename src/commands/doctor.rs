//! `laya-bench doctor`: every power sensor and every backend spec kind, and why each is or is
//! not usable on this machine; on macOS also the chip, OS version, Core ML and MLX
//! availability and one real PSTR read (`doctor_apple.rs`); with `--backend SPEC`, whether each
//! spec loads for `--model`. Exits 0 whatever it finds (it reports, it does not judge a
//! machine or a bundle), and 2 only for what cannot be asked: a `--backend` that is not a spec
//! (an unknown kind, a bad precision word) or a `--model` folder that does not exist. The
//! survey is [`crate::run::survey::survey`]; this file prints it.

use anyhow::anyhow;

use super::{Failure, Outcome};
use crate::backend::registry::{BackendSpec, RegistryError};
use crate::cli::DoctorArgs;
use crate::laya::bundle::ModelSpec;
use crate::report::doctor::{AppleReport, DoctorText};
use crate::report::Render;
use crate::run::survey::survey;

pub(crate) fn run(args: &DoctorArgs, cx: &crate::backend::Context) -> Outcome {
    for spec in &args.backends {
        match BackendSpec::parse(spec) {
            // a kind this build or OS lacks is reported below (loads: no, and why)
            Ok(_) | Err(RegistryError::Unavailable { .. }) => {}
            Err(e) => return Err(Failure::input(anyhow!("--backend {spec}: {e}"))),
        }
    }
    // (a hub: model resolves, and may download, in the survey; it reports what fails)
    if !args.backends.is_empty() && !args.model.starts_with("hub:") {
        match ModelSpec::parse(&args.model) {
            Err(e) => return Err(Failure::input(anyhow!("--model {}: {e}", args.model))),
            Ok(ModelSpec::Dir(dir)) if !dir.is_dir() => {
                return Err(Failure::input(anyhow!(
                    "--model {}: no such folder; give a checkpoint folder, builtin:tiny, synthetic:NAME or hub:NAME",
                    args.model
                )))
            }
            Ok(_) => {}
        }
    }
    let doc = survey(&args.model, &args.backends, cx, || apple_report(&cx.settings));
    if args.json {
        let text = serde_json::to_string_pretty(&doc).map_err(|e| Failure::run(anyhow!(e)))?;
        outln!("{text}")?;
        return Ok(());
    }
    super::write_stdout(&DoctorText { report: &doc, model: &args.model }.terminal())
}

#[cfg(target_os = "macos")]
fn apple_report(settings: &crate::settings::Settings) -> Result<AppleReport, crate::error::Error> {
    Ok(super::doctor_apple::probe(settings))
}

#[cfg(not(target_os = "macos"))]
fn apple_report(_: &crate::settings::Settings) -> Result<AppleReport, crate::error::Error> {
    Err(crate::error::Error::run(format!(
        "the Apple probes run only on macOS; this is {}",
        std::env::consts::OS
    )))
}
