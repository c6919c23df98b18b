//! Logits → typed answers (docs/host-path.md §4): temperature buckets with the [0.5, 5] clamp,
//! f32 softmax as the reference computes it, per-type decoding, 4-decimal rounding, and the
//! optional abstention gate.

use serde_json::{Map, Value};

use super::config::AgentConfig;
use super::pyjson::{format_g, py_repr, round4};
use super::question::{QType, Question, RequestError};
use crate::error::Error;

/// Lowest temperature applied.
pub const TEMP_MIN: f64 = 0.5;
/// Highest temperature applied.
pub const TEMP_MAX: f64 = 5.0;

/// Option-count bucket of a question: `"<type>:<2|3-5|6-10|11+>"`.
pub fn temp_bucket(qtype: QType, k: usize) -> String {
    format!("{}:{}", qtype.name(), size_bucket(k))
}

const SIZES: [&str; 4] = ["2", "3-5", "6-10", "11+"];

fn size_index(k: usize) -> usize {
    match k {
        0..=2 => 0,
        3..=5 => 1,
        6..=10 => 2,
        _ => 3,
    }
}

fn size_bucket(k: usize) -> &'static str {
    SIZES[size_index(k)]
}

/// Python `float(v)` for a JSON value, `None` where Python would raise.
fn py_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let t = super::pyjson::py_strip(s);
            let cleaned: String = t.chars().filter(|c| *c != '_').collect();
            cleaned.parse::<f64>().ok()
        }
        _ => None,
    }
}

/// `clamp_temperature`: bools and non-numbers → 1.0, NaN/inf → 1.0, else clamped to [0.5, 5].
pub fn clamp_temperature(v: &Value) -> f64 {
    if v.is_boolean() {
        return 1.0;
    }
    match py_float(v) {
        Some(t) if t.is_finite() => t.clamp(TEMP_MIN, TEMP_MAX),
        _ => 1.0,
    }
}

fn rejected(raw: &Value, applied: f64) -> bool {
    if raw.is_boolean() {
        return true;
    }
    match py_float(raw) {
        Some(v) => v != applied,
        None => true,
    }
}

/// Temperatures as applied, with the load-time warning the reference emits for clamped entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Temperatures {
    /// Per-qtype temperature `[choice, score, noul]`.
    pub by_type: [f64; 3],
    /// Bucket → temperature.
    pub by_bucket: Vec<(String, f64)>,
    /// The clamp warning, if any entry was replaced.
    pub warning: Option<String>,
    table: [[Option<f64>; 4]; 3],
}

impl Temperatures {
    /// Resolve a checkpoint's raw temperatures (`read_temperatures`).
    pub fn from_config(cfg: &AgentConfig) -> Self {
        let by_type = [
            clamp_temperature(&cfg.temperature[0]),
            clamp_temperature(&cfg.temperature[1]),
            clamp_temperature(&cfg.temperature[2]),
        ];
        let by_bucket: Vec<(String, f64)> =
            cfg.temperature_by_options.iter().map(|(k, v)| (k.clone(), clamp_temperature(v))).collect();
        let mut entries: Vec<String> = Vec::new();
        for ((name, raw), (_, applied)) in cfg.temperature_by_options.iter().zip(&by_bucket) {
            if rejected(raw, *applied) {
                entries.push(format!("{name}={} -> {}", py_repr(raw), format_g(*applied)));
            }
        }
        for (i, raw) in cfg.temperature.iter().enumerate() {
            if rejected(raw, by_type[i]) {
                entries.push(format!("temperature[{i}]={} -> {}", py_repr(raw), format_g(by_type[i])));
            }
        }
        let warning = (!entries.is_empty()).then(|| {
            format!(
                "laya: this checkpoint ships temperatures outside [{}, {}] which would distort confidence; clamping {}. Treat confidence from the affected buckets as uncalibrated.",
                format_g(TEMP_MIN),
                format_g(TEMP_MAX),
                entries.join(", ")
            )
        });
        let mut table = [[None; 4]; 3];
        for (name, t) in &by_bucket {
            for qtype in [QType::Choice, QType::Score, QType::Noul] {
                for (i, size) in SIZES.iter().enumerate() {
                    if name.split_once(':') == Some((qtype.name(), size)) {
                        table[qtype as usize][i] = Some(*t);
                    }
                }
            }
        }
        Self { by_type, by_bucket, warning, table }
    }

