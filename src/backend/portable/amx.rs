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

use super::isa::Isa;
use super::linalg::{DstPtr, Split};
use crate::model::lowp::{DenseHalf, HalfOrder, PANEL_ROWS};

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
    if m == 0 || out == 0 {
        return true;
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
                // SAFETY: `has_amx_bf16()` implies AVX-512F and AVX-512 BF16 (checked at run time).
                unsafe { super::bf16dot::round_row(src, dst) };
            }
            let xb: &[u16] = &xb;
            let panels = out.div_ceil(PANEL_ROWS);
            let workers = split.workers();
            // parts are ranges of whole pairs of panels (the kernel's 32 channels)
            let pairs = panels.div_ceil(2);
            let parts = if workers > 1 { pairs.min(workers * TASKS_PER_WORKER) } else { 1 };
            let dst = DstPtr(y.as_mut_ptr());
            let wd = w.data();
            let part = |pi: usize| {
                let (p0, p1) = (2 * (pairs * pi / parts), (2 * (pairs * (pi + 1) / parts)).min(panels));
                // SAFETY: `has_amx_bf16()` checked the CPU and the OS's grant; `xb` holds mp
                // rows of k values; every panel in [p0, p1) holds 16·k values of `wd` (checked
                // by `takes`); this part alone writes columns [16·p0, min(16·p1, out)) of the m
                // rows of `y` (row stride `out`, length ≥ m·out).
                unsafe { tiles::panels(xb, m, k, wd, p0, p1, dst, out, accumulate) };
            };
            if parts > 1 {
                (0..parts).into_par_iter().for_each(part);
            } else {
                part(0);
            }
        });
    }
    true
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

    use super::{DstPtr, TileConfig, STEP, TILE_ROWS};
    use crate::model::lowp::PANEL_ROWS;

    /// Panels `[p0, p1)` of `w` against all `m` rows of `xb`, into columns `16·p0..` of `dst`.
    ///
    /// # Safety
    /// AMX-TILE and AMX-BF16 usable in this process; `xb.len() ≥ m.next_multiple_of(16)·k`,
    /// `k` a positive multiple of 32; `w` holds every panel below `p1` (16·k values each);
    /// `dst` points at a live f32 array of at least `m·ld` values of which this call alone
    /// writes columns `[16·p0, min(16·p1, ld))`.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn panels(
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
        let cfg = TileConfig::full();
        // SAFETY: a valid palette-1 configuration, 64 bytes, read once.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) &cfg as *const TileConfig, options(nostack, readonly)) };
        let blocks = m.div_ceil(TILE_ROWS);
        let panel_len = PANEL_ROWS * k;
        let mut p = p0;
        while p < p1 {
            let np = (p1 - p).min(2);
            // The next pair of panels is hinted once, during the first rows.
            let next = (p + np < p1).then(|| (w[(p + np) * panel_len..].as_ptr(), (p1 - p - np).min(2)));
            let job = Job { xb, k, w, panel_len, p, dst, m, ld, accumulate };
            let mut b = 0;
            while b < blocks {
                let nb = (blocks - b).min(2);
                let pf = if b == 0 { next } else { None };
                // SAFETY: rows [16b, 16(b + nb)) are inside `xb`'s padded rows; panels
                // [p, p + np) are inside `w`; the caller's contract covers the destination.
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
            p += np;
        }
        // SAFETY: returns the tiles to their initial state; no operand.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
        const _: () = assert!(STEP == 32 && TILE_ROWS == PANEL_ROWS);
    }

    /// One worker's operands for a pair of panels from `p`.
    struct Job<'a> {
        xb: &'a [u16],
        k: usize,
        w: &'a [u16],
        panel_len: usize,
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
            let w0 = self.w[self.p * self.panel_len..].as_ptr();
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
        let bf = |v: f32| half::bf16::from_f32(v).to_f32() as f64;
        for &(m, inp, out) in &[(1, 32, 16), (17, 64, 50), (100, 96, 33), (96, 768, 40)] {
            let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.37).sin()).collect();
            let w: Vec<f32> = (0..out * inp).map(|i| (i as f32 * 0.11).cos() * 0.5).collect();
            let Matrix::BF16(h) = Matrix::f32_row_major(out, inp, w.clone()).unwrap().to_half(HalfKind::BF16)
            else {
                panic!("BF16 conversion");
            };
            let h = h.into_order(HalfOrder::Pairs16);
            assert!(takes(&h), "{inp} inputs is a multiple of 32");
            let want: Vec<f64> = (0..m * out)
                .map(|i| (0..inp).map(|j| bf(x[(i / out) * inp + j]) * bf(w[(i % out) * inp + j])).sum())
                .collect();
            let scale: Vec<f64> = (0..m * out)
                .map(|i| {
                    (0..inp).map(|j| (bf(x[(i / out) * inp + j]) * bf(w[(i % out) * inp + j])).abs()).sum()
                })
                .collect();
            for split in [Split::Single, Split::Gemm(2)] {
                let mut y = vec![f32::NAN; m * out];
                let ran = pool.install(|| linear(&x, m, &h, &mut y, false, split, Isa::Avx512));
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
                pool.install(|| linear(&x, m, &h, &mut y, true, split, Isa::Avx512));
                for (i, (&a, &b)) in y.iter().zip(&want).enumerate() {
                    assert!((a as f64 - 2.0 * b).abs() <= 2e-5 * (scale[i] + 1.0), "accumulate [{i}]");
                }
            }
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
}
