//! `laya-bench palettize`: write a palette file and report the quantization error per tensor.

use anyhow::{anyhow, Context};

use super::common::load_bundle;
use super::{Failure, Outcome};
use crate::cli::PalettizeArgs;
use crate::model::loader::load_source;
use crate::model::palettize::{palettize, write_palette, PaletteConfig, PaletteMeta};
use crate::report::write_atomic;

pub(crate) fn run(args: &PalettizeArgs, cx: &crate::backend::Context) -> Outcome {
    if args.output.exists() && !args.overwrite {
        return Err(Failure::input(anyhow!(
            "{} exists; choose another path or pass --overwrite",
            args.output.display()
        )));
    }
    // the folder is checked before the palettization, which takes minutes on a large model
    crate::run::outputs::check_folder("--output", &args.output)?;
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    let spec = format!("portable:w{}", args.bits);
    let (weights, source) = load_source(&spec, &bundle).map_err(Failure::input)?;
    let cfg = PaletteConfig { above_elements: args.above_elements, ..PaletteConfig::new(args.bits) };
    let (weights, report) = palettize(weights, &cfg).map_err(|e| Failure::run(anyhow!(e)))?;
    if report.tensors.is_empty() {
        eprintln!(
            "warning: nothing palettized: no projection matrix of {} has more than {} elements (--above-elements), so the file holds the f32 weights; pass --above-elements 0 to palettize every matrix",
            args.model.model, cfg.above_elements
        );
    }
    let bytes =
        write_palette(&weights, &PaletteMeta::new(&cfg, &source)).map_err(|e| Failure::run(anyhow!(e)))?;
    write_atomic(&args.output, &bytes)
        .with_context(|| format!("cannot write {}", args.output.display()))
        .map_err(Failure::input)?;
    if args.json {
        outln!("{}", super::versioned("laya-bench-palettize", &report)?)?;
        return Ok(());
    }
    outln!(
        "palettized {} tensors ({} elements) at {} bits, groups of {} rows, seed {}, in {:.1} s",
        report.tensors.len(),
        report.elements,
        cfg.bits,
        cfg.group_size,
        cfg.seed,
        report.seconds
    )?;
    outln!(
        "payload {} → {} bytes; max relative RMS error {:.5}",
        report.bytes_before,
        report.bytes_after,
        report.max_rel_rms_error
    )?;
    outln!("{:<48} {:>10} {:>12} {:>12} {:>10}", "tensor", "elements", "max |err|", "mean |err|", "rel RMS")?;
    for t in &report.tensors {
        outln!(
            "{:<48} {:>10} {:>12.3e} {:>12.3e} {:>10.5}",
            t.name,
            t.elements,
            t.max_abs_error,
            t.mean_abs_error,
            t.rel_rms_error
        )?;
    }
    if !report.skipped.is_empty() {
        outln!("left unpalettized (≤ {} elements): {}", cfg.above_elements, report.skipped.len())?;
    }
    outln!("wrote {} (source {source})", args.output.display())?;
    Ok(())
}
