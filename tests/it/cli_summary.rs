//! `laya-bench summary` as a user runs it, on raw records the binary itself produced
//! (`energy` with scripted `exec:` meters and `mock:` arms, `speed` with `mock:` arms): the
//! audit re-derives the energy report's figures, a rejected run stays rejected, bad input exits
//! 2 naming the line, corrections round-trip, several runs are compared, and every SVG parses.

use std::path::Path;
use std::process::Output;

use laya_bench::record;
use laya_bench::report::energy::EnergyReport;
use laya_bench::summary::report::{CheckOutcome, SummaryReport, SummaryStatus};

use crate::common::{laya_bench, stderr, SHORT_ENERGY as ENERGY};

/// A meter printing 31.5 … 37.5 W in turn every 50 ms.
const METER: &str = "exec:i=0; while true; do i=$((i+1)); echo \"$((30 + i % 7)).5\"; sleep 0.05; done";

/// An energy run writing `NAME.raw.jsonl` and `NAME.json`.
fn energy_run(dir: &Path, name: &str, meter: &str, slow_us: u32, cycles: &str) -> Output {
    let (raw, out) = (format!("{name}.raw.jsonl"), format!("{name}.json"));
    let slow = format!("slow=mock:ok:delay-us={slow_us}");
    let mut args = ENERGY.to_vec();
    args.extend(["--sensor", meter, "--arm", "base=mock:ok", "--arm", &slow, "--cycles", cycles]);
    args.extend(["--raw", &raw, "--output", &out]);
    laya_bench(dir, &args)
}

fn summary_json(dir: &Path, file: &str) -> SummaryReport {
    let text = std::fs::read_to_string(dir.join(file)).expect("summary written");
    serde_json::from_str(&text).expect("the summary parses into its mirror type")
}

/// Parse an SVG with quick-xml; return the text of every `<text>` element.
fn svg_texts(path: &Path) -> Vec<String> {
    use quick_xml::events::Event;
    let svg = std::fs::read_to_string(path).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    let (mut texts, mut inside, mut root) = (Vec::new(), false, false);
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("{} is not well-formed: {e}", path.display())) {
            Event::Start(e) if e.name().as_ref() == b"svg" => root = true,
            Event::Start(e) if e.name().as_ref() == b"text" => inside = true,
            Event::End(e) if e.name().as_ref() == b"text" => inside = false,
            Event::Text(t) if inside => texts.push(t.decode().unwrap().trim().to_string()),
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(root, "{} has no <svg> root", path.display());
    texts
}

