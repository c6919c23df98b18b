//! Command-line arguments (clap derive): one Args struct per command.

use clap::{Args, Parser, Subcommand};

/// Audit-grade speed and energy benchmarks for Laya typed-decision models.
#[derive(Debug, Parser)]
#[command(name = "laya-bench", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Answer typed questions about a state with a model, exactly as the reference host does.
    #[command(
        after_help = "Examples:\n  laya-bench predict --state 'The customer wants a refund.' \\\n    --questions '{\"refund\": {\"type\": \"noul\", \"instructions\": \"Does the customer ask for a refund?\"}}'\n  laya-bench predict --request fixtures/requests/invoice.json --explain"
    )]
    Predict(PredictArgs),
    /// Decisions per second and latency of one or more backend arms, in balanced cycles.
    #[command(
        after_help = "Examples:\n  laya-bench speed                                   # every portable precision on builtin:tiny\n  laya-bench speed --model synthetic:multilingual --arm f32=portable:f32 --arm w8=portable:w8 --cycles 3 --seconds 20\n  laya-bench speed --calls 200 --raw run.raw.jsonl --output run.json --export-markdown run.md"
    )]
    Speed(SpeedArgs),
    /// Palettize a checkpoint's projection weights (grouped k-means, weight-only) into a
    /// palette file that `portable:w8:FILE` loads, and report the error per tensor.
    #[command(
        after_help = "Examples:\n  laya-bench palettize --model synthetic:multilingual --bits 8 --output ml-w8.safetensors\n  laya-bench speed --model synthetic:multilingual --arm f32=portable:f32 --arm w8=portable:w8:ml-w8.safetensors"
    )]
    Palettize(PalettizeArgs),
    /// Compute the math bounds of one decision: FLOP, weight bytes, compute and bandwidth
    /// floors, what a target speed-up needs, and Amdahl's law.
    #[command(
        after_help = "Examples:\n  laya-bench bounds --baseline-ms 7.87 --target 10\n  laya-bench bounds --model synthetic:english --baseline-ms 13.33 --json\n  laya-bench bounds --precision w8 --profile h200 --fraction 0.95\n  laya-bench bounds --profile zen4-2core --precision f32 --bandwidth-gbs 40"
    )]
    Bounds(BoundsArgs),
    /// Trace where a model's work runs: run one arm for a profiler to attach to, record it with
    /// Instruments (macOS), or summarize xctrace exports (any OS).
    #[command(
        after_help = "Examples:\n  laya-bench trace record --arm f32=portable:f32 --seconds 15s        # macOS: one command\n  laya-bench trace run --seconds 30s --ready ready.json &              # Linux: then attach perf\n  laya-bench trace summarize --hardware-xml ane.xml --toc-xml toc.xml"
    )]
    Trace(TraceArgs),
    /// Energy per decision of one or more arms with a power sensor: warm-up, then balanced
    /// cycles of timed blocks between idle windows, integrated over the sensor's samples.
    #[command(
        after_help = "Examples:\n  laya-bench energy --sensor rapl --arm f32=portable:f32\n  laya-bench energy --sensor 'exec:nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits -lms 500' --cycles 3 --seconds 20\n  laya-bench energy --sensor 'exec:./my-meter.sh' --rate 50 --export-markdown run.md\n\nThe run is rejected (exit 1, raw record kept) on any missing, non-positive, non-finite or\nabove-cap reading, a gap longer than max(2 s, 3 × interval), or a sensor that stops."
    )]
    Energy(EnergyArgs),
    /// List every power sensor and backend and say why each is or is not usable here.
    #[command(after_help = "Examples:\n  laya-bench doctor\n  laya-bench doctor --json")]
    Doctor(DoctorArgs),
}

/// Which model to load.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// `builtin:tiny` (embedded), `synthetic:multilingual`, `synthetic:english`, or a checkpoint folder.
    #[arg(long, default_value = "builtin:tiny", value_name = "SPEC")]
    pub model: String,
}

