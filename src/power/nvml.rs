//! NVIDIA NVML sensor, `nvml[:INDEX]` (power-and-trace.md §C).
//!
//! Prefers the board's total-energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since
//! the driver loaded, Volta and newer), recorded as an energy counter without wrap. Where the
//! counter is not supported it falls back to `nvmlDeviceGetPowerUsage` (mW; a 1-second average
//! on Ampere and newer except GA100, instantaneous before). Channel `gpuINDEX`.
//!
//! Built only with the cargo feature `nvml` (crate `nvml-wrapper`, which loads
//! `libnvidia-ml.so.1` at run time, so no NVIDIA library is needed to build). Without the
//! feature, opening the sensor is an "unavailable" error that says how to rebuild.

use super::{SensorError, SensorInfo};

#[cfg(feature = "nvml")]
use super::{Reading, Sensor, SensorKind};

/// What an NVML sensor reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmlMode {
    /// Total energy counter, mJ → J.
    EnergyCounter,
    /// Board power, mW → W.
    Power,
}

/// The `nvml[:INDEX]` sensor.
pub struct NvmlSensor {
    #[cfg(feature = "nvml")]
    nvml: nvml_wrapper::Nvml,
    #[cfg(feature = "nvml")]
    index: u32,
    /// How readings are taken.
    pub mode: NvmlMode,
    info: SensorInfo,
}

#[cfg(not(feature = "nvml"))]
impl NvmlSensor {
    /// Always fails in this build: it was built without the `nvml` feature.
    pub fn open(index: u32) -> Result<Self, SensorError> {
        Err(SensorError::Unavailable {
            sensor: format!("nvml:{index}"),
            reason: "built without NVML support; rebuild with --features nvml (or use exec:nvidia-smi -i INDEX --query-gpu=power.draw --format=csv,noheader,nounits -lms 500)".into(),
        })
    }
}

#[cfg(feature = "nvml")]
impl NvmlSensor {
    /// Load NVML, find GPU `index`, and choose the energy counter or the power reading.
    pub fn open(index: u32) -> Result<Self, SensorError> {
        use nvml_wrapper::error::NvmlError;
        let sensor = format!("nvml:{index}");
        let nvml = nvml_wrapper::Nvml::init().map_err(|e| SensorError::Unavailable {
            sensor: sensor.clone(),
            reason: match e {
                NvmlError::LibloadingError(_) | NvmlError::FailedToLoadSymbol(_) => {
                    format!("cannot load libnvidia-ml.so.1 ({e}); install the NVIDIA driver or use exec:CMD")
                }
                NvmlError::DriverNotLoaded => {
                    "the NVIDIA driver is not loaded; load it or use exec:CMD".to_string()
                }
                NvmlError::NoPermission => {
                    "NVML has no permission to talk to the driver; check /dev/nvidia* access".to_string()
                }
                other => format!("NVML init failed: {other}"),
            },
        })?;
        let count = nvml.device_count().map_err(|e| SensorError::Unavailable {
            sensor: sensor.clone(),
            reason: format!("NVML cannot count devices: {e}"),
        })?;
        if index >= count {
            return Err(SensorError::Unavailable {
                sensor,
                reason: format!(
                    "no GPU {index}: NVML sees {count} device(s), indices 0..{}",
                    count.saturating_sub(1)
                ),
            });
        }
        let (mode, device, notes) = {
            let dev = nvml.device_by_index(index).map_err(|e| SensorError::Unavailable {
                sensor: sensor.clone(),
                reason: format!("NVML cannot open GPU {index}: {e}"),
            })?;
            let name = dev.name().unwrap_or_else(|e| format!("unknown name ({e})"));
            let uuid = dev.uuid().unwrap_or_else(|e| format!("unknown uuid ({e})"));
            let mut notes = Vec::new();
            match nvml.sys_driver_version() {
                Ok(v) => notes.push(format!("driver {v}")),
                Err(e) => notes.push(format!("driver version unknown: {e}")),
            }
            let mode = match dev.total_energy_consumption() {
                Ok(_) => {
                    notes.push("total energy counter (mJ since driver load); updates every 20-100 ms, so windows shorter than that read 0 J".into());
                    NvmlMode::EnergyCounter
                }
                Err(NvmlError::NotSupported) => match dev.power_usage() {
                    Ok(_) => {
                        notes.push("energy counter not supported; board power (mW), a 1 s average on Ampere and newer".into());
                        NvmlMode::Power
                    }
                    Err(e) => {
                        return Err(SensorError::Unavailable {
                            sensor,
                            reason: format!("GPU {index} reports neither energy nor power: {e}"),
                        })
                    }
                },
                Err(e) => {
                    return Err(SensorError::Unavailable {
                        sensor,
                        reason: format!("GPU {index} energy counter failed: {e}"),
                    })
                }
            };
            (mode, format!("GPU {index}: {name} ({uuid})"), notes)
        };
        Ok(NvmlSensor {
            nvml,
            index,
            mode,
            info: SensorInfo {
                kind: SensorKind::Nvml,
                spec: sensor,
                source: match mode {
                    NvmlMode::EnergyCounter => "nvml-energy".into(),
                    NvmlMode::Power => "nvml-power".into(),
                },
                device,
                live: true,
                program: None,
                notes,
            },
        })
    }
}

