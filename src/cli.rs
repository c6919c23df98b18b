//! Command-line arguments (clap derive): one Args struct per command.
//!
//! Arguments are taken in two stages (the ripgrep habit): clap's value parsers turn each flag
//! into its type here (a duration, an arm with its parsed spec), naming the flag in every
//! message; then each command builds a validated plan (`run::measure_speed::plan`,
//! `run::measure_energy::settings`, ...) that checks how the flags fit together, before anything
//! loads.
// The doc comments below are clap's help texts, shown as written: `<UTC time>` is text there,
// not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

use std::ffi::OsStr;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use crate::error::Error;
use crate::run::arm::ArmSpec;

/// A value parser from a function of (flag, text): its error becomes clap's message as is
/// (the function names the flag), exit 2.
#[derive(Clone, Copy)]
pub struct FlagParser<T>(fn(&str, &str) -> Result<T, Error>);

impl<T: Clone + Send + Sync + 'static> TypedValueParser for FlagParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let flag =
            arg.and_then(|a| a.get_long()).map(|l| format!("--{l}")).unwrap_or_else(|| "the value".into());
        (self.0)(&flag, &value.to_string_lossy()).map_err(|e| {
            clap::Error::raw(ErrorKind::ValueValidation, format!("{}\n", crate::error::chain(&e)))
                .with_cmd(cmd)
        })
    }
}

/// `500ms`, `2s`, `1m`, or a plain number of seconds (zero allowed here; plans refuse it where
/// a zero makes no sense).
pub const DURATION: FlagParser<Duration> = FlagParser(crate::run::duration_flags::duration);

/// `[NAME=]SPEC`, the spec parsed; an arm given without a name is named after its spec.
pub const NAMED_ARM: FlagParser<ArmSpec> = FlagParser(ArmSpec::parse_flag);

/// Audit-grade speed and energy benchmarks for Laya typed-decision models.
#[derive(Debug, Parser)]
#[command(name = "laya-bench", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// Colour the status words on the terminal (COMPLETE, REJECTED, INCOMPLETE, faster,
    /// slower, WARNING): `auto` where stdout is a terminal and `NO_COLOR` is unset or empty,
    /// `always`, or `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,
    /// `speed` and `energy`: no progress, no set-up notes, no tables; only the paths of the
    /// files written (stdout) and errors (stderr). Exit codes unchanged.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