    /// The temperature for a question type with `k` options.
    pub fn for_question(&self, qtype: QType, k: usize) -> f64 {
        self.table[qtype as usize][size_index(k)].unwrap_or(self.by_type[qtype as usize])
    }
}

/// The abstention threshold: one value, or per-bucket with an optional `default`.
#[derive(Debug, Clone, PartialEq)]
pub enum MinConfidence {
    /// One threshold for every answer.
    Scalar(f64),
    /// Bucket (or `default`) → threshold, in the caller's order.
    Map(Vec<(String, f64)>),
}

fn check_threshold(v: &Value) -> Result<f64, RequestError> {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() && (0.0..=1.0).contains(&x) => Ok(x),
            _ => Err(threshold_error(v)),
        },
        _ => Err(threshold_error(v)),
    }
}

fn threshold_error(v: &Value) -> RequestError {
    RequestError::Value(format!("min_confidence must be a float in [0.0, 1.0], got {}", py_repr(v)))
}

impl MinConfidence {
    /// Validate a `min_confidence` value (`check_min_confidence`).
    pub fn parse(v: &Value) -> Result<Self, RequestError> {
        match v {
            Value::Object(m) => {
                if m.is_empty() {
                    return Err(RequestError::Value(format!(
                        "a min_confidence map must be a non-empty dict of bucket -> float, got {}",
                        py_repr(v)
                    )));
                }
                let mut out = Vec::with_capacity(m.len());
                for (key, val) in m {
                    let allowed = key == "default"
                        || key.split_once(':').is_some_and(|(t, s)| {
                            matches!(t, "choice" | "score" | "noul")
                                && matches!(s, "2" | "3-5" | "6-10" | "11+")
                        });
                    if !allowed {
                        return Err(RequestError::Value(format!(
                            "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got {}",
                            super::pyjson::str_repr(key)
                        )));
                    }
                    out.push((key.clone(), check_threshold(val)?));
                }
                Ok(Self::Map(out))
            }
            other => Ok(Self::Scalar(check_threshold(other)?)),
        }
    }

    fn threshold_for(&self, bucket: &str) -> f64 {
        match self {
            Self::Scalar(t) => *t,
            Self::Map(m) => m
                .iter()
                .find(|(k, _)| k == bucket)
                .or_else(|| m.iter().find(|(k, _)| k == "default"))
                .map(|(_, t)| *t)
                .unwrap_or(0.0),
        }
    }
}

/// The type-specific part of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerValue {
    /// Choice: the selected key and one probability per option.
    Choice {
        /// Selected key, with its JSON type.
        choice: Value,
        /// (key text, probability) per option in label order.
        probabilities: Vec<(String, f64)>,
    },
    /// Score: expected level, legend and per-level probabilities.
    Score {
        /// Σ i·p_i.
        score: f64,
        /// Level texts.
        legend: Vec<String>,
        /// Probability per level.
        probabilities: Vec<f64>,
    },
    /// Noul: P(true).
    Noul {
        /// P(true).
        noul: f64,
    },
}

/// The gate's verdict on one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abstention {
    /// Confidence cleared the threshold.
    Passed,
    /// Confidence fell below it.
    Abstained,
    /// No usable confidence.
    Unevaluated,
}

impl Abstention {
    /// Wire name.
    pub fn name(self) -> &'static str {
        match self {
            Abstention::Passed => "passed",
            Abstention::Abstained => "abstained",
            Abstention::Unevaluated => "unevaluated",
        }
    }
}

/// The shape of a result dict a runtime returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultShape {
    /// laya 0.4's: every answer carries `answer_confidence`, `usage` may carry the state's
    /// token counts.
    #[default]
    Current,
    /// laya 0.3's (laya-cuda 0.1 returns it): no `answer_confidence`; `usage` carries only
    /// `input_tokens` and `output_tokens`. Answers, probabilities, noul values, `confidence`
    /// and `act_probability` are the same fields as laya 0.4's.
    Laya03,
}

