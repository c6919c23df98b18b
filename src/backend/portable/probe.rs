//! The register-resident multiply-add loops behind `bounds --measure`'s peaks, and the probe
//! that picks where the engine's default BF16 and 8-bit palette products run.
//!
//! `vdpbf16ps` does not run at the same rate on every CPU that has it. Per instruction it does
//! twice the multiply-adds of an FP32 FMA, so where it issues as often (Zen 4: 463 against
//! 230 GFLOP/s on two threads) the pair-dot kernel moves the BF16 arm well ahead of FP32. On an
//! Intel Xeon without AMX (family 6 model 207, 2026-12-05) it issued a quarter as often as the
//! FMA: 86 against 176 GFLOP/s on one thread, 0.49× per FLOP. There the pair-dot BF16 forward took 1.84×
//! the FP32 forward's time, and the same weights decoded into FP32 panels took 1.10×.
//!
//! No CPU feature flag tells these apart, so the engine measures. The first engine in a process
//! that could use the pair-dot (AVX-512 BF16, no usable AMX) runs both loops on the calling
//! thread: about 1 ms each, alternating, best of five, about 12 ms in all. It keeps the
//! pair-dot only where that loop's FLOP rate is at least the FMA loop's ([`dot_pays`]). The
//! result is kept for the process, and engines built later reuse it.

use std::sync::OnceLock;
use std::time::Instant;

/// The AMX-BF16 peak loop `bounds --measure` times beside these (kept with the tile code).
#[cfg(target_arch = "x86_64")]
pub(crate) use super::amx::{peak_loop as amx_peak_loop, PEAK_FLOP_PER_ITER as AMX_FLOP_PER_ITER};

/// FLOP of one [`fma256_loop`] iteration: 12 chains × 8 lanes × 2.
#[cfg(target_arch = "x86_64")]
pub(crate) const FMA256_FLOP_PER_ITER: f64 = 192.0;
/// FLOP of one [`fma512_loop`] iteration: 12 chains × 16 lanes × 2.
#[cfg(target_arch = "x86_64")]
pub(crate) const FMA512_FLOP_PER_ITER: f64 = 384.0;
/// FLOP of one [`dot_loop`] iteration: 12 chains × 16 lanes × 2 pairs × 2.
#[cfg(target_arch = "x86_64")]
pub(crate) const DOT_FLOP_PER_ITER: f64 = 768.0;

/// The smallest ratio of the pair-dot loop's FLOP rate to the FMA loop's at which the default
/// BF16 products stay on the pair-dot kernel: 1, "at least as fast per FLOP". The two CPUs
/// measured so far sit far on either side (2.0 on Zen 4, 0.49 on the Intel Xeon above). On the
/// Xeon the forward times put the break-even near 0.85: the pair-dot kernel reached 86 % of its
/// loop's rate and the FP32 panels 79 % of theirs, with about 10 % spent decoding.
pub const DOT_MIN_RATIO: f64 = 1.0;

/// What the probe measured on one thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DotProbe {
    /// The `vdpbf16ps` loop, GFLOP/s (a pair multiply-add counts 4).
    pub dot_gflops: f64,
    /// The AVX-512F FMA loop, GFLOP/s (a multiply-add counts 2).
    pub fma_gflops: f64,
}

impl DotProbe {
    /// The pair-dot loop's FLOP rate over the FMA loop's.
    pub fn ratio(&self) -> f64 {
        self.dot_gflops / self.fma_gflops
    }

    /// Whether the default BF16 products take the pair-dot kernel ([`dot_pays`]).
    pub fn dot_pays(&self) -> bool {
        dot_pays(self.dot_gflops, self.fma_gflops)
    }

    /// One line for an arm's notes and `doctor`.
    pub fn describe(&self) -> String {
        format!(
            "load-time probe, one thread: vdpbf16ps {:.1} GFLOP/s, avx512f FMA {:.1} GFLOP/s ({:.2}×); {}",
            self.dot_gflops,
            self.fma_gflops,
            self.ratio(),
            if self.dot_pays() {
                "BF16 and 8-bit palette products take the avx512_bf16 pair-dot (activations rounded to BF16)"
            } else {
                "the pair-dot is slower per FLOP than the FMA here, so BF16 and 8-bit palette weights are \
                 decoded to FP32 panels (activations stay FP32)"
            }
        )
    }
}

/// Whether a pair-dot loop at `dot_gflops` earns the BF16 products over decoding to FP32 panels
/// for an FMA loop at `fma_gflops`: its rate is at least [`DOT_MIN_RATIO`] times the FMA's.
/// False when either rate is not a positive finite number.
pub fn dot_pays(dot_gflops: f64, fma_gflops: f64) -> bool {
    let ok = |g: f64| g.is_finite() && g > 0.0;
    ok(dot_gflops) && ok(fma_gflops) && dot_gflops >= DOT_MIN_RATIO * fma_gflops
}

/// The probe's result for this process: measured once, by the first caller, where the AVX-512
/// BF16 pair-dot runs and AMX does not (`None` elsewhere: nothing to choose).
pub fn bf16_dot_probe() -> Option<DotProbe> {
    static PROBE: OnceLock<Option<DotProbe>> = OnceLock::new();
    *PROBE.get_or_init(|| {
        let isa = super::Isa::Avx512;
        if !isa.has_bf16_dot() || isa.has_amx_bf16() {
            return None;
        }
        measure_dot()
    })
}

