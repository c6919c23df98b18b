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
//! forward, and with single-threaded Linear products; for bf16 every BF16 product this CPU runs
//! next to the default (AMX tiles, the AVX-512 BF16 pair-dot, decoded to f32); for w8 the other
//! palette product (decoded to f32, or decoded to BF16 for the AMX or pair-dot tile); and for
//! every precision the AVX2 kernels forced on an AVX-512 machine; in one process so the
//! variants are side by side.
//! `--interleave` builds every engine first (every variant of every precision asked for) and then
//! times them in rounds, one forward of each per round in rotating order, so that a host whose
//! speed drifts (a neighbour, stolen time) slows every row alike. Each round starts with a short
//! run (30 ms) of the engine ISA's FMA peak loop ([`measure::PeakProbe`]), and the table adds
//! each row's paired ratio to the first row (the median over rounds of its time over the first
//! row's in the same round) and, for rows on that FMA kernel, its paired share of the peak (the
//! median over rounds of its GFLOP/s over the peak sampled at that round's start). Without it
//! each row's forwards run back to back.
//! `--torch PYTHON` (with `--interleave`) adds the reference PyTorch FP32 forward as a row:
//! `PYTHON scripts/bench_torch_forward.py --serve` runs one forward per request in a child
//! process, timed there around the model call; with it every forward (and every probe) waits
//! until no thread of either process runs (read from /proc/PID/task), so the other runtime's
//! idle workers have stopped spinning and the cores were kept busy until the turn starts (where
//! /proc cannot be read, 30 ms of sleep instead). The child's CPU time per forward is read from
//! /proc. `--gap MS` (with `--interleave`) puts a
//! fixed sleep before every turn instead, with or without PyTorch, to see what an idle gap
//! before a forward costs each runtime.
//!
//! Every run first measures this machine's FMA peak and triad bandwidth
//! (`laya_bench::bounds::measure`, as `bounds --measure`) and the table gives each row's
//! GFLOP/s as a share of the peak its kernels run at, measured in the same run.
//!
//! Under the table, the portable engine's speed targets (`laya_bench::bounds::targets`, issue
//! 17: f32 at ≥ 80 % of the same-run FMA peak, bf16 and w8 no slower than f32, and f16 too on
//! the AVX2 kernels, PyTorch FP32 at ≥ 2× f32's time) are judged on the default rows the run
//! has, each marked met or NOT MET with its figure. The done-when run is `cargo bench --bench
//! forward -- --precision f32,f16,bf16,w8 --interleave --iters 20 --torch PYTHON`.

use std::time::Instant;

use laya_bench::backend::portable::{
    Bf16Kernel, EngineKnobs, GemmThreading, Isa, PaletteKernel, PortableBackend, Tuning,
};
use laya_bench::backend::registry::{portable_precisions, Precision};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::bounds::{measure, targets};
use laya_bench::host;
use laya_bench::laya::config::{AgentConfig, EncoderConfig};
use laya_bench::model::loader::convert_weights;
use laya_bench::model::synthetic::{published_shape, random_weights};
use laya_bench::model::weights::Layout;
use laya_bench::report::steal::{self, StealTicks, StealWatch, STEAL_WARN_FRACTION};

/// Multiply-adds ×2 of one decision's encoder and decision head, attention included (the
/// docs/methodology.md count: 24.57 GFLOP at L96; scorer and action head, ≈0.04, left out).
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
    proc_cpu_seconds("/proc/self/stat")
}

/// User + system CPU seconds from a `/proc/PID/stat` file.
fn proc_cpu_seconds(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ is 100 on Linux
}

/// Whether a thread of `pid` other than thread `skip` is running (state R in
/// `/proc/PID/task/TID/stat`); None where /proc cannot be read.
fn any_running(pid: u32, skip: Option<u32>) -> Option<bool> {
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let entry = entry.ok()?;
        if skip.is_some() && entry.file_name().to_str().and_then(|t| t.parse().ok()) == skip {
            continue;
        }
        // a thread that ended since the listing has no stat: it runs nothing
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if state_of(&stat) == Some('R') {
            return Some(true);
        }
    }
    Some(false)
}

