//! The raw record: the one owner of the JSONL format every `speed`, `energy`, `trace run` and
//! `snake` run streams to disk and `summary` reads, audits and re-derives. One JSON object per
//! line, written as the run goes (header, warm-ups, each block followed by its calls, errors,
//! footer). Flushed and synced after every block, so a crash or Ctrl-C keeps everything up to
//! the last block; a file without a footer is an incomplete run.
//!
//! Energy runs add: the sensor and energy settings in the header, the readings taken before
//! measuring (`probe`, right after the header), every power sample as it
//! arrives (flushed per sample), every idle window, the sampler's report, per-block energy
//! (only for a run that was not rejected) and a footer status `complete`, `rejected` (with
//! every reason) or `incomplete`. Fields that `speed` does not use are left out of its lines,
//! so its records are unchanged.
//!
//! - this file: the record types ([`Header`], [`Record`], …), the schema version, and the
//!   block order a header's plan records ([`balanced_order`]);
//! - [`write`](mod@write): the writer ([`RawWriter`]), the raw file as a sink that stops at
//!   its first error ([`FileSink`]), what a cut record holds ([`cut_note`]), and
//!   [`append_correction`];
//! - [`read`](mod@read): the streaming reader ([`read()`], [`RawRun`], [`RawError`]), the file
//!   digest, the samples and probes of a run;
//! - [`check`]: every invariant the writer guarantees, checked on the records themselves
//!   (record kinds legal for the header's kind, arms and requests the header lists, order,
//!   spans on the run's clock, the footer's wall clock);
//! - [`whole`]: the whole balanced cycles at the start of an incomplete record, cut out as the
//!   record of a shorter plan;
//! - [`synthetic`]: a record shaped like the published run, for tests and benches.
//!
//! No other module parses these lines: everything else reads and writes them through this one
//! (`architecture.rs`'s test `only_the_record_module_parses_raw_records` fails on code
//! elsewhere that deserializes the raw types or picks lines by their tag).

pub mod check;
pub mod model;
pub mod provenance;
pub mod read;
pub mod status;
pub mod synthetic;
pub mod whole;
pub mod write;

#[cfg(test)]
mod tests;

pub use read::{
    file_digest, is_raw_record, probes, read, samples, RawError, RawRun, MAX_LINE_BYTES, MIN_SCHEMA_VERSION,
};
pub use write::{append_correction, cut_note, FileSink, RawWriter};

use serde::{Deserialize, Serialize};

use crate::energy::idle::BlockEnergy;
use crate::energy::run::RejectionDetail;
use crate::host::{HostInfo, MeasuringThread};
use crate::power::sampler::{Sample, SamplerReport};
use crate::power::{PowerBoundary, SensorInfo};
use crate::record::model::ModelInfo;
use crate::record::provenance::{Provenance, ToolInfo};
use crate::record::status::RunStatus;

/// Current raw schema version. 2 adds `probe` records (the readings an energy run takes before
/// measuring); every version-1 record reads unchanged.
pub const SCHEMA_VERSION: u32 = 2;

/// One arm as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmInfo {
    /// User-given name.
    pub name: String,
    /// Backend spec.
    pub spec: String,
    /// Backend name.
    pub backend: String,
    /// Weight precision.
    pub precision: String,
    /// Device description.
    pub device: String,
    /// sha256 of the weights it loaded.
    pub fingerprint: String,
    /// Rows per call.
    pub batch: usize,
    /// Padded length.
    pub length: usize,
    /// Option slots.
    pub max_options: usize,
    /// What a reader must know to read this arm's numbers (see `BackendInfo::notes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The BLAS library behind the arm's matrix products (see `BackendInfo::blas`); absent
    /// for engines with their own kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blas: Option<String>,
    /// Requests per call of this arm (`speed --batch 1,2,4`, a sweep: each value its own arm);
    /// absent: the plan's `batch`, as in every record without a sweep (additive, no version
    /// bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_call: Option<usize>,
    /// Worker threads the arm's engine was built with (`speed --threads N[,M…]`); absent: the
    /// engine's default (the host's cores, or none for an engine without a thread count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

