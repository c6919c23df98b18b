//! The BF16 pair-dot Linear product (`vdpbf16ps`, AVX-512 BF16): `y = x Wᵀ` with `W` stored as
//! BF16 in [`HalfOrder::Pairs16`] and `x` rounded to BF16 (round to nearest even) at the input of
//! each product; products of two BF16 values are exact in f32 and every sum is f32, so this is
//! the arithmetic of PyTorch's CPU BF16 matmul (BF16 operands, f32 accumulation).
//!
//! Blocking: the output columns go in blocks of 64 (four 16-row weight panels), one block per
//! task on the engine's workers; within a block, rows of `x` go six at a time through a 6 × 64
//! register tile (24 accumulators), so a block's weights (`64 · in · 2` bytes, 96 KiB at
//! `in` = 768) are read from memory once and then from L2 for the other row chunks.
//!
//! 8-bit palettized weights ([`linear_palettized`]) take the same tile: each block's four panels
//! of indices are first decoded through their groups' tables rounded to BF16 into the worker's
//! buffer, in Pairs16 order (the AVX-512 VBMI decoder of the AMX kernel), so the block is read
//! from memory as one byte per weight and multiplied from L2 as BF16. That is the arithmetic of
//! the AMX palette product, for CPUs with AVX-512 BF16 and VBMI but no AMX (AMD Zen 4).

// Off x86-64 the kernel body is compiled out (`has_bf16_dot()` is false there and callers take
// the portable path), which leaves its helpers unused there.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, unused_variables, dead_code))]

use std::cell::RefCell;

use rayon::prelude::*;

use super::isa::Isa;
use super::linalg::{DstPtr, Split};
use crate::model::lowp::{DenseHalf, HalfOrder, PaletteOrder, Palettized, PANEL_ROWS};

/// Rows of `x` per register tile.
const MR: usize = 6;
/// Weight panels (of 16 output columns) per register tile.
const NP: usize = 4;
/// Inputs per step of the palette decoder (64 indices: four inputs of a 16-row panel).
const PALETTE_STEP: usize = 4;

