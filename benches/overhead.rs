//! Per-call measurement overhead of `speed`/`energy`: the two clock reads, the in-memory call
//! record and the stability comparison made for every timed call, and separately the JSON line
//! written for each call after its block ends (outside the timed intervals).
//!
//! Run: `cargo bench --bench overhead`. Target: < 1 µs per call for the in-loop part.

use std::hint::black_box;
use std::time::{Duration, Instant};

use laya_bench::backend::mock::{Script, ScriptedBackend};
use laya_bench::backend::{ShapeCaps, ShapeMode};
use laya_bench::laya::bundle::{Bundle, ModelSpec};
use laya_bench::laya::host::{CallOptions, Host};
use laya_bench::record::{RawWriter, Record};
use laya_bench::run::{CallRecord, Clock};
use serde_json::Value;

fn main() {
    let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).expect("builtin model");
    let w: Value =
        serde_json::from_str(include_str!("../fixtures/workloads/invoice.json")).expect("workload");
    let shapes =
        ShapeCaps { batch_size: 1, max_length: 96, min_length: 96, max_options: 32, mode: ShapeMode::Fixed };
    let mut backend =
        ScriptedBackend::new(shapes.clone(), Script::Synthetic { num_actions: 2 }, Duration::ZERO);
    backend.record = false;
    let host = Host::new(&bundle.tokenizer, &bundle.agent, shapes);
    let opts = CallOptions::default();
    let reference = host.predict(&mut backend, &w["states"][0], &w["questions"], &opts, None).expect("call");
    let same = reference.clone();

    let n = 1_000_000;
    let clock = Clock::start();
    let mut records: Vec<CallRecord> = Vec::with_capacity(n);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        records.clear();
        let t = Instant::now();
        for i in 0..n {
            let t0 = Instant::now();
            let t1 = Instant::now();
            let stable = black_box(&same) == black_box(&reference);
            records.push(CallRecord {
                block: 0,
                state: (i % 8) as u32,
                requests: 1,
                start_ns: clock.ns(t0),
                duration_ns: t1.duration_since(t0).as_nanos() as u64,
                runtime_ns: None,
                stable,
                scheduled_ns: None,
                missed_deadline: false,
            });
        }
        best = best.min(t.elapsed().as_secs_f64() / n as f64);
    }
    black_box(&records);

    let dir = std::env::temp_dir().join(format!("laya-bench-overhead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut writer = RawWriter::create(&dir.join("raw.jsonl")).expect("raw file");
    let m = 200_000;
    let t = Instant::now();
    for (i, r) in records.iter().take(m).enumerate() {
        writer
            .write(&Record::Call {
                block: r.block,
                arm: "f32".into(),
                state: r.state,
                requests: None,
                start_ns: r.start_ns,
                duration_ns: r.duration_ns + i as u64,
                runtime_ns: r.runtime_ns,
                answer: "next_step=pay".into(),
                stable: r.stable,
                scheduled_ns: r.scheduled_ns,
                missed_deadline: r.missed_deadline,
            })
            .expect("write");
    }
    writer.sync().expect("sync");
    let per_line = t.elapsed().as_secs_f64() / m as f64;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{{\"bench\": \"measurement_overhead\", \"in_loop_ns_per_call\": {:.1}, \"raw_line_ns_per_call_after_block\": {:.1}}}",
        best * 1e9,
        per_line * 1e9
    );
}
