//! A run recording itself: the raw header and footer, the warm-up and per-block records built
//! from the run's state (the types and the file are [`crate::record`]'s), and the one
//! [`Recorder`] every run (`speed`, `energy`, `trace run`) writes through. A recorder writes to
//! a [`Sink`]: the raw file itself ([`FileSink`]), or the channel of the writer thread that
//! owns the file while a sampler streams readings into it ([`spawn_writer`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{
    answer_label, balanced_order, Arm, BlockLimit, BlockRecord, CallRecord, IdleRecord, Observer, Plan,
    RunError, WarmupRecord,
};
use crate::energy::run::RejectionDetail;
use crate::laya::bundle::Bundle;
use crate::laya::host::{HostError, StateResult};
use crate::power::sampler::Sample;
use crate::record::model::ModelInfo;
use crate::record::provenance::Provenance;
use crate::record::status::RunStatus;
use crate::record::write::named;
use crate::record::{self, ArmInfo, FileSink, Header, PlanInfo, RawWriter, Record, WorkloadInfo};

use super::outputs::{lock_raw, RawLock};
use super::setup::Setup;
use super::workload::WorkloadPlan;
use crate::error::Error;
use crate::time::unix_now;

/// Where a run records itself and what may stop it.
#[derive(Clone, Copy)]
pub struct RunIo<'a> {
    /// The new raw record.
    pub raw: &'a Path,
    /// Replace an existing raw record instead of refusing.
    pub overwrite: bool,
    /// Raised (by the Ctrl-C/SIGTERM/SIGHUP handler) to stop cleanly between calls.
    pub stop: Option<&'a AtomicBool>,
    /// Raised by a second signal: a stopping run skips what takes time (it still closes its
    /// record).
    pub hurry: Option<&'a AtomicBool>,
}

/// An arm's identity for the raw header: name, spec, backend, precision, device, fingerprint
/// and shape.
pub fn arm_info(arm: &Arm<'_>) -> ArmInfo {
    ArmInfo {
        requests_per_call: arm.sweep.requests_per_call,
        threads: arm.sweep.threads,
        ..ArmInfo::describe(&arm.name, &arm.spec, arm.backend.info())
    }
}

/// What a header needs besides the set-up and the plan.
pub struct HeaderInput<'a> {
    /// `speed`, `energy` or `trace-run`.
    pub kind: &'a str,
    /// The command line, as the user typed it.
    pub command_line: Vec<String>,
    /// The workload plan.
    pub workload: &'a WorkloadPlan,
    /// An explicit block order of (cycle, arm) instead of the balanced one.
    pub order: Option<&'a [(usize, usize)]>,
}

/// The raw header (without sensor or energy settings, which `energy` adds); its start time is
/// set when the run's clock starts. Built on the thread that then runs the timed loop (`speed`,
/// `energy`, `trace run`), right before it: it readies that thread for measuring
/// ([`crate::host::prepare_measuring_thread`]: QoS user-interactive on macOS, nothing
/// elsewhere) and records the outcome.
pub fn header(input: &HeaderInput<'_>, bundle: &Bundle, setup: &Setup<'_>, plan: &Plan) -> Header {
    let arms = &setup.arms;
    let order: Vec<String> = match input.order {
        Some(o) => o.iter().map(|&(_, a)| arms[a].name.clone()).collect(),
        None => balanced_order(arms.len(), plan.cycles).iter().map(|&(_, a)| arms[a].name.clone()).collect(),
    };
    // The header's own field order puts `kind` and `command_line` between these three.
    let Provenance { schema_version, tool, host } = Provenance::current(record::SCHEMA_VERSION);
    Header {
        schema_version,
        kind: input.kind.into(),
        tool,
        command_line: input.command_line.clone(),
        started_unix_s: 0.0,
        clock: "monotonic ns since started_unix_s".into(),
        host,
        model: ModelInfo::describe(bundle),
        arms: arms.iter().map(arm_info).collect(),
        workload: WorkloadInfo {
            name: setup.built.name.clone(),
            requests: setup.built.requests.len(),
            tokens_per_row: setup.built.tokens_per_row.clone(),
            target_tokens: input.workload.is_invoice().then_some(input.workload.tokens),
            length: input.workload.length,
        },
        plan: PlanInfo {
            cycles: if input.order.is_some() { 1 } else { plan.cycles },
            block_seconds: match plan.block {
                BlockLimit::Duration(d) => Some(d.as_secs_f64()),
                BlockLimit::Calls(_) => None,
            },
            block_calls: match plan.block {
                BlockLimit::Calls(k) => Some(k),
                BlockLimit::Duration(_) => None,
            },
            warmup_calls: plan.warmup_calls,
            order,
            batch: plan.batch,
        },
        sensor: None,
        energy: None,
        power_boundary: None,
        measuring_thread: crate::host::prepare_measuring_thread(),
    }
}

