//! The `laya-coreml-snake-v1` recording (JSONL, docs/snake.md §6.2): serde types, a line writer, a
//! validating reader, and a model-free replay check (§7 test 8).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::game::{Game, GameError, Snapshot};
use super::policy::Decision;

/// The `format` value of the metadata line.
pub const RECORDING_FORMAT: &str = "laya-coreml-snake-v1";

/// A recording that cannot be written, read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    /// Reading or writing the stream failed.
    #[error("recording I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a valid record.
    #[error("recording line {line}: {source}")]
    Json {
        /// 1-based line number.
        line: usize,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// Serializing a record failed.
    #[error("recording record could not be serialized: {0}")]
    Serialize(#[source] serde_json::Error),
    /// No metadata line or no frame.
    #[error("Recording must contain metadata and real decision frames")]
    Incomplete,
    /// The metadata names another format.
    #[error("the metadata's `format` is {found:?}; this reader reads {RECORDING_FORMAT:?} recordings")]
    Format {
        /// The `format` value found.
        found: String,
    },
    /// Frame timestamps are not finite, non-negative and strictly increasing.
    #[error("Recording timestamps must strictly increase (frame {frame}: at = {at})")]
    Timestamps {
        /// 0-based frame number.
        frame: usize,
        /// Its `at`.
        at: f64,
    },
    /// The recorded frames do not follow from the rules and the executed moves.
    #[error("replay diverges at frame {frame}: {problem}")]
    Diverged {
        /// 0-based frame number (`frames.len()` for the end record).
        frame: usize,
        /// What differs.
        problem: String,
    },
    /// A recorded game cannot be rebuilt or stepped.
    #[error("replay failed at frame {frame}: {source}")]
    Game {
        /// 0-based frame number.
        frame: usize,
        /// The rules error.
        #[source]
        source: GameError,
    },
}

impl crate::error::Classify for RecordingError {
    /// A stream that cannot be read or written failed the run; a recording that does not
    /// parse is a bad input.
    fn kind(&self) -> crate::error::Kind {
        match self {
            RecordingError::Io(_) => crate::error::Kind::Run,
            _ => crate::error::Kind::Input,
        }
    }
}

/// The first line: what was recorded and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always [`RECORDING_FORMAT`].
    pub format: String,
    /// ISO-8601 creation time (UTC).
    pub created_utc: String,
    /// Model metadata (§6.1); kept as an open object because its keys depend on the engine.
    pub model: Map<String, Value>,
    /// Every CLI setting of the run.
    pub settings: Map<String, Value>,
    /// Free-text note.
    pub note: String,
}

/// Running statistics shown with a frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameStats {
    /// Hardware name.
    pub hardware: String,
    /// Engine label, e.g. `CPU+ANE · W8/FP16`.
    pub engine: String,
    /// Shield on.
    pub guarded: bool,
    /// Cumulative shield interventions of the run, this frame included.
    pub interventions: u64,
    /// Best score so far.
    pub best: usize,
    /// Round number, from 1.
    pub round: u64,
    /// Paused flag.
    pub paused: bool,
    /// Seconds since the run started.
    pub elapsed: f64,
    /// Decisions per second over the last 60 frames; `null` until two frames exist.
    pub steps_per_second: Option<f64>,
}

/// One decision: the board before the move, the decision and the stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// Seconds since the run started (finite, ≥ 0, strictly increasing).
    pub at: f64,
    /// The board before the executed move.
    pub game: Snapshot,
    /// The decision.
    pub decision: Decision,
    /// Running statistics.
    pub stats: FrameStats,
}

/// A round ended (death or win).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundEnd {
    /// Seconds since the run started.
    pub at: f64,
    /// The final board of the round.
    pub game: Snapshot,
}

/// The run summary printed at exit (§6.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Game steps taken.
    pub steps: u64,
    /// Model decisions made.
    pub inference_calls: u64,
    /// Run length.
    pub seconds: f64,
    /// `steps / seconds`.
    pub steps_per_second: f64,
    /// Score of the last game.
    pub score: usize,
    /// Length of the last game.
    pub length: usize,
    /// Best score of the run.
    pub best_score: usize,
    /// Total shield interventions.
    pub interventions: u64,
    /// Rounds that ended in death.
    pub deaths: u64,
    /// Shield on.
    pub guarded: bool,
    /// Always `"offline"`.
    pub network: String,
    /// Engine label.
    pub engine: String,
    /// Mean inference time, `null` if no inference ran.
    pub mean_inference_ms: Option<f64>,
}

