//! The sampler's lifetime inside a run: start it on the run's clock, tap its samples (so the
//! run can wait for coverage and notice a sensor that stopped) and hand every sample to the
//! caller's sink on the tap thread, never on the benchmark thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::power::sampler::{Sample, SampleOutcome, Sampler, SamplerConfig, SamplerError, SamplerReport};
use crate::power::Sensor;

/// A sensor to sample during a run, and where its samples go.
pub struct Sampling {
    /// The opened sensor (the sampler calls `begin` on it when sampling starts).
    pub sensor: Box<dyn Sensor>,
    /// Time between polled reads (`--sample-interval`).
    pub interval: Duration,
    /// How long a streamed sensor may stay silent before a timeout fault (the gap rule,
    /// max(2 s, 3 × interval)); also bounds the waits for the first and the last reading.
    pub stream_timeout: Duration,
    /// Receives every sample, in order, on the tap thread (e.g. forwards it to a raw writer).
    pub sink: Box<dyn FnMut(Sample) + Send>,
}

/// What the tap thread has seen, readable from the benchmark thread without locks.
#[derive(Debug)]
pub(crate) struct TapState {
    /// Readings (not faults) seen.
    readings: AtomicU64,
    /// Receive time of the latest reading, ns since the origin.
    last_reading_ns: AtomicU64,
    /// The sensor reported a fatal fault or the sampler ended on its own.
    stopped: AtomicBool,
}

/// A running sampler and the thread that taps its samples.
pub(crate) struct Tap {
    sampler: Option<Sampler>,
    thread: Option<JoinHandle<()>>,
    state: Arc<TapState>,
}