/// When to colour the terminal output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// Where stdout is a terminal and `NO_COLOR` is unset or empty.
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Answer typed questions about a state with a model, exactly as the reference host does.
    #[command(
        after_help = "Examples:\n  laya-bench predict --state 'The customer wants a refund.' \\\n    --questions '{\"refund\": {\"type\": \"noul\", \"instructions\": \"Refund asked for?\"}}'\n  laya-bench predict --request fixtures/requests/invoice.json --explain"
    )]
    Predict(PredictArgs),
    /// Decisions per second and latency of one or more backend arms, in balanced cycles.
    #[command(
        after_help = "Examples:\n  # every portable precision on builtin:tiny\n  laya-bench speed\n  laya-bench speed --model synthetic:multilingual --arm f32=portable:f32 \\\n    --arm w8=portable:w8 --cycles 3 --seconds 20\n  laya-bench speed --calls 200 --raw run.raw.jsonl --output run.json \\\n    --export-markdown run.md"
    )]
    Speed(SpeedArgs),
    /// Palettize a checkpoint's projection weights (grouped k-means, weight-only) into a
    /// palette file that `portable:w8:FILE` loads, and report the error per tensor.
    #[command(
        after_help = "Examples:\n  laya-bench palettize --model synthetic:multilingual --bits 8 \\\n    --output ml-w8.safetensors\n  laya-bench speed --model synthetic:multilingual --arm f32=portable:f32 \\\n    --arm w8=portable:w8:ml-w8.safetensors"
    )]
    Palettize(PalettizeArgs),
    /// Write builtin:tiny or a synthetic model as a checkpoint folder in the original layout,
    /// for other runtimes (laya-mlx, laya, laya-cuda) to load the same weights.
    #[command(
        after_help = "Examples:\n  laya-bench export --model synthetic:multilingual --output ckpt-ml\n  laya-bench speed --model ckpt-ml --arm p=portable:f32 --arm m=mlx:fp32:ckpt-ml"
    )]
    Export(ExportArgs),
    /// Compute the math bounds of one decision: FLOP, weight bytes, compute and bandwidth
    /// floors, what a target speed-up needs, and Amdahl's law.
    #[command(
        after_help = "Examples:\n  laya-bench bounds --baseline-ms 7.87 --target-speedup 10\n  laya-bench bounds --model synthetic:english --baseline-ms 13.33 --json\n  laya-bench bounds --precision w8 --profile h200 --fraction 0.95\n  laya-bench bounds --profile zen4-2core --precision f32 --bandwidth-gbs 40"
    )]
    Bounds(BoundsArgs),
    /// Trace where a model's work runs: run one arm for a profiler to attach to, record it with
    /// Instruments (macOS), or summarize xctrace exports (any OS).
    #[command(
        after_help = "Examples:\n  # macOS: one command\n  laya-bench trace record --backend f32=portable:f32 --seconds 15s\n  # Linux: then attach perf\n  laya-bench trace run --seconds 30s --ready ready.json &\n  laya-bench trace summarize --hardware-xml ane.xml --toc-xml toc.xml"
    )]
    Trace(TraceArgs),
    /// Energy per decision of one or more arms with a power sensor: warm-up, then balanced
    /// cycles of timed blocks between idle windows, integrated over the sensor's samples.
    #[command(
        after_help = "Examples:\n  laya-bench energy --sensor rapl --arm f32=portable:f32\n  M='nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 500'\n  laya-bench energy --sensor \"exec:$M\" --cycles 3 --seconds 20\n  laya-bench energy --sensor 'exec:./my-meter.sh' --rate 50 \\\n    --export-markdown run.md\n\nThe run is rejected (exit 1, raw record kept) on any missing, non-positive, non-finite or\nabove-cap reading, a gap longer than max(2 s, 3 × interval), or a sensor that stops."
    )]
    Energy(EnergyArgs),
    /// The Snake workload played by the model: watch it, replay a recording, compare two arms
    /// on the same live states, or find the fastest stable decision rate.
    #[command(
        after_help = "Examples:\n  laya-bench snake play --steps 300\n  laya-bench snake play --headless --steps 100 --record run.jsonl\n  laya-bench snake replay run.jsonl --headless\n  laya-bench snake compare --arm a=portable:f32 --arm b=portable:f16 \\\n    --seed 101,102 --steps 300 --output compare.json\n  laya-bench snake bench --rate 10,20,30 --output snake-bench.json"
    )]
    Snake(SnakeArgs),
    /// Check that a converted or compressed candidate (FP16, BF16, palettized, an ANE or Core ML
    /// bundle) still decides like its FP32 source on a fidelity suite: answers, calibrated
    /// drift, finiteness and bit-identical repeats, plus static bundle checks and sizes.
    #[command(
        name = "convert-check",
        after_help = "Examples:\n  laya-bench convert-check --model builtin:tiny --backend portable:f16 \\\n    --output f16.json\n  laya-bench convert-check --model ckpt/ --backend portable:w8 \\\n    --gate 0.02 --max-len 96 --output w8.json\n  laya-bench convert-check --model ckpt/ --backend ane-bundle/ \\\n    --suite my-suite.json --output ane.json\n\nExit status: 0 every gate passed; 1 a gate failed or could not run here (the report is\nstill written); 2 bad input (suite, specs, a candidate of another model, a bundle hash)."
    )]
    ConvertCheck(ConvertCheckArgs),
    /// List every power sensor and backend and say why each is or is not usable here.
    #[command(after_help = "Examples:\n  laya-bench doctor\n  laya-bench doctor --json")]
    Doctor(DoctorArgs),
    /// Audit raw records and re-derive every figure from them alone: statistics, a seeded
    /// bootstrap over whole cycles, the claim rule, exports and pictures; or append a metadata
    /// correction to a raw record.
    #[command(
        after_help = "Examples:\n  laya-bench summary run.raw.jsonl --output summary.json \\\n    --export-markdown summary.md --plots plots\n  laya-bench summary a.raw.jsonl b.raw.jsonl --output both.json \\\n    --target-gain 10 --seed 7\n  laya-bench summary --correct run.raw.jsonl --field host.cpu_model \\\n    --note 'M3 Max, 40 GPU cores'\n\nExit codes: 0 every record summarized as complete; 1 a record is rejected, incomplete, failed\nor fails its audit (the summary is still written); 2 bad input (an unreadable or garbled file)."
    )]
    Summary(SummaryArgs),
    /// Check a model and backends against parity goldens (laya-apple 1.7.0's format, made by
    /// upstream laya on PyTorch CPU FP32): token ids and markers exactly, logits and action
    /// logits within a stated tolerance, answers equal.
    #[command(
        after_help = "Examples:\n  laya-bench verify --model hub:laya-multilingual \\\n    --goldens laya_apple/parity/goldens/laya-multilingual.json --output verify.json\n  laya-bench verify --model ckpt/ --goldens g.json --backend portable:f32 \\\n    --backend portable:f16\n\nExit status: 0 every case of every backend passed; 1 a case failed (the report is still\nwritten) or a backend failed; 2 bad input (another format, a case the host contract\nrejects, goldens of another model or of other weights)."
    )]
    Verify(VerifyArgs),
}

/// Which model to load.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// `builtin:tiny` (embedded), `synthetic:multilingual`, `synthetic:english`,
    /// `hub:NAME[@REVISION]` (`laya`, `laya-multilingual`, `laya-typed-decisions`, pinned; or any
    /// `owner/repo`; fetched once into the Hugging Face cache), or a checkpoint folder.
    #[arg(long, allow_negative_numbers = true, default_value = "builtin:tiny", value_name = "SPEC")]
    pub model: String,
}

