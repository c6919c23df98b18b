//! Wall-clock names and stamps (`speed-20261129T151500Z` file stems, ISO-8601 UTC times, Unix
//! seconds; timed intervals never use these, the run's monotonic clock does) and the
//! duration grammar (`500ms`, `2s`, `1m`) with its bound and rate periods. A bottom module:
//! it depends on nothing in the crate, so every layer may use it (the duration flags, which
//! name the crate's error, are `run::duration_flags`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock now, Unix seconds.
pub fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// `speed-20261129T151500Z` style stem from the current UTC time.
pub fn timestamp_stem(prefix: &str) -> String {
    let (y, m, d, hh, mm, ss) = civil_utc(now_secs());
    format!("{prefix}-{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z")
}

/// ISO-8601 UTC time of now, to the second (`2026-11-29T21:57:27Z`).
pub fn iso_utc_now() -> String {
    iso_utc(now_secs())
}

/// ISO-8601 UTC time of `secs` Unix seconds.
pub fn iso_utc(secs: i64) -> String {
    let (y, m, d, hh, mm, ss) = civil_utc(secs);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64
}

/// Unix seconds as UTC (year, month, day, hour, minute, second).
pub fn civil_utc(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

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
    /// Longer than [`MAX_DURATION`].
    #[error("invalid duration {input:?}: longer than 7 days (604800 s), the longest a flag takes")]
    TooLong {
        /// The flag value as given.
        input: String,
    },
}

/// The longest duration a flag takes: 7 days. Past it no run is meant, and the clock's
/// arithmetic (an `Instant` plus the length, twice an interval) could overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The period of a rate given per second (`--rate`, `--rates`, `--fps`): `None` unless the rate
/// is finite, positive and at least one per [`MAX_DURATION`] (a smaller one has a period no
/// clock arithmetic should take).
pub fn period_of(rate_per_s: f64) -> Option<Duration> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
        return None;
    }
    Duration::try_from_secs_f64(1.0 / rate_per_s).ok().filter(|p| *p <= MAX_DURATION)
}

/// Parse a duration flag: `500ms`, `2s`, `1m`, `0.25s`, or a plain number meaning seconds.
///
/// Surrounding whitespace and whitespace between number and unit are allowed. Zero is
/// accepted; callers that need a positive duration check it themselves. At most
/// [`MAX_DURATION`].
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let d = parse_any_duration(input)?;
    if d > MAX_DURATION {
        return Err(DurationError::TooLong { input: input.to_string() });
    }
    Ok(d)
}

fn parse_any_duration(input: &str) -> Result<Duration, DurationError> {
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
        // only digits: a number that does not parse is too long for a u64
        let n: u64 = num.parse().map_err(|_| DurationError::TooLong { input: input.to_string() })?;
        let d = match unit {
            "ms" => Some(Duration::from_millis(n)),
            "m" => n.checked_mul(60).map(Duration::from_secs),
            _ => Some(Duration::from_secs(n)),
        };
        return d.ok_or_else(|| DurationError::TooLong { input: input.to_string() });
    }
    let value: f64 = num.parse().map_err(|_| DurationError::NotANumber { input: input.to_string() })?;
    // digits and one dot: never negative nor NaN, so only too long for a Duration
    Duration::try_from_secs_f64(value * scale_s)
        .map_err(|_| DurationError::TooLong { input: input.to_string() })
}

#[cfg(test)]
mod tests {
    use super::{civil_utc, iso_utc, parse_duration, DurationError, MAX_DURATION};
    use std::time::Duration;

    #[test]
    fn civil_dates_by_hand() {
        assert_eq!(civil_utc(0), (1970, 1, 1, 0, 0, 0));
        // 2000-02-29 (a leap day of a century divisible by 400): 11016 days after the epoch.
        assert_eq!(civil_utc(11_016 * 86_400 + 3_661), (2000, 2, 29, 1, 1, 1));
        // The last second of 1969.
        assert_eq!(civil_utc(-1), (1969, 12, 31, 23, 59, 59));
        // 2026-12-02T02:07:57Z, the day this was written: 20789 days after the epoch.
        assert_eq!(iso_utc(20_789 * 86_400 + 2 * 3600 + 7 * 60 + 57), "2026-12-02T02:07:57Z");
    }

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
        assert!(matches!(parse_duration("307445734561825861m"), Err(DurationError::TooLong { .. })));
        // Up to 7 days; 2^63 s once overflowed an Instant in `energy --idle-seconds`.
        assert_eq!(parse_duration("604800"), Ok(MAX_DURATION));
        assert_eq!(parse_duration("10080m"), Ok(MAX_DURATION));
        // past u64 and past f64 too: still "longer than 7 days", not another reason
        let huge = format!("{}.5", "1".repeat(400));
        for long in ["604801", "604800.5", "10081m", "9223372036854775808", "99999999999999999999", &huge] {
            assert!(matches!(parse_duration(long), Err(DurationError::TooLong { .. })), "{long}");
        }
        assert!(parse_duration("604801").unwrap_err().to_string().contains("longer than 7 days"));
    }

    #[test]
    fn a_rate_has_a_period_only_down_to_one_per_7_days() {
        assert_eq!(super::period_of(4.0), Some(Duration::from_millis(250)));
        assert_eq!(super::period_of(1.0 / 604_800.0), Some(MAX_DURATION));
        // 1e-320 per second once panicked converting its period to a Duration.
        for bad in [1e-320, 1e-20, 1.0 / 604_801.0, 0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(super::period_of(bad), None, "{bad}");
        }
    }
}
