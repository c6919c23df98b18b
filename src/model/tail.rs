//! The host tail (docs/host-path.md §2 steps 10–11): action features from the masked option
//! logits and the action head, in f32 like PyTorch. Pure functions, shared by every backend
//! that leaves the tail to the host (portable engine, Core ML ANE host).

use super::ops;
use super::weights::Linear;

/// A tail input that does not fit the action head.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// Lengths or layer sizes do not line up.
    #[error("action head: {0}")]
    Shape(String),
}

/// Step 10: `[top1, top1 − top2, entropy / ln k, k / 255]` from one row of masked logits.
///
/// `p = softmax(logits)` over all K slots (masked slots carry −1e4 and get p ≈ 0),
/// `k = max(marker_count, 2)`, entropy `−Σ p·ln(max(p, 1e−9))`; with one slot top2 = 0.
/// An empty row gives all-zero probabilities.
pub fn action_features(masked_logits_row: &[f32], marker_count: usize) -> [f32; 4] {
    let max = masked_logits_row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for &x in masked_logits_row {
        sum += (x - max).exp();
    }
    let inv = 1.0 / sum;
    let (mut top1, mut top2) = (0.0f32, 0.0f32);
    let mut ent = 0.0f32;
    for &x in masked_logits_row {
        let p = (x - max).exp() * inv;
        ent += p * p.max(1e-9).ln();
        if p > top1 {
            top2 = top1;
            top1 = p;
        } else if p > top2 {
            top2 = p;
        }
    }
    let k = marker_count.max(2) as f32;
    let entropy = -ent / k.ln();
    [top1, top1 - top2, entropy, k / 255.0]
}

/// Step 11: `act_head = Linear(D+4 → 256) → exact GELU → Linear(256 → A)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionHead {
    hidden: Linear,
    output: Linear,
}

impl ActionHead {
    /// Pair `act_head.0` and `act_head.2`; both need a bias and matching widths.
    pub fn new(hidden: Linear, output: Linear) -> Result<Self, TailError> {
        if hidden.in_features() < 4 {
            return Err(TailError::Shape(format!(
                "act_head.0 takes {} inputs, needs D + 4",
                hidden.in_features()
            )));
        }
        if output.in_features() != hidden.out_features() {
            return Err(TailError::Shape(format!(
                "act_head.2 takes {} inputs but act_head.0 gives {}",
                output.in_features(),
                hidden.out_features()
            )));
        }
        for (name, l) in [("act_head.0", &hidden), ("act_head.2", &output)] {
            if l.bias.as_ref().map(Vec::len) != Some(l.out_features()) {
                return Err(TailError::Shape(format!("{name} needs a bias of {} values", l.out_features())));
            }
        }
        Ok(Self { hidden, output })
    }
    /// `act_head.0`, `[256, D+4]`.
    pub fn hidden(&self) -> &Linear {
        &self.hidden
    }
    /// `act_head.2`, `[A, 256]`.
    pub fn output(&self) -> &Linear {
        &self.output
    }
    /// `D`, the CLS width it expects.
    pub fn cls_width(&self) -> usize {
        self.hidden.in_features() - 4
    }
    /// `A`, the number of actions.
    pub fn num_actions(&self) -> usize {
        self.output.out_features()
    }
    /// Scratch length [`Self::forward`] needs: `D + 4 + hidden width`.
    pub fn scratch_len(&self) -> usize {
        self.hidden.in_features() + self.hidden.out_features()
    }

    /// Action logits `[A]` for one row from the CLS vector (head output at position 0) and the
    /// features of [`action_features`]. `scratch` must hold [`Self::scratch_len`] values.
    pub fn forward(
        &self,
        cls: &[f32],
        features: &[f32; 4],
        scratch: &mut [f32],
        out: &mut [f32],
    ) -> Result<(), TailError> {
        let d = self.cls_width();
        if cls.len() != d || out.len() != self.num_actions() || scratch.len() < self.scratch_len() {
            return Err(TailError::Shape(format!(
                "expected cls of {d} values, {} outputs and {} scratch; got {}, {} and {}",
                self.num_actions(),
                self.scratch_len(),
                cls.len(),
                out.len(),
                scratch.len()
            )));
        }
        let (input, rest) = scratch.split_at_mut(d + 4);
        let hidden = &mut rest[..self.hidden.out_features()];
        input[..d].copy_from_slice(cls);
        input[d..].copy_from_slice(features);
        self.hidden.forward_vec(input, hidden);
        for h in hidden.iter_mut() {
            *h = ops::gelu(*h);
        }
        self.output.forward_vec(hidden, out);
        Ok(())
    }

