//! `laya-bench energy` and `laya-bench doctor` as a user runs them, with scripted `exec:`
//! meters (small `sh -c` loops printing watts) and a live RAPL fixture tree: a complete run
//! whose energies are re-derived from the raw samples, every rejection rule, sensors that
//! cannot be used, equal-load pacing, Ctrl-C and SIGKILL.
//!
//! Runs are short (300 ms blocks, 200 ms idle windows, 50 ms sample interval), so the meters
//! print a line every 50 ms and the bad lines recur, so that they fall inside the run whatever
//! the start-up time of the process.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use laya_bench::energy::{idle_power, trapezoid_j, Series, WattPoint, Window};
use laya_bench::power::sampler::{Sample, SampleOutcome};
use laya_bench::record::{self, Record};
use laya_bench::report::energy::EnergyReport;

/// Short-run defaults as (flag, value); a test's own flags replace these.
const FAST: &[(&str, &str)] = &[
    ("--sample-interval", "50ms"),
    ("--seconds", "300ms"),
    ("--idle-seconds", "200ms"),
    ("--idle-discard", "50ms"),
    ("--cycles", "1"),
    ("--warmup", "3"),
    ("--raw", "r.raw.jsonl"),
    ("--output", "r.json"),
];

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_laya-bench"))
}

/// `energy` with the arms, the sensor, the short-run defaults and `extra` flags (which win).
fn energy_command(dir: &Path, arms: &[&str], sensor: &str, extra: &[&str]) -> Command {
    let mut c = bin();
    c.current_dir(dir).args(["energy", "--no-progress", "--sensor", sensor]);
    for a in arms {
        c.args(["--arm", a]);
    }
    for (flag, value) in FAST {
        if !extra.contains(flag) {
            c.args([flag, value]);
        }
    }
    c.args(extra);
    c
}

fn energy(dir: &Path, arms: &[&str], sensor: &str, extra: &[&str]) -> Output {
    energy_command(dir, arms, sensor, extra).output().expect("run laya-bench")
}

