//! `laya-bench energy`: the published energy protocol (energy-protocol.md) on any arms with any
//! supported power sensor.
//!
//! Flow: check every flag; load the model and build the arms (as `speed` does); open the
//! sensor (exit 2 before measuring when none is usable) and take one reading to prove it
//! works; write the header; then the protocol: warm-up, the sampler from before the first idle
//! window to after the last, balanced blocks between idle windows. A writer thread owns the
//! raw file: samples arrive from the sampler's tap thread and block records from the observer
//! between blocks, so the benchmark thread never writes inside a timed interval. Afterwards the
//! samples are judged by every rejection rule; only a run that passes gets energy figures.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc::{self, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::anyhow;
use indicatif::ProgressBar;

use super::bench::{self, Setup};
use super::predict::load_bundle;
use super::{interrupt, Failure, Outcome};
use crate::cli::EnergyArgs;
use crate::energy::run::{self as energy_run, BlockFigures, BlockSpan, IdleSpan, RunEnergy, RunInput};
use crate::energy::{Rules, Window};
use crate::laya::host::{HostError, StateResult};
use crate::power::replay::{IterSource, ReplaySensor};
use crate::power::sampler::{max_gap, Sample};
use crate::power::{self, FaultKind, Sensor, SensorSpec};
use crate::protocol::{
    self, Arm, BlockLimit, Clock, Controls, Observer, Pace, Plan, Progress, RunEnd, Sampling,
};
use crate::report::energy::{EnergyArm, EnergyBlock, EnergyReport, RunStatus, RATIO_RULE};
use crate::report::raw::{self, EnergyPlanInfo, Header, RawWriter, Record};
use crate::stats::LatencySummary;

/// Every flag of the energy protocol, checked.
struct Settings {
    plan: Plan,
    interval: Duration,
    rules: Rules,
    idle_discard: Duration,
    info: EnergyPlanInfo,
}

fn settings(args: &EnergyArgs) -> Result<Settings, Failure> {
    if args.cycles == 0 {
        return Err(Failure::input(anyhow!("--cycles must be at least 1")));
    }
    let block = bench::positive_duration("--seconds", &args.seconds)?;
    let interval = bench::positive_duration("--sample-interval", &args.sample_interval)?;
    let idle = bench::positive_duration("--idle-seconds", &args.idle_seconds)?;
    let idle_discard = power::parse_duration(&args.idle_discard)
        .map_err(|e| Failure::input(anyhow!("--idle-discard `{}`: {e}", args.idle_discard)))?;
    if idle_discard >= idle {
        return Err(Failure::input(anyhow!(
            "--idle-discard {idle_discard:?} leaves nothing of the {idle:?} idle window; shorten --idle-discard or lengthen --idle-seconds"
        )));
    }
    // A block or idle window needs samples inside it, not only interpolation from outside.
    for (what, span, flag) in [
        ("block", block, "--seconds"),
        ("idle window after the discard", idle - idle_discard, "--idle-seconds"),
    ] {
        if interval * 2 > span {
            return Err(Failure::input(anyhow!(
                "--sample-interval {interval:?} gives fewer than 2 samples in a {span:?} {what}; shorten --sample-interval or lengthen {flag}"
            )));
        }
    }
    if !(args.max_watts.is_finite() && args.max_watts > 0.0) {
        return Err(Failure::input(anyhow!(
            "--max-watts must be a positive number of watts, got {}",
            args.max_watts
        )));
    }
    let pace = match args.rate {
        Some(r) if r.is_finite() && r > 0.0 => Some(Pace { rate_hz: r }),
        Some(r) => {
            return Err(Failure::input(anyhow!(
                "--rate must be a positive number of requests per second, got {r}"
            )))
        }
        None => None,
    };
    let plan = Plan {
        cycles: args.cycles,
        block: BlockLimit::Duration(block),
        warmup_calls: args.run.warmup,
        idle: Some(idle),
        pace,
    };
    let rules = Rules::new(args.max_watts, interval.as_secs_f64());
    let stable = idle - idle_discard;
    if stable < interval * 2 {
        eprintln!(
            "warning: the stable part of each idle window ({:.3} s) holds fewer than two sample intervals ({:.3} s); idle power will rest on very few samples",
            stable.as_secs_f64(),
            interval.as_secs_f64()
        );
    }
    let info = EnergyPlanInfo {
        sample_interval_s: interval.as_secs_f64(),
        idle_seconds: idle.as_secs_f64(),
        idle_discard_s: idle_discard.as_secs_f64(),
        max_watts: args.max_watts,
        max_gap_s: rules.max_gap_s(),
        rate_hz: pace.map(|p| p.rate_hz),
        calls_per_block: pace.map(|p| p.calls_per_block(plan.block)),
    };
    Ok(Settings { plan, interval, rules, idle_discard, info })
}

