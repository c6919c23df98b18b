//! NVIDIA NVML sensors, `nvml[:INDEX]`, `nvml-energy[:INDEX]`, `nvml-power[:INDEX]`
//! (docs/formats.md §3).
//!
//! Two quantities, read at every sample where the GPU reports them:
//! - the board's total-energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since the
//!   driver loaded, Volta and newer), recorded as an energy counter without wrap;
//! - board power (`nvmlDeviceGetPowerUsage`, mW; a 1-second average on Ampere and newer except
//!   GA100, instantaneous before). On an H200 it trailed a load step by about 1 s while the
//!   counter followed within its 100 ms refresh (docs/runs/README.md), so the counter is the
//!   total wherever there is one.
//!
//! The spec says which is the sensor's total (`nvml`: the counter where there is one, else
//! power); the other is recorded beside it as a channel outside the total (`gpuN-power` or
//! `gpuN-energy`), so one run cross-checks the two ([`crate::energy::cross`]). The total's
//! channel is `gpuN`.
//!
//! The driver refreshes both on its own period. At open the sensor measures that period by
//! polling the quantities it reads and timing their changes ([`choose_period`]); the
//! timestamps of the driver's power samples (`nvmlDeviceGetSamples`) are only the fallback
//! where the values did not change, since they can be finer than what the reads return: an
//! H200 (driver 580.159.04) stamped samples every 20 ms while power and the counter refreshed
//! every 100 ms, and sampling at 40 ms rejected a run for a counter that did not advance.
//! `energy` samples at twice the period unless `--sample-interval` is given.
//!
//! The library is `libnvidia-ml.so.1`, loaded at run time (no NVIDIA library is needed to
//! build); `LAYA_BENCH_NVML_LIB` names another file (the tests' stand-in, a driver in an odd
//! place), and the sensor's notes say which one was loaded. The decisions (which quantity,
//! which channel, the period) are the portable functions below; only [`NvmlSensor`] calls
//! NVML, and only with the cargo feature `nvml` (on by default).

use std::ffi::OsStr;
use std::time::Duration;

#[cfg(feature = "nvml")]
use super::SensorKind;
use super::{ChannelReading, Measurement, Reading, SensorError, SensorInfo};
use crate::power::NvmlRead;

/// The environment variable naming the NVML library to load instead of `libnvidia-ml.so.1`.
pub const LIB_ENV: &str = "LAYA_BENCH_NVML_LIB";

/// Which quantity is the sensor's total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmlMode {
    /// Total energy counter, mJ → J.
    EnergyCounter,
    /// Board power, mW → W.
    Power,
}

/// What the GPU offers, as found at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offered {
    /// The energy counter reads.
    pub energy: bool,
    /// Board power reads.
    pub power: bool,
}

/// What a GPU lacks that the spec asks for ([`choose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// `nvml-energy` on a GPU without the counter.
    #[error("the GPU has no total-energy counter (Volta and newer have one); use nvml-power")]
    EnergyCounter,
    /// `nvml-power` on a GPU without power reads.
    #[error("the GPU reports no board power; use nvml-energy")]
    Power,
    /// `nvml` on a GPU with neither.
    #[error("the GPU reports neither an energy counter nor power")]
    Both,
}

/// The total a spec asks for, given what the GPU offers, and whether the other quantity is
/// recorded beside it; `Err` says what is missing.
pub fn choose(read: NvmlRead, offered: Offered) -> Result<(NvmlMode, bool), Missing> {
    match (read, offered.energy, offered.power) {
        (NvmlRead::Auto | NvmlRead::Energy, true, power) => Ok((NvmlMode::EnergyCounter, power)),
        (NvmlRead::Auto | NvmlRead::Power, energy, true) => Ok((NvmlMode::Power, energy)),
        (NvmlRead::Energy, false, _) => Err(Missing::EnergyCounter),
        (NvmlRead::Power, _, false) => Err(Missing::Power),
        (NvmlRead::Auto, false, false) => Err(Missing::Both),
    }
}

