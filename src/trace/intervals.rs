//! Pure summary of parsed xctrace tables: interval counts by label, active time, the union
//! of busy time and the duty cycle over the recording, with the fixed caveats attached.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::TraceError;
use super::toc::{TargetProcess, TocRun};
use super::xml::{IntervalTable, TableKind, TraceInterval};

/// Version of the [`TraceSummary`] JSON layout.
pub const TRACE_SUMMARY_SCHEMA_VERSION: u32 = 1;

/// Fixed statement: the hardware table carries no process or model identity.
pub const CAVEAT_GLOBAL_TABLE: &str = "The Neural Engine hardware-intervals table is global: \
     its rows carry no process id and no model identity, so intervals from other processes \
     (for example system models) are counted too. Attribute them only by label and by time \
     containment in this process's Core ML signposts.";

/// Fixed statement: instrumented intervals are not latency results.
pub const CAVEAT_NOT_LATENCY: &str = "Instrumented intervals are evidence of where work ran, \
     never latency results: tracing perturbs timing and an interval is not an end-to-end call. \
     Take latency and energy from separate, uninstrumented runs.";

/// Fixed statement: an empty table is not evidence of absence.
pub const CAVEAT_EMPTY_IS_NOT_ABSENCE: &str = "Zero intervals does not prove the model did not \
     run on the Neural Engine: tiny models and some graph kinds leave no rows, and some Xcode \
     versions export empty signpost tables.";

/// The caveats every summary carries, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceCaveats {
    /// Always false: hardware rows have no PID.
    pub hardware_rows_have_process_identity: bool,
    /// Always false: hardware rows have no model identity.
    pub hardware_rows_have_model_identity: bool,
    /// Always false: interval durations are never latency results.
    pub intervals_are_latency_results: bool,
    /// The caveats in words.
    pub statements: Vec<String>,
}

impl Default for TraceCaveats {
    fn default() -> Self {
        Self {
            hardware_rows_have_process_identity: false,
            hardware_rows_have_model_identity: false,
            intervals_are_latency_results: false,
            statements: vec![
                CAVEAT_GLOBAL_TABLE.to_owned(),
                CAVEAT_NOT_LATENCY.to_owned(),
                CAVEAT_EMPTY_IS_NOT_ABSENCE.to_owned(),
            ],
        }
    }
}

/// The recording the tables came from, as read from the TOC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordingInfo {
    /// The run's number.
    pub run_number: Option<u32>,
    /// The recording template, e.g. "Core ML".
    pub template_name: Option<String>,
    /// The recording's duration in seconds.
    pub duration_s: Option<f64>,
    /// The start date (ISO-8601 with offset); interval times are ns after it.
    pub start_date: Option<String>,
    /// Why recording stopped.
    pub end_reason: Option<String>,
    /// The targeted process.
    pub target_process: Option<TargetProcess>,
    /// The schema names of the run's tables, in order.
    pub tables: Vec<String>,
}

/// What an interval was, from its label (hardware) or its event (signposts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalKind {
    /// A prediction / inference.
    Prediction,
    /// A model load; kept out of inference time.
    Load,
    /// A model compile; kept out of inference time.
    Compile,
    /// Anything else.
    Other,
    /// No label (or event) was recorded.
    Unlabelled,
}

impl IntervalKind {
    /// Classifies a hardware label ("… Prediction", "… Load", "… Compile",
    /// "…_AneInference") or a signpost event ("Prediction", "Load").
    pub fn classify(text: Option<&str>) -> Self {
        let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
            return IntervalKind::Unlabelled;
        };
        let lower = text.to_ascii_lowercase();
        if lower.ends_with("load") {
            IntervalKind::Load
        } else if lower.ends_with("compile") {
            IntervalKind::Compile
        } else if lower.ends_with("prediction") || lower.ends_with("inference") {
            IntervalKind::Prediction
        } else {
            IntervalKind::Other
        }
    }
}

/// Counts and time for one label (and, for signposts, one event kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSummary {
    /// The label (`null` for rows without one).
    pub label: Option<String>,
    /// What the label says the interval was.
    pub kind: IntervalKind,
    /// Rows with this label.
    pub count: u64,
    /// Rows with this label that have both a start and a duration and are not idle.
    pub timed_count: u64,
    /// Sum of those rows' durations, in ns (overlaps counted twice).
    pub total_duration_ns: u64,
}

/// Rows per state value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCount {
    /// The state (`null` for rows without one).
    pub state: Option<String>,
    /// Rows with this state.
    pub count: u64,
}

/// Activity totals over a set of intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityTotals {
    /// Intervals with a start and a duration, not idle.
    pub interval_count: u64,
    /// Sum of their durations in ns (overlaps counted twice).
    pub active_ns: u64,
    /// Length of the union of their time ranges in ns (overlaps counted once).
    pub busy_union_ns: u64,
    /// `busy_union_ns` / recording duration, in [0, 1] when intervals lie inside it.
    pub duty_cycle_fraction: Option<f64>,
    /// Why `duty_cycle_fraction` is null, when it is.
    pub duty_cycle_missing_reason: Option<String>,
    /// Start of the earliest interval, ns since the run start.
    pub first_start_ns: Option<u64>,
    /// End of the latest interval, ns since the run start.
    pub last_end_ns: Option<u64>,
}