impl ArmInfo {
    /// The header entry of an arm named `name`, built from `spec`, whose backend reports `info`.
    pub fn describe(name: &str, spec: &str, info: &crate::backend::BackendInfo) -> Self {
        Self {
            name: name.to_string(),
            spec: spec.to_string(),
            backend: info.name.clone(),
            precision: info.precision.clone(),
            device: info.device.clone(),
            fingerprint: info.fingerprint.clone(),
            batch: info.shapes.batch_size,
            length: info.shapes.max_length,
            max_options: info.shapes.max_options,
            notes: info.notes.clone(),
            blas: info.blas.clone(),
            requests_per_call: None,
            threads: None,
        }
    }

    /// Whether the arm ran the scripted backend (`mock:…`), which does no model arithmetic and
    /// is never a measurement of a model. Read from the recorded `backend` name, so it answers
    /// for arms read back from raw files too.
    pub fn is_scripted(&self) -> bool {
        self.backend == crate::backend::mock::NAME
    }

    /// Whether this arm runs the same model on the same engine as `other`, so that measuring
    /// both measures one thing twice. A reference runtime's fingerprint is its checkpoint's,
    /// not the weights it computes with, so its precision must match too (laya at FP32 and at
    /// FP16 autocast read one checkpoint). Arms of a sweep that differ in requests per call or
    /// threads run one model in different configurations: what they measure is that difference,
    /// not the run's noise, so they are not the same.
    pub fn same_model_as(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
            && self.backend == other.backend
            && self.requests_per_call == other.requests_per_call
            && self.threads == other.threads
            && !self.is_scripted()
            && (!self.spec.starts_with("ref:") || self.precision == other.precision)
    }

    /// Whether the arm's arithmetic is the model's, so that a FLOP rate of it means something:
    /// not a scripted arm, and not a `ref:factory:` callable (whatever it computes is its own).
    pub fn runs_the_model(&self) -> bool {
        !self.is_scripted() && !self.spec.starts_with("ref:factory:")
    }
}

/// The workload as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// `invoice` or a file path.
    pub name: String,
    /// Requests cycled.
    pub requests: usize,
    /// Real tokens of each request's rows.
    pub tokens_per_row: Vec<Vec<usize>>,
    /// Requested exact row length (invoice workload).
    pub target_tokens: Option<usize>,
    /// Padded graph length.
    pub length: usize,
}

/// The schedule as the header records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInfo {
    /// Balanced cycles.
    pub cycles: usize,
    /// Block length in seconds (saturated mode).
    pub block_seconds: Option<f64>,
    /// Block length in calls.
    pub block_calls: Option<u64>,
    /// Warm-up calls per arm.
    pub warmup_calls: usize,
    /// Arm name of every block, in order.
    pub order: Vec<String>,
    /// Requests per call (`speed --batch N`): each call answers this many consecutive
    /// requests in one packed forward, so a block's decisions are its calls × this. Absent in
    /// records written before the flag and in every run at 1 (additive, no version bump). An
    /// arm's own `requests_per_call` (a `--batch 1,2,4` sweep) overrides it
    /// ([`Header::requests_per_call`]).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch: usize,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// First line of a raw file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Schema version of this file.
    pub schema_version: u32,
    /// `speed` or `energy`.
    pub kind: String,
    /// Writer.
    pub tool: ToolInfo,
    /// argv.
    pub command_line: Vec<String>,
    /// Wall-clock time of the clock origin, Unix seconds.
    pub started_unix_s: f64,
    /// What `*_ns` fields count.
    pub clock: String,
    /// Machine.
    pub host: HostInfo,
    /// Model spec and its shape.
    pub model: ModelInfo,
    /// Arms.
    pub arms: Vec<ArmInfo>,
    /// Workload.
    pub workload: WorkloadInfo,
    /// Schedule.
    pub plan: PlanInfo,
    /// Energy runs: the power sensor, as opened (the final notes are in the sampler record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensor: Option<SensorInfo>,
    /// Energy runs: the energy protocol's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyPlanInfo>,
    /// Energy runs: what the sensor's total measures (`gpu-board`, `whole-system`, ...; see
    /// [`PowerBoundary`]). Absent in records older than this field (additive, no version
    /// bump): [`Header::power_boundary`] then derives it from the recorded sensor kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_boundary: Option<PowerBoundary>,
    /// The measuring thread's QoS class on macOS (`measuring_thread_qos: "user-interactive"`)
    /// or why it could not be set (`measuring_thread_qos_error`); both absent elsewhere and in
    /// records older than these fields. Flattened: its fields are the header's own.
    #[serde(flatten)]
    pub measuring_thread: MeasuringThread,
}