impl ResultShape {
    /// Wire name (`laya-0.3` in the worker's ready line; `current` is the default there).
    pub fn name(self) -> &'static str {
        match self {
            ResultShape::Current => "current",
            ResultShape::Laya03 => "laya-0.3",
        }
    }

    /// The shape a wire name names.
    pub fn from_name(name: &str) -> Option<Self> {
        [ResultShape::Current, ResultShape::Laya03].into_iter().find(|s| s.name() == name)
    }

    /// The fields a result of this shape lacks against laya 0.4's, for notes and reports.
    pub fn lacks(self) -> &'static [&'static str] {
        match self {
            ResultShape::Current => &[],
            ResultShape::Laya03 => &[
                "answer_confidence",
                "usage.state_tokens",
                "usage.state_tokens_dropped",
                "usage.truncated",
                "usage.truncated_questions",
            ],
        }
    }
}

/// One decoded answer, every number already rounded to 4 decimals.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Question type.
    pub qtype: QType,
    /// Type-specific values.
    pub value: AnswerValue,
    /// Normalized-entropy confidence (noul: max(p, 1 − p)).
    pub confidence: f64,
    /// max(p); `None` in a result of laya 0.3's shape, which does not carry it
    /// ([`ResultShape::Laya03`]).
    pub answer_confidence: Option<f64>,
    /// `softmax(action logits)[0]`.
    pub act_probability: f64,
    /// Gate result and threshold, when `min_confidence` was given.
    pub gate: Option<(Abstention, f64)>,
}

impl Answer {
    /// Selected option index (choice argmax, noul 1 if P(true) > 0.5, score rounded level).
    pub fn selected_label(&self) -> String {
        match &self.value {
            AnswerValue::Choice { choice, .. } => super::pyjson::json_key(choice),
            AnswerValue::Score { score, .. } => format!("{score}"),
            AnswerValue::Noul { noul } => format!("{noul}"),
        }
    }

