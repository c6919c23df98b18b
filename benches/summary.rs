//! `summary` on a record the size of the published run (65,598 calls, 1,101 samples, 18 blocks)
//! with 10,000 bootstrap resamples: wall time and peak resident memory, in-process (read +
//! audit + statistics + bootstrap) and through the binary (everything, with the Markdown, CSV
//! and SVG exports).
//!
//! Run: `cargo bench --bench summary`. Target: < 1 s and < 200 MB.

use std::process::Command;
use std::time::Instant;

use laya_bench::record::synthetic::{records, RunShape};
use laya_bench::record::{self, RawWriter};
use laya_bench::summary::{summarize, Options};

/// Peak resident set of this process, bytes (`VmHWM`, Linux).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// Largest peak resident set of any waited-for child, bytes.
fn children_peak_rss_bytes() -> u64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage struct; RUSAGE_CHILDREN is a valid selector.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

fn main() {
    let dir = std::env::temp_dir().join(format!("laya-bench-summary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("published.raw.jsonl");
    {
        let recs = records(&RunShape::published());
        let mut w = RawWriter::create(&path).expect("raw file");
        for r in &recs {
            w.write(r).expect("write");
        }
        w.sync().expect("sync");
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    // Reset the peak-RSS mark so it measures the summary, not the record's construction.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let opts = Options { bootstrap: 10_000, seed: 0, ..Options::default() };
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let run = record::read(&path).expect("read");
        let s = summarize(&run, "published", &opts).expect("summarize");
        assert_eq!(s.arms[1].intervals.energy_gain.map(|i| i.valid_resamples), Some(10_000));
        std::hint::black_box(&s);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let peak = peak_rss_bytes();

    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(&dir)
        .args([
            "summary",
            "published.raw.jsonl",
            "--output",
            "s.json",
            "--markdown",
            "s.md",
            "--csv",
            "s.csv",
        ])
        .args(["--plots", "plots", "--bootstrap", "10000"])
        .output()
        .expect("run laya-bench summary");
    let binary_s = t.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let child_peak = children_peak_rss_bytes();
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{{\"bench\": \"summary_published_size\", \"raw_bytes\": {bytes}, \"resamples\": 10000, \"in_process_best_of_3_s\": {best:.3}, \"in_process_peak_rss_mb\": {}, \"peak_reset\": {reset}, \"binary_wall_s\": {binary_s:.3}, \"binary_peak_rss_mb\": {:.1}}}",
        peak.map(|p| format!("{:.1}", p as f64 / 1e6)).unwrap_or_else(|| "null".into()),
        child_peak as f64 / 1e6
    );
}
