//! `laya-bench summary`: read raw records, audit and summarize them (`summary/`), write the
//! JSON, Markdown and CSV exports and the SVG pictures, print the Markdown; or append a
//! metadata correction to a raw record (`--correct`).
//!
//! Exit codes: 0 when every record is summarized as complete; 1 when one is rejected,
//! incomplete, failed or fails its audit (everything is still written); 2 for bad input (an
//! unreadable or garbled file, with its line number; a bad flag).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use super::{Failure, Outcome};
use crate::bench::outputs::check_folder;
use crate::bench::time::unix_now;
use crate::cli::SummaryArgs;
use crate::energy::counter_delta_j;
use crate::laya::bundle::sha256_hex;
use crate::power::sampler::{Sample, SampleOutcome};
use crate::power::Measurement;
use crate::report::plots::{
    self, ArmBand, BlockBand, BlockPoint, IdleBand, LatencySeries, PowerTimeline, RejectedPoint,
};
use crate::report::raw::{self, RawRun, Record, ToolInfo};
use crate::report::summary::{
    PlotFile, RunSummary, SummaryReport, SummarySettings, SummaryStatus, SCHEMA_VERSION,
};
use crate::report::write_atomic;
use crate::summary::{self, compare, Options};

/// The most bootstrap resamples accepted.
const MAX_RESAMPLES: usize = 10_000_000;

pub(crate) fn run(args: &SummaryArgs) -> Outcome {
    if let Some(raw_path) = &args.correct {
        return correct(args, raw_path);
    }
    let output = args.output.as_ref();
    if args.raws.is_empty() {
        return Err(Failure::input(anyhow!(
            "give at least one raw record (the `--raw` file of `speed` or `energy`)"
        )));
    }
    for (flag, path) in [("--output", &args.output), ("--markdown", &args.markdown), ("--csv", &args.csv)] {
        if let Some(p) = path {
            check_folder(flag, p)?;
        }
    }
    if let Some(dir) = args.plots.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        return Err(Failure::input(anyhow!("--plots {}: is a file, not a folder", dir.display())));
    }
    if let Some(dir) = &args.plots {
        // The folder itself when it exists, else the one it will be created in.
        let probe = if dir.is_dir() { dir.join("plot.svg") } else { dir.clone() };
        check_folder("--plots", &probe)?;
    }
    if args.bootstrap > MAX_RESAMPLES {
        return Err(Failure::input(anyhow!(
            "--bootstrap {} is more than {MAX_RESAMPLES} resamples (each arm keeps 7 figures per resample in memory); 10,000 is plenty for 95 % intervals",
            args.bootstrap
        )));
    }
    if let Some(t) = args.target.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(Failure::input(anyhow!("--target must be a positive factor such as 10, got {t}")));
    }
    let opts = Options {
        bootstrap: args.bootstrap,
        seed: args.seed,
        level: 0.95,
        target: args.target,
        baseline: args.baseline.clone(),
    };
    if let Some((a, b, how)) = same_record(&args.raws)? {
        let msg = format!(
            "{} and {} are {how}: a run compared with itself shows agreement that was never measured",
            a.display(),
            b.display()
        );
        if !args.allow_same {
            return Err(Failure::input(anyhow!(
                "{msg}; give each record once, or pass --allow-same to compare it with itself on purpose"
            )));
        }
        eprintln!("warning: {msg} (--allow-same)");
    }
    if (1..1000).contains(&args.bootstrap) {
        eprintln!(
            "warning: --bootstrap {} resamples give rough percentile intervals; use at least 1000 (the default is 10000)",
            args.bootstrap
        );
    }
    let mut raws = Vec::with_capacity(args.raws.len());
    let mut runs = Vec::with_capacity(args.raws.len());
    for path in &args.raws {
        let run =
            raw::read(path).map_err(|e| Failure::input(anyhow!(e).context("cannot read the raw record")))?;
        if !matches!(run.header.kind.as_str(), "speed" | "energy") {
            return Err(Failure::input(anyhow!(
                "{} is a `{}` record; summary reads the raw records of `speed` and `energy`",
                path.display(),
                run.header.kind
            )));
        }
        let s = summary::summarize(&run, &path.display().to_string(), &opts).map_err(Failure::input)?;
        runs.push(s);
        raws.push(run);
    }
    let comparison = if runs.len() > 1 {
        match runs.iter().find(|r| r.arms.is_empty()) {
            Some(r) => {
                eprintln!(
                    "warning: no side-by-side comparison: {} has no statistics ({})",
                    r.source,
                    r.statistics_missing_reason.as_deref().unwrap_or("not complete")
                );
                None
            }
            None => Some(compare::compare(&runs).map_err(Failure::input)?),
        }
    } else {
        None
    };
    let mut report = SummaryReport {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::current(),
        settings: SummarySettings {
            bootstrap_resamples: opts.bootstrap,
            seed: opts.seed,
            level: opts.level,
            target: opts.target,
            baseline: opts.baseline.clone(),
        },
        runs,
        comparison,
        plots: Vec::new(),
    };
    if let Some(dir) = &args.plots {
        report.plots = write_plots(dir, args.markdown.as_deref(), &report.runs, &raws)?;
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.to_markdown();
    if let Some(output) = output {
        write(output, &json)?;
    }
    if let Some(p) = &args.markdown {
        write(p, markdown.as_bytes())?;
    }
    if let Some(p) = &args.csv {
        write(p, report.to_csv().as_bytes())?;
    }
    println!("{markdown}");
    match output {
        Some(o) => println!("summary: {}", o.display()),
        None => println!("(no --output: the summary JSON was not written)"),
    }
    let written = output.map(|o| format!("the summary is written to {}", o.display()));
    let bad: Vec<String> = report
        .runs
        .iter()
        .filter(|r| r.status != SummaryStatus::Complete)
        .map(|r| {
            format!("{}: {}: {}", r.source, r.status.as_str().to_uppercase(), r.status_reasons.join("; "))
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Failure::run(anyhow!(
            "not every record holds up as a complete run ({}):\n  - {}",
            written.unwrap_or_else(|| "no --output was given".into()),
            bad.join("\n  - ")
        )))
    }
}

