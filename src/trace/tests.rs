//! Behaviour tests of the trace parsers and summary against the synthetic fixtures.

use super::intervals::{IntervalKind, CAVEAT_GLOBAL_TABLE, CAVEAT_NOT_LATENCY};
use super::*;

pub(super) const TOC: &str = include_str!("../../fixtures/trace/synthetic_toc.xml");
pub(super) const ANE: &str = include_str!("../../fixtures/trace/synthetic_ane_hw_intervals.xml");
pub(super) const ANE_EMPTY: &str = include_str!("../../fixtures/trace/synthetic_ane_hw_intervals_empty.xml");
pub(super) const SIGNPOST: &str = include_str!("../../fixtures/trace/synthetic_coreml_os_signpost.xml");
pub(super) const RENAMED: &str = include_str!("../../fixtures/trace/synthetic_renamed_schema.xml");
pub(super) const TRUNCATED: &str = include_str!("../../fixtures/trace/malformed_truncated.xml");

fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/trace").join(name)
}

fn ane() -> IntervalTable {
    parse_interval_table_str(ANE, TableKind::NeuralEngineHardware).unwrap()
}

fn toc_run() -> TocRun {
    TraceToc::parse_str(TOC).unwrap().select_run(None).unwrap().clone()
}

const COLS5: &str = "<col><mnemonic>start</mnemonic><engineering-type>start-time</engineering-type></col>\
<col><mnemonic>duration</mnemonic><engineering-type>duration</engineering-type></col>\
<col><mnemonic>channel-name</mnemonic><engineering-type>ane-event-name</engineering-type></col>\
<col><mnemonic>label</mnemonic><engineering-type>formatted-label</engineering-type></col>\
<col><mnemonic>state</mnemonic><engineering-type>gpu-state</engineering-type></col>";

/// A hardware export with the five standard columns and the given rows.
fn hw(rows: &str) -> String {
    format!(
        "<trace-query-result><node xpath=\"//trace-toc[1]/run[1]/data[1]/table[2]\">\
         <schema name=\"ane-hw-intervals\">{COLS5}</schema>{rows}</node></trace-query-result>"
    )
}

fn hw_table(rows: &str) -> Result<IntervalTable, TraceError> {
    parse_interval_table_str(&hw(rows), TableKind::NeuralEngineHardware)
}

fn row(start: u64, duration: u64, label: &str, state: &str) -> String {
    format!(
        "<row><start-time>{start}</start-time><duration>{duration}</duration>\
         <ane-event-name>Apple Neural Engine</ane-event-name>\
         <formatted-label fmt=\"{label}\"/><gpu-state fmt=\"{state}\"/></row>"
    )
}

// ---- TOC ----

#[test]
fn toc_reads_template_duration_target_and_tables() {
    let run = toc_run();
    assert_eq!(run.number, Some(1));
    assert_eq!(run.position, 1);
    assert_eq!(run.template_name.as_deref(), Some("Core ML"));
    assert_eq!(run.duration_s, Some(3.0));
    assert_eq!(run.start_date.as_deref(), Some("2026-11-29T10:00:00.000+01:00"));
    assert_eq!(run.end_reason.as_deref(), Some("Time limit reached"));
    let target = run.target_process.as_ref().unwrap();
    assert_eq!(target.pid, Some(4242));
    assert_eq!(target.name.as_deref(), Some("laya-bench"));
    assert_eq!(target.attach_type.as_deref(), Some("attached"));
    assert_eq!(run.schema_names(), ["coreml-os-signpost", "ane-hw-intervals", "metal-gpu-intervals"]);
    assert_eq!(run.table_of(TableKind::NeuralEngineHardware).unwrap().position, 2);
}

#[test]
fn toc_never_keeps_environment_device_name_or_process_paths() {
    let toc = TraceToc::parse_str(TOC).unwrap();
    let json = serde_json::to_string(&toc).unwrap();
    assert!(!json.contains("MUST-NOT-APPEAR"), "{json}");
    assert!(!json.contains("SYNTHETIC_SECRET"), "{json}");
}

