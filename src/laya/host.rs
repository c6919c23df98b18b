//! The shared host path: request → rows → packed batches → backend forward → decoded results.
//!
//! Every backend is timed over this same code (docs/host-path.md §3.1, §3.8–§3.9, §4).

use serde_json::{Map, Value};

use super::batch::{BackendError, Forward, ForwardOutput, PreparedBatch, ShapeCaps};
use super::config::{AgentConfig, OptionLayout};
use super::decode::{decode_answer, softmax_f32, Answer, MinConfidence, ResultShape, Temperatures};
use super::prompt::{build_head, build_row, encode_question, Head, OptionStats, Row};
use super::pyjson::write_dumps;
use super::question::{compile_questions, Question, RequestError};
use super::tokenizer::{Tokenizer, TokenizerError};
use crate::error::Error;

/// A call that could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The request or a question is invalid (exit 2 at the command edge).
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The rows do not fit the backend's graph shapes.
    #[error("{0}")]
    Shape(String),
    /// Tokenization failed.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The backend returned NaN or infinity.
    #[error("Non-finite model outputs from backend `{0}`; the model or backend is broken for this input")]
    NonFinite(String),
}

impl crate::error::Classify for HostError {
    /// A request or shape the host refuses is the caller's input; anything else failed the run.
    fn kind(&self) -> crate::error::Kind {
        match self {
            HostError::Request(_) | HostError::Shape(_) => crate::error::Kind::Input,
            _ => crate::error::Kind::Run,
        }
    }
}

/// Per-call overrides (the reference's `max_len`, `head_max_len`, `min_confidence`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallOptions {
    /// Token budget per row.
    pub max_len: Option<usize>,
    /// Budget for the question head and options.
    pub head_max_len: Option<usize>,
    /// Abstention threshold.
    pub min_confidence: Option<MinConfidence>,
    /// States per logical batch in `predict_batch` (the reference's `batch_size`); all by default.
    pub states_per_batch: Option<usize>,
}

/// The reference's check that `predict_batch` got a list of states.
pub fn states_from_value(states: &Value) -> Result<Vec<Value>, RequestError> {
    match states {
        Value::Array(items) => Ok(items.clone()),
        Value::String(_) | Value::Object(_) => Err(RequestError::Type(
            "predict_batch expects a list of states; pass a single state to predict()/system_one().".into(),
        )),
        other => Err(RequestError::Type(format!(
            "predict_batch expects a list of states, got {}",
            super::pyjson::py_type_name(other)
        ))),
    }
}

/// Token usage of one state's call.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// Σ row lengths of this state's questions (unpadded).
    pub input_tokens: usize,
    /// Tokens of the whole state (`None`: the runtime's result does not say, laya 0.3's shape).
    pub state_tokens: Option<usize>,
    /// Most tokens any question cut from the state (`None`: not said, as above).
    pub state_tokens_dropped: Option<usize>,
    /// Questions whose state was cut, in order.
    pub truncated_questions: Vec<String>,
    /// Questions whose options collapsed under the head budget.
    pub collapsed: Vec<(String, OptionStats)>,
}

/// The result of one state: answers in question order and usage (`None` for `{}` questions).
#[derive(Debug, Clone, PartialEq)]
pub struct StateResult {
    /// (question id, answer) in the questions' order.
    pub answers: Vec<(String, Answer)>,
    /// Token usage; `None` when no question was asked.
    pub usage: Option<Usage>,
}

