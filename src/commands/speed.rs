//! `laya-bench speed`: balanced, audit-grade latency and throughput of one or more arms.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;

use super::predict::load_bundle;
use super::{Failure, Outcome};
use crate::backend::registry::{self, portable_precisions, BackendSpec};
use crate::backend::{ShapeCaps, ShapeMode};
use crate::cli::SpeedArgs;
use crate::laya::bundle::Bundle;
use crate::laya::host::{Host, HostError, StateResult};
use crate::laya::workload;
use crate::protocol::{
    self, answer_label, probabilities, Arm, BlockLimit, Clock, Observer, Plan, Progress, RunError,
};
use crate::report::raw::{
    self, ArmInfo, Header, HostInfo, PlanInfo, RawWriter, Record, ToolInfo, WorkloadInfo,
};
use crate::report::speed::{ArmResult, SpeedReport};
use crate::report::write_atomic;
use crate::stats::LatencySummary;

/// Parse `NAME=SPEC` arms, or the default portable precisions.
fn arm_specs(args: &SpeedArgs) -> Result<Vec<(String, String)>, Failure> {
    if args.arms.is_empty() {
        return Ok(portable_precisions()
            .iter()
            .map(|p| (p.name().to_string(), format!("portable:{}", p.name())))
            .collect());
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for a in &args.arms {
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

fn plan(args: &SpeedArgs) -> Result<Plan, Failure> {
    if args.cycles == 0 {
        return Err(Failure::input(anyhow!("--cycles must be at least 1")));
    }
    let block = match args.calls {
        Some(0) => return Err(Failure::input(anyhow!("--calls must be at least 1"))),
        Some(k) => BlockLimit::Calls(k),
        None => {
            let d = crate::power::parse_duration(&args.seconds)
                .map_err(|e| Failure::input(anyhow!("--seconds `{}`: {e}", args.seconds)))?;
            if d.is_zero() {
                return Err(Failure::input(anyhow!("--seconds must be longer than zero")));
            }
            BlockLimit::Duration(d)
        }
    };
    Ok(Plan::saturated(args.cycles, block, args.warmup))
}

/// `speed-20261129T151500Z` style stem from the current UTC time.
fn timestamp_stem(prefix: &str) -> String {
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
    format!("{prefix}-{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn output_paths(args: &SpeedArgs) -> (PathBuf, PathBuf) {
    let raw =
        args.raw.clone().unwrap_or_else(|| PathBuf::from(format!("{}.raw.jsonl", timestamp_stem("speed"))));
    let output = args.output.clone().unwrap_or_else(|| {
        let s = raw.to_string_lossy();
        PathBuf::from(match s.strip_suffix(".raw.jsonl") {
            Some(stem) => format!("{stem}.json"),
            None => format!("{s}.report.json"),
        })
    });
    (raw, output)
}

fn refuse_existing(path: &Path, overwrite: bool) -> Result<(), Failure> {
    if path.exists() && !overwrite {
        return Err(Failure::input(anyhow!(
            "{} exists; laya-bench never replaces a measurement silently: choose another path or pass --overwrite",
            path.display()
        )));
    }
    Ok(())
}

struct RawObserver<'p> {
    raw: RawWriter,
    bar: &'p ProgressBar,
    answers: Vec<Vec<String>>,
    total_calls: u64,
}

impl Observer for RawObserver<'_> {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &protocol::WarmupRecord) -> std::io::Result<()> {
        let answers: Vec<String> = rec.results.iter().map(answer_label).collect();
        self.raw.write(&Record::Warmup {
            arm: arms[rec.arm].name.clone(),
            calls: rec.calls,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
            answers: answers.clone(),
        })?;
        self.answers.push(answers);
        self.raw.sync()
    }

    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &protocol::BlockRecord,
        calls: &[protocol::CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> std::io::Result<()> {
        let name = &arms[rec.arm].name;
        self.raw.write(&Record::Block {
            index: rec.index,
            cycle: rec.cycle,
            arm: name.clone(),
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
            calls: rec.calls,
            unstable_calls: rec.unstable_calls,
            rss_bytes: raw::current_rss_bytes(),
        })?;
        let mut unstable_iter = unstable.iter().peekable();
        for (i, c) in calls.iter().enumerate() {
            let answer = match unstable_iter.peek() {
                Some((j, r)) if *j == i => {
                    unstable_iter.next();
                    answer_label(r)
                }
                _ => self
                    .answers
                    .get(rec.arm)
                    .and_then(|a| a.get(c.state as usize))
                    .cloned()
                    .unwrap_or_default(),
            };
            self.raw.write(&Record::Call {
                block: c.block,
                arm: name.clone(),
                state: c.state,
                start_ns: c.start_ns,
                duration_ns: c.duration_ns,
                answer,
                stable: c.stable,
            })?;
        }
        self.total_calls += calls.len() as u64;
        self.bar.inc(1);
        self.raw.sync()
    }

    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> std::io::Result<()> {
        self.raw.write(&Record::Error { arm: arms[arm].name.clone(), block, message: error.to_string() })?;
        self.raw.sync()
    }

    fn progress(&mut self, arms: &[Arm<'_>], p: &Progress) {
        let rate = if p.elapsed_s > 0.0 { p.calls as f64 / p.elapsed_s } else { 0.0 };
        self.bar.set_message(format!(
            "arm {} · cycle {} · {:.0} calls/s",
            arms[p.arm].name,
            p.cycle + 1,
            rate
        ));
    }
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn model_json(bundle: &Bundle) -> serde_json::Value {
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

pub(crate) fn run(args: &SpeedArgs) -> Outcome {
    let specs = arm_specs(args)?;
    let plan = plan(args)?;
    let parsed: Vec<BackendSpec> =
        specs.iter().map(|(_, s)| BackendSpec::parse(s)).collect::<Result<_, _>>().map_err(Failure::input)?;
    if args.length == 0 {
        return Err(Failure::input(anyhow!("--length must be at least 1")));
    }
    let workload_is_invoice = args.workload == "invoice";
    if workload_is_invoice && args.tokens > args.length {
        return Err(Failure::input(anyhow!(
            "--tokens {} does not fit --length {}: rows are padded up to the length, never cut; raise --length or lower --tokens",
            args.tokens,
            args.length
        )));
    }
    let (raw_path, output_path) = output_paths(args);
    refuse_existing(&raw_path, args.overwrite)?;
    refuse_existing(&output_path, args.overwrite)?;
    let bundle = load_bundle(&args.model.model)?;
    let shapes = ShapeCaps {
        batch_size: 1,
        max_length: args.length,
        min_length: args.length,
        max_options: 32,
        mode: ShapeMode::Fixed,
    };
    let mut arms: Vec<Arm<'_>> = Vec::with_capacity(specs.len());
    for ((name, spec), parsed) in specs.iter().zip(&parsed) {
        let backend = registry::build(parsed, spec, &bundle, Some(shapes.clone()))
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
        let host = Host::new(&bundle.tokenizer, &bundle.agent, caps);
        arms.push(Arm { name: name.clone(), spec: spec.clone(), backend, host });
    }
    let built = if workload_is_invoice {
        workload::invoice(&arms[0].host, args.tokens)
            .map_err(|e| Failure::input(anyhow!(e).context("--workload invoice")))?
    } else {
        workload::from_file(Path::new(&args.workload), &arms[0].host).map_err(Failure::input)?
    };
    let longest = built.tokens_per_row.iter().flatten().copied().max().unwrap_or(0);
    if longest > args.length {
        return Err(Failure::input(anyhow!(
            "the workload has a row of {longest} tokens, longer than --length {}; raise --length",
            args.length
        )));
    }
    for w in arms[0].host.load_warnings() {
        eprintln!("warning: {w}");
    }
    let workload = protocol::Workload { name: built.name.clone(), requests: built.requests.clone() };
    let order: Vec<String> = protocol::balanced_order(arms.len(), plan.cycles)
        .iter()
        .map(|&(_, a)| arms[a].name.clone())
        .collect();
    let header = Header {
        schema_version: raw::SCHEMA_VERSION,
        kind: "speed".into(),
        tool: ToolInfo::current(),
        command_line: std::env::args().collect(),
        started_unix_s: 0.0,
        clock: "monotonic ns since started_unix_s".into(),
        host: HostInfo::detect(),
        model: model_json(&bundle),
        arms: arms
            .iter()
            .map(|a| {
                let i = a.backend.info();
                ArmInfo {
                    name: a.name.clone(),
                    spec: a.spec.clone(),
                    backend: i.name.clone(),
                    precision: i.precision.clone(),
                    device: i.device.clone(),
                    fingerprint: i.fingerprint.clone(),
                    batch: i.shapes.batch_size,
                    length: i.shapes.max_length,
                    max_options: i.shapes.max_options,
                }
            })
            .collect(),
        workload: WorkloadInfo {
            name: built.name.clone(),
            requests: built.requests.len(),
            tokens_per_row: built.tokens_per_row.clone(),
            target_tokens: workload_is_invoice.then_some(args.tokens),
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
            order: order.clone(),
        },
    };
    let writer = RawWriter::create(&raw_path)
        .with_context(|| format!("cannot create the raw file {}", raw_path.display()))
        .map_err(Failure::input)?;
    let clock = Clock::start();
    let mut header = header;
    header.started_unix_s = unix_now();
    let bar = ProgressBar::new(order.len() as u64);
    if args.no_progress {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} blocks · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut obs = RawObserver { raw: writer, bar: &bar, answers: Vec::new(), total_calls: 0 };
    obs.raw.write(&Record::Header(Box::new(header.clone()))).map_err(|e| Failure::run(anyhow!(e)))?;
    obs.raw.sync().map_err(|e| Failure::run(anyhow!(e)))?;
    let outcome = protocol::run(&mut arms, &workload, &plan, &clock, &mut obs);
    bar.finish_and_clear();
    let totals = match outcome {
        Ok(t) => t,
        Err(e) => {
            let _ = obs.raw.write(&Record::Footer {
                status: "failed".into(),
                ended_unix_s: unix_now(),
                total_calls: obs.total_calls,
            });
            let _ = obs.raw.sync();
            let code = match &e {
                RunError::Call { error, phase, .. } if phase == "warm-up" && error.is_input_error() => 2,
                _ => 1,
            };
            return Err(Failure {
                code,
                error: anyhow!(e).context(format!(
                    "the run stopped; everything measured so far is in {}",
                    raw_path.display()
                )),
            });
        }
    };
    obs.raw
        .write(&Record::Footer {
            status: "complete".into(),
            ended_unix_s: unix_now(),
            total_calls: obs.total_calls,
        })
        .and_then(|_| obs.raw.sync())
        .map_err(|e| Failure::run(anyhow!(e).context("cannot finish the raw file")))?;
    let report = build_report(&header, &totals, &arms, &raw_path, gflop_per_decision(&bundle, args.length));
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    write_atomic(&output_path, &json)
        .with_context(|| format!("cannot write {}", output_path.display()))
        .map_err(Failure::run)?;
    if let Some(p) = &args.export_markdown {
        write_atomic(p, report.to_markdown().as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))
            .map_err(Failure::run)?;
    }
    if let Some(p) = &args.export_csv {
        write_atomic(p, report.to_csv().as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))
            .map_err(Failure::run)?;
    }
    println!("{}", report.to_markdown());
    println!("raw record: {}\nreport: {}", raw_path.display(), output_path.display());
    if !report.stable {
        return Err(Failure::run(anyhow!(
            "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in {})",
            output_path.display()
        )));
    }
    Ok(())
}

/// FLOP of one decision at the padded length, in GFLOP (dense MACs × 2 with the scorer over
/// the 32 marker slots and the action head; see `laya-bench bounds`).
fn gflop_per_decision(bundle: &Bundle, length: usize) -> Option<f64> {
    crate::bounds::flops_per_decision(&bundle.encoder, &bundle.agent, length, 32)
        .ok()
        .map(|f| f.with_tail_flop() as f64 / 1e9)
}

fn build_report(
    header: &Header,
    totals: &protocol::RunTotals,
    arms: &[Arm<'_>],
    raw_path: &Path,
    gflop: Option<f64>,
) -> SpeedReport {
    let base_t = if totals.durations_ns[0].is_empty() {
        f64::NAN
    } else {
        totals.block_ns[0] as f64 / 1e9 / totals.durations_ns[0].len() as f64
    };
    let base_probs: Vec<Vec<f64>> = totals.warmup[0].iter().map(probabilities).collect();
    let base_answers: Vec<String> = totals.warmup[0].iter().map(answer_label).collect();
    let mut results = Vec::with_capacity(arms.len());
    for (i, info) in header.arms.iter().enumerate() {
        let calls = totals.durations_ns[i].len() as u64;
        let total_s = totals.block_ns[i] as f64 / 1e9;
        let t = if calls > 0 { total_s / calls as f64 } else { f64::NAN };
        let mut lat: Vec<f64> = totals.durations_ns[i].iter().map(|&d| d as f64 / 1e9).collect();
        let latency = LatencySummary::from_latencies(&mut lat).unwrap_or(LatencySummary {
            calls: 0,
            mean_s: f64::NAN,
            p50_s: f64::NAN,
            p95_s: f64::NAN,
            p99_s: f64::NAN,
            min_s: f64::NAN,
            max_s: f64::NAN,
        });
        let answers: Vec<String> = totals.warmup[i].iter().map(answer_label).collect();
        let mut max_diff = 0.0f64;
        for (mine, base) in totals.warmup[i].iter().map(probabilities).zip(&base_probs) {
            for (a, b) in mine.iter().zip(base) {
                max_diff = max_diff.max((a - b).abs());
            }
        }
        let mismatches = answers.iter().zip(&base_answers).filter(|(a, b)| a != b).count();
        results.push(ArmResult {
            arm: info.clone(),
            calls,
            total_s,
            time_per_decision_s: t,
            decisions_per_s: 1.0 / t,
            latency,
            speed_ratio_vs_baseline: base_t / t,
            unstable_calls: totals.unstable[i],
            gflop_per_decision: gflop,
            achieved_gflops: gflop.map(|g| g / t),
            answers,
            max_probability_diff_vs_baseline: max_diff,
            answer_mismatches_vs_baseline: mismatches,
        });
    }
    let _ = arms;
    SpeedReport {
        schema_version: crate::report::speed::SCHEMA_VERSION,
        tool: header.tool.clone(),
        host: header.host.clone(),
        model: header.model.clone(),
        workload: header.workload.clone(),
        plan: header.plan.clone(),
        raw_path: Some(raw_path.display().to_string()),
        stable: totals.unstable.iter().all(|&u| u == 0),
        arms: results,
    }
}