    /// The answer as the reference's dict (field order preserved).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.qtype.name()));
        match &self.value {
            AnswerValue::Choice { choice, probabilities } => {
                m.insert("choice".into(), choice.clone());
                let p: Map<String, Value> =
                    probabilities.iter().map(|(k, v)| (k.clone(), f64_value(*v))).collect();
                m.insert("probabilities".into(), Value::Object(p));
            }
            AnswerValue::Score { score, legend, probabilities } => {
                m.insert("score".into(), f64_value(*score));
                let l: Map<String, Value> = legend
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (i.to_string(), Value::from(t.as_str())))
                    .collect();
                m.insert("legend".into(), Value::Object(l));
                let p: Map<String, Value> =
                    probabilities.iter().enumerate().map(|(i, v)| (i.to_string(), f64_value(*v))).collect();
                m.insert("probabilities".into(), Value::Object(p));
            }
            AnswerValue::Noul { noul } => {
                m.insert("noul".into(), f64_value(*noul));
            }
        }
        m.insert("confidence".into(), f64_value(self.confidence));
        if let Some(c) = self.answer_confidence {
            m.insert("answer_confidence".into(), f64_value(c));
        }
        let mut action = Map::new();
        action.insert("act_probability".into(), f64_value(self.act_probability));
        m.insert("action".into(), Value::Object(action));
        if let Some((state, threshold)) = self.gate {
            if state == Abstention::Abstained {
                m.insert("low_confidence".into(), Value::Bool(true));
            }
            m.insert("abstention".into(), Value::from(state.name()));
            m.insert("abstention_threshold".into(), f64_value(threshold));
        }
        Value::Object(m)
    }

    /// The answer from the reference's dict (what [`Answer::to_json`] writes; keys a runtime
    /// adds are ignored). `Err` (a failed run: the runtime answered in another shape) names
    /// what is missing or of another type.
    pub fn from_json(v: &Value) -> Result<Self, Error> {
        Self::from_json_as(v, ResultShape::Current)
    }

    /// The answer from a dict of the given shape: [`ResultShape::Laya03`] may lack
    /// `answer_confidence` (it is then `None`, never made up); every other field is required
    /// as for [`ResultShape::Current`].
    pub fn from_json_as(v: &Value, shape: ResultShape) -> Result<Self, Error> {
        fn missing(what: &'static str) -> impl Fn() -> Error {
            move || Error::run(what)
        }
        let m = v.as_object().ok_or_else(missing("an answer is not an object"))?;
        let num = |o: &Map<String, Value>, k: &str| -> Result<f64, Error> {
            match o.get(k) {
                Some(Value::Null) => Ok(f64::NAN),
                Some(x) => x.as_f64().ok_or_else(|| Error::run(format!("`{k}` is not a number"))),
                None => Err(Error::run(format!("no `{k}`"))),
            }
        };
        let qtype = match m.get("type").and_then(Value::as_str) {
            Some("choice") => QType::Choice,
            Some("score") => QType::Score,
            Some("noul") => QType::Noul,
            _ => return Err(Error::run("`type` is not choice, score or noul")),
        };
        let probs = || {
            m.get("probabilities").and_then(Value::as_object).ok_or_else(missing("no `probabilities` object"))
        };
        let value = match qtype {
            QType::Choice => AnswerValue::Choice {
                choice: m.get("choice").cloned().ok_or_else(missing("no `choice`"))?,
                probabilities: probs()?
                    .iter()
                    .map(|(k, p)| {
                        p.as_f64()
                            .map(|p| (k.clone(), p))
                            .ok_or_else(|| Error::run(format!("probability `{k}` is not a number")))
                    })
                    .collect::<Result<_, _>>()?,
            },
            QType::Score => AnswerValue::Score {
                score: num(m, "score")?,
                legend: m
                    .get("legend")
                    .and_then(Value::as_object)
                    .ok_or_else(missing("no `legend` object"))?
                    .values()
                    .map(|t| t.as_str().map(str::to_string).ok_or_else(missing("a legend entry is not text")))
                    .collect::<Result<_, _>>()?,
                probabilities: probs()?
                    .values()
                    .map(|p| p.as_f64().ok_or_else(missing("a probability is not a number")))
                    .collect::<Result<_, _>>()?,
            },
            QType::Noul => AnswerValue::Noul { noul: num(m, "noul")? },
        };
        let action = m.get("action").and_then(Value::as_object).ok_or_else(missing("no `action` object"))?;
        let gate = match m.get("abstention").and_then(Value::as_str) {
            None => None,
            Some(name) => {
                let state = [Abstention::Passed, Abstention::Abstained, Abstention::Unevaluated]
                    .into_iter()
                    .find(|a| a.name() == name)
                    .ok_or_else(|| {
                        Error::run(format!("`abstention` `{name}` is not passed, abstained or unevaluated"))
                    })?;
                Some((state, num(m, "abstention_threshold")?))
            }
        };
        Ok(Answer {
            qtype,
            value,
            confidence: num(m, "confidence")?,
            answer_confidence: match (shape, m.get("answer_confidence")) {
                (ResultShape::Laya03, None) => None,
                _ => Some(num(m, "answer_confidence")?),
            },
            act_probability: num(action, "act_probability")?,
            gate,
        })
    }

    fn bucket(&self) -> String {
        let k = match &self.value {
            AnswerValue::Choice { probabilities, .. } => probabilities.len(),
            AnswerValue::Score { probabilities, .. } => probabilities.len(),
            AnswerValue::Noul { .. } => 2,
        };
        temp_bucket(self.qtype, k)
    }

    /// Apply the abstention gate (`apply_confidence_gate`).
    pub fn apply_gate(&mut self, gate: &MinConfidence) {
        let threshold = gate.threshold_for(&self.bucket());
        let conf = self.answer_confidence.unwrap_or(f64::NAN);
        let state = if !conf.is_finite() {
            Abstention::Unevaluated
        } else if conf < threshold {
            Abstention::Abstained
        } else {
            Abstention::Passed
        };
        self.gate = Some((state, threshold));
    }
}