/// The state letter of a `/proc/.../stat` line: the first field after the command's `)`.
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// This thread's id, from the `/proc/thread-self` link (`PID/task/TID`).
fn own_tid() -> Option<u32> {
    std::fs::read_link("/proc/thread-self").ok()?.file_name()?.to_str()?.parse().ok()
}

/// What comes before every turn of the interleaved rounds.
enum Pause {
    /// Nothing: one runtime's turn follows the other's at once.
    None,
    /// A fixed sleep (`--gap MS`).
    Sleep(std::time::Duration),
    /// Wait until no thread of these processes (this one's other than the caller included)
    /// runs, at most `limit`: the other runtime's idle workers have stopped spinning, and the
    /// cores were busy until then, so the turn does not start on cores the host let go idle.
    Settle { pids: Vec<u32>, tid: Option<u32>, limit: std::time::Duration },
}

/// Longest [`Pause::Settle`] wait before a turn starts anyway (PyTorch's OpenMP workers spin for
/// a few ms after a parallel region by default, then sleep).
const SETTLE_LIMIT_MS: u64 = 200;

/// The sleep before every turn with PyTorch where /proc cannot tell whether threads run.
const FALLBACK_GAP_MS: u64 = 30;

impl Pause {
    /// Wait; returns how long, and whether a [`Pause::Settle`] ran out of time first.
    fn wait(&self) -> (std::time::Duration, bool) {
        match self {
            Pause::None => (std::time::Duration::ZERO, false),
            Pause::Sleep(d) => {
                std::thread::sleep(*d);
                (*d, false)
            }
            Pause::Settle { pids, tid, limit } => {
                let t0 = Instant::now();
                loop {
                    let busy = pids.iter().any(|&p| {
                        let skip = (p == std::process::id()).then_some(*tid).flatten();
                        any_running(p, skip) == Some(true)
                    });
                    if !busy {
                        return (t0.elapsed(), false);
                    }
                    if t0.elapsed() >= *limit {
                        return (t0.elapsed(), true);
                    }
                    std::hint::spin_loop();
                }
            }
        }
    }
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

/// Seconds of the FMA peak loop at the start of every interleaved round.
const PROBE_SECONDS: f64 = 0.03;

/// The peak a backend's products run at, as a [`measure::Peak::kernel`] name: the AMX tile or
/// BF16 pair-dot rate where its device names those kernels, else the FMA rate of its ISA.
fn peak_kernel(backend: &PortableBackend) -> &'static str {
    let device = &backend.info().device;
    if device.contains("amx-bf16 tiles") {
        "amx_bf16 tiles"
    } else if device.contains("pair-dot") {
        "avx512_bf16 dot"
    } else {
        measure::fma_kernel(backend.isa())
    }
}

/// A PyTorch FP32 forward timed in a child process (`scripts/bench_torch_forward.py --serve`),
/// one forward per request, so that it can take its turn in the interleaved rounds.
struct Torch {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    version: String,
}

impl Torch {
    /// Start `python scripts/bench_torch_forward.py --serve` and wait until it has warmed up.
    fn spawn(python: &str, threads: usize, len: usize) -> Result<Self, String> {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench_torch_forward.py");
        let mut child = Command::new(python)
            .args([script, "--serve", "--threads", &threads.to_string(), "--length", &len.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!("--torch {python}: cannot start it ({e}); give a Python with torch and numpy")
            })?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let mut stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut line = String::new();
        stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        let version = line
            .trim()
            .strip_prefix("ready torch ")
            .ok_or_else(|| {
                format!(
                    "--torch {python}: expected `ready torch VERSION`, read {line:?} (its error is above)"
                )
            })?
            .to_string();
        Ok(Torch { child, stdin, stdout, version })
    }

