//! The packed-panel FP32 Linear product: `y = x Wᵀ` with FP32 activations and FP32 arithmetic,
//! on AVX-512F or AVX2+FMA ([`Isa`]), for FP32 weights packed at load ([`Layout::Panels16`]) and
//! for weights stored in another precision (FP16, BF16, palettized).
//!
//! Packed FP32 weights are read in place. Other weights are decoded once per forward, block by
//! block, into an f32 tile in the same operand order (16 output channels per panel, `k`-major:
//! `tile[k·16 + r]`), and every tile is then used by all rows of `x`; the decoded tile (`48 × KC`
//! values, 72 KiB) and the matching slice of `x` (`m × KC`) stay in L2. The register tile is
//! 8 rows × 48 columns on AVX-512 (24 zmm accumulators, three panel loads and eight broadcasts of
//! `x` per `k`: a third fewer weight loads per multiply-add than 6 × 64, which matters where two
//! 512-bit FMA pipes consume them) and 6 rows × 16 columns on AVX2 (12 ymm accumulators, one
//! panel at a time, so the panel's `KC × 16` slice stays in L1 across the row chunks).
//! Both read `x` packed ([`avx512::pack_rows`], [`avx2::pack_rows`]): once per product each
//! worker transposes it into chunks of the tile's rows with one step's values side by side, so
//! the tile broadcasts from one pointer at constant offsets, four steps an iteration.
//!
//! Loop order: the 48-column blocks go in contiguous ranges, [`TASKS_PER_WORKER`] ranges per
//! worker, taken dynamically; within a range, `KC`-wide slices of the reduction go outermost, so
//! a slice of `x` is reused across the range's blocks. Packed weights are read from memory once
//! per forward (a model's weights are far larger than the caches), so while a block is computed
//! its row chunks hint the worker's next block into L2, a share of its cache lines each
//! ([`Prefetch`]): the range's next block, the first of its next slice, or at the range's end
//! the first block of the next range; otherwise the first row chunk of a block stalls on memory.

// Off x86-64 the kernel body is compiled out (no [`Isa`] there has panels, so `linear` returns
// false and callers take the portable path), which leaves its helpers unused there.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, unused_variables, dead_code))]

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::isa::Isa;
use super::linalg::{DstPtr, Split};
use crate::model::lowp::{DenseHalf, HalfKind, HalfOrder, PaletteOrder, PANEL_ROWS};
use crate::model::weights::{Layout, Matrix};

/// Rows of `x` per AVX-512 register tile.
const MR512: usize = 8;
/// Rows of `x` per AVX2 register tile.
const MR: usize = 6;
/// Panels of 16 output columns per block (the AVX-512 register tile's width).
const NP: usize = 3;
/// Tasks per worker when the product runs on more than one thread.
const TASKS_PER_WORKER: usize = 4;
/// Reduction slice (a multiple of 4, so palettized rows decode from byte boundaries at 4 and
/// 6 bits, and of 2, so BF16/FP16 pairs do not straddle slices).
const KC: usize = 384;

thread_local! {
    /// Decoded weight tile: `NP` panels of `KC × 16` f32.
    static TILE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// One decoded weight row segment (palettized and row-major 16-bit weights).
    static ROW: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// `x` in the AVX-512 register tile's operand order ([`avx512::pack_rows`]), and the
    /// product ([`PRODUCTS`]) it was packed for: each worker packs it once per product and
    /// every block of that product it computes reads it.
    static XPACK: RefCell<(u64, Vec<f32>)> = const { RefCell::new((0, Vec::new())) };
}

/// Numbers each call of [`linear`] (from 1), so a worker knows whether its packed `x` is the
/// current product's.
static PRODUCTS: AtomicU64 = AtomicU64::new(1);

/// How a block's weights lie in memory: where panel `j`'s values of reduction step `s` are,
/// counted in floats from the block's start. Both geometries are known when the kernels are
/// compiled, so the AVX-512 tile addresses its twelve panel loads an iteration at constant
/// offsets from one pointer (with a run-time stride and step they took offsets kept on the
/// stack, a load each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operand {
    /// FP32 weights packed at load ([`Layout::Panels16`]): a group of `np` panels, step-major,
    /// at `s·16·np + j·16`.
    Grouped,
    /// A tile decoded for this block ([`TILE`]), panel-major: at `j·KC·16 + s·16`.
    Tile,
}

impl Operand {
    /// Floats between panel `j` and panel `j + 1` at one step.
    const fn panel_stride(self) -> usize {
        match self {
            Operand::Grouped => PANEL_ROWS,
            Operand::Tile => KC * PANEL_ROWS,
        }
    }

    /// Floats between one step and the next in a panel of a block of `np` panels.
    const fn kstep(self, np: usize) -> usize {
        match self {
            Operand::Grouped => PANEL_ROWS * np,
            Operand::Tile => PANEL_ROWS,
        }
    }
}

/// A block of weights to bring into L2 ahead of use: `lines` cache lines of 64 bytes, `steps`
/// of them per panel (contiguous), the panels `stride` bytes apart from `base`. Packed FP32
/// panels take one line per reduction step; the sources of decoded tiles (16-bit pairs,
/// 8-bit palette indices in panel order) fewer.
#[derive(Clone, Copy)]
struct Prefetch {
    base: *const u8,
    stride: usize,
    steps: usize,
    lines: usize,
}

/// Bytes per cache line hinted by [`Prefetch`].
const LINE: usize = 64;

// SAFETY: the pointer is only ever an address for prefetch hints (never dereferenced); the
// weights it points into are shared read-only by every worker.
unsafe impl Send for Prefetch {}
unsafe impl Sync for Prefetch {}

impl Prefetch {
    /// Share `i` of `n` (contiguous ranges of the lines, in panel order): (first line, count).
    fn share(&self, i: usize, n: usize) -> (usize, usize) {
        let lo = self.lines * i / n.max(1);
        let hi = self.lines * (i + 1) / n.max(1);
        (lo, hi - lo)
    }
}

/// Where block `bi` (panels `[NP·bi, NP·bi + NP)`), reduction slice from `k0`, of `w` lies in
/// memory, for a [`Prefetch`]: packed FP32 panels (`packed`), or the source a decoded tile is
/// made from where it lies in panel order (Pairs16 FP16/BF16, Panels16 palettes); None for
/// other storage (decoded row by row) or a block outside the matrix.
fn next_block(w: &Matrix, packed: Option<&[f32]>, bi: usize, k0: usize, panels: usize) -> Option<Prefetch> {
    let (k, p0) = (w.cols(), bi * NP);
    if p0 >= panels || k0 >= k {
        return None;
    }
    let (np, kc) = (NP.min(panels - p0), KC.min(k - k0));
    // (first byte, bytes between panels, bytes of the slice in one panel, panels): packed
    // FP32 blocks are one contiguous stretch from any step on (a group of `Layout::Panels16`)
    let (base, stride, bytes, parts): (*const u8, usize, usize, usize) = match (packed, w) {
        (Some(d), _) => {
            let at = d.get(p0 * PANEL_ROWS * k + k0 * PANEL_ROWS * np..)?;
            (at.as_ptr().cast(), 0, kc * PANEL_ROWS * np * 4, 1)
        }
        (None, Matrix::F16(h) | Matrix::BF16(h)) if h.order() == HalfOrder::Pairs16 => {
            let ke = h.cols_even();
            let at = h.data().get(p0 * PANEL_ROWS * ke + k0 * PANEL_ROWS..)?;
            (at.as_ptr().cast(), PANEL_ROWS * ke * 2, kc * PANEL_ROWS * 2, np)
        }
        (None, Matrix::Palettized(p))
            if p.order() == PaletteOrder::Panels16 && p.group_size().is_multiple_of(PANEL_ROWS) =>
        {
            let at = p.indices().get(p0 * PANEL_ROWS * k + k0 * PANEL_ROWS..)?;
            (at.as_ptr(), PANEL_ROWS * k, kc * PANEL_ROWS, np)
        }
        _ => return None,
    };
    let steps = bytes.div_ceil(LINE);
    Some(Prefetch { base, stride, steps, lines: parts * steps })
}

