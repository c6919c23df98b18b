//! The published energy protocol (docs/methodology.md) on any arms with any supported power
//! sensor, as a library run.
//!
//! Flow: the settings are checked before anything loads ([`settings`], [`sensor_spec`]);
//! [`open`] opens the sensor and takes two readings to prove it works, before the model or any
//! arm loads (exit 2 when none is usable or a reading breaks a rule); [`run`] writes the
//! header and those readings; then the protocol: warm-up, the sampler from before the first
//! idle window to after the last, balanced blocks between idle windows. A writer thread owns
//! the raw file: samples arrive from the sampler's tap thread and block records from the
//! recorder between blocks, so the benchmark thread never writes inside a timed interval.
//! Afterwards the samples are judged by every rejection rule; only a run that passes gets
//! energy figures. The verdict and its report come back as an [`EnergyOutcome`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::{
    run_with, Arm, BlockLimit, BlockRecord, Clock, Controls, Observer, Observers, Pace, Phase, Plan, RunEnd,
    RunTotals, Sampling, SensorGuard,
};
use crate::energy::run::{self as energy_run, BlockFigures, BlockSpan, IdleSpan, RunEnergy, RunInput};
use crate::energy::{Rules, Window};
use crate::laya::bundle::Bundle;
use crate::power::replay::{IterSource, ReplaySensor};
use crate::power::sampler::{max_gap, Sample};
use crate::power::{self, FaultKind, PowerBoundary, Sensor, SensorSpec};
use crate::record::provenance::Provenance;
use crate::record::status::RunStatus;
use crate::record::{self, EnergyPlanInfo, Header, RawWriter, Record};
use crate::report::energy::{EnergyArm, EnergyBlock, EnergyReport, RATIO_RULE};
use crate::report::steal::{self, StealTicks};
use crate::report::ArmIntervals;
use crate::stats::LatencySummary;

use super::duration_flags::positive;
use super::measure_speed::{interrupted_reason, raised};
use super::recorder::{self, footer, spawn_writer, ChannelSink, HeaderInput, Msg, Recorder, RunIo, Written};
use super::setup::Setup;
use crate::error::{Classify, Error, Kind};

/// The energy flags as given.
#[derive(Debug, Clone)]
pub struct EnergyFlags {
    /// Balanced cycles.
    pub cycles: usize,
    /// Block length.
    pub seconds: Duration,
    /// Sample interval; `None`: the sensor's update period where it measures one, else
    /// [`DEFAULT_INTERVAL`].
    pub sample_interval: Option<Duration>,
    /// Idle window length.
    pub idle_seconds: Duration,
    /// Start of each idle window left out of idle power.
    pub idle_discard: Duration,
    /// Readings above this are a sensor fault.
    pub max_watts: f64,
    /// Equal-load mode: requests per second.
    pub rate: Option<f64>,
    /// Warm-up calls per arm.
    pub warmup: usize,
    /// What an `exec:` meter measures, as `--boundary` declared it ([`declared_boundary`]).
    pub boundary: Option<PowerBoundary>,
}

/// Every flag of the energy protocol, checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The protocol plan (blocks, idle windows, pace).
    pub plan: Plan,
    /// Sample interval.
    pub interval: Duration,
    /// Whether `--sample-interval` gave it (else the sensor may choose it when opened).
    pub interval_given: bool,
    /// The rejection rules.
    pub rules: Rules,
    /// Start of each idle window left out of idle power.
    pub idle_discard: Duration,
    /// The settings as the raw header records them.
    pub info: EnergyPlanInfo,
    /// The boundary `--boundary` declared for an `exec:` meter; `None`: the sensor's own.
    pub boundary: Option<PowerBoundary>,
}

