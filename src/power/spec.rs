//! Parsing of `--sensor` specs and duration flags.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// A duration flag that is not `500ms`, `2s`, `1m` or a plain number of seconds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing was given.
    #[error("empty duration: give a number with an optional unit, e.g. 500ms, 2s, 1m or 0.5")]
    Empty,
    /// The number part is missing or not a number.
    #[error("invalid duration {input:?}: expected a number with an optional unit ms, s or m (e.g. 500ms, 2s, 1m; a plain number means seconds)")]
    NotANumber {
        /// The flag value as given.
        input: String,
    },
    /// The unit is not one of `ms`, `s`, `m`.
    #[error(
        "invalid duration {input:?}: unknown unit {unit:?}; use ms, s or m (a plain number means seconds)"
    )]
    UnknownUnit {
        /// The flag value as given.
        input: String,
        /// The unit found.
        unit: String,
    },
    /// Negative, not finite, or too large.
    #[error("invalid duration {input:?}: must be a finite, non-negative length of time")]
    OutOfRange {
        /// The flag value as given.
        input: String,
    },
}

/// Parse a duration flag: `500ms`, `2s`, `1m`, `0.25s`, or a plain number meaning seconds.
///
/// Surrounding whitespace and whitespace between number and unit are allowed. Zero is
/// accepted; callers that need a positive duration check it themselves.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let unit = unit.trim_start();
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(DurationError::NotANumber { input: input.to_string() });
    }
    let scale_s = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" => 60.0,
        _ => {
            if unit.starts_with(|c: char| c.is_ascii_alphabetic()) {
                return Err(DurationError::UnknownUnit { input: input.to_string(), unit: unit.to_string() });
            }
            return Err(DurationError::NotANumber { input: input.to_string() });
        }
    };
    // Whole numbers use exact integer arithmetic; decimals go through f64 seconds.
    if !num.contains('.') {
        let n: u64 = num.parse().map_err(|_| DurationError::OutOfRange { input: input.to_string() })?;
        let d = match unit {
            "ms" => Some(Duration::from_millis(n)),
            "m" => n.checked_mul(60).map(Duration::from_secs),
            _ => Some(Duration::from_secs(n)),
        };
        return d.ok_or_else(|| DurationError::OutOfRange { input: input.to_string() });
    }
    let value: f64 = num.parse().map_err(|_| DurationError::NotANumber { input: input.to_string() })?;
    Duration::try_from_secs_f64(value * scale_s)
        .map_err(|_| DurationError::OutOfRange { input: input.to_string() })
}

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
    /// `nvml` or `nvml:INDEX`: NVIDIA GPU `INDEX` (default 0).
    Nvml {
        /// NVML device index.
        index: u32,
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

/// A `--sensor` value that names no sensor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Nothing was given.
    #[error("empty sensor spec: expected pstr, rapl, nvml[:INDEX], exec:CMD or replay:RAW")]
    Empty,
    /// The kind before `:` is unknown.
    #[error(
        "unknown sensor {kind:?} in {input:?}: expected pstr, rapl, nvml[:INDEX], exec:CMD or replay:RAW"
    )]
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
        let missing = |what, example| SpecError::MissingArgument { input: input.to_string(), what, example };
        match kind {
            "pstr" => match arg {
                None => Ok(SensorSpec::Pstr),
                Some(_) => {
                    Err(SpecError::UnexpectedArgument { input: input.to_string(), kind: kind.to_string() })
                }
            },
            "rapl" => match arg {
                None => Ok(SensorSpec::Rapl { root: None }),
                Some("") => Err(missing("a powercap directory", "rapl:/host/sys/class/powercap")),
                Some(a) => Ok(SensorSpec::Rapl { root: Some(PathBuf::from(a)) }),
            },
            "nvml" => match arg {
                None => Ok(SensorSpec::Nvml { index: 0 }),
                Some(a) => a
                    .parse::<u32>()
                    .map(|index| SensorSpec::Nvml { index })
                    .map_err(|_| SpecError::BadIndex { input: input.to_string(), index: a.to_string() }),
            },
            "exec" => match arg.map(str::trim) {
                None | Some("") => Err(missing(
                    "a shell command",
                    "exec:nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 500",
                )),
                // The command keeps its own spacing; only the spec's outer whitespace is trimmed.
                Some(_) => Ok(SensorSpec::Exec {
                    command: arg.unwrap_or_default().to_string(),
                    unit: super::exec::PowerUnit::W,
                }),
            },
            "replay" => match arg {
                None | Some("") => Err(missing("a raw file", "replay:results/run.raw.jsonl")),
                Some(a) => Ok(SensorSpec::Replay { path: PathBuf::from(a) }),
            },
            other => Err(SpecError::UnknownKind { input: input.to_string(), kind: other.to_string() }),
        }
    }
}

impl fmt::Display for SensorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SensorSpec::Pstr => f.write_str("pstr"),
            SensorSpec::Rapl { root: None } => f.write_str("rapl"),
            SensorSpec::Rapl { root: Some(r) } => write!(f, "rapl:{}", r.display()),
            SensorSpec::Nvml { index } => write!(f, "nvml:{index}"),
            SensorSpec::Exec { command, .. } => write!(f, "exec:{command}"),
            SensorSpec::Replay { path } => write!(f, "replay:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_documented_form() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0.25s"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration(" 250 ms "), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2.5ms"), Ok(Duration::from_micros(2500)));
    }

    #[test]
    fn garbage_durations_are_errors_that_say_what_is_accepted() {
        for bad in ["", "  ", "ms", "abc", "-1s", "1.2.3s", ".", "1e3", "5 sec", "1h", "s5"] {
            let e = parse_duration(bad).expect_err(bad);
            let msg = e.to_string();
            assert!(msg.contains("ms") || msg.contains("duration"), "{bad:?} -> {msg}");
        }
        assert!(matches!(parse_duration("1h"), Err(DurationError::UnknownUnit { .. })));
        assert!(matches!(parse_duration("-1s"), Err(DurationError::NotANumber { .. })));
        assert!(matches!(parse_duration("99999999999999999999"), Err(DurationError::OutOfRange { .. })));
        assert!(matches!(parse_duration("307445734561825861m"), Err(DurationError::OutOfRange { .. })));
    }

    #[test]
    fn sensor_specs_parse() {
        let p = |s: &str| s.parse::<SensorSpec>();
        assert_eq!(p("pstr"), Ok(SensorSpec::Pstr));
        assert_eq!(p("rapl"), Ok(SensorSpec::Rapl { root: None }));
        assert_eq!(p("rapl:/host/powercap"), Ok(SensorSpec::Rapl { root: Some("/host/powercap".into()) }));
        assert_eq!(p("nvml"), Ok(SensorSpec::Nvml { index: 0 }));
        assert_eq!(p("nvml:3"), Ok(SensorSpec::Nvml { index: 3 }));
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
        for s in ["pstr", "rapl", "rapl:/x", "nvml:2", "exec:echo 1", "replay:a.jsonl"] {
            assert_eq!(s.parse::<SensorSpec>().unwrap().to_string(), s);
        }
    }
}
