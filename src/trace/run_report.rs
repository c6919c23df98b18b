//! What `trace run` prints once its block ends: the arm, the block, its calls and latency,
//! the raw record and the ready file, and the note that a traced run is not a speed result.

use std::path::PathBuf;

use crate::report::Render;

/// The latency of the measured block's calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockLatency {
    /// Calls in the block.
    pub calls: u64,
    /// Mean latency, s.
    pub mean_s: f64,
    /// Median, s.
    pub p50_s: f64,
    /// 95th percentile, s.
    pub p95_s: f64,
}

/// The ready file a `trace run --ready FILE` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadyShown {
    /// Where it is.
    pub path: PathBuf,
    /// The `trace run` process.
    pub pid: u32,
    /// The process that runs the model, where it is another one.
    pub model_pid: Option<u32>,
}

/// One `trace run`, as printed.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRunReport {
    /// The arm's name.
    pub arm: String,
    /// The arm's backend spec.
    pub spec: String,
    /// The measured block's length, s.
    pub block_s: f64,
    /// Warm-up calls before the block.
    pub warmup_calls: usize,
    /// The block's calls (`None` for a block without calls).
    pub latency: Option<BlockLatency>,
    /// The raw record.
    pub raw_path: PathBuf,
    /// The ready file, when one was asked for.
    pub ready: Option<ReadyShown>,
}

impl Render for TraceRunReport {
    fn terminal(&self) -> String {
        let mut out = format!(
            "trace run: arm `{}` ({}), one {:.2} s block after {} warm-up calls\n",
            self.arm, self.spec, self.block_s, self.warmup_calls
        );
        out.push_str(&match &self.latency {
            Some(l) => format!(
                "  calls {} · {:.1} calls/s · latency mean {:.3} ms · p50 {:.3} ms · p95 {:.3} ms\n",
                l.calls,
                l.calls as f64 / self.block_s,
                l.mean_s * 1e3,
                l.p50_s * 1e3,
                l.p95_s * 1e3
            ),
            None => "  calls 0\n".to_string(),
        });
        out.push_str(&format!("  raw record: {}\n", self.raw_path.display()));
        if let Some(r) = &self.ready {
            out.push_str(&match r.model_pid {
                Some(model) => format!(
                    "  ready file: {} (pid {}; the model runs in the worker, pid {model}: attach there)\n",
                    r.path.display(),
                    r.pid
                ),
                None => format!("  ready file: {} (pid {})\n", r.path.display(), r.pid),
            });
        }
        out.push_str(
            "  note: this run is meant to be traced; an attached profiler perturbs its timing, so these \
             are not speed results (use `laya-bench speed`)\n",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_the_block_its_rate_and_where_to_attach() {
        let mut report = TraceRunReport {
            arm: "f32".into(),
            spec: "portable:f32".into(),
            block_s: 2.0,
            warmup_calls: 8,
            latency: Some(BlockLatency { calls: 5, mean_s: 0.0125, p50_s: 0.012, p95_s: 0.0201 }),
            raw_path: PathBuf::from("r.raw.jsonl"),
            ready: Some(ReadyShown { path: PathBuf::from("ready.json"), pid: 7, model_pid: Some(9) }),
        };
        let note = "  note: this run is meant to be traced; an attached profiler perturbs its timing, so these are not speed results (use `laya-bench speed`)\n";
        // 5 calls in 2 s: 2.5 calls/s
        assert_eq!(
            report.terminal(),
            format!(
                "trace run: arm `f32` (portable:f32), one 2.00 s block after 8 warm-up calls\n  calls 5 · 2.5 calls/s · latency mean 12.500 ms · p50 12.000 ms · p95 20.100 ms\n  raw record: r.raw.jsonl\n  ready file: ready.json (pid 7; the model runs in the worker, pid 9: attach there)\n{note}"
            )
        );
        report.latency = None;
        report.ready = Some(ReadyShown { path: PathBuf::from("ready.json"), pid: 7, model_pid: None });
        assert_eq!(
            report.terminal(),
            format!(
                "trace run: arm `f32` (portable:f32), one 2.00 s block after 8 warm-up calls\n  calls 0\n  raw record: r.raw.jsonl\n  ready file: ready.json (pid 7)\n{note}"
            )
        );
        report.ready = None;
        assert!(!report.terminal().contains("ready file"));
    }
}
