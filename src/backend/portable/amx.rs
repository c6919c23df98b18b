//! The AMX BF16 Linear product (`tdpbf16ps`, Intel AMX-TILE and AMX-BF16): `y = x Wᵀ` with `W`
//! stored as BF16 in [`HalfOrder::Pairs16`] and `x` rounded to BF16 (nearest even) at the input
//! of each product, f32 sums: the arithmetic of the pair-dot kernel ([`super::bf16dot`]) on the
//! tile unit, which multiplies 16 × 16 × 32 BF16 values per instruction.
//!
//! Operands: sixteen consecutive pairs of a Pairs16 panel (32 inputs × 16 output channels,
//! 1 KiB) are an AMX B tile as they lie in memory (a tile row is one pair of inputs for 16
//! channels, the "VNNI" order), so the weights are read in place. `x` is rounded into a BF16
//! copy whose rows are padded with zeros to a multiple of 16: each A tile is 16 rows × 32
//! inputs. Two 16-row blocks of `x` (tiles 4, 5) meet two panels (tiles 6, 7) in four
//! accumulators (tiles 0–3), 32 rows × 32 channels; no tile is reloaded while a product still
//! reads it (a load into a tile waits for the products still reading it: a kernel that reloaded
//! one A tile for each of its products took twice as long on a Xeon). The panels go in pairs, all
//! rows of `x` per pair, so the weights come from memory once per forward; while a pair is
//! computed, the worker's next pair is hinted into L2.
//!
//! The tile state needs the OS's consent: on Linux one `arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)` per process, asked the first time [`usable`] is called. Elsewhere, or
//! when the CPU lacks AMX or the OS refuses, [`usable`] is false and BF16 weights take the
//! pair-dot kernel. Tile instructions are written as inline assembly (Rust's AMX intrinsics are
//! not stable); every worker loads the tile configuration before its first tile instruction
//! and releases the tiles when its share is done.

// Off x86-64 the kernel body is compiled out (`usable()` is false and callers take another
// path), which leaves its helpers unused there.
#![cfg_attr(not(target_arch = "x86_64"), allow(unused_imports, unused_variables, dead_code))]

use std::cell::RefCell;
use std::sync::OnceLock;

use rayon::prelude::*;

use super::bf16dot::Weights as Source;
use super::isa::Isa;
use super::linalg::{DstPtr, Split};
use crate::model::lowp::{DenseHalf, HalfOrder, Palettized, PANEL_ROWS};

/// Inputs per tile step (one B tile: 16 pairs).
pub(crate) const STEP: usize = 32;
/// Rows of `x` per A tile.
const TILE_ROWS: usize = 16;
/// Tasks per worker when the product runs on more than one thread.
const TASKS_PER_WORKER: usize = 4;

thread_local! {
    /// `x` rounded to BF16, `[m rounded up to 16, in]`, the pad rows zero; reused across calls.
    static XBF: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
}

/// Whether this CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7: EDX bits 24 and 22) and the
/// AVX-512 BF16 rounding the kernel uses for `x`.
pub(crate) fn cpu_has_amx_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if !(has!("avx512f") && has!("avx512bf16")) {
            return false;
        }
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 7 is valid where AVX-512 is reported.
        #[allow(unused_unsafe)]
        let edx = unsafe { std::arch::x86_64::__cpuid_count(7, 0) }.edx;
        edx & (1 << 24) != 0 && edx & (1 << 22) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Ask the OS for the tile state (Linux: the permission is the process's, for every thread).
fn os_grants_tiles() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        const ARCH_REQ_XCOMP_PERM: libc::c_ulong = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_ulong = 18;
        // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM takes two integers and touches no memory
        // of ours; a kernel without it returns an error, which means "no".
        unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        false
    }
}

/// Whether the AMX kernel can run in this process: the CPU has it and the OS granted the tile
/// state (asked once).
pub(crate) fn usable() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| cpu_has_amx_bf16() && os_grants_tiles())
}

/// Whether [`linear`] takes a weight of this shape: Pairs16 BF16 whose input count is a
/// multiple of [`STEP`] (the tile's reduction step; others take the pair-dot kernel).
pub(crate) fn takes(w: &DenseHalf) -> bool {
    let (k, out) = (w.cols(), w.rows());
    w.order() == HalfOrder::Pairs16
        && k > 0
        && k.is_multiple_of(STEP)
        && w.data().len() == out.next_multiple_of(PANEL_ROWS) * w.cols_even()
}