/// The summary of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSummary {
    /// Which kind of table.
    pub kind: TableKind,
    /// Its schema name as exported.
    pub schema: String,
    /// All rows.
    pub row_count: u64,
    /// Rows whose start was missing or n/a.
    pub rows_without_start: u64,
    /// Rows whose duration was missing or n/a (0 means n/a).
    pub rows_without_duration: u64,
    /// Rows whose state is "Idle"; they are kept out of activity.
    pub rows_idle: u64,
    /// Per label and interval kind, sorted by label.
    pub by_label: Vec<LabelSummary>,
    /// Per state, sorted by state.
    pub by_state: Vec<StateCount>,
    /// Activity over every timed, non-idle interval.
    pub all: ActivityTotals,
    /// Activity without load and compile intervals (the inference share).
    pub excluding_load_and_compile: ActivityTotals,
}

/// How many hardware prediction intervals fall inside signposted predictions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainmentSummary {
    /// Timed hardware intervals that are not load or compile.
    pub hardware_intervals: u64,
    /// Of those, the ones lying wholly inside the union of signpost prediction intervals.
    pub within_signpost_predictions: u64,
}

/// The result of `trace summarize`: recording facts, per-table activity and caveats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Layout version, [`TRACE_SUMMARY_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The recording.
    pub recording: RecordingInfo,
    /// The Neural Engine hardware table.
    pub hardware: TableSummary,
    /// The Core ML signpost table, when one was given.
    pub signposts: Option<TableSummary>,
    /// Hardware intervals inside signposted predictions, when signposts were given.
    pub containment: Option<ContainmentSummary>,
    /// The fixed caveats.
    pub caveats: TraceCaveats,
    /// Observations about this trace (empty tables, intervals past the recording's end).
    pub notes: Vec<String>,
}

/// Summarizes a hardware table (and optionally a signpost table) of one TOC run.
///
/// Fails when a table is of the wrong kind or was exported from another run.
pub fn summarize(
    run: &TocRun,
    hardware: &IntervalTable,
    signposts: Option<&IntervalTable>,
) -> Result<TraceSummary, TraceError> {
    check_table(run, hardware, TableKind::NeuralEngineHardware, "hardware")?;
    if let Some(signposts) = signposts {
        check_table(run, signposts, TableKind::CoreMlSignpost, "signpost")?;
    }
    let mut notes = Vec::new();
    let recording_ns = run.duration_s.map(|s| s * 1e9);
    let hardware_summary = summarize_table(hardware, recording_ns, &mut notes);
    let signpost_summary = signposts.map(|t| summarize_table(t, recording_ns, &mut notes));
    let containment = signposts.map(|s| containment(hardware, s));
    for table in std::iter::once(hardware).chain(signposts) {
        if !run.tables.iter().any(|t| t.schema == table.schema) {
            notes.push(format!(
                "The TOC run does not list a table of schema `{}`; check that the export and \
                 the TOC come from the same trace.",
                table.schema
            ));
        }
    }
    Ok(TraceSummary {
        schema_version: TRACE_SUMMARY_SCHEMA_VERSION,
        recording: RecordingInfo {
            run_number: run.number,
            template_name: run.template_name.clone(),
            duration_s: run.duration_s,
            start_date: run.start_date.clone(),
            end_reason: run.end_reason.clone(),
            target_process: run.target_process.clone(),
            tables: run.schema_names(),
        },
        hardware: hardware_summary,
        signposts: signpost_summary,
        containment,
        caveats: TraceCaveats::default(),
        notes,
    })
}

fn check_table(
    run: &TocRun,
    table: &IntervalTable,
    kind: TableKind,
    which: &'static str,
) -> Result<(), TraceError> {
    if table.kind != kind || !kind.accepts(&table.schema) {
        return Err(TraceError::WrongTable { expected: kind.describe(), found: table.schema.clone() });
    }
    if let Some(table_run) = table.run_position() {
        if table_run != run.position {
            return Err(TraceError::RunMismatch { table: which, table_run, toc_run: run.position });
        }
    }
    Ok(())
}

fn kind_of(table: &IntervalTable, interval: &TraceInterval) -> IntervalKind {
    match table.kind {
        TableKind::NeuralEngineHardware => IntervalKind::classify(interval.label.as_deref()),
        TableKind::CoreMlSignpost => IntervalKind::classify(interval.state.as_deref()),
    }
}

fn is_idle(interval: &TraceInterval) -> bool {
    interval.state.as_deref().is_some_and(|s| s.trim().eq_ignore_ascii_case("idle"))
}

