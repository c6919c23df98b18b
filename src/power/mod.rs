//! Power sensors and the sampler thread that reads them.
//!
//! A [`Sensor`] yields one [`Reading`] per call: instantaneous power in watts, or a cumulative
//! energy counter in joules with its wrap range, per channel. A sensor that cannot read returns
//! a [`SensorError`]; it never fabricates a value (a missing reading is never 0 W).
//! [`sampler::Sampler`] runs a sensor on its own thread, stamps each reading with the monotonic
//! receive time and streams [`sampler::Sample`]s through a channel.
//!
//! Sensors (chosen by a [`SensorSpec`]):
//! - `pstr`: Apple SMC key `PSTR` (total system power). The struct/key codec is portable
//!   ([`smc`]); the IOKit calls are macOS-only and live in their own leaf file.
//! - `rapl[:ROOT]`: Linux powercap energy counters ([`rapl`]).
//! - `nvml[:INDEX]`, `nvml-energy[:INDEX]`, `nvml-power[:INDEX]`: NVIDIA energy counter and
//!   board power, one the total and the other recorded beside it ([`nvml`], cargo feature `nvml`).
//! - `exec:CMD`: an external meter printing one reading per line ([`exec`]).
//! - `replay:RAW`: recorded samples played back for re-analysis and tests; never live
//!   ([`replay`]).
//!
//! Each sensor declares its [`PowerBoundary`] (what its total measures), which reports label
//! power and energy by.
//!
//! This module depends on nothing else in the crate. The sampling interval is recorded with
//! the sampler's report ([`sampler::SamplerReport`]), next to the sensor's [`SensorInfo`].
#![warn(missing_docs)]

pub mod boundary;
pub mod exec;
mod float;
pub mod nvml;
pub mod rapl;
pub mod registry;
pub mod replay;
pub mod sampler;
pub mod smc;
#[cfg(target_os = "macos")]
pub mod smc_iokit;

pub use boundary::PowerBoundary;
pub use registry::{NvmlRead, SensorSpec, SpecError, SENSORS};

use crate::settings::Settings;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// One quantity read from one channel of a sensor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Measurement {
    /// Power in watts at (or averaged just before) the read.
    PowerW {
        /// Watts, exactly as the source gave them (not checked or clamped here; NaN and
        /// infinities are written as the strings `"NaN"`, `"inf"`, `"-inf"`).
        #[serde(with = "float")]
        watts: f64,
    },
    /// A cumulative energy counter in joules.
    EnergyCounterJ {
        /// Counter value in joules.
        #[serde(with = "float")]
        joules: f64,
        /// The counter wraps to 0 after reaching this many joules; `None` when it does not wrap
        /// within any realistic run (e.g. NVML's 64-bit millijoule counter).
        #[serde(default, with = "float::option")]
        wrap_j: Option<f64>,
    },
}

/// One channel's reading, e.g. RAPL `package-0` or PSTR `system`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelReading {
    /// Channel name: `system` (PSTR, exec), `package-0`, `dram`, `psys` (RAPL), `gpu0` (NVML).
    pub channel: String,
    /// The value read.
    pub measurement: Measurement,
    /// Whether this channel is part of the sensor's total (channels outside the total, such as
    /// RAPL `psys` next to `package-0`, overlap it and are recorded for information only).
    pub in_total: bool,
}

/// Everything one read of a sensor returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The channels read, at least one.
    pub channels: Vec<ChannelReading>,
    /// A timestamp the source itself attached, in its own clock and seconds (an exec meter's
    /// `t_s` column, a replayed sample's recorded receive time); `None` when it gave none.
    /// Recorded for audit only: integration always uses the sampler's receive time.
    #[serde(default, with = "float::option")]
    pub source_t_s: Option<f64>,
    /// The raw text or bytes behind the value (an exec line, PSTR bytes in hex, RAPL
    /// `energy_uj` strings), kept so a rejected sample's raw record stays auditable. The key
    /// is required when read back (`null` where a sensor gives no text): a sample whose `raw`
    /// was deleted is not a record this tool wrote.
    #[serde(deserialize_with = "Option::deserialize")]
    pub raw: Option<String>,
}

impl Reading {
    /// A single-channel power reading.
    pub fn power_w(channel: &str, watts: f64) -> Self {
        Reading {
            channels: vec![ChannelReading {
                channel: channel.to_string(),
                measurement: Measurement::PowerW { watts },
                in_total: true,
            }],
            source_t_s: None,
            raw: None,
        }
    }

