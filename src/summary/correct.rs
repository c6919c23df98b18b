//! `summary --correct`: the header field a metadata correction names, found by its dotted
//! path through the header's JSON before anything is appended.

/// Walk a dotted path (`host.cpu_model`, `arms.1.precision`) through the header's JSON.
pub fn resolve<'v>(value: &'v serde_json::Value, path: &str) -> Result<&'v serde_json::Value, String> {
    let mut at = value;
    for (depth, seg) in path.split('.').enumerate() {
        // where the walk is, in words: the header itself before the first segment
        let here = match depth {
            0 => "the header".to_string(),
            _ => format!("`{}`", path.split('.').take(depth).collect::<Vec<_>>().join(".")),
        };
        at = match at {
            serde_json::Value::Object(m) => m.get(seg).ok_or_else(|| {
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                format!("`{seg}` is not a key of {here} (keys: {})", keys.join(", "))
            })?,
            serde_json::Value::Array(a) => {
                seg.parse::<usize>().ok().and_then(|i| a.get(i)).ok_or_else(|| match a.len() {
                    0 => format!("{here} is empty: it has no element `{seg}`"),
                    n => format!("`{seg}` is not an index of {here} (0 to {})", n - 1),
                })?
            }
            _ => return Err(format!("{here} is a value, it has no field `{seg}`")),
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
            .contains("`gpu` is not a key of `host` (keys: cpu_model)"));
        assert!(resolve(&v, "arms.3").unwrap_err().contains("not an index"));
        assert_eq!(
            resolve(&v, "sensor.device").unwrap_err(),
            "`sensor` is not a key of the header (keys: host, arms)"
        );
        assert!(resolve(&v, "host.cpu_model.x").unwrap_err().contains("is a value"));
    }
}