/// The reading of one sample: the total's channel `gpuINDEX`, the other quantity (when read)
/// as `gpuINDEX-power` / `gpuINDEX-energy` outside the total; `raw` keeps both as NVML gave
/// them (`123456789 mJ; 75000 mW`).
pub fn reading(index: u32, mode: NvmlMode, energy_mj: Option<u64>, power_mw: Option<u32>) -> Reading {
    let gpu = format!("gpu{index}");
    let energy = energy_mj.map(|mj| Measurement::EnergyCounterJ { joules: mj as f64 / 1e3, wrap_j: None });
    let power = power_mw.map(|mw| Measurement::PowerW { watts: f64::from(mw) / 1e3 });
    let (total, other, other_name) = match mode {
        NvmlMode::EnergyCounter => (energy, power, format!("{gpu}-power")),
        NvmlMode::Power => (power, energy, format!("{gpu}-energy")),
    };
    let mut channels = Vec::with_capacity(2);
    if let Some(m) = total {
        channels.push(ChannelReading { channel: gpu, measurement: m, in_total: true });
    }
    if let Some(m) = other {
        channels.push(ChannelReading { channel: other_name, measurement: m, in_total: false });
    }
    let raw: Vec<String> = [energy_mj.map(|mj| format!("{mj} mJ")), power_mw.map(|mw| format!("{mw} mW"))]
        .into_iter()
        .flatten()
        .collect();
    Reading { channels, source_t_s: None, raw: Some(raw.join("; ")) }
}

/// The driver's update period from the timestamps (µs) of its power samples: the median
/// spacing of consecutive distinct timestamps; `None` with fewer than three samples.
pub fn period_from_timestamps_us(timestamps_us: &[u64]) -> Option<Duration> {
    let mut ts: Vec<u64> = timestamps_us.to_vec();
    ts.sort_unstable();
    ts.dedup();
    let gaps: Vec<u64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
    median(gaps).map(Duration::from_micros)
}

/// How the update period was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodSource {
    /// From when the values the sensor reads changed while polled.
    Polled,
    /// From the timestamps of the driver's power samples.
    Timestamps,
}

/// The update period the sampler must respect: the slowest of the polled periods of the
/// quantities the sensor reads (`polled`, one per quantity, `None` where it changed too
/// rarely to tell), since every read must see each of them move; where none was measured,
/// the spacing of the driver's sample timestamps (`stamps`); `None` when neither is known.
pub fn choose_period(
    polled: &[Option<Duration>],
    stamps: Option<Duration>,
) -> Option<(Duration, PeriodSource)> {
    match polled.iter().flatten().max() {
        Some(p) => Some((*p, PeriodSource::Polled)),
        None => stamps.map(|p| (p, PeriodSource::Timestamps)),
    }
}

/// The update period from polled values: the median time between the moments the value
/// changed (`(t_ns, value)` in poll order); `None` with fewer than three changes.
pub fn period_from_changes(polls: &[(u64, u64)]) -> Option<Duration> {
    let changes: Vec<u64> = polls.windows(2).filter(|w| w[1].1 != w[0].1).map(|w| w[1].0).collect();
    let gaps: Vec<u64> = changes.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.len() < 2 {
        return None;
    }
    median(gaps).map(Duration::from_nanos)
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    if v.len() < 2 {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2 })
}

/// The sample interval for a driver that refreshes every `period`: twice the period, kept
/// within 10 ms and 500 ms (the default interval). At the period itself, the sampler's jitter
/// puts two reads inside one update now and then, and a counter that did not advance between
/// two readings is a sensor fault that rejects the run (seen on the stand-in driver at 20 ms:
/// reads 16 ms apart); twice the period, every two reads in a row span an update.
pub fn interval_for(period: Duration) -> Duration {
    (period * 2).clamp(Duration::from_millis(10), Duration::from_millis(500))
}

/// The `nvml…` sensors.
#[cfg_attr(not(feature = "nvml"), allow(dead_code))]
pub struct NvmlSensor {
    #[cfg(feature = "nvml")]
    nvml: nvml_wrapper::Nvml,
    index: u32,
    /// How readings are taken.
    pub mode: NvmlMode,
    /// Whether the other quantity is read beside the total.
    pub both: bool,
    /// The driver's update period, as measured at open.
    pub period: Option<Duration>,
    info: SensorInfo,
}