/// Check every energy flag before anything loads (exit 2).
pub fn settings(f: &EnergyFlags) -> Result<Settings, Error> {
    super::measure_speed::check_cycles(f.cycles)?;
    let block = positive("--seconds", f.seconds)?;
    let interval = positive("--sample-interval", f.sample_interval.unwrap_or(DEFAULT_INTERVAL))?;
    let idle = positive("--idle-seconds", f.idle_seconds)?;
    let idle_discard = f.idle_discard;
    if idle_discard >= idle {
        return Err(Error::input(format!(
            "--idle-discard {idle_discard:?} leaves nothing of the {idle:?} idle window; shorten --idle-discard or lengthen --idle-seconds"
        )));
    }
    // Without --sample-interval the sensor may choose a shorter one when it opens.
    if f.sample_interval.is_some() {
        check_interval(interval, block, idle - idle_discard, "--sample-interval")?;
    }
    if !(f.max_watts.is_finite() && f.max_watts > 0.0) {
        return Err(Error::input(format!(
            "--max-watts must be a positive number of watts, got {}",
            f.max_watts
        )));
    }
    let pace = match f.rate {
        Some(r) if crate::time::period_of(r).is_some() && r <= MAX_RATE_HZ => Some(Pace { rate_hz: r }),
        Some(r) => {
            return Err(Error::input(format!(
                "--rate must be a positive number of requests per second, at least one per 7 days and at most {MAX_RATE_HZ:.0} (one every microsecond: no schedule finer can be kept), got {r:?}"
            )))
        }
        None => None,
    };
    let plan = Plan {
        cycles: f.cycles,
        block: BlockLimit::Duration(block),
        warmup_calls: f.warmup,
        idle: Some(idle),
        pace,
        batch: 1,
    };
    let rules = Rules::new(f.max_watts, interval.as_secs_f64());
    let info = EnergyPlanInfo {
        sample_interval_s: interval.as_secs_f64(),
        sample_interval_reason: None,
        idle_seconds: idle.as_secs_f64(),
        idle_discard_s: idle_discard.as_secs_f64(),
        max_watts: f.max_watts,
        max_gap_s: rules.max_gap_s(),
        rate_hz: pace.map(|p| p.rate_hz),
        calls_per_block: pace.map(|p| p.calls_per_block(plan.block)),
    };
    Ok(Settings {
        plan,
        interval,
        interval_given: f.sample_interval.is_some(),
        rules,
        idle_discard,
        info,
        boundary: f.boundary.clone(),
    })
}

/// A block or idle window needs samples inside it, not only interpolation from outside: the
/// requested interval must leave [`crate::energy::sampling::MIN_SAMPLES_IN_WINDOW`] (what the
/// meter really delivered is checked on the samples afterwards, `too_few_samples_in_block`).
fn check_interval(interval: Duration, block: Duration, idle: Duration, name: &str) -> Result<(), Error> {
    for (what, span, flag) in
        [("block", block, "--seconds"), ("idle window after the discard", idle, "--idle-seconds")]
    {
        let min = crate::energy::sampling::MIN_SAMPLES_IN_WINDOW;
        if interval * min as u32 > span {
            return Err(Error::input(format!(
                "{name} {interval:?} gives fewer than {min} samples in a {span:?} {what}; shorten --sample-interval or lengthen {flag}"
            )));
        }
    }
    Ok(())
}

/// The sample interval without `--sample-interval` or a sensor that measures its own period.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

impl Settings {
    /// The settings for the opened sensor: without `--sample-interval`, a sensor that measured
    /// its source's update period (NVML) is sampled at twice that period (kept within 10-500
    /// ms, [`crate::power::nvml::interval_for`]), and the rules and the recorded plan follow;
    /// otherwise unchanged.
    /// Without `--sample-interval`, the interval is checked here against the block and idle
    /// lengths (exit 2, before anything is recorded).
    pub fn for_sensor(&self, update_period: Option<Duration>) -> Result<Settings, Error> {
        if self.interval_given {
            return Ok(self.clone());
        }
        let (block, idle) = match (self.plan.block, self.plan.idle) {
            (BlockLimit::Duration(b), Some(i)) => (b, i.saturating_sub(self.idle_discard)),
            _ => (Duration::MAX, Duration::MAX),
        };
        let Some(period) = update_period else {
            check_interval(self.interval, block, idle, "the default sample interval (--sample-interval)")?;
            return Ok(self.clone());
        };
        let interval = crate::power::nvml::interval_for(period);
        check_interval(interval, block, idle, "the sensor's update period, as the sample interval,")?;
        let rules = Rules::new(self.info.max_watts, interval.as_secs_f64());
        let mut info = self.info.clone();
        info.sample_interval_s = interval.as_secs_f64();
        info.max_gap_s = rules.max_gap_s();
        info.sample_interval_reason = Some(format!(
            "twice the sensor's measured update period {:.1} ms (no --sample-interval given)",
            period.as_secs_f64() * 1e3
        ));
        Ok(Settings { interval, rules, info, ..self.clone() })
    }
}

