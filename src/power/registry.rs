//! The sensor registry: the one table of `--sensor` kinds ([`SENSORS`]) and the parser of
//! their specs, replay included.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use super::SensorKind;

/// Which power sensor to sample, as given to `--sensor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SensorSpec {
    /// `pstr`: Apple SMC key PSTR (macOS only).
    Pstr,
    /// `rapl` or `rapl:SYSFS_ROOT`: Linux powercap; the root defaults to `/sys/class/powercap`.
    Rapl {
        /// Alternative powercap root (e.g. a bind mount in a container).
        root: Option<PathBuf>,
    },
    /// `nvml[:INDEX]`, `nvml-power[:INDEX]`, `nvml-energy[:INDEX]`: NVIDIA GPU `INDEX`
    /// (default 0) through NVML, its total-energy counter or its board power.
    Nvml {
        /// NVML device index.
        index: u32,
        /// Which quantity is the sensor's total.
        read: NvmlRead,
    },
    /// `exec:CMD`: an external meter; `CMD` runs under `sh -c` and prints one reading a line.
    Exec {
        /// The shell command.
        command: String,
        /// The unit of a bare number on a meter line (`--sensor-unit`; a suffix on the line
        /// wins); watts unless set.
        unit: super::exec::PowerUnit,
    },
    /// `replay:RAW`: samples recorded in a raw file (re-analysis and tests; not live).
    Replay {
        /// The raw file.
        path: PathBuf,
    },
}

/// Which NVML quantity a `nvml…` sensor totals; the other one, where the GPU reports it, is
/// recorded beside it as a channel outside the total, so one run cross-checks the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvmlRead {
    /// `nvml`: the energy counter where the GPU has one, else board power.
    Auto,
    /// `nvml-power`: board power (`nvmlDeviceGetPowerUsage`, mW).
    Power,
    /// `nvml-energy`: the total-energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ).
    Energy,
}

impl NvmlRead {
    /// The spec prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            NvmlRead::Auto => "nvml",
            NvmlRead::Power => "nvml-power",
            NvmlRead::Energy => "nvml-energy",
        }
    }
}

/// A `--sensor` value that names no sensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Nothing was given.
    #[error("empty sensor spec: expected {}", usage_list())]
    Empty,
    /// The kind before `:` is unknown.
    #[error("unknown sensor {kind:?} in {input:?}: expected {}", usage_list())]
    UnknownKind {
        /// The spec as given.
        input: String,
        /// The kind found.
        kind: String,
    },
    /// The kind takes no argument but one was given.
    #[error("sensor {kind:?} takes no argument, got {input:?}")]
    UnexpectedArgument {
        /// The spec as given.
        input: String,
        /// The kind.
        kind: String,
    },
    /// The kind needs an argument that is missing or empty.
    #[error("sensor spec {input:?} needs {what} after the colon, e.g. {example}")]
    MissingArgument {
        /// The spec as given.
        input: String,
        /// What is needed.
        what: &'static str,
        /// An example spec.
        example: &'static str,
    },
    /// `nvml:INDEX` with an index that is not a non-negative integer.
    #[error(
        "invalid NVML device index {index:?} in {input:?}: expected a non-negative integer such as nvml:0"
    )]
    BadIndex {
        /// The spec as given.
        input: String,
        /// The index text.
        index: String,
    },
}

/// One sensor kind: how its spec is written and how its argument is read. [`SENSORS`] is the
/// only list of sensor kinds: parsing, error messages and `doctor`'s survey read it.
pub struct SensorRow {
    /// The text before the first `:` (`nvml-power`).
    pub prefix: &'static str,
    /// The family it opens.
    pub kind: SensorKind,
    /// How the spec is written in messages (`nvml[:INDEX]`, `exec:CMD`).
    pub usage: &'static str,
    /// The spec `doctor` opens to see whether this kind works here; `None` for kinds that are
    /// not hardware on this machine (`exec`, `replay`), which the survey describes instead.
    pub probe: Option<fn() -> SensorSpec>,
    /// Read the spec's argument (the text after the first `:`; `None` without a colon).
    parse: fn(input: &str, arg: Option<&str>) -> Result<SensorSpec, SpecError>,
}

