//! The Core ML bundle formats' package interface (docs/host-path.md §1.6/§1.7), read and
//! checked on every OS when a bundle loads: the package's declared inputs and outputs
//! ([`description`]), multi-array element types, the ANE package's fixed shapes, and the
//! signature checks against what the manifest and configs promise ([`signature`]). This is
//! model-format knowledge; the Core ML backend (`backend::coreml`) re-exports it and adds the
//! framework calls.

pub mod compute_plan;
pub mod description;
pub mod signature;

pub use signature::{
    check_ane_signature, check_declared_ane, check_declared_ordinary, check_ordinary_signature,
    identify_ane_outputs, ordinary_caps, ordinary_input_names,
};

/// Marker slots of every ANE bundle (`K`).
pub const ANE_SLOTS: usize = 32;

/// A package interface that is not the one its bundle format promises, or a manifest shape
/// that cannot be read; the message names the input, output, field or file.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A bundle or manifest file is unusable.
    #[error("{path}: {detail}")]
    Bundle {
        /// The file or folder.
        path: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// The package's inputs or outputs are not the ones the bundle format promises.
    #[error("{0}")]
    Signature(String),
}

/// Element type of a Core ML multi-array, as far as this adapter reads or writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayType {
    /// IEEE half.
    Float16,
    /// IEEE single.
    Float32,
    /// IEEE double.
    Float64,
    /// 32-bit signed integer.
    Int32,
    /// Anything else (named by its Core ML code).
    Other(isize),
}

impl ArrayType {
    /// From `MLMultiArrayDataType`'s raw value (`0x10000 | bits` floats, `0x20000 | bits` ints).
    pub fn from_code(code: isize) -> Self {
        match code {
            0x10010 => ArrayType::Float16,
            0x10020 => ArrayType::Float32,
            0x10040 => ArrayType::Float64,
            0x20020 => ArrayType::Int32,
            other => ArrayType::Other(other),
        }
    }
    /// `MLMultiArrayDataType`'s raw value.
    pub fn code(self) -> isize {
        match self {
            ArrayType::Float16 => 0x10010,
            ArrayType::Float32 => 0x10020,
            ArrayType::Float64 => 0x10040,
            ArrayType::Int32 => 0x20020,
            ArrayType::Other(c) => c,
        }
    }
    /// Bytes per element, `None` for types this adapter does not read.
    pub fn size_bytes(self) -> Option<usize> {
        match self {
            ArrayType::Float16 => Some(2),
            ArrayType::Float32 | ArrayType::Int32 => Some(4),
            ArrayType::Float64 => Some(8),
            ArrayType::Other(_) => None,
        }
    }
    /// Short name for messages.
    pub fn name(self) -> String {
        match self {
            ArrayType::Float16 => "float16".into(),
            ArrayType::Float32 => "float32".into(),
            ArrayType::Float64 => "float64".into(),
            ArrayType::Int32 => "int32".into(),
            ArrayType::Other(c) => format!("data type 0x{c:x}"),
        }
    }
}

/// The fixed signature of one ANE package: `L` positions, `D` channels, `V` vocabulary rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AneShape {
    /// `L`, the bundle's `shape.max_length`.
    pub length: usize,
    /// `D`, the encoder's `hidden_size`.
    pub width: usize,
    /// `V`, the rows of the embedding table.
    pub vocab: usize,
    /// `local_attention // 2`: a key is in the window iff `|q − k| <= half_window`.
    pub half_window: usize,
}

impl AneShape {
    /// The five input names and their shapes, in the reference's order.
    pub fn input_shapes(&self) -> [(&'static str, [usize; 4]); 5] {
        let (l, d) = (self.length, self.width);
        [
            ("embeddings", [1, d, 1, l]),
            ("full_mask", [1, l, 1, l]),
            ("local_mask", [1, l, 1, l]),
            ("type_vectors", [1, d, 1, 1]),
            ("marker_map", [1, l, 1, ANE_SLOTS]),
        ]
    }
}

/// One input or output of a package's model description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureSig {
    /// Feature name.
    pub name: String,
    /// Default shape of its multi-array constraint (empty when it is not a multi-array).
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: ArrayType,
}

fn py_tuple(dims: &[usize]) -> String {
    match dims {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

fn py_shapes<'a>(items: impl Iterator<Item = (&'a str, &'a [usize])>) -> String {
    let parts: Vec<String> = items.map(|(n, s)| format!("'{n}': {}", py_tuple(s))).collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_type_codes_match_core_ml() {
        // MLMultiArrayDataType: Float16 = 0x10000 | 16, Float32 = | 32, Double = | 64, Int32 = 0x20000 | 32.
        assert_eq!(ArrayType::from_code(65552), ArrayType::Float16);
        assert_eq!(ArrayType::from_code(65568), ArrayType::Float32);
        assert_eq!(ArrayType::from_code(65600), ArrayType::Float64);
        assert_eq!(ArrayType::from_code(131104), ArrayType::Int32);
        assert_eq!(ArrayType::from_code(0x20008), ArrayType::Other(0x20008));
        for t in [ArrayType::Float16, ArrayType::Float32, ArrayType::Float64, ArrayType::Int32] {
            assert_eq!(ArrayType::from_code(t.code()), t);
        }
    }
}
