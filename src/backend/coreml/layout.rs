//! The ANE bundle's input tensors (docs/host-path.md §1.7), built from a [`PreparedBatch`] and the
//! host weights exactly as laya-coreml 0.5.1's `ANEAgent.model_inputs` builds them.
//!
//! Every tensor is channel-first "BC1L" and stored as FP16 bits (`u16`, little-endian values):
//!
//! - `embeddings` `(1, D, 1, L)`: `[0, c, 0, t] = E[ids[t], c]` (the host gather, un-normalized);
//! - `full_mask` / `local_mask` `(1, L, 1, L)`: additive, indexed `[b, key, 0, query]`;
//! - `type_vectors` `(1, D, 1, 1)`: `type_emb[qtype]`;
//! - `marker_map` `(1, L, 1, 32)`: one-hot `[0, marker_pos[j], 0, j] = 1` for all 32 slots.
//!
//! The builders write into buffers allocated once per backend, so a forward allocates nothing.

pub use crate::laya::coreml_format::AneShape;

use super::{CoreMlError, HostWeights, ANE_SLOTS};
use crate::backend::PreparedBatch;

/// FP16 bits of `0.0`: a visible key.
pub const MASK_OPEN: u16 = 0x0000;
/// FP16 bits of `-1e4` (exactly representable): a hidden key.
pub const MASK_HIDDEN: u16 = 0xF0E2;
/// FP16 bits of `1.0`: a selected position in the marker map.
pub const ONE: u16 = 0x3C00;

/// The five FP16 input tensors of one ANE call, reused across calls.
#[derive(Debug, Clone, PartialEq)]
pub struct AneInputs {
    shape: AneShape,
    /// `(1, D, 1, L)` FP16 bits.
    pub embeddings: Vec<u16>,
    /// `(1, L, 1, L)` FP16 bits, `[b, key, 0, query]`.
    pub full_mask: Vec<u16>,
    /// `(1, L, 1, L)` FP16 bits, `[b, key, 0, query]`.
    pub local_mask: Vec<u16>,
    /// `(1, D, 1, 1)` FP16 bits.
    pub type_vectors: Vec<u16>,
    /// `(1, L, 1, 32)` FP16 bits.
    pub marker_map: Vec<u16>,
}

impl AneInputs {
    /// Zeroed buffers for one shape (the only allocation).
    pub fn new(shape: AneShape) -> Self {
        let (l, d) = (shape.length, shape.width);
        Self {
            shape,
            embeddings: vec![0; d * l],
            full_mask: vec![0; l * l],
            local_mask: vec![0; l * l],
            type_vectors: vec![0; d],
            marker_map: vec![0; l * ANE_SLOTS],
        }
    }

    /// The shape these buffers hold.
    pub fn shape(&self) -> AneShape {
        self.shape
    }

