//! Request documents: `{"state": ..., "questions": {...}}` with the reference's optional per-call
//! `max_len`, `head_max_len` and `min_confidence`.

use serde_json::{Map, Value};

use super::decode::MinConfidence;
use super::host::CallOptions;
use super::pyjson::str_repr;
use crate::error::Error;

/// Split a request object into state, questions and per-call options. `Err` is bad input
/// (exit 2) saying which field is wrong and what it must be.
pub fn parse_request(item: Value) -> Result<(Value, Value, CallOptions), Error> {
    let Value::Object(mut m) = item else {
        return Err(Error::input("must be an object {\"state\": ..., \"questions\": {...}}"));
    };
    let state = m.remove("state").ok_or_else(|| {
        Error::input("`state` is missing; add the text, dict or list the questions are about")
    })?;
    let questions = m
        .remove("questions")
        .ok_or_else(|| Error::input("`questions` is missing; add a dict of question id -> definition"))?;
    let budget = |m: &Map<String, Value>, key: &str| -> Result<Option<usize>, Error> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(|n| Some(n as usize))
                .ok_or_else(|| Error::input(format!("`{key}` must be a non-negative integer, got {v}"))),
        }
    };
    let mut opts = CallOptions {
        max_len: budget(&m, "max_len")?,
        head_max_len: budget(&m, "head_max_len")?,
        ..CallOptions::default()
    };
    if let Some(v) = m.get("min_confidence").filter(|v| !v.is_null()) {
        opts.min_confidence =
            Some(MinConfidence::parse(v).map_err(|e| Error::input(e.to_string()).because(e))?);
    }
    for key in m.keys() {
        if !matches!(key.as_str(), "max_len" | "head_max_len" | "min_confidence") {
            return Err(Error::input(format!(
                "unknown field {}; a request holds state, questions, max_len, head_max_len, min_confidence",
                str_repr(key)
            )));
        }
    }
    Ok((state, questions, opts))
}

/// The largest request, questions or workload file read, in bytes (64 MiB): these are small
/// JSON documents (the committed ones are under 10 kB), read whole. A larger input, or one
/// that never ends (`/dev/zero`), is refused once this many bytes are read, without reading
/// the rest.
pub const MAX_INPUT_FILE_BYTES: u64 = 64 << 20;

/// A request, questions or workload file that cannot be read: always bad input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    /// The file cannot be opened or read.
    #[error("{path}: cannot read it ({source})")]
    Io {
        /// The file as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// More than [`MAX_INPUT_FILE_BYTES`].
    #[error("{path}: more than {limit} bytes (64 MiB) without an end; a request or workload file is a small JSON document: is this the right file? (the rest was not read)", limit = MAX_INPUT_FILE_BYTES)]
    TooLarge {
        /// The file as given.
        path: String,
    },
    /// Not UTF-8 text.
    #[error("{path}: not UTF-8 text ({source}); a request or workload file is JSON")]
    NotText {
        /// The file as given.
        path: String,
        /// Where the text breaks.
        source: std::str::Utf8Error,
    },
}

/// Read a small JSON input file whole, never more than [`MAX_INPUT_FILE_BYTES`] + 1 bytes of it
/// (a regular file larger than that is refused before reading).
pub fn read_input_file(path: &std::path::Path) -> Result<String, InputFileError> {
    read_input_file_limited(path, MAX_INPUT_FILE_BYTES)
}

fn read_input_file_limited(path: &std::path::Path, limit: u64) -> Result<String, InputFileError> {
    use std::io::Read;
    let p = || path.display().to_string();
    let io = |source| InputFileError::Io { path: p(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if meta.is_dir() {
        return Err(io(std::io::Error::other("is a folder, not a file")));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(InputFileError::TooLarge { path: p() });
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputFileError::TooLarge { path: p() });
    }
    String::from_utf8(bytes).map_err(|e| InputFileError::NotText { path: p(), source: e.utf8_error() })
}

#[cfg(test)]
mod request_tests {
    use super::*;
    use crate::error::{chain, Classify, Kind};
    use serde_json::json;

    #[test]
    fn a_bad_request_is_bad_input_naming_the_field() {
        let (state, questions, opts) =
            parse_request(json!({"state": "s", "questions": {}, "max_len": 32, "min_confidence": 0.5}))
                .unwrap();
        assert_eq!(
            (state, questions, opts.max_len, opts.head_max_len),
            (json!("s"), json!({}), Some(32), None)
        );
        for (item, want) in [
            (json!([1]), "must be an object {\"state\": ..., \"questions\": {...}}"),
            (json!({"questions": {}}), "`state` is missing; add the text, dict or list the questions are about"),
            (json!({"state": "s", "questions": {}, "max_len": -1}), "`max_len` must be a non-negative integer, got -1"),
            (
                json!({"state": "s", "questions": {}, "batch": 2}),
                "unknown field 'batch'; a request holds state, questions, max_len, head_max_len, min_confidence",
            ),
        ] {
            let e = parse_request(item).unwrap_err();
            assert_eq!((e.kind(), e.to_string().as_str()), (Kind::Input, want));
        }
        // a bad threshold keeps the validator's error as its cause, printed once
        let e = parse_request(json!({"state": "s", "questions": {}, "min_confidence": 2})).unwrap_err();
        let cause = std::error::Error::source(&e).expect("the validator's error");
        assert!(cause.is::<crate::laya::question::RequestError>(), "{cause:?}");
        assert_eq!(chain(&e), e.to_string());
        assert_eq!(e.to_string(), "min_confidence must be a float in [0.0, 1.0], got 2");
    }
}

#[cfg(test)]
mod input_file_tests {
    use super::*;

    #[test]
    fn an_input_file_is_read_whole_up_to_its_limit_and_refused_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.json");
        std::fs::write(&path, "{\"a\": 1}").unwrap();
        assert_eq!(read_input_file_limited(&path, 8).unwrap(), "{\"a\": 1}");
        let e = read_input_file_limited(&path, 7).unwrap_err();
        assert!(matches!(e, InputFileError::TooLarge { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("{}: more than", path.display())), "{e}");
        std::fs::write(&path, [b'{', 0xff, b'}']).unwrap();
        assert!(matches!(read_input_file_limited(&path, 8), Err(InputFileError::NotText { .. })));
        assert!(matches!(read_input_file_limited(dir.path(), 8), Err(InputFileError::Io { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_device_is_refused_at_the_limit() {
        let e = read_input_file_limited(std::path::Path::new("/dev/zero"), 1 << 10).unwrap_err();
        assert!(matches!(e, InputFileError::TooLarge { .. }), "{e}");
    }
}