/// Send `signal` (`-INT`, `-KILL`, `-0`) to a process or, with a negative id, a process group,
/// with the `kill` utility; whether it was delivered.
fn kill(signal: &str, id: i32) -> bool {
    Command::new("kill")
        .args([signal, "--", &id.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn report(dir: &Path) -> EnergyReport {
    let text = std::fs::read_to_string(dir.join("r.json")).expect("report written");
    serde_json::from_str(&text).expect("report parses into its mirror type")
}

fn samples(dir: &Path) -> (record::RawRun, Vec<Sample>) {
    let run = record::read(&dir.join("r.raw.jsonl")).expect("raw file readable");
    let s = record::samples(&run);
    (run, s)
}

fn footer(run: &record::RawRun) -> (String, Option<String>, Vec<String>) {
    match run.records.last() {
        Some(Record::Footer { status, reason, rejections, .. }) => (
            status.to_string(),
            reason.clone(),
            rejections.iter().map(|r| r.rejection.rule().to_string()).collect(),
        ),
        other => panic!("no footer: {other:?}"),
    }
}

/// Every sample the sampler sent is in the file, numbered without a hole.
fn assert_every_sample_kept(run: &record::RawRun, samples: &[Sample]) {
    let sent = run
        .records
        .iter()
        .find_map(|r| match r {
            Record::Sampler(s) => Some(s.samples_sent),
            _ => None,
        })
        .expect("sampler record");
    assert_eq!(samples.len() as u64, sent);
    assert!(samples.iter().enumerate().all(|(i, s)| s.seq == i as u64));
}

fn raw_lines(samples: &[Sample]) -> Vec<String> {
    samples
        .iter()
        .filter_map(|s| match &s.outcome {
            SampleOutcome::Reading(r) => r.raw.clone(),
            SampleOutcome::Fault(_) => None,
        })
        .collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

/// A meter printing `t_s,watts` lines cycling through 31.5 … 37.5 W, every 50 ms.
const CYCLING_METER: &str =
    "exec:i=0; while true; do i=$((i+1)); echo \"$i.0,$((30 + i % 7)).5\"; sleep 0.05; done";

/// The table shows each ratio's bootstrap interval as `speed` shows S's; the JSON carries
/// every arm's intervals, the very ones `summary` derives from the raw record (10,000
/// resamples of whole cycles, seed 0).
#[test]
fn each_ratio_shows_the_interval_summary_derives() {
    let dir = tempfile::tempdir().unwrap();
    let meter = CYCLING_METER;
    let o = energy(
        dir.path(),
        &["base=mock:ok", "slow=mock:ok:delay-us=300"],
        meter,
        &["--cycles", "2", "--seconds", "200ms", "--export-markdown", "r.md"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rep = report(dir.path());
    let s = bin()
        .current_dir(dir.path())
        .args(["summary", "r.raw.jsonl", "--output", "s.json"])
        .output()
        .unwrap();
    assert_eq!(s.status.code(), Some(0), "{}", stderr(&s));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    for (i, a) in rep.arms.iter().enumerate() {
        assert_eq!(serde_json::to_value(&a.intervals).unwrap(), summary["runs"][0]["arms"][i]["intervals"]);
    }
    let (slow, iv) = (&rep.arms[1].vs_baseline, &rep.arms[1].intervals);
    let cell = |v: Option<f64>, i: Option<laya_bench::report::Interval>| {
        let i = i.expect("an interval from 2 whole cycles");
        format!("{:.3} [{:.3}, {:.3}]", v.unwrap(), i.low, i.high)
    };
    let cells = format!(
        " | {} | {} | {} | – |",
        cell(slow.speed_gain, iv.speed_gain),
        cell(slow.power_ratio, iv.power_ratio),
        cell(slow.energy_gain, iv.energy_gain)
    );
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    let row = md.lines().find(|l| l.starts_with("| `slow` |")).unwrap();
    assert!(row.ends_with(&cells), "{row}\n{cells}");
    let base = md.lines().find(|l| l.starts_with("| `base` |")).unwrap();
    assert!(base.ends_with(" | 1.000 | 1.000 | 1.000 | – |"), "{base}");
    // 2 cycles give 3 distinct resamples: the bracket is not called a 95 % interval.
    assert!(md.contains("\n[low, high] beside a ratio is a seeded percentile bootstrap over whole balanced cycles (10,000 resamples, seed 0), but 2 whole cycles have only 3 distinct resamples: it is the range of 3 possible resamples, not a 95 % interval.\n"), "{md}");
    // The printed table is the same.
    assert!(String::from_utf8_lossy(&o.stdout).contains(row), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn a_complete_run_is_re_derivable_from_its_raw_samples() {
    let dir = tempfile::tempdir().unwrap();
    let meter = CYCLING_METER;
    let o = energy(
        dir.path(),
        &["base=mock:ok", "slow=mock:ok:delay-us=300"],
        meter,
        &["--export-markdown", "r.md", "--export-csv", "r.csv"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    assert_eq!(footer(&run).0, "complete");
    assert!(run.header.sensor.as_ref().unwrap().live);
    // Samples carry the meter's own timestamp next to the receive time.
    let SampleOutcome::Reading(r0) = &samples[0].outcome else { panic!("first sample is a fault") };
    assert!(r0.source_t_s.is_some() && r0.raw.as_deref().unwrap().contains(','));

    let points: Vec<WattPoint> = samples
        .iter()
        .map(|s| match &s.outcome {
            SampleOutcome::Reading(r) => {
                WattPoint { t_s: s.t_receive_s(), watts: r.total_power_w().unwrap() }
            }
            SampleOutcome::Fault(f) => panic!("fault in a complete run: {f}"),
        })
        .collect();
    let idles: Vec<Window> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Idle { start_ns, end_ns, .. } => {
                Some(Window::new(*start_ns as f64 / 1e9, *end_ns as f64 / 1e9).unwrap())
            }
            _ => None,
        })
        .collect();
    assert_eq!(idles.len(), 5, "idle before, between and after the four blocks");
    let rep = report(dir.path());
    let mut checked = 0;
    for rec in &run.records {
        let Record::Block { index, start_ns, end_ns, .. } = rec else { continue };
        let block = Window::new(*start_ns as f64 / 1e9, *end_ns as f64 / 1e9).unwrap();
        let energy = run
            .records
            .iter()
            .find_map(|r| match r {
                Record::BlockEnergy { index: i, energy, .. } if i == index => *energy,
                _ => None,
            })
            .expect("block energy record");
        // Re-derive: trapezoid over receive times with interpolated bounds, idle power from the
        // two adjacent idle windows after the 50 ms discard, idle-subtracted with its sign.
        let e = trapezoid_j(&points, block).unwrap();
        assert!(close(energy.energy_j, e, 1e-12), "{} vs {e}", energy.energy_j);
        let series = Series::Power(&points);
        let before = idle_power(&series, idles[*index as usize], 0.05).unwrap().power_w;
        let after = idle_power(&series, idles[*index as usize + 1], 0.05).unwrap().power_w;
        let idle_w = (before + after) / 2.0;
        assert!(close(energy.idle_power_w, idle_w, 1e-12));
        assert!(close(energy.incremental_energy_j, e - idle_w * block.duration_s(), 1e-9));
        let b = &rep.blocks[*index as usize];
        assert!(close(b.totals.mean_power_w.unwrap(), e / block.duration_s(), 1e-12));
        assert!((31.0..=38.0).contains(&b.totals.mean_power_w.unwrap()));
        checked += 1;
    }
    assert_eq!(checked, 4);
    // Per arm: t = Σ time / decisions, P = Σ E / Σ time, E = P × t; S × R = E_base / E_arm.
    for a in &rep.arms {
        let blocks: Vec<_> = rep.blocks.iter().filter(|b| b.arm == a.arm.name).collect();
        let e: f64 = blocks.iter().map(|b| b.totals.active_energy_j.unwrap()).sum();
        let t: f64 = blocks.iter().map(|b| b.totals.time_s).sum();
        let n: u64 = blocks.iter().map(|b| b.totals.decisions).sum();
        assert_eq!(a.totals.decisions, n);
        assert!(close(a.totals.mean_power_w.unwrap(), e / t, 1e-12));
        assert!(close(a.totals.energy_per_decision_j.unwrap(), e / n as f64, 1e-12));
    }
    let (base, slow) = (&rep.arms[0].totals, &rep.arms[1].totals);
    let r = &rep.arms[1].vs_baseline;
    assert!(close(
        r.speed_gain.unwrap(),
        base.time_per_decision_s.unwrap() / slow.time_per_decision_s.unwrap(),
        1e-12
    ));
    assert!(close(r.power_ratio.unwrap(), base.mean_power_w.unwrap() / slow.mean_power_w.unwrap(), 1e-12));
    assert!(close(
        r.energy_gain.unwrap(),
        base.energy_per_decision_j.unwrap() / slow.energy_per_decision_j.unwrap(),
        1e-9
    ));
    assert!(r.speed_gain.unwrap() < 1.0, "the 300 µs arm is slower than the baseline");
    assert_eq!(rep.arms[0].vs_baseline.energy_gain, Some(1.0));
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.contains("double-counts time"), "{md}");
    assert!(md.contains("| `slow` |"));
    // One cycle: no interval, and the table says why under its ratios.
    assert!(
        md.contains("\nNo CI (S, R, S×R): 1 whole balanced cycle: resampling whole cycles needs at least 2"),
        "{md}"
    );
    assert_eq!(rep.arms[1].intervals.speed_gain, None);
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 + 4, "{csv}");
    let columns = csv.lines().next().unwrap().split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == columns), "{csv}");
    assert!(rep.sampler.unwrap().cpu_time_ns.is_some(), "the sampler's own CPU time is recorded");
    assert!(rep.blocks.iter().all(|b| b.rss_bytes.is_some()));
    // Linux counts stolen CPU time: every block of the report carries it, as the raw block does.
    if cfg!(target_os = "linux") {
        let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
        let raw_steal: Vec<_> = run
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Block { host_steal, .. } => Some(*host_steal),
                _ => None,
            })
            .collect();
        let report_steal: Vec<_> = rep.blocks.iter().map(|b| b.host_steal).collect();
        assert_eq!(raw_steal, report_steal);
        assert!(report_steal.iter().all(|s| s.is_some_and(|s| s.steal_ticks <= s.cpu_ticks)));
    }
}

#[test]
fn bad_readings_reject_the_run_naming_every_rule_and_raw_value() {
    let dir = tempfile::tempdir().unwrap();
    // Every 8 lines: 40089 W (the published spike), NaN, a garbage line and -3 W.
    let meter = "exec:i=0; while true; do i=$((i+1)); case $((i % 8)) in 3) echo 40089;; 4) echo nan;; 5) echo garbage;; 6) echo -3;; 7) echo 0;; *) echo 42.5;; esac; sleep 0.05; done";
    let o = energy(dir.path(), &["a=mock:ok"], meter, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("REJECTED"), "{err}");
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let (status, _, rules) = footer(&run);
    assert_eq!(status, "rejected");
    for rule in ["above_cap", "non_finite", "non_positive", "missing_reading"] {
        assert!(rules.iter().any(|r| r == rule), "{rule} missing from {rules:?}");
    }
    // The raw file still holds every reading, bad ones included, verbatim.
    let lines = raw_lines(&samples);
    for bad in ["40089", "nan", "-3", "0"] {
        assert!(lines.iter().any(|l| l == bad), "{bad} not kept: {lines:?}");
    }
    assert!(samples
        .iter()
        .any(|s| matches!(&s.outcome, SampleOutcome::Fault(f) if f.message.contains("\"garbage\""))));
    // No energy figure of a rejected run is stored or reported.
    assert!(!run.records.iter().any(|r| matches!(r, Record::BlockEnergy { .. })));
    let rep = report(dir.path());
    assert_eq!(rep.arms[0].totals.mean_power_w, None);
    assert!(rep.arms[0].totals.missing["mean_power_w"].contains("rejected"));
    let cap = rep.rejections.iter().find(|r| r.rejection.rule() == "above_cap").unwrap();
    assert!(cap.message.contains("40089 W, above the 500 W cap"), "{}", cap.message);
    assert_eq!(cap.evidence[0].raw.as_deref(), Some("40089"));
    let zero = rep
        .rejections
        .iter()
        .find(|r| r.rejection.rule() == "non_positive" && r.message.contains("reads 0 W"));
    assert!(zero.is_some(), "0 W is rejected as non-positive, never taken as a reading");
}

#[test]
fn one_reading_above_the_cap_rejects_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:i=0; while true; do i=$((i+1)); if [ $((i % 10)) -eq 5 ]; then echo 40089.0; else echo 61.39; fi; sleep 0.05; done";
    let o = energy(dir.path(), &["a=mock:ok"], meter, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("reads 40089 W, above the 500 W cap"), "{}", stderr(&o));
    let (run, samples) = samples(dir.path());
    let (status, _, rules) = footer(&run);
    assert_eq!(status, "rejected");
    assert!(rules.iter().all(|r| r == "above_cap"), "{rules:?}");
    assert!(raw_lines(&samples).iter().any(|l| l == "40089.0"));
    assert!(raw_lines(&samples).iter().filter(|l| *l == "61.39").count() > 10);
}

#[test]
fn a_gap_longer_than_two_seconds_rejects_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // The meter goes quiet for 2.5 s after its 16th line, while the run is still going.
    let meter =
        "exec:i=0; while true; do i=$((i+1)); echo 42.5; if [ $i -eq 16 ]; then sleep 2.5; fi; sleep 0.05; done";
    let o = energy(dir.path(), &["a=mock:ok"], meter, &["--cycles", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let (status, _, rules) = footer(&run);
    assert_eq!(status, "rejected");
    assert!(rules.iter().any(|r| r == "gap"), "{rules:?}");
    let rep = report(dir.path());
    let gap = rep.rejections.iter().find(|r| r.rejection.rule() == "gap").unwrap();
    assert!(gap.message.contains("longer than 2.000 s"), "{}", gap.message);
}

#[test]
fn a_meter_that_exits_mid_run_stops_the_run_and_rejects_it() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo 42.5; sleep 0.05; done; echo meter gone >&2; exit 3";
    let t = Instant::now();
    let o = energy(dir.path(), &["a=mock:ok"], meter, &["--cycles", "4"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(t.elapsed() < Duration::from_secs(4), "the rest of the plan is not run after the sensor stopped");
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let (status, reason, rules) = footer(&run);
    assert_eq!(status, "rejected");
    assert!(reason.unwrap().contains("sensor stopped"));
    assert!(rules.iter().any(|r| r == "sensor_stopped"), "{rules:?}");
    let rep = report(dir.path());
    let stop = rep.rejections.iter().find(|r| r.rejection.rule() == "sensor_stopped").unwrap();
    assert!(
        stop.message.contains("exit status: 3") && stop.message.contains("meter gone"),
        "{}",
        stop.message
    );
}

#[test]
fn a_live_rapl_tree_is_integrated_as_counters_through_a_wrap() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("powercap");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures_power/rapl-server");
    crate::common::copy_tree(&fixture, &tree);
    // package-0 at 20 W; package-1 at 400 W starting 280 J below its wrap (so it wraps about
    // 0.7 s in); the dram sub-zones (outside the total) at 5 W.
    let zones: Vec<(PathBuf, f64, u64, u64)> = [
        ("intel-rapl:0", 20.0, 1_000_000_000u64),
        ("intel-rapl:1", 400.0, 65_532_610_987 - 280_000_000),
        ("intel-rapl:0:0", 5.0, 10_000_000),
        ("intel-rapl:1:0", 5.0, 10_000_000),
    ]
    .iter()
    .map(|(z, w, base)| {
        let d = tree.join(z);
        let max: u64 =
            std::fs::read_to_string(d.join("max_energy_range_uj")).unwrap().trim().parse().unwrap();
        (d.join("energy_uj"), *w, *base, max)
    })
    .collect();
    let write = move |elapsed_s: f64| {
        for (path, watts, base, max) in &zones {
            let uj = (*base + (watts * elapsed_s * 1e6) as u64) % max;
            // Fixed width, written in place: the sensor keeps the file open and rereads it.
            let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            f.write_all_at(format!("{uj:020}\n").as_bytes(), 0).unwrap();
        }
    };
    write(0.0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            write(start.elapsed().as_secs_f64());
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let sensor = format!("rapl:{}", tree.display());
    // A 100 ms interval and a loose cap: the fixture's writer thread may be held up by a busy
    // machine, and a late update must not read as a frozen counter or a power spike.
    let slow = [
        "--sample-interval",
        "100ms",
        "--idle-seconds",
        "300ms",
        "--seconds",
        "400ms",
        "--max-watts",
        "5000",
    ];
    let o = energy(dir.path(), &["a=mock:ok"], &sensor, &slow);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let rep = report(dir.path());
    assert_eq!(
        serde_json::to_value(&rep.series).unwrap(),
        serde_json::json!({"kind": "counter", "channels": ["package-0", "package-1"]})
    );
    // The package-1 counter wrapped while it was sampled, and the energy did not jump.
    let p1: Vec<f64> = samples
        .iter()
        .filter_map(|s| match s.measurement("package-1") {
            Ok(laya_bench::power::Measurement::EnergyCounterJ { joules, .. }) => Some(joules),
            _ => None,
        })
        .collect();
    assert!(p1.windows(2).any(|w| w[1] < w[0]), "no wrap was sampled: {p1:?}");
    for b in &rep.blocks {
        let p = b.totals.mean_power_w.unwrap();
        assert!((315.0..=525.0).contains(&p), "block {} mean power {p} W, expected about 420 W", b.index);
    }
}

#[test]
fn no_usable_sensor_exits_2_before_measuring_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| {
        let mut c = bin();
        c.current_dir(d).args(["energy", "--arm", "a=mock:ok", "--no-progress"]).args(args);
        c.output().unwrap()
    };
    let o = run(&["--sensor", "pstr"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    #[cfg(not(target_os = "macos"))]
    assert!(stderr(&o).contains("only on macOS"), "{}", stderr(&o));
    let o = run(&["--sensor", "rapl:/nonexistent/powercap"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not exist") && stderr(&o).contains("exec:CMD"), "{}", stderr(&o));
    let o = run(&["--sensor", "macmon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown sensor"), "{}", stderr(&o));
    // A meter whose first line is not a reading, or that exits at once, never starts a run.
    let o = run(&["--sensor", "exec:echo power.draw [W]; sleep 5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gave no reading before measuring"), "{}", stderr(&o));
    let o = run(&["--sensor", "exec:exit 7"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exit status: 7"), "{}", stderr(&o));
    // A one-shot command (one reading, then exit) is the likeliest meter mistake: refused, with
    // the loop that fixes it.
    let o = run(&["--sensor", "exec:echo 12"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gave one reading, then none before measuring"), "{}", stderr(&o));
    assert!(stderr(&o).contains("while :; do CMD; sleep 0.5; done"), "{}", stderr(&o));
    // Without --sensor: the platform's own sensors, each with its reason, and a pointer to exec:.
    if !cfg!(target_os = "macos") && !Path::new("/sys/class/powercap").exists() {
        let o = run(&[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("no usable power sensor"), "{err}");
        assert!(err.contains("  - rapl: ") && err.contains("  - nvml:0: "), "{err}");
        assert!(err.contains("--sensor exec:CMD"), "{err}");
    }
    // Nothing is loaded or written: the sensor is refused before the model and the arms load,
    // so no raw record (the run never began) and no report.
    let files: Vec<PathBuf> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.is_empty(), "nothing written for a refused sensor: {files:?}");
}

/// A missing or unusable sensor is refused before the model or any arm loads (issue 51, item
/// 4): a `--model` that cannot load is not the error reported.
#[test]
fn an_unusable_sensor_is_refused_before_the_model_loads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("no-such-checkpoint");
    for sensor in ["exec:while :; do echo garbage; sleep 0.05; done", "rapl:/nonexistent/powercap"] {
        let o = bin()
            .current_dir(d)
            .args(["energy", "--arm", "a=mock:ok", "--no-progress", "--sensor", sensor, "--model"])
            .arg(&missing)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{sensor}: {err}");
        assert!(err.contains("--sensor") || err.contains("before measuring"), "{sensor}: {err}");
        assert!(!err.contains("cannot load the model"), "the model was loaded first: {err}");
    }
    // The same model with a usable meter: the model's error is the one reported.
    let o = bin()
        .current_dir(d)
        .args(["energy", "--arm", "a=mock:ok", "--no-progress", "--sensor"])
        .arg("exec:while :; do echo 42.5; sleep 0.05; done")
        .arg("--model")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot load the model"), "{}", stderr(&o));
    let files: Vec<PathBuf> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.is_empty(), "nothing written: {files:?}");
}

#[test]
fn bad_energy_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = bin();
        c.current_dir(dir.path())
            .args(["energy", "--arm", "a=mock:ok", "--sensor", "exec:echo 1"])
            .args(args);
        c.output().unwrap()
    };
    for (args, needle) in [
        (&["--idle-seconds", "500ms", "--idle-discard", "1s"][..], "leaves nothing"),
        (&["--rate", "0"][..], "--rate must be a positive"),
        (&["--rate", "1e-20"][..], "at least one per 7 days"),
        (&["--idle-seconds", "9223372036854775808"][..], "longer than 7 days"),
        (&["--sample-interval", "9223372036854775808"][..], "longer than 7 days"),
        (&["--max-watts", "-5"][..], "--max-watts must be"),
        (&["--sample-interval", "0"][..], "--sample-interval must be longer than zero"),
        (&["--seconds", "soon"][..], "--seconds `soon`"),
        (&["--cycles", "0"][..], "--cycles must be at least 1"),
        (&["--cycles", "4294967297"][..], "--cycles 4294967297 is more than 100000"),
        (
            &["--sample-interval", "100"][..],
            "--sample-interval 100s gives fewer than 2 samples in a 20s block",
        ),
        (
            &["--idle-seconds", "3s", "--idle-discard", "2s", "--sample-interval", "600ms"][..],
            "fewer than 2 samples in a 1s idle window after the discard",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    // An existing measurement is never replaced silently.
    std::fs::write(dir.path().join("taken.raw.jsonl"), "x").unwrap();
    let o = run(&["--raw", "taken.raw.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--overwrite"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(dir.path().join("taken.raw.jsonl")).unwrap(), "x");
}

#[test]
fn equal_load_paces_every_arm_and_counts_missed_deadlines() {
    let dir = tempfile::tempdir().unwrap();
    // 100 requests/s for 200 ms: 20 calls per block, one due every 10 ms; the slow arm takes
    // 15 ms a call, so every one of its calls ends after the next was due.
    let o = energy(
        dir.path(),
        &["fast=mock:ok", "slow=mock:ok:delay-us=15000"],
        "exec:while true; do echo 50; sleep 0.05; done",
        &["--rate", "100", "--seconds", "200ms"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rep = report(dir.path());
    assert_eq!(rep.energy_plan.calls_per_block, Some(20));
    let (fast, slow) = (&rep.arms[0], &rep.arms[1]);
    assert_eq!(fast.totals.decisions, 40, "every scheduled call is made");
    assert_eq!(slow.totals.decisions, 40, "late calls are made, never dropped or skipped");
    assert_eq!(slow.missed_deadlines, Some(40));
    assert!(fast.missed_deadlines.unwrap() < 40);
    let (run, _) = samples(dir.path());
    let mut calls = 0;
    let mut missed = 0;
    for r in &run.records {
        if let Record::Call { arm, scheduled_ns, missed_deadline, .. } = r {
            assert!(scheduled_ns.is_some());
            if arm == "slow" {
                calls += 1;
                missed += u64::from(*missed_deadline);
            }
        }
        if let Record::Block { start_ns, end_ns, scheduled_calls, .. } = r {
            assert_eq!(*scheduled_calls, Some(20));
            assert!(end_ns - start_ns >= 200_000_000, "a paced block lasts its whole schedule");
        }
    }
    assert_eq!((calls, missed), (40, 40));
    assert!(rep.notes.iter().any(|n| n.contains("Equal-load mode")));
}

fn spawn_long_run(dir: &Path) -> Child {
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    energy_command(dir, &["a=mock:ok"], meter, &["--seconds", "20s", "--cycles", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn laya-bench")
}

/// Wait until the raw file holds an idle-window record (the run is inside block 0).
fn wait_for_first_block(dir: &Path) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(dir.join("r.raw.jsonl")).unwrap_or_default();
        if text.contains("\"record\":\"idle\"") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the run never reached its first block");
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "laya-bench did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Processes of a process group that are still running (zombies, which only wait for their
/// parent or init to reap them, are not counted). Linux `/proc`; empty elsewhere.
fn live_members(group: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the `(comm)` field: state, ppid, pgrp.
            let rest = &stat[stat.rfind(')')? + 2..];
            let mut f = rest.split_whitespace();
            let state = f.next()?;
            let pgrp: i32 = f.nth(1)?.parse().ok()?;
            (pgrp == group && state != "Z" && state != "X").then_some(pid)
        })
        .collect()
}

/// The meter's process group, from the sensor notes in the header.
fn meter_group(run: &record::RawRun) -> i32 {
    let notes = &run.header.sensor.as_ref().unwrap().notes;
    let note = notes.iter().find(|n| n.contains("process group")).expect("process group note");
    note.split("process group ").nth(1).unwrap().split(';').next().unwrap().trim().parse().unwrap()
}

#[test]
fn ctrl_c_stops_between_calls_and_marks_the_run_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_long_run(dir.path());
    wait_for_first_block(dir.path());
    let t = Instant::now();
    assert!(kill("-INT", child.id() as i32));
    let status = wait(&mut child);
    assert!(t.elapsed() < Duration::from_secs(5), "Ctrl-C did not stop the 20 s block promptly");
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("INCOMPLETE"), "{err}");
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let (status, reason, rejections) = footer(&run);
    assert_eq!(status, "incomplete");
    assert!(reason.unwrap().contains("interrupted"));
    // The run waited for a reading after its last window: its own stop is no sensor fault
    // (it used to list `ends_before_window`).
    assert_eq!(rejections, Vec::<String>::new());
    let block = run.records.iter().find_map(|r| match r {
        Record::Block { ended_early, calls, .. } => Some((*ended_early, *calls)),
        _ => None,
    });
    let (ended_early, calls) = block.expect("the interrupted block is recorded");
    assert!(ended_early && calls > 0);
    let rep = report(dir.path());
    assert_eq!(rep.status, laya_bench::report::energy::RunStatus::Incomplete);
    assert_eq!(rep.arms[0].totals.energy_per_decision_j, None);
    // The meter was killed and reaped with its process group.
    let group = meter_group(&run);
    let t = Instant::now();
    while !live_members(group).is_empty() && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(live_members(group), Vec::<i32>::new(), "the meter's process group is still running");
}

#[test]
fn sigkill_leaves_a_raw_file_readable_up_to_its_last_flushed_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_long_run(dir.path());
    wait_for_first_block(dir.path());
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    wait(&mut child);
    let (run, samples) = samples(dir.path());
    // Nobody killed the meter: its group outlives laya-bench until its next write fails.
    kill("-KILL", -meter_group(&run));
    assert!(!run.complete, "no footer: an incomplete run");
    assert!(run.records.iter().any(|r| matches!(r, Record::Idle { .. })));
    assert!(samples.len() >= 4, "samples streamed during the block were flushed: {}", samples.len());
    assert!(samples.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
}

#[test]
fn doctor_lists_every_sensor_and_backend_with_a_reason() {
    let o = bin().arg("doctor").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for name in [
        "pstr",
        "rapl",
        "nvml:0",
        "exec:CMD",
        "replay:RAW",
        "portable:f32",
        "coreml:BUNDLE",
        "mlx:CHECKPOINT",
        "mock:ok",
        "ref:KIND:ARGS",
    ] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
    let o = bin().args(["doctor", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["sensors"].as_array().unwrap().len(), 5);
    assert_eq!(v["backends"].as_array().unwrap().len(), 11);
    for s in v["sensors"].as_array().unwrap().iter().chain(v["backends"].as_array().unwrap()) {
        assert!(s["usable"].is_boolean() && !s["detail"].as_str().unwrap().is_empty(), "{s}");
    }
    if v["default_sensor"].is_null() {
        assert!(v["default_sensor_missing_reason"].as_str().unwrap().contains("exec:CMD"));
    }
}

#[test]
fn a_replayed_run_is_never_called_live() {
    let dir = tempfile::tempdir().unwrap();
    // Recorded with longer blocks than the replay runs, so the replay does not run out of
    // samples; the replay's 300 ms blocks hold about 5 of the 50 ms samples each (2 needed).
    let o = energy(
        dir.path(),
        &["a=mock:ok"],
        "exec:while true; do echo 33.3; sleep 0.05; done",
        &["--seconds", "600ms"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::rename(dir.path().join("r.raw.jsonl"), dir.path().join("recorded.raw.jsonl")).unwrap();
    std::fs::remove_file(dir.path().join("r.json")).unwrap();
    let o = energy(dir.path(), &["a=mock:ok"], "replay:recorded.raw.jsonl", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rep = report(dir.path());
    assert!(!rep.sensor.live);
    assert!(rep.notes.iter().any(|n| n.contains("NOT A LIVE MEASUREMENT")));
    assert!(std::fs::read_to_string(dir.path().join("r.json")).unwrap().contains("\"live\": false"));
    assert!(close(rep.arms[0].totals.mean_power_w.unwrap(), 33.3, 1e-9));
}

/// The readings an energy run takes before measuring (issue 14, item 1): each goes through the
/// rules every reading must pass; a bad one refuses the run (exit 2) naming its raw value and
/// its rule, before the model loads (issue 51, item 4): nothing is measured or written.
#[test]
fn a_bad_reading_before_measuring_refuses_the_run() {
    let cases = [
        ("echo 40089;", "40089", "above_cap"),
        ("echo nan;", "nan", "non_finite"),
        ("echo -3;", "-3", "non_positive"),
        ("echo 42.5; echo 40089;", "40089", "above_cap"),
    ];
    for (first, raw_value, rule) in cases {
        let dir = tempfile::tempdir().unwrap();
        let meter = format!("exec:{first} while true; do echo 42.5; sleep 0.05; done");
        let o = energy(dir.path(), &["a=mock:ok"], &meter, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{first}: {err}");
        assert!(err.contains("before measuring") && err.contains(rule), "{first}: {err}");
        assert!(err.contains(&format!("{raw_value:?}")), "the raw value is named: {err}");
        assert!(err.contains("nothing was loaded, recorded or measured"), "{err}");
        assert!(!dir.path().join("r.raw.jsonl").exists(), "no raw record of a run that never began");
        assert!(!dir.path().join("r.json").exists(), "no report of a run that never measured");
    }
}

/// A good probe is kept too, and a complete run's summary re-checks it.
#[test]
fn the_probe_readings_of_a_complete_run_are_in_its_raw_record() {
    let dir = tempfile::tempdir().unwrap();
    let meter = "exec:echo 41.5; echo 42.5; while true; do echo 43.5; sleep 0.05; done";
    let o = energy(dir.path(), &["a=mock:ok"], meter, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = record::read(&dir.path().join("r.raw.jsonl")).unwrap();
    let probes = record::probes(&run);
    assert_eq!(raw_lines(&probes), vec!["41.5", "42.5"]);
    assert!(matches!(run.records[0], Record::Probe(_)), "the probe follows the header");
}

/// Meters that print milliwatts or microwatts (issue 14, item 11): a unit suffix on the line,
/// or `--sensor-unit` for bare numbers; the raw field keeps the text as read.
#[test]
fn milliwatt_and_microwatt_meters_are_read_in_watts_with_the_text_kept() {
    for (meter, extra, raw) in [
        ("exec:while true; do echo '42500 mW'; sleep 0.05; done", vec![], "42500 mW"),
        ("exec:while true; do echo '42500000uW'; sleep 0.05; done", vec![], "42500000uW"),
        ("exec:while true; do echo 42500; sleep 0.05; done", vec!["--sensor-unit", "mW"], "42500"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = energy(dir.path(), &["a=mock:ok"], meter, &extra);
        assert_eq!(o.status.code(), Some(0), "{meter}: {}", stderr(&o));
        let rep = report(dir.path());
        let s = rep.samples.expect("sample summary");
        assert_eq!((s.min_watts, s.max_watts), (Some(42.5), Some(42.5)), "{meter}");
        let (_, samples) = samples(dir.path());
        assert!(raw_lines(&samples).iter().all(|l| l == raw), "{:?}", raw_lines(&samples));
    }
    // Without the unit, 42500 is 42,500 W: above the cap, refused before measuring.
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=mock:ok"], "exec:while true; do echo 42500; sleep 0.05; done", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("above_cap") && stderr(&o).contains("its unit"), "{}", stderr(&o));
    let o = energy(dir.path(), &["a=mock:ok"], "rapl", &["--sensor-unit", "mW"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exec: meters only"), "{}", stderr(&o));
}

/// In a log (stderr not a terminal) each block is followed by a plain progress line naming its
/// arm and the idle window after it (the bar cannot draw there).
#[test]
fn a_log_gets_one_progress_line_per_block_and_idle_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = bin();
    c.current_dir(dir.path()).args(["energy", "--sensor", "exec:while true; do echo 30; sleep 0.05; done"]);
    c.args(["--arm", "a=mock:ok", "--arm", "b=mock:ok"]);
    for (flag, value) in FAST {
        c.args([flag, value]);
    }
    let o = c.output().expect("run laya-bench");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    for (n, line) in (1..).zip(crate::common::one_cycle_progress_lines(&err)) {
        assert!(line.ends_with(&format!("· idle window {n} next")), "{line}");
    }
    assert!(err.contains("warm-up done for 2 arm(s); measuring 4 blocks"), "{err}");
    // said before the run: 4 × 0.3 s + 5 × 0.2 s = 2.2 s
    let plan =
        "plan: 4 blocks of 0.3 s and 5 idle windows of 0.2 s in 1 balanced cycle(s): 0:00:02 of measuring";
    assert!(err.contains(plan), "{err}");
}

/// An `exec:` meter measures whatever it is wired to (issue 48): `--boundary` declares it, the
/// raw header records it and the report labels power and energy by it; a replay keeps it.
/// Without the flag the boundary is unknown and the report says so.
#[test]
fn an_exec_meter_is_labelled_by_its_declared_boundary_or_as_unknown() {
    use laya_bench::power::PowerBoundary;
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=mock:ok"], meter, &["--boundary", "wall", "--export-csv", "r.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let header_line = std::fs::read_to_string(dir.path().join("r.raw.jsonl")).unwrap();
    assert!(header_line.lines().next().unwrap().contains(r#""power_boundary":"wall""#));
    let (run, _) = samples(dir.path());
    assert_eq!(run.header.power_boundary, Some(PowerBoundary::Wall));
    assert_eq!(report(dir.path()).power_boundary, PowerBoundary::Wall);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("Power boundary `wall`: P is wall power [W], E wall energy [J]"), "{out}");
    assert!(out.contains("a different boundary from wall energy"), "{out}");
    assert!(!out.contains("system power") && !out.contains("boundary unknown"), "{out}");
    // Every power and energy column head names it too.
    for head in
        ["| wall P [W] |", "| wall E = P×t [J] |", "| wall idle P [W] |", "| wall idle before/after [W] |"]
    {
        assert!(out.contains(head), "{head} in {out}");
    }
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let heads: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = heads.iter().position(|h| *h == "power_boundary").unwrap();
    assert!(csv.lines().skip(1).all(|l| l.split(',').nth(at) == Some("wall")), "{csv}");
    // `summary` of the record names it too.
    let s = bin().current_dir(dir.path()).args(["summary", "r.raw.jsonl"]).output().unwrap();
    let text = String::from_utf8_lossy(&s.stdout).into_owned();
    assert!(text.contains("| mean wall power [W] |"), "{text}");
    // A replay keeps the replayed record's boundary.
    std::fs::rename(dir.path().join("r.raw.jsonl"), dir.path().join("wall.raw.jsonl")).unwrap();
    // (Its verdict is not the point here: a replay of a short recording may run out of samples.)
    energy(dir.path(), &["a=mock:ok"], "replay:wall.raw.jsonl", &["--seconds", "100ms", "--overwrite"]);
    let (run, _) = samples(dir.path());
    assert_eq!(run.header.power_boundary, Some(PowerBoundary::Wall));
    assert_eq!(report(dir.path()).power_boundary, PowerBoundary::Wall);

    // Without --boundary: unknown, and said so.
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=mock:ok"], meter, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (run, _) = samples(dir.path());
    assert_eq!(run.header.power_boundary, Some(PowerBoundary::Unknown));
    assert_eq!(run.header.power_boundary(), PowerBoundary::Unknown);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("P is power [W] (boundary unknown), E energy [J] (boundary unknown)"), "{out}");
    assert!(out.contains("| P [W] (boundary unknown) |"), "{out}");
    assert!(!out.contains("system power") && !out.contains("whole-system"), "{out}");

    // A value that names no boundary, or a sensor that declares its own: exit 2 before measuring.
    for (sensor, value, needle) in [
        (meter, "system", "unknown boundary \"system\""),
        (meter, "other:", "expected whole-system, gpu-board"),
        ("pstr", "wall", "--boundary applies to exec: meters only"),
        ("nvml", "whole-system", "--boundary applies to exec: meters only"),
    ] {
        let o = energy(dir.path(), &["a=mock:ok"], sensor, &["--boundary", value, "--raw", "x.raw.jsonl"]);
        assert_eq!(o.status.code(), Some(2), "{sensor} {value}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{sensor} {value}: {}", stderr(&o));
        assert!(!dir.path().join("x.raw.jsonl").exists());
    }
}

/// Issue 48, item 5: an A/A energy run (one model twice) keeps the second arm's ratios, marks
/// its row IDENTICAL, warns, and carries `identical_to` in the JSON and the CSV; the first arm
/// is not marked.
#[test]
fn an_a_a_energy_run_marks_the_second_arm_identical_and_keeps_its_ratios() {
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=portable:f32", "b=portable:f32"], meter, &["--export-csv", "r.csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let row = out.lines().find(|l| l.starts_with("| `b`")).unwrap_or_else(|| panic!("{out}"));
    // the mark, then the context columns (model, precision, …), then the spec
    assert!(
        row.starts_with("| `b` · IDENTICAL to `a` (same model: the run's noise) | `builtin:tiny` "),
        "{row}"
    );
    assert!(row.contains(" | `portable:f32` |"), "{row}");
    assert!(
        out.lines().any(|l| l.starts_with("| `a` | `builtin:tiny` ") && l.contains(" | `portable:f32` |")),
        "{out}"
    );
    assert!(out.contains("WARNING: arm `b` (portable:f32) is IDENTICAL to `a`"), "{out}");
    let r = report(dir.path());
    assert_eq!(r.arms[0].identical_to, None);
    assert_eq!(r.arms[1].identical_to.as_deref(), Some("a"));
    assert!(r.arms[1].vs_baseline.speed_gain.is_some_and(|s| s > 0.0), "{:?}", r.arms[1].vs_baseline);
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let heads: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (arm, same) = (
        heads.iter().position(|h| *h == "arm").unwrap(),
        heads.iter().position(|h| *h == "identical_to").unwrap(),
    );
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let want = if cells[arm] == "b" { "a" } else { "" };
        assert_eq!(cells[same], want, "{line}");
    }
}

/// Realized sampling is audited (issue 48, item 2): a meter that delivers every 0.4 s while
/// `--sample-interval 100ms` was asked for leaves a 300 ms block fewer than 2 samples strictly
/// inside it, which rejects the run naming the rule, the block and the count, with every reading
/// kept and the realized interval beside the requested one; `summary` re-derives both. A meter
/// that keeps up passes, and its realized interval is shown too.
#[test]
fn a_meter_slower_than_the_requested_interval_rejects_a_block_it_leaves_unsampled() {
    let flags = ["--sample-interval", "100ms", "--seconds", "300ms", "--idle-seconds", "300ms"];
    let dir = tempfile::tempdir().unwrap();
    let slow = "exec:while true; do echo 42.5; sleep 0.4; done";
    let o = energy(dir.path(), &["a=mock:ok"], slow, &flags);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let (run, samples) = samples(dir.path());
    assert_every_sample_kept(&run, &samples);
    let (status, _, rules) = footer(&run);
    assert_eq!(status, "rejected");
    // Both blocks (one arm, one cycle: A A); a 0.4 s gap is within the 2 s gap rule.
    assert_eq!(rules, ["too_few_samples_in_block"; 2]);
    let rep = report(dir.path());
    let r = &rep.rejections[0];
    assert!(r.message.starts_with("too_few_samples_in_block: block 0 ["), "{}", r.message);
    assert!(r.message.contains("strictly inside it, fewer than the 2 required"), "{}", r.message);
    assert!(r.evidence.iter().all(|e| e.raw.as_deref() == Some("42.5")), "{:?}", r.evidence);
    let s = rep.sampling.as_ref().expect("the sampling is reported when rejected");
    assert_eq!(s.requested_sample_interval_s, 0.1);
    let median = s.realized_sample_interval_median_s.unwrap();
    assert!((0.35..1.0).contains(&median), "{median}");
    assert!(s.blocks[0].samples_inside < 2 && s.blocks[0].max_gap_s.unwrap() > 0.35, "{s:?}");
    let json = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    assert!(
        json.contains("\"realized_sample_interval_median_s\"")
            && json.contains("\"realized_sample_interval_max_s\"")
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("Sample interval requested 0.1 s, realized median 0.4"), "{out}");
    // `summary` re-derives the rejection from the raw record and names it.
    let o = bin()
        .current_dir(dir.path())
        .args(["summary", "r.raw.jsonl", "--output", "s.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    let run = &s["runs"][0];
    assert_eq!(run["status"], "rejected", "{}", run["status_reasons"]);
    assert!(run["status_reasons"][0].as_str().unwrap().contains("too_few_samples_in_block"), "{run}");
    assert_eq!(run["sampling"]["realized_sample_interval_median_s"].as_f64(), Some(median));

    // A meter that keeps up (every 50 ms) passes and shows its realized interval.
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=mock:ok"], "exec:while true; do echo 42.5; sleep 0.05; done", &flags);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = report(dir.path()).sampling.expect("sampling reported");
    let median = s.realized_sample_interval_median_s.unwrap();
    assert!((0.04..0.1).contains(&median), "{median}");
    assert!(s.blocks.iter().all(|b| b.samples_inside >= 2), "{s:?}");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("Sample interval requested 0.1 s, realized median 0.0"), "{out}");
    let o = bin().current_dir(dir.path()).args(["summary", "r.raw.jsonl"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("realized median 0.0"));
}

/// Issue 49, item 10: `--rate 1e12` was accepted and block 0 never ended. A rate above one call
/// per microsecond is refused before measuring (exit 2); a rate no arm can keep ends each block
/// by time (twice its length plus 1 s) with the calls made and scheduled recorded and a
/// WARNING, and the run completes.
#[test]
fn an_impossible_rate_is_refused_or_ends_its_blocks_by_time() {
    let meter = "exec:while true; do echo 42.5; sleep 0.05; done";
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), &["a=mock:ok:delay-us=1000"], meter, &["--rate", "1e12"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("at most 1000000"), "{}", stderr(&o));
    assert!(!dir.path().join("r.raw.jsonl").exists());
    let started = std::time::Instant::now();
    let o = energy(dir.path(), &["a=mock:ok:delay-us=1000"], meter, &["--rate", "1e6", "--seconds", "200ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("WARNING: arm `a` made "), "{out}");
    assert!(out.contains("of its 400000 scheduled calls"), "{out}");
    let (run, _) = samples(dir.path());
    let blocks: Vec<(u64, Option<u64>)> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Block { calls, scheduled_calls, .. } => Some((*calls, *scheduled_calls)),
            _ => None,
        })
        .collect();
    assert_eq!(blocks.len(), 2);
    assert!(
        blocks.iter().all(|(made, scheduled)| *scheduled == Some(200_000) && *made < 200_000),
        "{blocks:?}"
    );
}