    /// One forward: its time in ms, as the child measured it around the model call.
    fn forward(&mut self) -> f64 {
        use std::io::{BufRead, Write};
        let mut line = String::new();
        writeln!(self.stdin, "f")
            .and_then(|_| self.stdin.flush())
            .expect("the PyTorch child stopped reading");
        self.stdout.read_line(&mut line).expect("the PyTorch child stopped answering");
        line.trim().parse().unwrap_or_else(|_| panic!("the PyTorch child answered {line:?}"))
    }

    /// The child's CPU time (user + system) in seconds, from /proc.
    fn cpu_seconds(&self) -> Option<f64> {
        proc_cpu_seconds(&format!("/proc/{}/stat", self.child.id()))
    }
}

impl Drop for Torch {
    fn drop(&mut self) {
        // the child serves until stdin closes; it is not needed after the rounds
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What takes a turn in the interleaved rounds.
enum Runner {
    Engine(Box<PortableBackend>),
    Torch(Torch),
}

impl Runner {
    fn forward(&mut self, b: &PreparedBatch, out: &mut ForwardOutput) -> f64 {
        match self {
            Runner::Engine(e) => {
                let t = Instant::now();
                e.forward(b, out).expect("forward");
                t.elapsed().as_secs_f64() * 1e3
            }
            Runner::Torch(t) => t.forward(),
        }
    }

    fn cpu_seconds(&self) -> Option<f64> {
        match self {
            Runner::Engine(_) => cpu_seconds(),
            Runner::Torch(t) => t.cpu_seconds(),
        }
    }
}

/// The interleaved rounds: per runner its forward times (ms, in round order) and CPU ms per
/// forward; the probe's GFLOP/s taken at the start of every round; the steal over the whole
/// window, shared by all.
struct Rounds {
    ms: Vec<Vec<f64>>,
    cpu_ms: Vec<Option<f64>>,
    peak: Vec<f64>,
    steal: Option<StealTicks>,
    /// Every pause before a turn (ms), and how many ran out of time.
    waits_ms: Vec<f64>,
    timeouts: usize,
}

/// `iters` rounds; each takes one probe sample of the FMA peak, then one forward of every
/// runner in rotating order, each after `pause` (where another runtime's idle workers may still
/// be spinning).
fn time_interleaved(
    runners: &mut [Runner],
    b: &PreparedBatch,
    iters: usize,
    probe: &measure::PeakProbe,
    pause: &Pause,
) -> Rounds {
    let n = runners.len();
    let mut out = ForwardOutput::default();
    for r in runners.iter_mut() {
        for _ in 0..3 {
            r.forward(b, &mut out);
        }
    }
    let watch = StealWatch::start();
    let mut ms: Vec<Vec<f64>> = vec![Vec::with_capacity(iters); n];
    let mut cpu: Vec<Option<f64>> = vec![Some(0.0); n];
    let mut peak = Vec::with_capacity(iters);
    let (mut waits_ms, mut timeouts) = (Vec::with_capacity(iters * (n + 1)), 0);
    let mut wait = || {
        let (d, late) = pause.wait();
        waits_ms.push(d.as_secs_f64() * 1e3);
        timeouts += usize::from(late);
    };
    for round in 0..iters {
        wait();
        peak.push(probe.sample());
        for j in 0..n {
            let v = (round + j) % n;
            wait();
            let c0 = runners[v].cpu_seconds();
            ms[v].push(runners[v].forward(b, &mut out));
            cpu[v] = match (cpu[v], c0, runners[v].cpu_seconds()) {
                (Some(sum), Some(a), Some(z)) => Some(sum + z - a),
                _ => None,
            };
        }
    }
    let steal = watch.stop();
    let cpu_ms = cpu.into_iter().map(|c| c.map(|s| s * 1e3 / iters as f64)).collect();
    Rounds { ms, cpu_ms, peak, steal, waits_ms, timeouts }
}

/// Median over rounds of `ms[round] / reference[round]`.
fn paired_ratio(ms: &[f64], reference: &[f64]) -> f64 {
    let mut r: Vec<f64> = ms.iter().zip(reference).map(|(t, t0)| t / t0).collect();
    median(&mut r)
}

/// Median over rounds of the forward's GFLOP/s over the peak sampled at that round's start.
fn paired_share(ms: &[f64], peak: &[f64], gflop: f64) -> f64 {
    let mut r: Vec<f64> = ms.iter().zip(peak).map(|(t, p)| gflop / (t / 1e3) / p).collect();
    median(&mut r)
}

fn main() {
    // the environment's settings (LAYA_BENCH_ISA, LAYA_BENCH_BF16, ...), as the command line reads them
    let settings = &laya_bench::commands::settings::from_env();
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
    let torch_python = args.iter().position(|a| a == "--torch").and_then(|i| args.get(i + 1)).cloned();
    let gap_ms = args.iter().position(|a| a == "--gap").map(|i| {
        args.get(i + 1).and_then(|v| v.parse::<u64>().ok()).unwrap_or_else(|| {
            eprintln!("--gap takes the milliseconds of sleep before every forward and probe, e.g. --gap 30");
            std::process::exit(2);
        })
    });
    if gap_ms.is_some() && !interleave {
        eprintln!("--gap sets the sleep between the interleaved rounds' turns: add --interleave");
        std::process::exit(2);
    }
    if torch_python.is_some() && !interleave {
        eprintln!("--torch takes its turn in the interleaved rounds: add --interleave");
        std::process::exit(2);
    }

    let shape = args
        .iter()
        .position(|a| a == "--shape")
        .and_then(|i| args.get(i + 1))
        .map_or("multilingual", String::as_str);
    let Some((enc, agent)) = published_shape(shape) else {
        eprintln!("unknown --shape {shape}; use multilingual or english");
        std::process::exit(2);
    };
    let peak = measure::measure(threads, settings);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let floors = measure::arm_floors(&peak, &enc, &agent, l, k, settings).unwrap_or_default();
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
    // every (precision, variant) to time, with its precision's converted weights
    let mut entries: Vec<(Precision, &'static str, Tuning)> = Vec::new();
    for &precision in &precisions {
        entries.push((precision, "default", Tuning::new(settings)));
        if compare && precision == Precision::F32 {
            let other = match Tuning::new(settings).weight_layout {
                Layout::RowMajor => Layout::ColMajor,
                _ => Layout::RowMajor,
            };
            entries.push((precision, "gemm crate", Tuning { f32_gemm: true, ..Tuning::new(settings) }));
            entries.push((
                precision,
                "gemm other layout",
                Tuning { f32_gemm: true, weight_layout: other, ..Tuning::new(settings) },
            ));
            entries.push((precision, "panels copied", Tuning { f32_panel: true, ..Tuning::new(settings) }));
            for (name, gemm) in [
                ("gemm rayon", GemmThreading::Rayon),
                ("column split", GemmThreading::Columns),
                ("1-thread gemm", GemmThreading::Single),
            ] {
                if gemm != Tuning::new(settings).gemm {
                    entries.push((precision, name, Tuning { gemm, ..Tuning::new(settings) }));
                }
            }
        }
        if compare && precision == Precision::Bf16 {
            let isa = Tuning::new(settings).isa;
            for (name, bf16, runs) in [
                ("bf16 amx", Bf16Kernel::Amx, isa.has_amx_bf16()),
                ("bf16 pair-dot", Bf16Kernel::Dot, isa.has_bf16_dot()),
                ("bf16 decode", Bf16Kernel::Decode, true),
            ] {
                // a kernel this CPU lacks falls back to the next, already a row
                if runs && bf16 != Tuning::new(settings).bf16 {
                    entries.push((precision, name, Tuning { bf16, ..Tuning::new(settings) }));
                }
            }
        }
        if compare && precision == Precision::W8 {
            // the other palette product: decoded to f32, or (where the probe decoded by default)
            // the BF16 product on whichever BF16 kernel runs here
            let isa = Tuning::new(settings).isa;
            let (name, palette) = match Tuning::new(settings).palette {
                PaletteKernel::Bf16 => ("w8 f32 decode", PaletteKernel::Decode),
                PaletteKernel::Decode => ("w8 bf16 product", PaletteKernel::Bf16),
            };
            if palette == PaletteKernel::Decode || (isa.has_lut8() && isa.has_bf16_dot()) {
                entries.push((precision, name, Tuning { palette, ..Tuning::new(settings) }));
            }
        }
        if compare && Tuning::new(settings).isa == Isa::Avx512 {
            entries.push((precision, "avx2 forced", Tuning { isa: Isa::Avx2, ..Tuning::new(settings) }));
        }
    }
    let mut converted: Vec<(Precision, laya_bench::model::weights::DecisionWeights, f64)> = Vec::new();
    let mut weights_of = |precision: Precision, last: bool| {
        if !converted.iter().any(|(p, _, _)| *p == precision) {
            let t = Instant::now();
            let (c, report) = convert_weights(w.clone(), precision).expect("conversion");
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
            converted.push((precision, c, t.elapsed().as_secs_f64()));
        }
        let i = converted.iter().position(|(p, _, _)| *p == precision).expect("converted above");
        let convert_s = converted[i].2;
        let weights = if last { converted.swap_remove(i).1 } else { converted[i].1.clone() };
        (weights, convert_s)
    };
    let build = |weights, tuning: Tuning| {
        let t = Instant::now();
        let backend = PortableBackend::new_tuned(
            weights,
            enc.clone(),
            agent.clone(),
            caps.clone(),
            "synthetic".into(),
            EngineKnobs { threads, tuning },
            settings,
        );
        (backend, t.elapsed().as_secs_f64())
    };
    // the last entry of each precision takes its weights, the others clone them
    let last_of = |i: usize| !entries[i + 1..].iter().any(|(p, _, _)| *p == entries[i].0);
    let mut rows = Vec::new();
    let mut row_for = |precision: &'static str,
                       name: String,
                       backend: Option<&mut PortableBackend>,
                       device: String,
                       convert_build: (f64, f64),
                       timing: Timing,
                       paired: Option<(f64, Option<f64>)>| {
        let (med, min, max, cpu, steal) = timing;
        // PyTorch's FP32 products run on the FMA of the widest family the engine may use
        let kernel = backend.as_deref().map_or(measure::fma_kernel(Isa::selected(settings)), peak_kernel);
        let (bytes, model_bytes) = match backend {
            Some(be) => {
                if profile {
                    be.set_profiling(true);
                    let _ = time(be, &b, iters);
                    let stages = be.profile();
                    let total: f64 = stages.iter().map(|(_, s)| s).sum();
                    let calls = (iters + 3) as f64;
                    for (stage, secs) in stages {
                        println!(
                            "    {stage:<20} {:>7.2} ms/forward {:>5.1} %",
                            secs * 1e3 / calls,
                            100.0 * secs / total
                        );
                    }
                    be.set_profiling(false);
                }
                let bytes = be.weight_bytes();
                (Some(bytes.projections), Some(bytes.total))
            }
            None => (None, None),
        };
        println!(
            "{precision:>5} {name:>14}: B1 L{l} K{k} {device}: median {med:.1} ms (min {min:.1}, max {max:.1}, n={iters}{}), {:.1} GFLOP/s of {gflop:.2} GFLOP, cpu {} ms/forward, {}{}",
            paired.map_or(String::new(), |(p, share)| format!(
                ", interleaved, {p:.3}× the first row's time in the same round (median){}",
                share.map_or(String::new(), |s| format!(", {:.0} % of the {kernel} peak sampled at the round's start (median)", 100.0 * s))
            )),
            gflop / (med / 1e3),
            cpu.map_or("?".to_string(), |c| format!("{c:.0}")),
            steal::describe(steal),
            match (bytes, model_bytes) {
                (Some(p), Some(t)) => format!(
                    "; projection weights {:.2} MB, model {:.2} MB; converted in {:.1} s, engine built in {:.2} s",
                    p as f64 / 1e6,
                    t as f64 / 1e6,
                    convert_build.0,
                    convert_build.1
                ),
                _ => String::new(),
            },
        );
        let share_frac = peak.peak(kernel).map(|p| gflop / (med / 1e3) / p);
        let share = share_frac.map_or("?".to_string(), |s| format!("{:.0} %", 100.0 * s));
        rows.push(Row {
            precision,
            variant: name,
            median_ms: med,
            gflops: gflop / (med / 1e3),
            share,
            share_frac: share_frac.filter(|_| kernel.contains("fma")),
            round_share: paired.and_then(|(_, s)| s),
            cpu_ms: cpu,
            steal: steal.and_then(|s| s.fraction()),
            projection_bytes: bytes,
            model_bytes,
            paired: paired.map(|(p, _)| p),
        });
    };
    if interleave && (entries.len() > 1 || torch_python.is_some()) {
        let mut built: Vec<(Precision, &'static str, PortableBackend, (f64, f64))> = Vec::new();
        for (i, &(precision, name, tuning)) in entries.iter().enumerate() {
            let (weights, convert_s) = weights_of(precision, last_of(i));
            let (backend, build_s) = build(weights, tuning);
            built.push((precision, name, backend, (convert_s, build_s)));
        }
        let probe = measure::PeakProbe::new(Isa::selected(settings), threads, PROBE_SECONDS);
        let torch = torch_python.as_deref().map(|py| {
            Torch::spawn(py, threads, l).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(2);
            })
        });
        let torch_version = torch.as_ref().map(|t| t.version.clone());
        let pause = match (gap_ms, &torch) {
            (Some(ms), _) => Pause::Sleep(std::time::Duration::from_millis(ms)),
            (None, Some(_)) if any_running(std::process::id(), None).is_none() => {
                Pause::Sleep(std::time::Duration::from_millis(FALLBACK_GAP_MS))
            }
            (None, Some(t)) => Pause::Settle {
                pids: vec![std::process::id(), t.child.id()],
                tid: own_tid(),
                limit: std::time::Duration::from_millis(SETTLE_LIMIT_MS),
            },
            (None, None) => Pause::None,
        };
        let meta: Vec<_> = built.iter().map(|(p, n, be, cb)| (*p, *n, peak_kernel(be), *cb)).collect();
        let mut runners: Vec<Runner> =
            built.into_iter().map(|(_, _, be, _)| Runner::Engine(Box::new(be))).collect();
        runners.extend(torch.map(Runner::Torch));
        let rounds = time_interleaved(&mut runners, &b, iters, &probe, &pause);
        let apart = match &pause {
            Pause::None => String::new(),
            Pause::Sleep(d) => format!(", {} ms apart", d.as_millis()),
            Pause::Settle { limit, .. } => {
                let mut w = rounds.waits_ms.clone();
                format!(
                    ", each turn once no other thread of either process ran (waits: median {:.2} ms, max {:.2} ms; {} of {} cut off at {} ms)",
                    median(&mut w),
                    w.iter().cloned().fold(0.0, f64::max),
                    rounds.timeouts,
                    w.len(),
                    limit.as_millis()
                )
            }
        };
        println!(
            "interleaved: {iters} rounds of {} forwards in rotating order{apart}, each round starting with {:.0} ms of the {} loop on {threads} threads (round peaks: median {:.1}, min {:.1}, max {:.1} GFLOP/s)",
            runners.len(),
            1e3 * PROBE_SECONDS,
            probe.kernel(),
            median(&mut rounds.peak.clone()),
            rounds.peak.iter().cloned().fold(f64::MAX, f64::min),
            rounds.peak.iter().cloned().fold(0.0, f64::max),
        );
        for (j, runner) in runners.iter_mut().enumerate() {
            let mut ms = rounds.ms[j].clone();
            let (med, min, max) = spread(&mut ms);
            let timing = (med, min, max, rounds.cpu_ms[j], rounds.steal);
            let ratio = paired_ratio(&rounds.ms[j], &rounds.ms[0]);
            match runner {
                Runner::Engine(backend) => {
                    let (precision, name, kernel, cb) = meta[j];
                    let share =
                        (kernel == probe.kernel()).then(|| paired_share(&rounds.ms[j], &rounds.peak, gflop));
                    let device = backend.info().device.clone();
                    row_for(
                        precision.name(),
                        name.to_string(),
                        Some(backend),
                        device,
                        cb,
                        timing,
                        Some((ratio, share)),
                    );
                }
                Runner::Torch(_) => {
                    let share = Some(paired_share(&rounds.ms[j], &rounds.peak, gflop));
                    let device = format!(
                        "PyTorch {} FP32 eager, {threads} threads (scripts/bench_torch_forward.py)",
                        torch_version.as_deref().unwrap_or("?")
                    );
                    row_for(
                        "torch",
                        "fp32 eager".into(),
                        None,
                        device,
                        (0.0, 0.0),
                        timing,
                        Some((ratio, share)),
                    );
                }
            }
        }
    } else {
        for (i, &(precision, name, tuning)) in entries.iter().enumerate() {
            let (weights, convert_s) = weights_of(precision, last_of(i));
            let (mut backend, build_s) = build(weights, tuning);
            let timing = time(&mut backend, &b, iters);
            let device = backend.info().device.clone();
            row_for(
                precision.name(),
                name.to_string(),
                Some(&mut backend),
                device,
                (convert_s, build_s),
                timing,
                None,
            );
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
        "| precision | variant | median ms | GFLOP/s | % of its peak | % of the round's peak, paired | cpu ms/forward | steal | time / first row's, paired | projection weight MB | model MB |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mb = |b: Option<usize>| b.map_or("–".to_string(), |b| format!("{:.2}", b as f64 / 1e6));
    for r in &rows {
        println!(
            "| {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            r.precision,
            r.variant,
            r.median_ms,
            r.gflops,
            r.share,
            r.round_share.map_or("–".to_string(), |s| format!("{:.0} %", 100.0 * s)),
            r.cpu_ms.map_or("?".to_string(), |c| format!("{c:.0}")),
            r.steal.map_or("?".to_string(), |f| format!("{:.1} %", 100.0 * f)),
            r.paired.map_or("–".to_string(), |p| format!("{p:.3}")),
            mb(r.projection_bytes),
            mb(r.model_bytes)
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
    let timed: Vec<targets::TimedRow> = rows
        .iter()
        .map(|r| targets::TimedRow {
            precision: r.precision,
            variant: &r.variant,
            median_ms: r.median_ms,
            peak_share: r.share_frac,
            round_share: r.round_share,
            paired: r.paired,
        })
        .collect();
    let verdict = targets::check(&timed, Isa::selected(settings) == Isa::Avx2);
    println!();
    if verdict.is_empty() {
        println!("speed targets (docs/PERFORMANCE.md): every one is relative to f32's default row; add f32 to --precision");
    } else {
        println!(
            "speed targets (docs/PERFORMANCE.md), this run on {}, {} kernels:",
            std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .as_deref()
                .and_then(host::cpu_identity_from_cpuinfo)
                .unwrap_or_else(|| "this CPU".into()),
            Isa::selected(settings).name()
        );
        for t in verdict {
            println!("  {:<8} {}: {}", if t.met { "met" } else { "NOT MET" }, t.target, t.observed);
        }
    }
}

/// One row of the closing table.
struct Row {
    precision: &'static str,
    variant: String,
    median_ms: f64,
    gflops: f64,
    share: String,
    /// The same share as a fraction, for rows on an FMA kernel (the FP32 target's peak).
    share_frac: Option<f64>,
    /// With `--interleave`, for rows on the probe's FMA kernel (and PyTorch): the median over
    /// rounds of the GFLOP/s over the FMA peak sampled at the round's start.
    round_share: Option<f64>,
    cpu_ms: Option<f64>,
    steal: Option<f64>,
    projection_bytes: Option<usize>,
    model_bytes: Option<usize>,
    /// With `--interleave`: the median over rounds of this row's time over the first row's.
    paired: Option<f64>,
}