#[test]
fn toc_export_xpath_uses_only_toc_run_number_and_allow_listed_schema() {
    let run = toc_run();
    assert_eq!(
        run.export_xpath(TableKind::NeuralEngineHardware).unwrap(),
        "/trace-toc/run[@number=\"1\"]/data/table[@schema=\"ane-hw-intervals\"]"
    );
    let mut no_signposts = run.clone();
    no_signposts.tables.retain(|t| t.schema != "coreml-os-signpost");
    assert_eq!(no_signposts.export_xpath(TableKind::CoreMlSignpost), None);
}

#[test]
fn toc_with_two_runs_needs_a_chosen_run_and_never_combines() {
    let xml = "<trace-toc><run number=\"1\"/><run number=\"2\"><info><summary>\
               <duration>2.5</duration></summary></info></run></trace-toc>";
    let toc = TraceToc::parse_str(xml).unwrap();
    assert!(matches!(
        toc.select_run(None),
        Err(TraceError::MultipleRuns { ref numbers }) if numbers == &[1, 2]
    ));
    let second = toc.select_run(Some(2)).unwrap();
    assert_eq!((second.position, second.duration_s), (2, Some(2.5)));
    assert!(matches!(toc.select_run(Some(3)), Err(TraceError::RunNotFound { number: 3, .. })));
    let empty = TraceToc::parse_str("<trace-toc/>").unwrap();
    assert!(matches!(empty.select_run(None), Err(TraceError::NoRun)));
}

#[test]
fn toc_accepts_all_processes_target() {
    let xml = "<trace-toc><run number=\"1\"><info><target><all-processes/></target>\
               </info></run></trace-toc>";
    let toc = TraceToc::parse_str(xml).unwrap();
    let target = toc.runs[0].target_process.as_ref().unwrap();
    assert_eq!(target.attach_type.as_deref(), Some("all-processes"));
    assert_eq!(target.pid, None);
}

#[test]
fn toc_rejects_bad_run_numbers_pids_and_durations() {
    for xml in [
        "<trace-toc><run number=\"1&quot;]\"/></trace-toc>",
        "<trace-toc><run number=\"1\"><info><target><process pid=\"-4\"/></target></info></run></trace-toc>",
        "<trace-toc><run number=\"1\"><info><summary><duration>NaN</duration></summary></info></run></trace-toc>",
        "<trace-toc><run number=\"1\"><info><summary><duration>-1</duration></summary></info></run></trace-toc>",
    ] {
        assert!(
            matches!(TraceToc::parse_str(xml), Err(TraceError::InvalidToc { .. })),
            "{xml}"
        );
    }
}

#[test]
fn toc_rejects_a_table_export_given_as_toc() {
    assert!(matches!(TraceToc::parse_str(ANE), Err(TraceError::WrongDocument { expected: "trace-toc", .. })));
}

// ---- table parser ----

#[test]
fn refs_resolve_to_earlier_values() {
    let table = ane();
    assert_eq!(table.intervals.len(), 7);
    let second = &table.intervals[1];
    assert_eq!(second.start_ns, Some(510_000_000));
    assert_eq!(second.duration_ns, Some(2_545_917));
    assert_eq!(second.device.as_deref(), Some("Apple Neural Engine"));
    assert_eq!(second.label.as_deref(), Some("mobilenet_main Prediction"));
    assert_eq!(second.state.as_deref(), Some("Active"));
}

#[test]
fn refs_resolve_to_elements_nested_in_earlier_values() {
    let table = ane();
    // Row 6's label has no fmt; its text is a ref to the <string> inside row 1's label.
    assert_eq!(table.intervals[5].label.as_deref(), Some("mobilenet_main Prediction"));
    let signposts = parse_interval_table_str(SIGNPOST, TableKind::CoreMlSignpost).unwrap();
    assert_eq!(signposts.intervals.len(), 3);
}

