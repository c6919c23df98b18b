//! The BF16 pair-dot Linear product (`vdpbf16ps`, AVX-512 BF16): `y = x Wᵀ` with `W` stored as
//! BF16 in [`HalfOrder::Pairs16`] and `x` rounded to BF16 (round to nearest even) at the input of
//! each product; products of two BF16 values are exact in f32 and every sum is f32, so this is
//! the arithmetic of PyTorch's CPU BF16 matmul (BF16 operands, f32 accumulation).
//!
//! Blocking: the output columns go in blocks of 64 (four 16-row weight panels), one block per
//! task on the engine's workers; within a block, rows of `x` go six at a time through a 6 × 64
//! register tile (24 accumulators), so a block's weights (`64 · in · 2` bytes, 96 KiB at
//! `in` = 768) are read from memory once and then from L2 for the other row chunks.

// Off x86-64 the kernel body is compiled out (`available()` is false and callers take the
// portable path), which leaves its helpers unused there.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, unused_variables, dead_code))]

use std::cell::RefCell;

use rayon::prelude::*;

use super::isa::Isa;
use super::linalg::{DstPtr, Split};
use crate::model::lowp::{DenseHalf, HalfOrder, PANEL_ROWS};

/// Rows of `x` per register tile.
const MR: usize = 6;
/// Weight panels (of 16 output columns) per register tile.
const NP: usize = 4;