/// Whether [`linear_palettized`] takes a weight of this shape: one that
/// [`super::bf16dot::takes_palette`] takes (8-bit, Panels16, groups of whole panels) whose input
/// count is a multiple of [`STEP`] (others take the pair-dot tile or the FP32 panel kernel's
/// decoder).
pub(crate) fn takes_palette(p: &Palettized) -> bool {
    super::bf16dot::takes_palette(p) && p.cols().is_multiple_of(STEP)
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ` (no bias). Returns false, doing nothing, when AMX cannot run
/// here or under `isa`, the weight is not one [`takes`] accepts or a slice is too short; the
/// caller then takes another kernel.
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
    if !isa.has_amx_bf16() || !takes(w) || x.len() < m * k || y.len() < m * out {
        return false;
    }
    product(x, m, k, out, Source::Dense(w.data()), y, accumulate, split);
    true
}

/// [`linear`] for 8-bit palettized weights: each pair of 16-row panels is decoded, once per
/// product, through its group's table rounded to BF16 (nearest even) into a Pairs16 BF16 block
/// in the worker's cache (2 × 16 × `in` values, 192 KiB at 3072 inputs), which the tiles then
/// read for every row of `x`. The arithmetic is then that of BF16 weights (BF16 operands, f32
/// sums), like Core ML's W8 palettization, which decodes its tables to FP16. Returns false,
/// doing nothing, when AMX or the AVX-512 VBMI byte permutes of the decoder cannot run here or
/// under `isa`, the weight is not one [`takes_palette`] accepts or a slice is too short.
pub(crate) fn linear_palettized(
    x: &[f32],
    m: usize,
    p: &Palettized,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
    isa: Isa,
) -> bool {
    if !isa.has_amx_bf16() || !takes_palette(p) {
        return false;
    }
    let Some(src) = super::bf16dot::palette_source(x, m, p, y, isa) else { return false };
    product(x, m, p.cols(), p.rows(), src, y, accumulate, split);
    true
}

/// The product of [`linear`] and [`linear_palettized`] once their checks passed: `x` rounded to
/// BF16, then parts of whole pairs of panels on the workers.
#[allow(clippy::too_many_arguments)]
fn product(
    x: &[f32],
    m: usize,
    k: usize,
    out: usize,
    src: Source<'_>,
    y: &mut [f32],
    accumulate: bool,
    split: Split,
) {
    if m == 0 || out == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mp = m.next_multiple_of(TILE_ROWS);
        XBF.with(|buf| {
            let mut xb = buf.borrow_mut();
            // every real row is overwritten below; only the pad rows must be (made) zero
            xb.resize(mp * k, 0);
            xb[m * k..].fill(0);
            for (src, dst) in x[..m * k].chunks_exact(k).zip(xb.chunks_exact_mut(k)) {
                // SAFETY: the callers checked `has_amx_bf16()`, which implies AVX-512F and
                // AVX-512 BF16 (checked at run time).
                unsafe { super::bf16dot::round_row(src, dst) };
            }
            let xb: &[u16] = &xb;
            let panels = out.div_ceil(PANEL_ROWS);
            let workers = split.workers();
            // parts are ranges of whole pairs of panels (the kernel's 32 channels)
            let pairs = panels.div_ceil(2);
            let parts = if workers > 1 { pairs.min(workers * TASKS_PER_WORKER) } else { 1 };
            let dst = DstPtr(y.as_mut_ptr());
            let part = |pi: usize| {
                let (p0, p1) = (2 * (pairs * pi / parts), (2 * (pairs * (pi + 1) / parts)).min(panels));
                // SAFETY: the callers checked the CPU, the OS's grant and (for palettes) the
                // AVX-512 VBMI decoder; `xb` holds mp rows of k values; every panel in
                // [p0, p1) holds 16·k values (or indices) of the source, whose tables cover
                // every group (checked by `takes` / `takes_palette`); this part alone writes
                // columns [16·p0, min(16·p1, out)) of the m rows of `y` (row stride `out`,
                // length ≥ m·out).
                unsafe { tiles::panels(xb, m, k, src, p0, p1, dst, out, accumulate) };
            };
            if parts > 1 {
                (0..parts).into_par_iter().for_each(part);
            } else {
                part(0);
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, k, src, y, accumulate, split);
}

/// FLOP of one [`peak_loop`] iteration: six 16 × 16 × 32 tile products, a multiply-add
/// counting 2.
pub(crate) const PEAK_FLOP_PER_ITER: f64 = (6 * 16 * 16 * 32 * 2) as f64;

/// The tile unit's rate for `bounds --measure`: `iters` × six independent `tdpbf16ps` into
/// tiles 0–5 from tiles 6 and 7 (the engine kernel's tile use, without memory). Returns an
/// element of the result so the loop is kept.
///
/// # Safety
/// [`usable`] returned true in this process.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn peak_loop(iters: u64) -> f32 {
    use std::arch::asm;
    let cfg = TileConfig::full();
    let zeros = [0u16; 512];
    let mut out = [0f32; 256];
    // SAFETY: a valid configuration; the loads read 16 × 64 bytes of `zeros` (1 KiB); the store
    // writes 16 × 64 bytes into `out` (1 KiB).
    unsafe {
        asm!("ldtilecfg [{0}]", in(reg) &cfg as *const TileConfig, options(nostack, readonly));
        asm!(
            "tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3", "tilezero tmm4", "tilezero tmm5",
            "tileloadd tmm6, [{z} + {s}*1]", "tileloadd tmm7, [{z} + {s}*1]",
            z = in(reg) zeros.as_ptr(), s = in(reg) 64usize, options(nostack, readonly)
        );
        for _ in 0..iters {
            asm!(
                "tdpbf16ps tmm0, tmm6, tmm7",
                "tdpbf16ps tmm1, tmm6, tmm7",
                "tdpbf16ps tmm2, tmm6, tmm7",
                "tdpbf16ps tmm3, tmm6, tmm7",
                "tdpbf16ps tmm4, tmm6, tmm7",
                "tdpbf16ps tmm5, tmm6, tmm7",
                options(nostack, nomem)
            );
        }
        asm!("tilestored [{o} + {s}*1], tmm0", o = in(reg) out.as_mut_ptr(), s = in(reg) 64usize, options(nostack));
        asm!("tilerelease", options(nostack, nomem));
    }
    out[0]
}

/// The 64-byte tile configuration (palette 1): `rows` × `colsb` bytes for each tile used.
#[repr(C, align(64))]
pub(crate) struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

impl TileConfig {
    /// Tiles 0–7 at 16 rows of 64 bytes (16 f32, or 32 BF16).
    pub(crate) fn full() -> Self {
        let mut c = TileConfig { palette: 1, start_row: 0, reserved: [0; 14], colsb: [0; 16], rows: [0; 16] };
        for t in 0..8 {
            c.colsb[t] = 64;
            c.rows[t] = 16;
        }
        c
    }
}

#[cfg(target_arch = "x86_64")]
mod tiles {
    use std::arch::asm;
    use std::cell::RefCell;

    use super::{decode, DstPtr, Source, TileConfig, STEP, TILE_ROWS};
    use crate::model::lowp::PANEL_ROWS;

    thread_local! {
        /// A decoded pair of palettized panels (Pairs16 BF16, 2 × 16 × k values); reused.
        static WBF: RefCell<Vec<u16>> = const { RefCell::new(Vec::new()) };
    }

    /// Panels `[p0, p1)` of `src` against all `m` rows of `xb`, into columns `16·p0..` of `dst`.
    ///
    /// # Safety
    /// AMX-TILE and AMX-BF16 usable in this process, and for a palette source AVX-512F/BW/VBMI
    /// too; `xb.len() ≥ m.next_multiple_of(16)·k`, `k` a positive multiple of 32; `src` holds
    /// every panel below `p1` (16·k values or indices each; for a palette, 256 table entries for
    /// each group, groups a multiple of 16 rows); `dst` points at a live f32 array of at least
    /// `m·ld` values of which this call alone writes columns `[16·p0, min(16·p1, ld))`.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn panels(
        xb: &[u16],
        m: usize,
        k: usize,
        src: Source<'_>,
        p0: usize,
        p1: usize,
        dst: DstPtr,
        ld: usize,
        accumulate: bool,
    ) {
        match src {
            // SAFETY: the caller's contract.
            Source::Dense(w) => unsafe { dense(xb, m, k, w, p0, p1, dst, ld, accumulate) },
            Source::Palette { indices, lut, group_size } => WBF.with(|buf| {
                let mut wb = buf.borrow_mut();
                let panel_len = PANEL_ROWS * k;
                wb.resize(2 * panel_len, 0);
                let mut p = p0;
                while p < p1 {
                    let np = (p1 - p).min(2);
                    for q in 0..np {
                        let g = (p + q) * PANEL_ROWS / group_size;
                        let idx = &indices[(p + q) * panel_len..(p + q + 1) * panel_len];
                        // SAFETY: AVX-512F/BW/VBMI and AVX-512 BF16 (the caller's contract);
                        // the group's 256 entries are inside `lut`; `idx` and the output hold
                        // 16·k values, a multiple of 64.
                        unsafe {
                            decode::palette_pairs(idx, &lut[g * 256..g * 256 + 256], &mut wb[q * panel_len..])
                        };
                    }
                    // SAFETY: the decoded block holds `np` panels of 16·k values; the caller's
                    // contract covers `xb` and the destination columns of panels [p, p + np).
                    unsafe { block(xb, m, k, &wb, 0, p, np, None, dst, ld, accumulate) };
                    p += np;
                }
            }),
        }
    }

    /// [`panels`] for Pairs16 BF16 weights read in place.
    ///
    /// # Safety
    /// As [`panels`], with `w` holding every panel below `p1`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn dense(
        xb: &[u16],
        m: usize,
        k: usize,
        w: &[u16],
        p0: usize,
        p1: usize,
        dst: DstPtr,
        ld: usize,
        accumulate: bool,
    ) {
        let panel_len = PANEL_ROWS * k;
        let mut p = p0;
        while p < p1 {
            let np = (p1 - p).min(2);
            // The next pair of panels is hinted once, during the first rows.
            let next = (p + np < p1).then(|| (w[(p + np) * panel_len..].as_ptr(), (p1 - p - np).min(2)));
            // SAFETY: the caller's contract: panels [p, p + np) are inside `w`.
            unsafe { block(xb, m, k, w, p, p, np, next, dst, ld, accumulate) };
            p += np;
        }
    }

    /// All row blocks of `xb` against `np ≤ 2` panels of `w` from panel `wp`, into the columns
    /// of output panels `p..p + np`, between `ldtilecfg` and `tilerelease`.
    ///
    /// # Safety
    /// As [`panels`]; panels `[wp, wp + np)` are inside `w`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn block(
        xb: &[u16],
        m: usize,
        k: usize,
        w: &[u16],
        wp: usize,
        p: usize,
        np: usize,
        next: Option<(*const u16, usize)>,
        dst: DstPtr,
        ld: usize,
        accumulate: bool,
    ) {
        let cfg = TileConfig::full();
        // SAFETY: a valid palette-1 configuration, 64 bytes, read once.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) &cfg as *const TileConfig, options(nostack, readonly)) };
        let blocks = m.div_ceil(TILE_ROWS);
        let job = Job { xb, k, w, panel_len: PANEL_ROWS * k, wp, p, dst, m, ld, accumulate };
        let mut b = 0;
        while b < blocks {
            let nb = (blocks - b).min(2);
            let pf = if b == 0 { next } else { None };
            // SAFETY: rows [16b, 16(b + nb)) are inside `xb`'s padded rows; panels
            // [wp, wp + np) are inside `w`; the caller's contract covers the destination.
            unsafe {
                match (nb, np) {
                    (2, 2) => job.run::<2, 2>(b, pf),
                    (2, _) => job.run::<2, 1>(b, pf),
                    (_, 2) => job.run::<1, 2>(b, pf),
                    _ => job.run::<1, 1>(b, pf),
                }
            }
            b += nb;
        }
        // SAFETY: returns the tiles to their initial state; no operand.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
        const _: () = assert!(STEP == 32 && TILE_ROWS == PANEL_ROWS);
    }

    /// One worker's operands for a pair of panels: weights from panel `wp` of `w`, results into
    /// the columns of output panel `p` on.
    struct Job<'a> {
        xb: &'a [u16],
        k: usize,
        w: &'a [u16],
        panel_len: usize,
        wp: usize,
        p: usize,
        dst: DstPtr,
        m: usize,
        ld: usize,
        accumulate: bool,
    }

    impl Job<'_> {
        /// `RB` 16-row blocks of `x` from block `b0` against `PB` panels from `self.p`: C tiles
        /// `2r + q` (tiles 0–3), A tiles 4 and 5, B tiles 6 and 7, so no tile is reloaded while
        /// a product still reads it; then the C tiles go to columns `16(p + q)..` of rows below
        /// `m`. `next`: a block of panels (address, count) to hint into L2 on the way.
        ///
        /// # Safety
        /// As [`panels`]; the tile configuration is loaded; `b0 + RB` blocks fit `xb`'s padded
        /// rows and `p + PB` panels fit `w`.
        #[inline(always)]
        unsafe fn run<const RB: usize, const PB: usize>(&self, b0: usize, next: Option<(*const u16, usize)>) {
            let k = self.k;
            // SAFETY: tiles 0–3 are configured; no memory access.
            unsafe {
                asm!("tilezero tmm0", options(nostack, nomem));
                if PB > 1 {
                    asm!("tilezero tmm1", options(nostack, nomem));
                }
                if RB > 1 {
                    asm!("tilezero tmm2", options(nostack, nomem));
                    if PB > 1 {
                        asm!("tilezero tmm3", options(nostack, nomem));
                    }
                }
            }
            let lda = 2 * k; // bytes per row of `xb`
            let a0 = self.xb[b0 * TILE_ROWS * k..].as_ptr();
            let w0 = self.w[self.wp * self.panel_len..].as_ptr();
            let pl = self.panel_len;
            for s in 0..k / STEP {
                // SAFETY: A tiles: 16 rows of 64 bytes at column 32s of rows 16(b0 + r)..,
                // inside `xb`'s padded rows; B tiles: 16 rows of 64 bytes from pair 16s of
                // panel p + q, inside `w` (each panel holds 16·k values, k ≥ 32(s + 1)).
                unsafe {
                    let a = a0.add(s * STEP);
                    let b = w0.add(s * STEP * PANEL_ROWS);
                    asm!("tileloadd tmm4, [{a} + {lda}*1]", a = in(reg) a, lda = in(reg) lda, options(nostack, readonly));
                    if RB > 1 {
                        asm!(
                            "tileloadd tmm5, [{a} + {lda}*1]",
                            a = in(reg) a.add(TILE_ROWS * k),
                            lda = in(reg) lda,
                            options(nostack, readonly)
                        );
                    }
                    asm!("tileloadd tmm6, [{b} + {s}*1]", b = in(reg) b, s = in(reg) 64usize, options(nostack, readonly));
                    if PB > 1 {
                        asm!(
                            "tileloadd tmm7, [{b} + {s}*1]",
                            b = in(reg) b.add(pl),
                            s = in(reg) 64usize,
                            options(nostack, readonly)
                        );
                    }
                    asm!("tdpbf16ps tmm0, tmm4, tmm6", options(nostack, nomem));
                    if PB > 1 {
                        asm!("tdpbf16ps tmm1, tmm4, tmm7", options(nostack, nomem));
                    }
                    if RB > 1 {
                        asm!("tdpbf16ps tmm2, tmm5, tmm6", options(nostack, nomem));
                        if PB > 1 {
                            asm!("tdpbf16ps tmm3, tmm5, tmm7", options(nostack, nomem));
                        }
                    }
                }
                if let Some((n, count)) = next {
                    // the same 1 KiB of each next panel: 16 lines per panel, hints only
                    for q in 0..count {
                        let at = n.wrapping_add(q * pl + s * STEP * PANEL_ROWS).cast::<u8>();
                        for l in 0..16 {
                            super::super::linalg::hint_l2(at.wrapping_add(64 * l));
                        }
                    }
                }
            }
            let mut out = Scratch([0.0; 256]);
            macro_rules! store {
                ($t:literal, $r:literal, $q:literal) => {
                    if $r < RB && $q < PB {
                        // SAFETY: 16 rows of 64 bytes into the 1 KiB scratch.
                        unsafe {
                            asm!(
                                concat!("tilestored [{o} + {s}*1], tmm", $t),
                                o = in(reg) out.0.as_mut_ptr(),
                                s = in(reg) 64usize,
                                options(nostack)
                            )
                        };
                        self.write(&out.0, (b0 + $r) * TILE_ROWS, self.p + $q);
                    }
                };
            }
            store!(0, 0, 0);
            store!(1, 0, 1);
            store!(2, 1, 0);
            store!(3, 1, 1);
        }

        /// A stored C tile (16 rows × 16 channels) into rows `r0..` (below `m`) and the
        /// channels of panel `p` (below `ld`).
        #[inline(always)]
        fn write(&self, tile: &[f32; 256], r0: usize, p: usize) {
            let cols = self.ld.saturating_sub(p * PANEL_ROWS).min(PANEL_ROWS);
            for r in 0..TILE_ROWS.min(self.m.saturating_sub(r0)) {
                let src = &tile[r * 16..r * 16 + cols];
                // SAFETY: row r0 + r < m and columns [16p, 16p + cols) ⊆ [16p, ld): this job's
                // columns, inside the caller's array of m·ld values.
                let row = unsafe {
                    std::slice::from_raw_parts_mut(self.dst.0.add((r0 + r) * self.ld + p * PANEL_ROWS), cols)
                };
                if self.accumulate {
                    row.iter_mut().zip(src).for_each(|(o, v)| *o += v);
                } else {
                    row.copy_from_slice(src);
                }
            }
        }
    }

    /// One stored C tile (16 × 16 f32), 64-byte aligned.
    #[repr(C, align(64))]
    struct Scratch([f32; 256]);
}

#[cfg(target_arch = "x86_64")]
pub(super) use decode::palette_pairs;

/// The palette decoder of [`linear_palettized`] (and of [`super::bf16dot::linear_palettized`]).
#[cfg(target_arch = "x86_64")]
mod decode {
    use std::arch::x86_64::*;

    use crate::model::lowp::PANEL_ROWS;

    /// Where output value `o` of a 64-value step (two input pairs of a Pairs16 panel,
    /// `o = 32·pair + 2·row + (input % 2)`) reads its index in the Panels16 step (four inputs of
    /// 16 rows, `16·input + row`).
    pub(super) const fn source_of(o: usize) -> usize {
        (2 * (o / 32) + o % 2) * PANEL_ROWS + (o % 32) / 2
    }

    /// Decode one panel of 8-bit indices in Panels16 order (`idx[k·16 + r]`, `idx.len()` a
    /// multiple of 64) through a 256-entry f32 table rounded to BF16 (nearest even) into the
    /// Pairs16 order of BF16 weights (`out[(k/2)·32 + 2r + k%2]`).
    ///
    /// The table's BF16 values are split into a low and a high byte plane of four registers;
    /// 64 indices at a time look up one byte per plane with two-table byte permutes
    /// (`vpermt2b`, 7 index bits) blended on the eighth bit, and interleaving the two planes'
    /// bytes rebuilds the 64 BF16 values. The indices are pre-permuted ([`source_of`]) so that
    /// the words come out in Pairs16 order.
    ///
    /// # Safety
    /// AVX-512F, AVX-512BW, AVX-512 VBMI and AVX-512 BF16; `lut.len() ≥ 256`,
    /// `out.len() ≥ idx.len()`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bf16")]
    pub(in crate::backend::portable) unsafe fn palette_pairs(idx: &[u8], lut: &[f32], out: &mut [u16]) {
        let n = idx.len().min(out.len());
        if lut.len() < 256 {
            return;
        }
        // words[j]: entries 32j..32j + 32 as BF16
        let words: [__m512i; 8] = std::array::from_fn(|j| {
            // SAFETY: entries 32j .. 32j + 32 ≤ 256 ≤ lut.len().
            unsafe {
                let lo = _mm512_loadu_ps(lut.as_ptr().add(32 * j));
                let hi = _mm512_loadu_ps(lut.as_ptr().add(32 * j + 16));
                std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo))
            }
        });
        // planes[b][q]: byte b of entries 64q..64q + 64
        let planes: [[__m512i; 4]; 2] = std::array::from_fn(|b| {
            std::array::from_fn(|q| {
                let half = |w: __m512i| {
                    let w = if b == 0 { w } else { _mm512_srli_epi16::<8>(w) };
                    _mm512_cvtepi16_epi8(w)
                };
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(half(words[2 * q])), half(words[2 * q + 1]))
            })
        });
        // unpacklo_epi8 puts the bytes 16l + s (s < 8) of each 128-bit lane l at words 8l + s,
        // unpackhi the bytes 16l + 8 + s: the first register is output values 0..32, the
        // second 32..64.
        let mut order = [0u8; 64];
        for l in 0..4 {
            for s in 0..8 {
                order[16 * l + s] = source_of(8 * l + s) as u8;
                order[16 * l + 8 + s] = source_of(32 + 8 * l + s) as u8;
            }
        }
        // SAFETY: a 64-byte read of a 64-byte array.
        let order = unsafe { _mm512_loadu_si512(order.as_ptr() as *const __m512i) };
        let mut i = 0;
        while i + 64 <= n {
            // SAFETY: i + 64 ≤ n ≤ both lengths: one 64-byte read, two 64-byte writes.
            unsafe {
                let raw = _mm512_loadu_si512(idx.as_ptr().add(i) as *const __m512i);
                let ix = _mm512_permutexvar_epi8(order, raw);
                let high = _mm512_movepi8_mask(ix);
                let b: [__m512i; 2] = std::array::from_fn(|p| {
                    let lo = _mm512_permutex2var_epi8(planes[p][0], ix, planes[p][1]);
                    let hi = _mm512_permutex2var_epi8(planes[p][2], ix, planes[p][3]);
                    _mm512_mask_blend_epi8(high, lo, hi)
                });
                let o = out.as_mut_ptr().add(i) as *mut __m512i;
                _mm512_storeu_si512(o, _mm512_unpacklo_epi8(b[0], b[1]));
                _mm512_storeu_si512(o.add(1), _mm512_unpackhi_epi8(b[0], b[1]));
            }
            i += 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_config_is_the_64_byte_palette_1_layout() {
        let c = TileConfig::full();
        assert_eq!(std::mem::size_of::<TileConfig>(), 64);
        // SAFETY: a repr(C) struct of plain integers, 64 bytes, viewed as bytes.
        let bytes: &[u8; 64] = unsafe { &*(&c as *const TileConfig as *const [u8; 64]) };
        assert_eq!(bytes[0], 1, "palette 1");
        // colsb of tiles 0..8 at bytes 16.., little-endian 64; rows at bytes 48..
        for t in 0..16 {
            let colsb = u16::from_le_bytes([bytes[16 + 2 * t], bytes[17 + 2 * t]]);
            assert_eq!(colsb, if t < 8 { 64 } else { 0 });
            assert_eq!(bytes[48 + t], if t < 8 { 16 } else { 0 });
        }
    }
}

#[cfg(test)]
mod product_tests {
    use super::*;
    use crate::model::lowp::HalfKind;
    use crate::model::weights::Matrix;

    /// `product(y, accumulate, split)` (a kernel on `m` rows of `x` and the `out × inp` weights
    /// `w`, row-major) against the f64 product of BF16-rounded `x` and `w`, single-threaded and
    /// on two workers, overwriting then accumulating; where the kernel cannot run here
    /// (`runs` false) it must decline and write nothing.
    #[allow(clippy::too_many_arguments)]
    fn check_rounded(
        pool: &rayon::ThreadPool,
        x: &[f32],
        m: usize,
        inp: usize,
        out: usize,
        w: &[f32],
        runs: bool,
        product: impl Fn(&mut [f32], bool, Split) -> bool + Sync,
    ) {
        let bf = |v: f32| half::bf16::from_f32(v).to_f32() as f64;
        let term = |i: usize, j: usize| bf(x[(i / out) * inp + j]) * bf(w[(i % out) * inp + j]);
        let want: Vec<f64> = (0..m * out).map(|i| (0..inp).map(|j| term(i, j)).sum()).collect();
        let scale: Vec<f64> = (0..m * out).map(|i| (0..inp).map(|j| term(i, j).abs()).sum()).collect();
        for split in [Split::Single, Split::Gemm(2)] {
            let mut y = vec![f32::NAN; m * out];
            let ran = pool.install(|| product(&mut y, false, split));
            assert_eq!(ran, runs, "{m}x{inp}x{out}");
            if !runs {
                assert!(y.iter().all(|v| v.is_nan()), "a declined product writes nothing");
                continue;
            }
            for (i, (&a, &b)) in y.iter().zip(&want).enumerate() {
                assert!(
                    (a as f64 - b).abs() <= 1e-5 * (scale[i] + 1.0),
                    "{m}x{inp}x{out} {split:?} [{i}]: {a} vs {b}"
                );
            }
            pool.install(|| product(&mut y, true, split));
            for (i, (&a, &b)) in y.iter().zip(&want).enumerate() {
                assert!((a as f64 - 2.0 * b).abs() <= 2e-5 * (scale[i] + 1.0), "accumulate [{i}]");
            }
        }
    }

    /// The tile kernel against the f64 product of BF16-rounded activations and the BF16
    /// weights, over row counts that leave partial tiles and groups (1, 17, 100 rows: one, two
    /// and seven 16-row blocks), partial last panels, one and several workers, overwrite and
    /// accumulate. Where this CPU or OS has no AMX, `linear` must decline (and says so).
    #[test]
    fn amx_product_matches_the_rounded_reference_or_declines() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let runs = Isa::Avx512.has_amx_bf16();
        if !runs {
            eprintln!("AMX-BF16 not usable here (CPU or OS): checking that the kernel declines");
        }
        for &(m, inp, out) in &[(1, 32, 16), (17, 64, 50), (100, 96, 33), (96, 768, 40)] {
            let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.37).sin()).collect();
            let w: Vec<f32> = (0..out * inp).map(|i| (i as f32 * 0.11).cos() * 0.5).collect();
            let Matrix::BF16(h) = Matrix::f32_row_major(out, inp, w.clone()).unwrap().to_half(HalfKind::BF16)
            else {
                panic!("BF16 conversion");
            };
            let h = h.into_order(HalfOrder::Pairs16);
            assert!(takes(&h), "{inp} inputs is a multiple of 32");
            check_rounded(&pool, &x, m, inp, out, &w, runs, |y, acc, split| {
                linear(&x, m, &h, y, acc, split, Isa::Avx512)
            });
        }
        // input counts off the tile step are declined, whatever the CPU
        let Matrix::BF16(h) =
            Matrix::f32_row_major(16, 48, vec![0.5; 16 * 48]).unwrap().to_half(HalfKind::BF16)
        else {
            panic!("BF16 conversion");
        };
        let h = h.into_order(HalfOrder::Pairs16);
        assert!(!takes(&h));
        let mut y = vec![f32::NAN; 16];
        assert!(!linear(&[1.0; 48], 1, &h, &mut y, false, Split::Single, Isa::Avx512));
        // and the AVX2 cap turns the kernel off
        let Matrix::BF16(h) =
            Matrix::f32_row_major(16, 32, vec![0.5; 16 * 32]).unwrap().to_half(HalfKind::BF16)
        else {
            panic!("BF16 conversion");
        };
        let h = h.into_order(HalfOrder::Pairs16);
        assert!(!linear(&[1.0; 32], 1, &h, &mut y, false, Split::Single, Isa::Avx2));
    }

    /// The palette decoder's order (each Pairs16 value from its Panels16 index), then the
    /// palettized products (the AMX tiles, and the AVX-512 BF16 pair-dot tile of
    /// [`super::super::bf16dot::linear_palettized`]) against the f64 product of BF16-rounded
    /// activations and BF16-rounded table entries, over row counts leaving partial tiles,
    /// partial last panels (zero-padded index rows), groups of 16 and 32 rows, input counts on
    /// and off the AMX step, one and several workers, overwrite and accumulate. Where this CPU
    /// or OS lacks a kernel's features (AMX; AVX-512 BF16 and VBMI), that kernel must decline;
    /// so must 4-bit and row-major palettes and input counts off each kernel's step.
    #[test]
    fn palettized_products_match_the_rounded_reference_or_decline() {
        use crate::backend::portable::bf16dot;
        use crate::model::lowp::PaletteOrder;
        use crate::model::palettize::{palettize_matrix, PaletteConfig};
        // the pre-permutation: value o of a 64-value step is (pair o/32, row (o%32)/2, input o%2)
        for o in 0..64 {
            let (pair, row, odd) = (o / 32, (o % 32) / 2, o % 2);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(decode::source_of(o), (2 * pair + odd) * 16 + row, "value {o}");
            let _ = (pair, row, odd);
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let runs = Isa::Avx512.has_amx_bf16() && Isa::Avx512.has_lut8();
        let dot_runs = Isa::Avx512.has_bf16_dot() && Isa::Avx512.has_lut8();
        if !runs {
            eprintln!("AMX-BF16 or AVX-512 VBMI not usable here: checking that the AMX kernel declines");
        }
        if !dot_runs {
            eprintln!("AVX-512 BF16 or VBMI not here: checking that the pair-dot palette kernel declines");
        }
        let palette = |out: usize, inp: usize, group: usize, bits: u8| {
            let w: Vec<f32> =
                (0..out * inp).map(|i| (i as f32 * 0.13).cos() * 0.4 + (i % 7) as f32 * 0.01).collect();
            let m = Matrix::f32_row_major(out, inp, w).unwrap();
            let cfg = PaletteConfig { group_size: group, ..PaletteConfig::new(bits) };
            palettize_matrix(&m, "w", 0, &cfg).unwrap().0
        };
        for &(m, inp, out, group) in
            &[(1, 32, 16, 16), (17, 64, 50, 16), (100, 96, 33, 32), (96, 768, 40, 32), (7, 36, 70, 16)]
        {
            let p = palette(out, inp, group, 8).into_order(PaletteOrder::Panels16);
            let on_step = inp % STEP == 0;
            assert_eq!(takes_palette(&p), on_step, "{inp} inputs, groups of {group}");
            assert!(bf16dot::takes_palette(&p), "{inp} inputs, groups of {group}");
            let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.37).sin()).collect();
            // the decoded weights, row-major, from the table as stored
            let mut wd = vec![0f32; out * inp];
            assert!(p.decode_rows(0, out, &mut wd));
            #[cfg(target_arch = "x86_64")]
            if dot_runs {
                // the decoder alone: every value of every panel, bit for bit
                let k = inp;
                for panel in 0..out.div_ceil(16) {
                    let g = panel * 16 / group;
                    let idx = &p.indices()[panel * 16 * k..(panel + 1) * 16 * k];
                    let mut got = vec![0u16; 16 * k];
                    // SAFETY: `dot_runs` checked AVX-512F, BF16, BW and VBMI.
                    unsafe { decode::palette_pairs(idx, &p.lut()[g * 256..g * 256 + 256], &mut got) };
                    for kk in 0..k {
                        for r in 0..16 {
                            let v = p.lut()[g * 256 + idx[kk * 16 + r] as usize];
                            assert_eq!(
                                got[(kk / 2) * 32 + 2 * r + kk % 2],
                                half::bf16::from_f32(v).to_bits(),
                                "panel {panel} input {kk} row {r}"
                            );
                        }
                    }
                }
            }
            check_rounded(&pool, &x, m, inp, out, &wd, runs && on_step, |y, acc, split| {
                linear_palettized(&x, m, &p, y, acc, split, Isa::Avx512)
            });
            check_rounded(&pool, &x, m, inp, out, &wd, dot_runs, |y, acc, split| {
                bf16dot::linear_palettized(&x, m, &p, y, acc, split, Isa::Avx512)
            });
        }
        // declined whatever the CPU: 4-bit, row-major, off the tile step, and under the AVX2 cap
        let mut y = vec![f32::NAN; 16];
        let four = palette(16, 32, 16, 4);
        assert!(!takes_palette(&four));
        assert!(!linear_palettized(&[1.0; 32], 1, &four, &mut y, false, Split::Single, Isa::Avx512));
        let rows = palette(16, 32, 16, 8);
        assert!(!takes_palette(&rows), "row-major indices");
        assert!(!bf16dot::takes_palette(&four) && !bf16dot::takes_palette(&rows));
        assert!(!bf16dot::linear_palettized(&[1.0; 32], 1, &four, &mut y, false, Split::Single, Isa::Avx512));
        let off = palette(16, 48, 16, 8).into_order(PaletteOrder::Panels16);
        assert!(!takes_palette(&off), "48 inputs");
        assert!(!linear_palettized(&[1.0; 48], 1, &off, &mut y, false, Split::Single, Isa::Avx512));
        let odd = palette(16, 30, 16, 8).into_order(PaletteOrder::Panels16);
        assert!(!bf16dot::takes_palette(&odd), "30 inputs");
        assert!(!bf16dot::linear_palettized(&[1.0; 30], 1, &odd, &mut y, false, Split::Single, Isa::Avx512));
        let ok = palette(16, 32, 16, 8).into_order(PaletteOrder::Panels16);
        assert!(takes_palette(&ok));
        assert!(!linear_palettized(&[1.0; 32], 1, &ok, &mut y, false, Split::Single, Isa::Avx2));
        assert!(!bf16dot::linear_palettized(&[1.0; 32], 1, &ok, &mut y, false, Split::Single, Isa::Avx2));
        assert!(y.iter().all(|v| v.is_nan()));
    }
}
