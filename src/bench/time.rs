//! Wall-clock names and stamps: `speed-20261129T151500Z` file stems, ISO-8601 UTC times and
//! Unix seconds. Timed intervals never use these (the protocol's monotonic clock does).

use std::time::{SystemTime, UNIX_EPOCH};

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

/// A positive duration flag (`--seconds 2s`, `--idle-seconds 500ms`; a plain number is
/// seconds), exit 2 naming the flag.
pub fn positive_duration(flag: &str, value: &str) -> Result<std::time::Duration, super::BenchError> {
    positive(flag, duration(flag, value)?)
}

/// A duration flag's value, refused when zero (exit 2 naming the flag).
pub fn positive(flag: &str, d: std::time::Duration) -> Result<std::time::Duration, super::BenchError> {
    if d.is_zero() {
        return Err(super::BenchError::Input(format!("{flag} must be longer than zero")));
    }
    Ok(d)
}

/// A duration flag that may be zero, exit 2 naming the flag.
pub fn duration(flag: &str, value: &str) -> Result<std::time::Duration, super::BenchError> {
    crate::power::parse_duration(value)
        .map_err(|e| super::BenchError::Input(format!("{flag} `{value}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::{civil_utc, iso_utc};

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
    fn duration_flags_name_themselves() {
        use super::{duration, positive_duration};
        assert_eq!(positive_duration("--seconds", "500ms").unwrap().as_millis(), 500);
        assert_eq!(positive_duration("--seconds", "2").unwrap().as_secs(), 2);
        let e = positive_duration("--seconds", "0").unwrap_err().to_string();
        assert_eq!(e, "--seconds must be longer than zero");
        assert!(duration("--idle-discard", "0s").unwrap().is_zero());
        assert!(duration("--x", "soon").unwrap_err().to_string().starts_with("--x `soon`: "));
    }
}
