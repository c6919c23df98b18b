//! `laya-bench export`: write a model as a checkpoint folder other runtimes can load.

use anyhow::anyhow;

use super::common::load_bundle;
use super::{Failure, Outcome};
use crate::cli::ExportArgs;
use crate::model::export::{export_checkpoint, ExportError, MANIFEST};

pub(crate) fn run(args: &ExportArgs, cx: &crate::backend::Context) -> Outcome {
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    let manifest = export_checkpoint(&bundle, &args.output, args.overwrite).map_err(|e| match e {
        // A folder that cannot be written is a bad --output (exit 2), like every other command's.
        ExportError::NotExportable(_) | ExportError::NotEmpty(_) | ExportError::Io { .. } => {
            Failure::input(anyhow!(e))
        }
        ExportError::Weights(_) => Failure::run(anyhow!(e)),
    })?;
    outln!("wrote {} as a checkpoint folder: {}", manifest.source, args.output.display())?;
    for f in &manifest.files {
        outln!("  {:<34} {:>14} bytes  sha256 {}", f.path, f.bytes, f.sha256)?;
    }
    outln!("  {MANIFEST:<34} (provenance: source, seed, the sha256s above)")?;
    Ok(())
}
