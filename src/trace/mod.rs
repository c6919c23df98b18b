//! Instruments (`xctrace`) export parsing, allow-listing and summary; portable (any OS).
//!
//! `trace summarize` reads three XML exports of one recording: the table of contents
//! ([`toc`]), the Neural Engine hardware-intervals table and optionally the Core ML signpost
//! table ([`xml`]). Rows are reduced to the allow-listed fields (timestamp, duration,
//! device, label, state) and summarized ([`intervals`]): interval counts by label, active
//! time, the union of busy time and the duty cycle over the recording. The summary always
//! states that the hardware table is global (no PID or model identity per interval) and
//! that instrumented intervals are never latency results.
//!
//! [`compute_plan`] holds the `MLComputePlan` placement report shared with convert-check.
//! [`recorder`] holds the plumbing of `trace run` and `trace record` as plain data: the ready
//! file, the artifact folder layout and the exact `xcrun xctrace` command lines.
//!
//! [`render`] is the human-readable summary text; [`plan_evidence`] the compute-plan line shown
//! next to a recording. [`child`] is the only file that starts processes: the traced `trace
//! run` child (guarded), the wait for its ready file and the `xcrun xctrace` steps, always with
//! the programs it is given.
//!
//! [`record`] is `trace record` as one call (the child, xctrace's steps, the summary and the
//! artifacts), driven by `commands::trace`, which checks the flags and prints.
//!
//! Nothing here prints or calls macOS.
#![warn(missing_docs)]

pub mod child;
pub use crate::laya::coreml_format::compute_plan;
mod error;
pub mod intervals;
pub mod plan_evidence;
mod reader;
pub mod record;
pub mod recorder;
pub mod render;
pub mod run_report;
pub mod toc;
pub mod xml;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;

use std::path::Path;

pub use compute_plan::{
    build_compute_plan_report, ComputePlanError, ComputePlanReport, PlannedOp, PreferredDevice,
};
pub use error::TraceError;
pub use intervals::{summarize, TraceSummary};
pub use toc::{TocRun, TraceToc};
pub use xml::{
    parse_interval_table, parse_interval_table_str, read_interval_table, IntervalTable, TableKind,
    TraceInterval,
};

/// The files `trace summarize` reads.
#[derive(Debug, Clone, Copy)]
pub struct SummarizeInputs<'a> {
    /// The Neural Engine hardware-intervals table export.
    pub hardware_xml: &'a Path,
    /// The table-of-contents export.
    pub toc_xml: &'a Path,
    /// The Core ML signpost table export, if any.
    pub signpost_xml: Option<&'a Path>,
    /// The run number to use; `None` accepts only a single-run TOC.
    pub run_number: Option<u32>,
}

/// Reads the exports named in `inputs` and summarizes them.
pub fn summarize_files(inputs: SummarizeInputs<'_>) -> Result<TraceSummary, TraceError> {
    fn named(option: &'static str, path: &Path) -> impl FnOnce(TraceError) -> TraceError {
        let path = path.to_path_buf();
        move |e| TraceError::Input { option, path, source: Box::new(e) }
    }
    let toc = TraceToc::read(inputs.toc_xml).map_err(named("--toc-xml", inputs.toc_xml))?;
    let run = toc.select_run(inputs.run_number)?;
    let hardware = read_interval_table(inputs.hardware_xml, TableKind::NeuralEngineHardware)
        .map_err(named("--hardware-xml", inputs.hardware_xml))?;
    let signposts = inputs
        .signpost_xml
        .map(|path| {
            read_interval_table(path, TableKind::CoreMlSignpost).map_err(named("--signpost-xml", path))
        })
        .transpose()?;
    summarize(run, &hardware, signposts.as_ref())
}