impl Header {
    /// Requests per call of arm `arm` (its `requests_per_call` in a sweep, else the plan's
    /// `batch`; at least 1, and the plan's for an arm the header does not name).
    pub fn requests_per_call(&self, arm: &str) -> usize {
        self.arms
            .iter()
            .find(|a| a.name == arm)
            .and_then(|a| a.requests_per_call)
            .unwrap_or(self.plan.batch)
            .max(1)
    }

    /// Requests answered (decisions) by `calls` calls of arm `arm`: calls × its
    /// [`requests per call`](Self::requests_per_call).
    pub fn decisions(&self, arm: &str, calls: u64) -> u64 {
        calls * self.requests_per_call(arm) as u64
    }

    /// The header's writer and machine, for a report of `schema_version` derived from it.
    pub fn provenance(&self, schema_version: u32) -> Provenance {
        Provenance::derived(schema_version, &self.tool, &self.host)
    }

    /// What the run's power and energy figures measure: the recorded `power_boundary`, else
    /// (a record older than the field) the boundary its sensor kind declares where that is
    /// unambiguous (`pstr` the whole system, `nvml…` the GPU board, `rapl` the CPU package),
    /// else unknown. A speed record has no sensor: unknown.
    pub fn power_boundary(&self) -> PowerBoundary {
        match (&self.power_boundary, &self.sensor) {
            (Some(b), _) => b.clone(),
            (None, Some(s)) => PowerBoundary::of_sensor(s),
            (None, None) => PowerBoundary::Unknown,
        }
    }
}

/// The energy protocol's settings as the header records them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyPlanInfo {
    /// Sampler interval, s.
    pub sample_interval_s: f64,
    /// Why the interval is not `--sample-interval` or its default (a sensor's measured update
    /// period); absent otherwise (and in records older than this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval_reason: Option<String>,
    /// Idle window length, s.
    pub idle_seconds: f64,
    /// Discarded start of each idle window, s.
    pub idle_discard_s: f64,
    /// Readings above this are rejected, W.
    pub max_watts: f64,
    /// Longest allowed gap between samples, max(2 s, 3 × interval), s.
    pub max_gap_s: f64,
    /// Equal-load mode: requests per second for every arm; `None`: saturated blocks.
    pub rate_hz: Option<f64>,
    /// Equal-load mode: calls in every block.
    pub calls_per_block: Option<u64>,
}

