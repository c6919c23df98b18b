//! The sampler thread: reads a sensor at absolute deadlines and streams stamped samples.
//!
//! - Polled sensors are read at `t0 + k × interval` (absolute deadlines, so a slow read does
//!   not shift later ticks); deadlines that passed during a slow read are skipped and counted,
//!   never caught up in a burst.
//! - Streamed sensors (exec meters) are waited on; each reading is stamped on arrival, and at
//!   most one is taken every [`MIN_STREAM_SPACING`] (1 ms): a meter printing faster sheds
//!   load in the sensor (the newest pending line wins), and what was skipped is counted in
//!   [`SamplerReport::skipped`], so memory and the raw record stay bounded.
//! - Every sample carries the monotonic RECEIVE time (when the read returned) in nanoseconds
//!   since an `Instant` origin the caller owns, so the caller's block boundaries and the
//!   samples share one clock.
//! - A fault is sent as a fault; a fatal fault (the sensor stopped) ends sampling.
//! - The thread measures its own CPU time and reports it at stop.

use super::{Measurement, Pacing, Reading, Sensor, SensorFault, SensorInfo, SkippedReadings};
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{self, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a streamed sensor is waited on before the stop flag is checked again.
const STREAM_POLL: Duration = Duration::from_millis(50);

/// The least time between two samples taken from a streamed sensor (at most 1000 a second):
/// what a meter prints in between is left to the sensor, which keeps the newest line and
/// counts the ones it skipped ([`Sensor::skipped`]). No real meter reports this fast; the
/// bound keeps a runaway one (`yes 30.5`) from flooding the raw record and memory.
pub const MIN_STREAM_SPACING: Duration = Duration::from_millis(1);

/// One stamped sensor read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// 0, 1, 2, ... in the order sent; a missing number means a lost sample.
    pub seq: u64,
    /// When the read was started, ns since the origin (the deadline actually met for polled
    /// sensors; for streamed ones, when the wait began).
    pub t_request_ns: u64,
    /// When the reading was received, ns since the origin (the time used for integration).
    pub t_receive_ns: u64,
    /// The reading, or the fault that took its place.
    pub outcome: SampleOutcome,
}

impl Sample {
    /// Receive time in seconds since the origin.
    pub fn t_receive_s(&self) -> f64 {
        self.t_receive_ns as f64 / 1e9
    }

    /// The measurement of `channel`, or why there is none: the sample's fault (with whether it
    /// was fatal), or a reading that lacks the channel. Never a default value.
    pub fn measurement(&self, channel: &str) -> Result<Measurement, ChannelMissing> {
        match &self.outcome {
            SampleOutcome::Reading(r) => r.channel(channel).map(|c| c.measurement).ok_or_else(|| {
                ChannelMissing { reason: format!("reading has no channel {channel:?}"), fatal: false }
            }),
            SampleOutcome::Fault(f) => Err(ChannelMissing { reason: f.message.clone(), fatal: f.fatal }),
        }
    }
}

/// Why a sample has no value for a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelMissing {
    /// The fault message, or which channel was absent.
    pub reason: String,
    /// Whether the sensor stopped for good.
    pub fatal: bool,
}

/// A reading or a fault; never a made-up value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleOutcome {
    /// The sensor returned a reading.
    Reading(Reading),
    /// The sensor failed; no value exists for this sample.
    Fault(SensorFault),
}

/// Sampler settings.
#[derive(Debug, Clone, Copy)]
pub struct SamplerConfig {
    /// Time between polled reads (`--sample-interval`, default 500 ms); must be positive.
    pub interval: Duration,
    /// Zero of every timestamp; the caller stamps block boundaries against the same origin.
    pub origin: Instant,
    /// For streamed sensors: how long without a reading before a timeout fault is sent
    /// (use the gap rule, max(2 s, 3 × interval)).
    pub stream_timeout: Duration,
}

impl SamplerConfig {
    /// Settings for `interval` with the stream timeout set to max(2 s, 3 × interval).
    pub fn new(interval: Duration, origin: Instant) -> Self {
        SamplerConfig { interval, origin, stream_timeout: max_gap(interval) }
    }
}

