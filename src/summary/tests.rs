//! The published table reproduced from a synthetic raw record, every audit failure detected,
//! the rejected 40,089 W run, speed records, corrections, exports and the comparison.

use super::*;
use crate::record::status::RunStatus;
use crate::record::synthetic::{records, RunShape};
use crate::record::{self, RawWriter, Record};
use crate::report::Render;
use crate::summary::report::{SummaryReport, SummarySettings, SCHEMA_VERSION};

/// Write the records with the real writer and read them back with the real reader.
fn round_trip(records: &[Record]) -> RawRun {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    w.sync().unwrap();
    record::read(&path).unwrap()
}

fn opts(bootstrap: usize) -> Options {
    Options { bootstrap, seed: 1, ..Options::default() }
}

fn summarize_records(records: &[Record], bootstrap: usize) -> RunSummary {
    summarize(&round_trip(records), "run.raw.jsonl", &opts(bootstrap)).unwrap()
}

fn published() -> Vec<Record> {
    records(&RunShape::published())
}

fn r3(x: Option<f64>) -> String {
    format!("{:.3}", x.unwrap())
}

#[test]
fn reproduces_the_published_table_at_its_rounding() {
    let recs = published();
    let calls = recs.iter().filter(|r| matches!(r, Record::Call { .. })).count();
    let samples = recs.iter().filter(|r| matches!(r, Record::Sample(_))).count();
    let blocks = recs.iter().filter(|r| matches!(r, Record::Block { .. })).count();
    assert_eq!((calls, samples, blocks), (65_598, 1_101, 18));
    let s = summarize_records(&recs, 2000);
    assert_eq!(s.status, SummaryStatus::Complete, "{:?} {:?}", s.status_reasons, s.audit);
    assert!(s.audit.iter().all(|c| c.outcome == CheckOutcome::Pass), "{:#?}", s.audit);
    let [mlx, fp16, w8] = [&s.arms[0], &s.arms[1], &s.arms[2]];
    let p = |a: &ArmSummary| format!("{:.2}", a.totals.mean_power_w.unwrap());
    assert_eq!((p(mlx).as_str(), p(fp16).as_str(), p(w8).as_str()), ("61.39", "30.75", "27.39"));
    let e = |a: &ArmSummary| format!("{:.4}", a.totals.energy_per_decision_j.unwrap());
    assert_eq!((e(mlx).as_str(), e(fp16).as_str(), e(w8).as_str()), ("0.4288", "0.1540", "0.1344"));
    let pct = |a: &ArmSummary| {
        let l = a.latency.unwrap();
        format!("{:.2} / {:.2}", l.p50_s * 1e3, l.p95_s * 1e3)
    };
    assert_eq!(pct(mlx), "6.94 / 7.39");
    assert_eq!(pct(fp16), "4.98 / 5.31");
    assert_eq!(pct(w8), "4.88 / 5.23");
    let r = |a: &ArmSummary| {
        let v = &a.vs_baseline;
        (r3(v.speed_gain), r3(v.power_ratio), r3(v.energy_gain))
    };
    assert_eq!(r(fp16), ("1.394".into(), "1.997".into(), "2.784".into()));
    assert_eq!(r(w8), ("1.423".into(), "2.241".into(), "3.189".into()));
    // S × R is E_base / E_arm, not S² × R.
    let v = &fp16.vs_baseline;
    let direct = mlx.totals.energy_per_decision_j.unwrap() / fp16.totals.energy_per_decision_j.unwrap();
    assert!((v.energy_gain.unwrap() - direct).abs() < 1e-12);
    // Every block is identical per arm, so every interval collapses onto the point estimate.
    let iv = fp16.intervals.energy_gain.unwrap();
    assert!((iv.low - v.energy_gain.unwrap()).abs() < 1e-9 && (iv.high - iv.low).abs() < 1e-9);
    assert!(s.warnings.iter().any(|w| w.contains("only 3 balanced cycles") && w.contains("background load")));
    assert_eq!(s.bootstrap.as_ref().unwrap().distinct_resamples, 10.0);
}

#[test]
fn the_40089_watt_sample_rejects_the_run_with_its_reason() {
    let mut shape = RunShape::published();
    // Sample 30 lies inside block 0 (samples 0..=19 cover idle window 0).
    shape.spike = Some((30, 40089.0));
    let recs = records(&shape);
    let s = summarize_records(&recs, 200);
    assert_eq!(s.status, SummaryStatus::Rejected);
    assert_eq!(s.rejections.len(), 1);
    let r = &s.rejections[0];
    assert_eq!(r.rejection.rule(), "above_cap");
    assert!(r.message.contains("40089 W, above the 500 W cap"), "{}", r.message);
    assert_eq!(r.evidence[0].raw.as_deref(), Some("40089"));
    assert!(s.status_reasons[0].contains("above_cap"), "{:?}", s.status_reasons);
    // Never an energy figure; time statistics remain.
    for a in &s.arms {
        assert_eq!(a.totals.energy_per_decision_j, None);
        assert_eq!(a.vs_baseline.energy_gain, None);
        assert!(a.totals.missing["mean_power_w"].contains("rejected"));
        assert!(a.intervals.energy_gain.is_none());
        assert!(a.intervals.speed_gain.is_some());
    }
    assert!(s.blocks.iter().all(|b| b.energy.is_none()));
    assert_eq!(r3(s.arms[1].vs_baseline.speed_gain), "1.394");
    let rules = audit_outcomes(&s);
    assert_eq!(rules["rejection_rules"], CheckOutcome::Pass);
    assert_eq!(rules["active_energy"], CheckOutcome::NotApplicable);
}