impl Tap {
    /// Start sampling with `origin` as the zero of every timestamp.
    pub(crate) fn start(s: Sampling, origin: Instant) -> Result<Tap, SamplerError> {
        let Sampling { sensor, interval, stream_timeout, mut sink } = s;
        let (tx, rx) = mpsc::channel::<Sample>();
        let state = Arc::new(TapState {
            readings: AtomicU64::new(0),
            last_reading_ns: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let seen = state.clone();
        let thread = std::thread::Builder::new()
            .name("laya-sample-tap".into())
            .spawn(move || {
                for sample in rx {
                    match &sample.outcome {
                        SampleOutcome::Reading(_) => {
                            seen.last_reading_ns.fetch_max(sample.t_receive_ns, Ordering::Release);
                            seen.readings.fetch_add(1, Ordering::Release);
                        }
                        SampleOutcome::Fault(f) if f.fatal => seen.stopped.store(true, Ordering::Release),
                        SampleOutcome::Fault(_) => {}
                    }
                    sink(sample);
                }
                // The sampler dropped its sender: it has ended, by request or on its own.
                seen.stopped.store(true, Ordering::Release);
            })
            .map_err(SamplerError::Spawn)?;
        let config = SamplerConfig { interval, origin, stream_timeout };
        match Sampler::start(sensor, config, tx) {
            Ok(sampler) => Ok(Tap { sampler: Some(sampler), thread: Some(thread), state }),
            Err(e) => {
                // `tx` was moved into the failed start and dropped, so the tap thread ends.
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// Whether the sensor stopped for good (checked between calls; one atomic load).
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.state.stopped.load(Ordering::Acquire)
    }

    /// Wait until a reading received at or after `after_ns` has arrived (any reading when
    /// `None`). Returns `false` when the sensor stopped, `stop` was raised or `timeout` passed.
    pub(crate) fn wait_for_reading(
        &self,
        after_ns: Option<u64>,
        timeout: Duration,
        stop: Option<&AtomicBool>,
    ) -> bool {
        let until = Instant::now() + timeout;
        loop {
            let have = self.state.readings.load(Ordering::Acquire) > 0
                && after_ns.is_none_or(|t| self.state.last_reading_ns.load(Ordering::Acquire) >= t);
            if have {
                return true;
            }
            if self.stopped() || stop.is_some_and(|s| s.load(Ordering::Relaxed)) || Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stop the sampler (closing the sensor), wait until every sample reached the sink, and
    /// return the sampler's report.
    pub(crate) fn finish(mut self) -> Result<SamplerReport, SamplerError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<SamplerReport, SamplerError> {
        let report = match self.sampler.take() {
            Some(s) => s.stop(),
            None => Err(SamplerError::Panicked("sampler already stopped".into())),
        };
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                return Err(SamplerError::Panicked("the sample tap thread panicked".into()));
            }
        }
        report
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        if self.sampler.is_some() || self.thread.is_some() {
            let _ = self.finish_inner();
        }
    }
}

/// An opened sensor that is closed when dropped, until it is handed to the sampler
/// ([`SensorGuard::into_sampled`], whose own drop stops and closes it): every early return of a
/// run between opening the sensor and sampling closes it (an `exec:` meter's process group is
/// ended, a file handle given back) without a `close` on each path.
pub struct SensorGuard {
    sensor: Option<Box<dyn Sensor>>,
}

impl SensorGuard {
    /// Guard `sensor`.
    pub fn new(sensor: Box<dyn Sensor>) -> Self {
        Self { sensor: Some(sensor) }
    }

    /// The sensor, to read its facts or probe it before sampling.
    pub fn get(&mut self) -> &mut dyn Sensor {
        match self.sensor.as_deref_mut() {
            Some(s) => s,
            None => unreachable!("a SensorGuard holds its sensor until `into_sampled` takes it"),
        }
    }

    /// Hand the sensor to a [`Sampling`] (the sampler closes it from then on).
    pub fn into_sampled(mut self) -> Box<dyn Sensor> {
        match self.sensor.take() {
            Some(s) => s,
            None => unreachable!("a SensorGuard holds its sensor until `into_sampled` takes it"),
        }
    }
}

impl Drop for SensorGuard {
    fn drop(&mut self) {
        if let Some(mut sensor) = self.sensor.take() {
            // (a close error here follows the failure being returned, which says what failed)
            let _ = sensor.close();
        }
    }
}

#[cfg(test)]
mod guard_tests {
    use super::SensorGuard;
    use crate::power::{Reading, Sensor, SensorError, SensorInfo, SensorKind};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A sensor that counts its closes.
    struct Counted {
        info: SensorInfo,
        closes: Arc<AtomicUsize>,
    }

    impl Sensor for Counted {
        fn info(&self) -> &SensorInfo {
            &self.info
        }
        fn read(&mut self) -> Result<Reading, SensorError> {
            Err(SensorError::Stopped { sensor: "counted".into(), reason: "test".into() })
        }
        fn close(&mut self) -> Result<(), SensorError> {
            self.closes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn counted() -> (Box<dyn Sensor>, Arc<AtomicUsize>) {
        let closes = Arc::new(AtomicUsize::new(0));
        let info = SensorInfo {
            kind: SensorKind::Replay,
            spec: "counted".into(),
            source: "test".into(),
            device: "test".into(),
            live: false,
            program: None,
            notes: vec![],
        };
        (Box::new(Counted { info, closes: closes.clone() }), closes)
    }

    #[test]
    fn a_dropped_guard_closes_its_sensor_once_and_a_handed_on_one_not_at_all() {
        let (sensor, closes) = counted();
        {
            let mut guard = SensorGuard::new(sensor);
            assert_eq!(guard.get().info().spec, "counted");
            // an early return: the guard goes out of scope
        }
        assert_eq!(closes.load(Ordering::SeqCst), 1);
        let (sensor, closes) = counted();
        let taken = SensorGuard::new(sensor).into_sampled();
        assert_eq!(closes.load(Ordering::SeqCst), 0, "the sampler closes it from now on");
        drop(taken);
        assert_eq!(closes.load(Ordering::SeqCst), 0);
    }
}
