//! Workloads: the built-in invoice states grown or trimmed to an exact row length with the
//! model's own tokenizer, or requests from a file.

use serde_json::Value;

use super::host::{CallOptions, Host};
use super::question::compile_questions;
use crate::error::Error;

/// The embedded invoice workload (`fixtures/workloads/invoice.json`).
pub static INVOICE_JSON: &str = include_str!("../../fixtures/workloads/invoice.json");

/// A workload that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The workload file is malformed.
    #[error("{file}: {detail}")]
    Invalid { file: String, detail: String },
    /// The workload file cannot be read (or never ends, or is far too large).
    #[error(transparent)]
    File(#[from] super::request::InputFileError),
    /// A row cannot be made exactly the requested length.
    #[error("invoice state {state}: {detail}")]
    Length { state: usize, detail: String },
}

/// A built workload: requests in cycle order and each row's real token count.
#[derive(Debug, Clone)]
pub struct Built {
    /// Name for reports.
    pub name: String,
    /// (state, questions, options).
    pub requests: Vec<(Value, Value, CallOptions)>,
    /// Real tokens of each request's rows (all questions), in order.
    pub tokens_per_row: Vec<Vec<usize>>,
}

fn invalid(file: &str, detail: impl Into<String>) -> WorkloadError {
    WorkloadError::Invalid { file: file.into(), detail: detail.into() }
}

/// Row lengths of one request (no truncation allowed: a cut state would fake the length).
fn row_lengths(
    host: &Host<'_>,
    state: &Value,
    questions: &Value,
    max_len: usize,
    allow_truncation: bool,
) -> Result<Vec<usize>, Error> {
    let qs = compile_questions(questions).map_err(|e| Error::input(e.to_string()))?;
    let opts = CallOptions { max_len: Some(max_len), ..CallOptions::default() };
    let rows = host
        .prepare_rows(std::slice::from_ref(state), &qs, &opts)
        .map_err(|e| Error::input(e.to_string()))?;
    if let Some(r) = rows.iter().find(|r| !allow_truncation && r.state.state_tokens_dropped > 0) {
        return Err(Error::input(format!(
            "the state does not fit ({} of its tokens would be cut)",
            r.state.state_tokens_dropped
        )));
    }
    Ok(rows.iter().map(|r| r.ids.len()).collect())
}