/// The longest allowed gap between samples: max(2 s, 3 × interval).
pub fn max_gap(interval: Duration) -> Duration {
    Duration::from_secs(2).max(interval.saturating_mul(3))
}

/// Why sampling ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// [`Sampler::stop`] was called (or the sampler was dropped).
    Requested,
    /// The receiving end of the sample channel was dropped.
    ReceiverGone,
    /// The sensor reported a fatal fault (sent as the last sample).
    SensorStopped {
        /// The fault.
        fault: SensorFault,
    },
}

/// What the sampler did, reported at stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerReport {
    /// The sensor's identity and provenance.
    pub sensor: SensorInfo,
    /// The sampling interval, ns.
    pub interval_ns: u64,
    /// How the sensor was driven.
    pub pacing: Pacing,
    /// Samples sent (readings + faults).
    pub samples_sent: u64,
    /// Of those, faults.
    pub faults: u64,
    /// Polled deadlines skipped because a read overran them.
    pub missed_deadlines: u64,
    /// Longest single read or wait, ns.
    pub max_read_ns: u64,
    /// Sampler thread wall time from start to stop, ns.
    pub wall_ns: u64,
    /// Sampler thread CPU time (user + system), ns; `None` when the OS gives none.
    pub cpu_time_ns: Option<u64>,
    /// Why `cpu_time_ns` is `None`.
    pub cpu_time_missing_reason: Option<String>,
    /// Why sampling ended.
    pub stop: StopReason,
    /// What a streamed sensor received but did not pass on (a meter printing faster than one
    /// line a millisecond); zero for the other sensors and in records written before it.
    #[serde(default)]
    pub skipped: SkippedReadings,
    /// The error from closing the sensor (e.g. a meter that had to be killed), if any.
    pub close_error: Option<String>,
}

/// The sampler could not start or did not finish cleanly.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// The interval is zero.
    #[error("invalid sample interval: must be positive, e.g. --sample-interval 500ms")]
    ZeroInterval,
    /// The origin lies in the future, so receive times would be negative.
    #[error(
        "invalid sampler origin: the origin Instant is in the future; take it before starting the sampler"
    )]
    OriginInFuture,
    /// The OS refused to create the thread.
    #[error("sampler thread spawn failed: {0}")]
    Spawn(#[source] std::io::Error),
    /// The thread panicked (a bug, not a sensor fault).
    #[error("sampler thread panicked: {0}")]
    Panicked(String),
}

/// A running sampler thread.
pub struct Sampler {
    stop_tx: Option<Sender<()>>,
    handle: Option<JoinHandle<SamplerReport>>,
}

impl Sampler {
    /// Start sampling `sensor` on a new thread, sending every sample to `tx`.
    pub fn start(
        sensor: Box<dyn Sensor>,
        config: SamplerConfig,
        tx: Sender<Sample>,
    ) -> Result<Sampler, SamplerError> {
        if config.interval.is_zero() {
            return Err(SamplerError::ZeroInterval);
        }
        if config.origin > Instant::now() {
            return Err(SamplerError::OriginInFuture);
        }
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("laya-power-sampler".into())
            .spawn(move || run(sensor, config, tx, stop_rx))
            .map_err(SamplerError::Spawn)?;
        Ok(Sampler { stop_tx: Some(stop_tx), handle: Some(handle) })
    }

    /// Whether the thread has ended on its own (sensor stopped or receiver gone).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Ask the thread to stop, wait for it, and return its report.
    pub fn stop(mut self) -> Result<SamplerReport, SamplerError> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<SamplerReport, SamplerError> {
        if let Some(tx) = self.stop_tx.take() {
            // The thread may already have ended; a closed channel is fine.
            let _ = tx.send(());
        }
        match self.handle.take() {
            Some(h) => h.join().map_err(|p| {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_string());
                SamplerError::Panicked(msg)
            }),
            None => Err(SamplerError::Panicked("sampler already stopped".into())),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            // Stop and join so the sensor is closed (children killed and reaped).
            let _ = self.stop_inner();
        }
    }
}