/// `laya-bench predict`.
#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Backend spec: `portable:f32` (default).
    #[arg(long, default_value = "portable:f32", value_name = "SPEC")]
    pub backend: String,
    /// A request file: `{"state": ..., "questions": {...}}` (optionally `max_len`,
    /// `head_max_len`, `min_confidence`), or a list of such requests.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["state", "questions"])]
    pub request: Option<std::path::PathBuf>,
    /// The state as literal text (use --request for JSON states).
    #[arg(long, value_name = "TEXT", requires = "questions")]
    pub state: Option<String>,
    /// Question definitions: inline JSON, or a path to a JSON file.
    #[arg(long, value_name = "JSON", requires = "state")]
    pub questions: Option<String>,
    /// Token budget per row (overrides the checkpoint's `max_len` for this call).
    #[arg(long, value_name = "N")]
    pub max_len: Option<usize>,
    /// Budget for the question head and options (overrides `head_max_len`).
    #[arg(long, value_name = "N")]
    pub head_max_len: Option<usize>,
    /// Abstention gate: a number in [0, 1] or a JSON map of bucket -> threshold.
    #[arg(long, value_name = "VALUE")]
    pub min_confidence: Option<String>,
    /// Also show each question row's tokens, marker positions, qtype and packed shape.
    #[arg(long)]
    pub explain: bool,
    /// Print one compact JSON document per request (with `explain` when asked).
    #[arg(long)]
    pub json: bool,
}

/// Options `speed` and `energy` share: the model, the arms, the workload and the outputs.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// An arm as NAME=SPEC (repeat; the first is the baseline). Default: every portable precision.
    #[arg(long = "arm", value_name = "NAME=SPEC")]
    pub arms: Vec<String>,
    /// `invoice` (eight invoice states, one four-option choice question) or a request file.
    #[arg(long, default_value = "invoice", value_name = "invoice|FILE")]
    pub workload: String,
    /// Real tokens per row for the invoice workload (exact).
    #[arg(long, default_value_t = 91, value_name = "N")]
    pub tokens: usize,
    /// Padded length every arm runs at (the graph shape).
    #[arg(long, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Warm-up calls per arm, outside every measured interval.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub warmup: usize,
    /// Raw JSONL record (default: COMMAND-<UTC time>.raw.jsonl in the current folder).
    #[arg(long, value_name = "PATH")]
    pub raw: Option<std::path::PathBuf>,
    /// Final report (default: the raw path with .json instead of .raw.jsonl).
    #[arg(long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Also write a Markdown table.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<std::path::PathBuf>,
    /// Also write the table as CSV.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<std::path::PathBuf>,
    /// Replace existing raw/output files instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
    /// No live progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// `laya-bench speed`.
#[derive(Debug, Clone, Args)]
pub struct SpeedArgs {
    /// Model, arms, workload and outputs.
    #[command(flatten)]
    pub run: RunArgs,
    /// Balanced cycles (each visits the arms in order, then in reverse).
    #[arg(long, default_value_t = 3, value_name = "C")]
    pub cycles: usize,
    /// Block length: saturated for this long (`500ms`, `2s`, `1m`; a plain number is seconds).
    #[arg(long, default_value = "2s", value_name = "DURATION", conflicts_with = "calls")]
    pub seconds: String,
    /// Block length in calls instead of time.
    #[arg(long, value_name = "K")]
    pub calls: Option<u64>,
}

/// `laya-bench energy`.
#[derive(Debug, Clone, Args)]
pub struct EnergyArgs {
    /// Model, arms, workload and outputs.
    #[command(flatten)]
    pub run: RunArgs,
    /// Power sensor: `pstr` (Apple SMC), `rapl[:ROOT]` (Linux powercap), `nvml[:INDEX]`,
    /// `exec:CMD` (an external meter printing `WATTS` or `T_S,WATTS` lines), or `replay:RAW`
    /// (re-analysis only, never a live measurement). Default: pstr on macOS; rapl, then nvml,
    /// where readable.
    #[arg(long, value_name = "SPEC")]
    pub sensor: Option<String>,
    /// Time between sensor reads (`500ms`, `2s`, `1m`; a plain number is seconds).
    #[arg(long, default_value = "500ms", value_name = "DURATION")]
    pub sample_interval: String,
    /// Balanced cycles (each visits the arms in order, then in reverse).
    #[arg(long, default_value_t = 3, value_name = "C")]
    pub cycles: usize,
    /// Block length (saturated, or the paced schedule's length with --rate).
    #[arg(long, default_value = "20s", value_name = "DURATION")]
    pub seconds: String,
    /// Idle window before the first block, between blocks and after the last.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub idle_seconds: String,
    /// Discarded start of every idle window (settling); the rest is the stable idle window.
    #[arg(long, default_value = "3s", value_name = "DURATION")]
    pub idle_discard: String,
    /// Reject the run if any reading is above this many watts (a loose sanity cap, not an
    /// accuracy bound).
    #[arg(long, default_value_t = 500.0, value_name = "W", allow_negative_numbers = true)]
    pub max_watts: f64,
    /// Equal-load mode: pace every arm at R requests per second on absolute deadlines (a late
    /// call is counted, never dropped or skipped). Default: saturated serial blocks.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    pub rate: Option<f64>,
}

