//! Attention pieces of the portable engine: RoPE tables, the per-request masks and the
//! per-head masked attention (docs/host-path.md §2 steps 2, 3 and 6).

use rayon::prelude::*;

use super::linalg::{grow, matmul, DstPtr, Split, View, ViewMut};
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

/// RoPE for one attention call: the tables, and each token's position (`positions[b·L + t]`
/// for token `t` of row `b`, or `t` where there are none).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RopeAt<'a> {
    pub rope: &'a Rope,
    pub positions: Option<&'a [i32]>,
}

impl RopeAt<'_> {
    /// Position of token `t` of row `b` in a batch of rows of `len` tokens.
    fn position(&self, b: usize, t: usize, len: usize) -> usize {
        match self.positions {
            Some(p) => p[b * len + t] as usize,
            None => t,
        }
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
    /// Build the masks for a batch (docs/host-path.md §2 step 2 and the parallel layout of
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

/// Which build of the two attention products (`q kᵀ` and `S v`) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttnKernel {
    /// The `gemm` crate on strided views (any CPU).
    Gemm,
    /// Register tiles on AVX-512F (16-wide).
    Avx512,
}

impl AttnKernel {
    /// The build for an engine on `isa`: the register tiles on AVX-512 (which the engine only
    /// selects where the CPU has it), the `gemm` crate otherwise. The same tiles 8 wide on
    /// AVX2 were no faster than the `gemm` crate in the forward (docs/PERFORMANCE.md).
    pub(crate) fn for_isa(isa: super::isa::Isa) -> Self {
        match isa {
            super::isa::Isa::Avx512 => AttnKernel::Avx512,
            super::isa::Isa::Avx2 | super::isa::Isa::Generic => AttnKernel::Gemm,
        }
    }

    /// Whether the softmax may take its AVX-512 build (the same bits as its AVX2 build).
    fn wide(self) -> bool {
        self == AttnKernel::Avx512
    }
}

/// Masked multi-head attention over a packed `[B·L, 3D]` q/k/v buffer.
///
/// Per row `b` and head `h`: q and k rotated by `rope` (when given), `S = q kᵀ · dh^−½`, masked
/// scores replaced by −1e4, softmax over keys, `O = S v`, written to columns `[h·dh, (h + 1)·dh)`
/// of rows `[b·L, (b + 1)·L)` of `out` (`[B·L, D]`, the heads side by side). `scores` holds
/// `workers × L²` floats. With `workers > 1` the (row, head) tasks run on the current rayon pool
/// in `workers` contiguous groups. RoPE is applied to a task's own copies of its head's q and k
/// rows, with the same arithmetic as a pass over the whole buffer would use, so the buffer is
/// left as it is and the pass (and its parallel loop) is saved. On the register tiles
/// ([`AttnKernel::Avx512`]) every score and output element is one chain of fused multiply-adds
/// in index order, whatever the row's place in the batch; the `gemm` crate's sums are ordered
/// its own way (within f32 rounding of them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention(
    qkv: &[f32],
    shape: AttnShape,
    mask: &[u8],
    rope: Option<RopeAt<'_>>,
    scores: &mut [f32],
    out: &mut [f32],
    workers: usize,
    kernel: AttnKernel,
) {
    let l = shape.len;
    let tasks = shape.batch * shape.heads;
    assert!(
        qkv.len() >= shape.batch * l * 3 * shape.d() && out.len() >= shape.batch * l * shape.d(),
        "attention operands out of bounds"
    );
    let scale = (shape.head_dim as f64).powf(-0.5) as f32;
    let dst = DstPtr(out.as_mut_ptr());
    let one = |task: usize, sc: &mut [f32]| {
        let (b, h) = (task / shape.heads, task % shape.heads);
        attend_one(qkv, shape, b, h, mask, rope, scale, kernel, sc, &dst)
    };
    let workers = workers.clamp(1, tasks.max(1));
    if workers == 1 {
        let sc = &mut scores[..l * l];
        for task in 0..tasks {
            one(task, sc);
        }
        return;
    }
    let per = tasks.div_ceil(workers);
    scores[..workers * l * l].par_chunks_mut(l * l).enumerate().for_each(|(g, sc)| {
        for task in g * per..((g + 1) * per).min(tasks) {
            one(task, sc);
        }
    });
}