/// A float as a JSON number (non-finite values have no JSON form and become null).
pub fn f64_value(x: f64) -> Value {
    serde_json::Number::from_f64(x).map(Value::Number).unwrap_or(Value::Null)
}

/// numpy's `sum` order for a contiguous 1-D array: sequential below 8 elements, else eight
/// interleaved partial sums combined pairwise, then the tail (`pairwise_sum`, n <= 128).
pub fn np_sum<T: Copy + std::ops::Add<Output = T> + Default>(x: &[T]) -> T {
    let n = x.len();
    if n < 8 {
        let mut s = T::default();
        for &v in x {
            s = s + v;
        }
        return s;
    }
    if n > 128 {
        let half = (n / 2) - (n / 2) % 8;
        return np_sum(&x[..half]) + np_sum(&x[half..]);
    }
    let mut r = [x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]];
    let mut i = 8;
    while i + 8 <= n {
        for j in 0..8 {
            r[j] = r[j] + x[i + j];
        }
        i += 8;
    }
    let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for &v in &x[i..] {
        s = s + v;
    }
    s
}

/// Softmax in f32 as numpy computes `exp(z - max) / sum`, written into `out`.
pub fn softmax_f32(z: &[f32], out: &mut Vec<f32>) {
    out.clear();
    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    out.extend(z.iter().map(|&v| (v - max).exp()));
    let sum: f32 = np_sum(out);
    for p in out.iter_mut() {
        *p /= sum;
    }
}

/// The calibrated option probabilities of one row, unrounded f32, in label order:
/// `softmax(logits / T)` with the question's bucket temperature, un-permuted by `option_order`.
pub fn calibrated_probabilities(
    q: &Question,
    temps: &Temperatures,
    logits: &[f32],
    scratch: &mut Vec<f32>,
) -> Vec<f32> {
    let t = temps.for_question(q.qtype, logits.len()) as f32;
    scratch.clear();
    scratch.extend(logits.iter().map(|&z| z / t));
    let mut p = Vec::with_capacity(logits.len());
    softmax_f32(scratch, &mut p);
    if let Some(order) = &q.option_order {
        if order.len() == p.len() {
            let mut canon = vec![0f32; p.len()];
            for (slot, &opt) in order.iter().enumerate() {
                canon[opt] = p[slot];
            }
            p = canon;
        }
    }
    p
}