/// `laya-bench doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Print one JSON document (schema_version 1).
    #[arg(long)]
    pub json: bool,
    /// Also load this backend spec for `--model` and say whether it loads (repeatable).
    #[arg(long = "backend", value_name = "SPEC")]
    pub backends: Vec<String>,
    /// The model `--backend` specs are loaded for.
    #[arg(long, default_value = "builtin:tiny", value_name = "SPEC")]
    pub model: String,
}

/// `laya-bench bounds`.
#[derive(Debug, Clone, Args)]
pub struct BoundsArgs {
    /// `synthetic:multilingual`, `synthetic:english`, `builtin:tiny`, or a checkpoint folder (only
    /// its two config files are read).
    #[arg(long, default_value = "synthetic:multilingual", value_name = "SPEC")]
    pub model: String,
    /// Sequence length L in tokens (one question row at batch 1).
    #[arg(long, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Marker slots K the scorer runs over (the ANE bundles use 32).
    #[arg(long, default_value_t = 32, value_name = "K")]
    pub marker_slots: usize,
    /// Weight storage: f32, f16, bf16, or palettized w8, w6, w4 (one FP16 lookup table per matrix).
    #[arg(long, default_value = "f16", value_name = "P")]
    pub precision: String,
    /// Hardware: m3-max (ANE), m3-max-gpu, m4-max, h200, zen4-2core, custom. Default m3-max, or
    /// custom when both --peak-tflops and --bandwidth-gbs are given.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Peak compute in TFLOP/s for the precision's arithmetic (overrides the profile).
    #[arg(long, value_name = "TFLOPS", allow_negative_numbers = true)]
    pub peak_tflops: Option<f64>,
    /// Memory bandwidth in GB/s (overrides the profile).
    #[arg(long, value_name = "GBS", allow_negative_numbers = true)]
    pub bandwidth_gbs: Option<f64>,
    /// Measured baseline latency in ms (e.g. the P50 of the arm to beat).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    pub baseline_ms: Option<f64>,
    /// Target overall speed-up over the baseline.
    #[arg(long, default_value_t = 10.0, value_name = "S", allow_negative_numbers = true)]
    pub target: f64,
    /// Measured fraction f in [0, 1] of the latency that the speed-up would apply to.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub fraction: Option<f64>,
    /// Print one JSON document (schema_version 1; units in field names).
    #[arg(long)]
    pub json: bool,
}

/// `laya-bench trace`.
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// The trace subcommand.
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// The `trace` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum TraceCommand {
    /// Run one arm's workload loop after warm-up for a profiler to attach to; write a ready file
    /// (PID and start time) once warm, and record every call.
    #[command(
        after_help = "Example (Linux; wait for ready.json before attaching):\n  laya-bench trace run --seconds 30s --ready ready.json --raw trace.raw.jsonl &\n  perf record -p $(jq .pid ready.json) -- sleep 20"
    )]
    Run(TraceRunArgs),
    /// Summarize xctrace XML exports: interval counts by label, active time, busy union and duty
    /// cycle, with the caveats (any OS).
    #[command(
        after_help = "Example (the synthetic fixtures):\n  cd fixtures/trace && laya-bench trace summarize --hardware-xml synthetic_ane_hw_intervals.xml \\\n    --toc-xml synthetic_toc.xml --signpost-xml synthetic_coreml_os_signpost.xml"
    )]
    Summarize(TraceSummarizeArgs),
    /// macOS: start `trace run`, attach `xcrun xctrace record --template 'Core ML'`, export the
    /// tables and summarize them; everything stays in an artifacts folder.
    #[command(
        after_help = "Example:\n  laya-bench trace record --model synthetic:multilingual --arm f32=portable:f32 --seconds 15s"
    )]
    Record(TraceRecordArgs),
}

