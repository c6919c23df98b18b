//! A bounds-checked, safe front for the `gemm` crate's strided f32 matrix product, and the
//! Linear layer product on top of it for every weight precision:
//!
//! * FP32 packed at load ([`Layout::Panels16`], wherever the [`Isa`] has panel kernels): the
//!   packed-panel kernel ([`super::f32panel`]) on the weights as stored.
//! * FP32 row- or column-major (the generic ISA, or `Tuning::f32_gemm`): one `gemm` call on the
//!   stored matrix.
//! * BF16 in [`HalfOrder::Pairs16`] on a CPU with AVX-512 BF16: the pair-dot kernel
//!   ([`super::bf16dot`]).
//! * FP16, BF16 or palettized where the [`Isa`] has panel kernels: decoded panel by panel into
//!   the packed-panel kernel's operand order.
//! * Anything else (FP16, BF16, palettized): the weight is decoded tile by tile — a panel of
//!   output rows into an f32 scratch tile that stays in L2 — and each tile is one
//!   single-threaded `gemm` call into its output columns; tiles are spread over the workers.
//!   Compute stays f32.

use std::cell::RefCell;

use gemm::Parallelism;
use rayon::prelude::*;

use super::isa::Isa;
use super::{Bf16Kernel, PaletteKernel};
use crate::model::lowp::HalfOrder;
use crate::model::weights::{DenseF32, Layout, Linear, Matrix};

/// A read-only strided matrix view: element `(r, c)` is `data[offset + r·rs + c·cs]`.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

/// A writable strided matrix view (same indexing as [`View`]).
pub(crate) struct ViewMut<'a> {
    pub data: &'a mut [f32],
    pub offset: usize,
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a> View<'a> {
    /// A dense row-major `rows × cols` block starting at `offset`, row stride `rs`.
    pub fn rows(data: &'a [f32], offset: usize, rows: usize, cols: usize, rs: usize) -> Self {
        Self { data, offset, rows, cols, rs, cs: 1 }
    }
    fn in_bounds(&self) -> bool {
        in_bounds(self.data.len(), self.offset, self.rows, self.cols, self.rs, self.cs)
    }
}

impl<'a> ViewMut<'a> {
    /// A dense row-major `rows × cols` block starting at `offset`, row stride `rs`.
    pub fn rows(data: &'a mut [f32], offset: usize, rows: usize, cols: usize, rs: usize) -> Self {
        Self { data, offset, rows, cols, rs, cs: 1 }
    }
}

fn in_bounds(len: usize, offset: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    if rows == 0 || cols == 0 {
        return true;
    }
    let last = (rows - 1)
        .checked_mul(rs)
        .and_then(|a| (cols - 1).checked_mul(cs).and_then(|b| a.checked_add(b)))
        .and_then(|a| a.checked_add(offset));
    matches!(last, Some(l) if l < len)
}

/// How a product uses the worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Split {
    /// One thread (the caller).
    Single,
    /// `gemm`'s own rayon parallelism over this many threads.
    Gemm(usize),
    /// Split the destination columns into this many contiguous blocks (multiples of 16), one
    /// single-threaded `gemm` per block, run on the current rayon pool.
    Columns(usize),
}

impl Split {
    /// Threads the split runs on (at least 1).
    pub(crate) fn workers(self) -> usize {
        match self {
            Split::Single => 1,
            Split::Gemm(t) | Split::Columns(t) => t.max(1),
        }
    }
}

/// Lengthen `buf` with zeros to at least `n` values (a reused scratch keeps its contents and
/// never shrinks).
pub(crate) fn grow(buf: &mut Vec<f32>, n: usize) {
    if buf.len() < n {
        buf.resize(n, 0.0);
    }
}

/// Hint the cache line at `at` into L2 (a prefetch: never faults, whatever the address).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn hint_l2(at: *const u8) {
    // SAFETY: SSE is part of x86-64; a prefetch does not access memory architecturally.
    unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(at.cast()) };
}

/// A raw destination pointer that may cross threads; only disjoint column blocks are written.
#[derive(Clone, Copy)]
pub(crate) struct DstPtr(pub(crate) *mut f32);
// SAFETY: the pointer is only used by `matmul` for disjoint column blocks of one destination
// that outlives the scope the blocks run in.
unsafe impl Send for DstPtr {}
unsafe impl Sync for DstPtr {}

