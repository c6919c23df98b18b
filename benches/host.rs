//! Host path per decision (prompt, tokens, packing, decoding, formatted result) on the invoice
//! workload with a scripted backend standing in for the model, at the ANE shape B1/K32/L96.
//! Compare with `scripts/bench_reference_host.py` (laya-coreml 0.5.1's host code, same bundle).
//!
//! Run: `cargo bench --bench host`.

use std::time::{Duration, Instant};

use laya_bench::backend::mock::{Script, ScriptedBackend};
use laya_bench::backend::{ShapeCaps, ShapeMode};
use laya_bench::laya::bundle::{Bundle, ModelSpec};
use laya_bench::laya::host::{CallOptions, Host};
use serde_json::Value;

fn main() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).expect("builtin model");
    let workload: Value =
        serde_json::from_str(include_str!("../fixtures/workloads/invoice.json")).expect("invoice workload");
    let states = workload["states"].as_array().expect("states").clone();
    let questions = workload["questions"].clone();
    let shapes =
        ShapeCaps { batch_size: 1, max_length: 96, min_length: 96, max_options: 32, mode: ShapeMode::Fixed };
    let mut backend =
        ScriptedBackend::new(shapes.clone(), Script::Synthetic { num_actions: 2 }, Duration::ZERO);
    backend.record = false;
    let host = Host::new(&bundle.tokenizer, &bundle.agent, shapes);
    let opts = CallOptions::default();
    let calls = 4000;
    for i in 0..400 {
        host.predict(&mut backend, &states[i % states.len()], &questions, &opts, None).expect("warm-up call");
    }
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let t0 = Instant::now();
        let r = host.predict(&mut backend, &states[i % states.len()], &questions, &opts, None).expect("call");
        times.push(t0.elapsed().as_nanos() as f64 / 1e3);
        std::hint::black_box(r);
    }
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "{{\"bench\": \"host_path\", \"workload\": \"invoice\", \"shape\": \"B1/K32/L96\", \"calls\": {calls}, \"p50_us\": {:.2}, \"p95_us\": {:.2}, \"mean_us\": {:.2}}}",
        times[calls / 2],
        times[calls * 95 / 100],
        mean
    );
}