    /// The tensors by input name, in [`AneShape::input_shapes`] order.
    pub fn tensors(&self) -> [(&'static str, [usize; 4], &[u16]); 5] {
        let s = self.shape.input_shapes();
        [
            (s[0].0, s[0].1, &self.embeddings),
            (s[1].0, s[1].1, &self.full_mask),
            (s[2].0, s[2].1, &self.local_mask),
            (s[3].0, s[3].1, &self.type_vectors),
            (s[4].0, s[4].1, &self.marker_map),
        ]
    }

    /// Validate `batch` against the fixed signature (the reference's checks, order and
    /// messages) and write every tensor. `weights` must match this shape's `D` and `V`.
    pub fn build(&mut self, batch: &PreparedBatch, weights: &HostWeights) -> Result<(), CoreMlError> {
        validate(batch, self.shape)?;
        let AneShape { length: l, width: d, half_window, .. } = self.shape;
        let ids = &batch.input_ids[..l];
        let valid = &batch.attention_mask[..l];
        // embeddings[0, c, 0, t] = E[ids[t], c]
        for (t, &id) in ids.iter().enumerate() {
            let row = weights.embedding_row(id as usize);
            for (c, &v) in row.iter().enumerate() {
                self.embeddings[c * l + t] = v;
            }
        }
        // masks[0, key, 0, query]
        for k in 0..l {
            let key_valid = valid[k] != 0;
            let full_row = &mut self.full_mask[k * l..(k + 1) * l];
            full_row.fill(if key_valid { MASK_OPEN } else { MASK_HIDDEN });
            let local_row = &mut self.local_mask[k * l..(k + 1) * l];
            for (q, m) in local_row.iter_mut().enumerate() {
                let open = key_valid && (q.abs_diff(k) <= half_window || valid[q] == 0);
                *m = if open { MASK_OPEN } else { MASK_HIDDEN };
            }
        }
        self.type_vectors.copy_from_slice(weights.type_row(batch.qtype[0] as usize));
        // marker_map[0, marker_pos[j], 0, j] = 1 for every slot j, padded ones included.
        self.marker_map.fill(0);
        for (j, &pos) in batch.marker_pos[..ANE_SLOTS].iter().enumerate() {
            self.marker_map[pos as usize * ANE_SLOTS + j] = ONE;
        }
        debug_assert_eq!(weights.width(), d);
        Ok(())
    }
}

/// Widen FP16 bits to f32 (exact) into `dst`, reusing its allocation: for packages whose inputs
/// are declared FP32 (Core ML would otherwise convert the same values itself).
pub fn widen_f16(src: &[u16], dst: &mut Vec<f32>) {
    dst.clear();
    dst.extend(src.iter().map(|&b| half::f16::from_bits(b).to_f32()));
}

fn py_shape(dims: &[usize]) -> String {
    match dims {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// The reference's `model_inputs` checks, in its order, with its messages (docs/host-path.md §5).
pub fn validate(batch: &PreparedBatch, shape: AneShape) -> Result<(), CoreMlError> {
    let bad = |m: String| Err(CoreMlError::Batch(m));
    if batch.position_ids.is_some() || batch.option_ids.is_some() {
        return bad("Prepared batch fields do not match the fixed ANE signature".into());
    }
    let l = shape.length;
    let rows = batch.batch;
    let fields: [(&str, &[usize], usize, usize); 5] = [
        ("input_ids", &[1, l], batch.input_ids.len(), rows * batch.length),
        ("attention_mask", &[1, l], batch.attention_mask.len(), rows * batch.length),
        ("marker_pos", &[1, ANE_SLOTS], batch.marker_pos.len(), rows * batch.max_options),
        ("marker_mask", &[1, ANE_SLOTS], batch.marker_mask.len(), rows * batch.max_options),
        ("qtype", &[1], batch.qtype.len(), rows),
    ];
    for (name, want, len, declared) in fields {
        let dims_ok = match want {
            [_, n] => rows == 1 && len == *n && declared == *n,
            _ => rows == 1 && len == 1,
        };
        if !dims_ok {
            return bad(format!("{name} must have integer dtype and shape {}", py_shape(want)));
        }
    }
    if batch.input_ids.iter().any(|&t| t < 0 || t as usize >= shape.vocab) {
        return bad("Token id outside checkpoint vocabulary".into());
    }
    for (name, v) in [("attention_mask", &batch.attention_mask), ("marker_mask", &batch.marker_mask)] {
        if v.iter().any(|&x| x != 0 && x != 1) {
            return bad(format!("{name} must contain only zero or one"));
        }
    }
    if !batch.attention_mask.contains(&1) {
        return bad("Every batch row needs at least one valid attention key".into());
    }
    if batch.qtype.iter().any(|&q| !(0..=2).contains(&q)) {
        return bad("Question type must be 0, 1 or 2".into());
    }
    if batch.marker_pos.iter().any(|&p| p < 0 || p as usize >= l) {
        return bad("Marker position outside exported sequence".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_constants_are_the_fp16_values() {
        assert_eq!(half::f16::from_f32(-1e4).to_bits(), MASK_HIDDEN);
        assert_eq!(half::f16::from_f32(-1e4).to_f32(), -10000.0);
        assert_eq!(half::f16::from_f32(0.0).to_bits(), MASK_OPEN);
        assert_eq!(half::f16::from_f32(1.0).to_bits(), ONE);
    }

    #[test]
    fn widening_is_exact_and_reuses_the_buffer() {
        let mut dst = Vec::with_capacity(8);
        widen_f16(&[MASK_HIDDEN, MASK_OPEN, ONE, 0x3555], &mut dst);
        assert_eq!(dst, [-10000.0, 0.0, 1.0, 0.333_251_95]);
        assert_eq!(dst.capacity(), 8);
    }

    #[test]
    fn python_shapes_print_like_tuples() {
        assert_eq!(py_shape(&[1, 96]), "(1, 96)");
        assert_eq!(py_shape(&[1]), "(1,)");
    }
}