#[test]
fn sentinel_gives_a_missing_value() {
    let table = ane();
    assert_eq!(table.intervals[3].state, None);
    assert_eq!(table.intervals[6].start_ns, None);
    assert_eq!(table.intervals[6].duration_ns, Some(1_000_000));
}

#[test]
fn zero_duration_is_not_available() {
    assert_eq!(ane().intervals[3].duration_ns, None);
}

#[test]
fn missing_trailing_fields_read_as_missing() {
    let fifth = &ane().intervals[4];
    assert_eq!(fifth.start_ns, Some(1_500_000_000));
    assert_eq!(fifth.duration_ns, Some(3_000_000));
    assert_eq!((&fifth.device, &fifth.label, &fifth.state), (&None, &None, &None));
}

#[test]
fn start_time_at_the_50_bit_maximum_is_not_available() {
    let table = hw_table(&row(xml::START_TIME_NA_NS, 5, "x Prediction", "Active")).unwrap();
    assert_eq!(table.intervals[0].start_ns, None);
    let table = hw_table(&row(xml::START_TIME_NA_NS - 1, 5, "x Prediction", "Active")).unwrap();
    assert_eq!(table.intervals[0].start_ns, Some(xml::START_TIME_NA_NS - 1));
}

#[test]
fn columns_map_by_position_even_when_two_share_an_engineering_type() {
    let xml = "<trace-query-result><node><schema name=\"ane-hw-intervals-internal\">\
        <col><mnemonic>start</mnemonic><engineering-type>start-time</engineering-type></col>\
        <col><mnemonic>gap</mnemonic><engineering-type>duration</engineering-type></col>\
        <col><mnemonic>duration</mnemonic><engineering-type>duration</engineering-type></col>\
        <col><mnemonic>nesting</mnemonic><engineering-type>metal-nesting-level</engineering-type></col>\
        <col><mnemonic>label</mnemonic><engineering-type>formatted-label</engineering-type></col>\
        </schema>\
        <row><start-time>10</start-time><duration>999</duration><duration>7</duration>\
        <metal-nesting-level>0</metal-nesting-level><formatted-label fmt=\"L Prediction\"/></row>\
        </node></trace-query-result>";
    let table = parse_interval_table_str(xml, TableKind::NeuralEngineHardware).unwrap();
    assert_eq!(table.schema, "ane-hw-intervals-internal");
    let only = &table.intervals[0];
    assert_eq!((only.start_ns, only.duration_ns), (Some(10), Some(7)));
    assert_eq!(only.label.as_deref(), Some("L Prediction"));
    assert_eq!(only.device, None);
}

#[test]
fn only_allow_listed_fields_survive_parsing() {
    let signposts = parse_interval_table_str(SIGNPOST, TableKind::CoreMlSignpost).unwrap();
    let json = serde_json::to_string(&signposts.intervals).unwrap();
    assert!(!json.contains("4242"), "{json}");
    assert!(!json.contains("Main Thread"), "{json}");
    let first = &signposts.intervals[0];
    assert_eq!(first.label.as_deref(), Some("mobilenet-1"));
    assert_eq!(first.state.as_deref(), Some("Load"));
    assert_eq!(first.device, None);
    let keys: Vec<String> = match serde_json::to_value(first).unwrap() {
        serde_json::Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("{other}"),
    };
    assert_eq!(keys, ["start_ns", "duration_ns", "device", "label", "state"]);
}

#[test]
fn unknown_ref_is_an_error() {
    let err = hw_table("<row><start-time>1</start-time><duration ref=\"99\"/></row>");
    assert!(matches!(err, Err(TraceError::UnknownRef { id: 99, .. })), "{err:?}");
}

