//! `bounds --measure`: this machine's FMA peak per kernel family the portable engine can use (one
//! thread and all threads) and its memory bandwidth (a STREAM-style triad), in a few seconds,
//! and the floors each portable precision arm has on them.
//!
//! Peak: twelve independent FMA chains per thread (enough to cover the FMA latency on two
//! pipes), register-resident, so the loop runs at the core's FMA issue rate; the best of three
//! repetitions. BF16: the same with `vdpbf16ps` (two multiply-adds per f32 lane), and where the
//! engine may use AMX, six independent `tdpbf16ps` tile products per iteration. Bandwidth:
//! `a[i] = b[i] + s·c[i]` over three arrays of [`TRIAD_FLOATS`] f32 each, split over the threads,
//! counted as 3 × 4 bytes per element (no write-allocate traffic), the best of five passes.

use std::time::Instant;

use serde::Serialize;

use super::{body_weight_bytes, compute_floor_ms, flops_per_decision, BoundsError};
#[cfg(target_arch = "x86_64")]
use crate::backend::portable::probe;
use crate::backend::portable::{Bf16Kernel, Isa, PaletteKernel};
use crate::laya::config::{AgentConfig, EncoderConfig};
use crate::model::{ComputeType, Precision};
use crate::report::Render;
use crate::settings::Settings;
use crate::stats::steal::{self, StealTicks, StealWatch};

/// f32 elements per triad array (64 MiB each: far beyond any last-level cache here).
pub const TRIAD_FLOATS: usize = 16 << 20;

/// One measured arithmetic peak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peak {
    /// The instruction sequence: `avx512f fma`, `avx2 fma`, `avx512_bf16 dot`, `amx_bf16 tiles`,
    /// `scalar fma`.
    pub kernel: String,
    /// The arithmetic it stands for.
    pub compute: ComputeType,
    /// Threads running it at once.
    pub threads: usize,
    /// GFLOP/s over all threads (a multiply-add counts 2).
    pub gflops: f64,
}

/// What `bounds --measure` measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    /// Every peak, per kernel, one thread and all threads.
    pub peaks: Vec<Peak>,
    /// Triad bandwidth in GB/s (10⁹ bytes) over all threads.
    pub triad_gbs: f64,
    /// Threads of the all-thread figures.
    pub threads: usize,
    /// The kernel family the portable engine uses here (`LAYA_BENCH_ISA` applied).
    pub engine_isa: String,
    /// The engine's FP32 product, as its `device` names it.
    pub engine_f32_kernel: String,
    /// Where the engine's BF16 and 8-bit palette products run here, and why (AMX, the
    /// pair-dot, or decoded to FP32; the load-time probe's rates or `LAYA_BENCH_BF16` when they
    /// decided it); empty where the CPU runs no BF16 kernel.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine_bf16_kernel: String,
    /// Seconds the measurement took.
    pub seconds: f64,
    /// CPU time the hypervisor gave to other guests while measuring (every CPU, `USER_HZ`
    /// ticks); `None` where the OS keeps no such counter. A peak measured under steal is low
    /// by about that share, and so is every "% of peak" computed against it.
    pub host_steal: Option<StealTicks>,
}

impl Measured {
    /// The all-thread peak of one kernel.
    pub fn peak(&self, kernel: &str) -> Option<f64> {
        self.peaks.iter().filter(|p| p.kernel == kernel && p.threads == self.threads).map(|p| p.gflops).next()
    }

    /// The all-thread peak a portable arm of `precision` computes at with the engine's kernels:
    /// the AMX tile rate for BF16 and 8-bit palettes where the engine uses AMX (palettes need
    /// AVX-512 VBMI too), else the BF16 dot rate where they use `vdpbf16ps`, else the FP32 FMA
    /// rate of the engine's ISA (FP16 and other palettized weights are widened to FP32). The
    /// products are the ones the engine picks under `settings`.
    pub fn arm_peak(&self, precision: Precision, settings: &Settings) -> Option<(String, f64)> {
        let isa = Isa::parse(&self.engine_isa).unwrap_or(Isa::Generic);
        let caps = Caps { amx: isa.has_amx_bf16(), dot: isa.has_bf16_dot(), lut8: isa.has_lut8() };
        let (bf16, palette) = (Bf16Kernel::selected(isa, settings), PaletteKernel::selected(isa, settings));
        let k = arm_kernel(precision, fma_kernel(isa), caps, bf16, palette);
        // with AMX but no AMX peak listed, the tile products are held to the BF16 dot rate
        let k = if k == AMX_BF16 && self.peak(k).is_none() { BF16_DOT } else { k };
        self.peak(k).map(|g| (k.to_string(), g))
    }
}