/// `laya-bench predict`.
#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Backend spec: `portable:f32|f16|bf16|w8`, `mlx:…`, `coreml:…` or `ref:…`
    /// (`laya-bench doctor` lists every kind and whether it runs here).
    #[arg(long, allow_negative_numbers = true, default_value = "portable:f32", value_name = "SPEC")]
    pub backend: String,
    /// A request file: `{"state": ..., "questions": {...}}` (optionally `max_len`,
    /// `head_max_len`, `min_confidence`), or a list of such requests.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["state", "questions"])]
    pub request: Option<std::path::PathBuf>,
    /// The state as literal text (use --request for JSON states).
    #[arg(long, allow_negative_numbers = true, value_name = "TEXT", requires = "questions")]
    pub state: Option<String>,
    /// Question definitions: inline JSON, or a path to a JSON file.
    #[arg(long, allow_negative_numbers = true, value_name = "JSON", requires = "state")]
    pub questions: Option<String>,
    /// Token budget per row (overrides the checkpoint's `max_len` for this call).
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub max_len: Option<usize>,
    /// Budget for the question head and options (overrides `head_max_len`).
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub head_max_len: Option<usize>,
    /// Abstention gate: a number in [0, 1] or a JSON map of bucket -> threshold.
    #[arg(long, allow_negative_numbers = true, value_name = "VALUE")]
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
    /// An arm as `[NAME=]SPEC` (repeat; the first is the baseline; an arm without a name is
    /// named after its spec, so two unnamed arms need two specs). Default: every portable
    /// precision.
    #[arg(long = "arm", allow_negative_numbers = true, value_name = "[NAME=]SPEC", value_parser = NAMED_ARM)]
    pub arms: Vec<ArmSpec>,
    /// `invoice` (eight invoice states, one four-option choice question) or a request file.
    #[arg(long, allow_negative_numbers = true, default_value = "invoice", value_name = "invoice|FILE")]
    pub workload: String,
    /// Real tokens per row for the invoice workload (exact; default 91). Refused with a request
    /// file, whose rows are as long as its requests.
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub tokens: Option<usize>,
    /// Padded length every arm runs at (the graph shape).
    #[arg(long, allow_negative_numbers = true, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Warm-up calls per arm, outside every measured interval; at least one per workload
    /// request is always made (each measured call is checked against its request's warm-up
    /// result), so a smaller N is raised to the number of requests.
    #[arg(long, allow_negative_numbers = true, default_value_t = 20, value_name = "N")]
    pub warmup: usize,
    /// Raw JSONL record (default: speed-<UTC time>.raw.jsonl or energy-<UTC time>.raw.jsonl in
    /// the current folder, with -2, -3… when a run of the same second took that name).
    #[arg(long, value_name = "PATH")]
    pub raw: Option<std::path::PathBuf>,
    /// Final report (default: the raw path with .json instead of .raw.jsonl, or with
    /// .report.json added when --raw does not end in .raw.jsonl).
    #[arg(long, alias = "export-json", value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Also write a Markdown table.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<std::path::PathBuf>,
    /// Also write the table as CSV.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<std::path::PathBuf>,
    /// Replace existing raw, report and export files instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
    /// No live progress bar (and, where stderr is not a terminal, no plain line per block).
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
    #[arg(long, allow_negative_numbers = true, default_value_t = 3, value_name = "C")]
    pub cycles: usize,
    /// Block length: saturated for this long (`500ms`, `2s`, `1m`; a plain number is seconds).
    #[arg(
        long,
        allow_hyphen_values = true,
        default_value = "2s",
        value_name = "DURATION",
        value_parser = DURATION,
        conflicts_with = "calls"
    )]
    pub seconds: Duration,
    /// Block length in calls instead of time.
    #[arg(long, allow_negative_numbers = true, value_name = "K")]
    pub calls: Option<u64>,
    /// Requests per call: each call answers N consecutive requests of the workload in one
    /// packed forward of N × questions rows (MLPerf's offline scenario). t and decisions/s
    /// count requests; latency is per batch. Every arm must hold the rows (exit 2 otherwise).
    /// A comma list (`1,2,4,8`) sweeps it: every arm once per value, named `NAME-bN`, all in
    /// one balanced run (docs/speed.md, "Sweeps").
    #[arg(
        long,
        allow_negative_numbers = true,
        num_args = 1,
        value_delimiter = ',',
        default_values_t = [1],
        value_name = "N[,N…]"
    )]
    pub batch: Vec<usize>,
    /// Worker threads of every arm's engine (portable arms only; exit 2 for another). Default:
    /// the host's cores. A comma list (`1,2,4`) sweeps it: every arm once per count, named
    /// `NAME-tN` (`NAME-bN-tM` with a `--batch` list).
    #[arg(long, allow_negative_numbers = true, num_args = 1, value_delimiter = ',', value_name = "N[,N…]")]
    pub threads: Vec<usize>,
}

