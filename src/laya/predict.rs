//! What `predict` reads and shows besides the answers: its requests, from a request file (one
//! request or a list) or from inline flags ([`read_requests`]), with the flags' call options
//! as defaults, and the explain view of the rows a call ran ([`explain_json`],
//! [`explain_text`]).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::batch::PreparedBatch;
use super::decode::MinConfidence;
use super::host::{CallOptions, Trace};
use super::question::RequestError;
use super::request::{parse_request, read_input_file, InputFileError};
use super::tokenizer::Tokenizer;
use crate::error::{Classify, Kind};

/// One request: a state, questions and per-call options.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The state.
    pub state: Value,
    /// The questions, by id.
    pub questions: Value,
    /// The call's options: the request's own, else the flags'.
    pub opts: CallOptions,
}

/// Where the requests come from and the flags' call options, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestFlags<'a> {
    /// `--request FILE`: one request object or a list of them.
    pub request: Option<&'a Path>,
    /// `--state TEXT`.
    pub state: Option<&'a str>,
    /// `--questions`: inline JSON, or a file holding it.
    pub questions: Option<&'a str>,
    /// `--max-len`.
    pub max_len: Option<usize>,
    /// `--head-max-len`.
    pub head_max_len: Option<usize>,
    /// `--min-confidence`: a number or a JSON map.
    pub min_confidence: Option<&'a str>,
}

/// Requests that cannot be read: always bad input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum PredictInputError {
    /// The request file cannot be read.
    #[error("cannot read the request file")]
    RequestFile(#[source] InputFileError),
    /// The request file is not JSON.
    #[error("{} is not valid JSON", path.display())]
    RequestJson {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The request file holds an empty list.
    #[error("{}: the request list is empty; add {{\"state\": ..., \"questions\": {{...}}}}", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// One request of the file is invalid.
    #[error("{}: request {index}: {source}", path.display())]
    Request {
        /// The file.
        path: PathBuf,
        /// Its position in the file (0 for a single request).
        index: usize,
        /// What is wrong (kept as the cause).
        source: crate::error::Error,
    },
    /// Neither a request file nor a state and questions.
    #[error(
        "give either --request FILE, or --state TEXT with --questions JSON (see laya-bench predict --help)"
    )]
    NoRequest,
    /// `--questions` is neither inline JSON nor a readable file.
    #[error(
        "--questions: `{arg}` is not inline JSON (it starts with neither `{{` nor `[`), so it was read as a file"
    )]
    QuestionsFile {
        /// The flag's value.
        arg: String,
        /// Why the file cannot be read.
        source: InputFileError,
    },
    /// `--questions` is not JSON.
    #[error("--questions is not valid JSON")]
    QuestionsJson(#[source] serde_json::Error),
    /// `--min-confidence` is neither a number nor a JSON map.
    #[error("--min-confidence: `{0}` is neither a number nor a JSON map")]
    MinConfidenceText(String),
    /// `--min-confidence` is not a valid threshold.
    #[error(transparent)]
    MinConfidence(RequestError),
}

impl Classify for PredictInputError {
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

/// The requests `flags` name: every request of the request file, else the one of
/// `--state` and `--questions`; each with the flags' options where it sets none.
pub fn read_requests(flags: &RequestFlags<'_>) -> Result<Vec<Request>, PredictInputError> {
    let cli_opts = flag_options(flags)?;
    if let Some(path) = flags.request {
        let text = read_input_file(path).map_err(PredictInputError::RequestFile)?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|source| PredictInputError::RequestJson { path: path.to_path_buf(), source })?;
        let items = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        if items.is_empty() {
            return Err(PredictInputError::Empty { path: path.to_path_buf() });
        }
        return items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                let (state, questions, opts) = parse_request(item)
                    .map_err(|e| PredictInputError::Request { path: path.to_path_buf(), index, source: e })?;
                Ok(Request { state, questions, opts: with_defaults(opts, &cli_opts) })
            })
            .collect();
    }
    let (Some(state), Some(questions)) = (flags.state, flags.questions) else {
        return Err(PredictInputError::NoRequest);
    };
    let questions = parse_questions_arg(questions)?;
    Ok(vec![Request { state: Value::String(state.to_string()), questions, opts: cli_opts }])
}

/// Whether the request file at `path` holds a list (its answers are then printed as one).
pub fn is_list_file(path: &Path) -> bool {
    read_input_file(path).map(|t| t.trim_start().starts_with('[')).unwrap_or(false)
}

fn parse_questions_arg(arg: &str) -> Result<Value, PredictInputError> {
    let trimmed = arg.trim_start();
    let text = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        arg.to_string()
    } else {
        read_input_file(Path::new(arg))
            .map_err(|source| PredictInputError::QuestionsFile { arg: arg.to_string(), source })?
    };
    serde_json::from_str(&text).map_err(PredictInputError::QuestionsJson)
}

fn flag_options(flags: &RequestFlags<'_>) -> Result<CallOptions, PredictInputError> {
    let min_confidence = match flags.min_confidence {
        None => None,
        Some(text) => {
            let v: Value = serde_json::from_str(text)
                .map_err(|_| PredictInputError::MinConfidenceText(text.to_string()))?;
            Some(MinConfidence::parse(&v).map_err(PredictInputError::MinConfidence)?)
        }
    };
    Ok(CallOptions {
        max_len: flags.max_len,
        head_max_len: flags.head_max_len,
        min_confidence,
        states_per_batch: None,
    })
}

