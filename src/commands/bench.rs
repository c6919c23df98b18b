//! What `speed` and `energy` share: arm specs, the workload, output paths and the refusal to
//! overwrite, the raw header and per-block records, the progress bar and the exports.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::Failure;
use crate::backend::registry::{self, portable_precisions, BackendSpec};
use crate::backend::{ShapeCaps, ShapeMode};
use crate::cli::RunArgs;
use crate::laya::bundle::Bundle;
use crate::laya::host::{Host, StateResult};
use crate::laya::workload::{self, Built};
use crate::protocol::{self, answer_label, Arm, BlockLimit, Plan};
use crate::report::raw::{self, ArmInfo, Header, HostInfo, PlanInfo, Record, ToolInfo, WorkloadInfo};
use crate::report::write_atomic;

/// Parse `NAME=SPEC` arms, or the default portable precisions.
pub(crate) fn arm_specs(args: &RunArgs) -> Result<Vec<(String, String)>, Failure> {
    if args.arms.is_empty() {
        return Ok(portable_precisions()
            .iter()
            .map(|p| (p.name().to_string(), format!("portable:{}", p.name())))
            .collect());
    }
    named_arms(&args.arms)
}

/// Parse `NAME=SPEC` arms (exit 2 on a malformed or repeated name).
pub(crate) fn named_arms(arms: &[String]) -> Result<Vec<(String, String)>, Failure> {
    let mut out: Vec<(String, String)> = Vec::new();
    for a in arms {
        let (name, spec) =
            a.split_once('=').filter(|(n, s)| !n.is_empty() && !s.is_empty()).ok_or_else(|| {
                Failure::input(anyhow!("--arm `{a}`: write it as NAME=SPEC, e.g. --arm f32=portable:f32"))
            })?;
        if out.iter().any(|(n, _)| n == name) {
            return Err(Failure::input(anyhow!(
                "--arm: the name `{name}` is used twice; give every arm its own name"
            )));
        }
        out.push((name.to_string(), spec.to_string()));
    }
    Ok(out)
}

/// A positive duration flag (`--seconds`, `--idle-seconds`, ...).
pub(crate) fn positive_duration(flag: &str, value: &str) -> Result<Duration, Failure> {
    let d =
        crate::power::parse_duration(value).map_err(|e| Failure::input(anyhow!("{flag} `{value}`: {e}")))?;
    if d.is_zero() {
        return Err(Failure::input(anyhow!("{flag} must be longer than zero")));
    }
    Ok(d)
}

/// Parse every arm spec and check the length and token flags, before anything is loaded.
pub(crate) fn check_inputs(args: &RunArgs, specs: &[(String, String)]) -> Result<Vec<BackendSpec>, Failure> {
    let parsed: Vec<BackendSpec> =
        specs.iter().map(|(_, s)| BackendSpec::parse(s)).collect::<Result<_, _>>().map_err(Failure::input)?;
    check_length(&args.workload, args.tokens, args.length)?;
    Ok(parsed)
}

/// `--length` must be positive and, for the invoice workload, hold `--tokens` (exit 2).
pub(crate) fn check_length(workload: &str, tokens: usize, length: usize) -> Result<(), Failure> {
    if length == 0 {
        return Err(Failure::input(anyhow!("--length must be at least 1")));
    }
    if workload == "invoice" && tokens > length {
        return Err(Failure::input(anyhow!(
            "--tokens {tokens} does not fit --length {length}: rows are padded up to the length, never cut; raise --length or lower --tokens"
        )));
    }
    Ok(())
}

/// `speed-20261129T151500Z` style stem from the current UTC time.
pub(crate) fn timestamp_stem(prefix: &str) -> String {
    let (y, m, d, hh, mm, ss) = utc_now();
    format!("{prefix}-{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z")
}

