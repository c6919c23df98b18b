//! A Core ML package's model description, read on every OS: the declared inputs and outputs
//! (names, data types, default shapes, enumerated or ranged flexible shapes) of
//! `model.mlpackage/Data/<root item>/model.mlmodel`, a `CoreML.Specification.Model` protobuf.
//!
//! A small wire-format reader of our own, for just these fields (field numbers from
//! coremltools' `mlmodel/format/Model.proto` and `FeatureTypes.proto`, BSD-3-Clause):
//!
//! ```text
//! Model              { int32 specificationVersion = 1; ModelDescription description = 2; ... }
//! ModelDescription   { repeated FeatureDescription input = 1; repeated FeatureDescription output = 10; ... }
//! FeatureDescription { string name = 1; string shortDescription = 2; FeatureType type = 3; }
//! FeatureType        { oneof { ... ArrayFeatureType multiArrayType = 5; ... } bool isOptional = 1000; }
//! ArrayFeatureType   { repeated int64 shape = 1; ArrayDataType dataType = 2;
//!                      oneof { EnumeratedShapes enumeratedShapes = 21; ShapeRange shapeRange = 31; } ... }
//! EnumeratedShapes   { repeated Shape shapes = 1; }     Shape { repeated int64 shape = 1; }
//! ShapeRange         { repeated SizeRange sizeRanges = 1; }
//! SizeRange          { uint64 lowerBound = 1; int64 upperBound = 2; }   (negative: unbounded)
//! ```
//!
//! Every other field (the ML program itself, metadata) is skipped by its wire type. The data
//! type codes are `MLMultiArrayDataType`'s ([`ArrayType::from_code`]). Why not a protobuf
//! library: see docs/DEPENDENCIES.md.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ArrayType;

/// Why a package's description cannot be read, naming the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum DescriptionError {
    /// A file of the package is missing or unreadable.
    #[error("{path}: {detail}")]
    File {
        /// The file.
        path: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// A field of the protobuf holds a value of another type, out of range, or none at all.
    #[error("{path}: cannot read the model description at {field}: {detail}; the package is damaged, convert or fetch it again")]
    Wire {
        /// The `model.mlmodel` file.
        path: String,
        /// Dotted field path, e.g. `Model.description.input[2].type.multiArrayType.shape`.
        field: String,
        /// What was found.
        detail: String,
    },
    /// The protobuf's wire format itself is broken at `field` (a truncated or overlong value).
    #[error("{path}: cannot read the model description at {field}: {source}; the package is damaged, convert or fetch it again")]
    Malformed {
        /// The `model.mlmodel` file.
        path: String,
        /// Dotted field path of the message being read.
        field: String,
        /// What the wire reader found.
        source: WireError,
    },
}

/// What the protobuf wire reader found where a well-formed message has a value.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The buffer ends inside a varint.
    #[error("truncated varint at byte {at}")]
    TruncatedVarint {
        /// Offset of the missing byte.
        at: usize,
    },
    /// A varint that does not end within 10 bytes.
    #[error("varint longer than 10 bytes at byte {at}")]
    LongVarint {
        /// Offset past its 10th byte.
        at: usize,
    },
    /// A value longer than what is left of the buffer.
    #[error("{len} bytes announced at byte {at} but only {remain} remain")]
    Overrun {
        /// Bytes the value announces.
        len: usize,
        /// Where it starts.
        at: usize,
        /// Bytes left.
        remain: usize,
    },
    /// A length that does not fit in `usize`.
    #[error("length does not fit in memory")]
    LengthTooLarge,
    /// Field number 0, which protobuf does not allow.
    #[error("field number 0 at byte {at}")]
    FieldZero {
        /// Offset past the key.
        at: usize,
    },
    /// A group or unknown wire type.
    #[error("wire type {wire} (field {field}) is not used by Core ML specifications")]
    WireType {
        /// The wire type.
        wire: u64,
        /// The field it came with.
        field: u64,
    },
}

/// How a declared multi-array shape may vary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flexibility {
    /// Only the default shape.
    Fixed,
    /// One of these shapes (`enumeratedShapes`).
    Enumerated(Vec<Vec<usize>>),
    /// Each dimension in `[lower, upper]` (`shapeRange`; `upper` `None` = unbounded).
    Range(Vec<DimRange>),
}