    /// A single-channel energy-counter reading.
    pub fn energy_counter_j(channel: &str, joules: f64, wrap_j: Option<f64>) -> Self {
        Reading {
            channels: vec![ChannelReading {
                channel: channel.to_string(),
                measurement: Measurement::EnergyCounterJ { joules, wrap_j },
                in_total: true,
            }],
            source_t_s: None,
            raw: None,
        }
    }

    /// Sum of the watts of all `in_total` channels, or `None` if any of them is not a power
    /// channel (counters need two readings to give power).
    pub fn total_power_w(&self) -> Option<f64> {
        let mut sum = 0.0;
        let mut any = false;
        for c in self.channels.iter().filter(|c| c.in_total) {
            match c.measurement {
                Measurement::PowerW { watts } => {
                    sum += watts;
                    any = true;
                }
                Measurement::EnergyCounterJ { .. } => return None,
            }
        }
        any.then_some(sum)
    }

    /// The channel with this name, if present.
    pub fn channel(&self, name: &str) -> Option<&ChannelReading> {
        self.channels.iter().find(|c| c.channel == name)
    }
}

/// Which family a sensor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensorKind {
    /// Apple SMC key `PSTR`.
    Pstr,
    /// Linux powercap RAPL.
    Rapl,
    /// NVIDIA NVML.
    Nvml,
    /// External meter on a child process's stdout.
    Exec,
    /// Recorded samples played back (not a live measurement).
    Replay,
    /// A scripted test sensor (not a live measurement).
    Mock,
}

impl SensorKind {
    /// The spec name (`pstr`, `rapl`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SensorKind::Pstr => "pstr",
            SensorKind::Rapl => "rapl",
            SensorKind::Nvml => "nvml",
            SensorKind::Exec => "exec",
            SensorKind::Replay => "replay",
            SensorKind::Mock => "mock",
        }
    }
}

/// How the sampler should drive a sensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    /// The sampler calls [`Sensor::read`] at absolute deadlines every sample interval.
    Polled,
    /// The source produces readings at its own rate; the sampler waits for each with
    /// [`Sensor::next`] and stamps it on arrival (exec meters).
    Streamed,
}

/// The program behind a sensor that is a program (an exec meter), for provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramProvenance {
    /// The command line as given.
    pub command: String,
    /// The executable the command's first word resolves to, or `None` with a reason.
    pub executable: Option<PathBuf>,
    /// sha256 (hex) of the executable's bytes, or `None` with a reason.
    pub sha256: Option<String>,
    /// First non-empty line of `EXECUTABLE --version`, or `None` with a reason.
    pub version: Option<String>,
    /// Why a field above is `None` (one entry per missing field).
    pub missing_reasons: Vec<String>,
}

/// What a sensor is: identity and provenance for the raw header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorInfo {
    /// Sensor family.
    pub kind: SensorKind,
    /// The spec as given (`pstr`, `nvml:0`, `exec:nvidia-smi ...`).
    pub spec: String,
    /// Quality flag of the source: `smc-pstr`, `rapl-pkg`, `nvml-energy`, `nvml-power`,
    /// `measured-external`, `replay`, `mock`.
    pub source: String,
    /// What is read, e.g. `AppleSMCKeysEndpoint key PSTR`, `/sys/class/powercap (package-0)`,
    /// `GPU 0: NVIDIA H200 (GPU-uuid)`.
    pub device: String,
    /// `false` for replayed or scripted readings: never a live measurement.
    pub live: bool,
    /// Program provenance for sensors that are programs (`exec:`) and for the in-process
    /// IOKit reader of `pstr` (its source file's sha256 and the crate version); `None` for the
    /// other in-process sensors.
    pub program: Option<ProgramProvenance>,
    /// Free-form facts worth keeping (driver version, zones skipped, caveats).
    pub notes: Vec<String>,
}

/// Broad class of a [`SensorError`], as plain data for raw files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The sensor does not exist here or cannot be opened.
    Unavailable,
    /// The OS refused access.
    PermissionDenied,
    /// One read failed; later reads may succeed.
    ReadFailed,
    /// The source produced something that is not a reading.
    Malformed,
    /// No reading arrived in time.
    Timeout,
    /// The sensor is gone for good (child exited, replay exhausted, device lost).
    Stopped,
}

