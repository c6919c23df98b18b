//! Numeric primitives shared by the host tail and the portable engine, in f32 like PyTorch's CPU
//! kernels: a vectorisable erf/exp, exact GELU, LayerNorm and softmax.
//!
//! Every function is branch-free per element (selects, not jumps) so that the slice versions
//! auto-vectorise; the `*_in_place` slice kernels additionally dispatch to an AVX2 build of the
//! same code when the CPU has it (a measured win, see `benches/forward.rs`), and the portable
//! engine's GELU gate and masked softmax to an AVX-512F build where the engine allows it (the
//! same bits; docs/PERFORMANCE.md, "Wider GELU and softmax").

/// Absolute error bound of [`erf`] over all `f32` inputs: measured 9.0e-8 against `libm::erf`
/// on a 1e-5 grid over [-6, 6] (unit test); the fits alone are ≈ 4e-9, the rest is f32 rounding.
pub const ERF_MAX_ABS_ERROR: f32 = 1e-7;

/// `erf(x)/x` on `|x| < 1` as a polynomial in `t = 2x² − 1` (Chebyshev fit, degree 6).
const ERF_SMALL: [f32; 7] = [
    0.965_468_76,
    -0.140_536_1,
    0.019_852_497,
    -0.002_285_419_5,
    0.000_217_513_55,
    -1.766_906_8e-5,
    1.230_605_6e-6,
];

/// `erfc(x)·exp(x²)` on `1 ≤ x ≤ 4` as a polynomial in `t = (2x − 5)/3` (Chebyshev fit, degree 11).
const ERFCX_LARGE: [f32; 12] = [
    0.210_806_35,
    -0.111_521_02,
    0.056_110_95,
    -0.027_005_458,
    0.012_484_123,
    -0.005_568_837_7,
    0.002_425_639,
    -0.001_013_662_5,
    0.000_368_151_1,
    -0.000_147_416_14,
    9.629_12e-5,
    -3.566_418e-5,
];

/// `a·b + c`, fused (one rounding) when `FMA` — only used inside the FMA-enabled builds, where
/// it is one instruction; elsewhere a plain multiply and add.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[inline(always)]
fn horner<const FMA: bool, const N: usize>(c: &[f32; N], t: f32) -> f32 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = madd::<FMA>(acc, t, c[i]);
    }
    acc
}

/// Fast `exp` for f32, branch-free (Cody–Waite reduction, degree-7 polynomial, ≈ 2 ulp).
///
/// Inputs are clamped to `[-87, 88]`, so very negative inputs give ≈ 1.6e-38 instead of 0 and
/// the result never overflows.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp_impl::<false>(x)
}