/// One dimension's allowed sizes in a [`Flexibility::Range`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimRange {
    /// Smallest size.
    pub lower: usize,
    /// Largest size (inclusive), `None` when unbounded.
    pub upper: Option<usize>,
}

/// One declared input or output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredFeature {
    /// Feature name.
    pub name: String,
    /// `multi_array`, or the other feature type's name (`int64`, `double`, `string`, `image`,
    /// `dictionary`, `sequence`, `state`, `unknown`).
    pub kind: String,
    /// Element type of a multi-array (`float16`, `float32`, `float64`, `int32`, or
    /// `data type 0x…`); `None` for other kinds or an unset type.
    pub data_type: Option<String>,
    /// The required or default shape (empty when undeclared).
    pub shape: Vec<usize>,
    /// How the shape may vary.
    pub flexibility: Flexibility,
    /// `isOptional`.
    pub optional: bool,
}

impl DeclaredFeature {
    /// The multi-array element type, when this is a multi-array with a set type.
    pub fn array_type(&self) -> Option<ArrayType> {
        let t = self.data_type.as_deref()?;
        [ArrayType::Float16, ArrayType::Float32, ArrayType::Float64, ArrayType::Int32]
            .into_iter()
            .find(|a| a.name() == t)
            .or_else(|| {
                t.strip_prefix("data type 0x")
                    .and_then(|h| isize::from_str_radix(h, 16).ok())
                    .map(ArrayType::Other)
            })
    }
    /// Every shape the feature accepts, when that is a finite list (fixed or enumerated).
    pub fn shapes(&self) -> Option<Vec<Vec<usize>>> {
        match &self.flexibility {
            Flexibility::Fixed => Some(vec![self.shape.clone()]),
            Flexibility::Enumerated(s) => Some(s.clone()),
            Flexibility::Range(_) => None,
        }
    }
    /// One line: `name type (d0, d1, ...)` and how the shape may vary, e.g.
    /// `input_ids int32 (1, 128), enumerated (1, 16) (1, 32) (1, 128)`.
    pub fn summary(&self) -> String {
        let tuple = super::py_tuple;
        let ty = match (&self.data_type, self.kind.as_str()) {
            (Some(t), "multi_array") => t.clone(),
            (_, kind) => kind.to_string(),
        };
        let flex = match &self.flexibility {
            Flexibility::Fixed => String::new(),
            Flexibility::Enumerated(shapes) => {
                format!(", enumerated {}", shapes.iter().map(|s| tuple(s)).collect::<Vec<_>>().join(" "))
            }
            Flexibility::Range(dims) => format!(
                ", range {}",
                dims.iter()
                    .map(|d| format!("{}..{}", d.lower, d.upper.map_or("".into(), |u| u.to_string())))
                    .collect::<Vec<_>>()
                    .join(" x ")
            ),
        };
        format!("{} {ty} {}{flex}", self.name, tuple(&self.shape))
    }
    /// As a [`super::FeatureSig`] (name, default shape, element type).
    pub fn sig(&self) -> super::FeatureSig {
        super::FeatureSig {
            name: self.name.clone(),
            shape: self.shape.clone(),
            dtype: self.array_type().unwrap_or(ArrayType::Other(-1)),
        }
    }
}

/// The declared interface of one package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelDescription {
    /// The file it was read from.
    pub file: String,
    /// `specificationVersion`.
    pub specification_version: i64,
    /// Declared inputs, in file order.
    pub inputs: Vec<DeclaredFeature>,
    /// Declared outputs, in file order.
    pub outputs: Vec<DeclaredFeature>,
}

/// The package's root model specification: `Manifest.json`'s `rootModelIdentifier` entry, under
/// `Data/`.
pub fn spec_path(package: &Path) -> Result<PathBuf, DescriptionError> {
    let manifest = package.join("Manifest.json");
    let bad = |detail: String| DescriptionError::File { path: manifest.display().to_string(), detail };
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| bad(format!("cannot read ({e}); a .mlpackage holds Manifest.json")))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON ({e})")))?;
    let root = v
        .get("rootModelIdentifier")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("`rootModelIdentifier` is missing; the package names no model".into()))?;
    let rel = v
        .get("itemInfoEntries")
        .and_then(|e| e.get(root))
        .and_then(|e| e.get("path"))
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("`itemInfoEntries.{root}.path` is missing (the root model's file)")))?;
    let p = Path::new(rel);
    if rel.is_empty()
        || rel.contains('\\')
        || !p.components().all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err(bad(format!(
            "`itemInfoEntries.{root}.path` {rel:?} is not a relative path inside Data/"
        )));
    }
    Ok(package.join("Data").join(p))
}