/// `laya-bench energy`.
#[derive(Debug, Clone, Args)]
pub struct EnergyArgs {
    /// Model, arms, workload and outputs.
    #[command(flatten)]
    pub run: RunArgs,
    /// Power sensor: `pstr` (Apple SMC), `rapl[:ROOT]` (Linux powercap), `nvml[:INDEX]`
    /// (NVIDIA; also `nvml-energy` / `nvml-power` to choose the total), `exec:CMD` (an
    /// external meter printing `WATTS` or `T_S,WATTS` lines), or `replay:RAW`
    /// (re-analysis only, never a live measurement). Default: pstr on macOS; rapl, then nvml,
    /// where readable.
    #[arg(long, allow_negative_numbers = true, value_name = "SPEC")]
    pub sensor: Option<String>,
    /// The unit of a bare number an `exec:` meter prints: `W` (default), `mW` or `uW`. A line
    /// may also carry its unit (`61.39 W`, `61390 mW`); the raw record keeps the text as read.
    #[arg(long, allow_negative_numbers = true, value_name = "W|mW|uW")]
    pub sensor_unit: Option<String>,
    /// What an `exec:` meter measures, recorded in the raw header and named on every power
    /// and energy label: `whole-system`, `gpu-board`, `cpu-package`, `cpu-package-dram`,
    /// `wall` (a meter at the socket) or `other:TEXT`. Without it an `exec:` meter's boundary
    /// is unknown; pstr (whole system), rapl (CPU package) and nvml (GPU board) declare their
    /// own.
    #[arg(long, value_name = "BOUNDARY")]
    pub boundary: Option<String>,
    /// Time between sensor reads (`500ms`, `2s`, `1m`; a plain number is seconds). Default:
    /// twice the driver's update period where the sensor measures one (NVML; kept within
    /// 10-500 ms), else 500ms.
    #[arg(long, allow_hyphen_values = true, value_name = "DURATION", value_parser = DURATION)]
    pub sample_interval: Option<Duration>,
    /// Balanced cycles (each visits the arms in order, then in reverse).
    #[arg(long, allow_negative_numbers = true, default_value_t = 3, value_name = "C")]
    pub cycles: usize,
    /// Block length (saturated, or the paced schedule's length with --rate).
    #[arg(long, allow_hyphen_values = true, default_value = "20s", value_name = "DURATION", value_parser = DURATION)]
    pub seconds: Duration,
    /// Idle window before the first block, between blocks and after the last.
    #[arg(long, allow_hyphen_values = true, default_value = "10s", value_name = "DURATION", value_parser = DURATION)]
    pub idle_seconds: Duration,
    /// Discarded start of every idle window (settling); the rest is the stable idle window.
    #[arg(long, allow_hyphen_values = true, default_value = "3s", value_name = "DURATION", value_parser = DURATION)]
    pub idle_discard: Duration,
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
    #[arg(long = "backend", allow_negative_numbers = true, value_name = "SPEC")]
    pub backends: Vec<String>,
    /// The model `--backend` specs are loaded for.
    #[arg(long, allow_negative_numbers = true, default_value = "builtin:tiny", value_name = "SPEC")]
    pub model: String,
}

/// `laya-bench bounds`.
#[derive(Debug, Clone, Args)]
pub struct BoundsArgs {
    /// `synthetic:multilingual`, `synthetic:english`, `builtin:tiny`, or a checkpoint folder (only
    /// its two config files are read).
    #[arg(
        long,
        allow_negative_numbers = true,
        default_value = "synthetic:multilingual",
        value_name = "SPEC"
    )]
    pub model: String,
    /// Sequence length L in tokens (one question row at batch 1).
    #[arg(long, allow_negative_numbers = true, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Marker slots K the scorer runs over (the ANE bundles use 32).
    #[arg(long, allow_negative_numbers = true, default_value_t = 32, value_name = "K")]
    pub marker_slots: usize,
    /// Also count the FLOP per decision of a `speed` workload (`invoice` or a request file):
    /// every question row its requests run, each padded to L, as `speed` counts it (reads the
    /// model's tokenizer to build the rows).
    #[arg(long, allow_negative_numbers = true, value_name = "invoice|FILE")]
    pub workload: Option<String>,
    /// Real tokens per row for the invoice workload with --workload (default 91).
    #[arg(long, allow_negative_numbers = true, value_name = "N", requires = "workload")]
    pub tokens: Option<usize>,
    /// Weight storage: f32, f16, bf16, or palettized w8, w6, w4 (one FP16 lookup table per matrix).
    #[arg(long, allow_negative_numbers = true, default_value = "f16", value_name = "P")]
    pub precision: String,
    /// Hardware: m3-max (ANE), m3-max-gpu, m4-max, h200, zen4-2core, custom. Default m3-max, or
    /// custom when both --peak-tflops and --bandwidth-gbs are given.
    #[arg(long, allow_negative_numbers = true, value_name = "NAME")]
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
    #[arg(
        long = "target-speedup",
        alias = "target",
        default_value_t = 10.0,
        value_name = "S",
        allow_negative_numbers = true
    )]
    pub target: f64,
    /// Measured fraction f in [0, 1] of the latency that the speed-up would apply to.
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    pub fraction: Option<f64>,
    /// Print one JSON document (schema_version 1; units in field names).
    #[arg(long)]
    pub json: bool,
    /// Measure this machine first (FMA peak per kernel family, 1 and all threads; triad
    /// bandwidth; a few seconds) and print each portable arm's floors on it.
    #[arg(long)]
    pub measure: bool,
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
        after_help = "Example (Linux; wait for ready.json before attaching):\n  laya-bench trace run --seconds 30s --ready ready.json \\\n    --raw trace.raw.jsonl &\n  perf record -p $(jq .pid ready.json) -- sleep 20"
    )]
    Run(TraceRunArgs),
    /// Summarize xctrace XML exports: interval counts by label, active time, busy union and duty
    /// cycle, with the caveats (any OS).
    #[command(
        after_help = "Example (the synthetic fixtures):\n  cd fixtures/trace && laya-bench trace summarize \\\n    --hardware-xml synthetic_ane_hw_intervals.xml \\\n    --toc-xml synthetic_toc.xml --signpost-xml synthetic_coreml_os_signpost.xml"
    )]
    Summarize(TraceSummarizeArgs),
    /// macOS: start `trace run`, attach `xcrun xctrace record --template 'Core ML'`, export the
    /// tables and summarize them; everything stays in an artifacts folder.
    #[command(
        after_help = "Example:\n  laya-bench trace record --model synthetic:multilingual \\\n    --backend f32=portable:f32 --seconds 15s"
    )]
    Record(TraceRecordArgs),
}