    /// [`Self::forward`] with its own scratch, returning the `[A]` logits.
    pub fn logits(&self, cls: &[f32], features: &[f32; 4]) -> Result<Vec<f32>, TailError> {
        let mut scratch = vec![0.0f32; self.scratch_len()];
        let mut out = vec![0.0f32; self.num_actions()];
        self.forward(cls, features, &mut scratch, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::weights::Matrix;

    fn close(a: f32, b: f64, tol: f64) -> bool {
        (a as f64 - b).abs() <= tol
    }

    #[test]
    fn features_of_two_options_with_masked_slots() {
        // logits [1, 2, -1e4, -1e4], 2 markers: p = [1/(1+e), e/(1+e), 0, 0]
        let f = action_features(&[1.0, 2.0, -1e4, -1e4], 2);
        let e = std::f64::consts::E;
        let p1 = 1.0 / (1.0 + e);
        let p2 = e / (1.0 + e); // 0.7310585786
        let ent = -(p1 * p1.ln() + p2 * p2.ln()) / 2f64.ln(); // 0.8399415379831692
        assert!(close(f[0], p2, 1e-7), "{f:?}");
        assert!(close(f[1], p2 - p1, 1e-7));
        assert!(close(f[2], ent, 1e-6));
        assert!(close(f[3], 2.0 / 255.0, 1e-9));
        assert!(close(f[0], 0.731_058_6, 1e-7) && close(f[2], 0.839_941_54, 1e-6));
    }

    #[test]
    fn features_uniform_over_four_has_unit_entropy() {
        let f = action_features(&[0.5, 0.5, 0.5, 0.5], 4);
        assert!(close(f[0], 0.25, 1e-7));
        assert!(close(f[1], 0.0, 1e-7));
        assert!(close(f[2], 1.0, 1e-6));
        assert!(close(f[3], 4.0 / 255.0, 1e-9));
    }

    #[test]
    fn features_single_marker_uses_k_two_and_clamps_log() {
        // one valid slot among three: p = [1, ~0, ~0]; entropy 0; k clamps to 2
        let f = action_features(&[3.0, -1e4, -1e4], 1);
        assert_eq!(f[0], 1.0);
        assert_eq!(f[1], 1.0);
        assert!(f[2].abs() < 1e-6);
        assert!(close(f[3], 2.0 / 255.0, 1e-9));
        // K = 1: top2 = 0
        let g = action_features(&[0.7], 1);
        assert_eq!(g[0], 1.0);
        assert_eq!(g[1], 1.0);
    }

    fn linear(rows: usize, cols: usize, w: Vec<f32>, b: Vec<f32>) -> Linear {
        Linear { weight: Matrix::f32_row_major(rows, cols, w).unwrap(), bias: Some(b) }
    }

    #[test]
    fn action_head_matches_hand_computation() {
        // D = 2, hidden 2, A = 2.
        // h0 = [1, 1, 0, 0, 0, 0]·x + 0.5, h1 = [0, 0, 1, -1, 0, 0]·x - 0.25
        let hidden =
            linear(2, 6, vec![1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0], vec![0.5, -0.25]);
        let output = linear(2, 2, vec![1.0, 0.0, 2.0, -1.0], vec![0.0, 1.0]);
        let head = ActionHead::new(hidden, output).unwrap();
        let cls = [0.25f32, 0.25];
        let feat = [0.75f32, 0.5, 0.5, 2.0 / 255.0];
        let a = head.logits(&cls, &feat).unwrap();
        // h = [1.0, -0.25 + 0.75 - 0.5 = 0.0] -> gelu = [0.8413447460685429, 0]
        let g0 = 0.841_344_746_068_542_9f64;
        assert!(close(a[0], g0, 3e-7), "{a:?}");
        assert!(close(a[1], 2.0 * g0 + 1.0, 6e-7), "{a:?}");
        assert!(head.logits(&[0.0; 3], &feat).is_err());
    }

    #[test]
    fn action_head_rejects_mismatched_layers() {
        let hidden = linear(2, 6, vec![0.0; 12], vec![0.0; 2]);
        let output = linear(2, 3, vec![0.0; 6], vec![0.0; 2]);
        assert!(ActionHead::new(hidden.clone(), output).is_err());
        let no_bias = Linear { weight: Matrix::f32_row_major(2, 2, vec![0.0; 4]).unwrap(), bias: None };
        assert!(ActionHead::new(hidden, no_bias).is_err());
    }
}