#[cfg_attr(not(feature = "nvml"), allow(dead_code))]
impl NvmlSensor {
    fn spec(index: u32, read: NvmlRead) -> String {
        format!("{}:{index}", read.prefix())
    }

    /// The channel of the total and the description of what is read.
    fn describe(mode: NvmlMode, both: bool) -> (&'static str, String) {
        let source = match mode {
            NvmlMode::EnergyCounter => "nvml-energy",
            NvmlMode::Power => "nvml-power",
        };
        let what = match (mode, both) {
            (NvmlMode::EnergyCounter, true) => "total: the energy counter (mJ since driver load); board power (mW) recorded beside it outside the total",
            (NvmlMode::EnergyCounter, false) => "total: the energy counter (mJ since driver load); board power not offered",
            (NvmlMode::Power, true) => "total: board power (mW, a 1 s average on Ampere and newer); the energy counter recorded beside it outside the total",
            (NvmlMode::Power, false) => "total: board power (mW, a 1 s average on Ampere and newer); no energy counter on this GPU",
        };
        (source, what.to_string())
    }
}

#[cfg(not(feature = "nvml"))]
impl NvmlSensor {
    /// Always fails in this build: it was built without the `nvml` feature.
    pub fn open(index: u32, read: NvmlRead, lib: Option<&OsStr>) -> Result<Self, SensorError> {
        let _ = lib;
        Err(SensorError::Unavailable {
            sensor: Self::spec(index, read),
            reason: "built without NVML support; rebuild with --features nvml (or use exec:nvidia-smi -i INDEX --query-gpu=power.draw --format=csv,noheader,nounits -lms 500)".into(),
        })
    }
}