#[inline(always)]
fn exp_impl<const FMA: bool>(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4; // 355/512, exact in 9 bits so n·LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    const MAGIC: f32 = 12_582_912.0; // 1.5·2^23: adding it rounds to an integer
    let x = if x > 88.0 { 88.0 } else { x };
    let x = if x < -87.0 { -87.0 } else { x };
    let k = madd::<FMA>(x, LOG2E, MAGIC);
    let n = k - MAGIC;
    let r = madd::<FMA>(-n, LN2_LO, madd::<FMA>(-n, LN2_HI, x));
    const C: [f32; 8] = [1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
    let p = horner::<FMA, 8>(&C, r);
    // The low mantissa bits of `k` hold n + 2^22; n ∈ [-126, 127] after the clamp.
    let n_int = (k.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let scale = f32::from_bits(((n_int + 127) as u32) << 23);
    p * scale
}

/// The error function in f32, branch-free and vectorisable; `|erf(x) − erf_exact(x)| ≤`
/// [`ERF_MAX_ABS_ERROR`]. NaN propagates.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    erf_impl::<false>(x)
}

#[inline(always)]
fn erf_impl<const FMA: bool>(x: f32) -> f32 {
    let ax = x.abs();
    let ax = if ax < 4.0 { ax } else { 4.0 };
    let u = ax * ax;
    let small = ax * horner::<FMA, 7>(&ERF_SMALL, madd::<FMA>(u, 2.0, -1.0));
    let g = horner::<FMA, 12>(&ERFCX_LARGE, madd::<FMA>(ax, 2.0 / 3.0, -5.0 / 3.0));
    let large = madd::<FMA>(-exp_impl::<FMA>(-u), g, 1.0);
    let r = if ax < 1.0 { small } else { large };
    let r = r.copysign(x);
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// Exact GELU `x·(1 + erf(x/√2))/2`, evaluated in PyTorch's order `(x·0.5)·(1 + erf(x·√½))`.
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    gelu_impl::<false>(x)
}

#[inline(always)]
fn gelu_impl<const FMA: bool>(x: f32) -> f32 {
    x * 0.5 * (1.0 + erf_impl::<FMA>(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// Tanh-approximated GELU (`approximate="tanh"` in PyTorch); only for ablation tests.
pub fn gelu_tanh(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // sqrt(2/pi)
    0.5 * x * (1.0 + (K * (x + 0.044_715 * x * x * x)).tanh())
}

/// Apply exact GELU to every element.
pub fn gelu_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
        unsafe { gelu_in_place_avx2(xs) };
        return;
    }
    gelu_in_place_generic::<false>(xs);
}

#[inline(always)]
fn gelu_in_place_generic<const FMA: bool>(xs: &mut [f32]) {
    for x in xs.iter_mut() {
        *x = gelu_impl::<FMA>(*x);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_in_place_avx2(xs: &mut [f32]) {
    gelu_in_place_generic::<true>(xs);
}

/// Gated GELU of the ModernBERT MLP: `out[i] = gelu(value[i]) · gate[i]`.
///
/// The three slices must have the same length (extra elements of the longer ones are ignored).
/// With `avx512` (the portable engine passes whether its `LAYA_BENCH_ISA` allows AVX-512) an
/// AVX-512F build runs where the CPU has it: twice the elements per instruction, and the same
/// bits as the AVX2 build, since every element goes through the same fused operations.
pub fn gelu_mul(value: &[f32], gate: &[f32], out: &mut [f32], avx512: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx512 && has_avx512f() {
        // SAFETY: the CPU supports AVX-512F, AVX2 and FMA (checked at run time just above).
        unsafe { gelu_mul_avx512(value, gate, out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
        unsafe { gelu_mul_avx2(value, gate, out) };
        return;
    }
    let _ = avx512;
    gelu_mul_generic::<false>(value, gate, out);
}

#[inline(always)]
fn gelu_mul_generic<const FMA: bool>(value: &[f32], gate: &[f32], out: &mut [f32]) {
    for ((o, &v), &g) in out.iter_mut().zip(value).zip(gate) {
        *o = gelu_impl::<FMA>(v) * g;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gelu_mul_avx2(value: &[f32], gate: &[f32], out: &mut [f32]) {
    gelu_mul_generic::<true>(value, gate, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn gelu_mul_avx512(value: &[f32], gate: &[f32], out: &mut [f32]) {
    gelu_mul_generic::<true>(value, gate, out);
}

/// Softmax over a slice in place: `exp(x − max) · (1 / Σ)`, like PyTorch's CPU kernel.
pub fn softmax_in_place(xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
        unsafe { softmax_in_place_avx2(xs) };
        return;
    }
    softmax_in_place_generic::<false>(xs);
}

/// Below this, `exp(x − max)` counts as 0 in a softmax (`exp(−70) ≈ 4e-31`).
///
/// A normalised probability `exp(t)/sum` with `sum ≤ n` then stays a normal f32 for any row
/// of up to 3·10⁷ keys: no subnormal ever reaches the products that follow. Subnormal operands
/// cost Intel cores a microcode assist (≈ 100 cycles) per operation; the clamp inside [`exp`]
/// alone left every masked key (−1e4) at 1.6e-38, subnormal once divided by the sum, and the
/// `S·V` products of the sliding-window layers ran 10–20× slower on Intel Xeons than on AMD
/// Zen (which handles subnormals at full speed). PyTorch gives masked keys exactly 0 too; the
/// terms dropped between −87 and −70 change a row's output by less than 4e-31 of its scale.
pub const SOFTMAX_CUTOFF: f32 = -70.0;

/// One softmax numerator: `exp(t)` for `t = x − max ≥` [`SOFTMAX_CUTOFF`], else 0.
#[inline(always)]
fn softmax_term<const FMA: bool>(t: f32) -> f32 {
    let e = exp_impl::<FMA>(t);
    if t < SOFTMAX_CUTOFF {
        0.0
    } else {
        e
    }
}

#[inline(always)]
fn softmax_in_place_generic<const FMA: bool>(xs: &mut [f32]) {
    let max = max_of(xs);
    // the terms first (a loop as wide as the build's vectors), then their sum in 8 lanes: the
    // same values added in the same order as one fused loop would, at AVX-512 width too
    for x in xs.iter_mut() {
        *x = softmax_term::<FMA>(*x - max);
    }
    normalize_terms(xs);
}

/// Divide the softmax numerators by their sum (added in 8 lanes, then the remainder, then the
/// lanes), as one multiplication by its inverse.
#[inline(always)]
fn normalize_terms(xs: &mut [f32]) {
    let mut lanes = [0.0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(c) {
            *l += *x;
        }
    }
    let mut sum = 0.0f32;
    for x in chunks.remainder() {
        sum += *x;
    }
    sum += lanes.iter().sum::<f32>();
    let inv = 1.0 / sum;
    for x in xs.iter_mut() {
        *x *= inv;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_in_place_avx2(xs: &mut [f32]) {
    softmax_in_place_generic::<true>(xs);
}

/// Masked softmax of one attention row: scores whose `keep` byte is 0 are replaced by `-1e4`
/// (PyTorch's explicit attention path), then softmax. `avx512` as in [`gelu_mul`]: the same
/// bits from the AVX-512F build, where the CPU has it and the caller allows it.
pub fn masked_softmax_in_place(xs: &mut [f32], keep: &[u8], avx512: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx512 && has_avx512f() {
        // SAFETY: the CPU supports AVX-512F, AVX2 and FMA (checked at run time just above).
        unsafe { masked_softmax_avx512(xs, keep) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
        unsafe { masked_softmax_avx2(xs, keep) };
        return;
    }
    let _ = avx512;
    masked_softmax_generic::<false>(xs, keep);
}

/// A masked score: `x` where `keep` is set, else −1e4.
#[inline(always)]
fn masked(x: f32, k: u8) -> f32 {
    if k != 0 {
        x
    } else {
        -1e4
    }
}

/// [`softmax_in_place_generic`] of the masked scores, the mask applied as the values are read
/// (the same values, in the same order). A separate pass that wrote −1e4 over the masked
/// scores compiled to masked stores (`vmaskmovps`), which AMD Zen cores execute slowly: that
/// pass took a quarter of the softmax's time on Zen 4.
#[inline(always)]
fn masked_softmax_generic<const FMA: bool>(xs: &mut [f32], keep: &[u8]) {
    if keep.len() < xs.len() {
        // scores without a keep byte are kept
        for (x, &k) in xs.iter_mut().zip(keep) {
            *x = masked(*x, k);
        }
        softmax_in_place_generic::<FMA>(xs);
        return;
    }
    let keep = &keep[..xs.len()];
    let mut lanes = [f32::NEG_INFINITY; 8];
    let (mut chunks, mut kc) = (xs.chunks_exact(8), keep.chunks_exact(8));
    for (c, k) in (&mut chunks).zip(&mut kc) {
        for ((l, &x), &k) in lanes.iter_mut().zip(c).zip(k) {
            let x = masked(x, k);
            *l = if x > *l { x } else { *l };
        }
    }
    let rest = chunks.remainder().iter().zip(kc.remainder()).map(|(&x, &k)| masked(x, k));
    let max = fold_max(rest.chain(lanes));
    for (x, &k) in xs.iter_mut().zip(keep) {
        *x = softmax_term::<FMA>(masked(*x, k) - max);
    }
    normalize_terms(xs);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn masked_softmax_avx2(xs: &mut [f32], keep: &[u8]) {
    masked_softmax_generic::<true>(xs, keep);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn masked_softmax_avx512(xs: &mut [f32], keep: &[u8]) {
    masked_softmax_generic::<true>(xs, keep);
}

#[inline(always)]
fn max_of(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = if x > *l { x } else { *l };
        }
    }
    fold_max(chunks.remainder().iter().copied().chain(lanes))
}

/// The largest of `xs` (−∞ for none), taken in order with `>` as [`max_of`]'s lanes are.
#[inline(always)]
fn fold_max(xs: impl Iterator<Item = f32>) -> f32 {
    xs.fold(f32::NEG_INFINITY, |m, x| if x > m { x } else { m })
}

/// LayerNorm of one row: `out = (x − mean)·rstd·weight (+ bias)`, `rstd = 1/sqrt(var + eps)`,
/// biased variance, f32 accumulation in 8 lanes (like PyTorch's vectorised moments).
///
/// `x`, `weight`, `out` (and `bias` when given) must have the same length.
pub fn layer_norm(x: &[f32], weight: &[f32], bias: Option<&[f32]>, eps: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked at run time just above).
        unsafe { layer_norm_avx2(x, weight, bias, eps, out) };
        return;
    }
    layer_norm_generic(x, weight, bias, eps, out);
}

#[inline(always)]
fn lane_sum(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l += f(x);
        }
    }
    let mut s = 0.0f32;
    for &x in chunks.remainder() {
        s += f(x);
    }
    // pairwise fold of the lanes
    let a = (lanes[0] + lanes[4]) + (lanes[2] + lanes[6]);
    let b = (lanes[1] + lanes[5]) + (lanes[3] + lanes[7]);
    (a + b) + s
}

#[inline(always)]
fn layer_norm_generic(x: &[f32], weight: &[f32], bias: Option<&[f32]>, eps: f32, out: &mut [f32]) {
    let n = x.len() as f32;
    let mean = lane_sum(x, |v| v) / n;
    let var = lane_sum(x, |v| (v - mean) * (v - mean)) / n;
    let rstd = 1.0 / (var.max(0.0) + eps).sqrt();
    match bias {
        Some(b) => {
            for (((o, &v), &w), &bb) in out.iter_mut().zip(x).zip(weight).zip(b) {
                *o = (v - mean) * rstd * w + bb;
            }
        }
        None => {
            for ((o, &v), &w) in out.iter_mut().zip(x).zip(weight) {
                *o = (v - mean) * rstd * w;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn layer_norm_avx2(x: &[f32], weight: &[f32], bias: Option<&[f32]>, eps: f32, out: &mut [f32]) {
    layer_norm_generic(x, weight, bias, eps, out);
}

/// Dot product with 8 f32 partial sums (vectorisable).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let mut s = 0.0f32;
    for (&x, &y) in ca.remainder().iter().zip(cb.remainder()) {
        s += x * y;
    }
    let l = (lanes[0] + lanes[4]) + (lanes[2] + lanes[6]) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    l + s
}

/// Whether the AVX2+FMA builds of the kernels can run here (cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Whether the AVX-512F builds of [`gelu_mul`] and [`masked_softmax_in_place`] can run here
/// (with AVX2 and FMA, which every AVX-512F CPU has; cached by std).
#[cfg(target_arch = "x86_64")]
#[inline]
fn has_avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && has_avx2()
}

/// Whether the AVX2+FMA builds of the kernels can run here (never off x86-64).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub fn has_avx2() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> impl Iterator<Item = f32> {
        // dense grid over [-6, 6] plus a few specials
        (-600_000..=600_000).map(|i| i as f32 * 1e-5).chain([
            0.0,
            -0.0,
            1.0,
            -1.0,
            3.99,
            4.0,
            4.01,
            10.0,
            -10.0,
            1e-30,
            f32::MAX,
        ])
    }

    fn worst_erf_error(f: impl Fn(f32) -> f32) -> (f64, f32) {
        let mut worst = 0.0f64;
        let mut at = 0.0f32;
        for x in grid() {
            let e = (f(x) as f64 - libm::erf(x as f64)).abs();
            if e > worst {
                worst = e;
                at = x;
            }
        }
        (worst, at)
    }

    #[test]
    fn erf_error_is_below_documented_bound_on_dense_grid() {
        // Both builds: plain multiply-add (portable) and fused (AVX2+FMA slice kernels).
        for (name, (worst, at)) in
            [("plain", worst_erf_error(erf)), ("fused", worst_erf_error(erf_impl::<true>))]
        {
            eprintln!("erf ({name}) max abs error {worst:e} at {at}");
            assert!(worst <= ERF_MAX_ABS_ERROR as f64, "erf ({name}) error {worst:e} at {at}");
        }
        // The slice path (AVX2+FMA when present) agrees with the scalar path to rounding.
        let xs: Vec<f32> = grid().collect();
        let mut ys = xs.clone();
        gelu_in_place(&mut ys);
        for (x, y) in xs.iter().zip(&ys) {
            let want = gelu(*x);
            assert!((want - y).abs() <= 4e-7 * want.abs().max(1.0), "gelu slice vs scalar at {x}");
        }
        assert!(erf(f32::NAN).is_nan());
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf(0.0), 0.0);
    }

    #[test]
    fn exp_matches_libm_within_a_few_ulp() {
        let mut worst = 0.0f64;
        for i in -870_000..=880_000 {
            let x = i as f32 * 1e-4;
            let exact = (x as f64).exp();
            let rel = ((exp(x) as f64 - exact) / exact).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 4e-7, "exp relative error {worst:e}");
        assert!(exp(-1e4) < 1e-37 && exp(-1e4) >= 0.0);
        assert!(exp(1e4).is_finite());
    }

    #[test]
    fn gelu_matches_f64_reference() {
        for &x in &[-5.0f32, -1.5, -0.3, 0.0, 0.2, 1.0, 2.5, 7.0] {
            let want = 0.5 * x as f64 * (1.0 + libm::erf(x as f64 / 2f64.sqrt()));
            assert!((gelu(x) as f64 - want).abs() < 5e-7, "gelu({x})");
        }
        // gelu(1) = 0.8413447460685429
        assert!((gelu(1.0) - 0.841_344_7).abs() < 2e-7);
        assert!((gelu_tanh(1.0) - 0.841_192).abs() < 1e-5);
    }

    #[test]
    fn layer_norm_normalises_with_and_without_bias() {
        let x = [1.0f32, 2.0, 3.0, 4.0];
        let w = [1.0f32, 1.0, 2.0, 1.0];
        let b = [0.0f32, 0.5, 0.0, 0.0];
        let mut out = [0.0f32; 4];
        layer_norm(&x, &w, None, 1e-5, &mut out);
        // mean 2.5, var 1.25, rstd = 1/sqrt(1.25001)
        let r = 1.0 / (1.25f64 + 1e-5).sqrt();
        let want = [-1.5 * r, -0.5 * r, 2.0 * 0.5 * r, 1.5 * r];
        for (o, w) in out.iter().zip(want) {
            assert!((*o as f64 - w).abs() < 1e-6);
        }
        layer_norm(&x, &w, Some(&b), 1e-5, &mut out);
        assert!((out[1] as f64 - (-0.5 * r + 0.5)).abs() < 1e-6);
        // longer than one lane block
        let x: Vec<f32> = (0..21).map(|i| (i as f32 * 0.37).sin()).collect();
        let ones = vec![1.0f32; 21];
        let mut o = vec![0.0f32; 21];
        layer_norm(&x, &ones, None, 1e-5, &mut o);
        let mean: f32 = o.iter().sum::<f32>() / 21.0;
        let var: f32 = o.iter().map(|v| v * v).sum::<f32>() / 21.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-4);
    }

    #[test]
    fn softmax_and_masked_softmax() {
        let mut x = [1.0f32, 2.0, 3.0];
        softmax_in_place(&mut x);
        let z = 1f64.exp() + 2f64.exp() + 3f64.exp();
        for (i, v) in x.iter().enumerate() {
            assert!((*v as f64 - ((i + 1) as f64).exp() / z).abs() < 1e-7);
        }
        let mut y: Vec<f32> = (0..19).map(|i| i as f32 * 0.1).collect();
        let keep: Vec<u8> = (0..19).map(|i| (i % 3 != 0) as u8).collect();
        masked_softmax_in_place(&mut y, &keep, true);
        let total: f32 = y.iter().sum();
        assert!((total - 1.0).abs() < 1e-6);
        for (v, k) in y.iter().zip(&keep) {
            if *k == 0 {
                assert!(*v < 1e-30);
            }
        }
    }

    /// Every vector build of the engine's GELU gate and masked softmax gives the bits of the
    /// same fused operations done one element at a time (`f32::mul_add` without target
    /// features: an exact fused multiply-add in software), on the widths this CPU runs.
    #[test]
    fn vector_builds_give_the_bits_of_the_scalar_fused_code() {
        let n = 1152 + 5; // a partial vector at the end
        let value: Vec<f32> = (0..n).map(|i| ((i * 7919 % 2001) as f32 - 1000.0) * 0.0061).collect();
        let gate: Vec<f32> = (0..n).map(|i| ((i * 31 % 101) as f32 - 50.0) * 0.02).collect();
        let mut want = vec![0.0f32; n];
        gelu_mul_generic::<true>(&value, &gate, &mut want);
        let rows = 7;
        let len = 96 + 3;
        let scores: Vec<f32> = (0..rows * len).map(|i| ((i * 613 % 997) as f32 - 498.0) * 0.05).collect();
        let keep: Vec<u8> =
            (0..rows * len).map(|i| ((i / len) as i64 - (i % len) as i64).abs().le(&64) as u8).collect();
        let mut want_sm = scores.clone();
        for (r, k) in want_sm.chunks_exact_mut(len).zip(keep.chunks_exact(len)) {
            masked_softmax_generic::<true>(r, k);
        }
        // the comparison tells fused from unfused arithmetic: the same code without FMA differs
        let mut unfused = vec![0.0f32; n];
        gelu_mul_generic::<false>(&value, &gate, &mut unfused);
        assert!(unfused.iter().zip(&want).any(|(u, w)| u.to_bits() != w.to_bits()));
        for avx512 in [false, true] {
            if !has_avx2() {
                break; // only the scalar, unfused build runs here
            }
            let mut got = vec![0.0f32; n];
            gelu_mul(&value, &gate, &mut got, avx512);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.to_bits(), w.to_bits(), "gelu_mul avx512={avx512} element {i}: {g} vs {w}");
            }
            let mut sm = scores.clone();
            for (r, k) in sm.chunks_exact_mut(len).zip(keep.chunks_exact(len)) {
                masked_softmax_in_place(r, k, avx512);
            }
            for (i, (g, w)) in sm.iter().zip(&want_sm).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "masked softmax avx512={avx512} element {i}: {g} vs {w}"
                );
            }
        }
    }

    /// The mask applied while reading gives the bits of writing −1e4 over the masked scores
    /// and then taking the softmax; a mask shorter than the row keeps the scores past its end.
    #[test]
    fn masked_softmax_reads_the_mask_like_a_pass_before_it() {
        for len in [1usize, 7, 8, 13, 96, 99] {
            let row: Vec<f32> = (0..len).map(|i| ((i * 613 % 997) as f32 - 498.0) * 0.05).collect();
            for (m, keep) in [
                (0, (0..len).map(|i| (i % 3 != 1) as u8).collect::<Vec<u8>>()),
                (1, vec![0u8; len]),
                (2, (0..len.saturating_sub(2)).map(|i| (i % 2) as u8).collect()),
            ] {
                let mut want = row.clone();
                for (x, &k) in want.iter_mut().zip(&keep) {
                    if k == 0 {
                        *x = -1e4;
                    }
                }
                softmax_in_place_generic::<true>(&mut want);
                let mut got = row.clone();
                masked_softmax_generic::<true>(&mut got, &keep);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                assert_eq!(bits(&got), bits(&want), "{len} scores, mask {m}");
            }
        }
    }

    #[test]
    fn softmax_never_leaves_a_subnormal() {
        // 96 keys, the last 31 masked (a sliding-window row); the kept scores spread over 80
        // units so some fall between the cut-off and exp's clamp. Before the cut-off a masked
        // key came out as exp(-87)/sum ≈ 1.6e-38 / 1.4 ≈ 1.2e-38 after the division: subnormal.
        let mut row: Vec<f32> = (0..96).map(|i| -(i as f32) * 1.25).collect();
        let keep: Vec<u8> = (0..96).map(|i| (i < 65) as u8).collect();
        row[1] = 0.0; // two maxima: sum ≈ 2, so every term is divided by ≈ 2
        masked_softmax_in_place(&mut row, &keep, true);
        for (i, v) in row.iter().enumerate() {
            assert!(*v == 0.0 || v.is_normal(), "key {i}: {v:e} is subnormal");
        }
        // masked keys are exactly 0, as PyTorch's exp(-1e4) is
        assert!(row[65..].iter().all(|&v| v == 0.0));
        // t = -62.5 (key 50) is kept: exp(-62.5)/sum, sum = 1 + 1 + e^-1.25 + …
        let sum: f64 = 2.0 + (2..65).map(|i| (-(i as f64) * 1.25).exp()).sum::<f64>();
        let want = (-62.5f64).exp() / sum;
        assert!(((row[50] as f64) - want).abs() < 1e-6 * want, "{:e} vs {want:e}", row[50]);
        // t = -71.25 (key 57) is below the cut-off: dropped
        assert_eq!(row[57], 0.0);
        let total: f64 = row.iter().map(|&v| v as f64).sum();
        assert!((total - 1.0).abs() < 1e-6);
    }

    #[test]
    fn dot_handles_remainders() {
        let a: Vec<f32> = (0..13).map(|i| i as f32).collect();
        let b = vec![2.0f32; 13];
        assert_eq!(dot(&a, &b), 156.0);
    }
}