/// The first two raw records that are the same record: the same file (by path, another path
/// or a link) or byte-identical copies; with how they are the same.
fn same_record(raws: &[PathBuf]) -> Result<Option<(&PathBuf, &PathBuf, &'static str)>, Failure> {
    if raws.len() < 2 {
        return Ok(None);
    }
    let mut seen: Vec<(&PathBuf, Option<PathBuf>, String)> = Vec::with_capacity(raws.len());
    for path in raws {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read the raw record {}", path.display()))
            .map_err(Failure::input)?;
        let digest = sha256_hex(&bytes);
        let canonical = path.canonicalize().ok();
        for (other, other_canonical, other_digest) in &seen {
            if canonical.is_some() && canonical == *other_canonical {
                return Ok(Some((other, path, "the same file")));
            }
            if digest == *other_digest {
                return Ok(Some((other, path, "byte-identical copies of one record")));
            }
        }
        seen.push((path, canonical, digest));
    }
    Ok(None)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    write_atomic(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
        .map_err(Failure::run)
}

/// `--correct RAW --field PATH --note TEXT`: append one `metadata_correction` record.
fn correct(args: &SummaryArgs, raw_path: &Path) -> Outcome {
    let (Some(field), Some(note)) = (&args.field, &args.note) else {
        return Err(Failure::input(anyhow!("--correct needs --field PATH and --note TEXT")));
    };
    if note.trim().is_empty() {
        return Err(Failure::input(anyhow!("--note is empty: say what is wrong and what is right")));
    }
    let run =
        raw::read(raw_path).map_err(|e| Failure::input(anyhow!(e).context("cannot read the raw record")))?;
    let header = serde_json::to_value(&run.header).map_err(|e| Failure::run(anyhow!(e)))?;
    if let Err(why) = resolve(&header, field) {
        return Err(Failure::input(anyhow!(
            "--field `{field}` names no field of the header of {}: {why}; give a dotted path such as `host.cpu_model` or `arms.0.precision`",
            raw_path.display()
        )));
    }
    raw::append_correction(raw_path, field, note, unix_now()).map_err(|e| Failure::input(anyhow!(e)))?;
    println!(
        "appended a metadata_correction of `{field}` to {} (the original fields and measurements are unchanged)",
        raw_path.display()
    );
    Ok(())
}

/// Walk a dotted path (`host.cpu_model`, `arms.1.precision`) through the header's JSON.
fn resolve<'v>(value: &'v serde_json::Value, path: &str) -> Result<&'v serde_json::Value, String> {
    let mut at = value;
    for (depth, seg) in path.split('.').enumerate() {
        let here = path.split('.').take(depth).collect::<Vec<_>>().join(".");
        at = match at {
            serde_json::Value::Object(m) => m.get(seg).ok_or_else(|| {
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                format!("`{seg}` is not a key of `{here}` (keys: {})", keys.join(", "))
            })?,
            serde_json::Value::Array(a) => {
                seg.parse::<usize>().ok().and_then(|i| a.get(i)).ok_or_else(|| match a.len() {
                    0 => format!("`{here}` is empty: it has no element `{seg}`"),
                    n => format!("`{seg}` is not an index of `{here}` (0 to {})", n - 1),
                })?
            }
            _ => return Err(format!("`{here}` is a value, it has no field `{seg}`")),
        };
    }
    Ok(at)
}