/// The last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct End {
    /// The run summary.
    pub summary: Summary,
    /// The final board.
    pub game: Snapshot,
}

/// One JSONL line, tagged by `"type"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// `{"type": "metadata", …}`.
    Metadata(Metadata),
    /// `{"type": "frame", …}`.
    Frame(Box<Frame>),
    /// `{"type": "round_end", …}`.
    RoundEnd(RoundEnd),
    /// `{"type": "end", …}`.
    End(End),
}

/// Writes records as compact JSON lines, flushing after each.
#[derive(Debug)]
pub struct RecordingWriter<W: Write> {
    out: W,
}

impl<W: Write> RecordingWriter<W> {
    /// Wrap a stream.
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Append one record as a line and flush.
    pub fn write(&mut self, record: &Record) -> Result<(), RecordingError> {
        let line = serde_json::to_string(record).map_err(RecordingError::Serialize)?;
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(())
    }

    /// The underlying stream.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Check `--record PATH` before anything loads (exit 2): its folder exists and takes files,
/// and the file does not exist yet (recordings are never overwritten).
pub fn check_new_path(path: &Path) -> Result<(), crate::error::Error> {
    crate::run::outputs::check_folder("--record", path)?;
    if path.exists() {
        return Err(crate::error::Error::input(format!(
            "--record {}: the file exists; recordings are never overwritten, choose a new path",
            path.display()
        )));
    }
    Ok(())
}

/// Create the recording at `path` (a new file: exit 2 when it cannot be created, an existing
/// one included) and write its metadata line (exit 1 when that fails).
pub fn create(
    path: &Path,
    metadata: Metadata,
) -> Result<RecordingWriter<BufWriter<File>>, crate::error::Error> {
    let file = OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
        crate::error::Error::input(format!(
            "--record {}: cannot create the recording (a new file; recordings are never overwritten)",
            path.display()
        ))
        .because(e)
    })?;
    let mut writer = RecordingWriter::new(BufWriter::new(file));
    writer
        .write(&Record::Metadata(metadata))
        .map_err(|e| crate::error::Error::run(format!("cannot write {}", path.display())).because(e))?;
    Ok(writer)
}

/// A parsed recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// The metadata line (the last one if several).
    pub metadata: Metadata,
    /// Every record in file order, metadata included.
    pub records: Vec<Record>,
    /// The 1-based number of a last line cut short (no newline after it, not a whole record:
    /// the run was killed while writing it); it is left out and every line before it is read.
    pub cut_line: Option<usize>,
}

impl Recording {
    /// The frames in order.
    pub fn frames(&self) -> impl Iterator<Item = &Frame> {
        self.records.iter().filter_map(|r| match r {
            Record::Frame(f) => Some(f.as_ref()),
            _ => None,
        })
    }

    /// The end record, if the run finished cleanly.
    pub fn end(&self) -> Option<&End> {
        self.records.iter().find_map(|r| match r {
            Record::End(e) => Some(e),
            _ => None,
        })
    }
}

/// Read and validate a recording: every line a record, a metadata line, at least one frame,
/// frame times finite, non-negative and strictly increasing. A last line without its newline
/// whose JSON stops before it is whole was cut by a killed run: it is left out
/// ([`Recording::cut_line`]); any other bad line is an error naming it.
pub fn read_recording<R: BufRead>(mut input: R) -> Result<Recording, RecordingError> {
    let mut records = Vec::new();
    let mut cut_line = None;
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        number += 1;
        let whole = line.ends_with('\n');
        let text = line.trim_end_matches(['\n', '\r']);
        match serde_json::from_str::<Record>(text) {
            Ok(record) => records.push(record),
            Err(e) if !whole && e.is_eof() => {
                cut_line = Some(number);
                break;
            }
            Err(source) => return Err(RecordingError::Json { line: number, source }),
        }
    }
    let metadata = records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Metadata(m) => Some(m.clone()),
            _ => None,
        })
        .ok_or(RecordingError::Incomplete)?;
    if metadata.format != RECORDING_FORMAT {
        return Err(RecordingError::Format { found: metadata.format });
    }
    let recording = Recording { metadata, records, cut_line };
    let mut previous: Option<f64> = None;
    let mut frames = 0usize;
    for (index, frame) in recording.frames().enumerate() {
        let at = frame.at;
        if !at.is_finite() || at < 0.0 || previous.is_some_and(|p| at <= p) {
            return Err(RecordingError::Timestamps { frame: index, at });
        }
        previous = Some(at);
        frames += 1;
    }
    if frames == 0 {
        return Err(RecordingError::Incomplete);
    }
    Ok(recording)
}