#[test]
fn a_footer_that_rejects_the_run_keeps_it_rejected() {
    // A sensor that stopped mid-run: the footer says rejected with a reason, and no sample rule
    // is violated by the samples that arrived.
    let mut recs = published();
    recs.retain(|r| !matches!(r, Record::BlockEnergy { .. }));
    if let Some(Record::Footer { status, reason, .. }) = recs.last_mut() {
        *status = RunStatus::Rejected;
        *reason =
            Some("the sensor stopped during block 17 (cycle 2); the rest of the plan was not run".into());
    }
    let s = summarize_records(&recs, 100);
    assert_eq!(s.status, SummaryStatus::Rejected, "{:?}", s.audit);
    assert!(s.status_reasons.iter().any(|r| r.contains("the sensor stopped")), "{:?}", s.status_reasons);
    assert!(s.arms.iter().all(|a| a.totals.mean_power_w.is_none()));
}

fn audit_outcomes(s: &RunSummary) -> std::collections::BTreeMap<String, CheckOutcome> {
    s.audit.iter().map(|c| (c.name.clone(), c.outcome)).collect()
}

fn failing(recs: &[Record]) -> (RunSummary, Vec<String>) {
    let s = summarize_records(recs, 100);
    let failed = s.audit.iter().filter(|c| c.outcome == CheckOutcome::Fail).map(|c| c.name.clone()).collect();
    (s, failed)
}

#[test]
fn a_tampered_energy_aggregate_fails_the_audit() {
    let mut recs = published();
    for r in &mut recs {
        if let Record::BlockEnergy { index: 4, energy: Some(e), .. } = r {
            e.energy_j *= 1.0 + 1e-6;
        }
    }
    let (s, failed) = failing(&recs);
    assert_eq!(failed, vec!["active_energy"]);
    assert_eq!(s.status, SummaryStatus::AuditFailed);
    assert!(s.arms.is_empty() && s.statistics_missing_reason.is_some());
    let c = s.audit.iter().find(|c| c.name == "active_energy").unwrap();
    assert!(c.detail.contains("block 4 energy_j"), "{}", c.detail);
    assert!(c.numbers["max_relative_difference"] > 9e-7);
    // An idle-subtracted energy with its sign flipped fails its own check.
    let mut recs = published();
    for r in &mut recs {
        if let Record::BlockEnergy { index: 2, energy: Some(e), .. } = r {
            e.incremental_energy_j = -e.incremental_energy_j;
        }
    }
    assert_eq!(failing(&recs).1, vec!["idle_subtracted_energy"]);
}

#[test]
fn a_dropped_call_record_fails_the_call_counts() {
    let mut recs = published();
    let i = recs.iter().position(|r| matches!(r, Record::Call { block: 7, .. })).unwrap();
    recs.remove(i);
    let (s, failed) = failing(&recs);
    assert_eq!(failed, vec!["call_counts"]);
    let c = s.audit.iter().find(|c| c.name == "call_counts").unwrap();
    assert!(c.detail.contains("block 7 claims 3993 calls but 3992 call records follow it"), "{}", c.detail);
    assert!(c.detail.contains("the footer claims 65598 calls, the record holds 65597"), "{}", c.detail);
}

#[test]
fn a_missing_footer_is_incomplete() {
    let mut recs = published();
    recs.pop();
    let s = summarize_records(&recs, 100);
    assert_eq!(s.status, SummaryStatus::Incomplete);
    assert_eq!(audit_outcomes(&s)["header_and_footer"], CheckOutcome::Fail);
    assert!(s.status_reasons[0].contains("no footer"), "{:?}", s.status_reasons);
    assert!(s.arms.is_empty());
}

#[test]
fn unbalanced_cycles_fail_the_audit() {
    // Drop the last block with its calls and energy: the last cycle is no longer whole.
    let mut recs = published();
    let last = 17;
    recs.retain(|r| {
        !matches!(r, Record::Block { index, .. } | Record::Call { block: index, .. } | Record::BlockEnergy { index, .. } if *index == last)
    });
    for r in &mut recs {
        if let Record::Footer { total_calls, .. } = r {
            *total_calls -= 2864;
        }
    }
    let (s, failed) = failing(&recs);
    assert!(failed.contains(&"balanced_cycles".to_string()), "{failed:?}");
    let c = s.audit.iter().find(|c| c.name == "balanced_cycles").unwrap();
    assert!(c.detail.contains("17 blocks recorded, 18 expected"), "{}", c.detail);
    // Blocks in the wrong order fail too.
    let mut recs = published();
    for r in &mut recs {
        if let Record::Block { index: 0, arm, .. } = r {
            *arm = "ane-w8".into();
        }
    }
    assert!(failing(&recs).1.contains(&"balanced_cycles".to_string()));
    // A garbled cycle count is refused without expanding it.
    let mut recs = published();
    if let Some(Record::Header(h)) = recs.first_mut() {
        h.plan.cycles = usize::MAX / 4;
    }
    let (s, failed) = failing(&recs);
    assert!(failed.contains(&"balanced_cycles".to_string()), "{failed:?}");
    let c = s.audit.iter().find(|c| c.name == "balanced_cycles").unwrap();
    assert!(c.detail.contains("far more than the 18 blocks recorded"), "{}", c.detail);
}

#[test]
fn an_unstable_call_fails_the_stability_check() {
    let mut recs = published();
    if let Some(Record::Call { stable, .. }) =
        recs.iter_mut().find(|r| matches!(r, Record::Call { block: 3, .. }))
    {
        *stable = false;
    }
    let (s, failed) = failing(&recs);
    assert_eq!(failed, vec!["stable_calls"]);
    let c = s.audit.iter().find(|c| c.name == "stable_calls").unwrap();
    assert!(c.detail.contains("block 3 claims 0 unstable calls, its call records hold 1"), "{}", c.detail);
}

