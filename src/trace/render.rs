//! The human-readable `trace summarize` text: the caveats first, then the recording, each
//! table by label with its activity totals, the containment count and the notes.

use super::intervals::{ActivityTotals, TableSummary};
use super::TraceSummary;
use crate::report::Render;

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn activity_line(what: &str, a: &ActivityTotals, recording_s: Option<f64>) -> String {
    let duty = match (a.duty_cycle_fraction, recording_s) {
        (Some(f), Some(s)) => format!("duty cycle {:.3} % of the {s:.3} s recording", f * 100.0),
        (Some(f), None) => format!("duty cycle {:.3} %", f * 100.0),
        (None, _) => {
            format!(
                "duty cycle n/a ({})",
                a.duty_cycle_missing_reason.as_deref().unwrap_or("no reason given")
            )
        }
    };
    format!(
        "  {what}: {} intervals · active {} · busy union {} · {duty}\n",
        a.interval_count,
        ms(a.active_ns),
        ms(a.busy_union_ns)
    )
}

fn render_table(title: &str, t: &TableSummary, recording_s: Option<f64>) -> String {
    let mut out = format!(
        "{title} (`{}`): {} rows ({} without start, {} without duration, {} idle)\n",
        t.schema, t.row_count, t.rows_without_start, t.rows_without_duration, t.rows_idle
    );
    let width = t.by_label.iter().map(|l| l.label.as_deref().unwrap_or("(no label)").chars().count()).max();
    let width = width.unwrap_or(0).max(5);
    out.push_str(&format!(
        "  {:<width$}  {:<10}  {:>5}  {:>5}  {:>12}\n",
        "label", "kind", "rows", "timed", "total"
    ));
    for l in &t.by_label {
        let kind =
            serde_json::to_value(l.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        out.push_str(&format!(
            "  {:<width$}  {:<10}  {:>5}  {:>5}  {:>12}\n",
            l.label.as_deref().unwrap_or("(no label)"),
            kind,
            l.count,
            l.timed_count,
            ms(l.total_duration_ns)
        ));
    }
    out.push_str(&activity_line("all", &t.all, recording_s));
    out.push_str(&activity_line("without load/compile", &t.excluding_load_and_compile, recording_s));
    out
}

impl Render for TraceSummary {
    /// The human-readable summary: the caveats first, then the recording, the tables, the
    /// containment count and the notes.
    fn terminal(&self) -> String {
        let s = self;
        let mut out = String::from("Caveats:\n");
        for statement in &s.caveats.statements {
            out.push_str(&format!("  - {statement}\n"));
        }
        let r = &s.recording;
        let unknown = || "unknown".to_owned();
        out.push_str(&format!(
            "\nRecording: run {} · template {} · duration {}\n",
            r.run_number.map(|n| n.to_string()).unwrap_or_else(unknown),
            r.template_name.as_deref().map(|t| format!("\"{t}\"")).unwrap_or_else(unknown),
            r.duration_s.map(|d| format!("{d:.3} s")).unwrap_or_else(unknown),
        ));
        let target = match &r.target_process {
            Some(p) => format!(
                "{} (pid {}, {})",
                p.name.as_deref().unwrap_or("unnamed"),
                p.pid.map(|p| p.to_string()).unwrap_or_else(unknown),
                p.attach_type.as_deref().unwrap_or("how targeted unknown")
            ),
            None => unknown(),
        };
        out.push_str(&format!("  target process: {target}\n"));
        if let Some(start) = &r.start_date {
            out.push_str(&format!("  started: {start}"));
            if let Some(reason) = &r.end_reason {
                out.push_str(&format!(" · ended: {reason}"));
            }
            out.push('\n');
        }
        out.push_str(&format!("  tables: {}\n\n", r.tables.join(", ")));
        out.push_str(&render_table("Neural Engine hardware intervals", &s.hardware, r.duration_s));
        if let Some(signposts) = &s.signposts {
            out.push('\n');
            out.push_str(&render_table("Core ML signposts", signposts, r.duration_s));
        }
        if let Some(c) = &s.containment {
            out.push_str(&format!(
                "\nContainment: {} of {} timed hardware intervals (without load/compile) lie inside this \
             recording's signposted predictions\n",
                c.within_signpost_predictions, c.hardware_intervals
            ));
        }
        if !s.notes.is_empty() {
            out.push_str("\nNotes:\n");
            for note in &s.notes {
                out.push_str(&format!("  - {note}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::report::Render;
    use crate::trace::{summarize_files, SummarizeInputs};
    use std::path::Path;

    #[test]
    fn the_human_summary_puts_the_caveats_first_and_reports_the_fixture_totals() {
        let summary = summarize_files(SummarizeInputs {
            hardware_xml: Path::new("fixtures/trace/synthetic_ane_hw_intervals.xml"),
            toc_xml: Path::new("fixtures/trace/synthetic_toc.xml"),
            signpost_xml: Some(Path::new("fixtures/trace/synthetic_coreml_os_signpost.xml")),
            run_number: None,
        })
        .unwrap();
        let text = summary.terminal();
        assert!(
            text.starts_with("Caveats:\n  - The Neural Engine hardware-intervals table is global"),
            "{text}"
        );
        assert!(text.find("never latency results").unwrap() < text.find("Recording:").unwrap());
        assert!(text.contains("template \"Core ML\" · duration 3.000 s"), "{text}");
        assert!(text.contains("laya-bench (pid 4242, attached)"), "{text}");
        assert!(
            text.contains("all: 5 intervals · active 10.092 ms · busy union 9.092 ms · duty cycle 0.303 %"),
            "{text}"
        );
        assert!(text.contains("Containment: 2 of 5"), "{text}");
        assert!(text.contains("mobilenet_main Prediction"), "{text}");
    }
}