/// A sensor fault. Faults are reported as faults; a value is never made up in their place.
#[derive(Debug, thiserror::Error)]
pub enum SensorError {
    /// The sensor does not exist on this machine or cannot be opened.
    #[error("sensor unavailable: {sensor}: {reason}")]
    Unavailable {
        /// Sensor spec or name.
        sensor: String,
        /// What is missing and what to do instead.
        reason: String,
    },
    /// The OS denied access to a file or device.
    #[error("permission denied: {sensor}: cannot read {path}: {hint}")]
    PermissionDenied {
        /// Sensor spec or name.
        sensor: String,
        /// What could not be read.
        path: PathBuf,
        /// What to do about it.
        hint: String,
    },
    /// One read failed (I/O error, driver error); later reads may succeed.
    #[error("read failed: {sensor}: {detail}")]
    ReadFailed {
        /// Sensor spec or name.
        sensor: String,
        /// What failed.
        detail: String,
    },
    /// The source produced something that is not a reading.
    #[error("malformed reading: {sensor}: {detail}: {raw:?}")]
    Malformed {
        /// Sensor spec or name.
        sensor: String,
        /// What was expected.
        detail: String,
        /// The offending text or bytes, verbatim.
        raw: String,
    },
    /// No reading arrived within the allowed time.
    #[error("timeout: {sensor}: no reading within {waited_s:.3} s")]
    Timeout {
        /// Sensor spec or name.
        sensor: String,
        /// How long was waited, seconds.
        waited_s: f64,
    },
    /// A fault recorded in a raw file, played back by the replay sensor.
    #[error("recorded fault: {sensor}: {fault}")]
    Recorded {
        /// Sensor spec or name.
        sensor: String,
        /// The fault as recorded.
        fault: SensorFault,
    },
    /// The sensor stopped for good; every later read would fail too.
    #[error("sensor stopped: {sensor}: {reason}")]
    Stopped {
        /// Sensor spec or name.
        sensor: String,
        /// Why (exit status, end of replay, device lost).
        reason: String,
    },
}

impl SensorError {
    /// The broad class of this fault.
    pub fn kind(&self) -> FaultKind {
        match self {
            SensorError::Unavailable { .. } => FaultKind::Unavailable,
            SensorError::PermissionDenied { .. } => FaultKind::PermissionDenied,
            SensorError::ReadFailed { .. } => FaultKind::ReadFailed,
            SensorError::Malformed { .. } => FaultKind::Malformed,
            SensorError::Timeout { .. } => FaultKind::Timeout,
            SensorError::Stopped { .. } => FaultKind::Stopped,
            SensorError::Recorded { fault, .. } => fault.kind,
        }
    }

    /// Whether the sensor cannot recover (the sampler stops after sending this fault).
    pub fn is_fatal(&self) -> bool {
        if let SensorError::Recorded { fault, .. } = self {
            return fault.fatal;
        }
        matches!(self.kind(), FaultKind::Stopped | FaultKind::Unavailable | FaultKind::PermissionDenied)
    }

    /// This fault as plain data for a raw record.
    pub fn to_fault(&self) -> SensorFault {
        SensorFault { kind: self.kind(), message: self.to_string(), fatal: self.is_fatal() }
    }
}

/// A sensor fault as plain, serialisable data (what a [`sampler::Sample`] carries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SensorFault {
    /// Broad class.
    pub kind: FaultKind,
    /// The full message.
    pub message: String,
    /// Whether the sensor stopped for good.
    pub fatal: bool,
}

impl std::fmt::Display for SensorFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A source of power readings.
///
/// Object-safe so the protocol layer can hold a `Box<dyn Sensor>` without naming a concrete
/// sensor. `Send` because the sampler reads it on its own thread.
pub trait Sensor: Send {
    /// Identity and provenance.
    fn info(&self) -> &SensorInfo;

    /// How the sampler should drive this sensor; [`Pacing::Polled`] unless overridden.
    fn pacing(&self) -> Pacing {
        Pacing::Polled
    }

    /// Take one reading now (polled sensors), or wait for the next one (streamed sensors).
    fn read(&mut self) -> Result<Reading, SensorError>;

    /// How often the source itself refreshes its value, where the sensor measured it at open
    /// (NVML); `energy` samples at this period unless `--sample-interval` is given.
    fn update_period(&self) -> Option<Duration> {
        None
    }

    /// Wait up to `timeout` for the next reading; `Ok(None)` if none arrived in that time.
    ///
    /// Streamed sensors override this; the default reads once.
    fn next(&mut self, timeout: Duration) -> Result<Option<Reading>, SensorError> {
        let _ = timeout;
        self.read().map(Some)
    }