#[test]
fn a_rejection_hidden_by_the_footer_fails_the_audit() {
    let mut shape = RunShape::published();
    shape.spike = Some((30, 40089.0));
    let mut recs = records(&shape);
    if let Some(Record::Footer { status, rejections, .. }) = recs.last_mut() {
        *status = RunStatus::Complete;
        rejections.clear();
    }
    let (s, failed) = failing(&recs);
    assert!(failed.contains(&"rejection_rules".to_string()), "{failed:?}");
    assert_eq!(s.status, SummaryStatus::AuditFailed);
}

fn speed_shape() -> RunShape {
    RunShape { energy: false, ..RunShape::published() }
}

#[test]
fn a_speed_record_gets_time_statistics_and_speed_ratios_only() {
    let s = summarize_records(&records(&speed_shape()), 300);
    assert_eq!(s.status, SummaryStatus::Complete, "{:?}", s.status_reasons);
    let o = audit_outcomes(&s);
    assert_eq!(o["call_counts"], CheckOutcome::Pass);
    assert_eq!(o["active_energy"], CheckOutcome::NotApplicable);
    let fp16 = &s.arms[1];
    assert_eq!(r3(fp16.vs_baseline.speed_gain), "1.394");
    assert_eq!(fp16.vs_baseline.power_ratio, None);
    assert!(fp16.totals.missing["energy_per_decision_j"].contains("speed record has no power samples"));
    assert!(fp16.intervals.speed_gain.is_some() && fp16.intervals.energy_gain.is_none());
    assert!(fp16.intervals.missing["energy_gain"].contains("speed record"));
    assert!(s.blocks.iter().all(|b| b.energy_missing_reason.as_deref().unwrap().contains("speed record")));
}

#[test]
fn stolen_cpu_time_is_summed_per_arm_and_warned_about_from_two_percent() {
    use crate::report::steal::StealTicks;
    let mut recs = records(&speed_shape());
    // no counters (older records): no warning
    let s = summarize_records(&recs, 0);
    assert!(!s.warnings.iter().any(|w| w.contains("steal")), "{:?}", s.warnings);
    // mlx-fp16's six blocks lose 1 % each, ane-fp16's 0.5 % and 4.5 % alternately (2.5 % in
    // all), ane-w8's nothing
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    for r in &mut recs {
        if let Record::Block { arm, host_steal, .. } = r {
            let n = seen.entry(arm.clone()).or_default();
            let steal_ticks = match (arm.as_str(), *n % 2) {
                ("ane-fp16", 0) => 5,
                ("ane-fp16", _) => 45,
                ("ane-w8", _) => 0,
                _ => 10,
            };
            *n += 1;
            *host_steal = Some(StealTicks { steal_ticks, cpu_ticks: 1000 });
        }
    }
    let names: Vec<String> = seen.keys().cloned().collect();
    assert_eq!(names, ["ane-fp16", "ane-w8", "mlx-fp16"]);
    let s = summarize_records(&recs, 0);
    assert_eq!(s.status, SummaryStatus::Complete, "{:?}", s.status_reasons);
    let warned: Vec<&String> = s.warnings.iter().filter(|w| w.contains("steal")).collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("2.5 %") && warned[0].contains("arm `ane-fp16`"), "{}", warned[0]);
}

#[test]
fn the_bootstrap_is_deterministic_for_a_seed() {
    let run = round_trip(&published());
    let with = |seed| summarize(&run, "x", &Options { bootstrap: 500, seed, ..Options::default() }).unwrap();
    let a = with(42);
    assert_eq!(a, with(42));
    assert_eq!(a.bootstrap.as_ref().unwrap().seed, 42);
    assert_eq!(a.bootstrap.as_ref().unwrap().resamples, 500);
}

#[test]
fn corrections_are_appended_and_shown_and_the_original_bytes_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    for r in records(&speed_shape()) {
        w.write(&r).unwrap();
    }
    w.sync().unwrap();
    drop(w);
    let before = std::fs::read(&path).unwrap();
    record::append_correction(&path, "host.cpu_model", "the machine was an M3 Max with 40 GPU cores", 1.9e9)
        .unwrap();
    let after = std::fs::read(&path).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "the original bytes are unchanged");
    let tail = String::from_utf8_lossy(&after[before.len()..]).into_owned();
    assert!(
        tail.starts_with(
            r#"{"record":"metadata_correction","timestamp_unix_s":1900000000.0,"field":"host.cpu_model""#
        ),
        "{tail}"
    );
    let run = record::read(&path).unwrap();
    assert!(run.complete, "a correction after the footer keeps the record complete");
    let s = summarize(&run, "run", &opts(0)).unwrap();
    assert_eq!(s.metadata_corrections.len(), 1);
    assert_eq!(s.metadata_corrections[0].field, "host.cpu_model");
    assert_eq!(s.status, SummaryStatus::Complete);
    let md = report(vec![s]).markdown();
    assert!(md.contains("### Metadata corrections"), "{md}");
    assert!(
        md.contains("- `host.cpu_model` (at Unix 1900000000 s): the machine was an M3 Max with 40 GPU cores")
    );
    // A cut last line refuses the append.
    std::fs::write(&path, [before.as_slice(), b"{\"record\":\"ca"].concat()).unwrap();
    assert!(record::append_correction(&path, "host.os", "x", 1.0).is_err());
}

fn report(runs: Vec<RunSummary>) -> SummaryReport {
    SummaryReport {
        schema_version: SCHEMA_VERSION,
        tool: crate::record::provenance::ToolInfo::current(),
        settings: SummarySettings {
            bootstrap_resamples: 100,
            seed: 1,
            level: 0.95,
            target: Some(10.0),
            baseline: None,
        },
        comparison: None,
        regression: vec![],
        runs,
        plots: vec![],
    }
}