/// `--sensor` and `--sensor-unit` as a sensor spec (`None`: the platform's default), exit 2.
pub fn sensor_spec(sensor: Option<&str>, unit: Option<&str>) -> Result<Option<SensorSpec>, Error> {
    let mut spec: Option<SensorSpec> = match sensor {
        Some(s) => Some(s.parse().map_err(|e| Error::input(format!("--sensor: {e}")))?),
        None => None,
    };
    if let Some(text) = unit {
        let wanted: power::exec::PowerUnit =
            text.parse().map_err(|e| Error::input(format!("--sensor-unit: {e}; give W, mW or uW")))?;
        match spec.as_mut() {
            Some(SensorSpec::Exec { unit, .. }) => *unit = wanted,
            _ => {
                return Err(Error::input(
                    "--sensor-unit applies to exec: meters only (other sensors report their own unit)",
                ))
            }
        }
    }
    Ok(spec)
}

/// `--boundary` as the boundary of an `exec:` meter (exit 2 for a value that names none, or
/// for a sensor that declares its own: `pstr`, `rapl`, `nvml…`, or a replay, which keeps the
/// replayed record's). `None` without the flag.
pub fn declared_boundary(
    spec: Option<&SensorSpec>,
    boundary: Option<&str>,
) -> Result<Option<PowerBoundary>, Error> {
    let Some(text) = boundary else { return Ok(None) };
    let b: PowerBoundary = text.parse().map_err(|e| Error::input(format!("--boundary: {e}")))?;
    match spec {
        Some(SensorSpec::Exec { .. }) => Ok(Some(b)),
        _ => Err(Error::input(
            "--boundary applies to exec: meters only (pstr, rapl and nvml declare their own boundary; a replay keeps the replayed record's)",
        )),
    }
}

/// An opened sensor, how it was chosen, and the boundary a replayed record gives.
type Opened = (Box<dyn Sensor>, String, Option<PowerBoundary>);

/// Open the sensor `spec` names, or the platform's default; exit 2 with every reason. Also
/// says how it was chosen and, for a replay, the boundary the replayed record gives.
fn open_sensor(
    spec: Option<&SensorSpec>,
    stream_timeout: Duration,
    process: &crate::settings::Settings,
) -> Result<Opened, Error> {
    match spec {
        None => power::open_default(stream_timeout, process)
            .map(|s| {
                let names: Vec<String> = power::default_specs().iter().map(|s| s.to_string()).collect();
                (s, format!("sensor chosen by default (the first usable of {})", names.join(", ")), None)
            })
            .map_err(|e| Error::input(e.to_string())),
        Some(SensorSpec::Replay { path }) => {
            let run = record::read(path)
                .map_err(|e| Error::input(format!("--sensor replay:{}", path.display())).because(e))?;
            let samples = record::samples(&run);
            if samples.is_empty() {
                return Err(Error::input(format!(
                    "--sensor replay:{}: the raw file holds no power samples; replay needs the raw record of an energy run",
                    path.display()
                )));
            }
            let source = IterSource(samples.into_iter().map(Ok::<Sample, Error>));
            let sensor = ReplaySensor::new(path, Box::new(source), run.header.sensor.as_ref());
            let replayed = run.header.power_boundary();
            Ok((Box::new(sensor), "replayed samples: NOT A LIVE MEASUREMENT".into(), Some(replayed)))
        }
        Some(s) => power::open(s, stream_timeout, process).map(|x| (x, format!("sensor given: {s}"), None)).map_err(|e| {
            Error::input(format!(
                "--sensor {s}: {e}\n(`laya-bench doctor` lists every sensor and why it is or is not usable here)"
            ))
        }),
    }
}