/// Decode one question row: `logits` are its first `k` slot logits (f32), `action_p0` the
/// action softmax's first probability.
pub fn decode_answer(
    q: &Question,
    temps: &Temperatures,
    logits: &[f32],
    action_p0: f32,
    scratch: &mut Vec<f32>,
) -> Answer {
    let k = logits.len();
    let p = calibrated_probabilities(q, temps, logits, scratch);
    let max_p = p.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let answer_confidence = round4(f64::from(max_p.clamp(0.0, 1.0)));
    let entropy_conf = || -> f64 {
        if k < 2 {
            return 1.0;
        }
        let terms: Vec<f32> = p.iter().map(|&v| v * v.clamp(1e-12, 1.0).ln()).collect();
        let ent: f32 = -np_sum(&terms);
        let c = 1.0f32 - ent / ((k as f64).ln() as f32);
        f64::from(c.clamp(0.0, 1.0))
    };
    let act_probability = round4(f64::from(action_p0));
    let (value, confidence) = match q.qtype {
        QType::Choice => {
            let mut best = 0;
            for (i, &v) in p.iter().enumerate() {
                if v > p[best] {
                    best = i;
                }
            }
            let probabilities =
                q.key_texts.iter().zip(&p).map(|(key, &v)| (key.clone(), round4(f64::from(v)))).collect();
            (AnswerValue::Choice { choice: q.keys[best].clone(), probabilities }, round4(entropy_conf()))
        }
        QType::Score => {
            let terms: Vec<f64> = p.iter().enumerate().map(|(i, &v)| i as f64 * f64::from(v)).collect();
            let score = np_sum(&terms);
            let probabilities = p.iter().map(|&v| round4(f64::from(v))).collect();
            (
                AnswerValue::Score { score: round4(score), legend: q.legend.clone(), probabilities },
                round4(entropy_conf()),
            )
        }
        QType::Noul => {
            let pt = f64::from(p.get(1).copied().unwrap_or(0.0));
            (AnswerValue::Noul { noul: round4(pt) }, round4(pt.max(1.0 - pt)))
        }
    };
    Answer {
        qtype: q.qtype,
        value,
        confidence,
        answer_confidence: Some(answer_confidence),
        act_probability,
        gate: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(temperature: Value, by: Value) -> AgentConfig {
        let text =
            json!({"head_layers": 2, "temperature": temperature, "temperature_by_options": by}).to_string();
        AgentConfig::from_json(&text, "rl_agent_config.json").unwrap()
    }

    #[test]
    fn clamps_out_of_range_temperatures_with_one_warning() {
        let t = Temperatures::from_config(&cfg(
            json!([1.0, true, "x"]),
            json!({"choice:11+": 0.1006, "noul:2": 1.983}),
        ));
        assert_eq!(t.by_type, [1.0, 1.0, 1.0]);
        assert_eq!(t.for_question(QType::Choice, 12), 0.5);
        assert_eq!(t.for_question(QType::Noul, 2), 1.983);
        assert_eq!(t.for_question(QType::Score, 4), 1.0);
        assert_eq!(
            t.warning.as_deref(),
            Some("laya: this checkpoint ships temperatures outside [0.5, 5] which would distort confidence; clamping choice:11+=0.1006 -> 0.5, temperature[1]=True -> 1, temperature[2]='x' -> 1. Treat confidence from the affected buckets as uncalibrated.")
        );
    }

    #[test]
    fn buckets_follow_option_counts() {
        assert_eq!(temp_bucket(QType::Choice, 1), "choice:2");
        assert_eq!(temp_bucket(QType::Choice, 5), "choice:3-5");
        assert_eq!(temp_bucket(QType::Score, 10), "score:6-10");
        assert_eq!(temp_bucket(QType::Choice, 11), "choice:11+");
    }

    #[test]
    fn noul_decodes_probability_of_true() {
        let q =
            &super::super::question::compile_questions(&json!({"r": {"type": "noul", "instructions": "x"}}))
                .unwrap()[0];
        let t = Temperatures::from_config(&cfg(json!([1.0, 1.0, 1.0]), json!({})));
        // softmax([0, 1]) = [0.26894142, 0.73105858]
        let a = decode_answer(q, &t, &[0.0, 1.0], 0.7310586, &mut Vec::new());
        assert_eq!(a.value, AnswerValue::Noul { noul: 0.7311 });
        assert_eq!(a.confidence, 0.7311);
        assert_eq!(a.answer_confidence, Some(0.7311));
        assert_eq!(a.act_probability, 0.7311);
    }

    #[test]
    fn gate_marks_low_confidence_with_bucket_threshold() {
        let q =
            &super::super::question::compile_questions(&json!({"r": {"type": "noul", "instructions": "x"}}))
                .unwrap()[0];
        let t = Temperatures::from_config(&cfg(json!([1.0, 1.0, 1.0]), json!({})));
        let mut a = decode_answer(q, &t, &[0.0, 1.75], 0.5, &mut Vec::new());
        let gate = MinConfidence::parse(&json!({"noul:2": 0.9, "default": 0.5})).unwrap();
        a.apply_gate(&gate);
        let v = a.to_json();
        assert_eq!(v["low_confidence"], json!(true));
        assert_eq!(v["abstention"], json!("abstained"));
        assert_eq!(v["abstention_threshold"], json!(0.9));
    }

    #[test]
    fn rejects_bad_min_confidence_forms() {
        assert_eq!(
            MinConfidence::parse(&json!(true)).unwrap_err().to_string(),
            "min_confidence must be a float in [0.0, 1.0], got True"
        );
        assert_eq!(
            MinConfidence::parse(&json!({})).unwrap_err().to_string(),
            "a min_confidence map must be a non-empty dict of bucket -> float, got {}"
        );
        assert_eq!(
            MinConfidence::parse(&json!({"choice:4": 0.5})).unwrap_err().to_string(),
            "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got 'choice:4'"
        );
    }
}