#[test]
fn markdown_and_csv_carry_the_published_style_table() {
    let s =
        summarize(&round_trip(&published()), "run.raw.jsonl", &Options { target: Some(10.0), ..opts(200) })
            .unwrap();
    let md = report(vec![s.clone()]).markdown();
    for want in [
        "## Summary of `run.raw.jsonl`: COMPLETE",
        "| metric | `mlx-fp16` | `ane-fp16` | `ane-w8` |",
        "| precision | fp16 | fp16 | fp16 |",
        "| model | `synthetic:multilingual` 000000000000 |",
        "Context: macos aarch64, laya-bench ",
        "| P50 / P95 / P99 | 6.94 / 7.39 / 7.56 ms | 4.98 / 5.31 / 5.42 ms | 4.88 / 5.23 / 5.33 ms |",
        // The synthetic shape is the published PSTR run's: the whole system.
        "| mean whole-system power [W] | 61.39 [61.39–61.39] | 30.75 [30.75–30.75] | 27.39 [27.39–27.39] |",
        "| whole-system energy / decision [J] |",
        "| energy gain S × R | 1.000 [1.000–1.000] | 2.784 [2.784–2.784] | 3.189 [3.189–3.189] |",
        "| `balanced_cycles` | pass |",
        "### Claim rule (target 10×)",
        // 3 cycles give 10 distinct resamples: the bracket is not called a 95 % interval.
        "### Results (baseline `mlx-fp16`; [range of 10 possible resamples, not a 95 % interval])",
        "- `ane-w8`: 10× not reached: measured energy gain 3.189× for the whole system (3.189–3.189, the range of 10 possible resamples, not a 95 % interval); the lower bound 3.189 is below 10.",
        "different boundary from whole-system energy",
        "Power boundary `whole-system`: P is whole-system power [W], E whole-system energy [J]",
    ] {
        assert!(md.contains(want), "missing {want:?} in\n{md}");
    }
    let csv = report(vec![s]).csv().unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 18);
    // the run's context after the arm's name, then the figures
    assert!(lines[0].starts_with(&format!(
        "run,source,status,block,cycle,arm,{},decisions,",
        crate::report::context::CSV_COLUMNS
    )));
    let first: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(&first[..6], &["0", "run.raw.jsonl", "complete", "0", "0", "mlx-fp16"]);
    let column = |name: &str| lines[0].split(',').position(|c| c == name).unwrap();
    assert_eq!(first[column("model_spec")], "synthetic:multilingual");
    assert_eq!(first[column("os")], "macos");
    assert_eq!(first[column("started_utc")], "2027-01-15T08:00:00Z");
    assert_eq!(first[column("boundary")], "whole-system");
    assert_eq!(first[column("decisions")], "2864");
    let mean_power: f64 = first[column("mean_power_w")].parse().unwrap();
    assert!((mean_power - 61.3905).abs() < 1e-9, "{mean_power}");
    assert!(lines[0].ends_with(",energy_missing_reason,power_boundary,identical_to"), "{}", lines[0]);
    assert_eq!(first[first.len() - 2..], ["whole-system", ""]);
}

#[test]
fn several_runs_are_compared_and_disjoint_intervals_flagged() {
    // Two runs with different cycles (so intervals have width), one where ANE W8 draws more.
    let varied = |w8_watts: [f64; 3]| {
        let recs = records(&RunShape::published());
        let run = round_trip(&recs);
        let mut s = summarize(&run, "a", &opts(300)).unwrap();
        // Rescale block energies per cycle through the summary's own blocks, then recompute
        // intervals exactly as summarize does (the bootstrap only reads block sums).
        for b in &mut s.blocks {
            if b.arm == "ane-w8" {
                let e = b.energy.as_mut().unwrap();
                let k = w8_watts[b.cycle as usize] / 27.3915;
                e.energy_j *= k;
                e.incremental_energy_j = e.energy_j - e.idle_energy_j;
            }
        }
        let names: Vec<String> = s.arms.iter().map(|a| a.name.clone()).collect();
        let table = cycle_table(&s, &names, 0, true);
        let iv = bootstrap::intervals(bootstrap::resample(&table, 300, 1), 0.95, |q| q.into());
        for (a, i) in s.arms.iter_mut().zip(iv) {
            a.intervals = i;
        }
        s
    };
    let a = varied([27.0, 27.4, 27.8]);
    let mut b = varied([35.0, 35.5, 36.0]);
    b.source = "b".into();
    let c = compare::compare(&[a.clone(), b]).unwrap();
    let row = c.rows.iter().find(|r| r.arm == "ane-w8" && r.quantity == "energy_gain").unwrap();
    assert_eq!(row.non_overlapping, vec![(0, 1)]);
    assert!(c.intervals_disjoint);
    let same = compare::compare(&[a.clone(), a.clone()]).unwrap();
    assert!(!same.intervals_disjoint);
    let md = c.to_markdown(&[a.clone(), a]);
    assert!(md.contains("**Intervals do not overlap**") && md.contains("⚠ disjoint: runs 0–1"), "{md}");
    // Quantities carry the main table's labels; times are shown in ms.
    assert!(md.contains("| t per decision [ms] |") && !md.contains("time_per_decision_s"), "{md}");
    let t_ms = format!("{:.3}", a_t_s(&c) * 1000.0);
    assert!(md.contains(&format!("| {t_ms} [")), "{md}");
}

/// The first compared time per decision, in seconds.
fn a_t_s(c: &crate::summary::report::Comparison) -> f64 {
    let row = c.rows.iter().find(|r| r.quantity == "time_per_decision_s").unwrap();
    row.runs[0].value.unwrap()
}

#[test]
fn runs_of_other_arms_are_not_compared_and_a_bad_baseline_is_named() {
    let a = summarize_records(&published(), 0);
    let mut shape = RunShape::published();
    shape.arms[2].name = "other".into();
    let b = summarize_records(&records(&shape), 0);
    let e = compare::compare(&[a, b]).unwrap_err();
    assert!(e.to_string().contains("differ from"), "{e}");
    let run = round_trip(&published());
    let e = summarize(&run, "r", &Options { baseline: Some("nope".into()), ..opts(0) }).unwrap_err();
    assert!(e.to_string().contains("--baseline `nope` is not an arm"), "{e}");
    let s = summarize(&run, "r", &Options { baseline: Some("ane-w8".into()), ..opts(0) }).unwrap();
    assert_eq!(s.baseline, "ane-w8");
    assert_eq!(r3(s.arms[2].vs_baseline.energy_gain), "1.000");
}