/// How an energy run ended, with its report.
pub struct EnergyOutcome {
    /// The report (also when the run was rejected, incomplete or failed: then without energy).
    pub report: EnergyReport,
    /// The kind of a failure, should the run have failed: the input's when a call failed on
    /// its input during warm-up, else the run's.
    pub failure_kind: Kind,
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn window(start_ns: u64, end_ns: u64) -> Window {
    Window { start_s: seconds(start_ns), end_s: seconds(end_ns) }
}

/// The power sensor a run opens: the one given (`--sensor`), else the first usable default,
/// and the process's settings it opens with.
#[derive(Debug, Clone, Copy)]
pub struct SensorChoice<'a> {
    /// The sensor given, or `None` for the first usable of [`power::default_specs`].
    pub spec: Option<&'a SensorSpec>,
    /// The process's settings, which the sensor opens with.
    pub process: &'a crate::settings::Settings,
}

/// A power sensor opened and probed before anything loads ([`open`]), held by a
/// [`SensorGuard`] (closed on every early return) until [`run`] hands it to the sampler.
pub struct ProbedSensor {
    sensor: SensorGuard,
    /// How the sensor was chosen, in words.
    choice: String,
    /// The boundary a replayed record gives.
    replayed_boundary: Option<PowerBoundary>,
    /// The sensor as opened.
    opened: power::SensorInfo,
    /// The run's settings for this sensor ([`Settings::for_sensor`]).
    settings: Settings,
    /// The run's clock, started before the probe readings (which are stamped on it), and its
    /// wall-clock start.
    clock: Clock,
    started_unix_s: f64,
    /// The readings taken before anything is measured (none for a replay).
    probes: Vec<Sample>,
}