/// The next absolute deadline after `now`, given the deadline just served; returns it and how
/// many deadlines were skipped because they already passed.
pub fn next_deadline(served: Instant, now: Instant, interval: Duration) -> (Instant, u64) {
    let mut next = served + interval;
    if next > now {
        return (next, 0);
    }
    // Jump straight to the first deadline after `now` (no catch-up burst).
    let behind = now.duration_since(next).as_nanos();
    let step = interval.as_nanos().max(1);
    let skip = behind / step + 1;
    let skip_u32 = u32::try_from(skip).unwrap_or(u32::MAX);
    next += interval.saturating_mul(skip_u32);
    (next, u64::try_from(skip).unwrap_or(u64::MAX))
}

/// Nanoseconds from `origin` to `t` (0 if `t` precedes it, which `start` rules out).
fn ns_since(origin: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
}

struct Counters {
    seq: u64,
    faults: u64,
    missed: u64,
    max_read_ns: u64,
}

enum Sent {
    Continue,
    Stop(StopReason),
}

fn send(
    tx: &Sender<Sample>,
    c: &mut Counters,
    origin: Instant,
    requested: Instant,
    received: Instant,
    outcome: SampleOutcome,
) -> Sent {
    c.max_read_ns = c.max_read_ns.max(ns_since(requested, received));
    let fatal = match &outcome {
        SampleOutcome::Fault(f) => {
            c.faults += 1;
            f.fatal.then(|| f.clone())
        }
        SampleOutcome::Reading(_) => None,
    };
    let sample = Sample {
        seq: c.seq,
        t_request_ns: ns_since(origin, requested),
        t_receive_ns: ns_since(origin, received),
        outcome,
    };
    c.seq += 1;
    if tx.send(sample).is_err() {
        return Sent::Stop(StopReason::ReceiverGone);
    }
    match fatal {
        Some(fault) => Sent::Stop(StopReason::SensorStopped { fault }),
        None => Sent::Continue,
    }
}

fn run(
    mut sensor: Box<dyn Sensor>,
    config: SamplerConfig,
    tx: Sender<Sample>,
    stop_rx: mpsc::Receiver<()>,
) -> SamplerReport {
    let cpu_start = thread_cpu_time_ns();
    let wall_start = Instant::now();
    let pacing = sensor.pacing();
    let mut c = Counters { seq: 0, faults: 0, missed: 0, max_read_ns: 0 };
    let origin = config.origin;

    let begin_stop = match sensor.begin() {
        Ok(()) => None,
        Err(e) => {
            let now = Instant::now();
            let fault = SampleOutcome::Fault(e.to_fault());
            match send(&tx, &mut c, origin, now, now, fault) {
                Sent::Stop(r) => Some(r),
                Sent::Continue => None,
            }
        }
    };
    let stop = match begin_stop {
        Some(r) => r,
        None => match pacing {
            Pacing::Polled => run_polled(&mut *sensor, &config, &tx, &stop_rx, &mut c),
            Pacing::Streamed => run_streamed(&mut *sensor, &config, &tx, &stop_rx, &mut c),
        },
    };

    let close_error = sensor.close().err().map(|e| e.to_string());
    let wall_ns = ns_since(wall_start, Instant::now());
    let (cpu_time_ns, cpu_time_missing_reason) = match (cpu_start, thread_cpu_time_ns()) {
        (Ok(a), Ok(b)) => (Some(b.saturating_sub(a)), None),
        (Err(e), _) | (_, Err(e)) => (None, Some(e.to_string())),
    };
    SamplerReport {
        sensor: sensor.info().clone(),
        interval_ns: u64::try_from(config.interval.as_nanos()).unwrap_or(u64::MAX),
        pacing,
        samples_sent: c.seq,
        faults: c.faults,
        missed_deadlines: c.missed,
        max_read_ns: c.max_read_ns,
        wall_ns,
        cpu_time_ns,
        cpu_time_missing_reason,
        stop,
        skipped: sensor.skipped(),
        close_error,
    }
}