/// ISO-8601 UTC time of now, to the second (`2026-11-29T21:57:27Z`).
pub(crate) fn iso_utc_now() -> String {
    let (y, m, d, hh, mm, ss) = utc_now();
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// Now as UTC (year, month, day, hour, minute, second).
fn utc_now() -> (i64, i64, i64, i64, i64, i64) {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The raw and report paths: as given, or `PREFIX-<UTC time>.raw.jsonl` and its `.json`
/// (`PREFIX-<UTC time>-2…` when a run of the same second already took that name).
pub(crate) fn output_paths(args: &RunArgs, prefix: &str) -> (PathBuf, PathBuf) {
    let report_for = |raw: &Path| {
        let s = raw.to_string_lossy();
        PathBuf::from(match s.strip_suffix(".raw.jsonl") {
            Some(stem) => format!("{stem}.json"),
            None => format!("{s}.report.json"),
        })
    };
    let raw = args.raw.clone().unwrap_or_else(|| {
        first_free(&timestamp_stem(prefix), |raw| {
            raw.exists() || args.output.is_none() && report_for(raw).exists()
        })
    });
    let output = args.output.clone().unwrap_or_else(|| report_for(&raw));
    (raw, output)
}

/// The folder `path` will be written in (`.` for a bare file name); exit 2 naming `flag` when
/// it does not exist or cannot be written in (a probe file is created and removed), so a run
/// never measures first and then fails to save.
pub(crate) fn check_folder<'p>(flag: &str, path: &'p Path) -> Result<&'p Path, Failure> {
    let folder = match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(Failure::input(anyhow!(
            "{flag} {}: the folder {} does not exist; create it or choose another path",
            path.display(),
            folder.display()
        )));
    }
    if path.is_dir() {
        return Err(Failure::input(anyhow!("{flag} {}: is a folder; give a file path", path.display())));
    }
    crate::report::check_writable(folder).map_err(|e| {
        Failure::input(anyhow!(
            "{flag} {}: cannot write in the folder {} ({e}); choose a folder you can write in",
            path.display(),
            folder.display()
        ))
    })?;
    Ok(folder)
}

/// `STEM.raw.jsonl`, or `STEM-2.raw.jsonl`, `STEM-3…` when `taken`.
fn first_free(stem: &str, taken: impl Fn(&Path) -> bool) -> PathBuf {
    let mut raw = PathBuf::from(format!("{stem}.raw.jsonl"));
    let mut n = 2;
    while taken(&raw) {
        raw = PathBuf::from(format!("{stem}-{n}.raw.jsonl"));
        n += 1;
    }
    raw
}

/// Check every file a `speed`/`energy` run will write before anything is measured (exit 2):
/// no two of the raw record, report and exports are the same file, none exists unless
/// `--overwrite`, and each one's folder exists.
pub(crate) fn check_output_files(args: &RunArgs, raw: &Path, output: &Path) -> Result<(), Failure> {
    let mut files: Vec<(&str, &Path)> = vec![("--raw", raw), ("--output", output)];
    if let Some(p) = &args.export_markdown {
        files.push(("--export-markdown", p));
    }
    if let Some(p) = &args.export_csv {
        files.push(("--export-csv", p));
    }
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for (flag, path) in files {
        let folder = check_folder(flag, path)?;
        let key = folder
            .canonicalize()
            .unwrap_or_else(|_| folder.to_path_buf())
            .join(path.file_name().unwrap_or_default());
        if let Some((other, _)) = seen.iter().find(|(_, k)| *k == key) {
            return Err(Failure::input(anyhow!(
                "{other} and {flag} both name {}: the raw record, the report and each export need their own file",
                path.display()
            )));
        }
        seen.push((flag, key));
        refuse_existing(path, args.overwrite)?;
    }
    Ok(())
}

/// Refuse to replace an existing measurement unless `--overwrite` was given.
pub(crate) fn refuse_existing(path: &Path, overwrite: bool) -> Result<(), Failure> {
    if path.exists() && !overwrite {
        return Err(Failure::input(anyhow!(
            "{} exists; laya-bench never replaces a measurement silently: choose another path or pass --overwrite",
            path.display()
        )));
    }
    Ok(())
}

/// The arms, built for one fixed length, and the workload they run.
pub(crate) struct Setup<'b> {
    /// Arms, baseline first.
    pub arms: Vec<Arm<'b>>,
    /// The workload as built (token counts per row).
    pub built: Built,
    /// The workload the protocol cycles through.
    pub workload: protocol::Workload,
}