/// Which BF16 kernels run on the engine's instruction set here.
#[derive(Debug, Clone, Copy)]
struct Caps {
    /// AMX-BF16 tiles ([`Isa::has_amx_bf16`]).
    amx: bool,
    /// The `vdpbf16ps` pair-dot ([`Isa::has_bf16_dot`]).
    dot: bool,
    /// The 8-bit palette decoder of the BF16 palette product ([`Isa::has_lut8`]).
    lut8: bool,
}

/// The peak loop a portable arm of `precision` computes at, given the engine's BF16 and palette
/// products and what runs here: the AMX tile rate where BF16 (or 8-bit palettes) run on AMX,
/// the BF16 dot rate where they run on `vdpbf16ps`, else the FP32 FMA loop `fma` (FP16, the
/// other palettes, and BF16 or 8-bit palettes decoded to FP32 panels).
fn arm_kernel(
    precision: Precision,
    fma: &'static str,
    caps: Caps,
    bf16: Bf16Kernel,
    palette: PaletteKernel,
) -> &'static str {
    let (amx, dot) = match precision {
        Precision::Bf16 => (bf16 == Bf16Kernel::Amx && caps.amx, bf16 != Bf16Kernel::Decode && caps.dot),
        Precision::W8 => {
            let on = palette == PaletteKernel::Bf16 && caps.lut8;
            (on && caps.amx, on && caps.dot)
        }
        _ => (false, false),
    };
    if amx {
        AMX_BF16
    } else if dot {
        BF16_DOT
    } else {
        fma
    }
}

const BF16_DOT: &str = "avx512_bf16 dot";
const AMX_BF16: &str = "amx_bf16 tiles";

/// The name of the FP32 FMA peak loop of an ISA family, as in [`Peak::kernel`].
pub fn fma_kernel(isa: Isa) -> &'static str {
    match isa {
        Isa::Avx512 => "avx512f fma",
        Isa::Avx2 => "avx2 fma",
        Isa::Generic => "scalar fma",
    }
}

/// `bounds --measure --json`: the measurement and each portable arm's floors on it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeasureReport<'a> {
    /// This machine's peaks and bandwidth.
    pub measured: &'a Measured,
    /// Each portable arm's floors on them.
    pub arm_floors: &'a [ArmFloor],
    /// The model the floors are for, as given (not in the JSON).
    #[serde(skip)]
    pub model: &'a str,
    /// The row length the floors are for (not in the JSON).
    #[serde(skip)]
    pub length: usize,
}

impl Render for MeasureReport<'_> {
    /// The measurement as text, with each arm's floors.
    fn terminal(&self) -> String {
        render(self.measured, self.model, self.length, self.arm_floors)
    }
}

/// One portable arm's floors on the measured machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmFloor {
    /// `portable:<precision>`.
    pub arm: String,
    /// The peak it is held to.
    pub kernel: String,
    /// That peak in GFLOP/s.
    pub peak_gflops: f64,
    /// FLOP / peak.
    pub compute_ms: f64,
    /// Weight bytes / triad bandwidth.
    pub bandwidth_ms: f64,
    /// The larger of the two.
    pub floor_ms: f64,
}

/// Floors of the portable arms f32, f16, bf16 and w8 for one decision of this shape at `length`,
/// on the kernels the engine picks under `settings`.
pub fn arm_floors(
    m: &Measured,
    enc: &EncoderConfig,
    agent: &AgentConfig,
    length: usize,
    marker_slots: usize,
    settings: &Settings,
) -> Result<Vec<ArmFloor>, BoundsError> {
    let flop = flops_per_decision(enc, agent, length, marker_slots)?.published_flop();
    let mut out = Vec::new();
    for p in [Precision::F32, Precision::F16, Precision::Bf16, Precision::W8] {
        let Some((kernel, peak)) = m.arm_peak(p, settings) else { continue };
        let bytes = body_weight_bytes(enc, agent, p)?.bytes;
        let compute_ms = compute_floor_ms(flop, peak / 1e3);
        let bandwidth_ms = bytes as f64 / (m.triad_gbs * 1e9) * 1e3;
        out.push(ArmFloor {
            arm: format!("portable:{}", p.name()),
            kernel,
            peak_gflops: peak,
            compute_ms,
            bandwidth_ms,
            floor_ms: compute_ms.max(bandwidth_ms),
        });
    }
    Ok(out)
}