/// Open the sensor `--sensor` names, or the platform's default; exit 2 with every reason.
fn open_sensor(
    spec: Option<&SensorSpec>,
    stream_timeout: Duration,
) -> Result<(Box<dyn Sensor>, String), Failure> {
    match spec {
        None => power::open_default(stream_timeout)
            .map(|s| {
                let names: Vec<String> = power::default_specs().iter().map(|s| s.to_string()).collect();
                (s, format!("sensor chosen by default (the first usable of {})", names.join(", ")))
            })
            .map_err(|e| Failure::input(anyhow!("{e}"))),
        Some(SensorSpec::Replay { path }) => {
            let run = raw::read(path)
                .map_err(|e| Failure::input(anyhow!(e).context(format!("--sensor replay:{}", path.display()))))?;
            let samples = raw::samples(&run);
            if samples.is_empty() {
                return Err(Failure::input(anyhow!(
                    "--sensor replay:{}: the raw file holds no power samples; replay needs the raw record of an energy run",
                    path.display()
                )));
            }
            let source = IterSource(samples.into_iter().map(Ok::<Sample, String>));
            let sensor = ReplaySensor::new(path, Box::new(source), run.header.sensor.as_ref());
            Ok((Box::new(sensor), "replayed samples: NOT A LIVE MEASUREMENT".into()))
        }
        Some(s) => power::open(s, stream_timeout).map(|x| (x, format!("sensor given: {s}"))).map_err(|e| {
            Failure::input(anyhow!(
                "--sensor {s}: {e}\n(`laya-bench doctor` lists every sensor and why it is or is not usable here)"
            ))
        }),
    }
}

/// What the writer thread receives.
enum Msg {
    Sample(Sample),
    Record(Record),
    Sync,
}

/// What the writer thread hands back: the file, every sample it wrote, the first error.
struct Written {
    raw: RawWriter,
    samples: Vec<Sample>,
    error: Option<std::io::Error>,
}

/// The thread that owns the raw file: samples are flushed as they arrive (a SIGKILL keeps
/// them), records are synced when the observer asks (after each block and idle window).
fn spawn_writer(mut raw: RawWriter, rx: mpsc::Receiver<Msg>) -> std::io::Result<JoinHandle<Written>> {
    std::thread::Builder::new().name("laya-raw-writer".into()).spawn(move || {
        let mut samples = Vec::new();
        let mut error: Option<std::io::Error> = None;
        for msg in rx {
            let result = match msg {
                Msg::Sample(s) => {
                    let r = raw.write(&Record::Sample(Box::new(s.clone()))).and_then(|_| raw.flush());
                    samples.push(s);
                    r
                }
                Msg::Record(r) => raw.write(&r),
                Msg::Sync => raw.sync(),
            };
            if let (Err(e), None) = (result, &error) {
                error = Some(e);
            }
        }
        Written { raw, samples, error }
    })
}

struct EnergyObserver<'p> {
    tx: Sender<Msg>,
    bar: &'p ProgressBar,
    answers: Vec<Vec<String>>,
    rss: BTreeMap<u32, Option<u64>>,
    total_calls: u64,
}

impl EnergyObserver<'_> {
    fn send(&self, msg: Msg) -> std::io::Result<()> {
        self.tx.send(msg).map_err(|_| std::io::Error::other("the raw writer thread stopped"))
    }
}

