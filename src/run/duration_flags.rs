//! The duration flags (`--seconds 2s`, `--idle-seconds 500ms`: exit 2 naming the flag), on the
//! duration grammar of [`crate::time`] (a bottom module, which names no error type of the crate).

use std::time::Duration;

use crate::error::Error;
use crate::time::parse_duration;

/// A positive duration flag (`--seconds 2s`, `--idle-seconds 500ms`; a plain number is
/// seconds), exit 2 naming the flag.
pub fn positive_duration(flag: &str, value: &str) -> Result<Duration, Error> {
    positive(flag, duration(flag, value)?)
}

/// A duration flag's value, refused when zero (exit 2 naming the flag).
pub fn positive(flag: &str, d: Duration) -> Result<Duration, Error> {
    if d.is_zero() {
        return Err(Error::input(format!("{flag} must be longer than zero")));
    }
    Ok(d)
}

/// A duration flag that may be zero, exit 2 naming the flag.
pub fn duration(flag: &str, value: &str) -> Result<Duration, Error> {
    parse_duration(value).map_err(|e| Error::input(format!("{flag} `{value}`: {e}")))
}

#[cfg(test)]
mod tests {
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
