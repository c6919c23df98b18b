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