/// The workload a traced arm runs (shared by `trace run` and `trace record`).
#[derive(Debug, Clone, Args)]
pub struct TraceWorkloadArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The one arm to run, as NAME=SPEC.
    #[arg(long, default_value = "f32=portable:f32", value_name = "NAME=SPEC")]
    pub arm: String,
    /// `invoice` (eight invoice states, one four-option choice question) or a request file.
    #[arg(long, default_value = "invoice", value_name = "invoice|FILE")]
    pub workload: String,
    /// Real tokens per row for the invoice workload (exact).
    #[arg(long, default_value_t = 91, value_name = "N")]
    pub tokens: usize,
    /// Padded length the arm runs at (the graph shape).
    #[arg(long, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Warm-up calls before the ready file is written, outside the measured block.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub warmup: usize,
}

/// `laya-bench trace run`.
#[derive(Debug, Clone, Args)]
pub struct TraceRunArgs {
    /// The arm and its workload.
    #[command(flatten)]
    pub workload: TraceWorkloadArgs,
    /// How long the measured block runs after warm-up (`500ms`, `30s`, `1m`; a plain number is
    /// seconds).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub seconds: String,
    /// Write this JSON file (pid, start time, arm) once warm, for a profiler to attach.
    #[arg(long, value_name = "FILE")]
    pub ready: Option<std::path::PathBuf>,
    /// Raw JSONL record (default: trace-run-<UTC time>.raw.jsonl in the current folder).
    #[arg(long, value_name = "PATH")]
    pub raw: Option<std::path::PathBuf>,
    /// Replace an existing raw file instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
}

/// `laya-bench trace summarize`.
#[derive(Debug, Clone, Args)]
pub struct TraceSummarizeArgs {
    /// The Neural Engine hardware-intervals table export (`xctrace export --xpath ...`).
    #[arg(long, value_name = "FILE")]
    pub hardware_xml: std::path::PathBuf,
    /// The table-of-contents export (`xctrace export --toc`).
    #[arg(long, value_name = "FILE")]
    pub toc_xml: std::path::PathBuf,
    /// The Core ML signpost table export, to count hardware intervals inside predictions.
    #[arg(long, value_name = "FILE")]
    pub signpost_xml: Option<std::path::PathBuf>,
    /// The TOC run number, when the trace holds several runs (runs are never combined).
    #[arg(long, value_name = "N")]
    pub run: Option<u32>,
    /// Print the summary as one JSON document (schema_version 1; units in field names).
    #[arg(long)]
    pub json: bool,
    /// Also write the summary JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
}

/// `laya-bench trace record`.
#[derive(Debug, Clone, Args)]
pub struct TraceRecordArgs {
    /// The arm and its workload.
    #[command(flatten)]
    pub workload: TraceWorkloadArgs,
    /// Recording length (xctrace `--time-limit`); the traced run lasts this plus --margin.
    #[arg(long, default_value = "15s", value_name = "DURATION")]
    pub seconds: String,
    /// Extra run time so the workload outlasts the recording while xctrace attaches.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub margin: String,
    /// How long to wait for the traced run to load the model and warm up.
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    pub ready_timeout: String,
    /// Folder that receives `trace-<UTC time>/` with the archive, the exports and the summary.
    #[arg(long, default_value = "artifacts", value_name = "DIR")]
    pub artifacts: std::path::PathBuf,
    /// Instruments template.
    #[arg(long, default_value = "Core ML", value_name = "NAME")]
    pub template: String,
    /// Print the summary as one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `laya-bench palettize`.
#[derive(Debug, Clone, Args)]
pub struct PalettizeArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Index width: 8, 6 or 4 bits.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub bits: u8,
    /// The palette file to write (`.safetensors`).
    #[arg(long, value_name = "FILE")]
    pub output: std::path::PathBuf,
    /// Replace an existing file.
    #[arg(long)]
    pub overwrite: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}