/// The `record_integrity` check of a tampered record: whether it failed, and its detail.
fn integrity(recs: &[Record]) -> (SummaryStatus, String, f64) {
    let s = summarize_records(recs, 0);
    let c = s.audit.iter().find(|c| c.name == "record_integrity").unwrap().clone();
    assert_eq!(c.outcome, CheckOutcome::Fail, "{}", c.detail);
    (s.status, c.detail, c.numbers["first_bad_line"])
}

/// Index of the first call of block `b` and its file line (the header is line 1).
fn first_call(recs: &[Record], b: u32) -> usize {
    recs.iter().position(|r| matches!(r, Record::Call { block, .. } if *block == b)).unwrap()
}

#[test]
fn impossible_calls_fail_the_audit_naming_their_line() {
    // A 2^63 ns call inside its block.
    let mut recs = records(&speed_shape());
    let i = first_call(&recs, 1);
    if let Record::Call { duration_ns, .. } = &mut recs[i] {
        *duration_ns = 1 << 63;
    }
    let (status, detail, line) = integrity(&recs);
    assert_eq!(status, SummaryStatus::AuditFailed);
    assert_eq!(line, (i + 1) as f64, "{detail}");
    assert!(detail.starts_with(&format!("line {}: a call of block 1 spans", i + 1)), "{detail}");
    // A call longer than its block (block 0 lasts 20.0 s; the call 30 s, starting inside it).
    let mut recs = records(&speed_shape());
    let i = first_call(&recs, 0);
    if let Record::Call { duration_ns, .. } = &mut recs[i] {
        *duration_ns = 30_000_000_000;
    }
    assert!(integrity(&recs).1.contains("outside its block"));
    // A call that starts before the previous one ended.
    let mut recs = records(&speed_shape());
    let i = first_call(&recs, 2) + 1;
    let previous_start = match &recs[i - 1] {
        Record::Call { start_ns, .. } => *start_ns,
        _ => unreachable!(),
    };
    if let Record::Call { start_ns, .. } = &mut recs[i] {
        *start_ns = previous_start + 1;
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, (i + 1) as f64);
    assert!(detail.contains("before the previous call ended"), "{detail}");
    // A block whose steal is more than all its CPU time (100000 of 12640 ticks once read
    // "198.2 %" with every check passing).
    let mut recs = records(&speed_shape());
    let i = recs.iter().position(|r| matches!(r, Record::Block { index: 2, .. })).unwrap();
    if let Record::Block { host_steal, .. } = &mut recs[i] {
        *host_steal = Some(crate::report::steal::StealTicks { steal_ticks: 100_000, cpu_ticks: 12_640 });
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, (i + 1) as f64, "{detail}");
    assert!(detail.contains("block 2's host_steal has 100000 stolen ticks of 12640"), "{detail}");
}

#[test]
fn records_out_of_the_writers_order_fail_the_audit() {
    // A call line moved after its block's energy records.
    let mut recs = published();
    let i = first_call(&recs, 3);
    let call = recs.remove(i);
    let at = recs.iter().rposition(|r| matches!(r, Record::BlockEnergy { .. })).unwrap() + 1;
    recs.insert(at, call);
    let (status, detail, line) = integrity(&recs);
    assert_eq!(status, SummaryStatus::AuditFailed);
    assert_eq!(line, (at + 1) as f64, "{detail}");
    assert!(detail.contains("a call of block 3 outside its block's lines"), "{detail}");
    // A sample received before it was requested; a block that ends before it starts.
    let mut recs = published();
    let i = recs.iter().position(|r| matches!(r, Record::Sample(_))).unwrap();
    if let Record::Sample(s) = &mut recs[i] {
        s.t_request_ns = s.t_receive_ns + 1;
    }
    assert!(integrity(&recs).1.contains("received"));
    let mut recs = records(&speed_shape());
    let i = recs.iter().position(|r| matches!(r, Record::Block { index: 4, .. })).unwrap();
    if let Record::Block { start_ns, end_ns, .. } = &mut recs[i] {
        std::mem::swap(start_ns, end_ns);
    }
    assert!(integrity(&recs).1.contains(&format!("line {}: the block ends", i + 1)));
    // A record after the footer that is not a correction.
    let mut recs = records(&speed_shape());
    let w = recs[1].clone();
    recs.push(w);
    assert!(integrity(&recs).1.contains("a warmup record after the footer"));
    // The untampered records pass.
    let s = summarize_records(&records(&speed_shape()), 0);
    let c = s.audit.iter().find(|c| c.name == "record_integrity").unwrap();
    assert_eq!(c.outcome, CheckOutcome::Pass, "{}", c.detail);
}

#[test]
fn a_sample_without_its_raw_field_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.raw.jsonl");
    let mut w = RawWriter::create(&path).unwrap();
    for r in published() {
        w.write(&r).unwrap();
    }
    w.sync().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = lines.iter().position(|l| l.contains("\"record\":\"sample\"")).unwrap();
    let before = lines[i].clone();
    lines[i] = before.replace(",\"raw\":\"12.5\"", "");
    assert_ne!(lines[i], before, "{before}");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = record::read(&path).unwrap_err().to_string();
    assert!(e.contains(&format!("line {} is not a valid record", i + 1)) && e.contains("raw"), "{e}");
}