    /// Called once on the sampler thread before the first read; streamed sensors drop what
    /// arrived before sampling began. The default does nothing.
    fn begin(&mut self) -> Result<(), SensorError> {
        Ok(())
    }

    /// Release the sensor (kill and reap a child, close a connection). Called once at the end
    /// of sampling; must be safe to call again.
    fn close(&mut self) -> Result<(), SensorError> {
        Ok(())
    }

    /// What a streamed sensor received since [`Sensor::begin`] but did not pass on (load
    /// shedding: an exec meter printing faster than the sampler takes readings). Counted,
    /// never turned into values. Nothing for the other sensors.
    fn skipped(&self) -> SkippedReadings {
        SkippedReadings::default()
    }
}

/// Lines a streamed sensor received but did not pass on as samples, so that a meter printing
/// faster than it can be sampled costs bounded memory. Counts only: a skipped line is never a
/// reading, and a skipped fault is counted apart from the skipped readings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedReadings {
    /// Readings superseded by a newer one before the sampler took them (at most one sample
    /// a millisecond is taken from a streamed sensor), or left queued when the sensor stopped.
    pub readings: u64,
    /// Faulty lines dropped because the sensor's queue was full of unread faults, or left
    /// queued when the sensor stopped (the faults passed on already reject the run).
    pub faults: u64,
    /// The first of those faulty lines as printed (its first bytes), for the audit.
    pub first_fault: Option<String>,
}

impl SkippedReadings {
    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.readings == 0 && self.faults == 0
    }
}

impl<S: Sensor + ?Sized> Sensor for Box<S> {
    fn info(&self) -> &SensorInfo {
        (**self).info()
    }
    fn pacing(&self) -> Pacing {
        (**self).pacing()
    }
    fn read(&mut self) -> Result<Reading, SensorError> {
        (**self).read()
    }
    fn update_period(&self) -> Option<Duration> {
        (**self).update_period()
    }
    fn next(&mut self, timeout: Duration) -> Result<Option<Reading>, SensorError> {
        (**self).next(timeout)
    }
    fn begin(&mut self) -> Result<(), SensorError> {
        (**self).begin()
    }
    fn close(&mut self) -> Result<(), SensorError> {
        (**self).close()
    }
    fn skipped(&self) -> SkippedReadings {
        (**self).skipped()
    }
}

/// Open the sensor a spec names, on this platform and build.
///
/// `pstr` opens the IOKit leaf (`smc_iokit`) on macOS and is [`SensorError::Unavailable`]
/// elsewhere.
/// `replay` needs a raw-file reader and is built with [`replay::ReplaySensor::new`].
/// `settings` give the NVML library, and an `exec:` program's `HOME` and `PATH`.
pub fn open(
    spec: &SensorSpec,
    stream_timeout: Duration,
    settings: &Settings,
) -> Result<Box<dyn Sensor>, SensorError> {
    match spec {
        #[cfg(target_os = "macos")]
        SensorSpec::Pstr => Ok(Box::new(smc_iokit::open_pstr()?)),
        #[cfg(not(target_os = "macos"))]
        SensorSpec::Pstr => Err(SensorError::Unavailable {
            sensor: spec.to_string(),
            reason: "PSTR is an Apple SMC key and exists only on macOS; on Linux use rapl, nvml or exec:CMD"
                .to_string(),
        }),
        SensorSpec::Rapl { root } => {
            let root = root.clone().unwrap_or_else(|| PathBuf::from(rapl::DEFAULT_POWERCAP_ROOT));
            Ok(Box::new(rapl::RaplSensor::open(&root)?))
        }
        SensorSpec::Nvml { index, read } => {
            Ok(Box::new(nvml::NvmlSensor::open(*index, *read, settings.nvml_lib.as_deref())?))
        }
        SensorSpec::Exec { command, unit } => {
            Ok(Box::new(exec::ExecSensor::spawn(command, stream_timeout, settings)?.with_unit(*unit)))
        }
        SensorSpec::Replay { path } => Err(SensorError::Unavailable {
            sensor: spec.to_string(),
            reason: format!(
                "replay of {} needs the raw-file reader; build it with ReplaySensor::new",
                path.display()
            ),
        }),
    }
}

/// The sensors tried, in order, when none is given: `pstr` on macOS; `rapl`, then `nvml:0`
/// elsewhere.
pub fn default_specs() -> Vec<SensorSpec> {
    if cfg!(target_os = "macos") {
        vec![SensorSpec::Pstr]
    } else {
        vec![SensorSpec::Rapl { root: None }, SensorSpec::Nvml { index: 0, read: registry::NvmlRead::Auto }]
    }
}