thread_local! {
    /// `x` rounded to BF16, row-major `[m, in rounded up to even]`, reused across calls.
    static XBF: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ` (no bias). Returns false, doing nothing, when the kernel
/// is not part of `isa` or cannot run here, `w` is not in [`HalfOrder::Pairs16`] or a slice is too short; the caller
/// then takes the portable path.
pub(crate) fn linear(
    x: &[f32],
    m: usize,
    w: &DenseHalf,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
    isa: Isa,
) -> bool {
    let (k, out) = (w.cols(), w.rows());
    if !isa.has_bf16_dot()
        || w.order() != HalfOrder::Pairs16
        || x.len() < m * k
        || y.len() < m * out
        || w.data().len() != out.next_multiple_of(PANEL_ROWS) * w.cols_even()
    {
        return false;
    }
    if m == 0 || out == 0 {
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let ke = w.cols_even();
        XBF.with(|buf| {
            let mut xb = buf.borrow_mut();
            xb.clear();
            xb.resize(m * ke, 0);
            for (src, dst) in x[..m * k].chunks_exact(k.max(1)).zip(xb.chunks_exact_mut(ke)) {
                // SAFETY: `has_bf16_dot()` confirmed AVX-512F and AVX-512 BF16 at run time.
                unsafe { avx512::round_row(src, dst) };
            }
            let xb: &[u16] = &xb;
            let panels = out.div_ceil(PANEL_ROWS);
            let blocks = panels.div_ceil(NP);
            let dst = DstPtr(y.as_mut_ptr());
            let block = |bi: usize| {
                let p0 = bi * NP;
                let np = NP.min(panels - p0);
                let c0 = p0 * PANEL_ROWS;
                let ncols = (out - c0).min(np * PANEL_ROWS);
                let wp = &w.data()[p0 * PANEL_ROWS * ke..(p0 + np) * PANEL_ROWS * ke];
                // SAFETY: AVX-512F/BF16 checked above; `xb` holds m × ke values, `wp` np panels
                // of 16 × ke, and the destination columns [c0, c0 + ncols) of the m rows of
                // `y` (row stride `out`, length ≥ m·out checked above) are written by this
                // block only.
                unsafe { avx512::block(xb, m, ke, wp, np, dst, c0, out, ncols, accumulate) };
            };
            match split {
                Split::Single => (0..blocks).for_each(block),
                _ => (0..blocks).into_par_iter().for_each(block),
            }
        });
    }
    true
}

#[cfg(target_arch = "x86_64")]
pub(super) use avx512::round_row;

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{DstPtr, MR, NP};
    use crate::model::lowp::PANEL_ROWS;

    /// Round `src` to BF16 bits (nearest even) into `dst` (`dst.len()` = `src.len()` rounded
    /// up to even; the pad stays zero).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512 BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(in crate::backend::portable) unsafe fn round_row(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: i + 32 ≤ n ≤ both lengths, so the two 16-float loads and the 64-byte store
            // stay inside the slices (unaligned accesses).
            unsafe {
                let lo = _mm512_loadu_ps(src.as_ptr().add(i));
                let hi = _mm512_loadu_ps(src.as_ptr().add(i + 16));
                let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
                _mm512_storeu_si512(dst.as_mut_ptr().add(i) as *mut __m512i, v);
            }
            i += 32;
        }
        for j in i..n {
            dst[j] = half::bf16::from_f32(src[j]).to_bits();
        }
    }

    /// One block of `np ≤ NP` panels: all `m` rows of `x` against weights `wp`.
    ///
    /// # Safety
    /// AVX-512F and AVX-512 BF16; `xb.len() ≥ m·ke`; `wp.len() = np·16·ke`; `dst` points at
    /// a live f32 array of at least `m·ld` values of which this call alone writes columns
    /// `[c0, c0 + ncols)`, `ncols ≤ np·16`, `c0 + ncols ≤ ld`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block(
        xb: &[u16],
        m: usize,
        ke: usize,
        wp: &[u16],
        np: usize,
        dst: DstPtr,
        c0: usize,
        ld: usize,
        ncols: usize,
        acc: bool,
    ) {
        let mut r = 0;
        while r < m {
            let mr = MR.min(m - r);
            // SAFETY: rows [r, r + mr) ⊆ [0, m); the caller's contract covers the rest.
            unsafe {
                let a = xb.as_ptr().add(r * ke);
                let c = dst.0.add(r * ld + c0);
                macro_rules! go {
                    ($np:literal) => {
                        match mr {
                            6 => tile::<6, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                            5 => tile::<5, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                            4 => tile::<4, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                            3 => tile::<3, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                            2 => tile::<2, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                            _ => tile::<1, $np>(a, ke, wp.as_ptr(), ncols, c, ld, acc),
                        }
                    };
                }
                match np {
                    4 => go!(4),
                    3 => go!(3),
                    2 => go!(2),
                    _ => go!(1),
                }
            }
            r += mr;
        }
        const _: () = assert!(NP == 4 && MR == 6);
    }

    /// The register tile: `R` rows × `P` panels, the whole reduction.
    ///
    /// # Safety
    /// AVX-512F and AVX-512 BF16; `a` points at `R` rows of `ke` BF16 values (row stride
    /// `ke`, even); `w` at `P` panels of `16·ke` values; `c` at `R` rows (stride `ld`) of
    /// which columns `[0, ncols)`, `ncols ≤ 16·P`, are written.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize>(
        a: *const u16,
        ke: usize,
        w: *const u16,
        ncols: usize,
        c: *mut f32,
        ld: usize,
        accumulate: bool,
    ) {
        let mut sum = [[_mm512_setzero_ps(); P]; R];
        let pairs = ke / 2;
        let panel = PANEL_ROWS * ke;
        for p in 0..pairs {
            let mut b = [_mm512_setzero_si512(); P];
            for (j, bj) in b.iter_mut().enumerate() {
                // SAFETY: panel j, pair p: 32 values at j·16·ke + 32p < P·16·ke.
                *bj = unsafe { _mm512_loadu_si512(w.add(j * panel + p * 32) as *const __m512i) };
            }
            for (i, row) in sum.iter_mut().enumerate() {
                // SAFETY: row i < R, pair p < ke/2: the u32 at i·ke + 2p lies inside row i.
                let pair = unsafe { (a.add(i * ke + 2 * p) as *const u32).read_unaligned() };
                // SAFETY: bit casts between 512-bit vector types of the same size.
                let av: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(pair as i32)) };
                for (s, bj) in row.iter_mut().zip(&b) {
                    // SAFETY: a bit cast between 512-bit vector types of the same size.
                    let bv: __m512bh = unsafe { std::mem::transmute(*bj) };
                    *s = _mm512_dpbf16_ps(*s, av, bv);
                }
            }
        }
        for (i, row) in sum.iter().enumerate() {
            for (j, s) in row.iter().enumerate() {
                let valid = ncols.saturating_sub(j * 16).min(16);
                if valid == 0 {
                    continue;
                }
                let mask: __mmask16 = if valid == 16 { 0xFFFF } else { (1u16 << valid) - 1 };
                // SAFETY: row i < R and columns [16j, 16j + valid) ⊆ [0, ncols): inside the
                // caller's block; masked lanes are neither read nor written.
                unsafe {
                    let p = c.add(i * ld + j * 16);
                    let v = if accumulate { _mm512_add_ps(_mm512_maskz_loadu_ps(mask, p), *s) } else { *s };
                    _mm512_mask_storeu_ps(p, mask, v);
                }
            }
        }
    }
}
