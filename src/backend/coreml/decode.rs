//! Core ML outputs → [`ForwardOutput`]: output identification (the ANE package's outputs by
//! shape, the ordinary export's by name), strided multi-array reads, and the ANE host tail
//! (option mask, action features, FP32 action head) of laya-coreml 0.5.1's `ANEAgent.forward`.

pub use crate::laya::coreml_format::{identify_ane_outputs, ArrayType};

use super::{CoreMlError, HostWeights, ANE_SLOTS};
use crate::backend::ForwardOutput;
use crate::model::tail::action_features;

/// Logit of an unused option slot (docs/host-path.md §2 step 9).
pub const MASKED_LOGIT: f32 = -1e4;

/// One output multi-array as Core ML returned it: raw bytes plus shape and strides (elements).
#[derive(Debug, Clone, Copy)]
pub struct RawArray<'a> {
    /// The output's name.
    pub name: &'a str,
    /// Element type.
    pub dtype: ArrayType,
    /// Shape.
    pub shape: &'a [usize],
    /// Strides in elements (Core ML may pad rows for the Neural Engine).
    pub strides: &'a [usize],
    /// The backing bytes, little-endian, at least up to the last strided element.
    pub bytes: &'a [u8],
}

impl RawArray<'_> {
    /// Number of logical elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Read every element in row-major logical order as f32 (exact for FP16), following the
    /// strides; `out` is cleared first and keeps its capacity.
    pub fn read_f32(&self, out: &mut Vec<f32>) -> Result<(), CoreMlError> {
        let bad = |detail: String| CoreMlError::Output { name: self.name.to_string(), detail };
        let size = self.dtype.size_bytes().filter(|_| self.dtype != ArrayType::Int32).ok_or_else(|| {
            bad(format!("is {}; the adapter reads float16, float32 or float64 outputs", self.dtype.name()))
        })?;
        if self.strides.len() != self.shape.len() {
            return Err(bad(format!(
                "has {} strides for {} dimensions",
                self.strides.len(),
                self.shape.len()
            )));
        }
        out.clear();
        let n = self.len();
        if n == 0 {
            return Ok(());
        }
        let last: usize = self.shape.iter().zip(self.strides).map(|(&d, &s)| (d - 1) * s).sum();
        if (last + 1) * size > self.bytes.len() {
            return Err(bad(format!(
                "shape {:?} with strides {:?} needs {} bytes but Core ML gave {}",
                self.shape,
                self.strides,
                (last + 1) * size,
                self.bytes.len()
            )));
        }
        let mut index = vec![0usize; self.shape.len()];
        for _ in 0..n {
            let offset: usize = index.iter().zip(self.strides).map(|(i, s)| i * s).sum::<usize>() * size;
            let b = &self.bytes[offset..offset + size];
            out.push(match self.dtype {
                ArrayType::Float16 => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                ArrayType::Float32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32,
            });
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < self.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(())
    }
}

/// The ANE host tail for one row: mask the raw `[32]` logits with `marker_mask`, derive the
/// action features from the masked logits and run the FP32 action head on `[cls, features]`.
/// Writes `out` as a `[1, 32]` / `[1, A]` [`ForwardOutput`] without reallocating.
pub fn finish_ane_row(
    raw_logits: &[f32],
    cls: &[f32],
    marker_mask: &[i32],
    weights: &HostWeights,
    scratch: &mut Vec<f32>,
    out: &mut ForwardOutput,
) -> Result<(), CoreMlError> {
    if raw_logits.len() != ANE_SLOTS || marker_mask.len() != ANE_SLOTS {
        return Err(CoreMlError::Output {
            name: "logits".into(),
            detail: format!(
                "has {} values for {} marker slots, expected {ANE_SLOTS}",
                raw_logits.len(),
                marker_mask.len()
            ),
        });
    }
    let head = weights.action_head();
    out.batch = 1;
    out.max_options = ANE_SLOTS;
    out.num_actions = head.num_actions();
    out.logits.clear();
    out.logits
        .extend(raw_logits.iter().zip(marker_mask).map(|(&z, &m)| if m != 0 { z } else { MASKED_LOGIT }));
    let markers = marker_mask.iter().filter(|&&m| m != 0).count();
    let features = action_features(&out.logits, markers);
    scratch.resize(head.scratch_len(), 0.0);
    out.action_logits.resize(head.num_actions(), 0.0);
    head.forward(cls, &features, scratch, &mut out.action_logits)
        .map_err(|e| CoreMlError::Output { name: "pooled CLS".into(), detail: e.to_string() })
}

/// The ordinary export's outputs (`logits [B, K]`, `action_logits [B, A]`, computed in-graph)
/// copied into `out`.
pub fn finish_ordinary(
    logits: &RawArray<'_>,
    action_logits: &RawArray<'_>,
    batch: usize,
    max_options: usize,
    scratch: &mut Vec<f32>,
    out: &mut ForwardOutput,
) -> Result<(), CoreMlError> {
    let check = |a: &RawArray<'_>, cols: Option<usize>| -> Result<usize, CoreMlError> {
        match a.shape {
            [b, c] if *b == batch && cols.is_none_or(|k| k == *c) => Ok(*c),
            s => Err(CoreMlError::Output {
                name: a.name.to_string(),
                detail: format!(
                    "has shape {s:?}, expected [{batch}, {}]",
                    cols.map_or("A".to_string(), |k| k.to_string())
                ),
            }),
        }
    };
    check(logits, Some(max_options))?;
    let actions = check(action_logits, None)?;
    out.batch = batch;
    out.max_options = max_options;
    out.num_actions = actions;
    logits.read_f32(&mut out.logits)?;
    action_logits.read_f32(scratch)?;
    out.action_logits.clear();
    out.action_logits.extend_from_slice(scratch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect()
    }

    #[test]
    fn strided_fp16_reads_skip_row_padding() {
        // shape [2, 3] stored with a padded row stride of 4: [1 2 3 _ | 4 5 6 _]
        let bytes = f16_bytes(&[1.0, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0, 99.0]);
        let a = RawArray {
            name: "x",
            dtype: ArrayType::Float16,
            shape: &[2, 3],
            strides: &[4, 1],
            bytes: &bytes,
        };
        let mut out = Vec::new();
        a.read_f32(&mut out).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // a transposed view: shape [3, 2], strides [1, 4] -> columns of the above
        let t = RawArray { shape: &[3, 2], strides: &[1, 4], ..a };
        t.read_f32(&mut out).unwrap();
        assert_eq!(out, [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let short = RawArray { bytes: &bytes[..10], ..a };
        assert!(short.read_f32(&mut out).unwrap_err().to_string().contains("needs 14 bytes"));
        let int = RawArray { dtype: ArrayType::Int32, ..a };
        assert!(int.read_f32(&mut out).unwrap_err().to_string().contains("int32"));
    }

    #[test]
    fn f32_and_f64_reads_are_exact() {
        let bytes: Vec<u8> = [0.1f32, -2.5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let a = RawArray {
            name: "y",
            dtype: ArrayType::Float32,
            shape: &[1, 2],
            strides: &[2, 1],
            bytes: &bytes,
        };
        let mut out = Vec::new();
        a.read_f32(&mut out).unwrap();
        assert_eq!(out, [0.1f32, -2.5]);
        let bytes: Vec<u8> = [0.25f64, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b = RawArray { dtype: ArrayType::Float64, bytes: &bytes, ..a };
        b.read_f32(&mut out).unwrap();
        assert_eq!(out, [0.25f32, 3.0]);
    }
}