#[cfg(feature = "nvml")]
impl NvmlSensor {
    /// Load NVML, find GPU `index`, see what it offers, choose the total and measure the
    /// driver's update period. `lib` is the NVML library to load ([`Settings::nvml_lib`],
    /// `LAYA_BENCH_NVML_LIB`); `None`: `libnvidia-ml.so.1`.
    ///
    /// [`Settings::nvml_lib`]: crate::settings::Settings::nvml_lib
    pub fn open(index: u32, read: NvmlRead, lib: Option<&OsStr>) -> Result<Self, SensorError> {
        use nvml_wrapper::error::NvmlError;
        let sensor = Self::spec(index, read);
        let unavailable = |reason: String| SensorError::Unavailable { sensor: sensor.clone(), reason };
        let mut builder = nvml_wrapper::Nvml::builder();
        if let Some(path) = &lib {
            builder.lib_path(path);
        }
        let lib_name = match &lib {
            Some(p) => format!("{} (from {LIB_ENV})", std::path::Path::new(p).display()),
            None => "libnvidia-ml.so.1".to_string(),
        };
        let nvml = builder.init().map_err(|e| {
            unavailable(match e {
                NvmlError::LibloadingError(_) | NvmlError::FailedToLoadSymbol(_) => {
                    format!("cannot load {lib_name} ({e}); install the NVIDIA driver or use exec:CMD")
                }
                NvmlError::DriverNotLoaded => {
                    "the NVIDIA driver is not loaded; load it or use exec:CMD".to_string()
                }
                NvmlError::NoPermission => {
                    "NVML has no permission to talk to the driver; check /dev/nvidia* access".to_string()
                }
                other => format!("NVML init failed: {other}"),
            })
        })?;
        let count =
            nvml.device_count().map_err(|e| unavailable(format!("NVML cannot count devices: {e}")))?;
        if index >= count {
            return Err(unavailable(format!(
                "no GPU {index}: NVML sees {count} device(s), indices 0..{}",
                count.saturating_sub(1)
            )));
        }
        let dev = nvml
            .device_by_index(index)
            .map_err(|e| unavailable(format!("NVML cannot open GPU {index}: {e}")))?;
        let name = dev.name().unwrap_or_else(|e| format!("unknown name ({e})"));
        let uuid = dev.uuid().unwrap_or_else(|e| format!("unknown uuid ({e})"));
        let mut notes = vec![format!("library {lib_name}")];
        match nvml.sys_driver_version() {
            Ok(v) => notes.push(format!("driver {v}")),
            Err(e) => notes.push(format!("driver version unknown: {e}")),
        }
        if let Ok(mw) = dev.enforced_power_limit() {
            notes.push(format!("enforced power limit {:.1} W", f64::from(mw) / 1e3));
        }
        let probe = |r: Result<(), NvmlError>| -> Result<bool, SensorError> {
            match r {
                Ok(()) => Ok(true),
                Err(NvmlError::NotSupported) => Ok(false),
                Err(e) => Err(unavailable(format!("GPU {index} cannot be read: {e}"))),
            }
        };
        let offered = Offered {
            energy: probe(dev.total_energy_consumption().map(drop))?,
            power: probe(dev.power_usage().map(drop))?,
        };
        let (mode, both) = choose(read, offered).map_err(|why| unavailable(format!("GPU {index}: {why}")))?;
        let stamps = match dev.samples(nvml_wrapper::enum_wrappers::device::Sampling::Power, None) {
            Ok(samples) if samples.len() >= 3 => {
                let ts: Vec<u64> = samples.iter().map(|s| s.timestamp).collect();
                period_from_timestamps_us(&ts).map(|p| (p, ts.len()))
            }
            _ => None,
        };
        let want_energy = mode == NvmlMode::EnergyCounter || both;
        let want_power = mode == NvmlMode::Power || both;
        let (energy_p, power_p) = poll_periods(&dev, want_energy, want_power);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let period = choose_period(&[energy_p, power_p], stamps.map(|(p, _)| p));
        match period {
            Some((p, PeriodSource::Polled)) => {
                let seen = |name: &str, want: bool, q: Option<Duration>| match (want, q) {
                    (false, _) => None,
                    (true, Some(d)) => Some(format!("{name} every {:.1} ms", ms(d))),
                    (true, None) => Some(format!("{name} too rarely to time")),
                };
                let parts: Vec<String> =
                    [seen("the counter", want_energy, energy_p), seen("power", want_power, power_p)]
                        .into_iter()
                        .flatten()
                        .collect();
                notes.push(format!(
                    "driver update period {:.1} ms (measured by polling the values read for 1 s at most; changes: {}); windows shorter than it cannot resolve energy",
                    ms(p),
                    parts.join(", ")
                ));
            }
            Some((p, PeriodSource::Timestamps)) => notes.push(format!(
                "driver update period {:.1} ms (from the timestamps of {} power samples: the values read did not change often enough while polled for 1 s to time them); windows shorter than it cannot resolve energy",
                ms(p),
                stamps.map_or(0, |(_, n)| n)
            )),
            None => notes.push("driver update period not measured (no power samples, values did not change while polled)".into()),
        }
        if let (Some((sp, n)), Some((p, PeriodSource::Polled))) = (stamps, period) {
            notes.push(format!(
                "the driver's power samples (nvmlDeviceGetSamples, {n} read) are stamped every {:.1} ms{}",
                ms(sp),
                if sp < p { ", finer than the values the reads return" } else { "" }
            ));
        }
        let (source, what) = Self::describe(mode, both);
        notes.push(what);
        Ok(NvmlSensor {
            nvml,
            index,
            mode,
            both,
            period: period.map(|(p, _)| p),
            info: SensorInfo {
                kind: SensorKind::Nvml,
                spec: sensor,
                source: source.into(),
                device: format!("GPU {index}: {name} ({uuid})"),
                live: true,
                program: None,
                notes,
            },
        })
    }
}