/// Every sensor kind, in the order messages list them.
pub const SENSORS: &[SensorRow] = &[
    SensorRow {
        prefix: "pstr",
        kind: SensorKind::Pstr,
        usage: "pstr",
        probe: Some(|| SensorSpec::Pstr),
        parse: parse_pstr,
    },
    SensorRow {
        prefix: "rapl",
        kind: SensorKind::Rapl,
        usage: "rapl",
        probe: Some(|| SensorSpec::Rapl { root: None }),
        parse: parse_rapl,
    },
    SensorRow {
        prefix: "nvml",
        kind: SensorKind::Nvml,
        usage: "nvml[:INDEX]",
        probe: Some(|| SensorSpec::Nvml { index: 0, read: NvmlRead::Auto }),
        parse: |input, arg| parse_nvml(input, arg, NvmlRead::Auto),
    },
    SensorRow {
        prefix: "nvml-power",
        kind: SensorKind::Nvml,
        usage: "nvml-power[:INDEX]",
        probe: None,
        parse: |input, arg| parse_nvml(input, arg, NvmlRead::Power),
    },
    SensorRow {
        prefix: "nvml-energy",
        kind: SensorKind::Nvml,
        usage: "nvml-energy[:INDEX]",
        probe: None,
        parse: |input, arg| parse_nvml(input, arg, NvmlRead::Energy),
    },
    SensorRow { prefix: "exec", kind: SensorKind::Exec, usage: "exec:CMD", probe: None, parse: parse_exec },
    SensorRow {
        prefix: "replay",
        kind: SensorKind::Replay,
        usage: "replay:RAW",
        probe: None,
        parse: parse_replay,
    },
];

/// The kinds as a message lists them: `pstr, rapl, nvml[:INDEX], exec:CMD or replay:RAW`.
pub fn usage_list() -> String {
    let usages: Vec<&str> = SENSORS.iter().map(|r| r.usage).collect();
    match usages.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => usages.join(""),
    }
}

fn missing(input: &str, what: &'static str, example: &'static str) -> SpecError {
    SpecError::MissingArgument { input: input.to_string(), what, example }
}

fn parse_pstr(input: &str, arg: Option<&str>) -> Result<SensorSpec, SpecError> {
    match arg {
        None => Ok(SensorSpec::Pstr),
        Some(_) => Err(SpecError::UnexpectedArgument { input: input.to_string(), kind: "pstr".into() }),
    }
}

fn parse_rapl(input: &str, arg: Option<&str>) -> Result<SensorSpec, SpecError> {
    match arg {
        None => Ok(SensorSpec::Rapl { root: None }),
        Some("") => Err(missing(input, "a powercap directory", "rapl:/host/sys/class/powercap")),
        Some(a) => Ok(SensorSpec::Rapl { root: Some(PathBuf::from(a)) }),
    }
}

fn parse_nvml(input: &str, arg: Option<&str>, read: NvmlRead) -> Result<SensorSpec, SpecError> {
    match arg {
        None => Ok(SensorSpec::Nvml { index: 0, read }),
        Some(a) => a
            .parse::<u32>()
            .map(|index| SensorSpec::Nvml { index, read })
            .map_err(|_| SpecError::BadIndex { input: input.to_string(), index: a.to_string() }),
    }
}

fn parse_exec(input: &str, arg: Option<&str>) -> Result<SensorSpec, SpecError> {
    match arg {
        None => Err(missing(input, "a shell command", EXEC_EXAMPLE)),
        Some(a) if a.trim().is_empty() => Err(missing(input, "a shell command", EXEC_EXAMPLE)),
        // The command keeps its own spacing; only the spec's outer whitespace is trimmed.
        Some(a) => Ok(SensorSpec::Exec { command: a.to_string(), unit: super::exec::PowerUnit::W }),
    }
}

const EXEC_EXAMPLE: &str = "exec:nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 500";

fn parse_replay(input: &str, arg: Option<&str>) -> Result<SensorSpec, SpecError> {
    match arg {
        None | Some("") => Err(missing(input, "a raw file", "replay:results/run.raw.jsonl")),
        Some(a) => Ok(SensorSpec::Replay { path: PathBuf::from(a) }),
    }
}

impl SensorSpec {
    /// The family this spec opens.
    pub fn kind(&self) -> SensorKind {
        match self {
            SensorSpec::Pstr => SensorKind::Pstr,
            SensorSpec::Rapl { .. } => SensorKind::Rapl,
            SensorSpec::Nvml { .. } => SensorKind::Nvml,
            SensorSpec::Exec { .. } => SensorKind::Exec,
            SensorSpec::Replay { .. } => SensorKind::Replay,
        }
    }
}

impl FromStr for SensorSpec {
    type Err = SpecError;

    fn from_str(input: &str) -> Result<Self, SpecError> {
        let s = input.trim();
        if s.is_empty() {
            return Err(SpecError::Empty);
        }
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        match SENSORS.iter().find(|row| row.prefix == kind) {
            Some(row) => (row.parse)(input, arg),
            None => Err(SpecError::UnknownKind { input: input.to_string(), kind: kind.to_string() }),
        }
    }
}

