//! Forward of the portable engine on `synthetic:multilingual` at B1 L96 K32, per weight
//! precision.
//!
//! `cargo bench --bench forward -- [--precision f32|f16|bf16|w8|w6|w4|all|LIST] [--shape
//! multilingual|english] [--threads N] [--iters N] [--len L] [--compare] [--profile]` prints,
//! per precision, the median forward time, the achieved GFLOP/s (24.57 GFLOP per decision at
//! L96 for the multilingual shape) and the weight bytes (projections, and the whole model);
//! `--precision` takes one name, a comma list, or `all` (f32, f16, bf16, w8); default f32.
//! `--profile` adds a per-stage breakdown.
//! `--compare` also times, for f32, the engine on the `gemm` crate (row-major and the other
//! layout, the engine before packing at load), with row-major weights copied into panels every
//! forward, and with single-threaded Linear products; for bf16 the decode-to-f32 product next
//! to the AVX-512 BF16 pair-dot kernel; and for every precision the AVX2 kernels forced on an
//! AVX-512 machine; in one process so the variants are side by side.
//! `--interleave` (with `--compare`) builds every variant of a precision first and then times
//! them in rounds, one forward of each per round in rotating order, so that a host whose speed
//! drifts (a neighbour, stolen time) slows every variant alike; the table then adds each
//! variant's paired ratio to the default (the median over rounds of its time over the
//! default's in the same round). Without it each variant's forwards run back to back.
//!
//! Every run first measures this machine's FMA peak and triad bandwidth
//! (`laya_bench::bounds::measure`, as `bounds --measure`) and the table gives each row's
//! GFLOP/s as a share of the peak its kernels run at, measured in the same run.

use std::time::Instant;

use laya_bench::backend::portable::{Bf16Kernel, GemmThreading, Isa, PortableBackend, Tuning};
use laya_bench::backend::registry::{portable_precisions, Precision};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::bounds::measure;
use laya_bench::laya::config::{AgentConfig, EncoderConfig};
use laya_bench::model::loader::convert_weights;
use laya_bench::model::synthetic::{published_shape, random_weights};
use laya_bench::model::weights::Layout;
use laya_bench::report::steal::{self, StealTicks, StealWatch, STEAL_WARN_FRACTION};

/// Multiply-adds ×2 of one decision's encoder and decision head, attention included (the
/// performance-anchors count: 24.57 GFLOP at L96; scorer and action head, ≈0.04, left out).
fn flops(enc: &EncoderConfig, agent: &AgentConfig, l: usize) -> f64 {
    let (d, i_, n, h) = (
        enc.hidden_size as f64,
        enc.intermediate_size as f64,
        enc.num_layers as f64,
        agent.head_layers as f64,
    );
    let l = l as f64;
    let enc_layer = l * (3.0 * d * d + d * d + 2.0 * i_ * d + i_ * d) + 2.0 * l * l * d;
    let head_layer = l * (3.0 * d * d + d * d + 8.0 * d * d) + 2.0 * l * l * d;
    2.0 * (n * enc_layer + h * head_layer)
}