#[test]
fn an_energy_run_is_audited_and_its_figures_re_derived() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = energy_run(d, "r", METER, 300, "2");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = laya_bench(
        d,
        &["summary", "r.raw.jsonl", "--output", "s.json", "--markdown", "s.md", "--csv", "s.csv"],
    );
    let o2 = laya_bench(
        d,
        &["summary", "r.raw.jsonl", "--output", "s2.json", "--plots", "plots", "--target", "3"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o2.status.code(), Some(0), "{}", stderr(&o2));
    let s = summary_json(d, "s.json");
    assert_eq!(s.schema_version, 1);
    let run = &s.runs[0];
    assert_eq!(run.status, SummaryStatus::Complete);
    assert_eq!(run.audit.len(), 10);
    assert!(run.audit.iter().any(|c| c.name == "record_integrity"));
    assert!(run.audit.iter().all(|c| c.outcome == CheckOutcome::Pass), "{:#?}", run.audit);
    // The summary re-derives exactly what `energy` reported, from the raw record alone.
    let energy: EnergyReport =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    for (a, e) in run.arms.iter().zip(&energy.arms) {
        assert_eq!(a.name, e.arm.name);
        assert_eq!(a.totals, e.totals);
        assert_eq!(a.vs_baseline, e.vs_baseline);
        assert_eq!(a.latency, e.latency);
        let i = a.intervals.energy_gain.expect("interval");
        assert!(i.low <= i.high && i.valid_resamples == 10_000);
    }
    assert!(run.warnings.iter().any(|w| w.contains("only 2 balanced cycles")));
    let md = std::fs::read_to_string(d.join("s.md")).unwrap();
    assert!(md.contains("| energy gain S × R | 1.000 [1.000–1.000] |"), "{md}");
    // 2 cycles give 3 distinct resamples: the brackets are named for what they are (issue 48).
    assert!(md.contains("[range of 3 possible resamples, not a 95 % interval])"), "{md}");
    assert!(!md.contains("95 % bootstrap interval"), "{md}");
    assert!(md.contains("| `active_energy` | pass |"));
    let csv = std::fs::read_to_string(d.join("s.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8, "{csv}");
    // Same seed, same intervals; the claim and the pictures.
    let s2 = summary_json(d, "s2.json");
    assert_eq!(s2.runs[0].arms, run.arms);
    let claim = s2.runs[0].claim.as_ref().expect("claim");
    assert!(!claim.arms[0].reached && claim.arms[0].statement.contains("3× not reached"));
    assert_eq!(s2.plots.len(), 3);
    for (kind, want) in [
        ("power_timeline", "block: slow"),
        ("latency_cdf", "fraction of calls ≤ x"),
        ("energy_per_block", "energy per decision [J]"),
    ] {
        let texts = svg_texts(&d.join("plots").join(format!("{kind}.svg")));
        assert!(texts.iter().any(|t| t.contains(want)), "{kind}: {texts:?}");
    }
}

#[test]
fn a_rejected_run_is_summarized_as_rejected_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spike = "exec:i=0; while true; do i=$((i+1)); if [ $((i % 9)) -eq 5 ]; then echo 40089; else echo 33.5; fi; sleep 0.05; done";
    let o = energy_run(d, "r", spike, 100, "1");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = laya_bench(
        d,
        &["summary", "r.raw.jsonl", "--output", "s.json", "--markdown", "s.md", "--plots", "p"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("REJECTED: rule above_cap violated (re-checked on the raw samples)"),
        "{}",
        stderr(&o)
    );
    let s = summary_json(d, "s.json");
    let run = &s.runs[0];
    assert_eq!(run.status, SummaryStatus::Rejected);
    assert!(run.rejections.iter().all(|r| r.rejection.rule() == "above_cap"));
    assert_eq!(run.rejections[0].evidence[0].raw.as_deref(), Some("40089"));
    assert!(run.arms.iter().all(|a| a.totals.mean_power_w.is_none() && a.vs_baseline.energy_gain.is_none()));
    assert!(run.arms[1].vs_baseline.speed_gain.is_some());
    let md = std::fs::read_to_string(d.join("s.md")).unwrap();
    assert!(md.contains("**REJECTED**"), "{md}");
    let texts = svg_texts(&d.join("p/power_timeline.svg"));
    assert!(texts.iter().any(|t| t == "above_cap: 40089 W (off scale)"), "{texts:?}");
    assert!(!d.join("p/energy_per_block.svg").exists(), "a rejected run has no energy picture");
}

#[test]
fn a_speed_record_summarizes_time_and_speed_ratios_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args =
        ["speed", "--no-progress", "--arm", "a=mock:ok", "--arm", "b=mock:ok:delay-us=200", "--calls", "20"];
    let o = laya_bench(
        d,
        &[&args[..], &["--cycles", "3", "--warmup", "2", "--raw", "r.raw.jsonl", "--output", "r.json"]]
            .concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--plots", "p"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // No rows of n/a energy figures: one sentence says why they are left out.
    let md = crate::common::stdout(&o);
    assert!(md.contains("| speed gain S |") && md.contains("A speed record has no power samples"), "{md}");
    for gone in ["mean power", "energy / decision", "power ratio R", "energy gain", "mean_power_w"] {
        assert!(!md.contains(gone), "{gone}: {md}");
    }
    let run = &summary_json(d, "s.json").runs[0];
    assert_eq!(run.kind, "speed");
    let b = &run.arms[1];
    assert!(b.vs_baseline.speed_gain.unwrap() < 1.0);
    assert_eq!(b.vs_baseline.power_ratio, None);
    assert!(b.totals.missing["mean_power_w"].contains("speed record has no power samples"));
    assert!(b.intervals.speed_gain.is_some() && b.intervals.energy_gain.is_none());
    assert!(run.audit.iter().filter(|c| c.outcome == CheckOutcome::NotApplicable).count() == 5);
    assert!(d.join("p/latency_cdf.svg").exists() && !d.join("p/power_timeline.svg").exists());
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = energy_run(d, "r", METER, 100, "1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(d.join("r.raw.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"record\": \"block\", garbled";
    std::fs::write(d.join("bad.raw.jsonl"), lines.join("\n") + "\n").unwrap();
    let o = laya_bench(d, &["summary", "bad.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.raw.jsonl: line 5 is not a valid record"), "{}", stderr(&o));
    assert!(!d.join("s.json").exists());
    let o = laya_bench(d, &["summary", "missing.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    std::fs::write(d.join("notes.txt"), "hello\n").unwrap();
    std::fs::write(d.join("empty.raw.jsonl"), "").unwrap();
    let o = laya_bench(d, &["summary", "empty.raw.jsonl", "--output", "s.json"]);
    assert!(
        o.status.code() == Some(2) && stderr(&o).contains("empty.raw.jsonl: the file is empty"),
        "{}",
        stderr(&o)
    );
    let o = laya_bench(d, &["summary", "notes.txt", "--output", "s.json"]);
    assert!(o.status.code() == Some(2) && stderr(&o).contains("not a laya-bench header"), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--baseline", "nope"]);
    assert!(o.status.code() == Some(2) && stderr(&o).contains("--baseline `nope`"), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--target", "-1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--bootstrap", "100000000"]);
    assert!(o.status.code() == Some(2) && stderr(&o).contains("--bootstrap 100000000"), "{}", stderr(&o));
    // Without --output the Markdown is printed only (see summary_without_output_prints_its_markdown).
    // Outputs are checked before anything is read.
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "nodir/s.json"]);
    assert!(
        o.status.code() == Some(2)
            && stderr(&o).contains("--output nodir/s.json: the folder nodir does not exist"),
        "{}",
        stderr(&o)
    );
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--plots", "notes.txt"]);
    assert!(
        o.status.code() == Some(2) && stderr(&o).contains("--plots notes.txt: is a file"),
        "{}",
        stderr(&o)
    );
    // Outputs are derived from the records: an existing file is replaced (--overwrite is
    // accepted and does nothing), but never a raw record given, another output, or a file that
    // is itself a raw record; the raw records are left as they were.
    let refused = |args: &[&str], needle: &str| {
        let o = laya_bench(d, &[&["summary", "r.raw.jsonl"][..], args].concat());
        assert!(o.status.code() == Some(2) && stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    };
    refused(
        &["--output", "./r.raw.jsonl"],
        "--output ./r.raw.jsonl is the input r.raw.jsonl: an output never replaces",
    );
    refused(&["--output", "s.out", "--markdown", "s.out"], "--output and --export-markdown both name s.out");
    std::fs::copy(d.join("r.raw.jsonl"), d.join("other.raw.jsonl")).unwrap();
    refused(
        &["--output", "s.json", "--csv", "other.raw.jsonl"],
        "--export-csv other.raw.jsonl is a raw record",
    );
    assert_eq!(std::fs::read_to_string(d.join("other.raw.jsonl")).unwrap(), text);
    assert!(!d.join("s.json").exists(), "nothing is written when an output is refused");
    std::fs::write(d.join("keep.json"), "kept").unwrap();
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--csv", "keep.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("keep.json")).unwrap().starts_with("run,"));
    std::fs::write(d.join("keep.json"), "kept").unwrap();
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--csv", "keep.json", "--overwrite"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join("keep.json")).unwrap().starts_with("run,"));
    refused(&["--markdown", "r.raw.jsonl", "--overwrite"], "is the input");
    assert_eq!(std::fs::read_to_string(d.join("r.raw.jsonl")).unwrap(), text);
    // A record of another command (here a trace run's) is not summarized.
    let trace = text.replacen("\"kind\":\"energy\"", "\"kind\":\"trace-run\"", 1);
    std::fs::write(d.join("t.raw.jsonl"), trace).unwrap();
    let o = laya_bench(d, &["summary", "t.raw.jsonl", "--output", "s.json"]);
    assert!(
        o.status.code() == Some(2) && stderr(&o).contains("t.raw.jsonl is a `trace-run` record"),
        "{}",
        stderr(&o)
    );
    // Without its footer the record is incomplete: exit 1, summary written.
    let cut: Vec<&str> = text.lines().filter(|l| !l.contains("\"record\":\"footer\"")).collect();
    std::fs::write(d.join("cut.raw.jsonl"), cut.join("\n") + "\n").unwrap();
    let o = laya_bench(d, &["summary", "cut.raw.jsonl", "--output", "cut.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(summary_json(d, "cut.json").runs[0].status, SummaryStatus::Incomplete);
}

#[test]
fn corrections_are_appended_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = energy_run(d, "r", METER, 100, "1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = std::fs::read(d.join("r.raw.jsonl")).unwrap();
    let note = "the host was a 2-vCPU VM, not bare metal";
    let o =
        laya_bench(d, &["summary", "--correct", "r.raw.jsonl", "--field", "host.cpu_model", "--note", note]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read(d.join("r.raw.jsonl")).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "original bytes unchanged");
    assert!(String::from_utf8_lossy(&after[before.len()..]).contains("\"record\":\"metadata_correction\""));
    assert!(record::read(&d.join("r.raw.jsonl")).unwrap().complete);
    let o = laya_bench(d, &["summary", "--correct", "r.raw.jsonl", "--field", "host.gpu", "--note", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("`gpu` is not a key of `host`"), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "--correct", "r.raw.jsonl", "--field", "host.os"]);
    assert_eq!(o.status.code(), Some(2), "--note is required: {}", stderr(&o));
    // --field and --note without --correct: refused, not ignored while the record is summarized.
    let unchanged = std::fs::read(d.join("r.raw.jsonl")).unwrap();
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--field", "host.os", "--note", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--field belongs to a correction: use `summary --correct RAW"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(d.join("r.raw.jsonl")).unwrap(), unchanged);
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json", "--markdown", "s.md"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = &summary_json(d, "s.json").runs[0];
    assert_eq!(run.metadata_corrections.len(), 1);
    assert_eq!(run.metadata_corrections[0].note, note);
    assert!(std::fs::read_to_string(d.join("s.md")).unwrap().contains(note));
}

#[test]
fn two_runs_of_the_same_arms_are_compared_and_disjoint_intervals_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The `slow` arm is ~300 µs per call in one run and ~3 ms in the other: S cannot overlap.
    for (name, us) in [("a", 300), ("b", 3000)] {
        let o = energy_run(d, name, METER, us, "2");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = laya_bench(
        d,
        &[
            "summary",
            "a.raw.jsonl",
            "b.raw.jsonl",
            "--output",
            "s.json",
            "--markdown",
            "s.md",
            "--plots",
            "p",
            "--bootstrap",
            "500",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = summary_json(d, "s.json");
    let c = s.comparison.as_ref().expect("comparison");
    assert!(c.intervals_disjoint);
    let row = c.rows.iter().find(|r| r.arm == "slow" && r.quantity == "speed_gain").unwrap();
    assert_eq!(row.non_overlapping, vec![(0, 1)]);
    let md = std::fs::read_to_string(d.join("s.md")).unwrap();
    assert!(md.contains("## Runs side by side") && md.contains("⚠ disjoint: runs 0–1"), "{md}");
    assert!(md.contains("](p/run1-latency_cdf.svg)"), "{md}");
    assert!(d.join("p/run0-power_timeline.svg").exists() && d.join("p/run1-energy_per_block.svg").exists());
    assert!(stderr(&o).contains("warning: --bootstrap 500 resamples give rough percentile intervals"));
    // The same record twice, by another path, a link or a byte-identical copy, is refused
    // (issue 14, item 7); on purpose (--allow-same) it runs with a warning.
    std::os::unix::fs::symlink(d.join("a.raw.jsonl"), d.join("link.raw.jsonl")).unwrap();
    std::fs::copy(d.join("a.raw.jsonl"), d.join("copy.raw.jsonl")).unwrap();
    for (other, how) in [
        ("a.raw.jsonl", "the same file"),
        ("./a.raw.jsonl", "the same file"),
        ("link.raw.jsonl", "the same file"),
        ("copy.raw.jsonl", "byte-identical copies"),
    ] {
        let o = laya_bench(d, &["summary", "a.raw.jsonl", "b.raw.jsonl", other, "--output", "twice.json"]);
        assert_eq!(o.status.code(), Some(2), "{other}: {}", stderr(&o));
        assert!(stderr(&o).contains(how) && stderr(&o).contains("--allow-same"), "{}", stderr(&o));
    }
    assert!(!d.join("twice.json").exists());
    let o = laya_bench(
        d,
        &["summary", "a.raw.jsonl", "copy.raw.jsonl", "--output", "twice.json", "--allow-same"],
    );
    assert!(
        stderr(&o).contains("warning: a.raw.jsonl and copy.raw.jsonl are byte-identical"),
        "{}",
        stderr(&o)
    );
    assert!(d.join("twice.json").exists());
}

#[test]
fn a_replayed_run_is_summarized_and_never_called_live() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = energy_run(d, "recorded", METER, 100, "1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut args = ENERGY.to_vec();
    args.extend(["--sensor", "replay:recorded.raw.jsonl", "--arm", "a=mock:ok", "--cycles", "1"]);
    args.extend(["--raw", "replayed.raw.jsonl", "--output", "replayed.json"]);
    let o = laya_bench(d, &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "replayed.raw.jsonl", "--output", "s.json", "--markdown", "s.md"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = &summary_json(d, "s.json").runs[0];
    assert_eq!(run.status, SummaryStatus::Complete);
    assert_eq!(run.sensor_live, Some(false));
    assert!(run.warnings.iter().any(|w| w.starts_with("NOT A LIVE MEASUREMENT")), "{:?}", run.warnings);
    assert!(
        run.bootstrap.is_none()
            && run.bootstrap_missing_reason.as_deref().unwrap().contains("1 balanced cycle")
    );
    assert!(std::fs::read_to_string(d.join("s.md")).unwrap().contains("NOT A LIVE MEASUREMENT"));
}

/// `summary --output` (and its exports) into a folder that refuses new files exits 2 before
/// reading anything (issue 14, item 4).
#[cfg(target_os = "linux")]
#[test]
fn summary_into_an_unwritable_folder_exits_2() {
    assert!(
        std::fs::File::create("/sys/laya-bench-probe").is_err(),
        "the test needs /sys to refuse new files"
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &[
            "speed",
            "--arm",
            "a=mock:ok",
            "--calls",
            "3",
            "--cycles",
            "2",
            "--raw",
            "s.raw.jsonl",
            "--output",
            "s.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for flag in ["--output", "--markdown", "--csv"] {
        let mut args = vec!["summary", "s.raw.jsonl"];
        if flag != "--output" {
            args.extend(["--output", "sum.json"]);
        }
        args.extend([flag, "/sys/sum.out"]);
        let o = laya_bench(d, &args);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot write in the folder /sys"), "{}", stderr(&o));
    }
    let o = laya_bench(d, &["summary", "s.raw.jsonl", "--output", "sum.json", "--plots", "/sys/plots"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// A run whose sensor stopped was written REJECTED (sensor_stopped); its summary says the same,
/// with the rule, not AUDIT_FAILED (issue 14, item 5).
#[test]
fn a_run_whose_sensor_stopped_is_summarized_as_rejected_with_its_rule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let meter = "exec:i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo 42.5; sleep 0.05; done; exit 3";
    let o = energy_run(d, "stop", meter, 0, "4");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = laya_bench(d, &["summary", "stop.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s = summary_json(d, "s.json");
    let run = &s.runs[0];
    assert_eq!(run.status, SummaryStatus::Rejected, "{:?}", run.status_reasons);
    assert!(run.status_reasons.iter().any(|r| r.contains("sensor_stopped")), "{:?}", run.status_reasons);
    assert!(stderr(&o).contains("REJECTED"), "{}", stderr(&o));
}

/// Without --output the summary's Markdown goes to the terminal and no file is written
/// (issue 14, item 9).
#[test]
fn summary_without_output_prints_its_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = laya_bench(
        d,
        &[
            "speed",
            "--arm",
            "a=mock:ok",
            "--calls",
            "3",
            "--cycles",
            "2",
            "--raw",
            "s.raw.jsonl",
            "--output",
            "s.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    let o = laya_bench(d, &["summary", "s.raw.jsonl", "--bootstrap", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = crate::common::stdout(&o);
    assert!(out.contains("| `a` |") || out.contains("`a`"), "{out}");
    assert!(out.contains("no --output"), "{out}");
    let after: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before.len(), after.len(), "nothing written");
}

/// Runs laya-bench with `args` in `d`, writing `r.raw.jsonl`, and presses Ctrl-C (SIGINT) as
/// soon as a line of that record satisfies `when` (failing with `never` after 90 s).
fn interrupted_when(d: &Path, args: &[&str], never: &str, when: impl Fn(&str) -> bool) -> Output {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let child = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(d)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn laya-bench");
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(d.join("r.raw.jsonl")).unwrap_or_default();
        if text.lines().any(&when) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(90), "{never}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    child.wait_with_output().unwrap()
}

/// An energy run of 4 cycles stopped with Ctrl-C (SIGINT) in its third cycle: `energy`'s
/// report gives the figures of its two whole cycles and says what to type to audit them;
/// `summary` without the flag derives no figure and names the flag; `summary --whole-cycles`
/// audits and summarizes the first two cycles as a run of two (still `incomplete`, exit 1),
/// with the energy report's figures.
#[test]
fn an_energy_run_stopped_in_its_third_cycle_is_summarized_by_its_two_whole_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut args = ENERGY.to_vec();
    args.extend(["--sensor", METER, "--arm", "base=mock:ok", "--arm", "slow=mock:ok:delay-us=100"]);
    args.extend(["--cycles", "4", "--raw", "r.raw.jsonl", "--output", "r.json"]);
    // Wait for the first block of cycle 2 (blocks 8 to 11), then press Ctrl-C.
    let out = interrupted_when(d, &args, "the run never reached cycle 2", |l| {
        l.contains("\"record\":\"block\"") && l.contains("\"cycle\":2")
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the report's figures cover its first 2 whole balanced cycles (the cut cycle left out); `laya-bench summary r.raw.jsonl --whole-cycles` audits them as a run of 2 cycles"),
        "{err}"
    );
    let rep: EnergyReport =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(rep.whole_cycles, Some(2));
    assert!(rep.stable);
    // Without the flag: no figure, and the flag is named.
    let o = laya_bench(d, &["summary", "r.raw.jsonl", "--output", "s.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s = &summary_json(d, "s.json").runs[0];
    assert!(s.arms.is_empty());
    assert!(
        s.statistics_missing_reason
            .as_deref()
            .unwrap()
            .ends_with("its first 2 whole balanced cycles can be summarized with --whole-cycles"),
        "{:?}",
        s.statistics_missing_reason
    );
    // With it: the two cycles, audited, with energy figures; the status stays incomplete.
    let o = laya_bench(
        d,
        &[
            "summary",
            "r.raw.jsonl",
            "--whole-cycles",
            "--output",
            "w.json",
            "--csv",
            "w.csv",
            "--plots",
            "plots",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("r.raw.jsonl: INCOMPLETE: "), "{}", stderr(&o));
    let s = &summary_json(d, "w.json").runs[0];
    assert_eq!(s.status, SummaryStatus::Incomplete);
    let w = s.whole_cycles.as_ref().expect("whole cycles");
    assert_eq!((w.cycles_used, w.cycles_planned, w.blocks_used), (2, 4, 8));
    assert!(w.usable && w.blocks_recorded > 8, "{w:?}");
    assert!(w.audit.iter().all(|c| c.outcome != CheckOutcome::Fail), "{:#?}", w.audit);
    assert_eq!((s.plan.cycles, s.blocks.len()), (2, 8));
    assert_eq!(s.bootstrap.as_ref().map(|b| b.cycles), Some(2));
    assert_eq!(s.arms.len(), 2);
    // The figures are those of the first 8 blocks of the raw record.
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    let mut decisions = [0u64; 2];
    for r in &run.records {
        if let record::Record::Block { index, arm, calls, .. } = r {
            if *index < 8 {
                decisions[usize::from(arm == "slow")] += calls;
            }
        }
    }
    for ((a, n), mine) in s.arms.iter().zip(decisions).zip(&rep.arms) {
        assert_eq!(a.totals.decisions, n, "{}", a.name);
        let e = a.totals.energy_per_decision_j.expect("an energy figure from the whole cycles");
        assert!(e > 0.0 && e.is_finite(), "{}: {e}", a.name);
        // `energy`'s own report gives the same figures, from the same samples and windows.
        assert_eq!(mine.totals.decisions, n, "{}", a.name);
        assert_eq!(mine.totals.energy_per_decision_j, Some(e), "{}", a.name);
        assert_eq!(mine.totals.mean_power_w, a.totals.mean_power_w, "{}", a.name);
    }
    let csv = std::fs::read_to_string(d.join("w.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 8, "one row per block summarized:\n{csv}");
    assert!(d.join("plots/energy_per_block.svg").exists());
}

/// An energy run stopped by Ctrl-C in its third cycle just after arm `slow` stopped
/// reproducing its warm-up result: the figures cover the two whole cycles, where every call
/// was stable, but the run is unstable and the report says why.
#[test]
fn an_unstable_call_left_out_with_an_energy_runs_cut_cycle_still_makes_it_unstable() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 100 ms calls in 1 s blocks (10 calls a block), two blocks per arm and cycle; each arm
    // is called 10 times before its first block (the setup checks and the warm-up, which
    // `--warmup 3` makes 8, one per request of the workload). `slow`'s results drift
    // from its call 55 (from 0): its 6th call in its first block of cycle 2 (its calls 50 to
    // 59), and still in cycle 2 with 9 or 11 calls a block; so one of its blocks of cycle 2 is
    // still running when the first drifted call is recorded.
    let mut args: Vec<&str> =
        ENERGY.iter().copied().filter(|a| !["--seconds", "300ms"].contains(a)).collect();
    args.extend(["--seconds", "1s", "--sensor", METER]);
    args.extend([
        "--arm",
        "base=mock:ok:delay-us=100000",
        "--arm",
        "slow=mock:drift-after=55:delay-us=100000",
    ]);
    args.extend(["--cycles", "4", "--raw", "r.raw.jsonl", "--output", "r.json"]);
    // Press Ctrl-C once the record holds the first call that did not reproduce.
    let out = interrupted_when(d, &args, "no call drifted", |l| {
        l.contains("\"record\":\"call\"") && l.contains("\"stable\":false")
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let rep: EnergyReport =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(rep.whole_cycles, Some(2), "{err}");
    let slow = rep.arms.iter().find(|a| a.arm.name == "slow").expect("arm slow");
    assert_eq!(slow.unstable_calls, 0, "the whole cycles were stable");
    assert!(!rep.stable, "{:?}", rep.notes);
    let warning =
        "call(s) of the cut cycle, left out of the figures, did not reproduce their arm's warm-up result";
    assert!(rep.notes.iter().any(|n| n.contains(warning)), "{:?}", rep.notes);
    // every call the record marks unstable lies in cycle 2
    let run = record::read(&d.join("r.raw.jsonl")).unwrap();
    let cycle_of: std::collections::HashMap<u32, u32> = run
        .records
        .iter()
        .filter_map(|r| match r {
            record::Record::Block { index, cycle, .. } => Some((*index, *cycle)),
            _ => None,
        })
        .collect();
    let unstable: Vec<u32> = run
        .records
        .iter()
        .filter_map(|r| match r {
            record::Record::Call { block, stable: false, .. } => Some(*block),
            _ => None,
        })
        .collect();
    assert!(!unstable.is_empty());
    assert!(unstable.iter().all(|b| cycle_of.get(b) == Some(&2)), "{unstable:?} {cycle_of:?}");
}