impl Observer for EnergyObserver<'_> {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &protocol::WarmupRecord) -> std::io::Result<()> {
        let (record, answers) = bench::warmup_record(arms, rec);
        self.answers.push(answers);
        self.send(Msg::Record(record))?;
        self.send(Msg::Sync)
    }

    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &protocol::BlockRecord,
        calls: &[protocol::CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> std::io::Result<()> {
        for r in bench::block_records(arms, rec, calls, unstable, &self.answers) {
            if let Record::Block { index, rss_bytes, .. } = &r {
                self.rss.insert(*index, *rss_bytes);
            }
            self.send(Msg::Record(r))?;
        }
        self.total_calls += calls.len() as u64;
        self.bar.inc(1);
        self.bar.set_message(format!("idle window {}", rec.index + 1));
        self.send(Msg::Sync)
    }

    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> std::io::Result<()> {
        self.send(Msg::Record(Record::Error {
            arm: arms[arm].name.clone(),
            block,
            message: error.to_string(),
        }))?;
        self.send(Msg::Sync)
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

    fn idle(&mut self, _arms: &[Arm<'_>], rec: &protocol::IdleRecord) -> std::io::Result<()> {
        self.send(Msg::Record(Record::Idle {
            index: rec.index,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
            ended_early: rec.ended_early,
        }))?;
        self.send(Msg::Sync)
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn window(start_ns: u64, end_ns: u64) -> Window {
    Window { start_s: seconds(start_ns), end_s: seconds(end_ns) }
}

pub(crate) fn run(args: &EnergyArgs) -> Outcome {
    let common = &args.run;
    let specs = bench::arm_specs(common)?;
    let settings = settings(args)?;
    let parsed = bench::check_inputs(common, &specs)?;
    let mut sensor_spec: Option<SensorSpec> = match &args.sensor {
        Some(s) => Some(s.parse().map_err(|e| Failure::input(anyhow!("--sensor: {e}")))?),
        None => None,
    };
    if let Some(text) = &args.sensor_unit {
        let wanted: power::exec::PowerUnit =
            text.parse().map_err(|e| Failure::input(anyhow!("--sensor-unit: {e}; give W, mW or uW")))?;
        match sensor_spec.as_mut() {
            Some(SensorSpec::Exec { unit, .. }) => *unit = wanted,
            _ => {
                return Err(Failure::input(anyhow!(
                    "--sensor-unit applies to exec: meters only (other sensors report their own unit)"
                )))
            }
        }
    }
    let (raw_path, output_path) = bench::output_paths(common, "energy");
    bench::check_output_files(common, &raw_path, &output_path)?;
    let bundle = load_bundle(&common.model.model)?;
    let setup = bench::build_setup(&bundle, common, &specs, &parsed)?;
    let stream_timeout = max_gap(settings.interval);
    let (mut sensor, choice) = open_sensor(sensor_spec.as_ref(), stream_timeout)?;
    let mut header = bench::header("energy", &bundle, &setup, common, &settings.plan);
    let opened = sensor.info().clone();
    header.sensor = Some(opened.clone());
    header.energy = Some(settings.info.clone());
    let Setup { mut arms, workload, .. } = setup;
    let writer = match RawWriter::open(&raw_path, common.overwrite) {
        Ok(w) => w,
        Err(e) => {
            let _ = sensor.close();
            return Err(Failure::input(
                anyhow!(e).context(format!("cannot create the raw file {}", raw_path.display())),
            ));
        }
    };
    let stop = interrupt::install_or_warn();
    let clock = Clock::start();
    header.started_unix_s = bench::unix_now();
    let (tx, rx) = mpsc::channel::<Msg>();
    let writer = spawn_writer(writer, rx)
        .map_err(|e| Failure::run(anyhow!(e).context("cannot start the raw writer")))?;
    let fail_early =
        |e: anyhow::Error| Failure::run(e.context(format!("raw record: {}", raw_path.display())));
    tx.send(Msg::Record(Record::Header(Box::new(header.clone())))).map_err(|e| fail_early(anyhow!("{e}")))?;
    // Two readings before anything is measured prove the sensor works and keeps working (a
    // one-shot meter command gives one reading and exits). They go to the raw record and are
    // judged by the rules every reading must pass; a fault or a bad value refuses the run
    // (exit 2) with the raw value, and the record says so.
    let probes = if matches!(sensor_spec, Some(SensorSpec::Replay { .. })) {
        Vec::new()
    } else {
        power::sampler::probe(sensor.as_mut(), clock.origin(), 2)
    };
    for p in &probes {
        tx.send(Msg::Record(Record::Probe(Box::new(p.clone())))).map_err(|e| fail_early(anyhow!("{e}")))?;
    }
    tx.send(Msg::Sync).map_err(|e| fail_early(anyhow!("{e}")))?;
    if !energy_run::check_probes(&probes, &settings.rules).is_empty() {
        let _ = sensor.close();
        let refused = refuse_probe(&probes, &settings, &opened.spec, &raw_path);
        drop(tx);
        let written = writer.join().map_err(|_| Failure::run(anyhow!("the raw writer thread panicked")))?;
        let Written { raw: mut raw_file, error, .. } = written;
        let finished = raw_file.write(&refused.footer).and_then(|_| raw_file.sync());
        if let Some(e) = error.or(finished.err()) {
            return Err(Failure::run(
                anyhow!(e).context(format!("cannot write the raw record {}", raw_path.display())),
            ));
        }
        return Err(Failure::input(refused.error));
    }
    let bar = bench::progress_bar(header.plan.order.len() as u64, common.no_progress);
    let sample_tx = tx.clone();
    let sampling = Sampling {
        sensor,
        interval: settings.interval,
        stream_timeout,
        sink: Box::new(move |s| {
            // If the writer is gone the run's own error says so; samples are never invented.
            let _ = sample_tx.send(Msg::Sample(s));
        }),
    };
    let mut obs = EnergyObserver { tx, bar: &bar, answers: Vec::new(), rss: BTreeMap::new(), total_calls: 0 };
    let controls = Controls { stop, sampling: Some(sampling), order: None };
    let outcome = protocol::run_with(&mut arms, &workload, &settings.plan, &clock, &mut obs, controls);
    bar.finish_and_clear();
    let EnergyObserver { tx, rss, total_calls, .. } = obs;
    drop(tx);
    let written = writer.join().map_err(|_| Failure::run(anyhow!("the raw writer thread panicked")))?;
    let Written { raw: mut raw_file, samples, error: write_error } = written;
    let finish = |raw_file: &mut RawWriter, records: Vec<Record>| -> std::io::Result<()> {
        for r in &records {
            raw_file.write(r)?;
        }
        raw_file.sync()
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let footer = footer(RunStatus::Failed, total_calls, Some(e.to_string()), vec![]);
            let _ = finish(&mut raw_file, vec![footer]);
            return Err(Failure::run(anyhow!(e).context(format!(
                "the run stopped; everything measured so far is in {}",
                raw_path.display()
            ))));
        }
    };
    if let Some(e) = write_error {
        return Err(Failure::run(
            anyhow!(e).context(format!("cannot write the raw record {}", raw_path.display())),
        ));
    }

    // Judge the samples.
    let totals = &outcome.totals;
    let blocks: Vec<BlockSpan> = totals
        .blocks
        .iter()
        .map(|b| BlockSpan { index: b.index, window: window(b.start_ns, b.end_ns) })
        .collect();
    let idles: Vec<IdleSpan> = totals
        .idles
        .iter()
        .map(|i| IdleSpan { index: i.index, window: window(i.start_ns, i.end_ns) })
        .collect();
    let verdict = energy_run::analyze(&RunInput {
        probes: &probes,
        samples: &samples,
        blocks: &blocks,
        idles: &idles,
        span: outcome.span_ns.map(|(a, b)| window(a, b)),
        rules: settings.rules,
        idle_discard_s: settings.idle_discard.as_secs_f64(),
    });
    let (status, status_reason) = match &outcome.end {
        RunEnd::Completed => match (&outcome.sampler, verdict.rejected()) {
            (None, _) => (
                RunStatus::Failed,
                Some(format!(
                    "the sampler did not stop cleanly: {}",
                    outcome.sampler_error.clone().unwrap_or_else(|| "no report".into())
                )),
            ),
            (Some(_), true) => (RunStatus::Rejected, None),
            (Some(_), false) => (RunStatus::Complete, None),
        },
        RunEnd::Interrupted { during } => (RunStatus::Incomplete, Some(interrupt::reason(during))),
        RunEnd::SensorStopped { during } => (
            RunStatus::Rejected,
            Some(format!("the sensor stopped during {during}; the rest of the plan was not run")),
        ),
        RunEnd::CallFailed { arm, phase, error } => {
            (RunStatus::Failed, Some(format!("arm `{arm}` failed during {phase}: {error}")))
        }
    };

    // Append the verdict; nothing written before is touched.
    let mut tail = Vec::new();
    if let Some(rep) = &outcome.sampler {
        tail.push(Record::Sampler(Box::new(rep.clone())));
    }
    if status == RunStatus::Complete {
        for b in &verdict.blocks {
            let arm = totals.blocks.iter().find(|r| r.index == b.index).map(|r| arms[r.arm].name.clone());
            tail.push(Record::BlockEnergy {
                index: b.index,
                arm: arm.unwrap_or_default(),
                energy: b.energy,
                missing_reason: b.missing_reason.clone(),
            });
        }
    }
    tail.push(footer(status, total_calls, status_reason.clone(), verdict.rejections.clone()));
    finish(&mut raw_file, tail).map_err(|e| {
        Failure::run(anyhow!(e).context(format!("cannot finish the raw record {}", raw_path.display())))
    })?;

    let context = ReportContext {
        header: &header,
        energy_plan: &settings.info,
        opened: &opened,
        rss: &rss,
        raw_path: &raw_path,
        choice: &choice,
    };
    let report = build_report(&context, &outcome, &arms, &verdict, status, status_reason.clone());
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Failure::run(anyhow!(e)))?;
    let markdown = report.to_markdown();
    bench::write_outputs(common, &output_path, &json, &markdown, &report.to_csv())?;
    println!("{markdown}");
    println!("raw record: {}\nreport: {}", raw_path.display(), output_path.display());
    for warning in report.notes.iter().filter(|n| n.starts_with("WARNING")) {
        eprintln!("{warning}");
    }
    match status {
        RunStatus::Complete if report.stable => Ok(()),
        RunStatus::Complete => Err(Failure::run(anyhow!(
            "unstable: some calls did not reproduce their arm's warm-up result (see unstable_calls in {})",
            output_path.display()
        ))),
        RunStatus::Rejected => {
            let mut msg = format!(
                "the run was REJECTED: its energy figures must not be used; the raw record {} keeps every sample unchanged",
                raw_path.display()
            );
            if let Some(r) = &status_reason {
                msg.push_str(&format!("\n  {r}"));
            }
            for r in verdict.rejections.iter().take(10) {
                msg.push_str(&format!("\n  - {}", r.message));
            }
            if verdict.rejections.len() > 10 {
                msg.push_str(&format!(
                    "\n  ... and {} more (see {})",
                    verdict.rejections.len() - 10,
                    output_path.display()
                ));
            }
            Err(Failure::run(anyhow!(msg)))
        }
        RunStatus::Incomplete => Err(Failure::run(anyhow!(
            "the run is INCOMPLETE ({}); everything measured so far is in {}",
            status_reason.unwrap_or_default(),
            raw_path.display()
        ))),
        RunStatus::Failed => {
            let code = match &outcome.end {
                RunEnd::CallFailed { error, phase, .. } if phase == "warm-up" && error.is_input_error() => 2,
                _ => 1,
            };
            Err(Failure {
                code,
                error: anyhow!(
                    "the run FAILED: {}; everything measured so far is in {}",
                    status_reason.unwrap_or_default(),
                    raw_path.display()
                ),
            })
        }
    }
}

/// A run refused because a reading before measuring broke a rule: its footer and the error.
struct Refused {
    footer: Record,
    error: anyhow::Error,
}

/// The footer (status `rejected`, every rule the probe broke, and `no_samples`: nothing was
/// sampled) and the message of a run refused before measuring, naming each raw value.
fn refuse_probe(probes: &[Sample], settings: &Settings, spec: &str, raw_path: &Path) -> Refused {
    let verdict = energy_run::analyze(&RunInput {
        probes,
        samples: &[],
        blocks: &[],
        idles: &[],
        span: None,
        rules: settings.rules,
        idle_discard_s: settings.idle_discard.as_secs_f64(),
    });
    let fault = probes.iter().find_map(|p| match &p.outcome {
        power::sampler::SampleOutcome::Fault(f) => Some(f.clone()),
        power::sampler::SampleOutcome::Reading(_) => None,
    });
    let kept = format!("the raw record {} keeps every reading; nothing was measured", raw_path.display());
    let error = match fault {
        Some(f) => {
            let hint = if f.kind == FaultKind::Stopped {
                "a meter command must keep running and print one line per reading; wrap a one-shot command, e.g. exec:'while :; do CMD; sleep 0.5; done'"
            } else {
                "check the meter by hand; `laya-bench doctor` lists every sensor"
            };
            let which = if probes.len() <= 1 { "gave no reading" } else { "gave one reading, then none" };
            anyhow!("the sensor {spec} {which} before measuring: {f}\n({hint}; {kept})")
        }
        None => {
            let mut msg = format!(
                "the sensor {spec} gave a reading before measuring that breaks the rejection rules, so the run was refused ({kept}):"
            );
            for d in verdict.rejections.iter().filter(|d| d.message.contains(energy_run::PROBE_PREFIX)) {
                let raw: Vec<String> =
                    d.evidence.iter().filter_map(|e| e.raw.as_ref().map(|r| format!("{r:?}"))).collect();
                msg.push_str(&format!("\n  - {} (raw line {})", d.message, raw.join(", ")));
            }
            msg.push_str(&format!(
                "\n(check the meter and its unit by hand; --max-watts is {} W)",
                settings.rules.max_watts
            ));
            anyhow!(msg)
        }
    };
    let footer = footer(
        RunStatus::Rejected,
        0,
        Some(
            "a reading taken before measuring broke a rejection rule; the run was refused before measuring"
                .into(),
        ),
        verdict.rejections,
    );
    Refused { footer, error }
}

fn footer(
    status: RunStatus,
    total_calls: u64,
    reason: Option<String>,
    rejections: Vec<crate::energy::run::RejectionDetail>,
) -> Record {
    Record::Footer {
        status: status.as_str().into(),
        ended_unix_s: bench::unix_now(),
        total_calls,
        reason,
        rejections,
    }
}

/// What the report needs besides the run itself.
struct ReportContext<'c> {
    header: &'c Header,
    energy_plan: &'c EnergyPlanInfo,
    /// The sensor as opened (the sampler's report carries its final notes when it stopped).
    opened: &'c power::SensorInfo,
    rss: &'c BTreeMap<u32, Option<u64>>,
    raw_path: &'c Path,
    choice: &'c str,
}

fn build_report(
    cx: &ReportContext<'_>,
    outcome: &protocol::RunOutcome,
    arms: &[Arm<'_>],
    verdict: &RunEnergy,
    status: RunStatus,
    status_reason: Option<String>,
) -> EnergyReport {
    let header = cx.header;
    let totals = &outcome.totals;
    let no_energy = match status {
        RunStatus::Complete => "",
        RunStatus::Rejected => "the run was rejected; its energy figures must not be used",
        RunStatus::Incomplete => "the run is incomplete",
        RunStatus::Failed => "the run failed",
    };
    let energy_of = |index: u32| -> (Option<crate::energy::BlockEnergy>, String) {
        if status != RunStatus::Complete {
            return (None, no_energy.to_string());
        }
        match verdict.blocks.iter().find(|b| b.index == index) {
            Some(b) => (b.energy, b.missing_reason.clone().unwrap_or_default()),
            None => (None, "no energy was computed for this block".into()),
        }
    };
    let figures = |b: &protocol::BlockRecord| {
        let (energy, why) = energy_of(b.index);
        (BlockFigures { decisions: b.calls, duration_s: seconds(b.end_ns - b.start_ns), energy }, why)
    };
    let paced = cx.energy_plan.rate_hz.is_some();
    let mut arm_totals = Vec::with_capacity(arms.len());
    for a in 0..arms.len() {
        let figs: Vec<(BlockFigures, String)> =
            totals.blocks.iter().filter(|b| b.arm == a).map(figures).collect();
        let why = figs.iter().map(|f| f.1.as_str()).find(|w| !w.is_empty()).unwrap_or(no_energy).to_string();
        let only: Vec<BlockFigures> = figs.into_iter().map(|f| f.0).collect();
        arm_totals.push(energy_run::aggregate(&only, &why));
    }
    let mut out_arms = Vec::with_capacity(arms.len());
    for (a, info) in header.arms.iter().enumerate() {
        let mut lat: Vec<f64> =
            totals.durations_ns.get(a).map(|d| d.iter().map(|&n| seconds(n)).collect()).unwrap_or_default();
        out_arms.push(EnergyArm {
            arm: info.clone(),
            totals: arm_totals[a].clone(),
            latency: LatencySummary::from_latencies(&mut lat),
            unstable_calls: totals.unstable.get(a).copied().unwrap_or(0),
            missed_deadlines: paced.then(|| totals.missed_deadlines.get(a).copied().unwrap_or(0)),
            vs_baseline: energy_run::ratios(&arm_totals[0], &arm_totals[a]),
        });
    }
    let blocks = totals
        .blocks
        .iter()
        .map(|b| {
            let (fig, why) = figures(b);
            EnergyBlock {
                index: b.index,
                cycle: b.cycle,
                arm: arms[b.arm].name.clone(),
                start_s: seconds(b.start_ns),
                end_s: seconds(b.end_ns),
                totals: energy_run::aggregate(&[fig], &why),
                idle_before_w: fig.energy.map(|e| e.idle_before.power_w),
                idle_after_w: fig.energy.map(|e| e.idle_after.power_w),
                rss_bytes: cx.rss.get(&b.index).copied().flatten(),
                missed_deadlines: paced.then_some(b.missed_deadlines),
                unstable_calls: b.unstable_calls,
                ended_early: b.ended_early,
            }
        })
        .collect();
    let sensor = outcome.sampler.as_ref().map(|s| s.sensor.clone()).unwrap_or_else(|| cx.opened.clone());
    let mut notes = vec![
        RATIO_RULE.to_string(),
        "t = Σ block wall time / decisions (all completed work); P = Σ block energy / Σ block time; E = P × t.".into(),
        "Idle-subtracted energy = block energy − (mean of the two adjacent stable idle powers) × block time, kept with its sign. It has a different boundary from whole-system energy: a larger idle-subtracted gain does not mean the machine draws that much less.".into(),
        "RSS is the whole process with every arm's model resident; it is not attributable to one backend.".into(),
        cx.choice.to_string(),
    ];
    if paced {
        notes.push("Equal-load mode: every arm makes the same calls on the same absolute schedule; a block lasts until its schedule ends, so t includes the waits between calls. A call misses its deadline when it ends after the next call was due; it is still made and counted, never dropped or skipped.".into());
    }
    if !sensor.live {
        notes.push("NOT A LIVE MEASUREMENT: the sensor replays or scripts its readings.".into());
    }
    for a in &out_arms {
        if let Some(w) = missed_deadline_warning(&a.arm.name, a.missed_deadlines, a.totals.decisions) {
            notes.push(w);
        }
    }
    let sampler_cpu_fraction = outcome
        .sampler
        .as_ref()
        .and_then(|s| s.cpu_time_ns.filter(|_| s.wall_ns > 0).map(|c| c as f64 / s.wall_ns as f64));
    EnergyReport {
        schema_version: crate::report::energy::SCHEMA_VERSION,
        status,
        status_reason,
        rejections: verdict.rejections.clone(),
        tool: header.tool.clone(),
        host: header.host.clone(),
        model: header.model.clone(),
        workload: header.workload.clone(),
        plan: header.plan.clone(),
        energy_plan: cx.energy_plan.clone(),
        sensor,
        sampler: outcome.sampler.clone(),
        sampler_cpu_fraction,
        series: verdict.series.clone(),
        samples: verdict.summary,
        raw_path: Some(cx.raw_path.display().to_string()),
        arms: out_arms,
        blocks,
        stable: totals.unstable.iter().all(|&u| u == 0),
        notes,
    }
}

/// Above this share of missed deadlines an arm did not keep `--rate`.
const MISSED_DEADLINE_LIMIT: f64 = 0.01;

/// The warning for an arm that missed more than 1 % of its deadlines in equal-load mode: it ran
/// saturated, so its blocks are not the equal load the comparison assumes.
fn missed_deadline_warning(arm: &str, missed: Option<u64>, decisions: u64) -> Option<String> {
    let missed = missed?;
    let share = missed as f64 / decisions.max(1) as f64;
    (share > MISSED_DEADLINE_LIMIT).then(|| {
        format!(
            "WARNING: arm `{arm}` missed {missed} of {decisions} deadlines ({:.1} %): it could not keep --rate, so its load was not the equal load this comparison assumes; lower --rate below what every arm sustains",
            share * 100.0
        )
    })
}

#[cfg(test)]
mod rate_tests {
    use super::missed_deadline_warning;

    #[test]
    fn more_than_one_percent_missed_deadlines_is_a_warning() {
        assert_eq!(missed_deadline_warning("a", None, 100), None);
        assert_eq!(missed_deadline_warning("a", Some(1), 100), None);
        let w = missed_deadline_warning("a", Some(2), 100).unwrap();
        assert!(w.starts_with("WARNING: arm `a` missed 2 of 100 deadlines (2.0 %)"), "{w}");
        assert!(missed_deadline_warning("b", Some(10_000), 10_000).unwrap().contains("(100.0 %)"));
    }
}
