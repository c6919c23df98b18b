//! The `nvml…` sensors end to end on a stand-in NVML library (fixtures/fake-nvml/fake_nvml.c,
//! compiled here with the system C compiler and loaded through `LAYA_BENCH_NVML_LIB`): a fake
//! GPU whose power follows the process's CPU time and whose driver refreshes every 20 ms. Not
//! a measurement: what is tested is what laya-bench does with what NVML says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{fixture, stderr};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_laya-bench"))
}

/// The stand-in library, built once per test process into cargo's scratch folder for
/// integration tests (`target/tmp`, gone with `cargo clean`; nothing is left in the system's
/// temporary folder). Built under a name of this process, then renamed into place, so test
/// processes running at once never load a half-written library.
fn fake_nvml() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-nvml");
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libnvidia-ml.so.1");
        let building = dir.join(format!("libnvidia-ml.so.1.{}", std::process::id()));
        let src = fixture("fixtures/fake-nvml/fake_nvml.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let o = Command::new(&cc)
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(&building)
            .arg(&src)
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` to build the stand-in NVML: {e}"));
        assert!(o.status.success(), "cc failed: {}", String::from_utf8_lossy(&o.stderr));
        std::fs::rename(&building, &lib).unwrap();
        lib
    })
}

fn with_fake(c: &mut Command) -> &mut Command {
    c.env("LAYA_BENCH_NVML_LIB", fake_nvml())
}

fn energy(dir: &Path, sensor: &str, env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    with_fake(&mut c).current_dir(dir).args([
        "energy",
        "--no-progress",
        "--sensor",
        sensor,
        "--arm",
        "a=portable:f32",
        "--arm",
        "b=mock:ok:delay-us=3000",
        "--seconds",
        "600ms",
        "--idle-seconds",
        "400ms",
        "--idle-discard",
        "100ms",
        "--cycles",
        "1",
        "--warmup",
        "2",
        "--raw",
        "r.raw.jsonl",
        "--output",
        "r.json",
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn doctor_reports_what_nvml_offers() {
    let mut c = bin();
    let o = with_fake(&mut c).args(["doctor", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let nvml = v["sensors"].as_array().unwrap().iter().find(|s| s["spec"] == "nvml:0").unwrap();
    assert_eq!(nvml["usable"], true, "{nvml}");
    let d = nvml["detail"].as_str().unwrap();
    for needle in [
        "Fake GPU (laya-bench test NVML, not a measurement)",
        "(from LAYA_BENCH_NVML_LIB)",
        "driver 550.00-laya-bench-fake",
        "enforced power limit 700.0 W",
        "driver update period ",
        "(measured by polling the values read for 1 s at most; changes: the counter every ",
        "the driver's power samples (nvmlDeviceGetSamples, 128 read) are stamped every 20.0 ms",
        "total: the energy counter",
    ] {
        assert!(d.contains(needle), "doctor lacks {needle:?}: {d}");
    }
}

#[test]
fn an_energy_run_records_both_quantities_samples_at_the_driver_period_and_cross_checks() {
    let dir = tempfile::tempdir().unwrap();
    // A driver that refreshes every 50 ms: sampled at 100 ms, two reads in a row stay an
    // update apart even when a loaded machine delays the sampler by up to 50 ms.
    let o = energy(dir.path(), "nvml-energy", &[("LAYA_FAKE_NVML_UPDATE_MS", "50")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["status"], "complete", "{}", r["status_reason"]);
    assert_eq!(r["sensor"]["spec"], "nvml-energy:0");
    assert_eq!(r["sensor"]["source"], "nvml-energy");
    // Twice the stand-in driver's period, as polled (whole milliseconds; a loaded machine can
    // see a change a few polls late).
    let interval = r["energy_plan"]["sample_interval_s"].as_f64().unwrap();
    assert!((0.1..=0.11).contains(&interval), "{}", r["energy_plan"]);
    let cross = &r["cross_check"];
    assert_eq!(
        (cross["total_channel"].as_str(), cross["channel"].as_str()),
        (Some("gpu0"), Some("gpu0-power"))
    );
    assert_eq!(cross["quantity"], "power");
    // One balanced cycle of two arms: A B B A.
    assert_eq!(cross["blocks"].as_array().unwrap().len(), 4);
    // Each block's duration and the power readings taken within a sample interval of it.
    let raw = std::fs::read_to_string(dir.path().join("r.raw.jsonl")).unwrap();
    let records: Vec<Value> = raw.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let power_readings: Vec<(f64, f64)> = records
        .iter()
        .filter(|r| r["record"] == "sample")
        .filter_map(|r| {
            let chans = r["outcome"]["reading"]["channels"].as_array()?;
            let w = chans.iter().find(|c| c["channel"] == "gpu0-power")?["measurement"]["watts"].as_f64()?;
            Some((r["t_receive_ns"].as_f64()? * 1e-9, w))
        })
        .collect();
    let update_s = 0.05;
    for b in cross["blocks"].as_array().unwrap() {
        let block = records
            .iter()
            .find(|r| r["record"] == "block" && r["index"] == b["index"])
            .unwrap_or_else(|| panic!("no block record for {b}"));
        let (start, end) =
            (block["start_ns"].as_f64().unwrap() * 1e-9, block["end_ns"].as_f64().unwrap() * 1e-9);
        let (t, p) = (b["total_j"].as_f64().unwrap(), b["other_j"].as_f64().unwrap());
        // The driver holds each value for one update period, so a reading is up to one period
        // stale, at either end of the block: each estimate covers the block's duration give or
        // take one period. At 75 W or more that is at least 75 × (duration − 0.05 s) J.
        let floor = 75.0 * (end - start - update_s);
        assert!(floor > 40.0 && t > floor && p > floor, "block lasted {:.3} s: {b}", end - start);
        // Counter and power describe the same piecewise-constant power: they may differ only by
        // that staleness at the two ends, at most one period of the highest power read near it.
        let p_hi = power_readings
            .iter()
            .filter(|(ts, _)| *ts > start - 0.2 && *ts < end + 0.2)
            .map(|(_, w)| *w)
            .fold(f64::NAN, f64::max);
        assert!(p_hi >= 75.0, "no power reading near block {b}");
        let d = b["difference_j"].as_f64().unwrap();
        assert!(
            d.abs() <= 2.0 * update_s * p_hi,
            "counter and power differ by {d} J (highest power {p_hi} W): {b}"
        );
    }
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(md.contains("Cross-check: `gpu0` (the total) against `gpu0-power` (power)"), "{md}");
    assert!(md.contains("Sample interval chosen from twice the sensor's measured update period 5"), "{md}");

    // The raw samples carry both channels and NVML's own numbers.
    let sample = raw.lines().find(|l| l.contains("\"record\":\"sample\"")).expect("a sample record");
    assert!(
        sample.contains("\"gpu0-power\"") && sample.contains(" mJ; ") && sample.contains(" mW"),
        "{sample}"
    );

    // summary re-derives the same cross-check from the raw record.
    let mut c = bin();
    let o = c
        .current_dir(dir.path())
        .args(["summary", "r.raw.jsonl", "--bootstrap", "200", "--output", "s.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("### Sensor cross-check"));
    let s: Value = serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    let run = &s["runs"][0];
    assert_eq!(run["status"], "complete", "{}", run["status_reasons"]);
    assert_eq!(run["cross_check"], *cross, "summary's cross-check differs from the run's");
}

/// The H200 of docs/runs/2026-12-04-h200: the driver stamped its power samples every 20 ms
/// while power and the counter refreshed every 100 ms. Sampling at twice the stamps' spacing
/// read the same counter value twice in a row, and the run was rejected for a counter that did
/// not advance; the period now comes from the values themselves.
#[test]
fn the_period_comes_from_the_values_read_not_from_finer_sample_stamps() {
    let h200 = [("LAYA_FAKE_NVML_UPDATE_MS", "100"), ("LAYA_FAKE_NVML_SAMPLE_MS", "20")];
    let mut c = bin();
    with_fake(&mut c).args(["doctor", "--json"]);
    for (k, v) in h200 {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let nvml = v["sensors"].as_array().unwrap().iter().find(|s| s["spec"] == "nvml:0").unwrap();
    let d = nvml["detail"].as_str().unwrap();
    assert!(d.contains("stamped every 20.0 ms, finer than the values the reads return"), "{d}");
    let period: f64 = d
        .split("driver update period ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no period in {d}"));
    assert!((100.0..=110.0).contains(&period), "{d}");

    let dir = tempfile::tempdir().unwrap();
    let mut c = bin();
    with_fake(&mut c)
        .current_dir(dir.path())
        .args(["energy", "--no-progress", "--sensor", "nvml-energy", "--arm", "a=mock:ok:delay-us=2000"])
        .args(["--seconds", "1s", "--idle-seconds", "800ms", "--idle-discard", "100ms", "--cycles", "1"])
        .args(["--warmup", "2", "--raw", "r.raw.jsonl", "--output", "r.json"]);
    for (k, v) in h200 {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["status"], "complete", "{}", r["status_reason"]);
    let interval = r["energy_plan"]["sample_interval_s"].as_f64().unwrap();
    assert!((0.2..=0.22).contains(&interval), "{}", r["energy_plan"]);
}

#[test]
fn power_as_the_total_and_a_given_interval_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = bin();
    let o = with_fake(&mut c)
        .current_dir(dir.path())
        .args(["energy", "--no-progress", "--sensor", "nvml-power:0", "--arm", "a=mock:ok:delay-us=2000"])
        .args(["--seconds", "500ms", "--idle-seconds", "400ms", "--idle-discard", "100ms", "--cycles", "1"])
        .args(["--sample-interval", "50ms", "--raw", "r.raw.jsonl", "--output", "r.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["sensor"]["source"], "nvml-power");
    assert_eq!(r["energy_plan"]["sample_interval_s"], 0.05);
    assert!(r["energy_plan"].get("sample_interval_reason").is_none(), "{}", r["energy_plan"]);
    assert_eq!(r["cross_check"]["channel"], "gpu0-energy");
    assert_eq!(r["cross_check"]["quantity"], "energy_counter");
}

#[test]
fn a_gpu_without_a_counter_refuses_nvml_energy_and_names_nvml_power() {
    let dir = tempfile::tempdir().unwrap();
    let o = energy(dir.path(), "nvml-energy", &[("LAYA_FAKE_NVML_NO_ENERGY", "1")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("--sensor nvml-energy:0") && e.contains("use nvml-power"), "{e}");
    assert!(!dir.path().join("r.raw.jsonl").exists(), "nothing was measured, so no raw file");
}

#[test]
fn a_gpu_lost_mid_run_fails_it_and_the_raw_record_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    // Open polls for up to 1 s; the GPU is lost 2 s after NVML's init, a few dozen samples
    // into a run of some 4.5 s.
    let o = energy(dir.path(), "nvml", &[("LAYA_FAKE_NVML_LOST_AFTER_MS", "2000")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let raw = std::fs::read_to_string(dir.path().join("r.raw.jsonl")).unwrap();
    assert!(raw.contains("GPU fell off the bus (GpuLost)"), "the fault is recorded");
    assert!(
        raw.lines().filter(|l| l.contains("\"record\":\"sample\"")).count() > 10,
        "samples before it are kept"
    );
    let r: Value = serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_ne!(r["status"], "complete");
}