/// Read the description of an `.mlpackage` folder.
pub fn read_package(package: &Path) -> Result<ModelDescription, DescriptionError> {
    let path = spec_path(package)?;
    let bytes = std::fs::read(&path).map_err(|e| DescriptionError::File {
        path: path.display().to_string(),
        detail: format!("cannot read the model specification ({e})"),
    })?;
    parse_model(&bytes, &path.display().to_string())
}

/// One field of a protobuf message.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(WireError::TruncatedVarint { at: self.pos });
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::LongVarint { at: self.pos })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or(WireError::Overrun {
            len: n,
            at: self.pos,
            remain: self.buf.len() - self.pos,
        })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next `(field number, value)`, or `None` at the end.
    fn next_field(&mut self) -> Result<Option<(u64, Wire<'a>)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (field, wire) = (key >> 3, key & 7);
        if field == 0 {
            return Err(WireError::FieldZero { at: self.pos });
        }
        let value = match wire {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed64
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| WireError::LengthTooLarge)?;
                Wire::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => return Err(WireError::WireType { wire: other, field }),
        };
        Ok(Some((field, value)))
    }
}

struct Ctx<'f> {
    file: &'f str,
}

impl Ctx<'_> {
    fn err(&self, field: &str, detail: impl Into<String>) -> DescriptionError {
        DescriptionError::Wire {
            path: self.file.to_string(),
            field: field.to_string(),
            detail: detail.into(),
        }
    }

    fn malformed(&self, field: &str, source: WireError) -> DescriptionError {
        DescriptionError::Malformed { path: self.file.to_string(), field: field.to_string(), source }
    }

    /// Walk a message's fields, calling `f(field number, value)`.
    fn each<'a>(
        &self,
        buf: &'a [u8],
        at: &str,
        mut f: impl FnMut(u64, Wire<'a>) -> Result<(), DescriptionError>,
    ) -> Result<(), DescriptionError> {
        let mut fields = Fields::new(buf);
        while let Some((n, w)) = fields.next_field().map_err(|e| self.malformed(at, e))? {
            f(n, w)?;
        }
        Ok(())
    }

    fn bytes<'a>(&self, w: Wire<'a>, at: &str) -> Result<&'a [u8], DescriptionError> {
        match w {
            Wire::Bytes(b) => Ok(b),
            _ => Err(self.err(at, "expected a length-delimited value")),
        }
    }

    fn varint(&self, w: Wire<'_>, at: &str) -> Result<u64, DescriptionError> {
        match w {
            Wire::Varint(v) => Ok(v),
            _ => Err(self.err(at, "expected a varint")),
        }
    }

    /// A `repeated int64`, packed or not, appended to `out`.
    fn int64s(&self, w: Wire<'_>, at: &str, out: &mut Vec<i64>) -> Result<(), DescriptionError> {
        match w {
            Wire::Varint(v) => out.push(v as i64),
            Wire::Bytes(b) => {
                let mut f = Fields::new(b);
                while f.pos < b.len() {
                    out.push(f.varint().map_err(|e| self.malformed(at, e))? as i64);
                }
            }
            _ => return Err(self.err(at, "expected int64 values")),
        }
        Ok(())
    }

    fn dims(&self, values: &[i64], at: &str) -> Result<Vec<usize>, DescriptionError> {
        values
            .iter()
            .map(|&v| usize::try_from(v).map_err(|_| self.err(at, format!("dimension {v} is negative"))))
            .collect()
    }
}