#[cfg(feature = "nvml")]
impl Sensor for NvmlSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<Reading, SensorError> {
        use nvml_wrapper::error::NvmlError;
        let fault = |e: NvmlError| match e {
            NvmlError::GpuLost => SensorError::Stopped {
                sensor: self.info.spec.clone(),
                reason: "GPU fell off the bus (GpuLost)".into(),
            },
            other => SensorError::ReadFailed { sensor: self.info.spec.clone(), detail: other.to_string() },
        };
        let dev = self.nvml.device_by_index(self.index).map_err(fault)?;
        let channel = format!("gpu{}", self.index);
        match self.mode {
            NvmlMode::EnergyCounter => {
                let mj = dev.total_energy_consumption().map_err(fault)?;
                let mut r = Reading::energy_counter_j(&channel, mj as f64 / 1e3, None);
                r.raw = Some(format!("{mj} mJ"));
                Ok(r)
            }
            NvmlMode::Power => {
                let mw = dev.power_usage().map_err(fault)?;
                let mut r = Reading::power_w(&channel, f64::from(mw) / 1e3);
                r.raw = Some(format!("{mw} mW"));
                Ok(r)
            }
        }
    }
}

#[cfg(not(feature = "nvml"))]
impl super::Sensor for NvmlSensor {
    fn info(&self) -> &SensorInfo {
        &self.info
    }

    fn read(&mut self) -> Result<super::Reading, SensorError> {
        Err(SensorError::Unavailable {
            sensor: self.info.spec.clone(),
            reason: "built without NVML support; rebuild with --features nvml".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "nvml"))]
    #[test]
    fn without_the_feature_open_says_how_to_rebuild() {
        let e = NvmlSensor::open(0).err().unwrap();
        assert_eq!(e.kind(), crate::power::FaultKind::Unavailable);
        let m = e.to_string();
        assert!(
            m.starts_with(
                "sensor unavailable: nvml:0: built without NVML support; rebuild with --features nvml"
            ),
            "{m}"
        );
    }

    #[cfg(feature = "nvml")]
    #[test]
    fn with_the_feature_a_host_without_nvidia_is_a_clear_error() {
        // On a machine with an NVIDIA driver this opens; otherwise it must say why.
        match NvmlSensor::open(0) {
            Ok(mut s) => {
                let r = crate::power::Sensor::read(&mut s).unwrap();
                assert_eq!(r.channels[0].channel, "gpu0");
            }
            Err(e) => {
                eprintln!("nvml:0 here: {e}");
                assert_eq!(e.kind(), crate::power::FaultKind::Unavailable);
                assert!(e.to_string().contains("nvml:0"), "{e}");
            }
        }
    }
}