fn request(l: usize, k: usize, vocab: usize) -> PreparedBatch {
    let mut b = PreparedBatch::default();
    b.reset(1, l, k, 0, false);
    for t in 0..l {
        b.input_ids[t] = ((t * 7919 + 13) % vocab) as i32;
        b.attention_mask[t] = 1;
    }
    for j in 0..4 {
        b.marker_pos[j] = (l - 16 + 4 * j) as i32;
        b.marker_mask[j] = 1;
    }
    b
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Process CPU time (user + system) in seconds, from /proc (Linux; `None` elsewhere).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// Median, min and max ms per forward, process CPU ms per forward, and the machine's steal over
/// the timed forwards.
type Timing = (f64, f64, f64, Option<f64>, Option<StealTicks>);

/// Three untimed forwards.
fn warm(backend: &mut PortableBackend, b: &PreparedBatch, out: &mut ForwardOutput) {
    for _ in 0..3 {
        backend.forward(b, out).expect("forward");
    }
}

/// Median, min and max of per-forward times (reorders `ms`).
fn spread(ms: &mut [f64]) -> (f64, f64, f64) {
    let min = ms.iter().cloned().fold(f64::MAX, f64::min);
    let max = ms.iter().cloned().fold(0.0, f64::max);
    (median(ms), min, max)
}

fn time(backend: &mut PortableBackend, b: &PreparedBatch, iters: usize) -> Timing {
    let mut out = ForwardOutput::default();
    warm(backend, b, &mut out);
    let steal = StealWatch::start();
    let cpu0 = cpu_seconds();
    let mut ms: Vec<f64> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            backend.forward(b, &mut out).expect("forward");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let cpu = match (cpu0, cpu_seconds()) {
        (Some(a), Some(b)) => Some((b - a) * 1e3 / iters as f64),
        _ => None,
    };
    let steal = steal.stop();
    let (med, min, max) = spread(&mut ms);
    (med, min, max, cpu, steal)
}

/// Every variant's [`Timing`] and its paired ratio to the first (median over rounds of
/// `t_variant / t_first` in the same round), from `iters` rounds of one forward each in
/// rotating order. The steal is over the whole interleaved window, shared by all.
fn time_interleaved(
    built: &mut [(PortableBackend, f64)],
    b: &PreparedBatch,
    iters: usize,
) -> Vec<(Timing, f64)> {
    let n = built.len();
    let mut out = ForwardOutput::default();
    for (backend, _) in built.iter_mut() {
        warm(backend, b, &mut out);
    }
    let watch = StealWatch::start();
    let mut ms: Vec<Vec<f64>> = vec![Vec::with_capacity(iters); n];
    let mut cpu: Vec<Option<f64>> = vec![Some(0.0); n];
    for round in 0..iters {
        for j in 0..n {
            let v = (round + j) % n;
            let c0 = cpu_seconds();
            let t = Instant::now();
            built[v].0.forward(b, &mut out).expect("forward");
            ms[v].push(t.elapsed().as_secs_f64() * 1e3);
            cpu[v] = match (cpu[v], c0, cpu_seconds()) {
                (Some(sum), Some(a), Some(z)) => Some(sum + z - a),
                _ => None,
            };
        }
    }
    let steal = watch.stop();
    (0..n)
        .map(|v| {
            let mut ratios: Vec<f64> = ms[v].iter().zip(&ms[0]).map(|(t, t0)| t / t0).collect();
            let paired = median(&mut ratios);
            let (med, min, max) = spread(&mut ms[v]);
            let cpu_ms = cpu[v].map(|s| s * 1e3 / iters as f64);
            ((med, min, max, cpu_ms, steal), paired)
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| -> usize {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let threads = arg("--threads", 2);
    let iters = arg("--iters", 15);
    let l = arg("--len", 96);
    let k = 32;
    let compare = args.iter().any(|a| a == "--compare");
    let profile = args.iter().any(|a| a == "--profile");
    let interleave = args.iter().any(|a| a == "--interleave");

    let shape = args
        .iter()
        .position(|a| a == "--shape")
        .and_then(|i| args.get(i + 1))
        .map_or("multilingual", String::as_str);
    let Some((enc, agent)) = published_shape(shape) else {
        eprintln!("unknown --shape {shape}; use multilingual or english");
        std::process::exit(2);
    };
    let peak = measure::measure(threads);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let floors = measure::arm_floors(&peak, &enc, &agent, l, k).unwrap_or_default();
    println!("{}", measure::render(&peak, &format!("synthetic:{shape}"), l, &floors).trim_end());
    println!("load average at start: {}", load.trim());
    let t = Instant::now();
    let w = random_weights(&enc, &agent, 0);
    println!("synthetic:{shape} weights built in {:.2} s", t.elapsed().as_secs_f64());
    let gflop = flops(&enc, &agent, l) / 1e9;
    let caps = ShapeCaps {
        batch_size: 1,
        max_length: agent.max_len,
        min_length: 16,
        max_options: k,
        mode: ShapeMode::Range,
    };
    let b = request(l, k, enc.vocab_size);
    let precisions: Vec<Precision> =
        match args.iter().position(|a| a == "--precision").and_then(|i| args.get(i + 1)) {
            None => vec![Precision::F32],
            Some(v) if v == "all" => portable_precisions().to_vec(),
            Some(v) => {
                let parsed: Option<Vec<Precision>> = v.split(',').map(Precision::from_name).collect();
                parsed.unwrap_or_else(|| {
                    eprintln!("unknown --precision {v}; use f32, f16, bf16, w8, w6, w4, all or a comma list");
                    std::process::exit(2);
                })
            }
        };
    let mut rows = Vec::new();
    for precision in precisions {
        let mut variants = vec![("default", Tuning::default())];
        if compare && precision == Precision::F32 {
            let other = match Tuning::default().weight_layout {
                Layout::RowMajor => Layout::ColMajor,
                _ => Layout::RowMajor,
            };
            variants.push(("gemm crate", Tuning { f32_gemm: true, ..Tuning::default() }));
            variants.push((
                "gemm other layout",
                Tuning { f32_gemm: true, weight_layout: other, ..Tuning::default() },
            ));
            variants.push(("panels copied", Tuning { f32_panel: true, ..Tuning::default() }));
            for (name, gemm) in [
                ("gemm rayon", GemmThreading::Rayon),
                ("column split", GemmThreading::Columns),
                ("1-thread gemm", GemmThreading::Single),
            ] {
                if gemm != Tuning::default().gemm {
                    variants.push((name, Tuning { gemm, ..Tuning::default() }));
                }
            }
        }
        if compare && precision == Precision::Bf16 {
            for (name, bf16) in [
                ("bf16 amx", Bf16Kernel::Amx),
                ("bf16 pair-dot", Bf16Kernel::Dot),
                ("bf16 decode", Bf16Kernel::Decode),
            ] {
                if bf16 != Tuning::default().bf16 {
                    variants.push((name, Tuning { bf16, ..Tuning::default() }));
                }
            }
        }
        if compare && Tuning::default().isa == Isa::Avx512 {
            variants.push(("avx2 forced", Tuning { isa: Isa::Avx2, ..Tuning::default() }));
        }
        let t = Instant::now();
        let (converted, report) = convert_weights(w.clone(), precision).expect("conversion");
        let convert_s = t.elapsed().as_secs_f64();
        if let Some(r) = &report {
            println!(
                "{}: palettized {} tensors ({} elements) in {:.1} s, max relative RMS error {:.2e}",
                precision.name(),
                r.tensors.len(),
                r.elements,
                r.seconds,
                r.max_rel_rms_error
            );
        }
        let mut converted = Some(converted);
        let n_variants = variants.len();
        let mut weights_for = |i: usize| {
            if i + 1 == n_variants { converted.take() } else { converted.clone() }.expect("weights")
        };
        let build = |weights, tuning: Tuning| {
            let t = Instant::now();
            let backend = PortableBackend::new_tuned(
                weights,
                enc.clone(),
                agent.clone(),
                caps.clone(),
                "synthetic".into(),
                threads,
                tuning,
            );
            (backend, t.elapsed().as_secs_f64())
        };
        let mut finish = |name: &'static str,
                          backend: &mut PortableBackend,
                          build: f64,
                          timing: Timing,
                          paired: Option<f64>| {
            let (med, min, max, cpu, steal) = timing;
            if profile {
                backend.set_profiling(true);
                let _ = time(backend, &b, iters);
                let stages = backend.profile();
                let total: f64 = stages.iter().map(|(_, s)| s).sum();
                let calls = (iters + 3) as f64;
                for (stage, secs) in stages {
                    println!(
                        "    {stage:<20} {:>7.2} ms/forward {:>5.1} %",
                        secs * 1e3 / calls,
                        100.0 * secs / total
                    );
                }
                backend.set_profiling(false);
            }
            let bytes = backend.weight_bytes();
            println!(
                "{:>5} {name:>14}: B1 L{l} K{k} {}: median {med:.1} ms (min {min:.1}, max {max:.1}, n={iters}{}), {:.1} GFLOP/s of {gflop:.2} GFLOP, cpu {} ms/forward, {}; projection weights {:.2} MB, model {:.2} MB; converted in {convert_s:.1} s, engine built in {build:.2} s",
                precision.name(),
                backend.info().device,
                paired.map_or(String::new(), |p| format!(", interleaved, {p:.3}× the default's time in the same round (median)")),
                gflop / (med / 1e3),
                cpu.map_or("?".to_string(), |c| format!("{c:.0}")),
                steal::describe(steal),
                bytes.projections as f64 / 1e6,
                bytes.total as f64 / 1e6,
            );
            // the peak of the kernel this variant runs on
            let device = &backend.info().device;
            let peak_g = if device.contains("amx-bf16 tiles") {
                peak.peak("amx_bf16 tiles")
            } else if device.contains("pair-dot") {
                peak.peak("avx512_bf16 dot")
            } else {
                peak.peak(match backend.isa() {
                    Isa::Avx512 => "avx512f fma",
                    Isa::Avx2 => "avx2 fma",
                    Isa::Generic => "scalar fma",
                })
            };
            let share =
                peak_g.map_or("?".to_string(), |p| format!("{:.0} %", 100.0 * gflop / (med / 1e3) / p));
            rows.push(Row {
                precision: precision.name(),
                variant: name,
                median_ms: med,
                gflops: gflop / (med / 1e3),
                share,
                cpu_ms: cpu,
                steal: steal.and_then(|s| s.fraction()),
                projection_bytes: bytes.projections,
                model_bytes: bytes.total,
                paired,
            });
        };
        if interleave && n_variants > 1 {
            let mut built: Vec<(PortableBackend, f64)> =
                variants.iter().enumerate().map(|(i, (_, tuning))| build(weights_for(i), *tuning)).collect();
            let timings = time_interleaved(&mut built, &b, iters);
            for ((name, _), ((backend, build_s), (timing, paired))) in
                variants.iter().zip(built.iter_mut().zip(timings))
            {
                finish(name, backend, *build_s, timing, Some(paired));
            }
        } else {
            for (i, (name, tuning)) in variants.iter().enumerate() {
                let (mut backend, build_s) = build(weights_for(i), *tuning);
                let timing = time(&mut backend, &b, iters);
                finish(name, &mut backend, build_s, timing, None);
            }
        }
    }
    println!();
    println!(
        "same-run FMA peak ({threads} threads): {}; triad {:.1} GB/s; peak measured with {}; load average at end: {}",
        peak.peaks
            .iter()
            .filter(|p| p.threads == peak.threads)
            .map(|p| format!("{} {:.1} GFLOP/s", p.kernel, p.gflops))
            .collect::<Vec<_>>()
            .join(", "),
        peak.triad_gbs,
        steal::describe(peak.host_steal),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    if let Some(w) = steal::warning("the peak measurement", peak.host_steal) {
        println!("WARNING: {w}");
    }
    println!(
        "| precision | variant | median ms | GFLOP/s | % of its peak | cpu ms/forward | steal | time / default's, paired | projection weight MB | model MB |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {:.2} | {:.2} |",
            r.precision,
            r.variant,
            r.median_ms,
            r.gflops,
            r.share,
            r.cpu_ms.map_or("?".to_string(), |c| format!("{c:.0}")),
            r.steal.map_or("?".to_string(), |f| format!("{:.1} %", 100.0 * f)),
            r.paired.map_or("–".to_string(), |p| format!("{p:.3}")),
            r.projection_bytes as f64 / 1e6,
            r.model_bytes as f64 / 1e6
        );
        if let Some(f) = r.steal.filter(|&f| f >= STEAL_WARN_FRACTION) {
            eprintln!(
                "WARNING: {} {}: {:.1} % of the CPU time was stolen by the hypervisor while it ran; its time includes that wait",
                r.precision,
                r.variant,
                100.0 * f
            );
        }
    }
}

/// One row of the closing table.
struct Row<'a> {
    precision: &'a str,
    variant: &'a str,
    median_ms: f64,
    gflops: f64,
    share: String,
    cpu_ms: Option<f64>,
    steal: Option<f64>,
    projection_bytes: usize,
    model_bytes: usize,
    /// With `--interleave`: the median over rounds of this variant's time over the default's.
    paired: Option<f64>,
}
