//! The load-time signature checks: a package's declared interface (or, on macOS, the loaded
//! model's) against what the bundle format, its manifest and the configs promise and what the
//! adapter feeds and reads.

use serde_json::Value;

use super::description::{DeclaredFeature, Flexibility, ModelDescription};
use super::{py_shapes, py_tuple, AneShape, ArrayType, FeatureSig, FormatError, ANE_SLOTS};
use crate::laya::batch::{ShapeCaps, ShapeMode};

/// The ANE package's inputs must be exactly the five tensors of `shape`, FP16 or FP32 (the
/// reference's check, then which input differs and how).
pub fn check_ane_signature(shape: AneShape, actual: &[FeatureSig]) -> Result<(), FormatError> {
    let expected = shape.input_shapes();
    let mismatch = |detail: String| {
        FormatError::Signature(format!(
            "Package signature mismatch: expected {}, got {}; {detail}. The package does not belong to this bundle's config; fetch the bundle again",
            py_shapes(expected.iter().map(|(n, s)| (*n, s.as_slice()))),
            py_shapes(actual.iter().map(|f| (f.name.as_str(), f.shape.as_slice()))),
        ))
    };
    for (name, dims) in &expected {
        match actual.iter().find(|f| f.name == *name) {
            None => return Err(mismatch(format!("input `{name}` is missing"))),
            Some(f) if f.shape != dims => {
                return Err(mismatch(format!(
                    "input `{name}` has shape {}, expected {}",
                    py_tuple(&f.shape),
                    py_tuple(dims)
                )))
            }
            Some(f) if !matches!(f.dtype, ArrayType::Float16 | ArrayType::Float32) => {
                return Err(mismatch(format!("input `{name}` is {}, expected float16", f.dtype.name())))
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = actual.iter().find(|f| !expected.iter().any(|(n, _)| *n == f.name)) {
        return Err(mismatch(format!("input `{}` is not part of the ANE signature", extra.name)));
    }
    Ok(())
}

/// The declared multi-array of `f`, or why it is not one the adapter can feed or read.
fn declared_array(f: &DeclaredFeature, what: &str) -> Result<ArrayType, FormatError> {
    f.array_type().filter(|_| f.kind == "multi_array").ok_or_else(|| {
        FormatError::Signature(format!(
            "Package signature mismatch: {what} `{}` is declared as {} with data type {}, not a multi-array the adapter can {}",
            f.name,
            f.kind,
            f.data_type.as_deref().unwrap_or("unset"),
            if what == "input" { "feed" } else { "read" }
        ))
    })
}

/// The declared interface of an ANE package (read from its specification, on any OS) against
/// what the adapter feeds and reads: exactly the five inputs of `shape`, fixed (no flexible
/// shapes), FP16 or FP32 ([`check_ane_signature`]); two FP16/FP32 outputs told apart by shape,
/// logits `(1, 1, 1, 32)` and the pooled CLS `(1, D, 1, 1)`.
pub fn check_declared_ane(desc: &ModelDescription, shape: AneShape) -> Result<(), FormatError> {
    for f in &desc.inputs {
        declared_array(f, "input")?;
    }
    let sigs: Vec<FeatureSig> = desc.inputs.iter().map(DeclaredFeature::sig).collect();
    check_ane_signature(shape, &sigs)?;
    if let Some(f) = desc.inputs.iter().find(|f| f.flexibility != Flexibility::Fixed) {
        return Err(FormatError::Signature(format!(
            "Package signature mismatch: input `{}` declares flexible shapes ({}); the ANE signature is fixed at {}. Re-export the bundle",
            f.name,
            describe_flexibility(&f.flexibility),
            py_tuple(&f.shape)
        )));
    }
    for f in &desc.outputs {
        match declared_array(f, "output")? {
            ArrayType::Float16 | ArrayType::Float32 => {}
            other => {
                return Err(FormatError::Signature(format!(
                    "Package signature mismatch: output `{}` is {}; the ANE host reads float16 or float32 outputs",
                    f.name,
                    other.name()
                )))
            }
        }
    }
    identify_ane_outputs(desc.outputs.iter().map(|f| (f.name.as_str(), f.shape.as_slice())), shape.width)
        .map(|_| ())
}

fn describe_flexibility(f: &Flexibility) -> String {
    match f {
        Flexibility::Fixed => "fixed".into(),
        Flexibility::Enumerated(shapes) => {
            format!("enumerated {}", shapes.iter().map(|s| py_tuple(s)).collect::<Vec<_>>().join(", "))
        }
        Flexibility::Range(dims) => format!(
            "range {}",
            dims.iter()
                .map(|d| match d.upper {
                    Some(u) => format!("{}..{u}", d.lower),
                    None => format!("{}..", d.lower),
                })
                .collect::<Vec<_>>()
                .join(" x ")
        ),
    }
}

/// The declared interface of an ordinary export against its `coreml_config.json` shapes and
/// what the adapter feeds and reads: [`check_ordinary_signature`] on the default shapes; every
/// `[B, L]` input accepts exactly the manifest's lengths (`shape.lengths` for enumerated, the
/// `min_length..max_length` range, or the one fixed length); the `[B, K]` and `[B]` inputs are
/// fixed; `action_logits` is `(B, actions)`; outputs are float16 or float32.
pub fn check_declared_ordinary(
    desc: &ModelDescription,
    caps: &ShapeCaps,
    parallel: bool,
    actions: usize,
) -> Result<(), FormatError> {
    for f in &desc.inputs {
        declared_array(f, "input")?;
    }
    for f in &desc.outputs {
        declared_array(f, "output")?;
    }
    let sigs = |v: &[DeclaredFeature]| v.iter().map(DeclaredFeature::sig).collect::<Vec<_>>();
    check_ordinary_signature(caps, parallel, &sigs(&desc.inputs), &sigs(&desc.outputs))?;
    let b = caps.batch_size;
    let disagree = |name: &str, field: &str, manifest: String, declared: &Flexibility| {
        FormatError::Signature(format!(
            "coreml_config.json {field} {manifest} disagrees with input `{name}` of the package, which declares {} shapes; the manifest does not describe this package, re-export the bundle",
            describe_flexibility(declared)
        ))
    };
    for f in desc.inputs.iter() {
        let name = f.name.as_str();
        let sequence = matches!(name, "input_ids" | "attention_mask" | "position_ids" | "option_ids");
        if !sequence {
            if f.flexibility != Flexibility::Fixed {
                return Err(FormatError::Signature(format!(
                    "Package signature mismatch: input `{name}` declares {} shapes; the laya-coreml signature fixes it at {}",
                    describe_flexibility(&f.flexibility),
                    py_tuple(&f.shape)
                )));
            }
            continue;
        }
        match &caps.mode {
            ShapeMode::Enumerated(lengths) => {
                let mut want: Vec<Vec<usize>> = lengths.iter().map(|&l| vec![b, l]).collect();
                want.sort();
                let mut got = f.shapes().unwrap_or_default();
                got.sort();
                got.dedup();
                if got != want {
                    return Err(disagree(name, "shape.lengths", format!("{lengths:?}"), &f.flexibility));
                }
            }
            ShapeMode::Range => {
                let ok = matches!(&f.flexibility, Flexibility::Range(d) if d.len() == 2
                    && d[0].lower == b && d[0].upper == Some(b)
                    && d[1].lower == caps.min_length && d[1].upper == Some(caps.max_length));
                if !ok {
                    let m = format!("{}..{} (mode range)", caps.min_length, caps.max_length);
                    return Err(disagree(name, "shape.min_length..max_length", m, &f.flexibility));
                }
            }
            ShapeMode::Fixed => {
                if f.flexibility != Flexibility::Fixed || f.shape != [b, caps.max_length] {
                    let m = format!("{} (fixed)", caps.max_length);
                    return Err(disagree(name, "shape.max_length", m, &f.flexibility));
                }
            }
        }
    }
    if let Some(f) = desc.outputs.iter().find(|f| f.name == "action_logits") {
        if f.shape.get(1) != Some(&actions) {
            return Err(FormatError::Signature(format!(
                "Package signature mismatch: output `action_logits` has shape {}, expected ({b}, {actions}) for the {actions} actions of rl_agent_config.json (act_costs + 1)",
                py_tuple(&f.shape)
            )));
        }
    }
    for f in &desc.outputs {
        if !matches!(f.array_type(), Some(ArrayType::Float16 | ArrayType::Float32)) {
            return Err(FormatError::Signature(format!(
                "Package signature mismatch: output `{}` is {}; the adapter reads float16 or float32 outputs",
                f.name,
                f.data_type.as_deref().unwrap_or("unset")
            )));
        }
    }
    Ok(())
}

/// Names of the ordinary export's inputs, in the order the adapter feeds them
/// (`backend::coreml::ordinary_inputs`).
pub fn ordinary_input_names(parallel: bool) -> &'static [&'static str] {
    const SEQ: [&str; 7] =
        ["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype", "position_ids", "option_ids"];
    if parallel {
        &SEQ
    } else {
        &SEQ[..5]
    }
}

/// The ordinary export's inputs: `[B, L]`, `[B, K]` and `[B]` int32, `L` flexible; outputs
/// `logits [B, K]` and `action_logits [B, A]`. Checks names, types and the fixed dimensions.
pub fn check_ordinary_signature(
    caps: &ShapeCaps,
    parallel: bool,
    inputs: &[FeatureSig],
    outputs: &[FeatureSig],
) -> Result<(), FormatError> {
    let (b, k) = (caps.batch_size, caps.max_options);
    let mismatch = |what: &str, name: &str, detail: String| {
        FormatError::Signature(format!(
            "Package signature mismatch: {what} `{name}` {detail}; re-export the bundle with laya-coreml 0.5 (laya-coreml format, option layout {})",
            if parallel { "parallel" } else { "sequential" }
        ))
    };
    for name in ordinary_input_names(parallel) {
        let f = inputs
            .iter()
            .find(|f| f.name == *name)
            .ok_or_else(|| mismatch("input", name, "is missing".into()))?;
        let want: Option<usize> = match *name {
            "marker_pos" | "marker_mask" => Some(k),
            _ => None,
        };
        let rank = if *name == "qtype" { 1 } else { 2 };
        let shape_ok = f.shape.len() == rank && f.shape[0] == b && want.is_none_or(|k| f.shape[1] == k);
        if !shape_ok {
            let expected = match (*name, want) {
                ("qtype", _) => format!("({b},)"),
                (_, Some(k)) => format!("({b}, {k})"),
                _ => format!("({b}, L)"),
            };
            return Err(mismatch(
                "input",
                name,
                format!("has shape {}, expected {expected}", py_tuple(&f.shape)),
            ));
        }
        if f.dtype != ArrayType::Int32 {
            return Err(mismatch("input", name, format!("is {}, expected int32", f.dtype.name())));
        }
    }
    if let Some(extra) = inputs.iter().find(|f| !ordinary_input_names(parallel).contains(&f.name.as_str())) {
        return Err(mismatch("input", &extra.name, "is not part of the laya-coreml signature".into()));
    }
    for name in ["logits", "action_logits"] {
        let f = outputs
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| mismatch("output", name, "is missing".into()))?;
        let ok = f.shape.len() == 2 && f.shape[0] == b && (name != "logits" || f.shape[1] == k);
        if !ok {
            return Err(mismatch(
                "output",
                name,
                format!(
                    "has shape {}, expected ({b}, {})",
                    py_tuple(&f.shape),
                    if name == "logits" { k.to_string() } else { "A".into() }
                ),
            ));
        }
    }
    Ok(())
}

/// The ordinary export's shapes from its `coreml_config.json` `shape` object (docs/host-path.md
/// §1.6): `mode` enumerated (with `lengths`), range, or fixed (also when `flexible` is false).
pub fn ordinary_caps(manifest: &Value, file: &str) -> Result<ShapeCaps, FormatError> {
    let bad = |detail: &str| FormatError::Bundle { path: file.to_string(), detail: detail.to_string() };
    let shape = manifest.get("shape").and_then(Value::as_object).ok_or_else(|| bad("`shape` is missing"))?;
    let get = |key: &str| shape.get(key).and_then(Value::as_u64).map(|v| v as usize);
    let batch_size = get("batch_size")
        .filter(|&b| b > 0)
        .ok_or_else(|| bad("shape.batch_size must be a positive integer"))?;
    let max_length = get("max_length")
        .filter(|&l| l > 0)
        .ok_or_else(|| bad("shape.max_length must be a positive integer"))?;
    let min_length = get("min_length").unwrap_or(16).min(max_length);
    let max_options = get("max_options").unwrap_or(32);
    let flexible = shape.get("flexible").and_then(Value::as_bool).unwrap_or(true);
    let mode = match (flexible, shape.get("mode").and_then(Value::as_str)) {
        (false, _) | (_, Some("fixed")) => ShapeMode::Fixed,
        (_, Some("range")) => ShapeMode::Range,
        (_, Some("enumerated")) | (_, None) => {
            let lengths: Vec<usize> = shape
                .get("lengths")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_u64)
                        .map(|v| v as usize)
                        .filter(|&l| l <= max_length)
                        .collect()
                })
                .unwrap_or_default();
            if lengths.is_empty() {
                return Err(bad("shape.lengths must list the enumerated lengths"));
            }
            ShapeMode::Enumerated(lengths)
        }
        (_, Some(other)) => {
            return Err(bad(&format!("shape.mode `{other}` is not enumerated, range or fixed")));
        }
    };
    Ok(ShapeCaps { batch_size, max_length, min_length, max_options, mode })
}