/// Parse a serialized `CoreML.Specification.Model`; `file` names it in errors.
pub fn parse_model(bytes: &[u8], file: &str) -> Result<ModelDescription, DescriptionError> {
    let cx = Ctx { file };
    let mut version = None;
    let mut description = None;
    cx.each(bytes, "Model", |n, w| {
        match n {
            1 => version = Some(cx.varint(w, "Model.specificationVersion")? as i64),
            2 => description = Some(cx.bytes(w, "Model.description")?),
            _ => {}
        }
        Ok(())
    })?;
    let description = description
        .ok_or_else(|| cx.err("Model.description", "missing: the package declares no inputs or outputs"))?;
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    cx.each(description, "Model.description", |n, w| {
        match n {
            1 => {
                let at = format!("Model.description.input[{}]", inputs.len());
                inputs.push(feature(&cx, cx.bytes(w, &at)?, &at)?);
            }
            10 => {
                let at = format!("Model.description.output[{}]", outputs.len());
                outputs.push(feature(&cx, cx.bytes(w, &at)?, &at)?);
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(ModelDescription {
        file: file.to_string(),
        specification_version: version.unwrap_or(0),
        inputs,
        outputs,
    })
}

fn feature(cx: &Ctx<'_>, buf: &[u8], at: &str) -> Result<DeclaredFeature, DescriptionError> {
    let mut name = None;
    let mut f = DeclaredFeature {
        name: String::new(),
        kind: "unknown".into(),
        data_type: None,
        shape: Vec::new(),
        flexibility: Flexibility::Fixed,
        optional: false,
    };
    cx.each(buf, at, |n, w| {
        match n {
            1 => {
                let b = cx.bytes(w, &format!("{at}.name"))?;
                name = Some(
                    std::str::from_utf8(b)
                        .map_err(|_| cx.err(&format!("{at}.name"), "not UTF-8"))?
                        .to_string(),
                );
            }
            3 => feature_type(cx, cx.bytes(w, &format!("{at}.type"))?, &format!("{at}.type"), &mut f)?,
            _ => {}
        }
        Ok(())
    })?;
    f.name =
        name.filter(|n| !n.is_empty()).ok_or_else(|| cx.err(&format!("{at}.name"), "missing or empty"))?;
    Ok(f)
}

fn feature_type(cx: &Ctx<'_>, buf: &[u8], at: &str, f: &mut DeclaredFeature) -> Result<(), DescriptionError> {
    cx.each(buf, at, |n, w| {
        match n {
            5 => {
                f.kind = "multi_array".into();
                array_type(
                    cx,
                    cx.bytes(w, &format!("{at}.multiArrayType"))?,
                    &format!("{at}.multiArrayType"),
                    f,
                )?;
            }
            1000 => f.optional = cx.varint(w, &format!("{at}.isOptional"))? != 0,
            1 => f.kind = "int64".into(),
            2 => f.kind = "double".into(),
            3 => f.kind = "string".into(),
            4 => f.kind = "image".into(),
            6 => f.kind = "dictionary".into(),
            7 => f.kind = "sequence".into(),
            8 => f.kind = "state".into(),
            _ => {}
        }
        Ok(())
    })
}

fn array_type(cx: &Ctx<'_>, buf: &[u8], at: &str, f: &mut DeclaredFeature) -> Result<(), DescriptionError> {
    let mut shape = Vec::new();
    let shape_at = format!("{at}.shape");
    cx.each(buf, at, |n, w| {
        match n {
            1 => cx.int64s(w, &shape_at, &mut shape)?,
            2 => {
                let code = cx.varint(w, &format!("{at}.dataType"))?;
                f.data_type = (code != 0).then(|| ArrayType::from_code(code as isize).name());
            }
            21 => {
                let at = format!("{at}.enumeratedShapes");
                let mut shapes = Vec::new();
                cx.each(cx.bytes(w, &at)?, &at, |n, w| {
                    if n == 1 {
                        let at = format!("{at}.shapes[{}]", shapes.len());
                        let mut dims = Vec::new();
                        cx.each(cx.bytes(w, &at)?, &at, |n, w| {
                            if n == 1 {
                                cx.int64s(w, &format!("{at}.shape"), &mut dims)?;
                            }
                            Ok(())
                        })?;
                        shapes.push(cx.dims(&dims, &at)?);
                    }
                    Ok(())
                })?;
                f.flexibility = Flexibility::Enumerated(shapes);
            }
            31 => {
                let at = format!("{at}.shapeRange");
                let mut ranges = Vec::new();
                cx.each(cx.bytes(w, &at)?, &at, |n, w| {
                    if n == 1 {
                        let at = format!("{at}.sizeRanges[{}]", ranges.len());
                        let (mut lower, mut upper) = (0u64, 0i64);
                        cx.each(cx.bytes(w, &at)?, &at, |n, w| {
                            match n {
                                1 => lower = cx.varint(w, &format!("{at}.lowerBound"))?,
                                2 => upper = cx.varint(w, &format!("{at}.upperBound"))? as i64,
                                _ => {}
                            }
                            Ok(())
                        })?;
                        let lower =
                            usize::try_from(lower).map_err(|_| cx.err(&at, "lowerBound too large"))?;
                        ranges.push(DimRange { lower, upper: usize::try_from(upper).ok() });
                    }
                    Ok(())
                })?;
                f.flexibility = Flexibility::Range(ranges);
            }
            _ => {}
        }
        Ok(())
    })?;
    f.shape = cx.dims(&shape, &shape_at)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Protobuf encoders for hand-built test messages.
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    fn key(field: u64, wire: u64, out: &mut Vec<u8>) {
        varint(field << 3 | wire, out);
    }
    fn bytes(field: u64, body: &[u8], out: &mut Vec<u8>) {
        key(field, 2, out);
        varint(body.len() as u64, out);
        out.extend_from_slice(body);
    }
    fn packed(field: u64, values: &[i64], out: &mut Vec<u8>) {
        let mut body = Vec::new();
        for &v in values {
            varint(v as u64, &mut body);
        }
        bytes(field, &body, out);
    }
    fn array(shape: &[i64], dtype: u64, flex: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        packed(1, shape, &mut a);
        key(2, 0, &mut a);
        varint(dtype, &mut a);
        a.extend_from_slice(flex);
        let mut t = Vec::new();
        bytes(5, &a, &mut t);
        t
    }
    fn feature(name: &str, ty: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        bytes(1, name.as_bytes(), &mut f);
        bytes(2, b"a description we skip", &mut f);
        bytes(3, ty, &mut f);
        f
    }

    #[test]
    fn reads_names_types_shapes_and_flexibility() {
        // enumerated: (1,16) and (1,32); range: dim0 1..1, dim1 16..unbounded (-1)
        let mut enumerated = Vec::new();
        let mut shapes = Vec::new();
        for n in [16, 32] {
            let mut s = Vec::new();
            packed(1, &[1, n], &mut s);
            bytes(1, &s, &mut shapes);
        }
        bytes(21, &shapes, &mut enumerated);
        let mut range = Vec::new();
        let mut ranges = Vec::new();
        for (lo, hi) in [(1u64, 1i64), (16, -1)] {
            let mut r = Vec::new();
            key(1, 0, &mut r);
            varint(lo, &mut r);
            key(2, 0, &mut r);
            varint(hi as u64, &mut r);
            bytes(1, &r, &mut ranges);
        }
        bytes(31, &ranges, &mut range);
        let mut desc = Vec::new();
        bytes(1, &feature("input_ids", &array(&[1, 16], 0x20020, &enumerated)), &mut desc);
        bytes(1, &feature("mask", &array(&[1, 16], 0x10010, &range)), &mut desc);
        // an unpacked shape and an optional flag
        let mut a = Vec::new();
        for d in [1u64, 4] {
            key(1, 0, &mut a);
            varint(d, &mut a);
        }
        key(2, 0, &mut a);
        varint(0x10020, &mut a);
        let mut t = Vec::new();
        bytes(5, &a, &mut t);
        key(1000, 0, &mut t);
        varint(1, &mut t);
        bytes(10, &feature("logits", &t), &mut desc);
        let mut model = Vec::new();
        key(1, 0, &mut model);
        varint(9, &mut model);
        bytes(2, &desc, &mut model);
        // a big unknown field after the description (like the ML program) and a fixed64
        bytes(502, &[0xff; 300], &mut model);
        key(7, 1, &mut model);
        model.extend_from_slice(&[0; 8]);

        let d = parse_model(&model, "m.mlmodel").unwrap();
        assert_eq!(d.specification_version, 9);
        assert_eq!(d.inputs.len(), 2);
        let ids = &d.inputs[0];
        assert_eq!((ids.name.as_str(), ids.kind.as_str()), ("input_ids", "multi_array"));
        assert_eq!((ids.array_type(), ids.data_type.as_deref()), (Some(ArrayType::Int32), Some("int32")));
        assert_eq!(ids.shape, [1, 16]);
        assert_eq!(ids.flexibility, Flexibility::Enumerated(vec![vec![1, 16], vec![1, 32]]));
        assert_eq!(ids.shapes().unwrap().len(), 2);
        let mask = &d.inputs[1];
        assert_eq!(mask.array_type(), Some(ArrayType::Float16));
        assert_eq!(
            mask.flexibility,
            Flexibility::Range(vec![
                DimRange { lower: 1, upper: Some(1) },
                DimRange { lower: 16, upper: None }
            ])
        );
        assert!(mask.shapes().is_none());
        let out = &d.outputs[0];
        assert_eq!(
            (out.name.as_str(), out.shape.as_slice(), out.optional),
            ("logits", &[1usize, 4][..], true)
        );
        assert_eq!(out.flexibility, Flexibility::Fixed);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["inputs"][0]["flexibility"]["enumerated"][1], serde_json::json!([1, 32]));
        assert_eq!(json["inputs"][1]["flexibility"]["range"][1]["upper"], serde_json::Value::Null);
        assert_eq!(json["outputs"][0]["flexibility"], "fixed");
    }

    #[test]
    fn damaged_bytes_name_the_field() {
        let mut desc = Vec::new();
        bytes(1, &feature("embeddings", &array(&[1, 64, 1, 96], 0x10010, &[])), &mut desc);
        let mut model = Vec::new();
        bytes(2, &desc, &mut model);
        assert!(parse_model(&model, "m").is_ok());
        // cut inside the description: the outer length now overruns the buffer
        let e = parse_model(&model[..model.len() - 3], "m").unwrap_err().to_string();
        assert!(e.starts_with("m: cannot read the model description at Model:"), "{e}");
        // a truncated varint inside the shape of input 0
        let mut bad_shape = Vec::new();
        bytes(1, &[0x80], &mut bad_shape);
        let mut t = Vec::new();
        bytes(5, &bad_shape, &mut t);
        let mut desc = Vec::new();
        bytes(1, &feature("x", &t), &mut desc);
        let mut model = Vec::new();
        bytes(2, &desc, &mut model);
        let e = parse_model(&model, "m").unwrap_err();
        assert!(
            matches!(&e, DescriptionError::Malformed { source: WireError::TruncatedVarint { at: 1 }, .. }),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains(
                "at Model.description.input[0].type.multiArrayType.shape: truncated varint at byte 1;"
            ),
            "{e}"
        );
        // a negative dimension
        let mut desc = Vec::new();
        bytes(10, &feature("y", &array(&[1, -3], 0x10020, &[])), &mut desc);
        let mut model = Vec::new();
        bytes(2, &desc, &mut model);
        let e = parse_model(&model, "m").unwrap_err().to_string();
        assert!(e.contains("output[0].type.multiArrayType.shape: dimension -3 is negative"), "{e}");
        // no description at all, and a nameless feature
        assert!(parse_model(&[0x08, 0x01], "m")
            .unwrap_err()
            .to_string()
            .contains("Model.description: missing"));
        let mut desc = Vec::new();
        bytes(1, &[], &mut desc);
        let mut model = Vec::new();
        bytes(2, &desc, &mut model);
        assert!(parse_model(&model, "m")
            .unwrap_err()
            .to_string()
            .contains("input[0].name: missing or empty"));
        // a group wire type
        assert!(parse_model(&[0x0b], "m").unwrap_err().to_string().contains("wire type 3"));
    }

    #[test]
    fn the_root_model_comes_from_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("model.mlpackage");
        std::fs::create_dir_all(&pkg).unwrap();
        let e = spec_path(&pkg).unwrap_err().to_string();
        assert!(e.contains("Manifest.json: cannot read"), "{e}");
        std::fs::write(pkg.join("Manifest.json"), r#"{"itemInfoEntries": {}}"#).unwrap();
        assert!(spec_path(&pkg).unwrap_err().to_string().contains("`rootModelIdentifier` is missing"));
        std::fs::write(
            pkg.join("Manifest.json"),
            r#"{"rootModelIdentifier": "A", "itemInfoEntries": {"A": {"path": "com.apple.CoreML/model.mlmodel"}}}"#,
        )
        .unwrap();
        assert_eq!(spec_path(&pkg).unwrap(), pkg.join("Data/com.apple.CoreML/model.mlmodel"));
        let e = read_package(&pkg).unwrap_err().to_string();
        assert!(e.contains("model.mlmodel: cannot read the model specification"), "{e}");
        std::fs::write(
            pkg.join("Manifest.json"),
            r#"{"rootModelIdentifier": "A", "itemInfoEntries": {"A": {"path": "../x"}}}"#,
        )
        .unwrap();
        assert!(spec_path(&pkg).unwrap_err().to_string().contains("is not a relative path inside Data/"));
    }
}
