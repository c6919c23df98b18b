//! `summary --correct`: the header field a metadata correction names, found by its dotted
//! path through the header's JSON before anything is appended.

use crate::error::{Classify, Kind};

/// Why a dotted path names no field of the header. `here` is where the walk stopped, in
/// words: `the header` itself, or the path walked so far in backticks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FieldError {
    /// An object without that key.
    #[error("`{segment}` is not a key of {here} (keys: {})", keys.join(", "))]
    NoKey {
        /// The segment asked for.
        segment: String,
        /// Where the walk is.
        here: String,
        /// The object's keys.
        keys: Vec<String>,
    },
    /// An empty array.
    #[error("{here} is empty: it has no element `{segment}`")]
    Empty {
        /// The segment asked for.
        segment: String,
        /// Where the walk is.
        here: String,
    },
    /// An array without that index.
    #[error("`{segment}` is not an index of {here} (0 to {last})")]
    NoIndex {
        /// The segment asked for.
        segment: String,
        /// Where the walk is.
        here: String,
        /// The array's last index.
        last: usize,
    },
    /// A value (string, number, …) has no fields.
    #[error("{here} is a value, it has no field `{segment}`")]
    Value {
        /// The segment asked for.
        segment: String,
        /// Where the walk is.
        here: String,
    },
}

impl Classify for FieldError {
    /// The input's: `--field` names no field.
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

/// Walk a dotted path (`host.cpu_model`, `arms.1.precision`) through the header's JSON.
pub fn resolve<'v>(value: &'v serde_json::Value, path: &str) -> Result<&'v serde_json::Value, FieldError> {
    let mut at = value;
    for (depth, seg) in path.split('.').enumerate() {
        // where the walk is, in words: the header itself before the first segment
        let here = match depth {
            0 => "the header".to_string(),
            _ => format!("`{}`", path.split('.').take(depth).collect::<Vec<_>>().join(".")),
        };
        let segment = seg.to_string();
        at = match at {
            serde_json::Value::Object(m) => m.get(seg).ok_or_else(|| FieldError::NoKey {
                segment,
                here,
                keys: m.keys().cloned().collect(),
            })?,
            serde_json::Value::Array(a) => {
                seg.parse::<usize>().ok().and_then(|i| a.get(i)).ok_or_else(|| match a.len() {
                    0 => FieldError::Empty { segment, here },
                    n => FieldError::NoIndex { segment, here, last: n - 1 },
                })?
            }
            _ => return Err(FieldError::Value { segment, here }),
        };
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_resolve_through_objects_and_arrays() {
        let v = serde_json::json!({"host": {"cpu_model": "x"}, "arms": [{"precision": "fp16"}]});
        assert_eq!(resolve(&v, "host.cpu_model").unwrap(), "x");
        assert_eq!(resolve(&v, "arms.0.precision").unwrap(), "fp16");
        assert!(resolve(&v, "host.gpu")
            .unwrap_err()
            .to_string()
            .contains("`gpu` is not a key of `host` (keys: cpu_model)"));
        assert!(resolve(&v, "arms.3").unwrap_err().to_string().contains("not an index"));
        assert_eq!(
            resolve(&v, "sensor.device").unwrap_err().to_string(),
            "`sensor` is not a key of the header (keys: host, arms)"
        );
        assert!(resolve(&v, "host.cpu_model.x").unwrap_err().to_string().contains("is a value"));
    }
}
