//! `replay:RAW`: recorded samples played back through the [`Sensor`] interface, for
//! re-analysis and tests. **Never a live measurement**: its [`SensorInfo`] says `live: false`,
//! source `replay`, and a note saying so, and every reading carries the recorded receive time
//! as `source_t_s`.
//!
//! The raw-file format belongs to the report module; it plugs in through [`ReplaySource`].

use super::sampler::{Sample, SampleOutcome};
use super::{Reading, Sensor, SensorError, SensorInfo, SensorKind};
use crate::error::Error;
use std::path::Path;

/// Supplies recorded samples in file order. The raw-file reader implements this.
pub trait ReplaySource: Send {
    /// The next recorded sample, `Err` saying why for an unreadable record, `None` at the end
    /// of the file.
    fn next_sample(&mut self) -> Option<Result<Sample, Error>>;
}

/// A [`ReplaySource`] over any iterator of samples (handy in tests).
pub struct IterSource<I>(pub I);

impl<I> ReplaySource for IterSource<I>
where
    I: Iterator<Item = Result<Sample, Error>> + Send,
{
    fn next_sample(&mut self) -> Option<Result<Sample, Error>> {
        self.0.next()
    }
}

/// The replay sensor.
pub struct ReplaySensor {
    source: Box<dyn ReplaySource>,
    info: SensorInfo,
    ended: bool,
}

impl ReplaySensor {
    /// Replay `source`, read from `path`. `recorded` is the sensor described in the raw
    /// file's header, if known; it is named in the device string and notes.
    pub fn new(path: &Path, source: Box<dyn ReplaySource>, recorded: Option<&SensorInfo>) -> Self {
        let spec = format!("replay:{}", path.display());
        let mut notes = vec![format!("NOT A LIVE MEASUREMENT: samples replayed from {}", path.display())];
        let device = match recorded {
            Some(r) => {
                notes.push(format!(
                    "recorded with sensor {} (source {}, device {})",
                    r.spec, r.source, r.device
                ));
                format!("replay of {} recorded with {}", path.display(), r.spec)
            }
            None => format!("replay of {}", path.display()),
        };
        ReplaySensor {
            source,
            info: SensorInfo {
                kind: SensorKind::Replay,
                spec,
                source: "replay".into(),
                device,
                live: false,
                program: None,
                notes,
            },
            ended: false,
        }
    }
}

impl Sensor for ReplaySensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        let sensor = self.info.spec.clone();
        if self.ended {
            return Err(SensorError::Stopped { sensor, reason: "end of the replayed samples".into() });
        }
        match self.source.next_sample() {
            None => {
                self.ended = true;
                Err(SensorError::Stopped { sensor, reason: "end of the replayed samples".into() })
            }
            Some(Err(detail)) => Err(SensorError::Malformed {
                sensor,
                detail: "unreadable raw record".into(),
                raw: detail.to_string(),
            }),
            Some(Ok(sample)) => match sample.outcome {
                SampleOutcome::Reading(mut r) => {
                    r.source_t_s = Some(sample.t_receive_ns as f64 / 1e9);
                    Ok(r)
                }
                SampleOutcome::Fault(fault) => Err(SensorError::Recorded { sensor, fault }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::{FaultKind, SensorFault};

    fn sample(seq: u64, t_ms: u64, outcome: SampleOutcome) -> Result<Sample, Error> {
        Ok(Sample { seq, t_request_ns: t_ms * 1_000_000, t_receive_ns: t_ms * 1_000_000 + 1000, outcome })
    }

    #[test]
    fn replays_readings_and_faults_and_is_marked_not_live() {
        let recorded = vec![
            sample(0, 0, SampleOutcome::Reading(Reading::power_w("system", 30.0))),
            sample(
                1,
                500,
                SampleOutcome::Fault(SensorFault {
                    kind: FaultKind::ReadFailed,
                    message: "read failed: pstr: kIOReturnTimeout".into(),
                    fatal: false,
                }),
            ),
            Err(Error::input("line 3: not JSON")),
            sample(3, 1500, SampleOutcome::Reading(Reading::power_w("system", 40089.0))),
        ];
        let mut s =
            ReplaySensor::new(Path::new("run.raw.jsonl"), Box::new(IterSource(recorded.into_iter())), None);
        assert!(!s.info().live);
        assert_eq!(s.info().source, "replay");
        assert!(s.info().notes[0].starts_with("NOT A LIVE MEASUREMENT"));
        let r = s.read().unwrap();
        assert_eq!(r.total_power_w(), Some(30.0));
        assert_eq!(r.source_t_s, Some(0.000_001));
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::ReadFailed);
        assert!(!e.is_fatal());
        assert!(e.to_string().contains("kIOReturnTimeout"));
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Malformed);
        assert!(e.to_string().contains("line 3"));
        // The bad value is replayed as recorded, not filtered.
        assert_eq!(s.read().unwrap().total_power_w(), Some(40089.0));
        let e = s.read().unwrap_err();
        assert_eq!(e.kind(), FaultKind::Stopped);
        assert!(e.is_fatal());
        assert_eq!(s.read().unwrap_err().kind(), FaultKind::Stopped);
    }
}