/// `dst = (accumulate ? dst : 0) + scale · lhs · rhs`.
///
/// Panics if the shapes do not chain or a view reaches outside its slice: both are bugs in the
/// engine (inputs are validated before any product runs), and the checks keep this safe.
pub(crate) fn matmul(
    dst: ViewMut<'_>,
    lhs: View<'_>,
    rhs: View<'_>,
    scale: f32,
    accumulate: bool,
    split: Split,
) {
    assert!(
        lhs.rows == dst.rows && rhs.cols == dst.cols && lhs.cols == rhs.rows,
        "matmul shapes do not chain: [{}x{}]·[{}x{}] -> [{}x{}]",
        lhs.rows,
        lhs.cols,
        rhs.rows,
        rhs.cols,
        dst.rows,
        dst.cols
    );
    assert!(lhs.in_bounds() && rhs.in_bounds(), "matmul operand out of bounds");
    assert!(
        in_bounds(dst.data.len(), dst.offset, dst.rows, dst.cols, dst.rs, dst.cs),
        "matmul destination out of bounds"
    );
    if dst.rows == 0 || dst.cols == 0 {
        return;
    }
    if lhs.cols == 0 {
        if !accumulate {
            for r in 0..dst.rows {
                for c in 0..dst.cols {
                    dst.data[dst.offset + r * dst.rs + c * dst.cs] = 0.0;
                }
            }
        }
        return;
    }
    let (m, k) = (dst.rows, lhs.cols);
    // SAFETY (for the pointer arithmetic): `offset` is in bounds (checked above).
    let dptr = DstPtr(unsafe { dst.data.as_mut_ptr().add(dst.offset) });
    let lptr = unsafe { lhs.data.as_ptr().add(lhs.offset) } as usize;
    let rptr = unsafe { rhs.data.as_ptr().add(rhs.offset) } as usize;
    let (drs, dcs, lrs, lcs, rrs, rcs) = (dst.rs, dst.cs, lhs.rs, lhs.cs, rhs.rs, rhs.cs);
    // Columns [c0, c1) of the product, on the calling thread.
    let block = move |c0: usize, c1: usize, par: Parallelism| {
        let d = dptr;
        // SAFETY: every element read or written lies inside its slice: the views were checked
        // above (last index in bounds, non-negative strides) and [c0, c1) ⊆ [0, cols), so the
        // offsets `c0·cs` stay inside them. `dst` is a unique borrow, so it cannot alias `lhs`
        // or `rhs`; concurrent blocks write disjoint columns. `gemm` reads `dst` only when
        // `accumulate` is set, and the memory is initialised.
        unsafe {
            gemm::gemm(
                m,
                c1 - c0,
                k,
                d.0.add(c0 * dcs),
                dcs as isize,
                drs as isize,
                accumulate,
                lptr as *const f32,
                lcs as isize,
                lrs as isize,
                (rptr as *const f32).add(c0 * rcs),
                rcs as isize,
                rrs as isize,
                1.0,
                scale,
                false,
                false,
                false,
                par,
            );
        }
    };
    let n = dst.cols;
    match split {
        Split::Single => block(0, n, Parallelism::None),
        Split::Gemm(t) if t > 1 => block(0, n, Parallelism::Rayon(t)),
        Split::Gemm(_) => block(0, n, Parallelism::None),
        Split::Columns(parts) => {
            let per = n.div_ceil(parts.max(1)).next_multiple_of(16);
            if parts <= 1 || per >= n {
                return block(0, n, Parallelism::None);
            }
            rayon::scope(|s| {
                let mut c0 = per;
                while c0 < n {
                    let c1 = (c0 + per).min(n);
                    s.spawn(move |_| block(c0, c1, Parallelism::None));
                    c0 = c1;
                }
                block(0, per, Parallelism::None);
            });
        }
    }
}