/// A request's own options, the flags' where it sets none.
fn with_defaults(opts: CallOptions, cli: &CallOptions) -> CallOptions {
    CallOptions {
        max_len: opts.max_len.or(cli.max_len),
        head_max_len: opts.head_max_len.or(cli.head_max_len),
        min_confidence: opts.min_confidence.or_else(|| cli.min_confidence.clone()),
        states_per_batch: None,
    }
}

/// Per question row of a traced call: token ids and strings, markers, qtype and the packed
/// shape it ran at.
pub fn explain_json(tok: &Tokenizer, trace: &Trace, questions: &Value) -> Value {
    let qids: Vec<&String> = questions.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    let mut shapes: Vec<&PreparedBatch> = Vec::new();
    for (batch, _) in &trace.forwards {
        for _ in 0..batch.batch {
            shapes.push(batch);
        }
    }
    let rows: Vec<Value> = trace
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let qtype = ["choice", "score", "noul"].get(row.qtype as usize).copied();
            let shape = shapes
                .get(i)
                .map(|b| json!({"batch": b.batch, "length": b.length, "max_options": b.max_options}));
            json!({
                "question": qids.get(i % qids.len().max(1)).map(|s| s.as_str()),
                "qtype": qtype,
                "length": row.ids.len(),
                "token_ids": row.ids,
                "tokens": row.ids.iter().map(|&id| tok.id_to_token(id)).collect::<Vec<_>>(),
                "marker_pos": row.markers,
                "shape": shape,
            })
        })
        .collect();
    json!({"rows": rows})
}

/// The explain view of request `index` as printed after the answers: two `#` lines per row
/// (what it asks and its `id:token` pairs).
pub fn explain_text(index: usize, explain: &Value) -> String {
    let mut out = String::new();
    for row in explain.get("rows").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&format!(
            "# request {index} question {} qtype {} ({} tokens) markers {} shape {}\n",
            row["question"], row["qtype"], row["length"], row["marker_pos"], row["shape"]
        ));
        let ids = row["token_ids"].as_array().cloned().unwrap_or_default();
        let toks = row["tokens"].as_array().cloned().unwrap_or_default();
        let pairs: Vec<String> =
            ids.iter().zip(&toks).map(|(i, t)| format!("{}:{}", i, t.as_str().unwrap_or(""))).collect();
        out.push_str(&format!("#   {}\n", pairs.join(" ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_flags_make_one_request_with_the_flags_options() {
        let flags = RequestFlags {
            state: Some("s"),
            questions: Some(r#"{"q": {"ask": "x"}}"#),
            max_len: Some(64),
            min_confidence: Some("0.5"),
            ..RequestFlags::default()
        };
        let requests = read_requests(&flags).unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!((requests[0].state.as_str(), requests[0].opts.max_len), (Some("s"), Some(64)));
        assert!(requests[0].opts.min_confidence.is_some());
        let e = read_requests(&RequestFlags { questions: None, ..flags }).unwrap_err();
        assert!(matches!(e, PredictInputError::NoRequest), "{e}");
        let e = read_requests(&RequestFlags { min_confidence: Some("x"), ..flags }).unwrap_err();
        assert_eq!(e.to_string(), "--min-confidence: `x` is neither a number nor a JSON map");
        let e = read_requests(&RequestFlags { questions: Some("/nonexistent/q.json"), ..flags }).unwrap_err();
        assert!(crate::error::chain(&e).contains("so it was read as a file: /nonexistent/q.json"), "{e}");
    }

    #[test]
    fn a_request_file_holds_one_request_or_a_non_empty_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let one = r#"{"state": "s", "questions": {"q": {"ask": "x"}}, "max_len": 32}"#;
        std::fs::write(&path, one).unwrap();
        let flags = RequestFlags {
            request: Some(&path),
            max_len: Some(64),
            head_max_len: Some(8),
            ..Default::default()
        };
        let requests = read_requests(&flags).unwrap();
        assert_eq!((requests[0].opts.max_len, requests[0].opts.head_max_len), (Some(32), Some(8)));
        assert!(!is_list_file(&path));
        std::fs::write(&path, format!("[{one}, 3]")).unwrap();
        assert!(is_list_file(&path));
        let e = read_requests(&flags).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("r.json: request 1: must be an object {\"state\": ..., \"questions\": {...}}"),
            "{e}"
        );
        std::fs::write(&path, "[]").unwrap();
        assert!(matches!(read_requests(&flags).unwrap_err(), PredictInputError::Empty { .. }));
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(read_requests(&flags).unwrap_err(), PredictInputError::RequestJson { .. }));
        assert_eq!(PredictInputError::NoRequest.kind(), Kind::Input);
    }

    #[test]
    fn the_explain_text_has_two_lines_per_row() {
        let e = json!({"rows": [{"question": "q", "qtype": "choice", "length": 2, "token_ids": [5, 6],
            "tokens": ["a", "b"], "marker_pos": [1], "shape": {"batch": 1}}]});
        assert_eq!(
            explain_text(3, &e),
            "# request 3 question \"q\" qtype \"choice\" (2 tokens) markers [1] shape {\"batch\":1}\n#   5:a 6:b\n"
        );
        assert_eq!(explain_text(0, &json!({})), "");
    }
}