/// Poll the quantities read every millisecond, for 1 s or until each has changed 8 times,
/// and time their changes, to the polls' resolution of a millisecond: (the counter's period,
/// power's period).
#[cfg(feature = "nvml")]
fn poll_periods(
    dev: &nvml_wrapper::Device<'_>,
    energy: bool,
    power: bool,
) -> (Option<Duration>, Option<Duration>) {
    let start = std::time::Instant::now();
    let (mut e_polls, mut p_polls) = (Vec::new(), Vec::new());
    let (mut e_changes, mut p_changes) = (0, 0);
    // Record a poll, counting it as a change when the value differs from the last one.
    let record = |polls: &mut Vec<(u64, u64)>, changes: &mut usize, t: u64, v: u64| {
        if polls.last().is_some_and(|&(_, last)| last != v) {
            *changes += 1;
        }
        polls.push((t, v));
    };
    while start.elapsed() < Duration::from_secs(1) {
        let t = start.elapsed().as_nanos() as u64;
        if energy {
            if let Ok(v) = dev.total_energy_consumption() {
                record(&mut e_polls, &mut e_changes, t, v);
            }
        }
        if power {
            if let Ok(v) = dev.power_usage() {
                record(&mut p_polls, &mut p_changes, t, u64::from(v));
            }
        }
        if (!energy || e_changes >= 8) && (!power || p_changes >= 8) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let whole_ms = |d: Duration| Duration::from_millis((d.as_secs_f64() * 1e3).round() as u64);
    (
        if energy { period_from_changes(&e_polls).map(whole_ms) } else { None },
        if power { period_from_changes(&p_polls).map(whole_ms) } else { None },
    )
}

#[cfg(feature = "nvml")]
impl super::Sensor for NvmlSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn update_period(&self) -> Option<Duration> {
        self.period
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        use nvml_wrapper::error::NvmlError;
        let spec = &self.info.spec;
        let fault = |e: NvmlError| match e {
            NvmlError::GpuLost => {
                SensorError::Stopped { sensor: spec.clone(), reason: "GPU fell off the bus (GpuLost)".into() }
            }
            other => SensorError::ReadFailed { sensor: spec.clone(), detail: other.to_string() },
        };
        let dev = self.nvml.device_by_index(self.index).map_err(fault)?;
        let want_energy = self.mode == NvmlMode::EnergyCounter || self.both;
        let want_power = self.mode == NvmlMode::Power || self.both;
        // The total must read; the other quantity is evidence beside it, so a failure there
        // fails the sample too rather than recording half of it silently.
        let energy = if want_energy { Some(dev.total_energy_consumption().map_err(fault)?) } else { None };
        let power = if want_power { Some(dev.power_usage().map_err(fault)?) } else { None };
        Ok(reading(self.index, self.mode, energy, power))
    }
}