#[test]
fn ref_to_an_enclosing_element_is_a_cycle_error() {
    let err = hw_table(
        "<row><start-time>1</start-time><duration>2</duration><ane-event-name>x</ane-event-name>\
         <formatted-label id=\"5\"><formatted-label ref=\"5\"/></formatted-label></row>",
    );
    assert!(matches!(err, Err(TraceError::RefCycle { id: 5, .. })), "{err:?}");
}

#[test]
fn duplicate_ids_are_an_error() {
    let err = hw_table("<row><start-time id=\"1\">1</start-time><duration id=\"1\">2</duration></row>");
    assert!(matches!(err, Err(TraceError::DuplicateId { id: 1, .. })), "{err:?}");
}

#[test]
fn ref_to_a_value_of_another_type_is_an_error() {
    let err = hw_table("<row><start-time id=\"1\">1</start-time><duration ref=\"1\"/></row>");
    assert!(matches!(err, Err(TraceError::RefTypeMismatch { .. })), "{err:?}");
}

#[test]
fn ref_chains_cannot_build_trees_deeper_than_the_cap() {
    let mut rows = String::from("<row><start-time>1</start-time><duration>2</duration><ane-event-name>a</ane-event-name><formatted-label id=\"1\">x</formatted-label></row>");
    for id in 2..200 {
        rows.push_str(&format!(
            "<row><start-time>1</start-time><duration>2</duration><ane-event-name>a</ane-event-name>\
             <formatted-label id=\"{id}\"><formatted-label ref=\"{}\"/></formatted-label></row>",
            id - 1
        ));
    }
    assert!(matches!(hw_table(&rows), Err(TraceError::Structure { .. })));
}

#[test]
fn value_whose_tag_differs_from_its_column_is_an_error() {
    let err = hw_table("<row><duration>1</duration><start-time>2</start-time></row>");
    assert!(matches!(err, Err(TraceError::Structure { .. })), "{err:?}");
}

#[test]
fn row_with_more_values_than_columns_is_an_error() {
    let mut r = row(1, 2, "x", "Active");
    r = r.replace("</row>", "<extra/></row>");
    assert!(matches!(hw_table(&r), Err(TraceError::Structure { .. })));
}

#[test]
fn non_integer_times_are_an_error() {
    for bad in ["1.5", "-3", "", "abc", "99999999999999999999999"] {
        let err = hw_table(&format!("<row><start-time>{bad}</start-time><duration>2</duration></row>"));
        assert!(matches!(err, Err(TraceError::InvalidValue { row: 1, .. })), "{bad}: {err:?}");
    }
}

#[test]
fn rows_before_the_schema_are_an_error() {
    let xml = "<trace-query-result><node><row><start-time>1</start-time></row>\
               <schema name=\"ane-hw-intervals\"/></node></trace-query-result>";
    assert!(matches!(
        parse_interval_table_str(xml, TableKind::NeuralEngineHardware),
        Err(TraceError::Structure { .. })
    ));
}

#[test]
fn empty_table_parses_to_zero_intervals() {
    let table = parse_interval_table_str(ANE_EMPTY, TableKind::NeuralEngineHardware).unwrap();
    assert!(table.intervals.is_empty());
    assert_eq!(table.columns.len(), 5);
}

#[test]
fn unknown_schema_lists_the_tables_found() {
    match parse_interval_table_str(RENAMED, TableKind::NeuralEngineHardware) {
        Err(TraceError::UnknownSchema { found, expected }) => {
            assert_eq!(found, ["neural-engine-hw-intervals-v2"]);
            assert_eq!(expected, ["ane-hw-intervals", "ane-hw-intervals-internal"]);
        }
        other => panic!("{other:?}"),
    }
    // A signpost export passed as the hardware table is refused the same way.
    let err = parse_interval_table_str(SIGNPOST, TableKind::NeuralEngineHardware).unwrap_err();
    assert!(err.to_string().contains("coreml-os-signpost"), "{err}");
}