/// The (start, end) of a timed, non-idle interval.
fn span(interval: &TraceInterval) -> Option<(u64, u64)> {
    if is_idle(interval) {
        return None;
    }
    Some((interval.start_ns?, interval.end_ns()?))
}

fn summarize_table(
    table: &IntervalTable,
    recording_ns: Option<f64>,
    notes: &mut Vec<String>,
) -> TableSummary {
    let mut labels: BTreeMap<(Option<&str>, IntervalKind), LabelSummary> = BTreeMap::new();
    let mut states: BTreeMap<Option<&str>, u64> = BTreeMap::new();
    let mut rows_without_start = 0;
    let mut rows_without_duration = 0;
    let mut rows_idle = 0;
    for interval in &table.intervals {
        rows_without_start += u64::from(interval.start_ns.is_none());
        rows_without_duration += u64::from(interval.duration_ns.is_none());
        rows_idle += u64::from(is_idle(interval));
        *states.entry(interval.state.as_deref()).or_default() += 1;
        let kind = kind_of(table, interval);
        let entry = labels.entry((interval.label.as_deref(), kind)).or_insert_with(|| LabelSummary {
            label: interval.label.clone(),
            kind,
            count: 0,
            timed_count: 0,
            total_duration_ns: 0,
        });
        entry.count += 1;
        if let (Some(_), Some(duration)) = (span(interval), interval.duration_ns) {
            entry.timed_count += 1;
            entry.total_duration_ns = entry.total_duration_ns.saturating_add(duration);
        }
    }
    let all = activity(table.intervals.iter(), recording_ns);
    let inference = activity(
        table
            .intervals
            .iter()
            .filter(|i| !matches!(kind_of(table, i), IntervalKind::Load | IntervalKind::Compile)),
        recording_ns,
    );
    if table.intervals.is_empty() {
        notes.push(format!("The `{}` table has zero rows. {}", table.schema, CAVEAT_EMPTY_IS_NOT_ABSENCE));
    }
    if let (Some(end), Some(recording)) = (all.last_end_ns, recording_ns) {
        if end as f64 > recording {
            notes.push(format!(
                "Intervals of `{}` end at {end} ns, after the recording's {recording:.0} ns; \
                 the duty cycle can exceed 1.",
                table.schema
            ));
        }
    }
    TableSummary {
        kind: table.kind,
        schema: table.schema.clone(),
        row_count: table.intervals.len() as u64,
        rows_without_start,
        rows_without_duration,
        rows_idle,
        by_label: labels.into_values().collect(),
        by_state: states
            .into_iter()
            .map(|(state, count)| StateCount { state: state.map(str::to_owned), count })
            .collect(),
        all,
        excluding_load_and_compile: inference,
    }
}

/// Sorts spans and merges overlapping or touching ones.
pub fn merge_spans(mut spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn activity<'a>(
    intervals: impl Iterator<Item = &'a TraceInterval>,
    recording_ns: Option<f64>,
) -> ActivityTotals {
    let spans: Vec<(u64, u64)> = intervals.filter_map(span).collect();
    let interval_count = spans.len() as u64;
    let active_ns = spans.iter().fold(0u64, |sum, (s, e)| sum.saturating_add(e - s));
    let first_start_ns = spans.iter().map(|s| s.0).min();
    let last_end_ns = spans.iter().map(|s| s.1).max();
    let busy_union_ns = merge_spans(spans).iter().fold(0u64, |sum, (s, e)| sum.saturating_add(e - s));
    let (duty_cycle_fraction, duty_cycle_missing_reason) = match recording_ns {
        Some(ns) if ns > 0.0 => (Some(busy_union_ns as f64 / ns), None),
        Some(_) => (None, Some("the TOC gives a zero recording duration".to_owned())),
        None => (None, Some("the TOC gives no recording duration".to_owned())),
    };
    ActivityTotals {
        interval_count,
        active_ns,
        busy_union_ns,
        duty_cycle_fraction,
        duty_cycle_missing_reason,
        first_start_ns,
        last_end_ns,
    }
}

fn containment(hardware: &IntervalTable, signposts: &IntervalTable) -> ContainmentSummary {
    let predictions = merge_spans(
        signposts
            .intervals
            .iter()
            .filter(|i| kind_of(signposts, i) == IntervalKind::Prediction)
            .filter_map(span)
            .collect(),
    );
    let mut hardware_intervals = 0;
    let mut within = 0;
    for interval in &hardware.intervals {
        if matches!(kind_of(hardware, interval), IntervalKind::Load | IntervalKind::Compile) {
            continue;
        }
        let Some((start, end)) = span(interval) else {
            continue;
        };
        hardware_intervals += 1;
        // The last merged span starting at or before `start` is the only candidate.
        let index = predictions.partition_point(|p| p.0 <= start);
        if index > 0 && predictions[index - 1].1 >= end {
            within += 1;
        }
    }
    ContainmentSummary { hardware_intervals, within_signpost_predictions: within }
}