/// The path to put in the Markdown: relative to the Markdown's folder when the picture is
/// inside it, else as written.
fn link(file: &Path, markdown: Option<&Path>) -> String {
    let base =
        markdown.and_then(|m| m.parent()).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    let rel = base.and_then(|b| {
        let (b, f) = (b.canonicalize().ok()?, file.canonicalize().ok()?);
        f.strip_prefix(&b).ok().map(Path::to_path_buf)
    });
    rel.unwrap_or_else(|| file.to_path_buf()).display().to_string()
}

fn write_plots(
    dir: &Path,
    markdown: Option<&Path>,
    runs: &[RunSummary],
    raws: &[RawRun],
) -> Result<Vec<PlotFile>, Failure> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the plots folder {}", dir.display()))
        .map_err(Failure::input)?;
    let mut files = Vec::new();
    for (i, (s, run)) in runs.iter().zip(raws).enumerate() {
        let prefix = if runs.len() > 1 { format!("run{i}-") } else { String::new() };
        for (kind, svg) in pictures(s, run) {
            let svg = svg.map_err(|e| Failure::run(anyhow!(e)))?;
            let path: PathBuf = dir.join(format!("{prefix}{kind}.svg"));
            write(&path, svg.as_bytes())?;
            files.push(PlotFile { run: i, kind: kind.into(), path: link(&path, markdown) });
        }
    }
    Ok(files)
}

type Picture = (&'static str, Result<String, plots::PlotError>);

/// Every sample as (receive time s, watts, seq): the reading's total watts, or for counter
/// sensors the power implied by the counters' change since the previous sample (summed over
/// the channels in the total, wrap-corrected); `None` for a fault or where it cannot be formed.
fn sample_watts(run: &RawRun) -> Vec<(f64, Option<f64>, u64)> {
    let samples: Vec<&Sample> = run
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Sample(x) => Some(x.as_ref()),
            _ => None,
        })
        .collect();
    let counters = |s: &Sample| -> Option<Vec<(String, f64, Option<f64>)>> {
        let SampleOutcome::Reading(r) = &s.outcome else { return None };
        r.channels
            .iter()
            .filter(|c| c.in_total)
            .map(|c| match c.measurement {
                Measurement::EnergyCounterJ { joules, wrap_j } => Some((c.channel.clone(), joules, wrap_j)),
                Measurement::PowerW { .. } => None,
            })
            .collect()
    };
    let mut out = Vec::with_capacity(samples.len());
    for (i, s) in samples.iter().enumerate() {
        let watts = match &s.outcome {
            SampleOutcome::Fault(_) => None,
            SampleOutcome::Reading(r) => r.total_power_w().or_else(|| {
                let (prev, cur) = (counters(samples.get(i.checked_sub(1)?)?)?, counters(s)?);
                let dt = s.t_receive_s() - samples[i - 1].t_receive_s();
                let mut joules = 0.0;
                for (name, j, wrap) in &cur {
                    let (_, p, _) = prev.iter().find(|(n, _, _)| n == name)?;
                    joules += counter_delta_j(*p, *j, *wrap).ok()?;
                }
                (dt > 0.0).then(|| joules / dt)
            }),
        };
        out.push((s.t_receive_s(), watts, s.seq));
    }
    out
}