thread_local! {
    /// `x` rounded to BF16, row-major `[m, in rounded up to even]`, reused across calls.
    static XBF: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
    /// One block of palettized weights decoded to BF16 pairs (`NP` panels of `16 · in`).
    static WBF: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// Where a BF16 kernel (this one's tile, or the AMX tiles) reads a panel's weights from.
#[derive(Clone, Copy)]
pub(super) enum Weights<'a> {
    /// Pairs16 BF16 panels of `16 · ke` values, read in place.
    Dense(&'a [u16]),
    /// Panels16 8-bit indices (`16 · in` per panel) and their groups' f32 tables (256 entries
    /// per group of `group_size` rows, a multiple of 16), decoded block by block.
    Palette { indices: &'a [u8], lut: &'a [f32], group_size: usize },
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
    product(x, m, k, out, Weights::Dense(w.data()), y, accumulate, split);
    true
}

/// Whether [`linear_palettized`] takes a weight of this shape: 8-bit palettes in
/// [`PaletteOrder::Panels16`] whose groups are whole panels and whose input count is a multiple
/// of the decoder's step of four inputs, with a table for every group.
pub(crate) fn takes_palette(p: &Palettized) -> bool {
    let (k, out) = (p.cols(), p.rows());
    p.bits() == 8
        && p.order() == PaletteOrder::Panels16
        && p.group_size().is_multiple_of(PANEL_ROWS)
        && k > 0
        && k.is_multiple_of(PALETTE_STEP)
        && p.indices().len() == out.next_multiple_of(PANEL_ROWS) * k
        && p.lut().len() >= p.groups() * 256
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ` (no bias) for 8-bit palettized weights: tables rounded to
/// BF16, `x` rounded to BF16, f32 sums (the arithmetic of [`super::amx::linear_palettized`]).
/// Returns false, doing nothing, when the pair-dot kernel or the AVX-512 VBMI decoder cannot
/// run here or under `isa`, the weight is not one [`takes_palette`] accepts or a slice is too
/// short.
pub(crate) fn linear_palettized(
    x: &[f32],
    m: usize,
    p: &Palettized,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
    isa: Isa,
) -> bool {
    let Some(src) = palette_source(x, m, p, y, isa) else { return false };
    product(x, m, p.cols(), p.rows(), src, y, accumulate, split);
    true
}

/// The checks both BF16 palette products share: the pair-dot kernel's AVX-512 BF16 (which the
/// AMX kernel uses too, to round `x`) and the VBMI decoder run here and under `isa`, the weight
/// is one [`takes_palette`] accepts, and `x` and `y` hold `m` rows. Then the weight as a source.
pub(super) fn palette_source<'a>(
    x: &[f32],
    m: usize,
    p: &'a Palettized,
    y: &[f32],
    isa: Isa,
) -> Option<Weights<'a>> {
    let ok = isa.has_bf16_dot()
        && isa.has_lut8()
        && takes_palette(p)
        && x.len() >= m * p.cols()
        && y.len() >= m * p.rows();
    ok.then(|| Weights::Palette { indices: p.indices(), lut: p.lut(), group_size: p.group_size() })
}

/// The product of [`linear`] and [`linear_palettized`] once their checks passed: `x` rounded to
/// BF16, then one task per block of [`NP`] panels.
#[allow(clippy::too_many_arguments)]
fn product(
    x: &[f32],
    m: usize,
    k: usize,
    out: usize,
    src: Weights<'_>,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
) {
    if m == 0 || out == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let ke = k.next_multiple_of(2);
        XBF.with(|buf| {
            let mut xb = buf.borrow_mut();
            xb.clear();
            xb.resize(m * ke, 0);
            for (src, dst) in x[..m * k].chunks_exact(k.max(1)).zip(xb.chunks_exact_mut(ke)) {
                // SAFETY: both callers confirmed AVX-512F and AVX-512 BF16 (`has_bf16_dot()`)
                // at run time.
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
                let run = |wp: &[u16]| {
                    // SAFETY: AVX-512F/BF16 checked by the callers; `xb` holds m × ke values,
                    // `wp` np panels of 16 × ke, and the destination columns [c0, c0 + ncols)
                    // of the m rows of `y` (row stride `out`, length ≥ m·out checked by the
                    // callers) are written by this block only.
                    unsafe { avx512::block(xb, m, ke, wp, np, dst, c0, out, ncols, accumulate) }
                };
                match src {
                    Weights::Dense(d) => run(&d[p0 * PANEL_ROWS * ke..(p0 + np) * PANEL_ROWS * ke]),
                    Weights::Palette { indices, lut, group_size } => WBF.with(|wb| {
                        let mut wb = wb.borrow_mut();
                        wb.resize(NP * PANEL_ROWS * ke, 0);
                        let n = PANEL_ROWS * k; // k is a multiple of 4, so ke = k
                        for (j, panel) in (p0..p0 + np).enumerate() {
                            let g = panel * PANEL_ROWS / group_size;
                            // SAFETY: `palette_source` checked AVX-512F/BF16 and the VBMI
                            // decoder (`has_lut8()`: BW, VBMI); `takes_palette` checked that
                            // every panel has 16·k indices and every group a 256-entry table.
                            unsafe {
                                super::amx::palette_pairs(
                                    &indices[panel * n..(panel + 1) * n],
                                    &lut[g * 256..(g + 1) * 256],
                                    &mut wb[j * n..(j + 1) * n],
                                )
                            };
                        }
                        run(&wb[..np * n]);
                    }),
                }
            };
            match split {
                Split::Single => (0..blocks).for_each(block),
                _ => (0..blocks).into_par_iter().for_each(block),
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, k, src, y, accumulate, split);
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