/// Build every arm at `--length` and the workload (exit 2 for anything that cannot run).
pub(crate) fn build_setup<'b>(
    bundle: &'b Bundle,
    args: &RunArgs,
    specs: &[(String, String)],
    parsed: &[BackendSpec],
) -> Result<Setup<'b>, Failure> {
    if args.length > bundle.agent.max_len {
        return Err(Failure::input(anyhow!(
            "--length {} is longer than the model's max_len {}: the host never builds a row that long; pass --length {} or less",
            args.length,
            bundle.agent.max_len,
            bundle.agent.max_len
        )));
    }
    let shapes = ShapeCaps {
        batch_size: 1,
        max_length: args.length,
        min_length: args.length,
        max_options: 32,
        mode: ShapeMode::Fixed,
    };
    let mut arms: Vec<Arm<'_>> = Vec::with_capacity(specs.len());
    for ((name, spec), parsed) in specs.iter().zip(parsed) {
        let backend = registry::build(parsed, spec, bundle, Some(shapes.clone()))
            .map_err(|e| Failure::input(anyhow!(e).context(format!("arm `{name}`"))))?;
        let caps = backend.info().shapes.clone();
        if caps.max_length != args.length
            || caps.mode != ShapeMode::Fixed && !matches!(caps.mode, ShapeMode::Range)
        {
            return Err(Failure::input(anyhow!(
                "arm `{name}` cannot run length {} (it runs {})",
                args.length,
                caps.max_length
            )));
        }
        for note in &backend.info().notes {
            eprintln!("note: arm `{name}` ({spec}): {note}");
        }
        let host = registry::host_for(bundle, caps, backend.info());
        arms.push(Arm { name: name.clone(), spec: spec.clone(), backend, host });
    }
    let (built, workload) = build_workload(&arms[0].host, &args.workload, args.tokens, args.length)?;
    Ok(Setup { arms, built, workload })
}

/// The invoice workload at exactly `tokens` real tokens per row, or the requests of a file;
/// refused (exit 2) when a row is longer than `length`. Prints the checkpoint's load warnings.
pub(crate) fn build_workload(
    host: &Host<'_>,
    name: &str,
    tokens: usize,
    length: usize,
) -> Result<(workload::Built, protocol::Workload), Failure> {
    let built = if name == "invoice" {
        workload::invoice(host, tokens)
            .map_err(|e| Failure::input(anyhow!(e).context("--workload invoice")))?
    } else {
        workload::from_file(Path::new(name), host).map_err(Failure::input)?
    };
    let longest = built.tokens_per_row.iter().flatten().copied().max().unwrap_or(0);
    if longest > length {
        return Err(Failure::input(anyhow!(
            "the workload has a row of {longest} tokens, longer than --length {length}; raise --length"
        )));
    }
    for w in host.load_warnings() {
        eprintln!("warning: {w}");
    }
    let workload = protocol::Workload { name: built.name.clone(), requests: built.requests.clone() };
    Ok((built, workload))
}

/// Wall-clock now, Unix seconds.
pub(crate) fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

pub(crate) fn model_json(bundle: &Bundle) -> serde_json::Value {
    let e = &bundle.encoder;
    json!({
        "spec": bundle.source,
        "hidden_size": e.hidden_size,
        "layers": e.num_layers,
        "heads": e.num_heads,
        "intermediate_size": e.intermediate_size,
        "vocab_size": e.vocab_size,
        "head_layers": bundle.agent.head_layers,
        "max_len": bundle.agent.max_len,
    })
}

/// The raw header (without sensor or energy settings, which `energy` adds).
pub(crate) fn header(kind: &str, bundle: &Bundle, setup: &Setup<'_>, args: &RunArgs, plan: &Plan) -> Header {
    let arms = &setup.arms;
    let order: Vec<String> = protocol::balanced_order(arms.len(), plan.cycles)
        .iter()
        .map(|&(_, a)| arms[a].name.clone())
        .collect();
    Header {
        schema_version: raw::SCHEMA_VERSION,
        kind: kind.into(),
        tool: ToolInfo::current(),
        command_line: std::env::args().collect(),
        started_unix_s: 0.0,
        clock: "monotonic ns since started_unix_s".into(),
        host: HostInfo::detect(),
        model: model_json(bundle),
        arms: arms.iter().map(arm_info).collect(),
        workload: WorkloadInfo {
            name: setup.built.name.clone(),
            requests: setup.built.requests.len(),
            tokens_per_row: setup.built.tokens_per_row.clone(),
            target_tokens: (args.workload == "invoice").then_some(args.tokens),
            length: args.length,
        },
        plan: PlanInfo {
            cycles: plan.cycles,
            block_seconds: match plan.block {
                BlockLimit::Duration(d) => Some(d.as_secs_f64()),
                BlockLimit::Calls(_) => None,
            },
            block_calls: match plan.block {
                BlockLimit::Calls(k) => Some(k),
                BlockLimit::Duration(_) => None,
            },
            warmup_calls: plan.warmup_calls,
            order,
        },
        sensor: None,
        energy: None,
    }
}

