//! The one weight-storage precision type: the portable backend's spec names
//! (`portable:f32|f16|bf16|w8|w6|w4`, [`crate::backend::registry`]) and the bounds contract's
//! bits, lookup tables and arithmetic ([`crate::bounds`]) are the same six values.
//!
//! The command-line parse of `laya-bench bounds --precision` (case-insensitive, with aliases)
//! is `FromStr`, implemented beside its error kind in [`crate::bounds`].

use std::fmt;

use serde::Serialize;

/// How the body's weights are stored. Activations are FP32 in every portable arm (where the
/// BF16 arm runs on AMX tiles or the pair-dot kernel, each product's input is rounded to BF16,
/// see [`crate::backend::portable::Bf16Kernel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// FP32 weights, FP32 compute: 4 bytes per weight.
    F32,
    /// FP16 projection weights (IEEE half, 2 bytes per weight), decoded to FP32 for the products.
    F16,
    /// BF16 projection weights: 2 bytes per weight (bfloat16).
    Bf16,
    /// Grouped k-means palettization, 8-bit indices (weight-only; NOT W8A8): 1 byte per weight
    /// + a 256-entry FP16 lookup table per tensor.
    W8,
    /// Grouped k-means palettization, 6-bit indices (convert-check candidate): 0.75 bytes per
    /// weight + a 64-entry FP16 lookup table per tensor.
    W6,
    /// Grouped k-means palettization, 4-bit indices (convert-check candidate): 0.5 bytes per
    /// weight + a 16-entry FP16 lookup table per tensor.
    W4,
}

/// The arithmetic a precision computes in, which picks the peak of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeType {
    /// FP32 arithmetic.
    F32,
    /// FP16 arithmetic.
    F16,
    /// BF16 arithmetic.
    Bf16,
}

impl Precision {
    /// Every precision, in spec order (also the order the help lists them).
    pub const ALL: [Precision; 6] =
        [Precision::F32, Precision::F16, Precision::Bf16, Precision::W8, Precision::W6, Precision::W4];

    /// The name used in backend specs, on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::W8 => "w8",
            Precision::W6 => "w6",
            Precision::W4 => "w4",
        }
    }

    /// The precision with spec name `name` (exact: no aliases, no case folding).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The precision `s` names, case-insensitively, also accepting the aliases `fp32`, `fp16`,
    /// `int8` and `w8a16` (the `bounds --precision` parse).
    pub fn from_name_or_alias(s: &str) -> Option<Self> {
        let lower = s.to_ascii_lowercase();
        let alias = match lower.as_str() {
            "fp32" => "f32",
            "fp16" => "f16",
            "int8" | "w8a16" => "w8",
            other => other,
        };
        Precision::ALL.into_iter().find(|p| p.name() == alias)
    }

    /// Index width of a palettized precision; `None` for the dense ones.
    pub fn palette_bits(self) -> Option<u8> {
        match self {
            Precision::W8 => Some(8),
            Precision::W6 => Some(6),
            Precision::W4 => Some(4),
            _ => None,
        }
    }

    /// Stored bits per weight (palette indices for `w*`).
    pub fn bits_per_weight(self) -> u64 {
        match self {
            Precision::F32 => 32,
            Precision::F16 | Precision::Bf16 => 16,
            Precision::W8 => 8,
            Precision::W6 => 6,
            Precision::W4 => 4,
        }
    }

    /// Lookup-table entries per palettized tensor (`2^bits` FP16 centroids), `None` if dense.
    pub fn lut_entries(self) -> Option<u64> {
        match self {
            Precision::W8 | Precision::W6 | Precision::W4 => Some(1 << self.bits_per_weight()),
            _ => None,
        }
    }

    /// The arithmetic it runs in: palettized weights are expanded to FP16 (as Core ML does).
    pub fn compute(self) -> ComputeType {
        match self {
            Precision::F32 => ComputeType::F32,
            Precision::Bf16 => ComputeType::Bf16,
            Precision::F16 | Precision::W8 | Precision::W6 | Precision::W4 => ComputeType::F16,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for ComputeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ComputeType::F32 => "FP32",
            ComputeType::F16 => "FP16",
            ComputeType::Bf16 => "BF16",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_hand_checked_name_bits_and_palette() {
        // (variant, name, bits per weight, palette bits, LUT entries, arithmetic)
        let table = [
            (Precision::F32, "f32", 32, None, None, ComputeType::F32),
            (Precision::F16, "f16", 16, None, None, ComputeType::F16),
            (Precision::Bf16, "bf16", 16, None, None, ComputeType::Bf16),
            (Precision::W8, "w8", 8, Some(8), Some(256), ComputeType::F16),
            (Precision::W6, "w6", 6, Some(6), Some(64), ComputeType::F16),
            (Precision::W4, "w4", 4, Some(4), Some(16), ComputeType::F16),
        ];
        assert_eq!(table.map(|row| row.0), Precision::ALL);
        for (p, name, bits, palette, lut, compute) in table {
            assert_eq!(p.name(), name);
            assert_eq!(p.to_string(), name);
            assert_eq!(Precision::from_name(name), Some(p));
            assert_eq!(Precision::from_name_or_alias(name), Some(p));
            assert_eq!(Precision::from_name_or_alias(&name.to_ascii_uppercase()), Some(p));
            assert_eq!(p.bits_per_weight(), bits);
            assert_eq!(p.palette_bits(), palette);
            assert_eq!(p.palette_bits().map(u64::from), palette.map(|_| bits));
            assert_eq!(p.lut_entries(), lut);
            assert_eq!(p.compute(), compute);
            assert_eq!(serde_json::to_value(p).unwrap(), name);
        }
    }

    #[test]
    fn spec_names_are_exact_and_the_bounds_parse_takes_aliases() {
        for bad in ["F16", "fp16", "fp32", "int8", "w8a16", "bf 16", "w3", ""] {
            assert_eq!(Precision::from_name(bad), None, "{bad}");
        }
        assert_eq!(Precision::from_name_or_alias("FP32"), Some(Precision::F32));
        assert_eq!(Precision::from_name_or_alias("fp16"), Some(Precision::F16));
        assert_eq!(Precision::from_name_or_alias("int8"), Some(Precision::W8));
        assert_eq!(Precision::from_name_or_alias("W8A16"), Some(Precision::W8));
        assert_eq!(Precision::from_name_or_alias("q3"), None);
        assert_eq!(ComputeType::Bf16.to_string(), "BF16");
        assert_eq!(serde_json::to_value(ComputeType::F16).unwrap(), "f16");
    }
}