impl ProbedSensor {
    /// The run's settings for the opened sensor (the sample interval it chose).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

/// Open the sensor `sensor_choice` names (or the platform's default) and take two readings,
/// before the model or any arm is loaded: a sensor that cannot be opened, whose readings break
/// a rule, or whose update period leaves too few samples in a window is a bad input (exit 2,
/// naming each raw value; nothing is loaded, recorded or measured). The readings go to the raw
/// record when [`run`] writes it.
pub fn open(settings: &Settings, sensor_choice: SensorChoice<'_>) -> Result<ProbedSensor, Error> {
    let SensorChoice { spec: sensor_spec, process } = sensor_choice;
    let stream_timeout = max_gap(settings.interval);
    let (sensor, choice, replayed_boundary) = open_sensor(sensor_spec, stream_timeout, process)?;
    // Closed on every early return until the sampler takes it.
    let mut sensor = SensorGuard::new(sensor);
    let settings = settings.for_sensor(sensor.get().update_period())?;
    let opened = sensor.get().info().clone();
    let clock = Clock::start();
    let started_unix_s = crate::time::unix_now();
    // Two readings before anything loads prove the sensor works and keeps working (a
    // one-shot meter command gives one reading and exits). They are judged by the rules every
    // reading must pass; a fault or a bad value refuses the run (exit 2) with the raw value.
    let probes = if matches!(sensor_spec, Some(SensorSpec::Replay { .. })) {
        Vec::new()
    } else {
        power::sampler::probe(sensor.get(), clock.origin(), 2)
    };
    if !energy_run::check_probes(&probes, &settings.rules).is_empty() {
        return Err(Error::input(refuse_probe(&probes, &settings, &opened.spec)));
    }
    Ok(ProbedSensor { sensor, choice, replayed_boundary, opened, settings, clock, started_unix_s, probes })
}

/// Run the energy protocol on the set-up's arms with the sensor [`open`] probed, recording
/// into a new raw file at `raw` (the probe readings right after the header). A run that stops
/// before its verdict is a failed run; otherwise the outcome carries the verdict.
pub fn run(
    bundle: &Bundle,
    setup: &mut Setup<'_>,
    input: &HeaderInput<'_>,
    probed: ProbedSensor,
    io: RunIo<'_>,
    watch: &mut dyn Observer,
) -> Result<EnergyOutcome, Error> {
    let RunIo { raw: raw_path, overwrite, stop, hurry } = io;
    let ProbedSensor { sensor, choice, replayed_boundary, opened, settings, clock, started_unix_s, probes } =
        probed;
    let settings = &settings;
    let stream_timeout = max_gap(settings.interval);
    let mut header = recorder::header(input, bundle, setup, &settings.plan);
    header.sensor = Some(opened.clone());
    // Declared (`--boundary`), else the replayed record's, else the sensor kind's own.
    header.power_boundary = Some(
        settings.boundary.clone().or(replayed_boundary).unwrap_or_else(|| PowerBoundary::of_sensor(&opened)),
    );
    header.energy = Some(settings.info.clone());
    // The lock is held until the footer is written: a second run on this file refuses
    // before measuring.
    let (_lock, writer) = recorder::open_raw(raw_path, overwrite)?;
    header.started_unix_s = started_unix_s;
    watch.started(header.started_unix_s);
    let (first_tx, rx) = mpsc::channel::<Msg>();
    let write_failed = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(writer, rx, write_failed.clone())
        .map_err(|e| Error::run("cannot start the raw writer").because(e))?;
    // Bound after the writer guard, so an early return drops the sender first and the guard's
    // join finds the channel closed.
    let tx = first_tx;
    let fail_early = |e: mpsc::SendError<Msg>| Error::run(format!("raw record: {}: {e}", raw_path.display()));
    tx.send(Msg::Record(Record::Header(Box::new(header.clone())))).map_err(fail_early)?;
    for p in &probes {
        tx.send(Msg::Record(Record::Probe(Box::new(p.clone())))).map_err(fail_early)?;
    }
    tx.send(Msg::Sync).map_err(fail_early)?;
    let sample_tx = tx.clone();
    let sampling = Sampling {
        sensor: sensor.into_sampled(),
        interval: settings.interval,
        stream_timeout,
        sink: Box::new(move |s| {
            // If the writer is gone the run's own error says so; samples are never invented.
            let _ = sample_tx.send(Msg::Sample(s));
        }),
    };
    let mut rec = Recorder::new(ChannelSink(tx));
    // Stops between calls on a signal or as soon as the raw writer fails.
    let controls =
        Controls { stop, hurry, failed: Some(&write_failed), sampling: Some(sampling), order: input.order };
    let mut observers = Observers::new().with(&mut rec).with(watch);
    let outcome =
        run_with(&mut setup.arms, &setup.workload, &settings.plan, &clock, &mut observers, controls);
    drop(observers);
    let Recorder { sink, rss, total_calls, .. } = rec;
    drop(sink);
    let Written { raw: mut raw_file, samples, error: write_error } = writer.join()?;
    let finish = |raw_file: &mut RawWriter, records: Vec<Record>| -> std::io::Result<()> {
        for r in &records {
            raw_file.write(r)?;
        }
        raw_file.sync()
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let kept = match &write_error {
                None => {
                    let footer = footer(RunStatus::Failed, total_calls, Some(e.to_string()), vec![]);
                    let _ = finish(&mut raw_file, vec![footer]);
                    format!("everything measured so far is in {}", raw_path.display())
                }
                Some(_) => crate::record::cut_note(raw_path),
            };
            return Err(Error::run(format!("the run stopped; {kept}")).because(e));
        }
    };
    if let Some(e) = write_error {
        // The run stopped between calls when the writer failed; nothing more is written.
        return Err(Error::run(format!("the run stopped; {}", crate::record::cut_note(raw_path))).because(e));
    }

