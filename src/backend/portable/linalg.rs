//! A bounds-checked, safe front for the `gemm` crate's strided f32 matrix product, and the
//! Linear layer product on top of it.

use gemm::Parallelism;

use crate::model::weights::{Layout, Linear, Matrix};

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

/// A raw destination pointer that may cross threads; only disjoint column blocks are written.
#[derive(Clone, Copy)]
struct DstPtr(*mut f32);
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

/// The product `x Wᵀ` as a `[in, out]` right-hand view of a Linear weight.
pub(crate) fn weight_view(w: &Matrix) -> View<'_> {
    match w {
        Matrix::F32(m) => {
            let (out, inp) = (m.rows(), m.cols());
            match m.layout() {
                // W[o, i] at o·in + i; rhs(i, o) → rs 1, cs in
                Layout::RowMajor => View { data: m.data(), offset: 0, rows: inp, cols: out, rs: 1, cs: inp },
                // W[o, i] at i·out + o; rhs(i, o) → rs out, cs 1
                Layout::ColMajor => View { data: m.data(), offset: 0, rows: inp, cols: out, rs: out, cs: 1 },
            }
        }
    }
}

/// `y[m, out] (=|+=) x[m, in] Wᵀ + b` for `m` rows of `x` (row stride `in`) into `y` (row
/// stride `out`). With `accumulate` the product (and bias) is added to `y` (a residual).
pub(crate) fn linear(x: &[f32], m: usize, lin: &Linear, y: &mut [f32], accumulate: bool, split: Split) {
    let (inp, out) = (lin.in_features(), lin.out_features());
    matmul(
        ViewMut::rows(y, 0, m, out, out),
        View::rows(x, 0, m, inp, inp),
        weight_view(&lin.weight),
        1.0,
        accumulate,
        split,
    );
    if let Some(b) = &lin.bias {
        for row in y[..m * out].chunks_exact_mut(out) {
            for (o, &bb) in row.iter_mut().zip(b) {
                *o += bb;
            }
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