/// The workload a traced arm runs (shared by `trace run` and `trace record`).
#[derive(Debug, Clone, Args)]
pub struct TraceWorkloadArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The one backend to run, as `[NAME=]SPEC` (the name labels it in the record and the ready
    /// file; without one it is named after its spec).
    #[arg(
        long = "backend",
        alias = "arm",
        allow_negative_numbers = true,
        default_value = "f32=portable:f32",
        value_name = "[NAME=]SPEC",
        value_parser = NAMED_ARM
    )]
    pub arm: ArmSpec,
    /// `invoice` (eight invoice states, one four-option choice question) or a request file.
    #[arg(long, allow_negative_numbers = true, default_value = "invoice", value_name = "invoice|FILE")]
    pub workload: String,
    /// Real tokens per row for the invoice workload (exact; default 91). Refused with a request
    /// file, whose rows are as long as its requests.
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub tokens: Option<usize>,
    /// Padded length the arm runs at (the graph shape).
    #[arg(long, allow_negative_numbers = true, default_value_t = 96, value_name = "L")]
    pub length: usize,
    /// Warm-up calls before the ready file is written, outside the measured block.
    #[arg(long, allow_negative_numbers = true, default_value_t = 20, value_name = "N")]
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
    #[arg(long, allow_hyphen_values = true, default_value = "10s", value_name = "DURATION", value_parser = DURATION)]
    pub seconds: Duration,
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
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub run: Option<u32>,
    /// Print the summary as one JSON document (schema_version 1; units in field names).
    #[arg(long)]
    pub json: bool,
    /// Also write the summary JSON to this file.
    #[arg(long, alias = "export-json", value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
}

/// `laya-bench trace record`.
#[derive(Debug, Clone, Args)]
pub struct TraceRecordArgs {
    /// The arm and its workload.
    #[command(flatten)]
    pub workload: TraceWorkloadArgs,
    /// Recording length (xctrace `--time-limit`); the traced run lasts this plus --margin.
    #[arg(long, allow_hyphen_values = true, default_value = "15s", value_name = "DURATION", value_parser = DURATION)]
    pub seconds: Duration,
    /// Extra run time so the workload outlasts the recording while xctrace attaches.
    #[arg(long, allow_hyphen_values = true, default_value = "10s", value_name = "DURATION", value_parser = DURATION)]
    pub margin: Duration,
    /// How long to wait for the traced run to load the model and warm up.
    #[arg(long, allow_hyphen_values = true, default_value = "5m", value_name = "DURATION", value_parser = DURATION)]
    pub ready_timeout: Duration,
    /// Folder that receives `trace-<UTC time>/` with the archive, the exports and the summary.
    #[arg(long, default_value = "artifacts", value_name = "DIR")]
    pub artifacts: std::path::PathBuf,
    /// Instruments template.
    #[arg(long, allow_negative_numbers = true, default_value = "Core ML", value_name = "NAME")]
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
    /// Index width in bits, 1 to 8 (8, 6 and 4 are the named arms `portable:w8|w6|w4`; a file of
    /// any width runs as `portable:palette:FILE`).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub bits: u8,
    /// Palettize only matrices with more elements than this (0: every projection matrix, e.g.
    /// to exercise palettization on the tiny model, whose matrices are all below the default).
    #[arg(long, allow_negative_numbers = true, default_value_t = crate::model::palettize::DEFAULT_ABOVE_ELEMENTS, value_name = "N")]
    pub above_elements: usize,
    /// The palette file to write (`.safetensors`).
    #[arg(long, value_name = "FILE")]
    pub output: std::path::PathBuf,
    /// Replace an existing file.
    #[arg(long)]
    pub overwrite: bool,
    /// Print the report as one JSON document (schema_version 1; per tensor and in all).
    #[arg(long)]
    pub json: bool,
}