#[test]
fn export_without_any_table_is_an_unknown_schema_error() {
    let err = parse_interval_table_str("<trace-query-result/>", TableKind::CoreMlSignpost);
    assert!(matches!(err, Err(TraceError::UnknownSchema { ref found, .. }) if found.is_empty()));
}

#[test]
fn renamed_time_column_is_a_missing_column_error() {
    let xml = "<trace-query-result><node><schema name=\"ane-hw-intervals\">\
        <col><mnemonic>begin</mnemonic><engineering-type>begin-time</engineering-type></col>\
        <col><mnemonic>duration</mnemonic><engineering-type>duration</engineering-type></col>\
        </schema></node></trace-query-result>";
    match parse_interval_table_str(xml, TableKind::NeuralEngineHardware) {
        Err(TraceError::MissingColumn { field, found, .. }) => {
            assert_eq!(field, "timestamp");
            assert_eq!(found, ["begin (begin-time)", "duration (duration)"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn two_tables_of_the_expected_kind_are_never_combined() {
    let node = hw("").replace("<trace-query-result>", "").replace("</trace-query-result>", "");
    let xml = format!("<trace-query-result>{node}{node}</trace-query-result>");
    assert!(matches!(
        parse_interval_table_str(&xml, TableKind::NeuralEngineHardware),
        Err(TraceError::MultipleTables { count: 2, .. })
    ));
}

#[test]
fn truncated_file_is_a_malformed_error() {
    let err = parse_interval_table_str(TRUNCATED, TableKind::NeuralEngineHardware).unwrap_err();
    assert!(matches!(err, TraceError::Malformed { .. }), "{err:?}");
}

#[test]
fn toc_given_as_table_export_is_a_wrong_document_error() {
    assert!(matches!(
        parse_interval_table_str(TOC, TableKind::NeuralEngineHardware),
        Err(TraceError::WrongDocument { .. })
    ));
}

#[test]
fn entities_in_labels_are_decoded() {
    let table = hw_table(&row(1, 2, "a &amp; b &#x26; c Prediction", "Active")).unwrap();
    assert_eq!(table.intervals[0].label.as_deref(), Some("a & b & c Prediction"));
}

#[test]
fn node_xpath_names_the_run_position() {
    assert_eq!(ane().run_position(), Some(1));
}

// ---- summary ----

#[test]
fn summary_counts_labels_and_unions_overlapping_busy_time() {
    let summary = summarize(&toc_run(), &ane(), None).unwrap();
    let hw = &summary.hardware;
    assert_eq!(hw.row_count, 7);
    assert_eq!(hw.rows_without_start, 1);
    assert_eq!(hw.rows_without_duration, 1);
    assert_eq!(hw.all.interval_count, 5);
    assert_eq!(hw.all.active_ns, 10_091_834);
    assert_eq!(hw.all.busy_union_ns, 9_091_834);
    let duty = hw.all.duty_cycle_fraction.unwrap();
    assert!((duty - 9_091_834.0 / 3e9).abs() < 1e-15, "{duty}");
    assert_eq!(hw.all.first_start_ns, Some(500_000_000));
    assert_eq!(hw.all.last_end_ns, Some(2_001_000_000));
    let prediction =
        hw.by_label.iter().find(|l| l.label.as_deref() == Some("mobilenet_main Prediction")).unwrap();
    assert_eq!(prediction.kind, IntervalKind::Prediction);
    assert_eq!((prediction.count, prediction.timed_count), (5, 4));
    assert_eq!(prediction.total_duration_ns, 7_091_834);
    let load = hw.by_label.iter().find(|l| l.kind == IntervalKind::Load).unwrap();
    assert_eq!((load.count, load.timed_count), (1, 0));
    let unlabelled = hw.by_label.iter().find(|l| l.label.is_none()).unwrap();
    assert_eq!(unlabelled.kind, IntervalKind::Unlabelled);
    assert_eq!(
        hw.by_state.iter().map(|s| (s.state.as_deref(), s.count)).collect::<Vec<_>>(),
        [(None, 2), (Some("Active"), 5)]
    );
}

#[test]
fn summary_reports_recording_template_duration_and_target() {
    let summary = summarize(&toc_run(), &ane(), None).unwrap();
    assert_eq!(summary.schema_version, 1);
    let rec = &summary.recording;
    assert_eq!(rec.template_name.as_deref(), Some("Core ML"));
    assert_eq!(rec.duration_s, Some(3.0));
    assert_eq!(rec.target_process.as_ref().unwrap().pid, Some(4242));
    assert_eq!(rec.run_number, Some(1));
}

#[test]
fn summary_always_states_the_global_table_and_latency_caveats() {
    let summary = summarize(&toc_run(), &ane(), None).unwrap();
    let caveats = &summary.caveats;
    assert!(!caveats.hardware_rows_have_process_identity);
    assert!(!caveats.hardware_rows_have_model_identity);
    assert!(!caveats.intervals_are_latency_results);
    assert!(caveats.statements.iter().any(|s| s == CAVEAT_GLOBAL_TABLE));
    assert!(caveats.statements.iter().any(|s| s == CAVEAT_NOT_LATENCY));
    let json = serde_json::to_string(&summary).unwrap();
    assert!(json.contains("\"intervals_are_latency_results\":false"));
}

#[test]
fn zero_interval_trace_gives_zero_activity_and_a_note() {
    let empty = parse_interval_table_str(ANE_EMPTY, TableKind::NeuralEngineHardware).unwrap();
    let summary = summarize(&toc_run(), &empty, None).unwrap();
    let all = &summary.hardware.all;
    assert_eq!((all.interval_count, all.active_ns, all.busy_union_ns), (0, 0, 0));
    assert_eq!(all.duty_cycle_fraction, Some(0.0));
    assert_eq!((all.first_start_ns, all.last_end_ns), (None, None));
    assert!(summary.hardware.by_label.is_empty());
    assert!(summary.notes.iter().any(|n| n.contains("zero rows")));
}

#[test]
fn load_and_compile_intervals_are_kept_out_of_inference_time() {
    let rows = [
        row(0, 100, "m Prediction", "Active"),
        row(50, 100, "m Load", "Active"),
        row(1000, 10, "m Compile", "Active"),
        row(2000, 10, "encoder_main__Op0_AneInference", "Active"),
    ]
    .concat();
    let summary = summarize(&toc_run(), &hw_table(&rows).unwrap(), None).unwrap();
    assert_eq!(summary.hardware.all.busy_union_ns, 150 + 10 + 10);
    let inference = &summary.hardware.excluding_load_and_compile;
    assert_eq!(inference.interval_count, 2);
    assert_eq!(inference.busy_union_ns, 110);
}

#[test]
fn idle_state_rows_are_not_busy_time() {
    let rows = [row(0, 100, "p Prediction", "Active"), row(0, 1000, "p Prediction", "Idle")].concat();
    let summary = summarize(&toc_run(), &hw_table(&rows).unwrap(), None).unwrap();
    assert_eq!(summary.hardware.rows_idle, 1);
    assert_eq!(summary.hardware.all.busy_union_ns, 100);
}

#[test]
fn missing_recording_duration_gives_null_duty_cycle_with_reason() {
    let mut run = toc_run();
    run.duration_s = None;
    let summary = summarize(&run, &ane(), None).unwrap();
    assert_eq!(summary.hardware.all.duty_cycle_fraction, None);
    assert!(summary.hardware.all.duty_cycle_missing_reason.is_some());
}

#[test]
fn intervals_past_the_recording_end_are_noted() {
    let rows = row(2_999_999_000, 5_000, "p Prediction", "Active");
    let summary = summarize(&toc_run(), &hw_table(&rows).unwrap(), None).unwrap();
    assert!(summary.notes.iter().any(|n| n.contains("after the recording")));
}

#[test]
fn signposts_are_summarized_and_hardware_containment_counted() {
    let signposts = parse_interval_table_str(SIGNPOST, TableKind::CoreMlSignpost).unwrap();
    let summary = summarize(&toc_run(), &ane(), Some(&signposts)).unwrap();
    let sp = summary.signposts.as_ref().unwrap();
    assert_eq!(sp.row_count, 3);
    assert_eq!(sp.all.busy_union_ns, 90_000_000 + 4_000_000 + 3_000_000);
    assert_eq!(sp.excluding_load_and_compile.busy_union_ns, 7_000_000);
    let kinds: Vec<_> = sp.by_label.iter().map(|l| (l.kind, l.count)).collect();
    assert_eq!(kinds, [(IntervalKind::Prediction, 2), (IntervalKind::Load, 1)]);
    let containment = summary.containment.unwrap();
    assert_eq!(containment.hardware_intervals, 5);
    assert_eq!(containment.within_signpost_predictions, 2);
}

#[test]
fn tables_swapped_between_arguments_are_rejected() {
    let signposts = parse_interval_table_str(SIGNPOST, TableKind::CoreMlSignpost).unwrap();
    assert!(matches!(summarize(&toc_run(), &signposts, None), Err(TraceError::WrongTable { .. })));
    assert!(matches!(summarize(&toc_run(), &ane(), Some(&ane())), Err(TraceError::WrongTable { .. })));
}

#[test]
fn table_from_another_run_is_rejected() {
    let other_run = ANE.replace("run[1]", "run[2]");
    let table = parse_interval_table_str(&other_run, TableKind::NeuralEngineHardware).unwrap();
    assert!(matches!(
        summarize(&toc_run(), &table, None),
        Err(TraceError::RunMismatch { table_run: 2, toc_run: 1, .. })
    ));
}

#[test]
fn table_missing_from_the_toc_is_noted() {
    let mut run = toc_run();
    run.tables.retain(|t| t.schema != "ane-hw-intervals");
    let summary = summarize(&run, &ane(), None).unwrap();
    assert!(summary.notes.iter().any(|n| n.contains("does not list")));
}

#[test]
fn merge_spans_joins_overlapping_and_touching_ranges() {
    let merged = intervals::merge_spans(vec![(10, 20), (0, 5), (5, 8), (15, 30), (40, 41)]);
    assert_eq!(merged, [(0, 8), (10, 30), (40, 41)]);
}

#[test]
fn summary_round_trips_through_json_with_units_in_field_names() {
    let summary = summarize(&toc_run(), &ane(), None).unwrap();
    let value = serde_json::to_value(&summary).unwrap();
    let all = &value["hardware"]["all"];
    for key in ["active_ns", "busy_union_ns", "duty_cycle_fraction", "first_start_ns"] {
        assert!(all.get(key).is_some(), "{key}");
    }
    assert!(value["recording"].get("duration_s").is_some());
    let back: TraceSummary = serde_json::from_value(value).unwrap();
    assert_eq!(back, summary);
}

// ---- files ----

#[test]
fn summarize_files_reads_the_fixture_exports() {
    let hardware = fixture_path("synthetic_ane_hw_intervals.xml");
    let toc = fixture_path("synthetic_toc.xml");
    let signposts = fixture_path("synthetic_coreml_os_signpost.xml");
    let summary = summarize_files(SummarizeInputs {
        hardware_xml: &hardware,
        toc_xml: &toc,
        signpost_xml: Some(&signposts),
        run_number: None,
    })
    .unwrap();
    assert_eq!(summary.hardware.all.busy_union_ns, 9_091_834);
    assert!(summary.signposts.is_some());
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let missing = fixture_path("does-not-exist.xml");
    let err = read_interval_table(&missing, TableKind::NeuralEngineHardware).unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }));
    assert!(err.to_string().contains("does-not-exist.xml"), "{err}");
}