fn run_polled(
    sensor: &mut dyn Sensor,
    config: &SamplerConfig,
    tx: &Sender<Sample>,
    stop_rx: &mpsc::Receiver<()>,
    c: &mut Counters,
) -> StopReason {
    let mut deadline = Instant::now();
    loop {
        let requested = Instant::now();
        let outcome = match sensor.read() {
            Ok(r) => SampleOutcome::Reading(r),
            Err(e) => SampleOutcome::Fault(e.to_fault()),
        };
        let received = Instant::now();
        if let Sent::Stop(r) = send(tx, c, config.origin, requested, received, outcome) {
            return r;
        }
        let (next, skipped) = next_deadline(deadline, Instant::now(), config.interval);
        c.missed += skipped;
        deadline = next;
        // Sleep to the absolute deadline, waking at once on a stop request.
        let wait = deadline.saturating_duration_since(Instant::now());
        match stop_rx.recv_timeout(wait) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return StopReason::Requested,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

fn run_streamed(
    sensor: &mut dyn Sensor,
    config: &SamplerConfig,
    tx: &Sender<Sample>,
    stop_rx: &mpsc::Receiver<()>,
    c: &mut Counters,
) -> StopReason {
    let mut waiting_since = Instant::now();
    let mut last_sent: Option<Instant> = None;
    loop {
        // At most one sample a MIN_STREAM_SPACING; a stop request wakes the wait at once.
        let pause = last_sent
            .map_or(Duration::ZERO, |t| (t + MIN_STREAM_SPACING).saturating_duration_since(Instant::now()));
        let stop = if pause.is_zero() {
            match stop_rx.try_recv() {
                Ok(()) | Err(TryRecvError::Disconnected) => true,
                Err(TryRecvError::Empty) => false,
            }
        } else {
            match stop_rx.recv_timeout(pause) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
                Err(RecvTimeoutError::Timeout) => false,
            }
        };
        if stop {
            return StopReason::Requested;
        }
        let outcome = match sensor.next(STREAM_POLL) {
            Ok(Some(r)) => SampleOutcome::Reading(r),
            Ok(None) => {
                let waited = waiting_since.elapsed();
                if waited < config.stream_timeout {
                    continue;
                }
                SampleOutcome::Fault(
                    super::SensorError::Timeout {
                        sensor: sensor.info().spec.clone(),
                        waited_s: waited.as_secs_f64(),
                    }
                    .to_fault(),
                )
            }
            Err(e) => SampleOutcome::Fault(e.to_fault()),
        };
        let received = Instant::now();
        let sent = send(tx, c, config.origin, waiting_since, received, outcome);
        waiting_since = received;
        last_sent = Some(received);
        if let Sent::Stop(r) = sent {
            return r;
        }
    }
}

/// Take up to `n` readings now, on the calling thread, stamped like the sampler's samples (ns
/// since `origin`, numbered from 0): the probe that proves a sensor works before anything is
/// measured. A fault is kept as a sample and ends the probe. Nothing is judged here.
pub fn probe(sensor: &mut dyn Sensor, origin: Instant, n: u64) -> Vec<Sample> {
    let mut out = Vec::new();
    for seq in 0..n {
        let requested = Instant::now();
        let outcome = match sensor.read() {
            Ok(r) => SampleOutcome::Reading(r),
            Err(e) => SampleOutcome::Fault(e.to_fault()),
        };
        let received = Instant::now();
        let fault = matches!(outcome, SampleOutcome::Fault(_));
        out.push(Sample {
            seq,
            t_request_ns: ns_since(origin, requested),
            t_receive_ns: ns_since(origin, received),
            outcome,
        });
        if fault {
            break;
        }
    }
    out
}

/// CPU time consumed so far by the calling thread, ns.
#[cfg(unix)]
pub fn thread_cpu_time_ns() -> Result<u64, crate::error::Error> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec that outlives the call, and
    // CLOCK_THREAD_CPUTIME_ID is a clock id both Linux and macOS define.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Err(crate::error::Error::run(format!(
            "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    let secs = u64::try_from(ts.tv_sec).map_err(|_| crate::error::Error::run("negative thread CPU time"))?;
    let nanos =
        u64::try_from(ts.tv_nsec).map_err(|_| crate::error::Error::run("negative thread CPU time"))?;
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// CPU time consumed so far by the calling thread, ns (unsupported on this OS).
#[cfg(not(unix))]
pub fn thread_cpu_time_ns() -> Result<u64, crate::error::Error> {
    Err(crate::error::Error::run("thread CPU time is unavailable on this OS (no per-thread CPU clock)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::{SensorError, SensorKind};
    use std::sync::mpsc::Receiver;

    /// One scripted step of the mock sensor.
    #[derive(Clone)]
    enum Step {
        Watts(f64),
        Fault,
        Stall(Duration, f64),
        Fatal,
        Spin(Duration, f64),
    }

    struct Scripted {
        info: SensorInfo,
        steps: Vec<Step>,
        i: usize,
        closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Scripted {
        fn new(steps: Vec<Step>) -> (Self, std::sync::Arc<std::sync::atomic::AtomicBool>) {
            let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            (
                Scripted {
                    info: SensorInfo {
                        kind: SensorKind::Mock,
                        spec: "mock".into(),
                        source: "mock".into(),
                        device: "scripted".into(),
                        live: false,
                        program: None,
                        notes: vec![],
                    },
                    steps,
                    i: 0,
                    closed: closed.clone(),
                },
                closed,
            )
        }
    }

    impl Sensor for Scripted {
        fn info(&self) -> &SensorInfo {
            &self.info
        }
        fn read(&mut self) -> Result<Reading, SensorError> {
            // After the script ends, repeat its last step.
            let step = self.steps.get(self.i).or(self.steps.last()).cloned().unwrap_or(Step::Fatal);
            self.i += 1;
            match step {
                Step::Watts(w) => Ok(Reading::power_w("system", w)),
                Step::Stall(d, w) => {
                    std::thread::sleep(d);
                    Ok(Reading::power_w("system", w))
                }
                Step::Spin(d, w) => {
                    // Burn `d` of this thread's CPU time (not wall time, which a loaded
                    // machine stretches).
                    let budget = d.as_nanos() as u64;
                    let start = thread_cpu_time_ns().unwrap_or(0);
                    while thread_cpu_time_ns().unwrap_or(u64::MAX) - start < budget {
                        std::hint::spin_loop();
                    }
                    Ok(Reading::power_w("system", w))
                }
                Step::Fault => {
                    Err(SensorError::ReadFailed { sensor: "mock".into(), detail: "injected".into() })
                }
                Step::Fatal => {
                    Err(SensorError::Stopped { sensor: "mock".into(), reason: "injected stop".into() })
                }
            }
        }
        fn close(&mut self) -> Result<(), SensorError> {
            self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
    }

    fn collect(rx: &Receiver<Sample>) -> Vec<Sample> {
        rx.try_iter().collect()
    }

    fn watts(s: &Sample) -> Option<f64> {
        match &s.outcome {
            SampleOutcome::Reading(r) => r.total_power_w(),
            SampleOutcome::Fault(_) => None,
        }
    }

    #[test]
    fn sample_measurement_is_the_value_or_the_reason() {
        let ok = Sample {
            seq: 0,
            t_request_ns: 0,
            t_receive_ns: 1_500_000_000,
            outcome: SampleOutcome::Reading(Reading::power_w("system", 30.75)),
        };
        assert_eq!(ok.t_receive_s(), 1.5);
        assert_eq!(ok.measurement("system"), Ok(Measurement::PowerW { watts: 30.75 }));
        assert!(ok.measurement("psys").unwrap_err().reason.contains("psys"));
        let fault = Sample {
            outcome: SampleOutcome::Fault(SensorFault {
                kind: crate::power::FaultKind::Stopped,
                message: "sensor stopped: x".into(),
                fatal: true,
            }),
            ..ok
        };
        let e = fault.measurement("system").unwrap_err();
        assert!(e.fatal && e.reason == "sensor stopped: x");
    }

    #[test]
    fn deadline_arithmetic_skips_passed_deadlines_without_bursting() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // On time: next deadline one interval later.
        assert_eq!(next_deadline(t0, t0 + ms(10), ms(500)), (t0 + ms(500), 0));
        // A 1.2 s read after the deadline at t0: deadlines 0.5 and 1.0 are gone, next is 1.5.
        assert_eq!(next_deadline(t0, t0 + ms(1200), ms(500)), (t0 + ms(1500), 2));
        // Exactly on a deadline counts it as passed.
        assert_eq!(next_deadline(t0, t0 + ms(500), ms(500)), (t0 + ms(1000), 1));
    }

    #[test]
    fn max_gap_is_two_seconds_or_three_intervals() {
        assert_eq!(max_gap(Duration::from_millis(500)), Duration::from_secs(2));
        assert_eq!(max_gap(Duration::from_secs(1)), Duration::from_secs(3));
    }

    #[test]
    fn rejects_zero_interval_and_future_origin() {
        let (s, _) = Scripted::new(vec![Step::Watts(1.0)]);
        let (tx, _rx) = mpsc::channel();
        let cfg = SamplerConfig::new(Duration::ZERO, Instant::now());
        assert!(matches!(Sampler::start(Box::new(s), cfg, tx.clone()), Err(SamplerError::ZeroInterval)));
        let (s, _) = Scripted::new(vec![Step::Watts(1.0)]);
        let cfg = SamplerConfig::new(Duration::from_millis(10), Instant::now() + Duration::from_secs(60));
        assert!(matches!(Sampler::start(Box::new(s), cfg, tx), Err(SamplerError::OriginInFuture)));
    }

    #[test]
    fn samples_are_sequential_monotonic_and_on_the_interval_grid() {
        let (s, closed) = Scripted::new(vec![Step::Watts(10.0), Step::Watts(11.0), Step::Watts(12.0)]);
        let (tx, rx) = mpsc::channel();
        let origin = Instant::now();
        let interval = Duration::from_millis(50);
        let sampler = Sampler::start(Box::new(s), SamplerConfig::new(interval, origin), tx).unwrap();
        std::thread::sleep(Duration::from_millis(520));
        let report = sampler.stop().unwrap();
        let samples = collect(&rx);
        assert!(closed.load(std::sync::atomic::Ordering::SeqCst), "sensor closed at stop");
        assert_eq!(report.stop, StopReason::Requested);
        assert_eq!(report.samples_sent, samples.len() as u64);
        // ~11 ticks in 520 ms; allow a loaded machine to lose some.
        assert!((5..=12).contains(&samples.len()), "{} samples", samples.len());
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(s.seq, i as u64);
            assert!(s.t_receive_ns >= s.t_request_ns);
        }
        for w in samples.windows(2) {
            assert!(w[1].t_receive_ns > w[0].t_receive_ns);
        }
        assert_eq!(watts(&samples[0]), Some(10.0));
        assert_eq!(watts(&samples[1]), Some(11.0));
        assert_eq!(watts(&samples[2]), Some(12.0));
        // Requests sit on the grid t0 + k × interval (within scheduler jitter): the phase of
        // every request relative to the first stays small.
        let t0 = samples[0].t_request_ns;
        let step = interval.as_nanos() as u64;
        let late: Vec<u64> = samples.iter().map(|s| (s.t_request_ns - t0) % step).collect();
        let on_grid = late.iter().filter(|&&l| l < 20_000_000).count();
        assert!(on_grid * 10 >= samples.len() * 7, "phases {late:?}");
        assert_eq!(report.faults, 0);
        assert_eq!(report.interval_ns, 50_000_000);
    }

    #[test]
    fn a_stall_skips_deadlines_and_sampling_realigns_to_the_grid() {
        let interval = Duration::from_millis(100);
        let (s, _) = Scripted::new(vec![
            Step::Watts(1.0),
            Step::Stall(Duration::from_millis(250), 2.0),
            Step::Watts(3.0),
        ]);
        let (tx, rx) = mpsc::channel();
        let origin = Instant::now();
        let sampler = Sampler::start(Box::new(s), SamplerConfig::new(interval, origin), tx).unwrap();
        std::thread::sleep(Duration::from_millis(650));
        let report = sampler.stop().unwrap();
        let samples = collect(&rx);
        assert!(samples.len() >= 4, "{} samples", samples.len());
        // The stalled read's receive time is ≥ 250 ms after its request.
        let stalled = &samples[1];
        assert!(stalled.t_receive_ns - stalled.t_request_ns >= 250_000_000);
        assert!(report.max_read_ns >= 250_000_000);
        // Read 1 started at ~100 ms and ended at ~350 ms: deadlines 200 and 300 were skipped.
        assert!(report.missed_deadlines >= 2, "{report:?}");
        // The next read is on the grid (≈400 ms after the first), not an interval after the
        // stall ended (≈450 ms).
        let t0 = samples[0].t_request_ns;
        let k = (samples[2].t_request_ns - t0) as f64 / 100e6;
        assert!((4.0..4.3).contains(&k), "k = {k}");
    }

    #[test]
    fn faults_are_sent_as_faults_never_as_values() {
        let (s, _) = Scripted::new(vec![Step::Watts(5.0), Step::Fault, Step::Watts(6.0)]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(20), Instant::now()), tx)
                .unwrap();
        std::thread::sleep(Duration::from_millis(120));
        let report = sampler.stop().unwrap();
        let samples = collect(&rx);
        assert!(samples.len() >= 3);
        assert_eq!(watts(&samples[0]), Some(5.0));
        match &samples[1].outcome {
            SampleOutcome::Fault(f) => {
                assert!(!f.fatal);
                assert!(f.message.contains("injected"));
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        assert_eq!(watts(&samples[2]), Some(6.0));
        assert_eq!(report.faults, 1);
    }

    #[test]
    fn a_fatal_fault_is_sent_last_and_ends_sampling() {
        let (s, closed) = Scripted::new(vec![Step::Watts(5.0), Step::Watts(5.0), Step::Fatal]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(10), Instant::now()), tx)
                .unwrap();
        let mut got = Vec::new();
        // The channel closes when the thread ends on its own.
        while let Ok(s) = rx.recv_timeout(Duration::from_secs(5)) {
            got.push(s);
        }
        // The sender is dropped just before the thread returns: give it a moment to finish.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !sampler.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(sampler.is_finished());
        let report = sampler.stop().unwrap();
        assert_eq!(got.len(), 3);
        assert!(matches!(&got[2].outcome, SampleOutcome::Fault(f) if f.fatal));
        assert!(matches!(report.stop, StopReason::SensorStopped { .. }));
        assert!(closed.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn stop_wakes_a_long_sleep_at_once() {
        let (s, _) = Scripted::new(vec![Step::Watts(1.0)]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_secs(30), Instant::now()), tx)
                .unwrap();
        let _first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let t = Instant::now();
        let report = sampler.stop().unwrap();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert_eq!(report.samples_sent, 1);
    }

    #[test]
    fn a_dropped_receiver_ends_sampling() {
        let (s, _) = Scripted::new(vec![Step::Watts(1.0)]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_millis(5), Instant::now()), tx)
                .unwrap();
        drop(rx);
        let t = Instant::now();
        while !sampler.is_finished() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let report = sampler.stop().unwrap();
        assert_eq!(report.stop, StopReason::ReceiverGone);
    }

    #[test]
    fn timestamps_are_relative_to_the_callers_origin() {
        let origin = Instant::now();
        std::thread::sleep(Duration::from_millis(100));
        let (s, _) = Scripted::new(vec![Step::Watts(1.0)]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_secs(10), origin), tx).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let after = ns_since(origin, Instant::now());
        drop(sampler);
        assert!(first.t_request_ns >= 100_000_000);
        assert!(first.t_receive_ns <= after);
    }

    #[test]
    fn reports_its_own_cpu_time() {
        let (s, _) = Scripted::new(vec![Step::Spin(Duration::from_millis(60), 1.0)]);
        let (tx, rx) = mpsc::channel();
        let sampler =
            Sampler::start(Box::new(s), SamplerConfig::new(Duration::from_secs(10), Instant::now()), tx)
                .unwrap();
        let first = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(first.seq, 0);
        let report = sampler.stop().unwrap();
        let cpu = report.cpu_time_ns.expect("thread CPU time on unix");
        // The read burned 60 ms of CPU; CPU time never exceeds wall time.
        assert!(cpu >= 60_000_000, "cpu {cpu} ns");
        assert!(cpu <= report.wall_ns + 5_000_000, "{report:?}");
        assert!(report.cpu_time_missing_reason.is_none());
    }

    #[test]
    fn thread_cpu_time_is_monotonic() {
        let a = thread_cpu_time_ns().unwrap();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let b = thread_cpu_time_ns().unwrap();
        assert!(b >= a);
    }

    /// A streamed mock: readings arrive at scripted times after `begin`.
    struct Stream {
        info: SensorInfo,
        at: Vec<(Duration, f64)>,
        start: Option<Instant>,
        i: usize,
    }

    impl Sensor for Stream {
        fn info(&self) -> &SensorInfo {
            &self.info
        }
        fn pacing(&self) -> Pacing {
            Pacing::Streamed
        }
        fn begin(&mut self) -> Result<(), SensorError> {
            self.start = Some(Instant::now());
            Ok(())
        }
        fn read(&mut self) -> Result<Reading, SensorError> {
            self.next(Duration::from_secs(60))?
                .ok_or_else(|| SensorError::Timeout { sensor: "stream".into(), waited_s: 60.0 })
        }
        fn next(&mut self, timeout: Duration) -> Result<Option<Reading>, SensorError> {
            let start = self.start.unwrap_or_else(Instant::now);
            let Some(&(at, w)) = self.at.get(self.i) else {
                std::thread::sleep(timeout);
                return Ok(None);
            };
            let due = start + at;
            let now = Instant::now();
            if due > now + timeout {
                std::thread::sleep(timeout);
                return Ok(None);
            }
            std::thread::sleep(due.saturating_duration_since(now));
            self.i += 1;
            Ok(Some(Reading::power_w("system", w)))
        }
    }

    #[test]
    fn streamed_readings_are_stamped_on_arrival_and_silence_is_a_timeout_fault() {
        let (mock, _) = Scripted::new(vec![]);
        let s = Stream {
            info: mock.info.clone(),
            at: vec![(Duration::from_millis(30), 1.0), (Duration::from_millis(160), 2.0)],
            start: None,
            i: 0,
        };
        let (tx, rx) = mpsc::channel();
        let origin = Instant::now();
        let mut cfg = SamplerConfig::new(Duration::from_millis(100), origin);
        cfg.stream_timeout = Duration::from_millis(200);
        let sampler = Sampler::start(Box::new(s), cfg, tx).unwrap();
        std::thread::sleep(Duration::from_millis(520));
        let report = sampler.stop().unwrap();
        let samples = collect(&rx);
        assert_eq!(report.pacing, Pacing::Streamed);
        assert!(samples.len() >= 3, "{samples:?}");
        assert_eq!(watts(&samples[0]), Some(1.0));
        assert_eq!(watts(&samples[1]), Some(2.0));
        let gap = samples[1].t_receive_ns - samples[0].t_receive_ns;
        assert!((100_000_000..=200_000_000).contains(&gap), "gap {gap}");
        // No further reading: after 200 ms of silence a timeout fault, not a value.
        match &samples[2].outcome {
            SampleOutcome::Fault(f) => assert_eq!(f.kind, crate::power::FaultKind::Timeout),
            other => panic!("expected timeout, got {other:?}"),
        }
    }
}