/// `laya-bench export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The folder to write (created if missing).
    #[arg(long, value_name = "DIR")]
    pub output: std::path::PathBuf,
    /// Write into a folder that already holds files (its checkpoint files are replaced).
    #[arg(long)]
    pub overwrite: bool,
}

/// `laya-bench snake`.
#[derive(Debug, Clone, Args)]
pub struct SnakeArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: SnakeCommand,
}

/// The `snake` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum SnakeCommand {
    /// Watch the model play in a 104x35 terminal view (keys: SPACE pause, UP/+ faster,
    /// DOWN/- slower, R reset, Q or Ctrl-C quit), or play headless and print a summary.
    Play(SnakePlayArgs),
    /// Play a recording back in the terminal, or verify it headless by re-simulating the game.
    Replay(SnakeReplayArgs),
    /// Paired check: two arms decide on the same live states, the order alternates every tick,
    /// arm A's executed move advances the game. Exit 1 if the executed moves ever differ or the
    /// snake dies.
    Compare(SnakeCompareArgs),
    /// Rate and stability: unshielded top-1 episodes, an uncapped episode, a paced sweep,
    /// uncapped soaks and paced soaks down to the fastest stable decision rate. Exit 1 if no
    /// tested rate is stable.
    Bench(SnakeBenchArgs),
}

/// The board and prompt of a Snake game.
#[derive(Debug, Clone, Args)]
pub struct SnakeGameArgs {
    /// Board columns (at least 4; one side must be even).
    #[arg(long, allow_negative_numbers = true, default_value_t = 24, value_name = "N")]
    pub width: usize,
    /// Board rows (at least 4; one side must be even).
    #[arg(long, allow_negative_numbers = true, default_value_t = 16, value_name = "N")]
    pub height: usize,
    /// Initial snake length (2 up to the board size minus one).
    #[arg(long, allow_negative_numbers = true, default_value_t = 6, value_name = "N")]
    pub initial_length: usize,
    /// Prompt wording sent to the model.
    #[arg(long, allow_negative_numbers = true, default_value = "compact", value_parser = ["compact", "detailed"])]
    pub prompt: String,
    /// Padded length of a question row in tokens: the decision runs as one fixed batch of 3 rows × this length ×
    /// 4 option slots (64 = the published Snake bundle). A state that does not fit is cut and
    /// counted. Default: the smallest multiple of 32, at least 64, that holds every row of a
    /// 600-tick probe walk of this board with this model's tokenizer (64 for the published
    /// checkpoints, 96 for builtin:tiny's byte-level tokenizer).
    #[arg(long = "length", alias = "row-length", allow_negative_numbers = true, value_name = "L", value_parser = clap::value_parser!(u64).range(16..=4096))]
    pub row_length: Option<u64>,
}

/// `laya-bench snake play`.
#[derive(Debug, Clone, Args)]
pub struct SnakePlayArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The backend that plays: a spec, optionally named (`NAME=SPEC`; without a name it is
    /// named after its spec).
    #[arg(
        long = "backend",
        alias = "arm",
        allow_negative_numbers = true,
        default_value = "portable:f32",
        value_name = "[NAME=]SPEC"
    )]
    pub arm: String,
    /// Board and prompt.
    #[command(flatten)]
    pub game: SnakeGameArgs,
    /// Seed of round 1 (round r uses SEED + r - 1).
    #[arg(long, default_value_t = 7, value_name = "N", allow_negative_numbers = true)]
    pub seed: i64,
    /// Stop after this many game steps (over all rounds).
    #[arg(long, allow_negative_numbers = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: Option<u64>,
    /// Stop after this long (`30s`, `2m`; a plain number is seconds; warm-up excluded).
    #[arg(long = "seconds", alias = "duration", allow_hyphen_values = true, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Decisions per second to pace at (UP/DOWN change it while playing).
    #[arg(
        long = "rate",
        alias = "fps",
        allow_negative_numbers = true,
        default_value_t = 12.0,
        value_name = "R"
    )]
    pub fps: f64,
    /// No pacing: decide and step as fast as the model answers.
    #[arg(long)]
    pub max_speed: bool,
    /// Shield off: the model's top-1 move executes even when it kills the snake; the run stops
    /// at the first round end.
    #[arg(long)]
    pub unassisted: bool,
    /// Write a JSONL recording (laya-coreml-snake-v1) as it plays; the file must not exist.
    #[arg(long, value_name = "FILE")]
    pub record: Option<std::path::PathBuf>,
    /// No terminal view: play and print a summary (automatic when stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// Draw in the normal screen instead of the alternate screen.
    #[arg(long)]
    pub no_alt_screen: bool,
}

/// `laya-bench snake replay`.
#[derive(Debug, Clone, Args)]
pub struct SnakeReplayArgs {
    /// A recording written by `snake play --record`.
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Verify by re-simulation and print a summary instead of showing the frames.
    #[arg(long)]
    pub headless: bool,
    /// Playback speed relative to the recorded wall clock (UP/DOWN change it while playing).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1.0, value_name = "X")]
    pub speed: f64,
}