/// Every default sensor that could not be opened, with its error.
#[derive(Debug)]
pub struct NoDefaultSensor {
    /// Each sensor tried and why it failed, in the order tried.
    pub tried: Vec<(SensorSpec, SensorError)>,
}

impl std::fmt::Display for NoDefaultSensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "no usable power sensor on this machine:")?;
        for (spec, e) in &self.tried {
            writeln!(f, "  - {spec}: {e}")?;
        }
        write!(
            f,
            "use an external meter with --sensor exec:CMD (CMD prints one `WATTS` or `T_S,WATTS` line per reading, \
             e.g. exec:nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits -lms 500); \
             `laya-bench doctor` lists every sensor"
        )
    }
}

impl std::error::Error for NoDefaultSensor {}

/// Open the first default sensor that opens, or say why each failed.
pub fn open_default(
    stream_timeout: Duration,
    settings: &Settings,
) -> Result<Box<dyn Sensor>, NoDefaultSensor> {
    let mut tried = Vec::new();
    for spec in default_specs() {
        match open(&spec, stream_timeout, settings) {
            Ok(s) => return Ok(s),
            Err(e) => tried.push((spec, e)),
        }
    }
    Err(NoDefaultSensor { tried })
}

/// Whether one sensor kind is usable on this machine, for `laya-bench doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SensorStatus {
    /// The spec to pass to `--sensor` (`rapl`, `nvml:0`, `exec:CMD`).
    pub spec: String,
    /// Sensor family.
    pub kind: SensorKind,
    /// Whether it opened (or, for `exec` and `replay`, can be used as described).
    pub usable: bool,
    /// What it reads, or why it cannot be used and what to do instead.
    pub detail: String,
}