/// Measure the peaks and the triad with `threads` threads (0 = all cores); the engine's
/// choices are the ones it makes under `settings`.
pub fn measure(threads: usize, settings: &Settings) -> Measured {
    let steal = StealWatch::start();
    let t0 = Instant::now();
    let threads =
        if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
    let mut kernels: Vec<(&'static str, ComputeType, Kernel)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if Isa::Avx512.runs_here() {
            kernels.push(("avx512f fma", ComputeType::F32, Kernel::Avx512));
        }
        if Isa::Avx512.has_amx_bf16() {
            kernels.push((AMX_BF16, ComputeType::Bf16, Kernel::Amx));
        }
        if Isa::Avx512.has_bf16_dot() {
            kernels.push((BF16_DOT, ComputeType::Bf16, Kernel::Bf16Dot));
        }
        if Isa::Avx2.runs_here() {
            kernels.push(("avx2 fma", ComputeType::F32, Kernel::Avx2));
        }
    }
    if kernels.is_empty() {
        kernels.push(("scalar fma", ComputeType::F32, Kernel::Scalar));
    }
    let mut peaks = Vec::new();
    for (name, compute, k) in kernels {
        let counts = if threads == 1 { vec![1] } else { vec![1, threads] };
        for t in counts {
            peaks.push(Peak { kernel: name.into(), compute, threads: t, gflops: peak_gflops(k, t) });
        }
    }
    let isa = Isa::selected(settings);
    let triad_gbs = triad_gbs(threads);
    Measured {
        peaks,
        triad_gbs,
        threads,
        engine_isa: isa.name().into(),
        engine_f32_kernel: isa.f32_kernel(),
        engine_bf16_kernel: bf16_kernel(isa, settings),
        seconds: t0.elapsed().as_secs_f64(),
        host_steal: steal.stop(),
    }
}

/// Where the engine's BF16 and palette products run on `isa`, and what decided it; empty
/// where no BF16 kernel runs (everything is FP32 there).
fn bf16_kernel(isa: Isa, settings: &Settings) -> String {
    if !isa.has_bf16_dot() {
        return String::new();
    }
    let place = match Bf16Kernel::selected(isa, settings) {
        Bf16Kernel::Amx if isa.has_amx_bf16() => "amx-bf16 tiles",
        Bf16Kernel::Amx | Bf16Kernel::Dot => "avx512_bf16 pair-dot",
        Bf16Kernel::Decode => "decoded to f32 panels",
    };
    let why = crate::backend::portable::bf16_notes(isa, settings).join("; ");
    // the probe's line and the variable's note each name the product already
    if why.is_empty() {
        place.to_string()
    } else {
        why
    }
}

/// The measurement as text, with each arm's floors (`source`: the model the floors are for).
pub fn render(m: &Measured, source: &str, length: usize, floors: &[ArmFloor]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "measured on this machine in {:.1} s ({} threads for the all-thread figures)",
        m.seconds, m.threads
    );
    let _ = writeln!(o, "  portable engine kernels: {} (f32: {})", m.engine_isa, m.engine_f32_kernel);
    if !m.engine_bf16_kernel.is_empty() {
        let _ = writeln!(o, "  bf16 and w8 products: {}", m.engine_bf16_kernel);
    }
    for p in &m.peaks {
        let _ = writeln!(
            o,
            "  peak {:<16} {} thread{} {:>8.1} GFLOP/s ({})",
            p.kernel,
            p.threads,
            if p.threads == 1 { " " } else { "s" },
            p.gflops,
            p.compute
        );
    }
    let _ = writeln!(
        o,
        "  triad bandwidth {:.1} GB/s ({} threads, 3 x {} MiB arrays)",
        m.triad_gbs,
        m.threads,
        (TRIAD_FLOATS * 4) >> 20
    );
    let _ = writeln!(o, "  while measuring: {}", steal::describe(m.host_steal));
    if let Some(w) = steal::warning("this measurement", m.host_steal) {
        let _ = writeln!(o, "  WARNING: {w}");
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "floors per portable arm, {source} at L {length}: t >= max(FLOP / peak, weight bytes / triad)"
    );
    let _ = writeln!(
        o,
        "  {:<16} {:<16} {:>9} {:>10} {:>12} {:>9}",
        "arm", "peak kernel", "GFLOP/s", "compute ms", "bandwidth ms", "floor ms"
    );
    for f in floors {
        let _ = writeln!(
            o,
            "  {:<16} {:<16} {:>9.1} {:>10.2} {:>12.2} {:>9.2}",
            f.arm, f.kernel, f.peak_gflops, f.compute_ms, f.bandwidth_ms, f.floor_ms
        );
    }
    let _ = writeln!(o, "  an arm's distance from its floor: floor ms / its measured P50 (speed, or cargo bench --bench forward)");
    o
}