/// Hints lines `[first, first + count)` of `pf` into L2 one at a time, spread over a loop of
/// `steps` iterations: call [`PrefetchCursor::tick`] once per iteration and
/// [`PrefetchCursor::finish`] after it.
#[cfg(target_arch = "x86_64")]
struct PrefetchCursor {
    pf: Option<Prefetch>,
    panel: usize,
    step: usize,
    left: usize,
    every: usize,
    next_at: usize,
}

#[cfg(target_arch = "x86_64")]
impl PrefetchCursor {
    fn new(pf: Option<Prefetch>, share: (usize, usize), steps: usize) -> Self {
        let (first, count) = share;
        let (panel, step) = match pf {
            Some(p) if p.steps > 0 => (first / p.steps, first % p.steps),
            _ => (0, 0),
        };
        let left = if pf.is_some_and(|p| p.steps > 0) { count } else { 0 };
        PrefetchCursor { pf, panel, step, left, every: (steps / left.max(1)).max(1), next_at: 0 }
    }

    /// The next line's offset from `base`, in bytes, or None when the share is done.
    #[inline(always)]
    fn next_offset(&mut self) -> Option<usize> {
        let p = self.pf?;
        if self.left == 0 {
            return None;
        }
        let at = self.panel * p.stride + self.step * LINE;
        self.left -= 1;
        self.step += 1;
        if self.step == p.steps {
            self.step = 0;
            self.panel += 1;
        }
        Some(at)
    }

    #[inline(always)]
    fn issue(&mut self) {
        if let (Some(p), Some(off)) = (self.pf, self.next_offset()) {
            // A hint only: `wrapping_add` keeps it an address computation.
            super::linalg::hint_l2(p.base.wrapping_add(off));
        }
    }

    #[inline(always)]
    fn tick(&mut self, k: usize) {
        if self.left > 0 && k == self.next_at {
            self.issue();
            self.next_at += self.every;
        }
    }

    #[inline(always)]
    fn finish(&mut self) {
        while self.left > 0 {
            self.issue();
        }
    }
}

/// Decode rows `[r0, r0 + 16)` (rows past the end as zeros), columns `[k0, k0 + kc)` of `w`
/// into `panel` (`kc × 16`, `panel[k·16 + r]`) with the decoders of `isa`. `row` is scratch.
fn decode_panel(
    w: &Matrix,
    r0: usize,
    k0: usize,
    kc: usize,
    panel: &mut [f32],
    row: &mut Vec<f32>,
    isa: Isa,
) {
    let rows = w.rows().saturating_sub(r0).min(PANEL_ROWS);
    if rows < PANEL_ROWS {
        panel.fill(0.0);
    }
    let full = rows == PANEL_ROWS;
    match w {
        Matrix::F16(h) if h.order() == HalfOrder::Pairs16 => {
            pairs_panel(h, HalfKind::F16, r0, k0, kc, panel, isa)
        }
        Matrix::BF16(h) if h.order() == HalfOrder::Pairs16 => {
            pairs_panel(h, HalfKind::BF16, r0, k0, kc, panel, isa)
        }
        Matrix::F32(d) if full && d.layout() == Layout::RowMajor => {
            let c = d.cols();
            let src: [&[f32]; PANEL_ROWS] =
                std::array::from_fn(|r| &d.data()[(r0 + r) * c + k0..(r0 + r) * c + k0 + kc]);
            for (k, out) in panel.chunks_exact_mut(PANEL_ROWS).take(kc).enumerate() {
                for (o, s) in out.iter_mut().zip(&src) {
                    *o = s[k];
                }
            }
        }
        Matrix::Palettized(p)
            if p.order() == PaletteOrder::Panels16 && p.group_size().is_multiple_of(PANEL_ROWS) =>
        {
            let g = r0 / p.group_size();
            let lut = &p.lut()[g * 256..(g + 1) * 256];
            let base = (r0 / PANEL_ROWS) * PANEL_ROWS * p.cols() + k0 * PANEL_ROWS;
            let src = &p.indices()[base..base + kc * PANEL_ROWS];
            #[cfg(target_arch = "x86_64")]
            if isa.has_lut8() {
                // SAFETY: AVX-512F/BW/VBMI checked at run time.
                unsafe { avx512::lut8_panel(src, lut, panel) };
                return;
            }
            // always a whole table: the slice above is 256 entries long
            if let Ok(lut) = <&[f32; 256]>::try_from(lut) {
                #[cfg(target_arch = "x86_64")]
                if isa.has_panels() {
                    // SAFETY: both panel families require AVX2 (checked by the caller through
                    // `runs_here`).
                    unsafe { avx2::lut8(src, lut, panel) };
                    return;
                }
                lut8_scalar(src, lut, panel);
            }
        }
        Matrix::Palettized(p)
            if full
                && p.order() == PaletteOrder::RowMajor
                && p.group_size().is_multiple_of(PANEL_ROWS)
                && (p.bits() == 8 || (p.bits() == 4 && k0.is_multiple_of(2))) =>
        {
            let (rb, bits) = (p.row_bytes(), p.bits());
            let entries = 1usize << bits;
            let g = r0 / p.group_size();
            let lut = &p.lut()[g * entries..(g + 1) * entries];
            let b0 = k0 * bits as usize / 8;
            let nb = (kc * bits as usize).div_ceil(8);
            let src: [&[u8]; PANEL_ROWS] =
                std::array::from_fn(|r| &p.indices()[(r0 + r) * rb + b0..(r0 + r) * rb + b0 + nb]);
            if bits == 8 {
                for (k, out) in panel.chunks_exact_mut(PANEL_ROWS).take(kc).enumerate() {
                    for (o, s) in out.iter_mut().zip(&src) {
                        *o = lut[s[k] as usize];
                    }
                }
            } else {
                for (k, out) in panel.chunks_exact_mut(PANEL_ROWS).take(kc).enumerate() {
                    let shift = 4 * (k % 2);
                    for (o, s) in out.iter_mut().zip(&src) {
                        *o = lut[((s[k / 2] >> shift) & 15) as usize];
                    }
                }
            }
        }
        _ => {
            row.resize(kc, 0.0);
            for r in 0..rows {
                decode_segment(w, r0 + r, k0, row);
                for (k, &v) in row.iter().enumerate() {
                    panel[k * PANEL_ROWS + r] = v;
                }
            }
        }
    }
}

/// 8-bit indices through a 256-entry table into `out` (`out[i] = lut[idx[i]]`), one value at a
/// time: the tail of [`avx2::lut8`] (and the decoder where the x86-64 kernels are compiled out).
fn lut8_scalar(idx: &[u8], lut: &[f32; 256], out: &mut [f32]) {
    for (o, &i) in out.iter_mut().zip(idx) {
        *o = lut[i as usize];
    }
}

/// Columns `[k0, k0 + out.len())` of row `r` as f32.
fn decode_segment(w: &Matrix, r: usize, k0: usize, out: &mut [f32]) {
    // In range by construction (r < rows, k0 + kc ≤ cols); a miss would leave zeros.
    let _ = w.decode_row_segment(r, k0, k0 + out.len(), out);
}