#[test]
fn the_report_compares_runs_with_statistics_and_names_the_others() {
    let complete = summarize_records(&published(), 0);
    let mut recs = published();
    recs.pop();
    let mut cut = summarize_records(&recs, 0);
    cut.source = "cut.raw.jsonl".into();
    let (one, warning) = super::report(vec![complete.clone()], &opts(0)).unwrap();
    assert!(one.comparison.is_none() && warning.is_none() && one.plots.is_empty());
    assert_eq!((one.settings.bootstrap_resamples, one.settings.seed), (0, 1));
    let (two, _) = super::report(vec![complete.clone(), complete.clone()], &opts(0)).unwrap();
    assert!(two.comparison.is_some());
    let (mixed, warning) = super::report(vec![complete.clone(), cut.clone()], &opts(0)).unwrap();
    assert!(mixed.comparison.is_none());
    assert_eq!(
        warning.unwrap(),
        "no side-by-side comparison: cut.raw.jsonl has no statistics (the record is incomplete: no figure is derived from it; its first 3 whole balanced cycles can be summarized with --whole-cycles)"
    );
    assert!(not_complete(std::slice::from_ref(&complete)).is_empty());
    let bad = not_complete(&[complete, cut.clone()]);
    assert_eq!(bad, [format!("cut.raw.jsonl: INCOMPLETE: {}", cut.status_reasons.join("; "))]);
}

fn whole(bootstrap: usize) -> Options {
    Options { whole_cycles: true, ..opts(bootstrap) }
}

/// The published run stopped (Ctrl-C) inside block 13, the second block of cycle 2.
fn stopped_in_cycle_2() -> Vec<Record> {
    crate::record::synthetic::interrupted(published(), 13)
}

#[test]
fn an_interrupted_record_names_its_whole_cycles_and_keeps_no_figure_without_the_flag() {
    let s = summarize_records(&stopped_in_cycle_2(), 100);
    assert_eq!(s.status, SummaryStatus::Incomplete);
    assert!(s.arms.is_empty() && s.whole_cycles.is_none());
    assert_eq!(
        s.statistics_missing_reason.as_deref(),
        Some("the record is incomplete: no figure is derived from it; its first 2 whole balanced cycles can be summarized with --whole-cycles")
    );
    // A record cut before its first cycle ended has none to offer.
    let s = summarize_records(&crate::record::synthetic::interrupted(published(), 5), 100);
    assert_eq!(
        s.statistics_missing_reason.as_deref(),
        Some("the record is incomplete: no figure is derived from it")
    );
}

#[test]
fn whole_cycles_of_an_interrupted_record_give_the_published_figures_audited_as_a_shorter_run() {
    let s = summarize(&round_trip(&stopped_in_cycle_2()), "cut.raw.jsonl", &whole(500)).unwrap();
    // Still incomplete (exit 1), but with figures from the first two cycles.
    assert_eq!(s.status, SummaryStatus::Incomplete);
    let w = s.whole_cycles.as_ref().expect("whole cycles summarized");
    assert_eq!((w.cycles_used, w.cycles_planned, w.blocks_used, w.blocks_recorded), (2, 3, 12, 14));
    assert!(w.usable);
    let outcome = |name: &str| w.audit.iter().find(|c| c.name == name).map(|c| c.outcome);
    for name in [
        "whole_cycles",
        "record_integrity",
        "balanced_cycles",
        "call_counts",
        "stable_calls",
        "idle_windows",
        "rejection_rules",
    ] {
        assert_eq!(outcome(name), Some(CheckOutcome::Pass), "{name}: {:#?}", w.audit);
    }
    for name in ["active_energy", "idle_power", "idle_subtracted_energy"] {
        assert_eq!(outcome(name), Some(CheckOutcome::NotApplicable), "{name}");
    }
    let first = &w.audit[0];
    assert!(
        first.detail.starts_with("the first 2 whole balanced cycles of the 3 planned, read as a run of 2 (12 blocks of the 14 recorded; the rest is left out); the footer says incomplete (interrupted by SIGINT (Ctrl-C) during block 13)"),
        "{}",
        first.detail
    );
    // The record's own audit still says why it is incomplete.
    assert_eq!(audit_outcomes(&s)["header_and_footer"], CheckOutcome::Fail);
    assert!(s.status_reasons.iter().any(|r| r.starts_with("--whole-cycles: the figures cover its first 2 whole balanced cycles of the 3 planned (12 blocks of the 14 recorded), audited as a run of 2 cycles;")), "{:?}", s.status_reasons);
    // The plan, blocks and bootstrap are those of the two cycles.
    assert_eq!((s.plan.cycles, s.plan.order.len(), s.blocks.len()), (2, 12, 12));
    assert_eq!(s.bootstrap.as_ref().map(|b| b.cycles), Some(2));
    // Every cycle of the synthetic run has the published means, so two give them too.
    let [mlx, fp16, w8] = [&s.arms[0], &s.arms[1], &s.arms[2]];
    let p = |a: &ArmSummary| format!("{:.2}", a.totals.mean_power_w.unwrap());
    assert_eq!((p(mlx).as_str(), p(fp16).as_str(), p(w8).as_str()), ("61.39", "30.75", "27.39"));
    let e = |a: &ArmSummary| format!("{:.4}", a.totals.energy_per_decision_j.unwrap());
    assert_eq!((e(mlx).as_str(), e(fp16).as_str(), e(w8).as_str()), ("0.4288", "0.1540", "0.1344"));
    let calls: u64 = s.blocks.iter().map(|b| b.decisions).sum();
    assert_eq!(calls, 2 * (2864 + 3993 + 4076) * 2);
    // The Markdown says which cycles the figures cover and shows their audit.
    let md = s.to_markdown(0.95);
    assert!(md.contains("**INCOMPLETE**: the record does not hold a finished run; the figures below cover its first 2 whole balanced cycles of 3 planned (`--whole-cycles`), audited as a run of 2 cycles."), "{md}");
    assert!(md.contains("### Audit of the first 2 whole balanced cycles (`--whole-cycles`)"), "{md}");
    assert!(md.contains("### Results (baseline `mlx-fp16`;"), "{md}");
}