    // Judge the samples.
    let totals = &outcome.totals;
    let blocks: Vec<BlockSpan> = totals
        .blocks
        .iter()
        .map(|b| BlockSpan {
            index: b.index,
            window: window(b.start_ns, b.end_ns),
            ended_early: b.ended_early,
        })
        .collect();
    let idles: Vec<IdleSpan> = totals
        .idles
        .iter()
        .map(|i| IdleSpan { index: i.index, window: window(i.start_ns, i.end_ns) })
        .collect();
    let mut verdict = energy_run::analyze(&RunInput {
        probes: &probes,
        samples: &samples,
        blocks: &blocks,
        idles: &idles,
        span: outcome.span_ns.map(|(a, b)| window(a, b)),
        rules: settings.rules,
        idle_discard_s: settings.idle_discard.as_secs_f64(),
    });
    if matches!(outcome.end, RunEnd::Interrupted { .. }) && outcome.span_ns.is_none() {
        // Stopped before any window was measured (in the warm-up, or while waiting for the
        // first reading): no samples is the stop's doing, not a sensor fault.
        verdict.rejections.retain(|r| !matches!(r.rejection, crate::energy::reject::Rejection::NoSamples));
    }
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
        RunEnd::Interrupted { during } => {
            (RunStatus::Incomplete, Some(interrupted_reason(during, raised(stop))))
        }
        RunEnd::SensorStopped { during } => (
            RunStatus::Rejected,
            Some(format!("the sensor stopped during {during}; the rest of the plan was not run")),
        ),
        RunEnd::CallFailed { arm, phase, error } => {
            (RunStatus::Failed, Some(format!("arm `{arm}` failed during {phase}: {error}")))
        }
    };
    let failure_kind = match &outcome.end {
        RunEnd::CallFailed { error, phase, .. } if *phase == Phase::Warmup => error.kind(),
        _ => Kind::Run,
    };

    // Append the verdict; nothing written before is touched.
    let arms = &setup.arms;
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
    finish(&mut raw_file, tail)
        .map_err(|e| Error::run(format!("cannot finish the raw record {}", raw_path.display())).because(e))?;

    let context = ReportContext {
        header: &header,
        energy_plan: &settings.info,
        opened: &opened,
        rss: &rss,
        raw_path,
        choice: &choice,
    };
    // An interrupted run whose samples break no rule: the figures of its whole cycles, derived
    // as `summary --whole-cycles` derives them from the raw record (the same samples, the
    // cycles' own windows; every call stays in the stability verdict).
    let whole = (status == RunStatus::Incomplete && !verdict.rejected())
        .then(|| totals.whole_cycles(arms.len(), settings.plan.cycles, true))
        .flatten()
        .and_then(|(k, used)| {
            let n = (k * 2 * arms.len()) as u32;
            let kept_blocks: Vec<BlockSpan> = blocks.iter().filter(|b| b.index < n).copied().collect();
            let kept_idles: Vec<IdleSpan> = idles.iter().filter(|i| i.index <= n).copied().collect();
            let v = energy_run::analyze(&RunInput {
                probes: &probes,
                samples: &samples,
                blocks: &kept_blocks,
                idles: &kept_idles,
                span: energy_run::span_of(&kept_blocks, &kept_idles),
                rules: settings.rules,
                idle_discard_s: settings.idle_discard.as_secs_f64(),
            });
            (!v.rejected()).then_some((k, used, v))
        });
    let report = match whole {
        Some((k, used, v)) => {
            let mut r = build_report(
                &context,
                &used,
                outcome.sampler.as_ref(),
                arms,
                &v,
                Figures::WholeCycles,
                (status, status_reason),
            );
            r.whole_cycles = Some(k);
            let left_out = totals.unstable_left_out(&used);
            if left_out > 0 {
                r.stable = false;
                r.notes.push(crate::report::left_out_unstable_warning(left_out));
            }
            r
        }
        None => build_report(
            &context,
            totals,
            outcome.sampler.as_ref(),
            arms,
            &verdict,
            Figures::Run,
            (status, status_reason),
        ),
    };
    Ok(EnergyOutcome { report, failure_kind })
}

