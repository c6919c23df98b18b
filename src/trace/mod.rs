//! Instruments (`xctrace`) export parsing, allow-listing and summary; portable (any OS).
//!
//! `trace summarize` reads three XML exports of one recording: the table of contents
//! ([`toc`]), the Neural Engine hardware-intervals table and optionally the Core ML signpost
//! table ([`xml`]). Rows are reduced to the allow-listed fields (timestamp, duration,
//! device, label, state) and summarized ([`summary`]): interval counts by label, active
//! time, the union of busy time and the duty cycle over the recording. The summary always
//! states that the hardware table is global (no PID or model identity per interval) and
//! that instrumented intervals are never latency results.
//!
//! [`compute_plan`] holds the `MLComputePlan` placement report shared with convert-check.
//!
//! Nothing here prints, records or calls macOS; the recorder driver lives elsewhere.

mod error;
mod reader;
pub mod toc;
pub mod xml;

pub use error::TraceError;
pub use toc::{TocRun, TraceToc};
pub use xml::{
    parse_interval_table, parse_interval_table_str, read_interval_table, IntervalTable,
    TableKind, TraceInterval,
};