#[test]
fn whole_cycles_make_no_claim_and_change_nothing_for_a_complete_record() {
    let o = Options { target: Some(2.0), ..whole(100) };
    let s = summarize(&round_trip(&stopped_in_cycle_2()), "cut", &o).unwrap();
    assert!(s.claim.is_none());
    assert!(
        s.warnings.iter().any(|w| w.starts_with("--target-gain: no claim is made from part of a run")),
        "{:?}",
        s.warnings
    );
    let run = round_trip(&published());
    let (with, without) =
        (summarize(&run, "r", &whole(100)).unwrap(), summarize(&run, "r", &opts(100)).unwrap());
    assert_eq!(with, without);
    assert!(with.whole_cycles.is_none());
}

#[test]
fn whole_cycles_are_refused_when_the_record_does_not_hold_up() {
    let reason = |recs: &[Record]| {
        let s = summarize(&round_trip(recs), "cut", &whole(100)).unwrap();
        assert_eq!(s.status, SummaryStatus::Incomplete);
        assert!(s.arms.is_empty());
        s.statistics_missing_reason.unwrap()
    };
    // An unstable call in the cut cycle: the record fails `stable_calls`, nothing is used.
    let mut recs = stopped_in_cycle_2();
    if let Some(Record::Call { stable, .. }) =
        recs.iter_mut().find(|r| matches!(r, Record::Call { block: 13, .. }))
    {
        *stable = false;
    }
    let why = reason(&recs);
    assert!(why.starts_with("the record is incomplete: no figure is derived from it; --whole-cycles: the record fails `stable_calls` (block 13 claims 0 unstable calls"), "{why}");
    // A reading that breaks a rule (the 40,089 W sample, in cycle 0), recorded by the footer.
    let mut shape = RunShape::published();
    shape.spike = Some((30, 40089.0));
    let why = reason(&crate::record::synthetic::interrupted(records(&shape), 13));
    assert!(why.contains("--whole-cycles: rule ") && why.contains("holds on the record's samples"), "{why}");
    // Stopped in the last block of cycle 0: nothing whole.
    let why = reason(&crate::record::synthetic::interrupted(published(), 5));
    assert!(why.ends_with("--whole-cycles: no balanced cycle was finished (each block whole, between its two whole idle windows) before the run stopped, so there is nothing whole to summarize"), "{why}");
}

#[test]
fn a_speed_record_stopped_early_gives_its_whole_cycles_time_figures() {
    // No idle windows: whole blocks are enough. Stopped in block 12, the first of cycle 2.
    let recs = crate::record::synthetic::interrupted(records(&speed_shape()), 12);
    let s = summarize(&round_trip(&recs), "speed", &whole(300)).unwrap();
    assert_eq!(s.status, SummaryStatus::Incomplete);
    let w = s.whole_cycles.as_ref().unwrap();
    assert_eq!((w.cycles_used, w.blocks_used, w.blocks_recorded, w.usable), (2, 12, 13, true));
    let na = w.audit.iter().filter(|c| c.outcome == CheckOutcome::NotApplicable).count();
    assert_eq!(na, 5, "the energy checks do not apply to a speed record: {:#?}", w.audit);
    assert_eq!(r3(s.arms[1].vs_baseline.speed_gain), "1.394");
    assert!(s.arms[1].totals.energy_per_decision_j.is_none());
}

/// Issue 48, item 2: a block with fewer than 2 samples strictly inside it. The synthetic record
/// samples each block twice, at its start (on the edge, not inside) and half-way: one inside.
#[test]
fn a_block_with_one_sample_inside_is_rejected_by_summary_naming_it() {
    let shape = RunShape { block_intervals: 2, ..RunShape::published() };
    // Written `complete` (as a writer before the rule would): the audit passes, saying the rule
    // is newer than the footer, and the run is rejected naming it.
    let mut recs = records(&shape);
    // Blocks of about 20 s sampled every 10 s: a 5 s interval keeps the gap rule (15 s) quiet.
    if let Some(Record::Header(h)) = recs.first_mut() {
        let e = h.energy.as_mut().unwrap();
        e.sample_interval_s = 5.0;
        e.max_gap_s = 15.0;
    }
    if let Some(Record::Footer { status, rejections, .. }) = recs.last_mut() {
        *status = RunStatus::Complete;
        rejections.clear();
    }
    let s = summarize_records(&recs, 0);
    assert_eq!(s.status, SummaryStatus::Rejected, "{:?} {:#?}", s.status_reasons, s.audit);
    assert!(s.status_reasons[0].contains("too_few_samples_in_block"), "{:?}", s.status_reasons);
    assert_eq!(s.rejections.len(), 18, "every block");
    assert!(
        s.rejections[0].message.starts_with("too_few_samples_in_block: block 0 ["),
        "{}",
        s.rejections[0].message
    );
    assert!(s.rejections[0].message.contains("holds 1 sample strictly inside it, fewer than the 2 required"));
    let audit = audit_outcomes(&s);
    assert_eq!(audit["rejection_rules"], CheckOutcome::Pass);
    let detail = &s.audit.iter().find(|c| c.name == "rejection_rules").unwrap().detail;
    assert!(detail.contains("a rule added after this record's footer was written `complete`"), "{detail}");
    assert!(s.arms.iter().all(|a| a.totals.mean_power_w.is_none()));
    let sampling = s.sampling.as_ref().unwrap();
    assert!(sampling.blocks.iter().all(|b| b.samples_inside == 1));
    assert!(s.to_markdown(0.95).contains("fewest samples inside a block: 1 (block 0; at least 2 required)"));
    // The same record with its footer recording the rule (as `energy` now writes it).
    recs.retain(|r| !matches!(r, Record::BlockEnergy { .. }));
    if let Some(Record::Footer { status, rejections, .. }) = recs.last_mut() {
        *status = RunStatus::Rejected;
        *rejections = s.rejections.clone();
    }
    let s = summarize_records(&recs, 0);
    assert_eq!(s.status, SummaryStatus::Rejected, "{:?}", s.audit);
    assert!(s.audit.iter().all(|c| c.outcome != CheckOutcome::Fail), "{:#?}", s.audit);
}