/// The message of a run refused because a reading before measuring broke a rule, naming each
/// raw value and every rule it broke.
fn refuse_probe(probes: &[Sample], settings: &Settings, spec: &str) -> String {
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
    let kept = "nothing was loaded, recorded or measured";
    match fault {
        Some(f) => {
            let hint = if f.kind == FaultKind::Stopped {
                "a meter command must keep running and print one line per reading; wrap a one-shot command, e.g. exec:'while :; do CMD; sleep 0.5; done'"
            } else {
                "check the meter by hand; `laya-bench doctor` lists every sensor"
            };
            let which = if probes.len() <= 1 { "gave no reading" } else { "gave one reading, then none" };
            format!("the sensor {spec} {which} before measuring: {f}\n({hint}; {kept})")
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
            msg
        }
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

/// Which figures a report gives: the run's, or (an interrupted run) its whole cycles'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figures {
    /// The run's: energy figures only when it is complete.
    Run,
    /// The whole cycles' of an interrupted run, whose samples break no rule: with energy.
    WholeCycles,
}

fn build_report(
    cx: &ReportContext<'_>,
    totals: &RunTotals,
    sampler: Option<&crate::power::sampler::SamplerReport>,
    arms: &[Arm<'_>],
    verdict: &RunEnergy,
    figures_of: Figures,
    (status, status_reason): (RunStatus, Option<String>),
) -> EnergyReport {
    let header = cx.header;
    let with_energy = status == RunStatus::Complete || figures_of == Figures::WholeCycles;
    let no_energy = match status {
        RunStatus::Complete => "",
        RunStatus::Rejected => "the run was rejected; its energy figures must not be used",
        RunStatus::Incomplete => "the run is incomplete",
        RunStatus::Failed => "the run failed",
    };
    let energy_of = |index: u32| -> (Option<crate::energy::BlockEnergy>, String) {
        if !with_energy {
            return (None, no_energy.to_string());
        }
        match verdict.blocks.iter().find(|b| b.index == index) {
            Some(b) => (b.energy, b.missing_reason.clone().unwrap_or_default()),
            None => (None, "no energy was computed for this block".into()),
        }
    };
    let figures = |b: &BlockRecord| {
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
    let mut intervals = ratio_intervals(totals, arms.len(), |i| energy_of(i).0, with_energy, no_energy);
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
            intervals: std::mem::take(&mut intervals[a]),
            identical_to: header.arms[..a].iter().find(|o| info.same_model_as(o)).map(|o| o.name.clone()),
            answers_vs_baseline: crate::report::answers::of_arm(&totals.warmup, a),
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
                host_steal: b.steal,
            }
        })
        .collect();
    let sensor = sampler.map(|s| s.sensor.clone()).unwrap_or_else(|| cx.opened.clone());
    let boundary = header.power_boundary();
    let mut notes = vec![
        RATIO_RULE.to_string(),
        "t = Σ block wall time / decisions (all completed work); P = Σ block energy / Σ block time; E = P × t.".into(),
        format!(
            "Idle-subtracted energy = block energy − (mean of the two adjacent stable idle powers) × block time, kept with its sign. It has a different boundary from {}: a larger idle-subtracted gain does not mean the measured boundary draws that much less.",
            boundary.noun("energy")
        ),
        "RSS is the whole process with every arm's model resident; it is not attributable to one backend.".into(),
        cx.choice.to_string(),
    ];
    if paced {
        notes.push("Equal-load mode: every arm makes the same calls on the same absolute schedule; a block lasts until its schedule ends, so t includes the waits between calls. A call misses its deadline when it ends after the next call was due; it is still made and counted, never dropped or skipped.".into());
    }
    if !sensor.live {
        notes.push("NOT A LIVE MEASUREMENT: the sensor replays or scripts its readings.".into());
    }
    for (i, a) in out_arms.iter().enumerate() {
        if let Some(w) = missed_deadline_warning(&a.arm.name, a.missed_deadlines, a.totals.decisions) {
            notes.push(w);
        }
        let (made, scheduled) = totals
            .blocks
            .iter()
            .filter(|b| b.arm == i && !b.ended_early)
            .fold((0, 0), |(m, s), b| (m + b.calls, s + b.scheduled_calls.unwrap_or(b.calls)));
        if made < scheduled {
            notes.push(format!(
                "WARNING: arm `{}` made {made} of its {scheduled} scheduled calls: it could not keep --rate, so its blocks ended by time (twice their length plus 1 s) with calls unmade; its load was not the equal load this comparison assumes; lower --rate below what every arm sustains",
                a.arm.name
            ));
        }
        let steal = StealTicks::sum(totals.blocks.iter().filter(|b| b.arm == i).map(|b| b.steal));
        if let Some(w) = steal::warning(&format!("arm `{}`'s blocks", a.arm.name), steal) {
            notes.push(format!("WARNING: {w}"));
        }
        if let Some(same) = &a.identical_to {
            notes.push(crate::report::speed::identical_warning(&a.arm, same));
        }
    }
    let sampler_cpu_fraction =
        sampler.and_then(|s| s.cpu_time_ns.filter(|_| s.wall_ns > 0).map(|c| c as f64 / s.wall_ns as f64));
    // The report's own field order puts the status between these three.
    let Provenance { schema_version, tool, host } = header.provenance(crate::report::energy::SCHEMA_VERSION);
    EnergyReport {
        schema_version,
        status,
        status_reason,
        rejections: verdict.rejections.clone(),
        tool,
        host,
        model: header.model.clone(),
        workload: header.workload.clone(),
        plan: header.plan.clone(),
        energy_plan: cx.energy_plan.clone(),
        sensor,
        power_boundary: boundary,
        sampler: sampler.cloned(),
        sampler_cpu_fraction,
        series: verdict.series.clone(),
        samples: verdict.summary,
        raw_path: Some(cx.raw_path.display().to_string()),
        arms: out_arms,
        blocks,
        cross_check: if with_energy { verdict.cross_check.clone() } else { None },
        sampling: verdict.sampling.clone(),
        stable: totals.unstable.iter().all(|&u| u == 0),
        whole_cycles: None,
        notes,
        row_context: crate::report::RowContext::of(header),
    }
}