/// The pictures a run supports: the power timeline (energy records with samples),
/// the latency CDF (any record with calls), energy per block (complete energy runs).
fn pictures(s: &RunSummary, run: &RawRun) -> Vec<Picture> {
    let arms: Vec<String> = run.header.arms.iter().map(|a| a.name.clone()).collect();
    let arm_index = |name: &str| arms.iter().position(|a| a == name).unwrap_or(0);
    let mut out = Vec::new();
    let samples = sample_watts(run);
    if samples.iter().any(|x| x.1.is_some()) {
        let discard = run.header.energy.as_ref().map(|e| e.idle_discard_s).unwrap_or(0.0);
        let idles = run
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Idle { start_ns, end_ns, .. } => {
                    let (a, b) = (*start_ns as f64 / 1e9, *end_ns as f64 / 1e9);
                    Some(IdleBand { start_s: a, stable_start_s: (a + discard).min(b), end_s: b })
                }
                _ => None,
            })
            .collect();
        let rejected = s
            .rejections
            .iter()
            .flat_map(|r| {
                r.evidence.iter().map(|ev| RejectedPoint {
                    t_s: ev.t_receive_s,
                    watts: samples.iter().find(|x| x.2 == ev.seq).and_then(|x| x.1),
                    rule: r.rejection.rule().into(),
                })
            })
            .collect();
        let timeline = PowerTimeline {
            title: format!("Power over time: {} ({})", s.source, s.status.as_str()),
            arms: arms.clone(),
            samples: samples.iter().map(|x| (x.0, x.1)).collect(),
            blocks: s
                .blocks
                .iter()
                .map(|b| BlockBand { start_s: b.start_s, end_s: b.end_s, arm: arm_index(&b.arm) })
                .collect(),
            idles,
            rejected,
            max_gap_s: run.header.energy.as_ref().map(|e| e.max_gap_s),
        };
        out.push(("power_timeline", plots::power_timeline(&timeline)));
    }
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    for r in &run.records {
        if let Record::Call { arm, duration_ns, .. } = r {
            latencies[arm_index(arm)].push(*duration_ns as f64 / 1e6);
        }
    }
    if latencies.iter().any(|l| !l.is_empty()) {
        let series: Vec<LatencySeries> = arms
            .iter()
            .zip(latencies)
            .map(|(a, mut l)| {
                l.sort_by(f64::total_cmp);
                LatencySeries { arm: a.clone(), sorted_ms: l }
            })
            .collect();
        out.push((
            "latency_cdf",
            plots::latency_cdf(&format!("Call latency per arm: {}", s.source), &series),
        ));
    }
    let points: Vec<BlockPoint> = s
        .blocks
        .iter()
        .filter_map(|b| {
            b.energy_per_decision_j.map(|j| BlockPoint {
                index: b.index,
                arm: arm_index(&b.arm),
                j_per_decision: j,
            })
        })
        .collect();
    if !points.is_empty() && !s.arms.is_empty() {
        let bands: Vec<ArmBand> = s
            .arms
            .iter()
            .map(|a| ArmBand {
                value: a.totals.energy_per_decision_j.unwrap_or(f64::NAN),
                interval: a.intervals.energy_per_decision_j.map(|i| (i.low, i.high)),
            })
            .collect();
        let title = format!("Energy per decision per block: {}", s.source);
        out.push(("energy_per_block", plots::energy_per_block(&title, &arms, &points, &bands)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::Reading;

    #[test]
    fn counter_samples_give_the_implied_power_and_faults_none() {
        let header = crate::summary::synthetic::records(&crate::summary::synthetic::RunShape::published())
            .into_iter()
            .find_map(|r| match r {
                Record::Header(h) => Some(*h),
                _ => None,
            })
            .unwrap();
        let counter = |seq: u64, t_s: f64, j: f64| {
            Record::Sample(Box::new(Sample {
                seq,
                t_request_ns: 0,
                t_receive_ns: (t_s * 1e9) as u64,
                outcome: SampleOutcome::Reading(Reading::energy_counter_j("package-0", j, Some(100.0))),
            }))
        };
        // 10 W for 0.5 s, then a wrap at 100 J: 98 → 3 is 5 J in 0.5 s = 10 W.
        let records = vec![counter(0, 1.0, 93.0), counter(1, 1.5, 98.0), counter(2, 2.0, 3.0)];
        let run = RawRun { header, records, lines: Vec::new(), complete: false, truncated_tail: None };
        let w = sample_watts(&run);
        assert_eq!(w[0].1, None, "the first counter reading implies no power");
        assert!((w[1].1.unwrap() - 10.0).abs() < 1e-9 && (w[2].1.unwrap() - 10.0).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn dotted_paths_resolve_through_objects_and_arrays() {
        let v = serde_json::json!({"host": {"cpu_model": "x"}, "arms": [{"precision": "fp16"}]});
        assert_eq!(resolve(&v, "host.cpu_model").unwrap(), "x");
        assert_eq!(resolve(&v, "arms.0.precision").unwrap(), "fp16");
        assert!(resolve(&v, "host.gpu")
            .unwrap_err()
            .contains("`gpu` is not a key of `host` (keys: cpu_model)"));
        assert!(resolve(&v, "arms.3").unwrap_err().contains("not an index"));
        assert!(resolve(&v, "host.cpu_model.x").unwrap_err().contains("is a value"));
    }
}
