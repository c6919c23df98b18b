//! FP32 forward of the portable engine on `synthetic:multilingual` at B1 L96 K32.
//!
//! `cargo bench --bench forward -- [--threads N] [--iters N] [--len L] [--compare]`
//! prints the median forward time and the achieved GFLOP/s (24.57 GFLOP per decision at L96).
//! `--compare` also times the engine with the other weight layout and with single-threaded
//! Linear products, in one process so the variants are side by side.

use std::time::Instant;

use laya_bench::backend::portable::{PortableBackend, Tuning};
use laya_bench::backend::{Backend, ForwardOutput, PreparedBatch, ShapeCaps, ShapeMode};
use laya_bench::laya::config::{AgentConfig, EncoderConfig};
use laya_bench::model::synthetic::{published_shape, random_weights};
use laya_bench::model::weights::Layout;

/// Dense multiply-adds ×2 of one decision (encoder, attention, head, scorer, action head).
fn flops(enc: &EncoderConfig, agent: &AgentConfig, l: usize, k: usize) -> f64 {
    let (d, i_, n, h) = (
        enc.hidden_size as f64,
        enc.intermediate_size as f64,
        enc.num_layers as f64,
        agent.head_layers as f64,
    );
    let l = l as f64;
    let enc_layer = l * (3.0 * d * d + d * d + 2.0 * i_ * d + i_ * d) + 2.0 * l * l * d;
    let head_layer = l * (3.0 * d * d + d * d + 8.0 * d * d) + 2.0 * l * l * d;
    let scorer = k as f64 * (d * d + d);
    let act = 256.0 * (d + 4.0) + 256.0 * agent.num_actions as f64;
    2.0 * (n * enc_layer + h * head_layer + scorer + act)
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

fn time(backend: &mut PortableBackend, b: &PreparedBatch, iters: usize) -> (f64, f64, f64) {
    let mut out = ForwardOutput::default();
    for _ in 0..3 {
        backend.forward(b, &mut out).expect("forward");
    }
    let mut ms: Vec<f64> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            backend.forward(b, &mut out).expect("forward");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let min = ms.iter().cloned().fold(f64::MAX, f64::min);
    let max = ms.iter().cloned().fold(0.0, f64::max);
    (median(&mut ms), min, max)
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

    let (enc, agent) = published_shape("multilingual").expect("shape");
    let t = Instant::now();
    let w = random_weights(&enc, &agent, 0);
    println!(
        "synthetic:multilingual weights built in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let gflop = flops(&enc, &agent, l, k) / 1e9;
    let caps = ShapeCaps {
        batch_size: 1,
        max_length: agent.max_len,
        min_length: 16,
        max_options: k,
        mode: ShapeMode::Range,
    };
    let b = request(l, k, enc.vocab_size);
    let mut variants = vec![("default", Tuning::default())];
    if compare {
        let other = match Tuning::default().weight_layout {
            Layout::RowMajor => Layout::ColMajor,
            Layout::ColMajor => Layout::RowMajor,
        };
        variants.push((
            "other layout",
            Tuning {
                weight_layout: other,
                ..Tuning::default()
            },
        ));
        variants.push((
            "1-thread gemm",
            Tuning {
                gemm_rayon: false,
                ..Tuning::default()
            },
        ));
    }
    let mut w = Some(w);
    for (i, (name, tuning)) in variants.iter().enumerate() {
        let weights = if i + 1 == variants.len() {
            w.take().expect("weights")
        } else {
            w.clone().expect("weights")
        };
        let t = Instant::now();
        let mut backend = PortableBackend::new_tuned(
            weights,
            enc.clone(),
            agent.clone(),
            caps.clone(),
            "synthetic".into(),
            threads,
            *tuning,
        );
        let build = t.elapsed().as_secs_f64();
        let (med, min, max) = time(&mut backend, &b, iters);
        println!(
            "{name:>14}: B1 L{l} K{k} threads {} ({}): median {med:.1} ms (min {min:.1}, max {max:.1}, n={iters}), {:.1} GFLOP/s of {gflop:.2} GFLOP; engine built in {build:.2} s",
            backend.threads(),
            backend.info().device,
            gflop / (med / 1e3),
        );
    }
}