/// `laya-bench snake compare`.
#[derive(Debug, Clone, Args)]
pub struct SnakeCompareArgs {
    /// The model both arms run.
    #[command(flatten)]
    pub model: ModelArgs,
    /// An arm as NAME=SPEC; give exactly two, A first (A's executed move drives the game).
    #[arg(long = "arm", allow_negative_numbers = true, value_name = "NAME=SPEC")]
    pub arms: Vec<String>,
    /// Board and prompt.
    #[command(flatten)]
    pub game: SnakeGameArgs,
    /// Game seeds, one game each (`101,102` or `101 102`).
    #[arg(long = "seed", alias = "seeds", allow_negative_numbers = true, num_args = 1.., value_delimiter = ',', default_values_t = [101, 102], value_name = "N")]
    pub seeds: Vec<i64>,
    /// Live steps per seed (fewer if the game ends).
    #[arg(long, allow_negative_numbers = true, default_value_t = 300, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: u64,
    /// JSON report (default: snake-compare-<UTC time>.json).
    #[arg(long, alias = "export-json", value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Replace an existing report instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
}

/// `laya-bench snake bench`.
#[derive(Debug, Clone, Args)]
pub struct SnakeBenchArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The backend that plays: a spec, optionally named (`NAME=SPEC`; without a name it is
    /// named after its spec).
    #[arg(
        long = "backend",
        alias = "arm",
        allow_negative_numbers = true,
        default_value = "portable:f32",
        value_name = "[NAME=]SPEC"
    )]
    pub arm: String,
    /// Board and prompt.
    #[command(flatten)]
    pub game: SnakeGameArgs,
    /// Target decision rates of the paced sweep, per second (`10,20,30` or `10 20 30`).
    #[arg(long = "rate", alias = "rates", num_args = 1.., value_delimiter = ',', default_values_t = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0], value_name = "R", allow_negative_numbers = true)]
    pub rates: Vec<f64>,
    /// Steps of the uncapped episode and of each sweep episode.
    #[arg(long, allow_negative_numbers = true, default_value_t = 120, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sweep_steps: u64,
    /// Steps of each soak episode.
    #[arg(long, allow_negative_numbers = true, default_value_t = 600, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub soak_steps: u64,
    /// Steps of each unshielded top-1 episode.
    #[arg(long, allow_negative_numbers = true, default_value_t = 200, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub raw_steps: u64,
    /// Soak seeds (the first three also play unshielded top-1; `101,102` or `101 102`).
    #[arg(long = "seed", alias = "seeds", allow_negative_numbers = true, num_args = 1.., value_delimiter = ',', default_values_t = [101, 102, 103, 104], value_name = "N")]
    pub seeds: Vec<i64>,
    /// JSON report, rewritten atomically after every episode (default: snake-bench-<UTC time>.json).
    #[arg(long, alias = "export-json", value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Continue the report given with --output: its settings are reused, finished episodes are
    /// skipped, and a different model or arm is refused.
    #[arg(long, requires = "output")]
    pub resume: bool,
    /// Replace an existing report instead of refusing.
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,
}

/// `laya-bench convert-check`.
#[derive(Debug, Clone, Args)]
pub struct ConvertCheckArgs {
    /// The source model, run on portable:f32: `builtin:tiny`, `synthetic:NAME` or a checkpoint folder.
    #[arg(long = "model", alias = "source", allow_negative_numbers = true, value_name = "SPEC")]
    pub source: String,
    /// The candidate backend under test: a backend spec run on the source model (`portable:f16`, `portable:bf16`,
    /// `portable:w8`, `portable:w6`, `portable:w4`, `portable:palette:FILE`), or a model folder:
    /// an ANE or Core ML bundle (also `coreml:FOLDER`), or another checkpoint run on portable:f32.
    #[arg(long = "backend", alias = "candidate", allow_negative_numbers = true, value_name = "SPEC|FOLDER")]
    pub candidate: String,
    /// Suite file (default: the embedded fixtures/suites/default.json; format in docs/convert-check.md).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<std::path::PathBuf>,
    /// Largest allowed |difference| of any calibrated probability or the action probability.
    #[arg(long, default_value_t = 0.02, value_name = "G", allow_negative_numbers = true)]
    pub gate: f64,
    /// Identical candidate calls per question; all must give bit-identical outputs (at least 2).
    #[arg(long, allow_negative_numbers = true, default_value_t = 100, value_name = "N")]
    pub repeats: usize,
    /// Token budget per row (default: the model's max_len, clamped to the candidate's shape),
    /// e.g. 96 to check a portable candidate at the ANE bundle's length.
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub max_len: Option<usize>,
    /// The report (default: convert-check-<UTC time>.json in the current folder).
    #[arg(long, alias = "export-json", value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Replace an existing report instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
}