/// The product `x Wᵀ` as a `[in, out]` right-hand view of an FP32 Linear weight.
pub(crate) fn weight_view(m: &DenseF32) -> View<'_> {
    let (out, inp) = (m.rows(), m.cols());
    match m.layout() {
        // W[o, i] at o·in + i; rhs(i, o) → rs 1, cs in
        Layout::RowMajor => View { data: m.data(), offset: 0, rows: inp, cols: out, rs: 1, cs: inp },
        // W[o, i] at i·out + o; rhs(i, o) → rs out, cs 1
        Layout::ColMajor => View { data: m.data(), offset: 0, rows: inp, cols: out, rs: out, cs: 1 },
        // panels are not one strided view; `linear` never hands them to `gemm`
        Layout::Panels16 => unreachable!("packed FP32 panels go through the panel kernel or tiles"),
    }
}

/// Target size of one decoded f32 weight tile (it stays in L2 next to the activations).
const TILE_BYTES: usize = 192 * 1024;

thread_local! {
    /// Decoded weight tile of the tiled product, reused across calls on each worker.
    static TILE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Output rows per decoded tile for `inp` inputs and `out` outputs: about [`TILE_BYTES`], a
/// multiple of 16, at least 16, and small enough to give each of `workers` two tiles.
fn tile_rows(inp: usize, out: usize, workers: usize) -> usize {
    let by_size = (TILE_BYTES / (4 * inp.max(1))) / 16 * 16;
    let by_balance = out.div_ceil(2 * workers.max(1)).next_multiple_of(16);
    by_size.min(by_balance).max(16)
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ` for any weight precision, decoding `W` tile by tile.
///
/// Panics if a slice is too short (an engine bug; inputs are validated before any product).
fn tiled(x: &[f32], m: usize, w: &Matrix, y: &mut [f32], accumulate: bool, split: Split) {
    let (inp, out) = (w.cols(), w.rows());
    assert!(x.len() >= m * inp && y.len() >= m * out, "linear operand out of bounds");
    if m == 0 || out == 0 {
        return;
    }
    let workers = split.workers();
    let rows = tile_rows(inp, out, workers);
    let tiles = out.div_ceil(rows);
    let dst = DstPtr(y.as_mut_ptr());
    let xp = x.as_ptr() as usize;
    let tile = |t: usize| {
        let (o0, o1) = (t * rows, ((t + 1) * rows).min(out));
        let nb = o1 - o0;
        TILE.with(|buf| {
            let mut buf = buf.borrow_mut();
            grow(&mut buf, nb * inp);
            let tile = &mut buf[..nb * inp];
            // Rows [o0, o1) exist and `tile` has nb·inp values, so this cannot fail.
            let _ = w.decode_rows(o0, o1, tile);
            if inp == 0 {
                tile.fill(0.0);
            }
            let d = dst;
            // SAFETY: `y` has ≥ m·out values (checked above) and this tile writes only its own
            // columns [o0, o1) of the m rows (row stride `out`); `x` has ≥ m·inp values (row
            // stride `inp`); the tile holds nb rows of `inp` values, read as the [inp, nb]
            // right-hand side with row stride 1 and column stride `inp`. `gemm` reads `y` only
            // when `accumulate` is set, and that memory is initialised.
            unsafe {
                if inp == 0 {
                    if !accumulate {
                        for r in 0..m {
                            std::ptr::write_bytes(d.0.add(r * out + o0), 0, nb);
                        }
                    }
                    return;
                }
                gemm::gemm(
                    m,
                    nb,
                    inp,
                    d.0.add(o0),
                    1,
                    out as isize,
                    accumulate,
                    xp as *const f32,
                    1,
                    inp as isize,
                    tile.as_ptr(),
                    inp as isize,
                    1,
                    1.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
        });
    };
    if workers > 1 && tiles > 1 {
        (0..tiles).into_par_iter().for_each(tile);
    } else {
        (0..tiles).for_each(tile);
    }
}

/// How a Linear product runs: the thread split, and whether BF16 weights in
/// [`HalfOrder::Pairs16`] may take the AMX or pair-dot kernels (which round activations to
/// BF16) or must be decoded to f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Thread split.
    pub split: Split,
    /// The BF16 kernel to use where it runs (each falls back to the next: AMX, pair-dot,
    /// decode).
    pub bf16: Bf16Kernel,
    /// The 8-bit palette kernel to use where it runs (BF16: AMX, else pair-dot, else decode to f32).
    pub palette: PaletteKernel,
    /// Multiply row-major FP32 weights with the panel kernel instead of `gemm` (benchmarks only).
    pub f32_panel: bool,
    /// The kernels' instruction set.
    pub isa: Isa,
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ + b` for `m` rows of `x` (row stride `in`) into `y` (row
/// stride `out`). With `accumulate` the product (and bias) is added to `y` (a residual).
pub(crate) fn linear(
    x: &[f32],
    m: usize,
    lin: &Linear,
    y: &mut [f32],
    accumulate: bool,
    plan: impl Into<Plan>,
) {
    let Plan { split, bf16, palette, f32_panel, isa } = plan.into();
    let (inp, out) = (lin.in_features(), lin.out_features());
    match &lin.weight {
        w @ Matrix::F32(d)
            if (f32_panel || d.layout() == Layout::Panels16)
                && super::f32panel::linear(x, m, w, y, accumulate, split, isa) => {}
        Matrix::F32(w) if w.layout() != Layout::Panels16 => matmul(
            ViewMut::rows(y, 0, m, out, out),
            View::rows(x, 0, m, inp, inp),
            weight_view(w),
            1.0,
            accumulate,
            split,
        ),
        Matrix::BF16(h)
            if bf16 == Bf16Kernel::Amx && super::amx::linear(x, m, h, y, accumulate, split, isa) => {}
        Matrix::BF16(h)
            if bf16 != Bf16Kernel::Decode
                && h.order() == HalfOrder::Pairs16
                && super::bf16dot::linear(x, m, h, y, accumulate, split, isa) => {}
        Matrix::Palettized(p)
            if palette == PaletteKernel::Bf16
                && (super::amx::linear_palettized(x, m, p, y, accumulate, split, isa)
                    || super::bf16dot::linear_palettized(x, m, p, y, accumulate, split, isa)) => {}
        w @ (Matrix::F16(_) | Matrix::BF16(_) | Matrix::Palettized(_))
            if super::f32panel::linear(x, m, w, y, accumulate, split, isa) => {}
        w => tiled(x, m, w, y, accumulate, split),
    }
    if let Some(b) = &lin.bias {
        for row in y[..m * out].chunks_exact_mut(out) {
            for (o, &bb) in row.iter_mut().zip(b) {
                *o += bb;
            }
        }
    }
}

/// The tests' products at a split: the engine's own choices under the test process's
/// environment.
#[cfg(test)]
impl From<Split> for Plan {
    fn from(split: Split) -> Self {
        let settings = crate::settings::Settings::of_test_process();
        let isa = Isa::selected(&settings);
        Plan {
            split,
            bf16: Bf16Kernel::selected(isa, &settings),
            palette: PaletteKernel::selected(isa, &settings),
            f32_panel: false,
            isa,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], m: usize, w: &[f32], out: usize, inp: usize) -> Vec<f32> {
        let mut y = vec![0.0f32; m * out];
        for r in 0..m {
            for o in 0..out {
                y[r * out + o] = (0..inp).map(|i| x[r * inp + i] * w[o * inp + i]).sum();
            }
        }
        y
    }

    #[test]
    fn linear_matches_naive_in_both_layouts_and_accumulates() {
        let (m, inp, out) = (5, 7, 3);
        let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.31).sin()).collect();
        let w: Vec<f32> = (0..out * inp).map(|i| (i as f32 * 0.17).cos()).collect();
        let want = naive(&x, m, &w, out, inp);
        for layout in [Layout::RowMajor, Layout::ColMajor] {
            let lin = Linear {
                weight: Matrix::f32_row_major(out, inp, w.clone()).unwrap().into_layout(layout),
                bias: Some(vec![1.0, 2.0, 3.0]),
            };
            let mut y = vec![0.0f32; m * out];
            linear(&x, m, &lin, &mut y, false, Split::Single);
            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                assert!((a - (b + (i % out + 1) as f32)).abs() < 1e-5);
            }
            linear(&x, m, &lin, &mut y, true, Split::Single);
            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                assert!((a - 2.0 * (b + (i % out + 1) as f32)).abs() < 1e-5);
            }
        }
    }

    fn palettized(rows: usize, cols: usize, w: &[f32], bits: u8) -> Matrix {
        use crate::model::palettize::{palettize_matrix, PaletteConfig};
        let m = Matrix::f32_row_major(rows, cols, w.to_vec()).unwrap();
        let cfg = PaletteConfig { group_size: 16, ..PaletteConfig::new(bits) };
        Matrix::Palettized(palettize_matrix(&m, "w", 0, &cfg).unwrap().0)
    }

    /// Every precision against the f32 product of its own dequantized weights (and, for the
    /// BF16 pair-dot kernel, of BF16-rounded activations), over shapes that exercise every
    /// tile remainder; single-threaded and split over two workers; overwrite and accumulate; on
    /// every kernel family this CPU runs (the others are skipped, saying so).
    #[test]
    fn every_precision_matches_its_dequantized_reference() {
        use crate::model::lowp::HalfKind;
        for isa in [Isa::Avx512, Isa::Avx2] {
            if !isa.runs_here() {
                eprintln!("skipping the {} kernels: this CPU does not run them", isa.name());
            }
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let round_bf16 =
            |v: &[f32]| v.iter().map(|&x| half::bf16::from_f32(x).to_f32()).collect::<Vec<f32>>();
        for &(m, inp, out) in &[
            (1, 8, 16),
            (7, 37, 50),
            (13, 64, 120),
            (96, 33, 20),
            (6, 2, 1),
            (5, 801, 40),
            (40, 96, 50),
            (100, 64, 33),
        ] {
            let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.31).sin()).collect();
            let w: Vec<f32> = (0..out * inp).map(|i| (i as f32 * 0.17).cos() * 0.3).collect();
            let bias: Vec<f32> = (0..out).map(|i| i as f32 * 0.01).collect();
            let f32m = Matrix::f32_row_major(out, inp, w.clone()).unwrap();
            let mut variants = vec![
                ("f16", f32m.to_half(HalfKind::F16), false),
                ("bf16 rows", f32m.to_half(HalfKind::BF16), false),
                ("w8", palettized(out, inp, &w, 8), false),
                ("w6", palettized(out, inp, &w, 6), false),
                ("w4", palettized(out, inp, &w, 4), false),
            ];
            if let Matrix::BF16(h) = f32m.to_half(HalfKind::BF16) {
                // rounds x where the ISA has the pair-dot kernel (decided per ISA below)
                variants.push(("bf16 pairs", Matrix::BF16(h.into_order(HalfOrder::Pairs16)), false));
            }
            if let Matrix::F16(h) = f32m.to_half(HalfKind::F16) {
                variants.push(("f16 pairs", Matrix::F16(h.into_order(HalfOrder::Pairs16)), false));
            }
            if let Matrix::Palettized(p) = palettized(out, inp, &w, 8) {
                let p = p.into_order(crate::model::lowp::PaletteOrder::Panels16);
                variants.push(("w8 panels", Matrix::Palettized(p), false));
            }
            // FP32 packed at load (the engine's FP32 path where the ISA has panel kernels)
            variants.push(("f32 packed", f32m.clone().into_layout(Layout::Panels16), false));
            for isa in Isa::all_here() {
                // the panel kernel on row-major FP32 weights (a benchmark variant, kept correct)
                if isa.has_panels() {
                    let want = naive(&x, m, &w, out, inp);
                    let mut y = vec![f32::NAN; m * out];
                    assert!(pool.install(|| super::super::f32panel::linear(
                        &x,
                        m,
                        &f32m,
                        &mut y,
                        false,
                        Split::Gemm(2),
                        isa
                    )));
                    for (a, b) in y.iter().zip(&want) {
                        assert!((a - b).abs() <= 1e-5 * (b.abs() + inp as f32), "f32 panel {m}x{inp}x{out}");
                    }
                }
                for (name, weight, rounds_x) in variants.iter().cloned() {
                    let rounds_x = rounds_x || (name == "bf16 pairs" && isa.has_bf16_dot());
                    let wd = weight.to_row_major_f32().unwrap();
                    let xr = if rounds_x { round_bf16(&x) } else { x.clone() };
                    let want = naive(&xr, m, &wd, out, inp);
                    let scale: Vec<f32> = (0..m * out)
                        .map(|i| {
                            (0..inp)
                                .map(|j| (xr[(i / out) * inp + j] * wd[(i % out) * inp + j]).abs())
                                .sum::<f32>()
                        })
                        .collect();
                    let lin = Linear { weight, bias: Some(bias.clone()) };
                    for split in [Split::Single, Split::Gemm(2)] {
                        let plan = Plan {
                            split,
                            bf16: Bf16Kernel::Amx,
                            palette: PaletteKernel::Decode,
                            f32_panel: false,
                            isa,
                        };
                        let mut y = vec![f32::NAN; m * out];
                        pool.install(|| linear(&x, m, &lin, &mut y, false, plan));
                        for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                            let tol = 1e-5 * (scale[i] + 1.0);
                            assert!(
                                (a - (b + bias[i % out])).abs() <= tol,
                                "{name} {} {m}x{inp}x{out} {split:?} [{i}]: {a} vs {}",
                                isa.name(),
                                b + bias[i % out]
                            );
                        }
                        pool.install(|| linear(&x, m, &lin, &mut y, true, plan));
                        for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                            let tol = 2e-5 * (scale[i] + 1.0);
                            assert!((a - 2.0 * (b + bias[i % out])).abs() <= tol, "{name} accumulate [{i}]");
                        }
                        // BF16 pairs on the pair-dot kernel (AMX not allowed: the same rounding),
                        // and with both disallowed (decoded, f32 activations)
                        if name == "bf16 pairs" {
                            let decoded = naive(&x, m, &wd, out, inp);
                            for (bf16, want, label) in [
                                (Bf16Kernel::Dot, &want, "pair-dot"),
                                (Bf16Kernel::Decode, &decoded, "decoded"),
                            ] {
                                let plan = Plan {
                                    split,
                                    bf16,
                                    palette: PaletteKernel::Decode,
                                    f32_panel: false,
                                    isa,
                                };
                                let mut y = vec![f32::NAN; m * out];
                                pool.install(|| linear(&x, m, &lin, &mut y, false, plan));
                                for (i, (a, b)) in y.iter().zip(want).enumerate() {
                                    let tol = 1e-5 * (scale[i] + 1.0);
                                    assert!(
                                        (a - (b + bias[i % out])).abs() <= tol,
                                        "bf16 pairs {label} [{i}]"
                                    );
                                }
                            }
                        }
                        // w8 panels on the BF16 palette kernels where one takes them (AMX tiles,
                        // else the pair-dot tile; tables and activations rounded to BF16), else
                        // decoded to f32 as above
                        if let (true, Matrix::Palettized(p)) = (name == "w8 panels", &lin.weight) {
                            let amx =
                                isa.has_amx_bf16() && isa.has_lut8() && super::super::amx::takes_palette(p);
                            let dot = isa.has_bf16_dot()
                                && isa.has_lut8()
                                && super::super::bf16dot::takes_palette(p);
                            let want = if amx || dot {
                                naive(&round_bf16(&x), m, &round_bf16(&wd), out, inp)
                            } else {
                                want.clone()
                            };
                            let plan = Plan {
                                split,
                                bf16: Bf16Kernel::Amx,
                                palette: PaletteKernel::Bf16,
                                f32_panel: false,
                                isa,
                            };
                            let mut y = vec![f32::NAN; m * out];
                            pool.install(|| linear(&x, m, &lin, &mut y, false, plan));
                            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                                assert!(
                                    (a - (b + bias[i % out])).abs() <= 1e-5 * (scale[i] + 1.0),
                                    "w8 panels amx={amx} dot={dot} {} {m}x{inp}x{out} {split:?} [{i}]: {a} vs {}",
                                    isa.name(),
                                    b + bias[i % out]
                                );
                            }
                        }
                        // the portable fallback (decode tiles + gemm), whatever the CPU
                        if !rounds_x {
                            let mut y = vec![f32::NAN; m * out];
                            pool.install(|| tiled(&x, m, &lin.weight, &mut y, false, split));
                            for (i, (a, b)) in y.iter().zip(&want).enumerate() {
                                assert!(
                                    (a - b).abs() <= 1e-5 * (scale[i] + 1.0),
                                    "{name} tiled {split:?} [{i}]"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn matmul_rejects_out_of_bounds_views() {
        let a = vec![0.0f32; 4];
        let mut d = vec![0.0f32; 4];
        matmul(
            ViewMut::rows(&mut d, 0, 2, 2, 2),
            View::rows(&a, 1, 2, 2, 2),
            View::rows(&a, 0, 2, 2, 2),
            1.0,
            false,
            Split::Single,
        );
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use crate::model::lowp::HalfKind;

    /// `cargo test --release --lib linalg::timing -- --ignored --nocapture`: one Wqkv-sized
    /// product (96 × 768 → 2304) per precision and path, 2 workers.
    #[test]
    #[ignore]
    fn time_products() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (m, inp, out) = (96, 768, 2304);
        let x: Vec<f32> = (0..m * inp).map(|i| (i as f32 * 0.31).sin()).collect();
        let w: Vec<f32> = (0..out * inp).map(|i| (i as f32 * 0.17).cos() * 0.03).collect();
        let f32m = Matrix::f32_row_major(out, inp, w.clone()).unwrap();
        let mut variants = vec![
            ("f32", f32m.clone()),
            ("f32 packed", f32m.clone().into_layout(Layout::Panels16)),
            ("f16", f32m.to_half(HalfKind::F16)),
            ("bf16 rows", f32m.to_half(HalfKind::BF16)),
        ];
        if let Matrix::BF16(h) = f32m.to_half(HalfKind::BF16) {
            variants.push(("bf16 pairs", Matrix::BF16(h.into_order(HalfOrder::Pairs16))));
        }
        if let Matrix::F16(h) = f32m.to_half(HalfKind::F16) {
            variants.push(("f16 pairs", Matrix::F16(h.into_order(HalfOrder::Pairs16))));
        }
        {
            use crate::model::palettize::{palettize_matrix, PaletteConfig};
            let p = palettize_matrix(&f32m, "w", 0, &PaletteConfig::new(8)).unwrap().0;
            variants.push(("w8", Matrix::Palettized(p.clone())));
            let p = p.into_order(crate::model::lowp::PaletteOrder::Panels16);
            variants.push(("w8 panels", Matrix::Palettized(p)));
        }
        let flop = 2.0 * (m * inp * out) as f64;
        for (name, weight) in variants {
            let lin = Linear { weight, bias: None };
            let mut y = vec![0.0f32; m * out];
            for split in [Split::Single, Split::Gemm(2)] {
                let mut yt = vec![0.0f32; m * out];
                let t = std::time::Instant::now();
                for _ in 0..10 {
                    pool.install(|| tiled(&x, m, &lin.weight, &mut yt, false, split));
                }
                println!("{name:>11} {split:?} tiled gemm: {:.3} ms", t.elapsed().as_secs_f64() * 100.0);
                let mut times: Vec<f64> = (0..25)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        pool.install(|| linear(&x, m, &lin, &mut y, false, split));
                        t.elapsed().as_secs_f64()
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                let med = times[times.len() / 2];
                println!("{name:>11} {split:?}: {:.3} ms, {:.1} GFLOP/s", med * 1e3, flop / med / 1e9);
                let mut times: Vec<f64> = (0..25)
                    .map(|_| {
                        let t = std::time::Instant::now();
                        pool.install(|| {
                            super::super::f32panel::linear(
                                &x,
                                m,
                                &lin.weight,
                                &mut y,
                                false,
                                split,
                                Isa::selected(&crate::settings::Settings::of_test_process()),
                            )
                        });
                        t.elapsed().as_secs_f64()
                    })
                    .collect();
                times.sort_by(f64::total_cmp);
                let med = times[times.len() / 2];
                println!(
                    "{name:>11} {split:?} f32 panel kernel: {:.3} ms, {:.1} GFLOP/s",
                    med * 1e3,
                    flop / med / 1e9
                );
            }
            let mut buf = vec![0.0f32; out * inp];
            let t = std::time::Instant::now();
            for _ in 0..10 {
                lin.weight.decode_rows(0, out, &mut buf);
            }
            println!("{name:>11} decode whole matrix: {:.3} ms", t.elapsed().as_secs_f64() * 100.0);
        }
    }
}