#[cfg(target_arch = "x86_64")]
fn measure_dot() -> Option<DotProbe> {
    // SAFETY: only called where `has_bf16_dot()` holds, which implies AVX-512F and AVX-512 BF16.
    let dot = |n: u64| unsafe { dot_loop(n) };
    // SAFETY: as above (AVX-512F).
    let fma = |n: u64| unsafe { fma512_loop(n) };
    let (n_dot, n_fma) = (iters_for(dot, 1e-3, 2.5e-4), iters_for(fma, 1e-3, 2.5e-4));
    let (mut best_dot, mut best_fma) = (0.0f64, 0.0f64);
    for _ in 0..5 {
        best_dot = best_dot.max(gflops(dot, n_dot, DOT_FLOP_PER_ITER));
        best_fma = best_fma.max(gflops(fma, n_fma, FMA512_FLOP_PER_ITER));
    }
    Some(DotProbe { dot_gflops: best_dot, fma_gflops: best_fma })
}

#[cfg(not(target_arch = "x86_64"))]
fn measure_dot() -> Option<DotProbe> {
    None
}

/// Iterations of `f` that take about `seconds` on this thread: from 1,000 iterations up, four
/// times more until one run takes over `settle` seconds, then scaled (`bounds --measure` and
/// its peak probes use it too).
pub(crate) fn iters_for(f: impl Fn(u64) -> f32, seconds: f64, settle: f64) -> u64 {
    let mut n = 1_000u64;
    loop {
        let t = Instant::now();
        std::hint::black_box(f(n));
        let s = t.elapsed().as_secs_f64();
        if s > settle || n > 1 << 34 {
            return ((n as f64 * seconds / s.max(1e-9)) as u64).max(1);
        }
        n *= 4;
    }
}

/// GFLOP/s of one timed run of `f` over `n` iterations of `flop_per_iter`.
#[cfg(target_arch = "x86_64")]
fn gflops(f: impl Fn(u64) -> f32, n: u64, flop_per_iter: f64) -> f64 {
    let t = Instant::now();
    std::hint::black_box(f(n));
    flop_per_iter * n as f64 / t.elapsed().as_secs_f64().max(1e-12) / 1e9
}

/// Twelve independent 8-wide FMA chains, `iters` times. Returns their sum so the loop is kept.
///
/// # Safety
/// AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn fma256_loop(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_set1_ps(1.0); 12];
    let a = _mm256_set1_ps(std::hint::black_box(0.999_999));
    let b = _mm256_set1_ps(std::hint::black_box(1e-7));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, a, b);
        }
    }
    let mut s = _mm256_setzero_ps();
    for x in acc {
        s = _mm256_add_ps(s, x);
    }
    let mut out = [0.0f32; 8];
    // SAFETY: an 8-value store into an 8-value array.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), s) };
    out.iter().sum()
}

/// Twelve independent 16-wide FMA chains, `iters` times.
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn fma512_loop(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(1.0); 12];
    let a = _mm512_set1_ps(std::hint::black_box(0.999_999));
    let b = _mm512_set1_ps(std::hint::black_box(1e-7));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
}

/// Twelve independent 16-lane `vdpbf16ps` chains (two multiply-adds per lane), `iters` times.
///
/// # Safety
/// AVX-512F and AVX-512 BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
pub(crate) unsafe fn dot_loop(iters: u64) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(1.0); 12];
    let v = _mm512_set1_ps(std::hint::black_box(1e-3));
    let a = _mm512_cvtne2ps_pbh(v, v);
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = _mm512_dpbf16_ps(*x, a, a);
        }
    }
    acc.iter().map(|&x| _mm512_reduce_add_ps(x)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_dot_is_kept_only_where_it_is_at_least_as_fast_per_flop() {
        // Zen 4, two threads (docs/PERFORMANCE.md): dot 463.2, FMA 229.8 → 2.02×
        assert!(dot_pays(463.2, 229.8));
        // the Intel Xeon family 6 model 207, one thread: 85.9 against 176.1 → 0.49×
        assert!(!dot_pays(85.9, 176.1));
        // equal rates keep it; a hair below does not
        assert!(dot_pays(100.0, 100.0));
        assert!(!dot_pays(99.9, 100.0));
        // nothing measured is never a reason to pick either
        for (d, f) in [(f64::NAN, 1.0), (1.0, f64::NAN), (0.0, 0.0), (5.0, 0.0), (f64::INFINITY, 1.0)] {
            assert!(!dot_pays(d, f), "{d} {f}");
        }
        let p = DotProbe { dot_gflops: 85.9, fma_gflops: 176.1 };
        assert!((p.ratio() - 0.4878).abs() < 1e-4);
        let text = p.describe();
        assert!(text.contains("vdpbf16ps 85.9 GFLOP/s, avx512f FMA 176.1 GFLOP/s (0.49×)"), "{text}");
        assert!(text.contains("decoded to FP32 panels"), "{text}");
        assert!(DotProbe { dot_gflops: 463.2, fma_gflops: 229.8 }
            .describe()
            .contains("take the avx512_bf16 pair-dot"));
    }

    #[test]
    fn the_probe_runs_only_where_there_is_a_choice_and_measures_both_loops() {
        let isa = super::super::Isa::Avx512;
        let probe = bf16_dot_probe();
        assert_eq!(probe.is_some(), isa.has_bf16_dot() && !isa.has_amx_bf16());
        if let Some(p) = probe {
            assert!(p.dot_gflops > 0.0 && p.fma_gflops > 0.0, "{p:?}");
            eprintln!("{}", p.describe());
        }
        // the same value for the rest of the process
        assert_eq!(bf16_dot_probe(), probe);
    }
}