/// What a successful replay established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySummary {
    /// Frames re-simulated.
    pub frames: usize,
    /// Rounds seen.
    pub rounds: usize,
    /// Interventions counted from the decisions.
    pub interventions: u64,
}

fn diverged(frame: usize, problem: String) -> RecordingError {
    RecordingError::Diverged { frame, problem }
}

/// Re-simulate a recording by applying each frame's executed move (§7 test 8): every frame's
/// board must equal the live board, each new round must start from a fresh game of the recorded
/// seed, round ends and the end record must match, and the interventions must add up.
pub fn replay(recording: &Recording) -> Result<ReplaySummary, RecordingError> {
    let mut game: Option<Game> = None;
    let mut round: Option<u64> = None;
    let mut frames = 0usize;
    let mut rounds = 0usize;
    let mut interventions = 0u64;
    for record in &recording.records {
        match record {
            Record::Metadata(_) => {}
            Record::Frame(frame) => {
                let index = frames;
                frames += 1;
                let snap = &frame.game;
                let same_round = round == Some(frame.stats.round);
                let live = match game.as_mut() {
                    Some(g) if same_round && !g.finished() => g,
                    _ => {
                        let initial = snap
                            .length
                            .checked_sub(snap.score)
                            .ok_or_else(|| diverged(index, "length is smaller than score".into()))?;
                        let fresh = Game::new(snap.width, snap.height, snap.seed, initial)
                            .map_err(|source| RecordingError::Game { frame: index, source })?;
                        rounds += 1;
                        round = Some(frame.stats.round);
                        game.insert(fresh)
                    }
                };
                if live.snapshot() != *snap {
                    return Err(diverged(
                        index,
                        "the recorded board differs from the re-simulated board".into(),
                    ));
                }
                interventions += u64::from(frame.decision.intervened);
                if frame.stats.interventions != interventions {
                    return Err(diverged(
                        index,
                        format!(
                            "stats.interventions is {} but the decisions add up to {interventions}",
                            frame.stats.interventions
                        ),
                    ));
                }
                live.step(frame.decision.executed)
                    .map_err(|source| RecordingError::Game { frame: index, source })?;
            }
            Record::RoundEnd(end) => {
                let live =
                    game.as_ref().ok_or_else(|| diverged(frames, "round_end before any frame".into()))?;
                if !live.finished() || live.snapshot() != end.game {
                    return Err(diverged(
                        frames,
                        "round_end does not match the re-simulated final board".into(),
                    ));
                }
            }
            Record::End(end) => {
                if let Some(live) = game.as_ref() {
                    let fresh_round = live.finished() && end.game != live.snapshot();
                    // After a round ends the CLI starts the next round before the summary, so
                    // the end board is either the live board or a fresh game of the next seed.
                    if fresh_round {
                        let next = Game::new(
                            end.game.width,
                            end.game.height,
                            end.game.seed,
                            end.game.length.saturating_sub(end.game.score),
                        )
                        .map_err(|source| RecordingError::Game { frame: frames, source })?;
                        if next.snapshot() != end.game {
                            return Err(diverged(
                                frames,
                                "end board matches neither the live game nor a fresh round".into(),
                            ));
                        }
                    } else if end.game != live.snapshot() {
                        return Err(diverged(frames, "end board differs from the re-simulated board".into()));
                    }
                }
                if end.summary.interventions != interventions {
                    return Err(diverged(
                        frames,
                        format!(
                            "summary.interventions is {} but the decisions add up to {interventions}",
                            end.summary.interventions
                        ),
                    ));
                }
            }
        }
    }
    Ok(ReplaySummary { frames, rounds, interventions })
}

#[cfg(test)]
mod tests;