/// `laya-bench summary`.
#[derive(Debug, Clone, Args)]
pub struct SummaryArgs {
    /// Raw records (`--raw` of `speed` or `energy`); several records of the same arms are
    /// compared side by side.
    #[arg(value_name = "RAW", required_unless_present = "correct")]
    pub raws: Vec<std::path::PathBuf>,
    /// Write the summary (JSON, schema_version 1) here; without it the Markdown report is only
    /// printed to the terminal.
    #[arg(long, alias = "export-json", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Also write the Markdown report (published-style table with intervals).
    #[arg(long = "export-markdown", alias = "markdown", value_name = "FILE")]
    pub markdown: Option<std::path::PathBuf>,
    /// Also write a CSV with one row per block.
    #[arg(long = "export-csv", alias = "csv", value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Write SVG pictures into this folder (created if needed; pictures of the same names in it
    /// are replaced, as every output of summary is: they are derived from the raw records); the
    /// Markdown links them.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<std::path::PathBuf>,
    /// Accepted and ignored, for old scripts: summary's outputs are derived, so existing
    /// --output, --export-markdown and --export-csv files (never a raw record: refused) and --plots pictures
    /// are always replaced.
    #[arg(long, hide = true)]
    pub overwrite: bool,
    /// Bootstrap resamples of whole balanced cycles (0: no intervals).
    #[arg(long, allow_negative_numbers = true, default_value_t = 10_000, value_name = "N")]
    pub bootstrap: usize,
    /// Seed of the bootstrap (same seed, same intervals).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0, value_name = "S")]
    pub seed: u64,
    /// Target energy gain for the claim rule (reached only if the interval's LOWER bound is).
    #[arg(long = "target-gain", alias = "target", value_name = "X", allow_negative_numbers = true)]
    pub target: Option<f64>,
    /// Baseline arm by name (default: each record's first arm).
    #[arg(long, allow_negative_numbers = true, value_name = "ARM")]
    pub baseline: Option<String>,
    /// The regression gate: compare each arm's time per decision with the arm of the same name
    /// in this earlier raw record (same command, model, workload, length and batch), with a
    /// bootstrap interval; the comparison is printed and written with the summary.
    #[arg(long, value_name = "RAW")]
    pub baseline_record: Option<std::path::PathBuf>,
    /// Exit 1 when an arm is slower than in --baseline-record by more than PCT percent even at
    /// its interval's lower bound (e.g. 10); without it the comparison is only reported.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true, requires = "baseline_record")]
    pub fail_if_slower: Option<f64>,
    /// For a record of a run stopped early (Ctrl-C, a crash): summarize its whole balanced
    /// cycles from the start, audited as a run of that many cycles (the status stays
    /// `incomplete`, exit 1; no claim is made). Complete records are summarized as always.
    #[arg(long)]
    pub whole_cycles: bool,
    /// Append a metadata correction to this raw record instead of summarizing (the original
    /// fields and every measurement stay unchanged).
    #[arg(long, value_name = "RAW", requires_all = ["field", "note"], conflicts_with_all = ["raws", "output", "markdown", "csv", "plots", "overwrite", "whole_cycles", "baseline_record", "fail_if_slower"])]
    pub correct: Option<std::path::PathBuf>,
    /// The header field the correction concerns, as a dotted path (`host.cpu_model`, `arms.1.precision`).
    #[arg(long, allow_negative_numbers = true, value_name = "PATH", requires = "correct")]
    pub field: Option<String>,
    /// What is wrong and what is right, in words.
    #[arg(long, allow_negative_numbers = true, value_name = "TEXT", requires = "correct")]
    pub note: Option<String>,
    /// Summarize a record given more than once (by the same path, another path, a link or a
    /// byte-identical copy; --baseline-record included) anyway, comparing it with itself;
    /// refused (exit 2) without this.
    #[arg(long)]
    pub allow_same: bool,
}

/// `laya-bench verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The goldens file (laya-apple 1.7.0's `laya_apple/parity/goldens/*.json` format).
    #[arg(long, value_name = "FILE")]
    pub goldens: std::path::PathBuf,
    /// A backend spec to check (repeat; default `portable:f32`).
    #[arg(long = "backend", value_name = "SPEC")]
    pub backends: Vec<String>,
    /// Write the JSON report (schema_version 1) here.
    #[arg(long, alias = "export-json", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Replace an existing report instead of refusing.
    #[arg(long)]
    pub overwrite: bool,
    /// Absolute part of the logit rule |got − ref| ≤ atol + rtol·|ref| (default: 1e-3 for FP32
    /// backends, 0.1 otherwise).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub logit_atol: Option<f64>,
    /// Relative part of the logit rule (default: 1e-4 for FP32 backends, 0.01 otherwise).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub logit_rtol: Option<f64>,
    /// Largest difference of an answer's probability or confidence (default: 1e-4 for FP32
    /// backends, 0.02 otherwise; a score may move by this times its levels − 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub answer_tol: Option<f64>,
    /// Run even when the checkpoint's weights differ from the goldens' `source_weights_sha256`
    /// (to see which cases another checkpoint fails).
    #[arg(long)]
    pub any_weights: bool,
}