/// [`decode_panel`] for a 16-bit matrix in [`HalfOrder::Pairs16`] (`r0` a multiple of 16,
/// `k0` even).
fn pairs_panel(h: &DenseHalf, kind: HalfKind, r0: usize, k0: usize, kc: usize, panel: &mut [f32], isa: Isa) {
    let ke = h.cols_even();
    let base = (r0 / PANEL_ROWS) * PANEL_ROWS * ke;
    let src = &h.data()[base + k0 * PANEL_ROWS..base + (k0 + kc).next_multiple_of(2).min(ke) * PANEL_ROWS];
    #[cfg(target_arch = "x86_64")]
    match isa {
        Isa::Avx512 => {
            // SAFETY: AVX-512F checked at run time (`Isa` never exceeds the CPU).
            unsafe { avx512::deinterleave(src, kind, kc, panel) };
            return;
        }
        Isa::Avx2 => {
            // SAFETY: AVX2, FMA and F16C checked at run time (`Isa` never exceeds the CPU).
            unsafe { avx2::deinterleave(src, kind, kc, panel) };
            return;
        }
        Isa::Generic => {}
    }
    for (k, out) in panel.chunks_exact_mut(PANEL_ROWS).take(kc).enumerate() {
        for (r, o) in out.iter_mut().enumerate() {
            *o = kind.decode(src[(k / 2) * 32 + r * 2 + k % 2]);
        }
    }
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ` (no bias) for a weight in any precision, on the kernels of
/// `isa`. Returns false, doing nothing, when `isa` has no panel kernel or a slice is too short.
pub(crate) fn linear(
    x: &[f32],
    m: usize,
    w: &Matrix,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
    isa: Isa,
) -> bool {
    let (k, out) = (w.cols(), w.rows());
    if !isa.has_panels() || !isa.runs_here() || x.len() < m * k || y.len() < m * out {
        return false;
    }
    if m == 0 || out == 0 {
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let panels = out.div_ceil(PANEL_ROWS);
        // FP32 weights packed at load are the kernel's operand as they are
        let packed: Option<&[f32]> = match w {
            Matrix::F32(d) if d.layout() == Layout::Panels16 && d.data().len() == panels * PANEL_ROWS * k => {
                Some(d.data())
            }
            _ => None,
        };
        let blocks = panels.div_ceil(NP);
        let workers = split.workers();
        // More tasks than workers, taken dynamically (rayon's work stealing): a worker whose
        // core is slowed (a VM's stolen time, a busy sibling thread) hands its remaining blocks
        // to the other instead of holding every worker at the join. With exactly one range
        // per worker, two threads on a VM with 15 % steal ran at 1.1 cores on average.
        let parts = if workers > 1 { blocks.min(workers * TASKS_PER_WORKER) } else { 1 };
        let dst = DstPtr(y.as_mut_ptr());
        let product = PRODUCTS.fetch_add(1, Ordering::Relaxed);
        let part = |pi: usize| {
            let (b0, b1) = (blocks * pi / parts, blocks * (pi + 1) / parts);
            TILE.with(|tile| {
                ROW.with(|row| {
                    XPACK.with(|xpack| {
                        let mut tile = tile.borrow_mut();
                        let mut row = row.borrow_mut();
                        let mut xpack = xpack.borrow_mut();
                        if packed.is_none() {
                            tile.resize(NP * KC * PANEL_ROWS, 0.0);
                        }
                        // The register tiles read `x` packed (their rows' values of one reduction
                        // step side by side): one pass over `x` per worker and product, against
                        // 2·m·k·out FLOP, instead of a stream per row and its address arithmetic at
                        // every step of every block.
                        if xpack.0 != product {
                            // SAFETY: the ISA's features checked (`runs_here`); x holds m rows of k
                            // values.
                            unsafe {
                                match isa {
                                    Isa::Avx512 => avx512::pack_rows(x, m, k, &mut xpack.1),
                                    _ => avx2::pack_rows(x, m, k, &mut xpack.1),
                                }
                            }
                            xpack.0 = product;
                        }
                        let mut k0 = 0;
                        while k0 < k.max(1) {
                            let kc = KC.min(k - k0);
                            for bi in b0..b1 {
                                let p0 = bi * NP;
                                let np = NP.min(panels - p0);
                                // The block this worker reads next (the next block of its range, or
                                // the first one of the next reduction slice), fetched into L2 while
                                // this one is computed: packed weights come from memory once per
                                // forward, and without this the first row chunk of every block waits
                                // for them.
                                let next = if bi + 1 < b1 {
                                    next_block(w, packed, bi + 1, k0, panels)
                                } else if k0 + kc < k {
                                    next_block(w, packed, b0, k0 + kc, panels)
                                } else if b1 < blocks {
                                    // the first block of the next range: with rayon's splitting
                                    // of the ranges, usually this worker's next task
                                    next_block(w, packed, b1, 0, panels)
                                } else {
                                    None
                                };
                                // the block from step k0: a packed group in place, or a tile
                                // decoded for it
                                let (b, operand): (&[f32], Operand) = match packed {
                                    Some(d) => {
                                        (&d[p0 * PANEL_ROWS * k + k0 * PANEL_ROWS * np..], Operand::Grouped)
                                    }
                                    None => {
                                        for j in 0..np {
                                            let t =
                                                &mut tile[j * KC * PANEL_ROWS..(j * KC + kc) * PANEL_ROWS];
                                            decode_panel(w, (p0 + j) * PANEL_ROWS, k0, kc, t, &mut row, isa);
                                        }
                                        (&tile[..], Operand::Tile)
                                    }
                                };
                                let c0 = p0 * PANEL_ROWS;
                                let ncols = (out - c0).min(np * PANEL_ROWS);
                                let acc = accumulate || k0 > 0;
                                // SAFETY: the ISA's features were checked (`runs_here`); `x` has m
                                // rows of k values and columns [k0, k0 + kc) exist; `b` holds np
                                // panels of kc steps of 16 (a decoded tile, or the packed group
                                // of panel p0 from step k0: the last value read, p0·16k + (k0 +
                                // kc)·16np − 1, is below (p0 + np)·16k ≤ panels·16k); the
                                // destination columns [c0, c0 + ncols) of the m rows of `y` (stride
                                // `out`, ≥ m·out values) belong to this worker's blocks only.
                                unsafe {
                                    match isa {
                                        Isa::Avx512 => avx512::block(
                                            &xpack.1, m, k, k0, kc, b, operand, np, dst, c0, out, ncols, acc,
                                            next,
                                        ),
                                        _ => avx2::block(
                                            &xpack.1, m, k, k0, kc, b, operand, np, dst, c0, out, ncols, acc,
                                            next,
                                        ),
                                    }
                                }
                            }
                            if k == 0 {
                                break;
                            }
                            k0 += kc;
                        }
                    })
                })
            });
        };
        if parts > 1 {
            (0..parts).into_par_iter().for_each(part);
        } else {
            part(0);
        }
    }
    true
}

/// The skeleton of both ISAs' `pack_rows`: `x` (`m` rows of `k` values) into chunks of `rows`
/// rows, `xs ≥ rows` floats a step (the chunk's rows, then zeros), `k`-major, the last chunk
/// padded with zero rows: `out[c·k·xs + j·xs + i] = x[(c·rows + i)·k + j]`. `full(x, k, r0,
/// dst)` packs the leading steps of a full chunk in registers and returns how many; the other
/// steps, and a partial chunk, are copied value by value.
///
/// # Safety
/// `x.len() ≥ m·k`; `full` may be called (its CPU features are present).
#[cfg(target_arch = "x86_64")]
unsafe fn pack_chunks(
    x: &[f32],
    m: usize,
    k: usize,
    rows: usize,
    xs: usize,
    out: &mut Vec<f32>,
    full: unsafe fn(&[f32], usize, usize, &mut [f32]) -> usize,
) {
    out.clear();
    out.resize(m.div_ceil(rows) * k * xs, 0.0);
    for (c, dst) in out.chunks_exact_mut(k * xs).enumerate() {
        let r0 = c * rows;
        let here = rows.min(m - r0);
        // SAFETY: a full chunk's rows exist in x; dst holds its k·xs values.
        let done = if here == rows { unsafe { full(x, k, r0, dst) } } else { 0 };
        for j in done..k {
            for i in 0..here {
                dst[j * xs + i] = x[(r0 + i) * k + j];
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{DstPtr, HalfKind, Operand, Prefetch, PrefetchCursor, MR512 as MR, NP};
    use crate::model::lowp::PANEL_ROWS;

    /// Decode `kc` columns of a Pairs16 panel (`src`: pairs of 16 rows, 32 values per pair)
    /// into `panel[k·16 + r]`.
    ///
    /// # Safety
    /// AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn deinterleave(src: &[u16], kind: HalfKind, kc: usize, panel: &mut [f32]) {
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        let pairs = kc / 2;
        for p in 0..pairs.min(src.len() / 32).min(panel.len() / 32) {
            // SAFETY: p < src.len()/32 and p < panel.len()/32: the 32-value read and the two
            // 16-value writes stay inside the slices.
            unsafe {
                let s = src.as_ptr().add(p * 32) as *const __m256i;
                let (lo, hi) = match kind {
                    HalfKind::F16 => (
                        _mm512_cvtph_ps(_mm256_loadu_si256(s)),
                        _mm512_cvtph_ps(_mm256_loadu_si256(s.add(1))),
                    ),
                    HalfKind::BF16 => {
                        let widen =
                            |v: __m256i| _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
                        (widen(_mm256_loadu_si256(s)), widen(_mm256_loadu_si256(s.add(1))))
                    }
                };
                let o = panel.as_mut_ptr().add(p * 32);
                _mm512_storeu_ps(o, _mm512_permutex2var_ps(lo, even, hi));
                _mm512_storeu_ps(o.add(16), _mm512_permutex2var_ps(lo, odd, hi));
            }
        }
        if kc % 2 == 1 {
            let p = kc / 2;
            for r in 0..PANEL_ROWS {
                if let (Some(&v), Some(o)) = (src.get(p * 32 + r * 2), panel.get_mut(p * 32 + r)) {
                    *o = kind.decode(v);
                }
            }
        }
    }

    /// Decode 8-bit indices in panel order (`idx[k·16 + r]`) through a 256-entry table into
    /// `panel[k·16 + r]` (`panel.len() ≥ idx.len()`).
    ///
    /// Each f32 entry of the table is split into four byte planes held in registers; 64
    /// indices at a time look up one byte per plane with two-table byte permutes
    /// (`vpermt2b`, 7 index bits) blended on the eighth bit, and unpacking the four planes
    /// rebuilds the 64 f32 values (the indices are pre-permuted so they come out in order).
    ///
    /// # Safety
    /// AVX-512F, AVX-512BW and AVX-512 VBMI; `lut.len() ≥ 256`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn lut8_panel(idx: &[u8], lut: &[f32], panel: &mut [f32]) {
        let n = idx.len().min(panel.len());
        if lut.len() < 256 {
            return;
        }
        // planes[p][q]: byte p of entries 64q..64q+64
        let mut planes = [[_mm512_setzero_si512(); 4]; 4];
        for (p, plane) in planes.iter_mut().enumerate() {
            for (q, reg) in plane.iter_mut().enumerate() {
                let mut r = _mm512_setzero_si512();
                for j in 0..4 {
                    // SAFETY: entries 64q + 16j .. + 16 < 256 ≤ lut.len().
                    let v =
                        _mm512_castps_si512(unsafe { _mm512_loadu_ps(lut.as_ptr().add(64 * q + 16 * j)) });
                    let bytes = _mm512_cvtepi32_epi8(_mm512_srlv_epi32(v, _mm512_set1_epi32(8 * p as i32)));
                    r = match j {
                        0 => _mm512_inserti32x4::<0>(r, bytes),
                        1 => _mm512_inserti32x4::<1>(r, bytes),
                        2 => _mm512_inserti32x4::<2>(r, bytes),
                        _ => _mm512_inserti32x4::<3>(r, bytes),
                    };
                }
                *reg = r;
            }
        }
        // After the two unpack stages, output register z, 128-bit lane l, slot s holds the value
        // of input byte 16l + 4z + s; pre-permute so that it is element 16z + 4l + s.
        let mut order = [0u8; 64];
        for z in 0..4 {
            for l in 0..4 {
                for s in 0..4 {
                    order[16 * l + 4 * z + s] = (16 * z + 4 * l + s) as u8;
                }
            }
        }
        // SAFETY: a 64-byte read of a 64-byte array.
        let order = unsafe { _mm512_loadu_si512(order.as_ptr() as *const __m512i) };
        let mut i = 0;
        while i + 64 <= n {
            // SAFETY: i + 64 ≤ n ≤ both lengths: one 64-byte read, four 64-byte writes.
            unsafe {
                let raw = _mm512_loadu_si512(idx.as_ptr().add(i) as *const __m512i);
                let ix = _mm512_permutexvar_epi8(order, raw);
                let high = _mm512_movepi8_mask(ix);
                let b: [__m512i; 4] = std::array::from_fn(|p| {
                    let lo = _mm512_permutex2var_epi8(planes[p][0], ix, planes[p][1]);
                    let hi = _mm512_permutex2var_epi8(planes[p][2], ix, planes[p][3]);
                    _mm512_mask_blend_epi8(high, lo, hi)
                });
                let ab_lo = _mm512_unpacklo_epi8(b[0], b[1]);
                let ab_hi = _mm512_unpackhi_epi8(b[0], b[1]);
                let cd_lo = _mm512_unpacklo_epi8(b[2], b[3]);
                let cd_hi = _mm512_unpackhi_epi8(b[2], b[3]);
                let o = panel.as_mut_ptr().add(i) as *mut __m512i;
                _mm512_storeu_si512(o, _mm512_unpacklo_epi16(ab_lo, cd_lo));
                _mm512_storeu_si512(o.add(1), _mm512_unpackhi_epi16(ab_lo, cd_lo));
                _mm512_storeu_si512(o.add(2), _mm512_unpacklo_epi16(ab_hi, cd_hi));
                _mm512_storeu_si512(o.add(3), _mm512_unpackhi_epi16(ab_hi, cd_hi));
            }
            i += 64;
        }
        for j in i..n {
            panel[j] = lut[idx[j] as usize];
        }
    }

    /// `x` (`m` rows of `k` values) in the register tile's operand order: chunks of [`MR`]
    /// rows (the last one padded with zeros), each `k`-major with its rows' values of one
    /// reduction step side by side: `out[c·k·MR + j·MR + i] = x[(c·MR + i)·k + j]`. Full chunks
    /// are transposed 16 steps at a time in registers.
    ///
    /// # Safety
    /// AVX-512F; `x.len() ≥ m·k`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack_rows(x: &[f32], m: usize, k: usize, out: &mut Vec<f32>) {
        // SAFETY: `transpose16` needs AVX-512F, which this function's contract gives.
        unsafe { super::pack_chunks(x, m, k, MR, MR, out, transpose16) }
    }

    /// The steps of one full chunk (rows `r0..r0 + MR` of `x`) that whole 16-step transposes
    /// cover, packed into `dst`; returns how many.
    ///
    /// # Safety
    /// AVX-512F; rows `r0..r0 + MR` of `x` (`k` values each) exist; `dst` holds `k·MR` values.
    #[target_feature(enable = "avx512f")]
    unsafe fn transpose16(x: &[f32], k: usize, r0: usize, dst: &mut [f32]) -> usize {
        let mut j = 0;
        while j + 16 <= k {
            // SAFETY: rows r0..r0 + 8 ≤ m, columns j..j + 16 ≤ k: inside x (m·k values);
            // the eight stores cover dst[16·8·(j/16)..][..128], j + 16 ≤ k: inside dst.
            unsafe {
                let p = x.as_ptr().add(r0 * k + j);
                let r: [__m512; MR] = std::array::from_fn(|i| _mm512_loadu_ps(p.add(i * k)));
                // pairs of rows interleaved, then fours: lane l of u_s holds rows 0–3
                // (u0..u3) or 4–7 (u4..u7) at step 4l + s
                let t: [__m512; MR] = std::array::from_fn(|i| match i % 2 {
                    0 => _mm512_unpacklo_ps(r[i], r[i + 1]),
                    _ => _mm512_unpackhi_ps(r[i - 1], r[i]),
                });
                let u = [
                    _mm512_shuffle_ps::<0x44>(t[0], t[2]),
                    _mm512_shuffle_ps::<0xEE>(t[0], t[2]),
                    _mm512_shuffle_ps::<0x44>(t[1], t[3]),
                    _mm512_shuffle_ps::<0xEE>(t[1], t[3]),
                    _mm512_shuffle_ps::<0x44>(t[4], t[6]),
                    _mm512_shuffle_ps::<0xEE>(t[4], t[6]),
                    _mm512_shuffle_ps::<0x44>(t[5], t[7]),
                    _mm512_shuffle_ps::<0xEE>(t[5], t[7]),
                ];
                // steps 4l, 4l + 1 of rows 0–7: lanes l of u0, u4, u1, u5; steps 4l + 2,
                // 4l + 3: lanes l of u2, u6, u3, u7
                let lo = |a: __m512, b: __m512| _mm512_shuffle_f32x4::<0x44>(a, b);
                let hi = |a: __m512, b: __m512| _mm512_shuffle_f32x4::<0xEE>(a, b);
                let (a01, a23) = (lo(u[0], u[4]), hi(u[0], u[4]));
                let (b01, b23) = (lo(u[1], u[5]), hi(u[1], u[5]));
                let (c01, c23) = (lo(u[2], u[6]), hi(u[2], u[6]));
                let (d01, d23) = (lo(u[3], u[7]), hi(u[3], u[7]));
                let q = dst.as_mut_ptr().add(j * MR);
                _mm512_storeu_ps(q, _mm512_shuffle_f32x4::<0x88>(a01, b01));
                _mm512_storeu_ps(q.add(16), _mm512_shuffle_f32x4::<0x88>(c01, d01));
                _mm512_storeu_ps(q.add(32), _mm512_shuffle_f32x4::<0xDD>(a01, b01));
                _mm512_storeu_ps(q.add(48), _mm512_shuffle_f32x4::<0xDD>(c01, d01));
                _mm512_storeu_ps(q.add(64), _mm512_shuffle_f32x4::<0x88>(a23, b23));
                _mm512_storeu_ps(q.add(80), _mm512_shuffle_f32x4::<0x88>(c23, d23));
                _mm512_storeu_ps(q.add(96), _mm512_shuffle_f32x4::<0xDD>(a23, b23));
                _mm512_storeu_ps(q.add(112), _mm512_shuffle_f32x4::<0xDD>(c23, d23));
            }
            j += 16;
        }
        j
    }

    /// All `m` rows of `x` (columns `[k0, k0 + kc)`) against one decoded block of `np` panels.
    ///
    /// # Safety
    /// AVX-512F; `xp` is `x` (`m` rows of `ldx` values) packed by [`pack_rows`], `k0 + kc ≤
    /// ldx`; `tile` holds `np` panels of `kc` steps of 16 values laid out as `operand` says;
    /// `dst` points at a live
    /// f32 array of at least `m·ld` values of which this call alone writes columns `[c0, c0 +
    /// ncols)`, `ncols ≤ 16·np`, `c0 + ncols ≤ ld`.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block(
        xp: &[f32],
        m: usize,
        ldx: usize,
        k0: usize,
        kc: usize,
        tile: &[f32],
        operand: Operand,
        np: usize,
        dst: DstPtr,
        c0: usize,
        ld: usize,
        ncols: usize,
        acc: bool,
        next: Option<Prefetch>,
    ) {
        let chunks = m.div_ceil(MR);
        debug_assert!(xp.len() >= chunks * MR * ldx && k0 + kc <= ldx);
        let mut r = 0;
        while r < m {
            let mr = MR.min(m - r);
            let mut pf =
                PrefetchCursor::new(next, next.map_or((0, 0), |p| p.share(r / MR, chunks)), kc / UNROLL);
            let pf = &mut pf;
            // SAFETY: chunk r/MR of xp starts at r·ldx (r is a multiple of MR) and holds ldx
            // steps of MR values; rows [r, r + mr) ⊆ [0, m); the caller's contract covers the rest.
            unsafe {
                let a = xp.as_ptr().add(r * ldx + k0 * MR);
                let c = dst.0.add(r * ld + c0);
                let b = tile.as_ptr();
                macro_rules! go {
                    ($np:literal, $g:literal) => {
                        match mr {
                            8 => tile_kernel::<8, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            7 => tile_kernel::<7, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            6 => tile_kernel::<6, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            5 => tile_kernel::<5, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            4 => tile_kernel::<4, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            3 => tile_kernel::<3, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            2 => tile_kernel::<2, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                            _ => tile_kernel::<1, $np, $g>(a, b, kc, ncols, c, ld, acc, pf),
                        }
                    };
                }
                match (np, operand) {
                    (3, Operand::Grouped) => go!(3, true),
                    (2, Operand::Grouped) => go!(2, true),
                    (_, Operand::Grouped) => go!(1, true),
                    (3, Operand::Tile) => go!(3, false),
                    (2, Operand::Tile) => go!(2, false),
                    (_, Operand::Tile) => go!(1, false),
                }
            }
            pf.finish();
            r += mr;
        }
        const _: () = assert!(NP == 3 && MR == 8);
    }

    /// Reduction steps per iteration of the register tile's loop (one prefetch tick each).
    const UNROLL: usize = 4;

    /// One reduction step of the register tile: `R` rows × `P` panels.
    ///
    /// # Safety
    /// AVX-512F; `a` points at [`MR`] values (the step's packed rows), `b` at `P` panels of 16
    /// values `stride` apart.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn step<const R: usize, const P: usize>(
        sum: &mut [[__m512; P]; R],
        a: *const f32,
        b: *const f32,
        stride: usize,
    ) {
        let mut bv = [_mm512_setzero_ps(); P];
        for (j, v) in bv.iter_mut().enumerate() {
            // SAFETY: panel j's 16 values at j·stride, inside the caller's panels.
            *v = unsafe { _mm512_loadu_ps(b.add(j * stride)) };
        }
        for (i, row) in sum.iter_mut().enumerate() {
            // SAFETY: i < R ≤ MR values at a.
            let av = _mm512_set1_ps(unsafe { *a.add(i) });
            for (s, v) in row.iter_mut().zip(&bv) {
                *s = _mm512_fmadd_ps(av, *v, *s);
            }
        }
    }

    /// The register tile: `R` rows × `P` panels over `kc` reduction steps, [`UNROLL`] steps an
    /// iteration (a prefetch tick each), the rows' values read from a packed chunk. `GROUPED`
    /// picks the block's geometry ([`Operand::Grouped`] or [`Operand::Tile`]) at compile time.
    ///
    /// # Safety
    /// AVX-512F; `a` points at `kc` steps of [`MR`] packed values ([`pack_rows`]), of which rows
    /// `[0, R)` are read; `b` at `P` panels of `kc` steps of 16 values laid out as the operand
    /// says; `c` at `R` rows (stride `ld`) of which columns `[0, ncols)`, `ncols ≤ 16·P`, are
    /// written.
    #[target_feature(enable = "avx512f")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_kernel<const R: usize, const P: usize, const GROUPED: bool>(
        a: *const f32,
        b: *const f32,
        kc: usize,
        ncols: usize,
        c: *mut f32,
        ld: usize,
        accumulate: bool,
        pf: &mut PrefetchCursor,
    ) {
        let operand = if GROUPED { Operand::Grouped } else { Operand::Tile };
        let (stride, kstep) = (operand.panel_stride(), operand.kstep(P));
        let mut sum = [[_mm512_setzero_ps(); P]; R];
        let groups = kc / UNROLL;
        let (mut ag, mut bg) = (a, b);
        for g in 0..groups {
            pf.tick(g);
            for u in 0..UNROLL {
                // SAFETY: step g·UNROLL + u < kc: its MR packed values and its panel rows.
                unsafe { step::<R, P>(&mut sum, ag.add(u * MR), bg.add(u * kstep), stride) };
            }
            // SAFETY: at most one step past the group's last (both stay inside or one past the
            // caller's arrays, as the steps after the loop read from them).
            unsafe {
                ag = ag.add(UNROLL * MR);
                bg = bg.add(UNROLL * kstep);
            }
        }
        for k in groups * UNROLL..kc {
            // SAFETY: as above.
            unsafe { step::<R, P>(&mut sum, a.add(k * MR), b.add(k * kstep), stride) };
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{DstPtr, HalfKind, Operand, Prefetch, PrefetchCursor, MR};
    use crate::model::lowp::PANEL_ROWS;

    /// Floats per reduction step of a packed chunk: its [`MR`] rows and two zeros, so a step
    /// is one 8-value register of the transpose.
    const XS: usize = 8;

    /// Reduction steps per iteration of the register tile's loop (one prefetch tick each).
    const UNROLL: usize = 4;

    /// `x` (`m` rows of `k` values) in the register tile's operand order: chunks of [`MR`] rows
    /// (the last one padded with zero rows), each `k`-major with [`XS`] values a step (its
    /// rows', then zeros): `out[c·k·XS + j·XS + i] = x[(c·MR + i)·k + j]`. Transposed 8 steps
    /// at a time in registers.
    ///
    /// # Safety
    /// AVX2; `x.len() ≥ m·k`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn pack_rows(x: &[f32], m: usize, k: usize, out: &mut Vec<f32>) {
        // SAFETY: `transpose8` needs AVX2, which this function's contract gives.
        unsafe { super::pack_chunks(x, m, k, MR, XS, out, transpose8) }
    }

    /// The steps of one full chunk (rows `r0..r0 + MR` of `x`) that whole 8-step transposes
    /// cover, packed into `dst`; returns how many.
    ///
    /// # Safety
    /// AVX2; rows `r0..r0 + MR` of `x` (`k` values each) exist; `dst` holds `k·XS` values.
    #[target_feature(enable = "avx2")]
    unsafe fn transpose8(x: &[f32], k: usize, r0: usize, dst: &mut [f32]) -> usize {
        let mut j = 0;
        while j + 8 <= k {
            // SAFETY: rows r0..r0 + 6 ≤ m, columns j..j + 8 ≤ k: inside x (m·k values);
            // the eight stores cover dst[j·XS..][..64], j + 8 ≤ k: inside dst.
            unsafe {
                let p = x.as_ptr().add(r0 * k + j);
                let z = _mm256_setzero_ps();
                let r: [__m256; 8] =
                    std::array::from_fn(|i| if i < MR { _mm256_loadu_ps(p.add(i * k)) } else { z });
                // pairs of rows interleaved, then fours: u_s holds rows 0–3 (u0..u3) or
                // 4–7 (u4..u7) at steps s (low half) and s + 4 (high half)
                let t: [__m256; 8] = std::array::from_fn(|i| match i % 2 {
                    0 => _mm256_unpacklo_ps(r[i], r[i + 1]),
                    _ => _mm256_unpackhi_ps(r[i - 1], r[i]),
                });
                let u = [
                    _mm256_shuffle_ps::<0x44>(t[0], t[2]),
                    _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
                    _mm256_shuffle_ps::<0x44>(t[1], t[3]),
                    _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
                    _mm256_shuffle_ps::<0x44>(t[4], t[6]),
                    _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
                    _mm256_shuffle_ps::<0x44>(t[5], t[7]),
                    _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
                ];
                let q = dst.as_mut_ptr().add(j * XS);
                for s in 0..4 {
                    _mm256_storeu_ps(q.add(s * XS), _mm256_permute2f128_ps::<0x20>(u[s], u[s + 4]));
                    _mm256_storeu_ps(q.add((s + 4) * XS), _mm256_permute2f128_ps::<0x31>(u[s], u[s + 4]));
                }
            }
            j += 8;
        }
        j
    }

    /// [`super::avx512::deinterleave`] with AVX2 and F16C: `kc` columns of a Pairs16 panel into
    /// `panel[k·16 + r]`.
    ///
    /// # Safety
    /// AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn deinterleave(src: &[u16], kind: HalfKind, kc: usize, panel: &mut [f32]) {
        let widen = |v: __m128i| match kind {
            HalfKind::F16 => _mm256_cvtph_ps(v),
            HalfKind::BF16 => _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)),
        };
        let pairs = kc / 2;
        for p in 0..pairs.min(src.len() / 32).min(panel.len() / 32) {
            // SAFETY: p < src.len()/32 and p < panel.len()/32: the four 8-value reads and the
            // four 8-value writes stay inside the slices.
            unsafe {
                let s = src.as_ptr().add(p * 32) as *const __m128i;
                // v[q]: rows 4q..4q+4, each (even k, odd k)
                let v: [__m256; 4] = std::array::from_fn(|q| widen(_mm_loadu_si128(s.add(q))));
                let o = panel.as_mut_ptr().add(p * 32);
                for h in 0..2 {
                    let (a, b) = (v[2 * h], v[2 * h + 1]);
                    // [r0 r1 r4 r5 | r2 r3 r6 r7] → rows in order
                    let even = _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(
                        _mm256_shuffle_ps::<0b10_00_10_00>(a, b),
                    )));
                    let odd = _mm256_castpd_ps(_mm256_permute4x64_pd::<0xD8>(_mm256_castps_pd(
                        _mm256_shuffle_ps::<0b11_01_11_01>(a, b),
                    )));
                    _mm256_storeu_ps(o.add(8 * h), even);
                    _mm256_storeu_ps(o.add(16 + 8 * h), odd);
                }
            }
        }
        if kc % 2 == 1 {
            let p = kc / 2;
            for r in 0..PANEL_ROWS {
                if let (Some(&v), Some(o)) = (src.get(p * 32 + r * 2), panel.get_mut(p * 32 + r)) {
                    *o = kind.decode(v);
                }
            }
        }
    }

    /// [`super::lut8_scalar`] eight values a step: two 4-byte loads of indices, the eight table
    /// values inserted into two 128-bit registers (`vinsertps` from memory) and stored as such.
    /// The decoder of 8-bit palettes wherever AVX-512 VBMI is missing. On AMD Zen 4 (forced
    /// AVX2, 18 432 values into a 72 KiB tile) it took 0.18–0.20 ns a value, against 0.29–0.33
    /// for one load and store per value and 0.38–0.39 for `vgatherdps` (docs/PERFORMANCE.md).
    ///
    /// # Safety
    /// AVX2.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn lut8(idx: &[u8], lut: &[f32; 256], out: &mut [f32]) {
        let n = idx.len().min(out.len());
        let (idx, out) = (&idx[..n], &mut out[..n]);
        let whole = n - n % 8;
        for (i, o) in idx[..whole].chunks_exact(8).zip(out[..whole].chunks_exact_mut(8)) {
            // SAFETY: `i` holds 8 bytes (two unaligned 4-byte reads, little-endian on x86-64:
            // byte j of a read is bits 8j..8j+8) and `o` 8 values (two unaligned 4-value writes).
            unsafe {
                let d = i.as_ptr().cast::<u32>();
                let (d0, d1) = (d.read_unaligned(), d.add(1).read_unaligned());
                let g = |d: u32, s: u32| lut[((d >> s) & 255) as usize];
                let lo = _mm_setr_ps(g(d0, 0), g(d0, 8), g(d0, 16), g(d0, 24));
                let hi = _mm_setr_ps(g(d1, 0), g(d1, 8), g(d1, 16), g(d1, 24));
                _mm_storeu_ps(o.as_mut_ptr(), lo);
                _mm_storeu_ps(o.as_mut_ptr().add(4), hi);
            }
        }
        super::lut8_scalar(&idx[whole..], lut, &mut out[whole..]);
    }

    /// All `m` rows of `x` (columns `[k0, k0 + kc)`) against `np` panels, one panel at a time.
    ///
    /// # Safety
    /// AVX2 and FMA; `xp` is `x` (`m` rows of `ldx` values) packed by [`pack_rows`]; otherwise
    /// as [`super::avx512::block`].
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn block(
        xp: &[f32],
        m: usize,
        ldx: usize,
        k0: usize,
        kc: usize,
        tile: &[f32],
        operand: Operand,
        np: usize,
        dst: DstPtr,
        c0: usize,
        ld: usize,
        ncols: usize,
        acc: bool,
        next: Option<Prefetch>,
    ) {
        // The next block's lines are spread over every (panel, row chunk) of this one.
        let chunks = m.div_ceil(MR);
        // (this tile's register pressure is low: a run-time step costs no reloads here)
        let (bstride, kstep) = (operand.panel_stride(), operand.kstep(np));
        debug_assert!(xp.len() >= chunks * XS * ldx && k0 + kc <= ldx);
        for j in 0..np {
            let valid = ncols.saturating_sub(j * PANEL_ROWS).min(PANEL_ROWS);
            if valid == 0 {
                continue;
            }
            let mut r = 0;
            while r < m {
                let mr = MR.min(m - r);
                let share = next.map_or((0, 0), |p| p.share(j * chunks + r / MR, np * chunks));
                let mut pf = PrefetchCursor::new(next, share, kc / UNROLL);
                let pf = &mut pf;
                // SAFETY: chunk r/MR of xp starts at (r/MR)·ldx·XS and holds ldx steps of XS
                // values; rows [r, r + mr) ⊆ [0, m), panel j < np; the caller's contract covers
                // the rest.
                unsafe {
                    let a = xp.as_ptr().add((r / MR) * ldx * XS + k0 * XS);
                    let b = tile.as_ptr().add(j * bstride);
                    let c = dst.0.add(r * ld + c0 + j * PANEL_ROWS);
                    match mr {
                        6 => tile_kernel::<6>(a, b, kstep, kc, valid, c, ld, acc, pf),
                        5 => tile_kernel::<5>(a, b, kstep, kc, valid, c, ld, acc, pf),
                        4 => tile_kernel::<4>(a, b, kstep, kc, valid, c, ld, acc, pf),
                        3 => tile_kernel::<3>(a, b, kstep, kc, valid, c, ld, acc, pf),
                        2 => tile_kernel::<2>(a, b, kstep, kc, valid, c, ld, acc, pf),
                        _ => tile_kernel::<1>(a, b, kstep, kc, valid, c, ld, acc, pf),
                    }
                }
                pf.finish();
                r += mr;
            }
        }
        const _: () = assert!(MR == 6);
    }

    /// One reduction step of the register tile: `R` rows × one panel of 16 columns.
    ///
    /// # Safety
    /// AVX2 and FMA; `a` points at the step's `R` ≤ [`XS`] packed values, `b` at its 16 panel
    /// values.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn step<const R: usize>(lo: &mut [__m256; R], hi: &mut [__m256; R], a: *const f32, b: *const f32) {
        // SAFETY: 16 values at b; R values at a (the caller's contract).
        let (b0, b1) = unsafe { (_mm256_loadu_ps(b), _mm256_loadu_ps(b.add(8))) };
        for i in 0..R {
            // SAFETY: i < R.
            let av = _mm256_set1_ps(unsafe { *a.add(i) });
            lo[i] = _mm256_fmadd_ps(av, b0, lo[i]);
            hi[i] = _mm256_fmadd_ps(av, b1, hi[i]);
        }
    }

    /// The register tile: `R` rows × one panel of 16 columns (two ymm per row) over `kc` steps,
    /// [`UNROLL`] steps an iteration (a prefetch tick each), the rows' values read from a packed
    /// chunk.
    ///
    /// # Safety
    /// AVX2 and FMA; `a` points at `kc` steps of [`XS`] packed values ([`pack_rows`]), of which
    /// rows `[0, R)` are read; `b` at one panel of `kc` steps of 16 values, `kstep` apart; `c`
    /// at `R` rows (stride `ld`) of which columns `[0, valid)`, `valid ≤ 16`, are written.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    unsafe fn tile_kernel<const R: usize>(
        a: *const f32,
        b: *const f32,
        kstep: usize,
        kc: usize,
        valid: usize,
        c: *mut f32,
        ld: usize,
        accumulate: bool,
        pf: &mut PrefetchCursor,
    ) {
        let mut lo = [_mm256_setzero_ps(); R];
        let mut hi = [_mm256_setzero_ps(); R];
        let groups = kc / UNROLL;
        for g in 0..groups {
            pf.tick(g);
            for u in 0..UNROLL {
                let k = g * UNROLL + u;
                // SAFETY: step k < kc: its packed values and its 16 panel values.
                unsafe { step::<R>(&mut lo, &mut hi, a.add(k * XS), b.add(k * kstep)) };
            }
        }
        for k in groups * UNROLL..kc {
            // SAFETY: as above.
            unsafe { step::<R>(&mut lo, &mut hi, a.add(k * XS), b.add(k * kstep)) };
        }
        for i in 0..R {
            // SAFETY: row i < R; columns [0, valid) ⊆ the caller's block (full panels use two
            // 8-value accesses, a partial one goes through a stack copy).
            unsafe {
                let p = c.add(i * ld);
                if valid == 16 {
                    let (mut v0, mut v1) = (lo[i], hi[i]);
                    if accumulate {
                        v0 = _mm256_add_ps(_mm256_loadu_ps(p), v0);
                        v1 = _mm256_add_ps(_mm256_loadu_ps(p.add(8)), v1);
                    }
                    _mm256_storeu_ps(p, v0);
                    _mm256_storeu_ps(p.add(8), v1);
                } else {
                    let mut t = [0.0f32; 16];
                    _mm256_storeu_ps(t.as_mut_ptr(), lo[i]);
                    _mm256_storeu_ps(t.as_mut_ptr().add(8), hi[i]);
                    for (q, &v) in t.iter().enumerate().take(valid) {
                        let o = p.add(q);
                        *o = if accumulate { *o + v } else { v };
                    }
                }
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn pf(lines: usize) -> Prefetch {
        // three panels of five lines, 400 bytes apart
        Prefetch { base: std::ptr::null(), stride: 400, steps: 5, lines }
    }

    fn offsets(p: Prefetch, share: (usize, usize)) -> Vec<usize> {
        let mut c = PrefetchCursor::new(Some(p), share, 10);
        std::iter::from_fn(|| c.next_offset()).collect()
    }

    #[test]
    fn avx2_table_decoder_matches_one_lookup_per_value() {
        if !Isa::Avx2.runs_here() {
            eprintln!("skipping: this CPU does not run the AVX2 kernels");
            return;
        }
        // every index, in an order where neighbours differ, at lengths around the 8-value step
        let lut: [f32; 256] = std::array::from_fn(|i| i as f32 * 0.25 - 17.0);
        let idx: Vec<u8> = (0..300u32).map(|i| (i * 97 % 256) as u8).collect();
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 256, 300] {
            let mut want = vec![f32::NAN; n];
            for (w, &i) in want.iter_mut().zip(&idx[..n]) {
                *w = i as f32 * 0.25 - 17.0;
            }
            let mut got = vec![f32::NAN; n];
            // SAFETY: AVX2 checked above.
            unsafe { avx2::lut8(&idx[..n], &lut, &mut got) };
            assert_eq!(got, want, "{n} values");
            // a shorter output takes only its own values; the rest of a longer one is untouched
            let mut short = vec![f32::NAN; n + 3];
            // SAFETY: as above.
            unsafe { avx2::lut8(&idx[..n], &lut, &mut short[..n.saturating_sub(2)]) };
            assert_eq!(&short[..n.saturating_sub(2)], &want[..n.saturating_sub(2)]);
            assert!(short[n.saturating_sub(2)..].iter().all(|v| v.is_nan()), "{n}: wrote past the output");
        }
    }

    /// `pack` (`x`, `m`, `k`, out) against its layout: chunks of `rows` rows, 8 values a step
    /// (the chunk's rows, then zeros), the last chunk padded with zero rows.
    fn check_packing(
        pack: unsafe fn(&[f32], usize, usize, &mut Vec<f32>),
        rows: usize,
        shapes: &[(usize, usize)],
    ) {
        for &(m, k) in shapes {
            let x: Vec<f32> = (0..m * k).map(|i| i as f32 + 0.5).collect();
            let mut out = vec![f32::NAN; 3];
            // SAFETY: the caller checked the ISA; x holds m·k values.
            unsafe { pack(&x, m, k, &mut out) };
            assert_eq!(out.len(), m.div_ceil(rows) * 8 * k, "{m}x{k}");
            for (at, &v) in out.iter().enumerate() {
                let (c, j, i) = (at / (8 * k), at % (8 * k) / 8, at % 8);
                let r = c * rows + i;
                let want = if i < rows && r < m { x[r * k + j] } else { 0.0 };
                assert_eq!(v, want, "{m}x{k}: chunk {c}, step {j}, slot {i}");
            }
        }
    }

    #[test]
    fn packed_rows_put_each_steps_eight_rows_side_by_side() {
        if !Isa::Avx512.runs_here() {
            eprintln!("skipping: this CPU does not run the AVX-512 kernels");
            return;
        }
        // full chunks and a padded one; steps in whole 16-step transposes and a remainder
        check_packing(
            avx512::pack_rows,
            8,
            &[(1, 1), (8, 16), (8, 17), (9, 33), (16, 15), (23, 48), (96, 77)],
        );
    }

    #[test]
    fn avx2_packed_rows_put_each_steps_six_rows_then_two_zeros_side_by_side() {
        if !Isa::Avx2.runs_here() {
            eprintln!("skipping: this CPU does not run the AVX2 kernels");
            return;
        }
        // full chunks and a padded one; steps in whole 8-step transposes and a remainder
        check_packing(avx2::pack_rows, 6, &[(1, 1), (6, 8), (6, 9), (7, 17), (12, 7), (23, 48), (96, 77)]);
    }

    #[test]
    fn prefetch_shares_cover_every_line_once_in_panel_order() {
        let p = pf(15);
        // share 1 of 4: lines [3, 7) → panel 0 lines 3, 4; panel 1 lines 0, 1 (64 bytes a line)
        assert_eq!(p.share(1, 4), (3, 4));
        assert_eq!(offsets(p, p.share(1, 4)), vec![192, 256, 400, 464]);
        for n in [1, 2, 4, 7, 15, 16] {
            let all: Vec<usize> = (0..n).flat_map(|i| offsets(p, p.share(i, n))).collect();
            let want: Vec<usize> = (0..3).flat_map(|j| (0..5).map(move |k| j * 400 + k * 64)).collect();
            assert_eq!(all, want, "{n} shares");
        }
        // no block to fetch, or a zero-step one: nothing is issued
        let mut none = PrefetchCursor::new(None, (0, 3), 10);
        assert_eq!(none.next_offset(), None);
        assert_eq!(offsets(Prefetch { steps: 0, ..pf(0) }, (0, 0)), Vec::<usize>::new());
    }

    #[test]
    fn next_block_points_at_the_block_in_each_storage() {
        use crate::model::lowp::HalfKind;
        // 100 output channels (7 panels: blocks of 3, 3, 1), 1000 inputs (slices 384, 384, 232)
        let (out, k) = (100, 1000);
        let f = Matrix::f32_row_major(out, k, vec![0.25; out * k]).unwrap();
        let packed = f.clone().into_layout(Layout::Panels16);
        let Matrix::F32(d) = &packed else { panic!("f32") };
        // block 1 (panels 3..6, a group of three, step-major: 48 values a step), slice from 384:
        // one contiguous stretch of 384 steps × 3 lines
        let p = next_block(&packed, Some(d.data()), 1, 384, 7).unwrap();
        assert_eq!(p.base, d.data()[3 * 16 * k + 384 * 48..].as_ptr().cast());
        assert_eq!((p.stride, p.steps, p.lines), (0, 3 * 384, 3 * 384));
        // the last block has one panel (16 values a step); the last slice 232 inputs
        let p = next_block(&packed, Some(d.data()), 2, 768, 7).unwrap();
        assert_eq!(p.base, d.data()[6 * 16 * k + 768 * 16..].as_ptr().cast());
        assert_eq!((p.steps, p.lines), (232, 232));
        assert!(next_block(&packed, Some(d.data()), 3, 0, 7).is_none(), "no block 3");
        assert!(next_block(&packed, Some(d.data()), 0, 1000, 7).is_none(), "no slice from 1000");
        // FP16 pairs: 2 bytes a value, 16 × 384 × 2 bytes = 192 lines per panel
        let Matrix::F16(h) = f.to_half(HalfKind::F16) else { panic!("f16") };
        let h = Matrix::F16(h.into_order(HalfOrder::Pairs16));
        let Matrix::F16(hh) = &h else { panic!("f16") };
        let p = next_block(&h, None, 0, 384, 7).unwrap();
        assert_eq!(p.base, hh.data()[384 * 16..].as_ptr().cast());
        assert_eq!((p.stride, p.steps, p.lines), (16 * k * 2, 192, 3 * 192));
        // row-major FP32 weights decode row by row: nothing to hint
        assert!(next_block(&f, None, 0, 0, 7).is_none());
    }

    #[test]
    fn prefetch_ticks_spread_the_share_over_the_loop() {
        let p = pf(15);
        // 4 lines over a 10-step loop: one every 2 steps, at k = 0, 2, 4, 6
        let mut c = PrefetchCursor::new(Some(p), (3, 4), 10);
        let mut issued_at = Vec::new();
        for k in 0..10 {
            let before = c.left;
            c.tick(k);
            if c.left < before {
                issued_at.push(k);
            }
        }
        assert_eq!(issued_at, vec![0, 2, 4, 6]);
        // more lines than steps: one per step, the rest at the end
        let mut c = PrefetchCursor::new(Some(p), (0, 15), 10);
        (0..10).for_each(|k| c.tick(k));
        assert_eq!(c.left, 5);
        c.finish();
        assert_eq!(c.left, 0);
    }
}