/// The last record of a run.
pub fn footer(
    status: RunStatus,
    total_calls: u64,
    reason: Option<String>,
    rejections: Vec<RejectionDetail>,
) -> Record {
    Record::Footer { status, ended_unix_s: unix_now(), total_calls, reason, rejections }
}

/// The warm-up record and its reference answers per request.
pub fn warmup_record(arms: &[Arm<'_>], rec: &WarmupRecord) -> (Record, Vec<String>) {
    let answers: Vec<String> = rec.results.iter().map(answer_label).collect();
    let record = Record::Warmup {
        arm: arms[rec.arm].name.clone(),
        calls: rec.calls,
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
        answers: answers.clone(),
        results: rec.results.iter().map(StateResult::to_json).collect(),
        unbatched_identical: (!rec.unbatched.is_empty()).then(|| rec.unbatched == rec.results),
    };
    (record, answers)
}

/// A finished block as raw records: the block, then each of its calls. `answers` holds every
/// arm's warm-up answers; stable calls repeat them, unstable calls carry their own.
pub fn block_records(
    arms: &[Arm<'_>],
    rec: &BlockRecord,
    calls: &[CallRecord],
    unstable: &[(usize, StateResult)],
    answers: &[Vec<String>],
) -> Vec<Record> {
    let name = &arms[rec.arm].name;
    let mut out = Vec::with_capacity(calls.len() + 1);
    out.push(Record::Block {
        index: rec.index,
        cycle: rec.cycle,
        arm: name.clone(),
        start_ns: rec.start_ns,
        end_ns: rec.end_ns,
        calls: rec.calls,
        unstable_calls: rec.unstable_calls,
        rss_bytes: crate::host::current_rss_bytes(),
        scheduled_calls: rec.scheduled_calls,
        missed_deadlines: rec.scheduled_calls.map(|_| rec.missed_deadlines),
        ended_early: rec.ended_early,
        host_steal: rec.steal,
    });
    let mine = answers.get(rec.arm).map(Vec::as_slice).unwrap_or_default();
    let warm = |s: usize| mine.get(s % mine.len().max(1)).cloned().unwrap_or_default();
    let mut unstable_iter = unstable.iter().peekable();
    for (i, c) in calls.iter().enumerate() {
        // An unstable call carries its own result(s): one entry per request it answered.
        let mut own = Vec::new();
        while let Some((_, r)) = unstable_iter.next_if(|(j, _)| *j == i) {
            own.push(answer_label(r));
        }
        let answer = match (own.is_empty(), c.requests) {
            (false, _) => own.join(" | "),
            (true, 0 | 1) => warm(c.state as usize),
            (true, k) => (0..k as usize).map(|j| warm(c.state as usize + j)).collect::<Vec<_>>().join(" | "),
        };
        out.push(Record::Call {
            block: c.block,
            arm: name.clone(),
            state: c.state,
            requests: (c.requests > 1).then_some(c.requests),
            start_ns: c.start_ns,
            duration_ns: c.duration_ns,
            runtime_ns: c.runtime_ns,
            answer,
            stable: c.stable,
            scheduled_ns: c.scheduled_ns,
            missed_deadline: c.missed_deadline,
        });
    }
    out
}

/// Where a recorder's records go.
pub trait Sink {
    /// Write one record (buffered).
    fn record(&mut self, record: Record) -> std::io::Result<()>;
    /// Make everything written so far durable (flush and fsync).
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Sink for RawWriter {
    fn record(&mut self, record: Record) -> std::io::Result<()> {
        self.write(&record)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        RawWriter::sync(self)
    }
}

/// Open the raw record at `path` for a run: opened and locked first ([`lock_raw`]: a regular
/// file no other run holds; an existing one only with `replace`), then emptied for this run.
/// Keep the lock until the footer is written. Every failure is a bad input (exit 2) naming the
/// file.
pub fn open_raw(path: &Path, replace: bool) -> Result<(RawLock, RawWriter), Error> {
    let lock = lock_raw(path, replace)?;
    // Ours now (created or locked by this run): empty it.
    let writer = RawWriter::open(path, true)
        .map_err(|e| Error::input(format!("cannot create the raw file {}", path.display())).because(e))?;
    Ok((lock, writer))
}

impl Sink for FileSink {
    fn record(&mut self, record: Record) -> std::io::Result<()> {
        self.write(&record)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        FileSink::sync(self)
    }
}

/// What the writer thread receives.
pub enum Msg {
    /// A power reading: written and flushed at once.
    Sample(Sample),
    /// A record.
    Record(Record),
    /// Sync the file.
    Sync,
}

/// The writer thread's channel as a sink.
pub struct ChannelSink(pub Sender<Msg>);

impl ChannelSink {
    fn send(&self, msg: Msg) -> std::io::Result<()> {
        self.0.send(msg).map_err(|_| std::io::Error::other("the raw writer thread stopped"))
    }
}

impl Sink for ChannelSink {
    fn record(&mut self, record: Record) -> std::io::Result<()> {
        self.send(Msg::Record(record))
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.send(Msg::Sync)
    }
}

/// What the writer thread hands back: the file, every sample it wrote, the first error.
pub struct Written {
    /// The raw file, for the records appended after the run.
    pub raw: RawWriter,
    /// Every sample, in arrival order.
    pub samples: Vec<Sample>,
    /// The first write error, if any.
    pub error: Option<std::io::Error>,
}

/// The thread that owns the raw file: samples are flushed as they arrive (a SIGKILL keeps
/// them), records are synced when the recorder asks (after each block and idle window). On
/// the first write error (naming the file) it raises `failed`, so the run stops between calls
/// ([`Controls::failed`](super::Controls::failed)), and writes nothing more (a record after a cut line would hide
/// the cut); the samples still arriving are kept in memory.
pub fn spawn_writer(
    mut raw: RawWriter,
    rx: mpsc::Receiver<Msg>,
    failed: Arc<AtomicBool>,
) -> std::io::Result<WriterThread> {
    let handle = std::thread::Builder::new().name("laya-raw-writer".into()).spawn(move || {
        let mut samples = Vec::new();
        let mut error: Option<std::io::Error> = None;
        for msg in rx {
            let result = match msg {
                Msg::Sample(s) => {
                    let r = match error {
                        None => raw.write(&Record::Sample(Box::new(s.clone()))).and_then(|_| raw.flush()),
                        Some(_) => Ok(()),
                    };
                    samples.push(s);
                    r
                }
                _ if error.is_some() => Ok(()),
                Msg::Record(r) => raw.write(&r),
                Msg::Sync => raw.sync(),
            };
            if let Err(e) = result {
                error = Some(named(raw.path(), e));
                failed.store(true, Ordering::SeqCst);
            }
        }
        Written { raw, samples, error }
    })?;
    Ok(WriterThread { handle: Some(handle) })
}

/// The raw writer thread of a run ([`spawn_writer`]). It ends when every sender of its
/// channel is gone; [`WriterThread::join`] waits for that and gives back what it wrote. A
/// guard dropped without `join` (an early return) still waits for the thread, so the file is
/// never left half-written by a thread that outlives the run: declare it before the senders,
/// which are then dropped first.
pub struct WriterThread {
    handle: Option<JoinHandle<Written>>,
}

impl WriterThread {
    /// Wait for the thread (every sender must be dropped first) and take what it wrote.
    pub fn join(mut self) -> Result<Written, Error> {
        match self.handle.take() {
            Some(handle) => handle.join().map_err(|_| Error::run("the raw writer thread panicked")),
            None => unreachable!("a WriterThread is joined once: `join` takes it by value"),
        }
    }
}

impl Drop for WriterThread {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            // (its result is dropped: the early return that got here reports the failure)
            let _ = handle.join();
        }
    }
}

/// The observer that records every run: each record goes to the sink as the timed loop hands
/// it over (between blocks), each block and idle window is synced. The watchers of the run
/// (progress bar, ready file) are observers beside it ([`super::Observers`]).
pub struct Recorder<S: Sink> {
    /// Where the records go.
    pub sink: S,
    /// Warm-up answers per arm, as [`block_records`] reads them.
    answers: Vec<Vec<String>>,
    /// Each block's process RSS, bytes.
    pub rss: BTreeMap<u32, Option<u64>>,
    /// Timed calls recorded.
    pub total_calls: u64,
}

impl<S: Sink> Recorder<S> {
    /// A recorder writing to `sink`.
    pub fn new(sink: S) -> Self {
        Self { sink, answers: Vec::new(), rss: BTreeMap::new(), total_calls: 0 }
    }
}

impl<S: Sink> Observer for Recorder<S> {
    fn warmup(&mut self, arms: &[Arm<'_>], rec: &WarmupRecord) -> Result<(), RunError> {
        let (record, answers) = warmup_record(arms, rec);
        self.sink.record(record)?;
        self.answers.push(answers);
        self.sink.sync()?;
        Ok(())
    }

    fn block(
        &mut self,
        arms: &[Arm<'_>],
        rec: &BlockRecord,
        calls: &[CallRecord],
        unstable: &[(usize, StateResult)],
    ) -> Result<(), RunError> {
        for r in block_records(arms, rec, calls, unstable, &self.answers) {
            if let Record::Block { index, rss_bytes, .. } = &r {
                self.rss.insert(*index, *rss_bytes);
            }
            self.sink.record(r)?;
        }
        self.total_calls += calls.len() as u64;
        Ok(self.sink.sync()?)
    }

    fn failure(
        &mut self,
        arms: &[Arm<'_>],
        block: Option<u32>,
        arm: usize,
        error: &HostError,
    ) -> Result<(), RunError> {
        self.sink.record(Record::Error { arm: arms[arm].name.clone(), block, message: error.to_string() })?;
        Ok(self.sink.sync()?)
    }

    fn idle(&mut self, _arms: &[Arm<'_>], rec: &IdleRecord) -> Result<(), RunError> {
        self.sink.record(Record::Idle {
            index: rec.index,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
            ended_early: rec.ended_early,
        })?;
        Ok(self.sink.sync()?)
    }
}

#[cfg(test)]
mod writer_tests {
    use super::{spawn_writer, Msg};
    use crate::record::status::RunStatus;
    use crate::record::RawWriter;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};

    #[test]
    fn a_writer_guard_dropped_early_still_finishes_the_file_and_join_gives_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.raw.jsonl");
        let footer = || super::footer(RunStatus::Failed, 0, Some("x".into()), vec![]);
        {
            let (first_tx, rx) = mpsc::channel::<Msg>();
            let guard =
                spawn_writer(RawWriter::open(&path, false).unwrap(), rx, Arc::new(AtomicBool::new(false)))
                    .unwrap();
            let tx = first_tx;
            tx.send(Msg::Record(footer())).unwrap();
            tx.send(Msg::Sync).unwrap();
            // an early return: the sender goes first, then the guard joins
            let _ = &guard;
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        let (tx, rx) = mpsc::channel::<Msg>();
        let guard = spawn_writer(RawWriter::open(&path, true).unwrap(), rx, Arc::new(AtomicBool::new(false)))
            .unwrap();
        tx.send(Msg::Record(footer())).unwrap();
        drop(tx);
        let written = guard.join().unwrap();
        assert!(written.error.is_none() && written.samples.is_empty());
    }
}