/// Which outputs of the ANE package are the option logits `(1, 1, 1, 32)` and the pooled CLS
/// `(1, D, 1, 1)`: like the reference, the first output whose `shape[1] == 1` is the logits and
/// the first whose `shape[1] != 1` is the CLS; both must also have the right element counts.
pub fn identify_ane_outputs<'a, I>(shapes: I, width: usize) -> Result<(usize, usize), FormatError>
where
    I: IntoIterator<Item = (&'a str, &'a [usize])>,
    I::IntoIter: Clone,
{
    let shapes = shapes.into_iter();
    let dim1 = |s: &[usize]| s.get(1).copied();
    let logits = shapes.clone().position(|(_, s)| dim1(s) == Some(1));
    let pooled = shapes.clone().position(|(_, s)| dim1(s).is_some_and(|d| d != 1));
    let numel = |i: usize| shapes.clone().nth(i).map_or(0, |(_, s)| s.iter().product::<usize>());
    match (logits, pooled) {
        (Some(l), Some(p)) if numel(l) == ANE_SLOTS && numel(p) == width => Ok((l, p)),
        _ => Err(FormatError::Signature(format!(
            "the ANE package must output logits (1, 1, 1, {ANE_SLOTS}) and the pooled CLS (1, {width}, 1, 1) (told apart by shape[1]); it outputs {}. Re-export the bundle with laya-coreml 0.5",
            shapes.map(|(n, s)| format!("{n} {s:?}")).collect::<Vec<_>>().join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ane_outputs_are_told_apart_by_the_second_dimension() {
        let logits = [1usize, 1, 1, 32];
        let cls = [1usize, 8, 1, 1];
        assert_eq!(identify_ane_outputs([("var_1", &cls[..]), ("var_2", &logits[..])], 8).unwrap(), (1, 0));
        assert_eq!(identify_ane_outputs([("a", &logits[..]), ("b", &cls[..])], 8).unwrap(), (0, 1));
        let e = identify_ane_outputs([("a", &logits[..])], 8).unwrap_err().to_string();
        assert!(e.contains("a [1, 1, 1, 32]") && e.contains("pooled CLS (1, 8, 1, 1)"), "{e}");
        assert!(identify_ane_outputs([("a", &logits[..]), ("b", &[1, 4, 1, 1][..])], 8).is_err());
    }
}