/// One line of a raw file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// See [`Header`].
    Header(Box<Header>),
    /// An arm's warm-up (outside every measured interval).
    Warmup {
        /// Arm name.
        arm: String,
        /// Calls made.
        calls: u64,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End.
        end_ns: u64,
        /// Reference answer per request.
        answers: Vec<String>,
        /// Each request's warm-up result dict as the arm stated it (a runtime's in its own
        /// shape: fields it lacks stay absent), so its answers can be compared with another
        /// arm's from the record alone; empty in records written before it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        results: Vec<serde_json::Value>,
        /// `--batch N` above 1: whether every request's batched warm-up result equals its
        /// result answered alone (one request per call, as `--batch 1` runs it); absent at 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unbatched_identical: Option<bool>,
    },
    /// A finished block; its calls follow.
    Block {
        /// Block index.
        index: u32,
        /// Balanced cycle.
        cycle: u32,
        /// Arm name.
        arm: String,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End.
        end_ns: u64,
        /// Calls completed.
        calls: u64,
        /// Calls whose result differed from warm-up.
        unstable_calls: u64,
        /// Resident memory of the process after the block (shared by every arm: all models are
        /// resident), `null` where the OS does not say; the key is required.
        #[serde(deserialize_with = "Option::deserialize")]
        rss_bytes: Option<u64>,
        /// Equal-load mode: calls the block was scheduled to make.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scheduled_calls: Option<u64>,
        /// Equal-load mode: calls that ended after the next call was due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missed_deadlines: Option<u64>,
        /// The block was cut short (interrupt, sensor stopped, failed call).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended_early: bool,
        /// CPU time the hypervisor gave to other guests while the block ran, and all CPU time
        /// in that interval (every CPU, `USER_HZ` ticks of `/proc/stat`); absent where the OS
        /// keeps no such counter (added in schema 2.x without a version bump: older readers
        /// ignore it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host_steal: Option<crate::stats::steal::StealTicks>,
    },
    /// One timed call.
    Call {
        /// Block index.
        block: u32,
        /// Arm name.
        arm: String,
        /// Request index (`--batch N`: the first of the call's requests).
        state: u32,
        /// `--batch N` above 1: requests the call answered in one packed forward, `state`,
        /// `state + 1`, ... (cycling through the workload); absent for one request per call.
        /// Its `answer` is then every request's answers joined by ` | `, in order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requests: Option<u32>,
        /// Start, ns since the origin.
        start_ns: u64,
        /// Duration over the full boundary, ns (a reference arm: the round trip to its worker).
        duration_ns: u64,
        /// A reference arm (`ref:…`): the runtime's own predict, timed in its worker, ns.
        /// Absent for our arms; added in schema 1.x without a version bump (older readers
        /// ignore it; see docs/reference-runtimes.md).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime_ns: Option<u64>,
        /// Selected answers, `qid=label;...`.
        answer: String,
        /// Equal to the arm's warm-up result.
        stable: bool,
        /// Equal-load mode: when the call was due to start, ns since the origin.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scheduled_ns: Option<u64>,
        /// Equal-load mode: the call ended after the next call was due (made and counted).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        missed_deadline: bool,
    },
    /// An idle window (energy runs): the benchmark thread slept, no calls were made.
    Idle {
        /// 0 before the first block, `i + 1` after block `i`.
        index: u32,
        /// Start, ns since the origin.
        start_ns: u64,
        /// End, ns since the origin.
        end_ns: u64,
        /// Cut short by an interrupt or a stopped sensor.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        ended_early: bool,
    },
    /// One power sample exactly as the sampler stamped it (reading or fault).
    Sample(Box<Sample>),
    /// A reading taken before measuring (the probe that proves the sensor works; energy runs,
    /// schema 2), stamped on the run's clock and numbered from 0 on its own; judged by the rules
    /// every single reading must pass.
    Probe(Box<Sample>),
    /// The sampler's own report at the end: counts, its CPU time, why it stopped.
    Sampler(Box<SamplerReport>),
    /// A block's energy, written after the run for a run that was not rejected.
    BlockEnergy {
        /// Block index.
        index: u32,
        /// Arm name.
        arm: String,
        /// The figures (`null` with `missing_reason` when they could not be computed).
        energy: Option<BlockEnergy>,
        /// Why `energy` is `null`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missing_reason: Option<String>,
    },
    /// A failure that ended the run.
    Error {
        /// Arm name.
        arm: String,
        /// Block, if inside one (`null` otherwise; the key is required).
        #[serde(deserialize_with = "Option::deserialize")]
        block: Option<u32>,
        /// What failed.
        message: String,
    },
    /// A correction to the header's metadata, appended later by `summary --correct` (tag
    /// `metadata_correction`); the original field and every measurement stay unchanged.
    #[serde(rename = "metadata_correction")]
    Correction {
        /// When the correction was appended, Unix seconds.
        timestamp_unix_s: f64,
        /// The header field it corrects, as a dotted path (`host.cpu_model`, `arms.1.precision`).
        field: String,
        /// What is wrong and what is right, in words.
        note: String,
    },
    /// Last line of a finished run.
    Footer {
        /// `complete`, `incomplete` or `failed`; energy runs also `rejected`.
        status: RunStatus,
        /// Wall-clock end, Unix seconds.
        ended_unix_s: f64,
        /// Timed calls recorded.
        total_calls: u64,
        /// Why the run is not complete (interrupt, sensor stopped, failure).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Energy runs: every rule the samples violated (the run is rejected).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rejections: Vec<RejectionDetail>,
    },
}