/// The warm-up record and its reference answers per request.
pub(crate) fn warmup_record(arms: &[Arm<'_>], rec: &protocol::WarmupRecord) -> (Record, Vec<String>) {
    let answers: Vec<String> = rec.results.iter().map(answer_label).collect();
    let record = Record::Warmup {
        arm: arms[rec.arm].name.clone(),
        calls: rec.calls,
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
        answers: answers.clone(),
    };
    (record, answers)
}

/// A finished block as raw records: the block, then each of its calls. `answers` holds every
/// arm's warm-up answers; stable calls repeat them, unstable calls carry their own.
pub(crate) fn block_records(
    arms: &[Arm<'_>],
    rec: &protocol::BlockRecord,
    calls: &[protocol::CallRecord],
    unstable: &[(usize, StateResult)],
    answers: &[Vec<String>],
) -> Vec<Record> {
    let name = &arms[rec.arm].name;
    let mut out = Vec::with_capacity(calls.len() + 1);
    out.push(Record::Block {
        index: rec.index,
        cycle: rec.cycle,
        arm: name.clone(),
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
        calls: rec.calls,
        unstable_calls: rec.unstable_calls,
        rss_bytes: raw::current_rss_bytes(),
        scheduled_calls: rec.scheduled_calls,
        missed_deadlines: rec.scheduled_calls.map(|_| rec.missed_deadlines),
        ended_early: rec.ended_early,
    });
    let mut unstable_iter = unstable.iter().peekable();
    for (i, c) in calls.iter().enumerate() {
        let answer = match unstable_iter.peek() {
            Some((j, r)) if *j == i => {
                unstable_iter.next();
                answer_label(r)
            }
            _ => answers.get(rec.arm).and_then(|a| a.get(c.state as usize)).cloned().unwrap_or_default(),
        };
        out.push(Record::Call {
            block: c.block,
            arm: name.clone(),
            state: c.state,
            start_ns: c.start_ns,
            duration_ns: c.duration_ns,
            answer,
            stable: c.stable,
            scheduled_ns: c.scheduled_ns,
            missed_deadline: c.missed_deadline,
        });
    }
    out
}

/// The progress line: blocks done, elapsed time and the estimated time left (from the blocks
/// done so far), and the live message.
pub(crate) const PROGRESS_TEMPLATE: &str =
    "{spinner} [{bar:30}] {pos}/{len} blocks · {elapsed_precise} elapsed · ETA {eta} · {msg}";

/// The block progress bar (hidden with `--no-progress`).
pub(crate) fn progress_bar(blocks: u64, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::new(blocks);
    if hidden {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(PROGRESS_TEMPLATE).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Write the JSON report and the requested Markdown and CSV exports (each atomically).
pub(crate) fn write_outputs(
    args: &RunArgs,
    output_path: &Path,
    json: &[u8],
    markdown: &str,
    csv: &str,
) -> Result<(), Failure> {
    write_atomic(output_path, json)
        .with_context(|| format!("cannot write {}", output_path.display()))
        .map_err(Failure::run)?;
    if let Some(p) = &args.export_markdown {
        write_atomic(p, markdown.as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))
            .map_err(Failure::run)?;
    }
    if let Some(p) = &args.export_csv {
        write_atomic(p, csv.as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))
            .map_err(Failure::run)?;
    }
    Ok(())
}

/// An arm's identity for the raw header: name, spec, backend, precision, device, fingerprint
/// and shape.
pub(crate) fn arm_info(arm: &Arm<'_>) -> ArmInfo {
    ArmInfo::describe(&arm.name, &arm.spec, arm.backend.info())
}

#[cfg(test)]
mod tests {
    use super::first_free;
    use std::path::{Path, PathBuf};

    #[test]
    fn the_progress_line_shows_the_time_left() {
        let style = indicatif::ProgressStyle::with_template(super::PROGRESS_TEMPLATE);
        assert!(style.is_ok());
        assert!(super::PROGRESS_TEMPLATE.contains("ETA {eta}"));
    }

    #[test]
    fn a_default_name_taken_in_the_same_second_gets_a_suffix() {
        let taken = ["speed-T.raw.jsonl", "speed-T-2.raw.jsonl"];
        let free = first_free("speed-T", |p: &Path| taken.iter().any(|t| Path::new(t) == p));
        assert_eq!(free, PathBuf::from("speed-T-3.raw.jsonl"));
        assert_eq!(first_free("speed-T", |_: &Path| false), PathBuf::from("speed-T.raw.jsonl"));
    }
}
