//! What a power sensor measures: its boundary. Every sensor kind declares one (`pstr`: the
//! whole system; `nvml…`: the GPU board; `rapl`: the CPU packages), an `exec:` meter is
//! `unknown` unless the user declares it (`energy --boundary`), and a replay keeps the
//! replayed record's. Reports label power and energy by it ([`PowerBoundary::label`]), so a
//! GPU board's watts are never called system power.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{SensorInfo, SensorKind};

/// The boundary of what a sensor's total measures. Written in raw records and reports as its
/// name ([`PowerBoundary::name`]): `whole-system`, `gpu-board`, `cpu-package`,
/// `cpu-package-dram`, `wall`, `other:TEXT` or `unknown`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PowerBoundary {
    /// The whole machine as its own estimate sees it (Apple SMC `PSTR`).
    WholeSystem,
    /// One GPU board (NVML: the board's power or energy counter), not the host around it.
    GpuBoard,
    /// The CPU package(s) (RAPL package zones): cores, uncore, caches, an integrated GPU.
    CpuPackage,
    /// The CPU package(s) and their DRAM.
    CpuPackageDram,
    /// A meter between the wall socket and the machine (AC power, power supply losses
    /// included).
    Wall,
    /// What the user declared in words (`--boundary other:TEXT`).
    Other(String),
    /// Not known: an `exec:` meter without `--boundary`, a replay of a record that names none.
    #[default]
    Unknown,
}

/// The values `--boundary` takes, as messages list them.
pub const BOUNDARY_VALUES: &str =
    "whole-system, gpu-board, cpu-package, cpu-package-dram, wall or other:TEXT";

impl PowerBoundary {
    /// The name as written in records and given to `--boundary`.
    pub fn name(&self) -> String {
        match self {
            PowerBoundary::WholeSystem => "whole-system".into(),
            PowerBoundary::GpuBoard => "gpu-board".into(),
            PowerBoundary::CpuPackage => "cpu-package".into(),
            PowerBoundary::CpuPackageDram => "cpu-package-dram".into(),
            PowerBoundary::Wall => "wall".into(),
            PowerBoundary::Other(t) => format!("other:{t}"),
            PowerBoundary::Unknown => "unknown".into(),
        }
    }

    /// The words put before a quantity (`GPU board` in `GPU board power`); `None` when unknown.
    fn adjective(&self) -> Option<&str> {
        match self {
            PowerBoundary::WholeSystem => Some("whole-system"),
            PowerBoundary::GpuBoard => Some("GPU board"),
            PowerBoundary::CpuPackage => Some("CPU package"),
            PowerBoundary::CpuPackageDram => Some("CPU package + DRAM"),
            PowerBoundary::Wall => Some("wall"),
            PowerBoundary::Other(t) => Some(t.as_str()),
            PowerBoundary::Unknown => None,
        }
    }

    /// A quantity named by the boundary, with its unit: `GPU board power [W]`,
    /// `whole-system energy [J]`, `power [W] (boundary unknown)`. The one place report labels
    /// of power and energy come from.
    pub fn label(&self, quantity: &str, unit: &str) -> String {
        match self.adjective() {
            Some(a) => format!("{a} {quantity} [{unit}]"),
            None => format!("{quantity} [{unit}] (boundary unknown)"),
        }
    }

    /// A quantity named by the boundary in running text: `GPU board energy`,
    /// `energy (boundary unknown)`.
    pub fn noun(&self, quantity: &str) -> String {
        match self.adjective() {
            Some(a) => format!("{a} {quantity}"),
            None => format!("{quantity} (boundary unknown)"),
        }
    }

    /// Where a figure holds, in running text: `on the GPU board`, `for the whole system`,
    /// `at an unknown boundary`.
    pub fn scope(&self) -> String {
        match self {
            PowerBoundary::WholeSystem => "for the whole system".into(),
            PowerBoundary::GpuBoard => "on the GPU board".into(),
            PowerBoundary::CpuPackage => "in the CPU package".into(),
            PowerBoundary::CpuPackageDram => "in the CPU package + DRAM".into(),
            PowerBoundary::Wall => "at the wall".into(),
            PowerBoundary::Other(t) => format!("within {t}"),
            PowerBoundary::Unknown => "at an unknown boundary".into(),
        }
    }

    /// The boundary a sensor declares by its kind, from what the raw header records of it:
    /// `pstr` the whole system, `nvml…` the GPU board, `rapl` the CPU package (its total sums
    /// the package zones; DRAM is recorded beside it, outside the total), a RAPL `psys` total
    /// the platform; `exec`, `replay` and scripted sensors `unknown` (a declared or replayed
    /// boundary is recorded on its own).
    pub fn of_sensor(info: &SensorInfo) -> Self {
        match info.kind {
            SensorKind::Pstr => PowerBoundary::WholeSystem,
            SensorKind::Nvml => PowerBoundary::GpuBoard,
            SensorKind::Rapl if info.source == "rapl-psys" => {
                PowerBoundary::Other("RAPL psys platform".into())
            }
            SensorKind::Rapl => PowerBoundary::CpuPackage,
            SensorKind::Exec | SensorKind::Replay | SensorKind::Mock => PowerBoundary::Unknown,
        }
    }
}