impl StateResult {
    /// The reference's result dict.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("model".into(), Value::from("laya-rl-agent"));
        let answers: Map<String, Value> =
            self.answers.iter().map(|(k, a)| (k.clone(), a.to_json())).collect();
        m.insert("answers".into(), Value::Object(answers));
        let mut u = Map::new();
        match &self.usage {
            None => {
                u.insert("input_tokens".into(), Value::from(0));
                u.insert("output_tokens".into(), Value::from(0));
            }
            Some(usage) => {
                u.insert("input_tokens".into(), Value::from(usage.input_tokens));
                u.insert("output_tokens".into(), Value::from(0));
                if let (Some(tokens), Some(dropped)) = (usage.state_tokens, usage.state_tokens_dropped) {
                    u.insert("state_tokens".into(), Value::from(tokens));
                    u.insert("state_tokens_dropped".into(), Value::from(dropped));
                    u.insert("truncated".into(), Value::Bool(dropped > 0));
                    u.insert(
                        "truncated_questions".into(),
                        Value::Array(
                            usage.truncated_questions.iter().map(|q| Value::from(q.as_str())).collect(),
                        ),
                    );
                }
                if !usage.collapsed.is_empty() {
                    let mut o = Map::new();
                    for (qid, s) in &usage.collapsed {
                        let mut e = Map::new();
                        e.insert("total".into(), Value::from(s.options));
                        e.insert("distinct".into(), Value::from(s.distinct));
                        e.insert(
                            "tokens_per_option".into(),
                            s.tokens_per_option.map(Value::from).unwrap_or(Value::Null),
                        );
                        o.insert(qid.clone(), Value::Object(e));
                    }
                    u.insert("options".into(), Value::Object(o));
                }
            }
        }
        m.insert("usage".into(), Value::Object(u));
        Value::Object(m)
    }
}

impl StateResult {
    /// The result from the reference's result dict (what [`StateResult::to_json`] writes, as a
    /// reference runtime returns it; keys it adds are ignored). `Err` says what is missing or
    /// of another type: a result of another shape, a failed run.
    pub fn from_json(v: &Value) -> Result<Self, Error> {
        Self::from_json_as(v, ResultShape::Current)
    }