thread_local! {
    /// One head's query rows (`L × dh`), rotated where RoPE applies, and its key rows likewise
    /// (this scratch and the next are outside `forward_scratch_bytes`: a few tens of KiB per
    /// thread against its L² scores).
    static QUERIES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    static KEYS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// One head's output rows (`L × dh`) on the `gemm` crate's path, before they go to their
    /// columns of the destination.
    static OUTPUT: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// One head's keys transposed for the register-tile kernels: `dh` rows of `L` rounded up
    /// to 16 (zeros past `L`), at most `dh × (L + 15)` floats per thread.
    static KEYS_T: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// One head's values gathered into `L` contiguous rows of `dh` (in `qkv` they lie `3D`
    /// apart, a stride that maps every row onto the same few L1 sets): `L × dh` floats.
    static VALUES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `buf` (grown to `l·dh`) ← the `dh`-wide part at `offset` of each of `l` rows of `qkv` (stride
/// `rs`), each rotated by RoPE at its token's position when `rope` is given.
fn gather_rows(
    buf: &mut Vec<f32>,
    qkv: &[f32],
    offset: usize,
    rs: usize,
    l: usize,
    dh: usize,
    rope: Option<(RopeAt<'_>, usize)>,
) {
    grow(buf, l * dh);
    for (t, row) in buf.chunks_exact_mut(dh).take(l).enumerate() {
        row.copy_from_slice(&qkv[offset + t * rs..offset + t * rs + dh]);
        if let Some((r, b)) = rope {
            r.rope.rotate_heads(row, dh, r.position(b, t, l));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn attend_one(
    qkv: &[f32],
    shape: AttnShape,
    b: usize,
    h: usize,
    mask: &[u8],
    rope: Option<RopeAt<'_>>,
    scale: f32,
    kernel: AttnKernel,
    scores: &mut [f32],
    dst: &DstPtr,
) {
    let l = shape.len;
    let dh = shape.head_dim;
    let d = shape.d();
    let rs = 3 * d;
    let row0 = b * l * rs;
    let m = &mask[b * l * l..(b + 1) * l * l];
    let rope = rope.map(|r| (r, b));
    // where this task's output goes: rows [b·L, (b + 1)·L), columns [h·dh, (h + 1)·dh)
    let out_at = (b * l) * d + h * dh;
    QUERIES.with(|qs| {
        KEYS.with(|ks| {
            let (mut qs, mut ks) = (qs.borrow_mut(), ks.borrow_mut());
            gather_rows(&mut qs, qkv, row0 + h * dh, rs, l, dh, rope);
            gather_rows(&mut ks, qkv, row0 + d + h * dh, rs, l, dh, rope);
            // The key gather takes offsets t·dh, t < L rounded up to 16, as i32: beyond that
            // (heads of billions of floats) the `gemm` crate's path below.
            #[cfg(target_arch = "x86_64")]
            let lp = l.next_multiple_of(16);
            #[cfg(target_arch = "x86_64")]
            if kernel == AttnKernel::Avx512 && lp.checked_mul(dh).is_some_and(|n| n <= i32::MAX as usize) {
                assert!(scores.len() >= l * l && dh > 0, "attention scratch too short");
                KEYS_T.with(|kt| {
                    let mut kt = kt.borrow_mut();
                    grow(&mut kt, dh * lp);
                    // SAFETY: CPU features as below; `ks` holds l rows of dh values; `kt` holds
                    // dh rows of lp values; every key offset t·dh, t < lp, fits an i32 (checked
                    // above).
                    unsafe { tiles512::transpose(ks.as_ptr(), dh, l, dh, kt.as_mut_ptr(), lp) }
                    // SAFETY: the kernels' CPU features: `AttnKernel::for_isa` picks the register
                    // tiles only for an engine whose ISA runs here. Bounds: `qs` holds l rows of
                    // dh values; `kt` dh rows of lp ≥ l values; `scores` l² values (checked
                    // above).
                    unsafe {
                        tiles512::scores(qs.as_ptr(), dh, kt.as_ptr(), lp, l, dh, scale, scores.as_mut_ptr())
                    }
                });
                for (srow, mrow) in scores[..l * l].chunks_exact_mut(l).zip(m.chunks_exact(l)) {
                    ops::masked_softmax_in_place(srow, mrow, kernel.wide());
                }
                VALUES.with(|vals| {
                    let mut vals = vals.borrow_mut();
                    gather_rows(&mut vals, qkv, row0 + 2 * d + h * dh, rs, l, dh, None);
                    // SAFETY: as above; `vals` holds l rows of dh values; the destination's rows
                    // [b·L, (b + 1)·L) (stride d) exist (`attention` checked `out`), and of them
                    // this task alone writes columns [h·dh, (h + 1)·dh).
                    unsafe {
                        tiles512::weighted(scores.as_ptr(), l, vals.as_ptr(), dh, dh, dst.0.add(out_at), d)
                    }
                });
                return;
            }
            let q = View::rows(&qs, 0, l, dh, dh);
            // kᵀ: element (j, key) = k[key, j]
            let kt = View { data: &ks, offset: 0, rows: dh, cols: l, rs: 1, cs: dh };
            let v = View::rows(qkv, row0 + 2 * d + h * dh, l, dh, rs);
            matmul(ViewMut::rows(scores, 0, l, l, l), q, kt, scale, false, Split::Single);
            for (srow, mrow) in scores[..l * l].chunks_exact_mut(l).zip(m.chunks_exact(l)) {
                ops::masked_softmax_in_place(srow, mrow, kernel.wide());
            }
            OUTPUT.with(|o| {
                let mut o = o.borrow_mut();
                grow(&mut o, l * dh);
                matmul(
                    ViewMut::rows(&mut o, 0, l, dh, dh),
                    View::rows(scores, 0, l, l, l),
                    v,
                    1.0,
                    false,
                    Split::Single,
                );
                for (t, row) in o.chunks_exact(dh).take(l).enumerate() {
                    // SAFETY: row b·L + t of the destination (stride d), columns [h·dh, (h +
                    // 1)·dh): inside it (`attention` checked `out`), written by this task alone.
                    unsafe { std::ptr::copy_nonoverlapping(row.as_ptr(), dst.0.add(out_at + t * d), dh) };
                }
            });
        })
    });
}

/// The two attention products on AVX-512F register tiles (an AVX2 build of the same tiles was
/// not kept: docs/PERFORMANCE.md). Every output element is one accumulator: a chain of fused
/// multiply-adds over the reduction index in order, so the tile shape and the row's place do
/// not change its bits.
#[cfg(target_arch = "x86_64")]
mod tiles512 {
    use std::arch::x86_64::*;

    /// Floats per vector.
    const W: usize = 16;
    /// Score tile: query rows × vectors of keys (24 accumulators).
    const SR: usize = 4;
    const SC: usize = 6;
    /// Output tile: query rows × vectors of output columns (24 accumulators).
    const OR: usize = 6;
    const OC: usize = 4;

    /// The tiles of a product with `rows` rows and `cols` columns: chunks of at most `max_c`
    /// vectors of columns, each in groups of `max_r` rows and then single rows. Calls
    /// `f(first row, whether the group is max_r rows, first vector, vectors, values in the
    /// chunk's last vector)`.
    #[inline(always)]
    fn walk(
        rows: usize,
        cols: usize,
        max_r: usize,
        max_c: usize,
        mut f: impl FnMut(usize, bool, usize, usize, usize),
    ) {
        let nv = cols.div_ceil(W);
        let mut c = 0;
        while c < nv {
            let cv = (nv - c).min(max_c);
            let last = (cols - (c + cv - 1) * W).min(W);
            let mut r = 0;
            while r < rows {
                let full = rows - r >= max_r;
                f(r, full, c, cv, last);
                r += if full { max_r } else { 1 };
            }
            c += cv;
        }
    }

    /// `match cv { c => f::<R, c>(args) }` over the listed column counts.
    macro_rules! by_cols {
        ($f:ident, $r:tt, $cv:expr, [$($c:literal)+], $args:expr) => {
            match $cv {
                $($c => $f::<$r, $c>($args),)+
                _ => unreachable!("a chunk of at most the tile's vectors"),
            }
        };
    }

    /// `kt[j·lp + t] = k[t·ks + j]` for `t < l`, `j < dh`; zeros for `l ≤ t < lp`. Keys are
    /// gathered 16 at a time, all `dh` columns of a group before the next group, so the group's
    /// rows stay in L1 (rows `ks` floats apart fall into a few L1 sets).
    ///
    /// # Safety
    /// AVX-512F; `k` points at `l` rows (stride `ks`) of `dh` readable values; `kt` at `dh·lp`
    /// writable values, `lp` a multiple of 16 and ≥ `l`; `lp·ks ≤ i32::MAX`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn transpose(k: *const f32, ks: usize, l: usize, dh: usize, kt: *mut f32, lp: usize) {
        let idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(ks as i32),
        );
        for g in (0..lp).step_by(W) {
            let n = l.saturating_sub(g).min(W);
            // SAFETY: lanes t < n read rows g + t < l, column j < dh (masked-off lanes are not
            // read); the offsets t·ks fit an i32 (the caller's bound); the stores write row j,
            // columns [g, g + 16) ⊆ [0, lp).
            unsafe {
                let rows = k.add(g * ks);
                for j in 0..dh {
                    let v = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), mask(n), idx, rows.add(j));
                    _mm512_storeu_ps(kt.add(j * lp + g), v);
                }
            }
        }
    }

    /// `s[i·l + c] = scale · Σ_j q[i·qs + j] · kt[j·lp + c]` for `i, c < l`.
    ///
    /// # Safety
    /// AVX-512F; `q` points at `l` rows (stride `qs`) of `dh` readable values; `kt` at `dh`
    /// rows of `lp` values, `lp` a multiple of 16 and ≥ `l`; `s` at `l·l` writable values.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn scores(
        q: *const f32,
        qs: usize,
        kt: *const f32,
        lp: usize,
        l: usize,
        dh: usize,
        scale: f32,
        s: *mut f32,
    ) {
        walk(l, l, SR, SC, |r, full, c, cv, last| {
            // SAFETY: rows [r, r + SR or 1) < l and vectors [c, c + cv) of the l (padded to
            // lp) columns: inside the caller's operands.
            unsafe {
                let args = (q.add(r * qs), qs, kt.add(c * W), lp, dh, scale, s.add(r * l + c * W), l, last);
                if full {
                    by_cols!(score_tile, 4, cv, [1 2 3 4 5 6], args)
                } else {
                    by_cols!(score_tile, 1, cv, [1 2 3 4 5 6], args)
                }
            }
        });
    }

    /// `R` query rows × `C` vectors of keys; the last vector stores `last` values.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn score_tile<const R: usize, const C: usize>(
        (q, qs, kt, lp, dh, scale, s, ls, last): (
            *const f32,
            usize,
            *const f32,
            usize,
            usize,
            f32,
            *mut f32,
            usize,
            usize,
        ),
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        for j in 0..dh {
            // SAFETY (this block): row j < dh of kt, vectors c < C inside its lp values (the
            // caller's chunk); q row i < R, column j < dh.
            let kv: [__m512; C] = std::array::from_fn(|c| unsafe { _mm512_loadu_ps(kt.add(j * lp + c * W)) });
            for (i, row) in acc.iter_mut().enumerate() {
                let a = _mm512_set1_ps(unsafe { *q.add(i * qs + j) });
                for (x, k) in row.iter_mut().zip(&kv) {
                    *x = _mm512_fmadd_ps(a, *k, *x);
                }
            }
        }
        let sv = _mm512_set1_ps(scale);
        for (i, row) in acc.iter().enumerate() {
            for (c, x) in row.iter().enumerate() {
                let n = if c + 1 == C { last } else { W };
                // SAFETY: row i < R, columns [c·16, c·16 + n) inside the row of ls values.
                unsafe { store(s.add(i * ls + c * W), _mm512_mul_ps(*x, sv), n) };
            }
        }
    }

    /// `out[i·ldo + c] = Σ_key p[i·l + key] · v[key·vs + c]` for `i < l`, `c < dh`.
    ///
    /// # Safety
    /// AVX-512F; `p` points at `l·l` values; `v` at `l` rows (stride `vs`) of `dh` readable
    /// values; `out` at `l` rows (stride `ldo`) of `dh` writable values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn weighted(
        p: *const f32,
        l: usize,
        v: *const f32,
        vs: usize,
        dh: usize,
        out: *mut f32,
        ldo: usize,
    ) {
        walk(l, dh, OR, OC, |r, full, c, cv, last| {
            // SAFETY: rows [r, r + OR or 1) < l and vectors [c, c + cv) cover columns below dh
            // (the last one `last` of them): inside the caller's operands.
            unsafe {
                let args = (p.add(r * l), l, v.add(c * W), vs, out.add(r * ldo + c * W), ldo, last);
                if full {
                    by_cols!(out_tile, 6, cv, [1 2 3 4], args)
                } else {
                    by_cols!(out_tile, 1, cv, [1 2 3 4], args)
                }
            }
        });
        const _: () = assert!(SR == 4 && SC == 6 && OR == 6 && OC == 4);
    }

    /// `R` query rows × `C` vectors of output columns; the last vector reads and writes `last`
    /// values.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn out_tile<const R: usize, const C: usize>(
        (p, l, v, vs, out, ld, last): (*const f32, usize, *const f32, usize, *mut f32, usize, usize),
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        let tail = mask(last);
        for key in 0..l {
            // SAFETY (this block): v row key < l, the chunk's columns (the last vector only its
            // first `last`, masked-off lanes are not read); p row i < R, column key < l.
            let vv: [__m512; C] = std::array::from_fn(|c| unsafe {
                let at = v.add(key * vs + c * W);
                if c + 1 == C {
                    _mm512_maskz_loadu_ps(tail, at)
                } else {
                    _mm512_loadu_ps(at)
                }
            });
            for (i, row) in acc.iter_mut().enumerate() {
                let a = _mm512_set1_ps(unsafe { *p.add(i * l + key) });
                for (x, w) in row.iter_mut().zip(&vv) {
                    *x = _mm512_fmadd_ps(a, *w, *x);
                }
            }
        }
        for (i, row) in acc.iter().enumerate() {
            for (c, x) in row.iter().enumerate() {
                let n = if c + 1 == C { last } else { W };
                // SAFETY: row i < R, columns [c·16, c·16 + n) inside the row of ld values.
                unsafe { store(out.add(i * ld + c * W), *x, n) };
            }
        }
    }

    /// Lanes `[0, n)`, `n ≤ 16`.
    #[inline(always)]
    fn mask(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }

    /// Store lanes `[0, n)` of `v` at `p`, `n ≤ 16` (masked-off lanes are not written).
    ///
    /// # Safety
    /// AVX-512F; `n` values writable at `p`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store(p: *mut f32, v: __m512, n: usize) {
        // SAFETY: the caller's bounds; masked-off lanes are not written.
        unsafe { _mm512_mask_storeu_ps(p, mask(n), v) }
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

    /// The attention builds that run on this CPU.
    fn kernels_here() -> Vec<AttnKernel> {
        let mut k: Vec<AttnKernel> =
            crate::backend::portable::Isa::all_here().into_iter().map(AttnKernel::for_isa).collect();
        k.dedup();
        k
    }

    /// Attention on two rows (4 and 9 padded tokens) with a sliding window of half-width 3:
    /// every build that runs here against a naive f64 reference, and each build bit for bit
    /// alike on every thread count.
    fn check_attention(l: usize, dh: usize, heads: usize) {
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
        for kernel in kernels_here() {
            for workers in [1, 2, 3] {
                let mut scores = vec![0.0f32; workers * l * l];
                let mut merged = vec![f32::NAN; 2 * l * d];
                let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
                pool.install(|| {
                    attention(&qkv, shape, &m.local, None, &mut scores, &mut merged, workers, kernel)
                });
                outs.push((kernel, workers, merged));
            }
        }
        for (kernel, workers, o) in &outs {
            let (_, _, o1) = outs.iter().find(|(k, _, _)| k == kernel).expect("the kernel itself");
            let same = o.iter().zip(o1).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "L {l} dh {dh}: {kernel:?} on {workers} workers differs from 1 worker");
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
                        for (kernel, _, o) in outs.iter().filter(|(_, w, _)| *w == 1) {
                            let got = o[(b * l + q) * d + h * dh + j] as f64;
                            assert!(
                                (got - want).abs() < 2e-6,
                                "{kernel:?}, L {l} dh {dh}, row {b} head {h} query {q} column {j}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn attention_matches_naive_and_is_thread_independent() {
        // head_dim 20 and L 19 (odd sizes: partial vectors in both products)
        check_attention(19, 20, 2);
    }

    #[test]
    fn attention_tiles_cover_long_rows_and_wide_heads() {
        // L 101: two column chunks of the score tile, a row remainder on both tiles; dh 72: two
        // output chunks (4 + 1 vectors, the last half full); and exact multiples (L 96, dh 64:
        // the model's shape)
        check_attention(101, 72, 2);
        check_attention(96, 64, 1);
        // L 112: a first chunk of 6 full vectors before a seventh (its last vector is full, not
        // the 32 values that remain of the row)
        check_attention(112, 16, 1);
        check_attention(10, 8, 3);
    }

    #[test]
    fn rope_inside_attention_gives_the_bits_of_rotating_q_and_k_first() {
        // half = 20: two 8-wide steps and a remainder of 4; positions out of order
        let shape = AttnShape { batch: 2, len: 7, heads: 3, head_dim: 40 };
        let (d, l, rows) = (120, 7, 14);
        let rope = Rope::new(10_000.0, 40, 16);
        let pos: Vec<i32> = (0..rows as i32).map(|r| (r * 5) % 16).collect();
        let qkv: Vec<f32> = (0..rows * 3 * d).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013).collect();
        // the rotate-half formula, scalar, written out here, on q and k (not v)
        let rotated = |positions: &dyn Fn(usize) -> usize| {
            let mut want = qkv.clone();
            for r in 0..rows {
                let (c, s) = rope.row(positions(r));
                for h in 0..6 {
                    let v = &mut want[r * 3 * d + h * 40..r * 3 * d + (h + 1) * 40];
                    for m in 0..20 {
                        let (x, y) = (v[m], v[m + 20]);
                        v[m] = x * c[m] - y * s[m];
                        v[m + 20] = y * c[m] + x * s[m];
                    }
                }
            }
            want
        };
        let by_ids = rotated(&|r| pos[r] as usize);
        let by_token = rotated(&|r| r % l);
        assert_ne!(by_ids, qkv);
        let valid = vec![1; rows];
        let mut m = Masks::default();
        m.build(2, l, &valid, &window_template(l, 2), 2, None);
        let run = |qkv: &[f32], rope: Option<RopeAt<'_>>, kernel: AttnKernel, workers: usize| {
            let mut scores = vec![0.0f32; workers * l * l];
            let mut out = vec![f32::NAN; rows * d];
            let pool = rayon::ThreadPoolBuilder::new().num_threads(workers).build().unwrap();
            pool.install(|| attention(qkv, shape, &m.local, rope, &mut scores, &mut out, workers, kernel));
            out
        };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for kernel in kernels_here() {
            let want = bits(&run(&by_ids, None, kernel, 1));
            let want_token = bits(&run(&by_token, None, kernel, 1));
            assert_ne!(want, bits(&run(&qkv, None, kernel, 1)), "{kernel:?}: RoPE changes the output");
            for workers in [1, 2, 3] {
                let got = run(&qkv, Some(RopeAt { rope: &rope, positions: Some(&pos) }), kernel, workers);
                assert_eq!(bits(&got), want, "{kernel:?}, {workers} workers, position ids");
                // without positions, token t of each row is at position t
                let got = run(&qkv, Some(RopeAt { rope: &rope, positions: None }), kernel, workers);
                assert_eq!(bits(&got), want_token, "{kernel:?}, {workers} workers, token positions");
            }
        }
    }
}