#[derive(Debug, Clone, Copy)]
enum Kernel {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Bf16Dot,
    #[cfg(target_arch = "x86_64")]
    Amx,
}

/// FLOP of one loop iteration and the loop itself (returns a value so it is not removed).
fn run_kernel(k: Kernel, iters: u64) -> (f64, f32) {
    match k {
        Kernel::Scalar => (24.0, scalar_chains(iters)),
        // SAFETY (x86 arms): each kernel is only listed when its features were detected.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => (probe::FMA256_FLOP_PER_ITER, unsafe { probe::fma256_loop(iters) }),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => (probe::FMA512_FLOP_PER_ITER, unsafe { probe::fma512_loop(iters) }),
        #[cfg(target_arch = "x86_64")]
        Kernel::Bf16Dot => (probe::DOT_FLOP_PER_ITER, unsafe { probe::dot_loop(iters) }),
        #[cfg(target_arch = "x86_64")]
        Kernel::Amx => (probe::AMX_FLOP_PER_ITER, unsafe { probe::amx_peak_loop(iters) }),
    }
}

/// Loop iterations of `k` that take about `seconds` on one thread (calibrated on this one).
fn calibrate(k: Kernel, seconds: f64) -> u64 {
    crate::backend::portable::probe::iters_for(|n| run_kernel(k, n).1, seconds, 0.01)
}

/// GFLOP/s of one timed run of `iters` iterations of `k` on `threads` threads at once.
fn timed_run(k: Kernel, threads: usize, iters: u64) -> f64 {
    let t = Instant::now();
    let flop: f64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads).map(|_| s.spawn(move || run_kernel(k, iters))).collect();
        hs.into_iter().map(|h| h.join().map_or(0.0, |(f, v)| f + 0.0 * v as f64)).sum()
    });
    flop * iters as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Best of three timed runs of ≈ 0.15 s, on `threads` threads at once.
fn peak_gflops(k: Kernel, threads: usize) -> f64 {
    let iters = calibrate(k, 0.15);
    (0..3).map(|_| timed_run(k, threads, iters)).fold(0.0, f64::max)
}

/// A short run of the FP32 FMA peak loop of one ISA, calibrated once, to be taken next to each
/// measured forward: on a host whose speed drifts from minute to minute (a VM's neighbours),
/// a forward's share of a peak measured seconds earlier mixes two phases, and its share of
/// the peak taken right beside it does not.
#[derive(Debug, Clone, Copy)]
pub struct PeakProbe {
    kernel: Kernel,
    name: &'static str,
    threads: usize,
    iters: u64,
}

impl PeakProbe {
    /// The FMA loop of `isa` (`avx512f fma`, `avx2 fma`, or `scalar fma` where `isa` does not
    /// run here), on `threads` threads (at least 1), each sample about `seconds` long.
    pub fn new(isa: Isa, threads: usize, seconds: f64) -> Self {
        #[cfg(target_arch = "x86_64")]
        let (kernel, isa) = match isa {
            Isa::Avx512 if isa.runs_here() => (Kernel::Avx512, isa),
            Isa::Avx512 | Isa::Avx2 if Isa::Avx2.runs_here() => (Kernel::Avx2, Isa::Avx2),
            _ => (Kernel::Scalar, Isa::Generic),
        };
        #[cfg(not(target_arch = "x86_64"))]
        let (kernel, isa) = {
            let _ = isa;
            (Kernel::Scalar, Isa::Generic)
        };
        let iters = calibrate(kernel, seconds.max(1e-4));
        PeakProbe { kernel, name: fma_kernel(isa), threads: threads.max(1), iters }
    }