    /// The result from a dict of the shape the runtime declared: laya 0.3's may lack
    /// `answer_confidence` and must state `usage.input_tokens`. In any shape, a `usage` with
    /// only `input_tokens` keeps it, the state's counts `None`.
    pub fn from_json_as(v: &Value, shape: ResultShape) -> Result<Self, Error> {
        fn missing(what: &'static str) -> impl Fn() -> Error {
            move || Error::run(what)
        }
        let m = v.as_object().ok_or_else(missing("the result is not an object"))?;
        let answers = m
            .get("answers")
            .and_then(Value::as_object)
            .ok_or_else(missing("the result has no `answers` object"))?
            .iter()
            .map(|(k, a)| match Answer::from_json_as(a, shape) {
                Ok(a) => Ok((k.clone(), a)),
                Err(e) => Err(Error::run(format!("answer `{k}`: {e}")).because(e)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let u = m
            .get("usage")
            .and_then(Value::as_object)
            .ok_or_else(missing("the result has no `usage` object"))?;
        let count = |k: &str| -> Result<usize, Error> {
            u.get(k)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or_else(|| Error::run(format!("usage `{k}` is not a count")))
        };
        let usage = if u.contains_key("state_tokens") {
            let truncated_questions = match u.get("truncated_questions") {
                None => Vec::new(),
                Some(q) => q
                    .as_array()
                    .ok_or_else(missing("usage `truncated_questions` is not a list"))?
                    .iter()
                    .map(|q| {
                        q.as_str().map(str::to_string).ok_or_else(missing("a truncated question is not text"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            let mut collapsed = Vec::new();
            if let Some(o) = u.get("options") {
                for (qid, e) in o.as_object().ok_or_else(missing("usage `options` is not an object"))? {
                    let n = |k: &str| e.get(k).and_then(Value::as_u64).map(|n| n as usize);
                    collapsed.push((
                        qid.clone(),
                        OptionStats {
                            options: n("total")
                                .ok_or_else(missing("usage options `total` is not a count"))?,
                            distinct: n("distinct")
                                .ok_or_else(missing("usage options `distinct` is not a count"))?,
                            tokens_per_option: n("tokens_per_option"),
                        },
                    ));
                }
            }
            Some(Usage {
                input_tokens: count("input_tokens")?,
                state_tokens: Some(count("state_tokens")?),
                state_tokens_dropped: Some(count("state_tokens_dropped")?),
                truncated_questions,
                collapsed,
            })
        } else if !answers.is_empty() && (shape == ResultShape::Laya03 || u.contains_key("input_tokens")) {
            // Only the rows' token count is stated (laya 0.3's usage, or a runtime that says
            // no more): kept, the state's counts left unknown. Read alike in every shape, so a
            // record's stated results compare as the run compared them.
            Some(Usage {
                input_tokens: count("input_tokens")?,
                state_tokens: None,
                state_tokens_dropped: None,
                truncated_questions: Vec::new(),
                collapsed: Vec::new(),
            })
        } else {
            None
        };
        Ok(StateResult { answers, usage })
    }
}

/// What a traced call saw: every row, every packed batch and what the backend returned.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Rows in order (all states × questions).
    pub rows: Vec<Row>,
    /// Each forward call's input and output.
    pub forwards: Vec<(PreparedBatch, ForwardOutput)>,
}

/// The host of one model for one backend shape: tokenizer, configs, temperatures, budgets.
pub struct Host<'t> {
    /// The checkpoint tokenizer.
    pub tokenizer: &'t Tokenizer,
    /// Shapes of the backend the rows are packed for.
    pub shapes: ShapeCaps,
    /// Default `max_len` (the config's, clamped to the graph's max length).
    pub max_len: usize,
    /// Default `head_max_len`.
    pub head_max_len: usize,
    /// Temperatures as applied.
    pub temperatures: Temperatures,
    /// Parallel option layout.
    pub parallel: bool,
    /// Question-head cache of the MLX baseline ([`Host::with_prefix_cache`]); `None` builds
    /// every head on every call.
    pub prefix_cache: Option<std::sync::Mutex<super::prefix::PrefixCache>>,
}

impl<'t> Host<'t> {
    /// A host for `agent`'s checkpoint packed into `shapes` (`_init_host` clamps `max_len`).
    pub fn new(tokenizer: &'t Tokenizer, agent: &AgentConfig, shapes: ShapeCaps) -> Self {
        Self {
            tokenizer,
            max_len: agent.max_len.min(shapes.max_length),
            head_max_len: agent.head_max_len,
            temperatures: Temperatures::from_config(agent),
            parallel: agent.option_layout == OptionLayout::Parallel,
            shapes,
            prefix_cache: None,
        }
    }

    /// Reuse question heads across calls through a bounded cache (the published MLX
    /// baseline's prompt-prefix cache; results are unchanged, see [`super::prefix`]).
    pub fn with_prefix_cache(mut self, capacity: usize) -> Self {
        self.prefix_cache = Some(std::sync::Mutex::new(super::prefix::PrefixCache::new(capacity)));
        self
    }

    /// The head of `q`, from the prefix cache when there is one.
    fn head(&self, q: &Question, head_max_len: usize) -> Result<std::sync::Arc<Head>, TokenizerError> {
        let tok = self.tokenizer;
        match &self.prefix_cache {
            Some(cache) => cache.lock().unwrap_or_else(|e| e.into_inner()).head(tok, q, head_max_len),
            None => Ok(std::sync::Arc::new(build_head(tok, &encode_question(tok, q)?, q, head_max_len))),
        }
    }

    /// The same host packing at most `rows` rows per forward (and without a prefix cache,
    /// which never changes a result): `speed --batch N` answers each request alone with it
    /// to check a batched result against the unbatched one.
    pub fn with_batch_size(&self, rows: usize) -> Host<'t> {
        Host {
            tokenizer: self.tokenizer,
            shapes: ShapeCaps { batch_size: rows.max(1), ..self.shapes.clone() },
            max_len: self.max_len,
            head_max_len: self.head_max_len,
            temperatures: self.temperatures.clone(),
            parallel: self.parallel,
            prefix_cache: None,
        }
    }

    /// Warnings the reference emits at load (temperature clamps).
    pub fn load_warnings(&self) -> Vec<String> {
        self.temperatures.warning.iter().cloned().collect()
    }

    /// `predict(state, questions)`.
    pub fn predict(
        &self,
        backend: &mut (impl Forward + ?Sized),
        state: &Value,
        questions: &Value,
        opts: &CallOptions,
        trace: Option<&mut Trace>,
    ) -> Result<StateResult, HostError> {
        let mut out = self.predict_batch(backend, std::slice::from_ref(state), questions, opts, trace)?;
        Ok(out.pop().unwrap_or(StateResult { answers: Vec::new(), usage: None }))
    }

    /// `predict_batch(states, questions)`: every state's rows share the packed forwards.
    pub fn predict_batch(
        &self,
        backend: &mut (impl Forward + ?Sized),
        states: &[Value],
        questions: &Value,
        opts: &CallOptions,
        mut trace: Option<&mut Trace>,
    ) -> Result<Vec<StateResult>, HostError> {
        if !questions.is_object() {
            compile_questions(questions)?;
        }
        if states.iter().any(Value::is_null) {
            return Err(
                RequestError::Type("state must not be None; pass a string, dict, or list".into()).into()
            );
        }
        let qmap = questions.as_object().map(Map::len).unwrap_or(0);
        if states.is_empty() {
            return Ok(Vec::new());
        }
        if qmap == 0 {
            return Ok(states.iter().map(|_| StateResult { answers: Vec::new(), usage: None }).collect());
        }
        let qs = compile_questions(questions)?;
        let chunk = opts.states_per_batch.filter(|&n| n > 0).unwrap_or(states.len());
        let mut results = Vec::with_capacity(states.len());
        let mut all_rows = Vec::new();
        let mut scratch = Vec::new();
        for part in states.chunks(chunk) {
            let rows = self.prepare_rows(part, &qs, opts)?;
            let outputs = self.run_rows(backend, &rows, trace.as_deref_mut())?;
            for (s, state_rows) in rows.chunks(qs.len()).enumerate() {
                let mut answers = Vec::with_capacity(qs.len());
                for (j, (q, row)) in qs.iter().zip(state_rows).enumerate() {
                    let (logits, p0) = &outputs[s * qs.len() + j];
                    let mut a =
                        decode_answer(q, &self.temperatures, &logits[..row.markers.len()], *p0, &mut scratch);
                    if let Some(gate) = &opts.min_confidence {
                        a.apply_gate(gate);
                    }
                    answers.push((q.id.clone(), a));
                }
                results.push(StateResult { answers, usage: Some(usage(&qs, state_rows)) });
            }
            if trace.is_some() {
                all_rows.extend(rows);
            }
        }
        if let Some(t) = trace {
            t.rows = all_rows;
        }
        Ok(results)
    }
    /// Tokenize and build every row (states × questions, in order).
    pub fn prepare_rows(
        &self,
        states: &[Value],
        qs: &[Question],
        opts: &CallOptions,
    ) -> Result<Vec<Row>, HostError> {
        let max_len = opts.max_len.unwrap_or(self.max_len);
        let head_max_len = opts.head_max_len.unwrap_or(self.head_max_len);
        let tok = self.tokenizer;
        let heads =
            qs.iter().map(|q| self.head(q, head_max_len)).collect::<Result<Vec<_>, TokenizerError>>()?;
        let mut rows = Vec::with_capacity(states.len() * qs.len());
        let mut text = String::new();
        let mut state_ids = Vec::new();
        for state in states {
            text.clear();
            match state {
                Value::String(s) => text.push_str(s),
                other => write_dumps(&mut text, other),
            }
            let sanitized = text.replace(tok.mask.text.as_str(), " ");
            state_ids.clear();
            tok.encode_into(&sanitized, &mut state_ids)?;
            let left = state.is_array();
            for (q, head) in qs.iter().zip(&heads) {
                rows.push(build_row(tok, head, q, &state_ids, left, max_len, head_max_len, self.parallel)?);
            }
        }
        Ok(rows)
    }

    /// Pack rows into graph-shaped batches, run them, and return per row the slot logits and
    /// the action softmax's first probability.
    pub fn run_rows(
        &self,
        backend: &mut (impl Forward + ?Sized),
        rows: &[Row],
        mut trace: Option<&mut Trace>,
    ) -> Result<Vec<(Vec<f32>, f32)>, HostError> {
        let lmax = rows.iter().map(|r| r.ids.len()).max().unwrap_or(0);
        let width = rows.iter().map(|r| r.markers.len()).max().unwrap_or(0);
        let mut out = Vec::with_capacity(rows.len());
        let mut batch = PreparedBatch::default();
        let mut fwd = ForwardOutput::default();
        let mut probs = Vec::new();
        for chunk in rows.chunks(self.shapes.batch_size.max(1)) {
            self.pack(chunk, lmax, &mut batch)?;
            backend.forward(&batch, &mut fwd)?;
            if fwd.logits.iter().chain(&fwd.action_logits).any(|v| !v.is_finite()) {
                return Err(HostError::NonFinite(backend.name().to_string()));
            }
            let k = fwd.max_options;
            let a = fwd.num_actions;
            for r in 0..chunk.len() {
                let logits = fwd.logits[r * k..r * k + width.min(k)].to_vec();
                softmax_f32(&fwd.action_logits[r * a..(r + 1) * a], &mut probs);
                out.push((logits, probs.first().copied().unwrap_or(f32::NAN)));
            }
            if let Some(t) = trace.as_deref_mut() {
                t.forwards.push((batch.clone(), fwd.clone()));
            }
        }
        Ok(out)
    }

    /// `inputs.collate_items`: one chunk of rows into the graph's B, L and K.
    pub fn pack(
        &self,
        chunk: &[Row],
        minimum_length: usize,
        batch: &mut PreparedBatch,
    ) -> Result<(), HostError> {
        let shapes = &self.shapes;
        if chunk.is_empty() || chunk.len() > shapes.batch_size {
            return Err(HostError::Shape("Batch must contain 1..exported batch_size questions".into()));
        }
        let longest = chunk.iter().map(|r| r.ids.len()).max().unwrap_or(0);
        let length = minimum_length.max(longest);
        let limit = shapes.max_length;
        if length > limit {
            return Err(HostError::Shape(format!(
                "Input has {length} tokens, but this export supports at most {limit}"
            )));
        }
        if chunk.iter().any(|r| r.markers.len() > shapes.max_options) {
            return Err(HostError::Shape(
                "Question exceeds the exported max_options; convert with a larger value".into(),
            ));
        }
        let length = shapes.graph_length(length).ok_or_else(|| {
            HostError::Shape(format!("Input has {length} tokens, but no exported length holds it"))
        })?;
        let (b, k) = (shapes.batch_size, shapes.max_options);
        batch.reset(b, length, k, self.tokenizer.pad.id as i32, self.parallel);
        for (row, item) in chunk.iter().enumerate() {
            let base = row * length;
            for (t, &id) in item.ids.iter().enumerate() {
                batch.input_ids[base + t] = id as i32;
                batch.attention_mask[base + t] = 1;
            }
            for (j, &m) in item.markers.iter().enumerate() {
                batch.marker_pos[row * k + j] = m as i32;
                batch.marker_mask[row * k + j] = 1;
            }
            batch.qtype[row] = item.qtype;
            if let (Some(layout), Some(pos), Some(opt)) =
                (&item.layout, batch.position_ids.as_mut(), batch.option_ids.as_mut())
            {
                for (t, (&p, &o)) in layout.position_ids.iter().zip(&layout.option_ids).enumerate() {
                    pos[base + t] = p as i32;
                    opt[base + t] = o as i32;
                }
            }
        }
        Ok(())
    }
}

fn usage(qs: &[Question], rows: &[Row]) -> Usage {
    Usage {
        input_tokens: rows.iter().map(|r| r.ids.len()).sum(),
        state_tokens: Some(rows.first().map(|r| r.state.state_tokens).unwrap_or(0)),
        state_tokens_dropped: Some(rows.iter().map(|r| r.state.state_tokens_dropped).max().unwrap_or(0)),
        truncated_questions: qs
            .iter()
            .zip(rows)
            .filter(|(_, r)| r.state.state_tokens_dropped > 0)
            .map(|(q, _)| q.id.clone())
            .collect(),
        collapsed: qs
            .iter()
            .zip(rows)
            .filter(|(_, r)| r.options.distinct < r.options.options)
            .map(|(q, r)| (q.id.clone(), r.options))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::StateResult;
    use crate::error::{chain, Classify, Kind};
    use serde_json::json;

    #[test]
    fn a_result_of_another_shape_is_a_failed_run_naming_what_is_wrong() {
        let usage = json!({"input_tokens": 3});
        let ok = json!({"answers": {}, "usage": usage});
        assert!(StateResult::from_json(&ok).unwrap().answers.is_empty());
        let e = StateResult::from_json(&json!({"answers": {}})).unwrap_err();
        assert_eq!((e.kind(), e.to_string().as_str()), (Kind::Run, "the result has no `usage` object"));
        // an answer's own error is the cause, quoted once
        let bad = json!({"answers": {"q": {"type": "noul"}}, "usage": usage});
        let e = StateResult::from_json(&bad).unwrap_err();
        assert_eq!(e.to_string(), "answer `q`: no `noul`");
        assert_eq!(std::error::Error::source(&e).map(ToString::to_string).as_deref(), Some("no `noul`"));
        assert_eq!(chain(&e), "answer `q`: no `noul`");
        let e = StateResult::from_json(&json!({"answers": {}, "usage": {"state_tokens": "3"}})).unwrap_err();
        assert_eq!(e.to_string(), "usage `input_tokens` is not a count");
    }

    #[test]
    fn laya_0_3_results_keep_what_they_state_and_nothing_else() {
        use crate::laya::decode::ResultShape;
        let noul =
            json!({"type": "noul", "confidence": 0.75, "action": {"act_probability": 0.5}, "noul": 0.25});
        let r = json!({"answers": {"q": noul}, "usage": {"input_tokens": 40, "output_tokens": 0}});
        // undeclared, the missing `answer_confidence` is another shape: a failed run
        let e = StateResult::from_json(&r).unwrap_err();
        assert_eq!(e.to_string(), "answer `q`: no `answer_confidence`");
        let got = StateResult::from_json_as(&r, ResultShape::Laya03).unwrap();
        assert_eq!(got.answers[0].1.answer_confidence, None);
        let u = got.usage.as_ref().unwrap();
        assert_eq!((u.input_tokens, u.state_tokens, u.state_tokens_dropped), (40, None, None));
        // written back: the runtime's own dict, nothing added
        assert_eq!(got.to_json()["answers"], r["answers"]);
        assert_eq!(got.to_json()["usage"], r["usage"]);
        // a usage with only input_tokens is read alike in either shape
        let mut full = noul.clone();
        full["answer_confidence"] = json!(0.75);
        let cur =
            StateResult::from_json(&json!({"answers": {"q": full}, "usage": {"input_tokens": 40}})).unwrap();
        assert_eq!(cur.usage, got.usage);
        // laya 0.3's shape must state the rows' tokens
        let e = StateResult::from_json_as(&json!({"answers": {"q": noul}, "usage": {}}), ResultShape::Laya03)
            .unwrap_err();
        assert_eq!(e.to_string(), "usage `input_tokens` is not a count");
    }
}