impl fmt::Display for PowerBoundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A `--boundary` value that names no boundary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown boundary {0:?}: expected {BOUNDARY_VALUES}")]
pub struct BoundaryError(pub String);

impl FromStr for PowerBoundary {
    type Err = BoundaryError;

    /// Every name [`PowerBoundary::name`] writes, `unknown` included; `other:` needs text.
    fn from_str(s: &str) -> Result<Self, BoundaryError> {
        let t = s.trim();
        Ok(match t {
            "whole-system" => PowerBoundary::WholeSystem,
            "gpu-board" => PowerBoundary::GpuBoard,
            "cpu-package" => PowerBoundary::CpuPackage,
            "cpu-package-dram" => PowerBoundary::CpuPackageDram,
            "wall" => PowerBoundary::Wall,
            "unknown" => PowerBoundary::Unknown,
            _ => match t.strip_prefix("other:").map(str::trim) {
                Some(text) if !text.is_empty() => PowerBoundary::Other(text.to_string()),
                _ => return Err(BoundaryError(s.to_string())),
            },
        })
    }
}

impl Serialize for PowerBoundary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for PowerBoundary {
    /// A name this version does not know (a later version's) reads as `other:NAME`, so a
    /// record stays readable and its boundary is still named.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(s.parse().unwrap_or(PowerBoundary::Other(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<PowerBoundary> {
        vec![
            PowerBoundary::WholeSystem,
            PowerBoundary::GpuBoard,
            PowerBoundary::CpuPackage,
            PowerBoundary::CpuPackageDram,
            PowerBoundary::Wall,
            PowerBoundary::Other("rack PDU outlet".into()),
            PowerBoundary::Unknown,
        ]
    }

    #[test]
    fn labels_name_the_boundary_and_never_call_a_part_system_power() {
        let labels: Vec<String> = all().iter().map(|b| b.label("power", "W")).collect();
        assert_eq!(
            labels,
            [
                "whole-system power [W]",
                "GPU board power [W]",
                "CPU package power [W]",
                "CPU package + DRAM power [W]",
                "wall power [W]",
                "rack PDU outlet power [W]",
                "power [W] (boundary unknown)",
            ]
        );
        assert_eq!(PowerBoundary::GpuBoard.label("energy", "J"), "GPU board energy [J]");
        assert_eq!(PowerBoundary::GpuBoard.noun("energy"), "GPU board energy");
        assert_eq!(PowerBoundary::Unknown.noun("energy"), "energy (boundary unknown)");
        assert_eq!(PowerBoundary::GpuBoard.scope(), "on the GPU board");
        assert_eq!(PowerBoundary::WholeSystem.scope(), "for the whole system");
        for b in all().iter().filter(|b| **b != PowerBoundary::WholeSystem) {
            assert!(!b.label("power", "W").contains("system"), "{b}");
            assert!(!b.scope().contains("system"), "{b}");
        }
    }

    #[test]
    fn names_round_trip_through_the_flag_and_json() {
        for b in all() {
            assert_eq!(b.name().parse::<PowerBoundary>(), Ok(b.clone()));
            let json = serde_json::to_string(&b).unwrap();
            assert_eq!(json, format!("\"{}\"", b.name()));
            assert_eq!(serde_json::from_str::<PowerBoundary>(&json).unwrap(), b);
        }
        assert_eq!(" wall ".parse::<PowerBoundary>(), Ok(PowerBoundary::Wall));
        for bad in ["", "system", "other:", "other:  ", "GPU"] {
            let e = bad.parse::<PowerBoundary>().expect_err(bad);
            assert!(e.to_string().contains("whole-system, gpu-board"), "{e}");
        }
        // A later version's name stays readable, as what it says.
        assert_eq!(
            serde_json::from_str::<PowerBoundary>("\"soc\"").unwrap(),
            PowerBoundary::Other("soc".into())
        );
    }

    #[test]
    fn each_sensor_kind_declares_its_boundary() {
        let info = |kind, source: &str| SensorInfo {
            kind,
            spec: String::new(),
            source: source.into(),
            device: String::new(),
            live: true,
            program: None,
            notes: Vec::new(),
        };
        let of = |kind, source| PowerBoundary::of_sensor(&info(kind, source));
        assert_eq!(of(SensorKind::Pstr, "smc-pstr"), PowerBoundary::WholeSystem);
        assert_eq!(of(SensorKind::Nvml, "nvml-energy"), PowerBoundary::GpuBoard);
        assert_eq!(of(SensorKind::Nvml, "nvml-power"), PowerBoundary::GpuBoard);
        assert_eq!(of(SensorKind::Rapl, "rapl-pkg"), PowerBoundary::CpuPackage);
        assert_eq!(of(SensorKind::Rapl, "rapl-psys"), PowerBoundary::Other("RAPL psys platform".into()));
        assert_eq!(of(SensorKind::Exec, "measured-external"), PowerBoundary::Unknown);
        assert_eq!(of(SensorKind::Replay, "replay"), PowerBoundary::Unknown);
        assert_eq!(of(SensorKind::Mock, "mock"), PowerBoundary::Unknown);
    }
}