impl Record {
    /// The record's tag (`"record"` in its line): `header`, `warmup`, `block`, `call`, `idle`,
    /// `sample`, `probe`, `sampler`, `block_energy`, `error`, `metadata_correction`, `footer`.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Header(_) => "header",
            Record::Warmup { .. } => "warmup",
            Record::Block { .. } => "block",
            Record::Call { .. } => "call",
            Record::Idle { .. } => "idle",
            Record::Sample(_) => "sample",
            Record::Probe(_) => "probe",
            Record::Sampler(_) => "sampler",
            Record::BlockEnergy { .. } => "block_energy",
            Record::Error { .. } => "error",
            Record::Correction { .. } => "metadata_correction",
            Record::Footer { .. } => "footer",
        }
    }

    /// A `footer` record's fields, as [`FooterRec`].
    pub fn footer(&self) -> Option<FooterRec> {
        match self {
            Record::Footer { status, total_calls, reason, rejections, .. } => Some(FooterRec {
                status: *status,
                total_calls: *total_calls,
                reason: reason.clone(),
                rejections: rejections.clone(),
            }),
            _ => None,
        }
    }

    /// A `block_energy` record's block index and figures, as [`RecordedEnergy`].
    pub fn block_energy(&self) -> Option<(u32, RecordedEnergy)> {
        match self {
            Record::BlockEnergy { index, arm, energy, missing_reason } => Some((
                *index,
                RecordedEnergy { arm: arm.clone(), energy: *energy, missing_reason: missing_reason.clone() },
            )),
            _ => None,
        }
    }
}

/// The footer as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct FooterRec {
    /// How the run ended, as the footer says.
    pub status: RunStatus,
    /// Calls it claims.
    pub total_calls: u64,
    /// Why not complete.
    pub reason: Option<String>,
    /// Rejections it recorded.
    pub rejections: Vec<RejectionDetail>,
}

/// A recorded `block_energy` line.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEnergy {
    /// Arm name.
    pub arm: String,
    /// The figures.
    pub energy: Option<BlockEnergy>,
    /// Why `None`.
    pub missing_reason: Option<String>,
}

/// The block order of `cycles` balanced cycles over `arms` arms, as `(cycle, arm)`: each cycle
/// the arms in order, then reversed (`a b c c b a`). A header's `plan.order` is this order by
/// name (or an explicit one), and `summary` checks it against this.
pub fn balanced_order(arms: usize, cycles: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(arms * cycles * 2);
    for c in 0..cycles {
        out.extend((0..arms).map(|a| (c, a)));
        out.extend((0..arms).rev().map(|a| (c, a)));
    }
    out
}