/// The invoice workload with every row exactly `tokens` long (rows as docs/host-path.md §3.6
/// assembles them: question head, options, state, separators). Fails, naming the state, when that is impossible.
pub fn invoice(host: &Host<'_>, tokens: usize) -> Result<Built, WorkloadError> {
    let file = "builtin invoice workload";
    let w: Value = serde_json::from_str(INVOICE_JSON).map_err(|e| invalid(file, e.to_string()))?;
    let questions = w.get("questions").cloned().ok_or_else(|| invalid(file, "no `questions`"))?;
    let field = w.get("adjust_field").and_then(Value::as_str).unwrap_or("note").to_string();
    let filler: Vec<String> = w
        .get("filler")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let backoff = w.get("backoff_word").and_then(Value::as_str).unwrap_or("a").to_string();
    let states = w.get("states").and_then(Value::as_array).ok_or_else(|| invalid(file, "no `states`"))?;
    // Long enough that no row is cut while we search.
    let probe_len = tokens.max(1) * 4 + 1024;
    // Every state's shortest row (its `field` empty) first, so a --tokens too small for any
    // of them is answered with the one figure that fits them all.
    let mut floors = Vec::with_capacity(states.len());
    for (i, state) in states.iter().enumerate() {
        let mut s = state.clone();
        s[&field] = Value::String(String::new());
        let lens = row_lengths(host, &s, &questions, probe_len, false)
            .map_err(|d| WorkloadError::Length { state: i, detail: d.to_string() })?;
        floors.push(lens.into_iter().max().unwrap_or(0));
    }
    if let Some((i, &floor)) = floors.iter().enumerate().max_by_key(|&(i, f)| (*f, std::cmp::Reverse(i))) {
        if floor > tokens {
            return Err(WorkloadError::Length {
                state: i,
                detail: format!(
                    "its row is {floor} tokens even with an empty `{field}` (the longest of the {} states); use --tokens {floor} or more",
                    states.len()
                ),
            });
        }
    }
    let mut built = Built { name: "invoice".into(), requests: Vec::new(), tokens_per_row: Vec::new() };
    for (i, state) in states.iter().enumerate() {
        let original = state.get(&field).and_then(Value::as_str).unwrap_or("").to_string();
        let mut words: Vec<String> = original.split_whitespace().map(str::to_string).collect();
        let length_of = |words: &[String]| -> Result<usize, WorkloadError> {
            let mut s = state.clone();
            s[&field] = Value::String(words.join(" "));
            let lens = row_lengths(host, &s, &questions, probe_len, false)
                .map_err(|d| WorkloadError::Length { state: i, detail: d.to_string() })?;
            Ok(lens.into_iter().max().unwrap_or(0))
        };
        // Drop 0, 1, 2, ... words from the end, then grow greedily with filler words (each
        // candidate in turn, then the back-off word) until the row is exactly `tokens` long.
        let base = std::mem::take(&mut words);
        let mut found = None;
        for keep in (0..=base.len()).rev() {
            let mut w: Vec<String> = base[..keep].to_vec();
            if length_of(&w)? > tokens {
                continue;
            }
            let mut k = 0;
            loop {
                let len = length_of(&w)?;
                if len == tokens {
                    found = Some(w);
                    break;
                }
                let mut candidates: Vec<&String> =
                    (0..filler.len()).map(|j| &filler[(k + j) % filler.len()]).collect();
                candidates.push(&backoff);
                let mut pushed = false;
                for c in candidates {
                    w.push(c.clone());
                    if length_of(&w)? <= tokens {
                        pushed = true;
                        break;
                    }
                    w.pop();
                }
                if !pushed {
                    break;
                }
                k += 1;
            }
            if found.is_some() {
                break;
            }
        }
        let Some(words) = found else {
            return Err(WorkloadError::Length {
                state: i,
                detail: format!("no trim of `{field}` plus filler words gives exactly {tokens} tokens with this tokenizer"),
            });
        };
        let mut s = state.clone();
        s[&field] = Value::String(words.join(" "));
        let lens = row_lengths(host, &s, &questions, probe_len, false)
            .map_err(|d| WorkloadError::Length { state: i, detail: d.to_string() })?;
        built.requests.push((s, questions.clone(), CallOptions::default()));
        built.tokens_per_row.push(lens);
    }
    Ok(built)
}

/// Requests from a file: `{"state", "questions", [max_len, head_max_len, min_confidence]}` or a
/// list of them; cycled in file order.
pub fn from_file(path: &std::path::Path, host: &Host<'_>) -> Result<Built, WorkloadError> {
    let file = path.display().to_string();
    // Bounded: a file that never ends (`/dev/zero`) or is far larger than any workload is refused.
    let text = super::request::read_input_file(path)?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| invalid(&file, format!("not valid JSON ({e})")))?;
    let items = match v {
        Value::Array(a) => a,
        other => vec![other],
    };
    if items.is_empty() {
        return Err(invalid(&file, "holds no request"));
    }
    let mut built = Built { name: file.clone(), requests: Vec::new(), tokens_per_row: Vec::new() };
    for (i, item) in items.into_iter().enumerate() {
        let (state, questions, opts) =
            super::request::parse_request(item).map_err(|e| invalid(&file, format!("request {i}: {e}")))?;
        let max_len = opts.max_len.unwrap_or(host.max_len);
        let lens = row_lengths(host, &state, &questions, max_len, true)
            .map_err(|e| invalid(&file, format!("request {i}: {e}")))?;
        built.requests.push((state, questions, opts));
        built.tokens_per_row.push(lens);
    }
    Ok(built)
}