/// Resamples of the intervals: those of `speed`'s ratio and `summary`'s default.
const INTERVAL_RESAMPLES: usize = 10_000;

/// The bootstrap intervals of every arm's t, P, E and ratios, as `summary` derives them from
/// the raw record (10,000 resamples of whole balanced cycles, seed 0, 95 %): one entry per
/// arm, empty but for its reasons when the figures are not of at least two whole cycles.
/// `energy_of` gives a block's energy (by index) where the report has energy figures.
fn ratio_intervals(
    totals: &RunTotals,
    arms: usize,
    energy_of: impl Fn(u32) -> Option<crate::energy::BlockEnergy>,
    with_energy: bool,
    no_energy: &str,
) -> Vec<ArmIntervals> {
    use crate::summary::bootstrap::{self, CycleSums, CycleTable};
    let start = CycleSums {
        decisions: 0.0,
        time_s: 0.0,
        energy_j: with_energy.then_some(0.0),
        incremental_j: with_energy.then_some(0.0),
    };
    let cycles = totals.blocks.iter().map(|b| b.cycle as usize + 1).max().unwrap_or(0);
    let mut table = vec![vec![start; arms]; cycles];
    let mut blocks = vec![0usize; cycles];
    for b in &totals.blocks {
        let c = &mut table[b.cycle as usize][b.arm];
        let e = energy_of(b.index);
        c.decisions += b.calls as f64;
        c.time_s += seconds(b.end_ns - b.start_ns);
        c.energy_j = c.energy_j.zip(e.map(|e| e.energy_j)).map(|(x, y)| x + y);
        c.incremental_j = c.incremental_j.zip(e.map(|e| e.incremental_energy_j)).map(|(x, y)| x + y);
        blocks[b.cycle as usize] += if b.ended_early { 2 * arms + 1 } else { 1 };
    }
    let reason = if blocks.iter().any(|&n| n != 2 * arms) {
        Some("the figures include a balanced cycle that did not run whole, and the bootstrap resamples whole cycles only".to_string())
    } else if cycles < 2 {
        Some(format!(
            "{cycles} whole balanced cycle{}: resampling whole cycles needs at least 2 ({} or more for an interval worth reading); pass --cycles",
            if cycles == 1 { "" } else { "s" },
            crate::summary::FEW_CYCLES
        ))
    } else {
        None
    };
    if let Some(why) = reason {
        let mut none = ArmIntervals::default();
        for q in ArmIntervals::QUANTITIES {
            none.missing.insert(q.into(), why.clone());
        }
        return vec![none; arms];
    }
    let table = CycleTable { cycles: table, baseline: 0, with_energy };
    let resampled = bootstrap::resample(&table, INTERVAL_RESAMPLES, 0);
    bootstrap::intervals(resampled, 0.95, |q| bootstrap::missing_reason(q, with_energy, no_energy))
}

/// The highest `--rate`: one call every microsecond.
const MAX_RATE_HZ: f64 = 1e6;

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
