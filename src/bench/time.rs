//! The duration flags (`--seconds 2s`, `--idle-seconds 500ms`: exit 2 naming the flag), and,
//! re-exported from [`crate::time`], the wall-clock names and stamps and the duration grammar.

pub use crate::time::*;

/// A positive duration flag (`--seconds 2s`, `--idle-seconds 500ms`; a plain number is
/// seconds), exit 2 naming the flag.
pub fn positive_duration(flag: &str, value: &str) -> Result<std::time::Duration, crate::error::Error> {
    positive(flag, duration(flag, value)?)
}

/// A duration flag's value, refused when zero (exit 2 naming the flag).
pub fn positive(flag: &str, d: std::time::Duration) -> Result<std::time::Duration, crate::error::Error> {
    if d.is_zero() {
        return Err(crate::error::Error::input(format!("{flag} must be longer than zero")));
    }
    Ok(d)
}

/// A duration flag that may be zero, exit 2 naming the flag.
pub fn duration(flag: &str, value: &str) -> Result<std::time::Duration, crate::error::Error> {
    parse_duration(value).map_err(|e| crate::error::Error::input(format!("{flag} `{value}`: {e}")))
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