impl fmt::Display for SensorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SensorSpec::Pstr => f.write_str("pstr"),
            SensorSpec::Rapl { root: None } => f.write_str("rapl"),
            SensorSpec::Rapl { root: Some(r) } => write!(f, "rapl:{}", r.display()),
            SensorSpec::Nvml { index, read } => write!(f, "{}:{index}", read.prefix()),
            SensorSpec::Exec { command, .. } => write!(f, "exec:{command}"),
            SensorSpec::Replay { path } => write!(f, "replay:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensor_specs_parse() {
        let p = |s: &str| s.parse::<SensorSpec>();
        assert_eq!(p("pstr"), Ok(SensorSpec::Pstr));
        assert_eq!(p("rapl"), Ok(SensorSpec::Rapl { root: None }));
        assert_eq!(p("rapl:/host/powercap"), Ok(SensorSpec::Rapl { root: Some("/host/powercap".into()) }));
        assert_eq!(p("nvml"), Ok(SensorSpec::Nvml { index: 0, read: NvmlRead::Auto }));
        assert_eq!(p("nvml:3"), Ok(SensorSpec::Nvml { index: 3, read: NvmlRead::Auto }));
        assert_eq!(p("nvml-power"), Ok(SensorSpec::Nvml { index: 0, read: NvmlRead::Power }));
        assert_eq!(p("nvml-energy:1"), Ok(SensorSpec::Nvml { index: 1, read: NvmlRead::Energy }));
        assert_eq!(
            p("exec:nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 500"),
            Ok(SensorSpec::Exec {
                command: "nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 500".into(),
                unit: crate::power::exec::PowerUnit::W,
            })
        );
        // Only the first colon separates kind and argument.
        assert_eq!(
            p("exec:echo a:b"),
            Ok(SensorSpec::Exec { command: "echo a:b".into(), unit: crate::power::exec::PowerUnit::W })
        );
        assert_eq!(p("replay:runs/a.raw.jsonl"), Ok(SensorSpec::Replay { path: "runs/a.raw.jsonl".into() }));
    }

    #[test]
    fn bad_sensor_specs_are_clear_errors() {
        let p = |s: &str| s.parse::<SensorSpec>().expect_err(s);
        assert_eq!(p(""), SpecError::Empty);
        assert!(matches!(p("macmon"), SpecError::UnknownKind { .. }));
        assert!(p("macmon").to_string().contains("nvml[:INDEX]"));
        assert!(matches!(p("pstr:1"), SpecError::UnexpectedArgument { .. }));
        assert!(matches!(p("nvml:x"), SpecError::BadIndex { .. }));
        assert!(matches!(p("nvml:-1"), SpecError::BadIndex { .. }));
        assert!(matches!(p("exec:"), SpecError::MissingArgument { .. }));
        assert!(matches!(p("exec:   "), SpecError::MissingArgument { .. }));
        assert!(p("exec:").to_string().contains("nvidia-smi"));
        assert!(matches!(p("replay:"), SpecError::MissingArgument { .. }));
        assert!(matches!(p("rapl:"), SpecError::MissingArgument { .. }));
    }

    #[test]
    fn specs_display_as_they_parse() {
        for s in [
            "pstr",
            "rapl",
            "rapl:/x",
            "nvml:2",
            "nvml-power:0",
            "nvml-energy:3",
            "exec:echo 1",
            "replay:a.jsonl",
        ] {
            assert_eq!(s.parse::<SensorSpec>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn the_table_lists_every_kind_once_and_messages_read_it() {
        assert_eq!(
            usage_list(),
            "pstr, rapl, nvml[:INDEX], nvml-power[:INDEX], nvml-energy[:INDEX], exec:CMD or replay:RAW"
        );
        let mut prefixes: Vec<&str> = SENSORS.iter().map(|r| r.prefix).collect();
        prefixes.sort();
        prefixes.dedup();
        assert_eq!(prefixes.len(), SENSORS.len());
        for row in SENSORS {
            if let Some(probe) = row.probe {
                assert_eq!(probe().kind(), row.kind);
            }
        }
        for s in ["pstr", "rapl:/x", "nvml:1", "exec:true", "replay:a"] {
            let spec: SensorSpec = s.parse().unwrap();
            assert_eq!(spec.kind().name(), s.split(':').next().unwrap());
        }
        assert_eq!("nvml-power:2".parse::<SensorSpec>().unwrap().kind(), SensorKind::Nvml);
    }
}
