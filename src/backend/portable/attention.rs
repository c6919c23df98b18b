//! Attention pieces of the portable engine: RoPE tables, the per-request masks and the
//! per-head masked attention (host-contract.md §2 steps 2, 3 and 6).

use rayon::prelude::*;

use super::linalg::{matmul, Split, View, ViewMut};
use crate::model::ops;

/// RoPE cos/sin tables `[positions, dh/2]` for one base, computed with PyTorch's f32 choices:
/// `inv[m] = 1 / f32(base^(f32(2m)/f32(dh)))`, `angle = f32(t)·inv[m]`, then cos/sin of that f32.
#[derive(Debug, Clone)]
pub(crate) struct Rope {
    half: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rope {
    /// Tables for positions `0..positions`.
    pub fn new(base: f64, head_dim: usize, positions: usize) -> Self {
        let half = head_dim / 2;
        let base32 = base as f32;
        let inv: Vec<f32> = (0..half)
            .map(|m| {
                let e = (2 * m) as f32 / head_dim as f32;
                // pow in f64 then rounded: the correctly rounded f32 power
                1.0f32 / ((base32 as f64).powf(e as f64) as f32)
            })
            .collect();
        let mut cos = Vec::with_capacity(positions * half);
        let mut sin = Vec::with_capacity(positions * half);
        for t in 0..positions {
            for &f in &inv {
                let angle = t as f32 * f;
                cos.push((angle as f64).cos() as f32);
                sin.push((angle as f64).sin() as f32);
            }
        }
        Self { half, cos, sin }
    }

    /// Positions covered.
    pub fn positions(&self) -> usize {
        self.cos.len().checked_div(self.half).unwrap_or(0)
    }

    /// `(cos, sin)` rows for position `p` (`p < positions()`).
    pub fn row(&self, p: usize) -> (&[f32], &[f32]) {
        let r = p * self.half..(p + 1) * self.half;
        (&self.cos[r.clone()], &self.sin[r])
    }

    /// Rotate every `dh`-wide head vector of `v` in place (rotate-half convention), all at
    /// position `p`; the CPU check is made once for the whole row.
    pub fn rotate_heads(&self, v: &mut [f32], dh: usize, p: usize) {
        let (c, s) = self.row(p);
        #[cfg(target_arch = "x86_64")]
        if ops::has_avx2() {
            // SAFETY: the CPU supports AVX2 (checked at run time just above).
            unsafe { rotate_heads_avx2(v, dh, c, s) };
            return;
        }
        rotate_heads_generic(v, dh, c, s);
    }
}

/// Per head of `v`: `(a, b) ← (a·c − b·s, b·c + a·s)` element-wise over its two halves, with
/// separate multiplies and adds (never fused), so the 8-wide build gives the scalar loop's bits.
#[inline(always)]
fn rotate_heads_generic(v: &mut [f32], dh: usize, c: &[f32], s: &[f32]) {
    for head in v.chunks_exact_mut(dh) {
        let (a, b) = head.split_at_mut(dh / 2);
        for (((x, y), &c), &s) in a.iter_mut().zip(b.iter_mut()).zip(c).zip(s) {
            let (xv, yv) = (*x, *y);
            *x = xv * c - yv * s;
            *y = yv * c + xv * s;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rotate_heads_avx2(v: &mut [f32], dh: usize, c: &[f32], s: &[f32]) {
    rotate_heads_generic(v, dh, c, s);
}

/// Shape of one attention call over a `[B·L, 3D]` packed q/k/v buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttnShape {
    /// Rows `B`.
    pub batch: usize,
    /// Sequence length `L`.
    pub len: usize,
    /// Heads.
    pub heads: usize,
    /// Per-head width.
    pub head_dim: usize,
}

impl AttnShape {
    fn d(&self) -> usize {
        self.heads * self.head_dim
    }
}

/// Apply RoPE to the q and k parts of `qkv` (`[B·L, 3D]`), token `(b, t)` at position
/// `positions[b·L + t]` (or `t` when `positions` is `None`). With `workers > 1` the rows are
/// shared out on the current rayon pool (each row's arithmetic is the same either way).
pub(crate) fn apply_rope(
    qkv: &mut [f32],
    shape: AttnShape,
    rope: &Rope,
    positions: Option<&[i32]>,
    workers: usize,
) {
    let d = shape.d();
    let dh = shape.head_dim;
    let rows = shape.batch * shape.len;
    let one = |(r, row): (usize, &mut [f32])| {
        let p = match positions {
            Some(pos) => pos[r] as usize,
            None => r % shape.len,
        };
        rope.rotate_heads(&mut row[..2 * d], dh, p);
    };
    let qkv = &mut qkv[..rows * 3 * d];
    if workers > 1 {
        qkv.par_chunks_exact_mut(3 * d).enumerate().with_min_len(8).for_each(one);
    } else {
        qkv.chunks_exact_mut(3 * d).enumerate().for_each(one);
    }
}

/// Per-request boolean masks (1 = may attend), each `[B, L, L]` indexed `[b][q][k]`.
#[derive(Debug, Default)]
pub(crate) struct Masks {
    /// Full-attention encoder layers.
    pub full: Vec<u8>,
    /// Sliding-window encoder layers.
    pub local: Vec<u8>,
    /// Decision head (key padding only); unused in the sequential layout (equals `full`).
    pub head: Vec<u8>,
}

/// The sliding-window template for one length: `band[q·L + k] = |q − k| <= half_window`.
pub(crate) fn window_template(len: usize, half_window: usize) -> Vec<u8> {
    let mut band = vec![0u8; len * len];
    for q in 0..len {
        for k in q.saturating_sub(half_window)..(q + half_window + 1).min(len) {
            band[q * len + k] = 1;
        }
    }
    band
}

impl Masks {
    /// Build the masks for a batch (host-contract.md §2 step 2 and the parallel layout of
    /// `Encoder.forward`). `valid` is `[B, L]` (non-zero = real token); `parallel` holds
    /// `(position_ids, option_ids)`. Reuses the allocations.
    pub fn build(
        &mut self,
        batch: usize,
        len: usize,
        valid: &[i32],
        band: &[u8],
        half_window: usize,
        parallel: Option<(&[i32], &[i32])>,
    ) {
        let n = batch * len * len;
        for m in [&mut self.full, &mut self.local, &mut self.head] {
            m.clear();
            m.resize(n, 0);
        }
        for b in 0..batch {
            let v = &valid[b * len..(b + 1) * len];
            let base = b * len * len;
            for q in 0..len {
                let row = base + q * len;
                let q_pad = v[q] == 0;
                match parallel {
                    None => {
                        let band_row = &band[q * len..(q + 1) * len];
                        for k in 0..len {
                            let key = (v[k] != 0) as u8;
                            self.full[row + k] = key;
                            self.local[row + k] = key & (band_row[k] | q_pad as u8);
                        }
                    }
                    Some((pos, opt)) => {
                        let pos = &pos[b * len..(b + 1) * len];
                        let opt = &opt[b * len..(b + 1) * len];
                        for k in 0..len {
                            let key = v[k] != 0;
                            let other = opt[q] > 0 && opt[k] > 0 && opt[q] != opt[k];
                            let full = key && !other;
                            let near = (pos[q] as i64 - pos[k] as i64).unsigned_abs() <= half_window as u64;
                            self.full[row + k] = full as u8;
                            self.local[row + k] = (full && (near || q_pad)) as u8;
                            self.head[row + k] = key as u8;
                        }
                    }
                }
            }
        }
    }
}

/// Masked multi-head attention over a packed `[B·L, 3D]` q/k/v buffer.
///
/// Per row `b` and head `h`: `S = q kᵀ · dh^−½`, masked scores replaced by −1e4, softmax over
/// keys, `O = S v`. Writes head-major `heads_out` (`[B, heads, L, dh]`); `scores` holds
/// `workers × L²` floats. With `workers > 1` the (row, head) tasks run on the current rayon pool
/// in `workers` contiguous groups. `avx512`: the softmax may use its AVX-512 build (the same
/// bits, [`ops::masked_softmax_in_place`]).
pub(crate) fn attention(
    qkv: &[f32],
    shape: AttnShape,
    mask: &[u8],
    scores: &mut [f32],
    heads_out: &mut [f32],
    workers: usize,
    avx512: bool,
) {
    let l = shape.len;
    let dh = shape.head_dim;
    let tasks = shape.batch * shape.heads;
    let task_len = l * dh;
    let scale = (dh as f64).powf(-0.5) as f32;
    let one = |task: usize, sc: &mut [f32], out: &mut [f32]| {
        attend_one(qkv, shape, task / shape.heads, task % shape.heads, mask, scale, avx512, sc, out)
    };
    let workers = workers.clamp(1, tasks.max(1));
    if workers == 1 {
        let sc = &mut scores[..l * l];
        for (task, out) in heads_out.chunks_exact_mut(task_len).take(tasks).enumerate() {
            one(task, sc, out);
        }
        return;
    }
    let per = tasks.div_ceil(workers);
    heads_out[..tasks * task_len]
        .par_chunks_mut(per * task_len)
        .zip(scores.par_chunks_mut(l * l))
        .enumerate()
        .for_each(|(g, (outs, sc))| {
            for (i, out) in outs.chunks_exact_mut(task_len).enumerate() {
                one(g * per + i, sc, out);
            }
        });
}

#[allow(clippy::too_many_arguments)]
fn attend_one(
    qkv: &[f32],
    shape: AttnShape,
    b: usize,
    h: usize,
    mask: &[u8],
    scale: f32,
    avx512: bool,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let l = shape.len;
    let dh = shape.head_dim;
    let d = shape.d();
    let rs = 3 * d;
    let row0 = b * l * rs;
    let q = View::rows(qkv, row0 + h * dh, l, dh, rs);
    // kᵀ: element (j, key) = k[key, j]
    let kt = View { data: qkv, offset: row0 + d + h * dh, rows: dh, cols: l, rs: 1, cs: rs };
    let v = View::rows(qkv, row0 + 2 * d + h * dh, l, dh, rs);
    matmul(ViewMut::rows(scores, 0, l, l, l), q, kt, scale, false, Split::Single);
    let m = &mask[b * l * l..(b + 1) * l * l];
    for (srow, mrow) in scores[..l * l].chunks_exact_mut(l).zip(m.chunks_exact(l)) {
        ops::masked_softmax_in_place(srow, mrow, avx512);
    }
    matmul(ViewMut::rows(out, 0, l, dh, dh), View::rows(scores, 0, l, l, l), v, 1.0, false, Split::Single);
}

/// `[B, heads, L, dh]` → `[B·L, D]` (heads concatenated in head order).
pub(crate) fn merge_heads(heads_out: &[f32], shape: AttnShape, dst: &mut [f32]) {
    let (l, dh, nh) = (shape.len, shape.head_dim, shape.heads);
    let d = shape.d();
    for b in 0..shape.batch {
        for h in 0..nh {
            let src = &heads_out[(b * nh + h) * l * dh..(b * nh + h + 1) * l * dh];
            for (t, s) in src.chunks_exact(dh).enumerate() {
                let o = (b * l + t) * d + h * dh;
                dst[o..o + dh].copy_from_slice(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_table_matches_closed_form() {
        let r = Rope::new(10_000.0, 8, 4);
        assert_eq!(r.positions(), 4);
        // position 0: cos 1, sin 0
        let (c, s) = r.row(0);
        assert!(c.iter().all(|&x| x == 1.0) && s.iter().all(|&x| x == 0.0));
        // inv = [1, 10000^-0.25 = 0.1, 0.01, 0.001]; position 3
        let (c, s) = r.row(3);
        for (m, inv) in [1.0f64, 0.1, 0.01, 0.001].iter().enumerate() {
            assert!((c[m] as f64 - (3.0 * inv).cos()).abs() < 1e-6, "cos m={m}");
            assert!((s[m] as f64 - (3.0 * inv).sin()).abs() < 1e-6, "sin m={m}");
        }
        // rotate-half on a unit vector: (a, b) = (1, 0) at angle 3 rad -> (cos 3, sin 3)
        let mut v = [1.0f32, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        r.rotate_heads(&mut v, 8, 3);
        assert!((v[0] - 3f32.cos()).abs() < 1e-6 && (v[4] - 3f32.sin()).abs() < 1e-6);
    }

    #[test]
    fn rope_uses_f32_frequencies_like_torch() {
        // base 160000, dh 64: inv[1] = 1 / f32(160000^(2/64)) rounded in f32
        let r = Rope::new(160_000.0, 64, 1001);
        let e = 2.0f32 / 64.0;
        let inv = 1.0f32 / (160_000f64.powf(e as f64) as f32);
        let angle = 1000.0f32 * inv;
        assert_eq!(r.row(1000).0[1], (angle as f64).cos() as f32);
    }

    #[test]
    fn sequential_masks_on_a_tiny_example() {
        // L = 5, half window 1, last two tokens padding
        let band = window_template(5, 1);
        let mut m = Masks::default();
        m.build(1, 5, &[1, 1, 1, 0, 0], &band, 1, None);
        let rows = |v: &[u8]| -> Vec<Vec<u8>> { v.chunks(5).map(|r| r.to_vec()).collect() };
        assert_eq!(rows(&m.full), vec![vec![1, 1, 1, 0, 0]; 5]);
        assert_eq!(
            rows(&m.local),
            vec![
                vec![1, 1, 0, 0, 0],
                vec![1, 1, 1, 0, 0],
                vec![0, 1, 1, 0, 0],
                vec![1, 1, 1, 0, 0], // padded query sees every valid key
                vec![1, 1, 1, 0, 0],
            ]
        );
    }

    #[test]
    fn parallel_masks_separate_options_and_use_positions() {
        // tokens: CLS q q | opt1 opt1 | opt2 opt2 ; option 2 restarts at position 3
        let valid = [1, 1, 1, 1, 1, 1, 1];
        let pos = [0, 1, 2, 3, 4, 3, 4];
        let opt = [0, 0, 0, 1, 1, 2, 2];
        let band = window_template(7, 1);
        let mut m = Masks::default();
        m.build(1, 7, &valid, &band, 1, Some((&pos, &opt)));
        let at = |v: &Vec<u8>, q: usize, k: usize| v[q * 7 + k];
        // option tokens cannot see the other option, can see shared tokens
        assert_eq!(at(&m.full, 3, 5), 0);
        assert_eq!(at(&m.full, 5, 4), 0);
        assert_eq!(at(&m.full, 5, 0), 1);
        assert_eq!(at(&m.full, 0, 5), 1);
        // sliding uses positions: token 5 (pos 3) sees token 2 (pos 2)
        assert_eq!(at(&m.local, 5, 2), 1);
        assert_eq!(at(&m.local, 5, 1), 0);
        // head mask is key padding only
        assert!(m.head.iter().all(|&x| x == 1));
    }

    #[test]
    fn attention_matches_naive_and_is_thread_independent() {
        // head_dim 20 and L 19 (odd sizes), two heads, two rows with 4 and 9 padded tokens,
        // sliding window of half-width 3
        let (l, dh, heads) = (19usize, 20usize, 2usize);
        let shape = AttnShape { batch: 2, len: l, heads, head_dim: dh };
        let d = heads * dh;
        let qkv: Vec<f32> = (0..2 * l * 3 * d).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.05).collect();
        let mut valid = vec![1; 2 * l];
        valid[l - 4..l].fill(0);
        valid[2 * l - 9..].fill(0);
        let band = window_template(l, 3);
        let mut m = Masks::default();
        m.build(2, l, &valid, &band, 3, None);
        let mut outs = Vec::new();
        // the softmax's AVX-512 build (where this CPU has one) gives the same bits
        for (workers, avx512) in [(1, false), (2, false), (3, false), (1, true), (2, true)] {
            let mut scores = vec![0.0f32; workers * l * l];
            let mut heads_out = vec![0.0f32; 2 * l * d];
            let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
            pool.install(|| attention(&qkv, shape, &m.local, &mut scores, &mut heads_out, workers, avx512));
            let mut merged = vec![0.0f32; 2 * l * d];
            merge_heads(&heads_out, shape, &mut merged);
            outs.push(merged);
        }
        for (i, o) in outs.iter().enumerate().skip(1) {
            assert_eq!(&outs[0], o, "run {i}");
        }
        // naive f64 reference for every (row, head, query, column)
        let scale = (dh as f64).powf(-0.5);
        let row = |b: usize, t: usize| &qkv[(b * l + t) * 3 * d..(b * l + t + 1) * 3 * d];
        for b in 0..2 {
            for h in 0..heads {
                for q in 0..l {
                    let mut s: Vec<f64> = (0..l)
                        .map(|k| {
                            let dotp: f64 = (0..dh)
                                .map(|j| row(b, q)[h * dh + j] as f64 * row(b, k)[d + h * dh + j] as f64)
                                .sum();
                            if m.local[b * l * l + q * l + k] != 0 {
                                dotp * scale
                            } else {
                                -1e4
                            }
                        })
                        .collect();
                    let mx = s.iter().cloned().fold(f64::MIN, f64::max);
                    let z: f64 = s.iter().map(|x| (x - mx).exp()).sum();
                    for x in s.iter_mut() {
                        *x = (*x - mx).exp() / z;
                    }
                    for j in 0..dh {
                        let want: f64 = (0..l).map(|k| s[k] * row(b, k)[2 * d + h * dh + j] as f64).sum();
                        let got = outs[0][(b * l + q) * d + h * dh + j] as f64;
                        assert!(
                            (got - want).abs() < 2e-6,
                            "row {b} head {h} query {q} column {j}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rope_gives_the_scalar_bits_on_every_build_and_thread_count() {
        // half = 20: two 8-wide steps and a remainder of 4; positions out of order
        let shape = AttnShape { batch: 2, len: 7, heads: 3, head_dim: 40 };
        let d = 120;
        let rows = 14;
        let rope = Rope::new(10_000.0, 40, 16);
        let pos: Vec<i32> = (0..rows as i32).map(|r| (r * 5) % 16).collect();
        let qkv: Vec<f32> = (0..rows * 3 * d).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013).collect();
        // the rotate-half formula, scalar, written out here
        let mut want = qkv.clone();
        for r in 0..rows {
            let (c, s) = rope.row(pos[r] as usize);
            for h in 0..6 {
                let v = &mut want[r * 3 * d + h * 40..r * 3 * d + (h + 1) * 40];
                for m in 0..20 {
                    let (x, y) = (v[m], v[m + 20]);
                    v[m] = x * c[m] - y * s[m];
                    v[m + 20] = y * c[m] + x * s[m];
                }
            }
        }
        assert_ne!(want, qkv);
        for workers in [1, 2, 3] {
            let mut got = qkv.clone();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
            pool.install(|| apply_rope(&mut got, shape, &rope, Some(&pos), workers));
            let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{workers} workers");
            // v is untouched
            for r in 0..rows {
                assert_eq!(got[r * 3 * d + 2 * d..(r + 1) * 3 * d], qkv[r * 3 * d + 2 * d..(r + 1) * 3 * d]);
            }
        }
        // without positions, token t of each row is at position t
        let mut a = qkv.clone();
        let implicit: Vec<i32> = (0..rows as i32).map(|r| r % 7).collect();
        let mut b = qkv.clone();
        apply_rope(&mut a, shape, &rope, None, 1);
        apply_rope(&mut b, shape, &rope, Some(&implicit), 1);
        assert_eq!(a, b);
    }
}
