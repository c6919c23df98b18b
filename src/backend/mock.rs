//! A deterministic scripted backend: replays given outputs and records every batch it saw.
//! Used by tests (host parity, scheduler) and never by a real measurement.

use std::collections::VecDeque;
use std::time::Duration;

use super::{
    Backend, BackendError, BackendInfo, BackendKind, ForwardOutput, HostHints, PreparedBatch, ShapeCaps,
};

/// The scripted backend's [`BackendInfo::name`] (the raw header's `backend`).
pub const NAME: &str = "mock";

/// What the scripted backend returns for each call.
#[derive(Debug, Clone)]
pub enum Script {
    /// These outputs, in order; running out is an error.
    Replay(VecDeque<ForwardOutput>),
    /// Logits computed from the batch: slot `j` of a row gets `marker_pos[j] * 0.01 + j * 0.1`,
    /// action logits `[0.5, -0.5]`.
    Synthetic {
        /// Actions `A`.
        num_actions: usize,
    },
    /// Like `Synthetic`, but from call number `after` on, slot 0 of every row gains +5
    /// (an unstable backend, for stability tests).
    Drift {
        /// Actions `A`.
        num_actions: usize,
        /// Calls before the drift starts.
        after: usize,
    },
}

/// A backend that returns scripted outputs after an optional fixed delay.
#[derive(Debug)]
pub struct ScriptedBackend {
    info: BackendInfo,
    script: Script,
    delay: Duration,
    /// Every batch received, in order (when `record` is on).
    pub seen: Vec<PreparedBatch>,
    /// Keep a copy of each batch in `seen` (on by default).
    pub record: bool,
    /// Fail every call after this many.
    pub fail_after: Option<usize>,
    calls: usize,
}

impl ScriptedBackend {
    /// A scripted backend with the given shapes.
    pub fn new(shapes: ShapeCaps, script: Script, delay: Duration) -> Self {
        Self {
            info: BackendInfo {
                kind: BackendKind::Mock,
                name: NAME.into(),
                precision: "scripted".into(),
                device: "none (scripted outputs, not a measurement)".into(),
                shapes,
                fingerprint: "mock".into(),
                notes: Vec::new(),
                blas: None,
                host_hints: HostHints::default(),
                weight_bytes: None,
            },
            script,
            delay,
            seen: Vec::new(),
            record: true,
            fail_after: None,
            calls: 0,
        }
    }
}

impl Backend for ScriptedBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn forward(&mut self, batch: &PreparedBatch, out: &mut ForwardOutput) -> Result<(), BackendError> {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        if self.record {
            self.seen.push(batch.clone());
        }
        self.calls += 1;
        if self.fail_after.is_some_and(|n| self.calls > n) {
            return Err(BackendError::Runtime(format!("scripted failure at call {}", self.calls)));
        }
        let (num_actions, drift) = match &self.script {
            Script::Synthetic { num_actions } => (*num_actions, 0.0),
            Script::Drift { num_actions, after } => {
                (*num_actions, if self.calls > *after { 5.0 } else { 0.0 })
            }
            Script::Replay(_) => (0, 0.0),
        };
        match &mut self.script {
            Script::Replay(queue) => {
                *out = queue
                    .pop_front()
                    .ok_or_else(|| BackendError::Runtime("scripted backend ran out of outputs".into()))?;
            }
            Script::Synthetic { .. } | Script::Drift { .. } => {
                let (b, k) = (batch.batch, batch.max_options);
                out.batch = b;
                out.max_options = k;
                out.num_actions = num_actions;
                out.logits.clear();
                for r in 0..b {
                    for j in 0..k {
                        let v = if batch.marker_mask[r * k + j] != 0 {
                            batch.marker_pos[r * k + j] as f32 * 0.01
                                + j as f32 * 0.1
                                + if j == 0 { drift } else { 0.0 }
                        } else {
                            -1e4
                        };
                        out.logits.push(v);
                    }
                }
                out.action_logits.clear();
                for _ in 0..b {
                    out.action_logits.push(0.5);
                    out.action_logits.extend(std::iter::repeat_n(-0.5, num_actions.saturating_sub(1)));
                }
            }
        }
        Ok(())
    }
}
