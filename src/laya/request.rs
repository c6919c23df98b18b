//! Request documents: `{"state": ..., "questions": {...}}` with the reference's optional per-call
//! `max_len`, `head_max_len` and `min_confidence`.

use serde_json::{Map, Value};

use super::decode::MinConfidence;
use super::host::CallOptions;
use super::pyjson::str_repr;

/// Split a request object into state, questions and per-call options.
pub fn parse_request(item: Value) -> Result<(Value, Value, CallOptions), String> {
    let Value::Object(mut m) = item else {
        return Err("must be an object {\"state\": ..., \"questions\": {...}}".into());
    };
    let state =
        m.remove("state").ok_or("`state` is missing; add the text, dict or list the questions are about")?;
    let questions =
        m.remove("questions").ok_or("`questions` is missing; add a dict of question id -> definition")?;
    let budget = |m: &Map<String, Value>, key: &str| -> Result<Option<usize>, String> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(|n| Some(n as usize))
                .ok_or_else(|| format!("`{key}` must be a non-negative integer, got {v}")),
        }
    };
    let mut opts = CallOptions {
        max_len: budget(&m, "max_len")?,
        head_max_len: budget(&m, "head_max_len")?,
        ..CallOptions::default()
    };
    if let Some(v) = m.get("min_confidence").filter(|v| !v.is_null()) {
        opts.min_confidence = Some(MinConfidence::parse(v).map_err(|e| e.to_string())?);
    }
    for key in m.keys() {
        if !matches!(key.as_str(), "max_len" | "head_max_len" | "min_confidence") {
            return Err(format!(
                "unknown field {}; a request holds state, questions, max_len, head_max_len, min_confidence",
                str_repr(key)
            ));
        }
    }
    Ok((state, questions, opts))
}