/// The side-by-side table marks an arm with the runs where it is the same model as an earlier
/// arm, and only those; an arm identical in no run is not marked.
#[test]
fn the_side_by_side_mark_names_the_runs_where_an_arm_is_identical() {
    use crate::summary::report::identical_in_runs;
    let a = summarize_records(&published(), 50);
    assert!(a.arms.iter().all(|x| x.identical_to.is_none()));
    let mut b = a.clone();
    b.arms[2].identical_to = Some("ane-fp16".into());
    let runs = [a.clone(), b.clone(), b];
    assert_eq!(identical_in_runs("ane-w8", &runs), " · IDENTICAL to `ane-fp16` (same model) in runs 1, 2");
    assert_eq!(identical_in_runs("ane-fp16", &runs), "");
    assert_eq!(identical_in_runs("ane-w8", &runs[..2]), " · IDENTICAL to `ane-fp16` (same model) in run 1");
    assert_eq!(identical_in_runs("ane-w8", &[a]), "");
    let c = compare::compare(&runs[..2]).unwrap();
    let md = c.to_markdown(&runs[..2]);
    assert!(
        md.contains("| `ane-w8` · IDENTICAL to `ane-fp16` (same model) in run 1 | t per decision [ms] |"),
        "{md}"
    );
    assert!(md.contains("| `ane-fp16` | t per decision [ms] |"), "{md}");
    // The CSV names it on each of its blocks in the run where it is, and nowhere else.
    let csv = report(runs[..2].to_vec()).csv().unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    for r in &rows {
        let cells: Vec<&str> = r.split(',').collect();
        let want = if cells[0] == "1" && cells[5] == "ane-w8" { "ane-fp16" } else { "" };
        assert_eq!(*cells.last().unwrap(), want, "{r}");
    }
    assert!(rows.iter().any(|r| r.ends_with(",ane-fp16")));
}

/// Issue 49: a header that is not its records' own fails `record_integrity`, naming the line.
#[test]
fn records_that_do_not_fit_their_header_fail_the_audit_naming_the_line() {
    // Untouched, both shapes pass.
    for recs in [published(), records(&speed_shape())] {
        let s = summarize_records(&recs, 0);
        let c = s.audit.iter().find(|c| c.name == "record_integrity").unwrap();
        assert_eq!(c.outcome, CheckOutcome::Pass, "{}", c.detail);
    }
    // An energy record relabelled `speed`, its energy settings dropped.
    let mut recs = published();
    if let Record::Header(h) = &mut recs[0] {
        h.kind = "speed".into();
        h.sensor = None;
        h.energy = None;
        h.power_boundary = None;
    }
    let first = recs.iter().position(|r| !kind_allows_speed(r)).unwrap();
    let (status, detail, line) = integrity(&recs);
    assert_eq!(status, SummaryStatus::AuditFailed);
    assert_eq!(line, (first + 1) as f64, "{detail}");
    assert!(detail.starts_with(&format!("line {}: an idle record", first + 1)), "{detail}");
    assert!(detail.contains("record in a `speed` record: only energy runs write"), "{detail}");
    // An energy header without its sensor.
    let mut recs = published();
    if let Record::Header(h) = &mut recs[0] {
        h.sensor = None;
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, 1.0);
    assert!(detail.starts_with("line 1: the header says `energy` but lacks"), "{detail}");
    // A warm-up of an arm the header does not list.
    let mut recs = records(&speed_shape());
    let i = recs.iter().position(|r| matches!(r, Record::Warmup { .. })).unwrap();
    if let Record::Warmup { arm, .. } = &mut recs[i] {
        *arm = "ghost".into();
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, (i + 1) as f64);
    assert!(detail.contains("a warmup record of arm `ghost`, which the header does not list"), "{detail}");
    // A block energy naming another arm than its block ran.
    let mut recs = published();
    let i = recs.iter().position(|r| matches!(r, Record::BlockEnergy { index: 1, .. })).unwrap();
    if let Record::BlockEnergy { arm, .. } = &mut recs[i] {
        *arm = "mlx-fp16".into();
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, (i + 1) as f64);
    assert!(
        detail.contains("the block_energy of block 1 names arm `mlx-fp16`, but block 1 ran `ane-fp16`"),
        "{detail}"
    );
    // A call of a request the workload does not have.
    let mut recs = records(&speed_shape());
    let i = first_call(&recs, 0);
    let requests = match &recs[0] {
        Record::Header(h) => h.workload.requests,
        _ => unreachable!(),
    };
    if let Record::Call { state, .. } = &mut recs[i] {
        *state = requests as u32;
    }
    let (_, detail, _) = integrity(&recs);
    assert!(
        detail.contains(&format!(
            "line {}: a call of request {requests}, but the header's workload has {requests} requests",
            i + 1
        )),
        "{detail}"
    );
    // The header of a run that started an hour before this record's footer's run.
    let mut recs = records(&speed_shape());
    if let Record::Header(h) = &mut recs[0] {
        h.started_unix_s -= 3600.0;
    }
    let (_, detail, line) = integrity(&recs);
    assert_eq!(line, recs.len() as f64, "the footer's line: {detail}");
    assert!(detail.contains("is another run's"), "{detail}");
}

fn kind_allows_speed(r: &Record) -> bool {
    crate::record::check::kind_allows("speed", r)
}