    /// The kernel's name, as in [`Peak::kernel`].
    pub fn kernel(&self) -> &'static str {
        self.name
    }

    /// One timed run: GFLOP/s over all threads.
    pub fn sample(&self) -> f64 {
        timed_run(self.kernel, self.threads, self.iters)
    }
}

fn scalar_chains(iters: u64) -> f32 {
    let mut acc = [1.0f32; 12];
    let (a, b) = (std::hint::black_box(0.999_999f32), std::hint::black_box(1e-7f32));
    for _ in 0..iters {
        for x in acc.iter_mut() {
            *x = x.mul_add(a, b);
        }
    }
    acc.iter().sum()
}

/// `a = b + s·c` over [`TRIAD_FLOATS`] elements per array, split over `threads`; GB/s.
fn triad_gbs(threads: usize) -> f64 {
    let n = TRIAD_FLOATS;
    let chunk = n.div_ceil(threads.max(1));
    let mut a = vec![0.0f32; n];
    let b = vec![1.0f32; n];
    let c = vec![2.0f32; n];
    let s = std::hint::black_box(3.0f32);
    (0..5)
        .map(|_| {
            let t = Instant::now();
            std::thread::scope(|sc| {
                for ((ac, bc), cc) in a.chunks_mut(chunk).zip(b.chunks(chunk)).zip(c.chunks(chunk)) {
                    sc.spawn(move || {
                        for ((x, &y), &z) in ac.iter_mut().zip(bc).zip(cc) {
                            *x = y + s * z;
                        }
                    });
                }
            });
            std::hint::black_box(&a);
            (3 * 4 * n) as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_floors_hold_each_arm_to_its_kernel_and_the_triad() {
        let m = Measured {
            peaks: vec![
                Peak { kernel: "avx2 fma".into(), compute: ComputeType::F32, threads: 2, gflops: 100.0 },
                Peak { kernel: "scalar fma".into(), compute: ComputeType::F32, threads: 2, gflops: 10.0 },
            ],
            triad_gbs: 10.0,
            threads: 2,
            engine_isa: "avx2".into(),
            engine_f32_kernel: String::new(),
            engine_bf16_kernel: String::new(),
            seconds: 0.0,
            host_steal: Some(StealTicks { steal_ticks: 30, cpu_ticks: 1000 }),
        };
        let text = render(&m, "synthetic:multilingual", 96, &[]);
        assert!(text.contains("steal 3.0 % of the CPU time (30 of 1000 ticks)"), "{text}");
        assert!(!text.contains("bf16 and w8 products"), "no BF16 kernel, no line: {text}");
        let with_bf16 = Measured { engine_bf16_kernel: "amx-bf16 tiles".into(), ..m.clone() };
        let text = render(&with_bf16, "synthetic:multilingual", 96, &[]);
        assert!(text.contains("\n  bf16 and w8 products: amx-bf16 tiles\n"), "{text}");
        assert!(text.contains("WARNING: the hypervisor gave 3.0 %"), "{text}");
        let (enc, agent) = crate::model::synthetic::published_shape("multilingual").unwrap();
        let f = arm_floors(&m, &enc, &agent, 96, 32, &Settings::of_test_process()).unwrap();
        assert_eq!(f.len(), 4);
        assert!(f.iter().all(|a| a.kernel == "avx2 fma" && a.peak_gflops == 100.0));
        // 24.6 GFLOP at 100 GFLOP/s; 500 MB of FP32 weights at 10 GB/s
        assert!((f[0].compute_ms - 246.0).abs() < 2.0, "{:?}", f[0]);
        assert!((f[0].bandwidth_ms - 50.0).abs() < 1.0, "{:?}", f[0]);
        assert_eq!(f[0].floor_ms, f[0].compute_ms);
        assert!(f[3].bandwidth_ms < f[0].bandwidth_ms / 3.0);
    }

    /// BF16 and 8-bit palettes take the rate of the kernel the engine's choice puts them on,
    /// every other arm the FMA rate of the engine's ISA.
    #[test]
    fn each_arm_takes_the_peak_of_the_kernel_it_runs_on() {
        use Precision::*;
        const FMA: &str = "avx512f fma";
        let zen4 = Caps { amx: false, dot: true, lut8: true };
        let amx_host = Caps { amx: true, dot: true, lut8: true };
        let avx2 = Caps { amx: false, dot: false, lut8: false };
        let k = |p, caps, bf16, palette| arm_kernel(p, FMA, caps, bf16, palette);
        let (dot, amx, dec) = (Bf16Kernel::Dot, Bf16Kernel::Amx, Bf16Kernel::Decode);
        let (pb, pd) = (PaletteKernel::Bf16, PaletteKernel::Decode);
        // Zen 4: the probe keeps the pair-dot
        assert_eq!(k(Bf16, zen4, dot, pb), BF16_DOT);
        assert_eq!(k(W8, zen4, dot, pb), BF16_DOT);
        // the Intel Xeon without AMX: the probe decodes to FP32 panels
        assert_eq!(k(Bf16, zen4, dec, pd), FMA);
        assert_eq!(k(W8, zen4, dec, pd), FMA);
        // AMX: the tiles; asked for the pair-dot, the pair-dot
        assert_eq!(k(Bf16, amx_host, amx, pb), AMX_BF16);
        assert_eq!(k(W8, amx_host, amx, pb), AMX_BF16);
        assert_eq!(k(Bf16, amx_host, dot, pb), BF16_DOT);
        // palettes without the VBMI decoder are decoded to FP32 whatever the BF16 kernel
        assert_eq!(k(W8, Caps { lut8: false, ..zen4 }, dot, pb), FMA);
        // where no BF16 kernel runs, every choice falls back to FP32
        for p in [F32, F16, Bf16, W8, W6, W4] {
            assert_eq!(k(p, avx2, amx, pb), FMA, "{p:?}");
        }
        for p in [F32, F16, W6, W4] {
            assert_eq!(k(p, amx_host, amx, pb), FMA, "{p:?}");
        }

        // on a measurement: the FMA peak for f32, and the peaks listed
        let peak = |kernel: &str, gflops: f64| Peak {
            kernel: kernel.into(),
            compute: ComputeType::F32,
            threads: 2,
            gflops,
        };
        let m = Measured {
            peaks: vec![peak("avx512f fma", 200.0), peak(BF16_DOT, 400.0)],
            triad_gbs: 10.0,
            threads: 2,
            engine_isa: "avx512".into(),
            engine_f32_kernel: String::new(),
            engine_bf16_kernel: String::new(),
            seconds: 0.0,
            host_steal: None,
        };
        assert_eq!(m.arm_peak(F32, &Settings::of_test_process()), Some(("avx512f fma".to_string(), 200.0)));
        assert_eq!(m.arm_peak(F16, &Settings::of_test_process()), Some(("avx512f fma".to_string(), 200.0)));
        // BF16 here: whatever this CPU's engine picks, held to that kernel's peak (AMX's, which
        // this list lacks, is replaced by the dot rate)
        let isa = Isa::Avx512;
        let on_bf16 = isa.has_bf16_dot()
            && Bf16Kernel::selected(isa, &Settings::of_test_process()) != Bf16Kernel::Decode;
        let want = if on_bf16 { (BF16_DOT, 400.0) } else { ("avx512f fma", 200.0) };
        assert_eq!(m.arm_peak(Bf16, &Settings::of_test_process()), Some((want.0.to_string(), want.1)));
    }

    #[test]
    fn the_scalar_peak_and_the_triad_measure_something() {
        assert!(peak_gflops(Kernel::Scalar, 1) > 0.0);
    }

    #[test]
    fn a_probe_runs_the_fma_loop_of_the_best_isa_at_most_the_one_asked() {
        let expect = |isa: Isa| {
            if isa == Isa::Avx512 && isa.runs_here() {
                "avx512f fma"
            } else if isa != Isa::Generic && Isa::Avx2.runs_here() {
                "avx2 fma"
            } else {
                "scalar fma"
            }
        };
        for isa in [Isa::Generic, Isa::Avx2, Isa::Avx512] {
            let p = PeakProbe::new(isa, 2, 0.002);
            assert_eq!(p.kernel(), expect(isa), "{isa:?}");
            assert_eq!(p.threads, 2);
            let g = p.sample();
            assert!(g.is_finite() && g > 0.0, "{isa:?}: {g}");
        }
        // a request for zero threads still runs one
        assert_eq!(PeakProbe::new(Isa::Generic, 0, 0.001).threads, 1);
    }
}