/// Probe every sensor kind: `pstr`, `rapl`, `nvml:0` are opened (and closed again); `exec`
/// needs `sh` and a meter (looked up on `settings`' `PATH`); `replay` is for re-analysis only.
pub fn survey(stream_timeout: Duration, settings: &Settings) -> Vec<SensorStatus> {
    let mut out = Vec::new();
    for spec in SENSORS.iter().filter_map(|row| row.probe.map(|probe| probe())) {
        let kind = spec.kind();
        let (usable, detail) = match open(&spec, stream_timeout, settings) {
            Ok(mut s) => {
                let i = s.info();
                let mut d = format!("{} ({})", i.device, i.source);
                if !i.notes.is_empty() {
                    d.push_str(&format!("; {}", i.notes.join("; ")));
                }
                let _ = s.close();
                (true, d)
            }
            Err(e) => (false, e.to_string()),
        };
        out.push(SensorStatus { spec: spec.to_string(), kind, usable, detail });
    }
    let path = settings.path.as_deref();
    let exec = match exec::resolve_executable("sh", path) {
        Some(sh) => {
            let hint = match exec::resolve_executable("nvidia-smi", path) {
                Some(_) => "nvidia-smi is on PATH: exec:nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits -lms 500".to_string(),
                None => "e.g. a USB meter script, a macmon pipe or nvidia-smi".to_string(),
            };
            (true, format!("external meter run with `sh -c` ({}); it must print one `WATTS` or `T_S,WATTS` line per reading ({hint})", sh.display()))
        }
        None => (false, "no `sh` on PATH to run the meter command".to_string()),
    };
    out.push(SensorStatus {
        spec: "exec:CMD".into(),
        kind: SensorKind::Exec,
        usable: exec.0,
        detail: exec.1,
    });
    out.push(SensorStatus {
        spec: "replay:RAW".into(),
        kind: SensorKind::Replay,
        usable: true,
        detail: "plays back the samples of a raw file for re-analysis and tests; NOT a live measurement"
            .into(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_power_sums_in_total_channels_only() {
        let mut r = Reading::power_w("package-0", 10.0);
        r.channels.push(ChannelReading {
            channel: "psys".into(),
            measurement: Measurement::PowerW { watts: 30.0 },
            in_total: false,
        });
        r.channels.push(ChannelReading {
            channel: "package-1".into(),
            measurement: Measurement::PowerW { watts: 5.5 },
            in_total: true,
        });
        assert_eq!(r.total_power_w(), Some(15.5));
        assert!(r.channel("psys").is_some());
        assert!(r.channel("dram").is_none());
    }

    #[test]
    fn total_power_of_a_counter_is_none_not_zero() {
        let r = Reading::energy_counter_j("package-0", 1.0, Some(10.0));
        assert_eq!(r.total_power_w(), None);
    }

    #[test]
    fn fatal_faults_are_the_ones_that_cannot_recover() {
        let stopped = SensorError::Stopped { sensor: "exec:x".into(), reason: "exited".into() };
        assert!(stopped.is_fatal());
        let f = stopped.to_fault();
        assert_eq!(f.kind, FaultKind::Stopped);
        assert!(f.message.starts_with("sensor stopped: exec:x"));
        let transient = SensorError::ReadFailed { sensor: "rapl".into(), detail: "EIO".into() };
        assert!(!transient.is_fatal());
    }

    #[test]
    fn readings_round_trip_through_json() {
        let r = Reading::energy_counter_j("package-0", 12.5, Some(262143.32885));
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains("\"kind\":\"energy_counter_j\""), "{s}");
        let back: Reading = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn non_finite_readings_survive_json_as_they_were() {
        for w in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -3.0, 40089.0] {
            let mut r = Reading::power_w("system", w);
            r.source_t_s = Some(f64::NAN);
            let s = serde_json::to_string(&r).unwrap();
            assert!(!s.contains("\"watts\":null") && !s.contains("\"source_t_s\":null"), "{s}");
            let back: Reading = serde_json::from_str(&s).unwrap();
            let Measurement::PowerW { watts } = back.channels[0].measurement else { panic!("{s}") };
            assert!(watts == w || (w.is_nan() && watts.is_nan()), "{s}");
            assert!(back.source_t_s.unwrap().is_nan());
        }
        assert!(serde_json::from_str::<Measurement>(r#"{"kind":"power_w","watts":"lots"}"#).is_err());
    }

    #[test]
    fn open_rapl_on_this_host_opens_or_says_why() {
        match open(&SensorSpec::Rapl { root: None }, Duration::from_secs(2), &Settings::of_test_process()) {
            Ok(s) => assert_eq!(s.info().kind, SensorKind::Rapl),
            Err(e) => {
                // The development VMs have no /sys/class/powercap at all.
                assert!(matches!(e.kind(), FaultKind::Unavailable | FaultKind::PermissionDenied), "{e}");
                assert!(e.to_string().contains("exec:CMD"), "{e}");
            }
        }
    }

    #[test]
    fn open_exec_and_replay_specs() {
        let spec: SensorSpec = "exec:echo 5".parse().unwrap();
        let mut s = open(&spec, Duration::from_secs(2), &Settings::of_test_process()).unwrap();
        assert_eq!(s.pacing(), Pacing::Streamed);
        assert_eq!(s.read().unwrap().total_power_w(), Some(5.0));
        s.close().unwrap();
        let e =
            open(&"replay:x.jsonl".parse().unwrap(), Duration::from_secs(2), &Settings::of_test_process())
                .err()
                .unwrap();
        assert!(e.to_string().contains("ReplaySensor::new"), "{e}");
    }

    #[test]
    fn the_survey_names_every_sensor_and_says_why() {
        let s = survey(Duration::from_secs(2), &Settings::of_test_process());
        let specs: Vec<&str> = s.iter().map(|x| x.spec.as_str()).collect();
        assert_eq!(specs, ["pstr", "rapl", "nvml:0", "exec:CMD", "replay:RAW"]);
        assert!(s.iter().all(|x| !x.detail.is_empty()));
        #[cfg(not(target_os = "macos"))]
        assert!(!s[0].usable && s[0].detail.contains("macOS"), "{:?}", s[0]);
        assert!(s[4].detail.contains("NOT a live measurement"));
    }

    #[test]
    fn without_a_usable_default_every_reason_and_exec_are_named() {
        if let Err(e) = open_default(Duration::from_secs(2), &Settings::of_test_process()) {
            let msg = e.to_string();
            for spec in default_specs() {
                assert!(msg.contains(&format!("  - {spec}: ")), "{msg}");
            }
            assert!(msg.contains("--sensor exec:CMD"), "{msg}");
        }
    }

    #[test]
    #[cfg(not(target_os = "macos"))]
    fn open_pstr_on_linux_is_a_clear_unavailable_error() {
        let e = open(&SensorSpec::Pstr, Duration::from_secs(2), &Settings::of_test_process())
            .err()
            .expect("pstr cannot open here");
        assert_eq!(e.kind(), FaultKind::Unavailable);
        assert!(e.to_string().contains("exec:CMD"), "{e}");
    }
}