#[cfg(not(feature = "nvml"))]
impl super::Sensor for NvmlSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        Err(SensorError::Unavailable {
            sensor: self.info.spec.clone(),
            reason: "built without NVML support; rebuild with --features nvml".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_polled_refresh_sets_the_period_before_the_sample_stamps() {
        let ms = Duration::from_millis;
        // The H200 of docs/runs: samples stamped every 20 ms, both values refreshed every 100 ms.
        assert_eq!(
            choose_period(&[Some(ms(100)), Some(ms(100))], Some(ms(20))),
            Some((ms(100), PeriodSource::Polled))
        );
        // Every read must see each quantity move: the slower one decides.
        assert_eq!(
            choose_period(&[Some(ms(20)), Some(ms(100))], None),
            Some((ms(100), PeriodSource::Polled))
        );
        assert_eq!(choose_period(&[None, Some(ms(50))], Some(ms(20))), Some((ms(50), PeriodSource::Polled)));
        // Nothing polled moved often enough: the stamps, then nothing.
        assert_eq!(choose_period(&[None, None], Some(ms(20))), Some((ms(20), PeriodSource::Timestamps)));
        assert_eq!(choose_period(&[None], None), None);
        // Twice the H200's period.
        assert_eq!(interval_for(ms(100)), ms(200));
    }

    #[test]
    fn the_spec_chooses_the_total_and_what_is_recorded_beside_it() {
        let both = Offered { energy: true, power: true };
        let power_only = Offered { energy: false, power: true };
        let energy_only = Offered { energy: true, power: false };
        assert_eq!(choose(NvmlRead::Auto, both), Ok((NvmlMode::EnergyCounter, true)));
        assert_eq!(choose(NvmlRead::Energy, both), Ok((NvmlMode::EnergyCounter, true)));
        assert_eq!(choose(NvmlRead::Power, both), Ok((NvmlMode::Power, true)));
        assert_eq!(choose(NvmlRead::Auto, power_only), Ok((NvmlMode::Power, false)));
        assert_eq!(choose(NvmlRead::Auto, energy_only), Ok((NvmlMode::EnergyCounter, false)));
        assert!(choose(NvmlRead::Energy, power_only).unwrap_err().to_string().contains("nvml-power"));
        assert!(choose(NvmlRead::Power, energy_only).unwrap_err().to_string().contains("nvml-energy"));
        assert!(choose(NvmlRead::Auto, Offered { energy: false, power: false }).is_err());
    }

    #[test]
    fn a_reading_keeps_both_quantities_with_only_the_total_in_it() {
        let r = reading(0, NvmlMode::EnergyCounter, Some(123_456_789), Some(75_250));
        assert_eq!(r.raw.as_deref(), Some("123456789 mJ; 75250 mW"));
        assert_eq!(r.channels.len(), 2);
        assert_eq!(r.channels[0].channel, "gpu0");
        assert!(r.channels[0].in_total);
        assert_eq!(
            r.channels[0].measurement,
            Measurement::EnergyCounterJ { joules: 123_456.789, wrap_j: None }
        );
        assert_eq!(r.channels[1].channel, "gpu0-power");
        assert!(!r.channels[1].in_total);
        assert_eq!(r.channels[1].measurement, Measurement::PowerW { watts: 75.25 });
        assert_eq!(r.total_power_w(), None, "a counter total has no watts of its own");

        let p = reading(3, NvmlMode::Power, Some(1_000), Some(300_000));
        assert_eq!(p.total_power_w(), Some(300.0));
        assert_eq!((p.channels[0].channel.as_str(), p.channels[1].channel.as_str()), ("gpu3", "gpu3-energy"));

        let alone = reading(1, NvmlMode::Power, None, Some(61_000));
        assert_eq!(alone.channels.len(), 1);
        assert_eq!(alone.raw.as_deref(), Some("61000 mW"));
    }

    #[test]
    fn the_update_period_is_the_median_spacing() {
        // 20 ms samples with one late one and a duplicate: the median ignores both.
        let ts = [1_000_000, 1_020_000, 1_040_000, 1_040_000, 1_060_000, 1_095_000, 1_115_000];
        assert_eq!(period_from_timestamps_us(&ts), Some(Duration::from_millis(20)));
        assert_eq!(period_from_timestamps_us(&[5, 6]), None);
        // Polled every 5 ms, the value changes every 100 ms.
        let polls: Vec<(u64, u64)> = (0..100u64).map(|k| (k * 5_000_000, (k * 5) / 100)).collect();
        assert_eq!(period_from_changes(&polls), Some(Duration::from_millis(100)));
        assert_eq!(period_from_changes(&[(0, 1), (1, 1), (2, 2)]), None);
        assert_eq!(interval_for(Duration::from_millis(20)), Duration::from_millis(40));
        assert_eq!(interval_for(Duration::from_millis(100)), Duration::from_millis(200));
        assert_eq!(interval_for(Duration::from_millis(1)), Duration::from_millis(10));
        assert_eq!(interval_for(Duration::from_secs(2)), Duration::from_millis(500));
    }

    #[cfg(not(feature = "nvml"))]
    #[test]
    fn without_the_feature_open_says_how_to_rebuild() {
        let e = NvmlSensor::open(0, NvmlRead::Auto, None).err().unwrap();
        assert_eq!(e.kind(), crate::power::FaultKind::Unavailable);
        let m = e.to_string();
        assert!(
            m.starts_with(
                "sensor unavailable: nvml:0: built without NVML support; rebuild with --features nvml"
            ),
            "{m}"
        );
    }
}
