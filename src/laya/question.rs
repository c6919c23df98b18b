//! Question validation, normalization and option rendering (docs/host-path.md §3.2, §3.5, §5).
//!
//! Messages are the reference's, word for word, so a user moving between the two sees the same
//! text; each names the question and says what to fix.

use serde_json::{Map, Value};

use super::pyjson::{dumps, py_key_eq, py_repr, py_str, py_strip, py_type_name, str_repr};

/// Question type; the value is the `qtype` id, the `type_emb` row and the temperature index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QType {
    /// Pick one label.
    Choice = 0,
    /// Expected level over ordered levels.
    Score = 1,
    /// Probability that a statement holds.
    Noul = 2,
}

impl QType {
    /// The wire name (`choice`, `score`, `noul`).
    pub fn name(self) -> &'static str {
        match self {
            QType::Choice => "choice",
            QType::Score => "score",
            QType::Noul => "noul",
        }
    }

    /// From the `qtype` id.
    pub fn from_id(id: i32) -> Option<Self> {
        match id {
            0 => Some(QType::Choice),
            1 => Some(QType::Score),
            2 => Some(QType::Noul),
            _ => None,
        }
    }
}

/// A request or question that cannot be answered; the text says which and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The request's shape is wrong (the reference raises `TypeError`).
    #[error("{0}")]
    Type(String),
    /// A question definition is invalid (the reference raises `ValueError`).
    #[error("{0}")]
    Value(String),
}

/// A validated, normalized question, ready for prompt building and decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The question id (answer key).
    pub id: String,
    /// Its type.
    pub qtype: QType,
    /// Instructions as text (`json.dumps` of non-string instructions).
    pub instructions: String,
    /// Option texts in label-index order (before mask sanitizing).
    pub options: Vec<String>,
    /// Choice: the answer keys as the caller wrote them (their JSON types kept).
    pub keys: Vec<Value>,
    /// Choice: the keys as JSON object keys (`"1"`, `"2.5"`, `"false"`).
    pub key_texts: Vec<String>,
    /// Score: the legend text of each level.
    pub legend: Vec<String>,
    /// Slot `s` shows option `option_order[s]`.
    pub option_order: Option<Vec<usize>>,
}

impl Question {
    /// Number of options (choice criteria, score levels, 2 for noul).
    pub fn option_count(&self) -> usize {
        self.options.len()
    }
}

/// Validate every question in order (the first failure is returned), then normalize them.
pub fn compile_questions(questions: &Value) -> Result<Vec<Question>, RequestError> {
    let map = match questions {
        Value::Object(m) => m,
        other => {
            return Err(RequestError::Type(format!(
                "questions must be a dict of question id -> definition, got {}",
                py_type_name(other)
            )))
        }
    };
    for (qid, def) in map {
        check_question(qid, def)?;
    }
    map.iter().map(|(qid, def)| normalize(qid, def)).collect()
}

fn err(qid: &str, text: String) -> RequestError {
    RequestError::Value(format!("question {}: {text}", str_repr(qid)))
}

/// Reference `_check_question`: one question's definition, checked in the reference's order.
pub fn check_question(qid: &str, def: &Value) -> Result<(), RequestError> {
    if py_strip(qid).is_empty() {
        return Err(RequestError::Value(format!(
            "question id must be a non-empty string, got {}",
            str_repr(qid)
        )));
    }
    let def = match def {
        Value::Object(m) => m,
        other => return Err(err(qid, format!("definition must be a dict, got {}", py_type_name(other)))),
    };
    let t = match def.get("type") {
        Some(Value::String(s)) if matches!(s.as_str(), "choice" | "score" | "noul") => s.as_str(),
        other => {
            let shown = other.map(py_repr).unwrap_or_else(|| "None".into());
            return Err(err(qid, format!("unknown type {shown}; use one of ['choice', 'noul', 'score']")));
        }
    };
    let add_text = "add the text the model should answer";
    match def.get("instructions") {
        None => return Err(err(qid, format!("no 'instructions'; {add_text}"))),
        Some(Value::Null) => return Err(err(qid, format!("'instructions' must not be None; {add_text}"))),
        Some(Value::String(s)) if py_strip(s).is_empty() => {
            return Err(err(qid, format!("'instructions' must not be empty; {add_text}")))
        }
        Some(Value::Array(a)) if a.is_empty() => {
            return Err(err(qid, format!("'instructions' must not be empty; {add_text}")))
        }
        Some(Value::Object(o)) if o.is_empty() => {
            return Err(err(qid, format!("'instructions' must not be empty; {add_text}")))
        }
        Some(_) => {}
    }
    let crit = def.get("criteria").unwrap_or(&Value::Null);
    match t {
        "choice" => check_choice(qid, crit)?,
        "score" => match crit {
            Value::Array(levels) => {
                if levels.is_empty() {
                    return Err(err(qid, "a score question needs at least one level".into()));
                }
                if let Some(i) = levels.iter().position(Value::is_null) {
                    return Err(err(
                        qid,
                        format!("score level {i} is null; give every level a description, index 0 first"),
                    ));
                }
            }
            _ => {
                return Err(err(
                    qid,
                    "a score question takes 'criteria' as a list of level descriptions, index 0 first".into(),
                ))
            }
        },
        _ => match crit {
            Value::Null => {}
            Value::Object(m) => {
                let mut keys: Vec<String> = m.keys().map(|k| k.to_lowercase()).collect();
                keys.sort();
                keys.dedup();
                if keys.iter().any(|k| k != "true" && k != "false") {
                    let shown = format!(
                        "[{}]",
                        keys.iter().map(|k| str_repr(k)).collect::<Vec<_>>().join(", ")
                    );
                    return Err(err(
                        qid,
                        format!(
                            "a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and omitted is fine), got {shown}. Those keys are the option texts the model reads; any other key was silently dropped and replaced with the defaults. If you want the answer worded differently, keep 'criteria' keyed 'true'/'false' and set 'labels' instead."
                        ),
                    ));
                }
            }
            _ => {
                return Err(err(
                    qid,
                    "a noul question takes 'criteria' as a dict with optional 'true'/'false' descriptions, or omits it".into(),
                ))
            }
        },
    }
    if let Some(order) = def.get("option_order") {
        let n = match t {
            "noul" => 2,
            _ => match crit {
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                _ => 0,
            },
        };
        let ok = match order {
            Value::Array(items) if items.len() == n => {
                let mut ints: Vec<i64> = items
                    .iter()
                    .filter(|v| v.is_i64() || v.is_u64())
                    .map(|v| v.as_i64().unwrap_or(i64::MAX))
                    .collect();
                ints.sort_unstable();
                ints.len() == n && ints.iter().enumerate().all(|(i, v)| *v == i as i64)
            }
            _ => false,
        };
        if !ok {
            return Err(err(
                qid,
                format!(
                    "'option_order' must be a permutation of range({n}) -- one slot per option, each option once -- got {}",
                    py_repr(order)
                ),
            ));
        }
    }
    if let Some(labels) = def.get("labels") {
        if t != "noul" {
            return Err(err(qid, "'labels' is only supported for noul questions".into()));
        }
        resolve_noul_labels(Some(labels)).map_err(|e| err(qid, e.to_string()))?;
    }
    Ok(())
}

fn check_choice(qid: &str, crit: &Value) -> Result<(), RequestError> {
    let labels: Vec<Value> =
        match crit {
            Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
            Value::Array(a) => a.clone(),
            _ => return Err(err(
                qid,
                "a choice question takes 'criteria' as a dict of label -> description, or a list of labels"
                    .into(),
            )),
        };
    if labels.is_empty() {
        return Err(err(qid, "a choice question needs at least one criterion".into()));
    }
    for (i, label) in labels.iter().enumerate() {
        match label {
            Value::Null => {
                return Err(err(
                    qid,
                    format!(
                        "choice label {i} is null; a label is rendered as option text and used as the answer key, so it must be a string, number or bool -- a null label renders as the text \"None\" while its answer key is \"null\""
                    ),
                ))
            }
            Value::Array(_) | Value::Object(_) => {
                return Err(err(
                    qid,
                    format!(
                        "choice label {i} is a {}; a label is rendered as option text and used as the answer key, so it must be a scalar (a string, number or bool), got {}",
                        py_type_name(label),
                        py_repr(label)
                    ),
                ))
            }
            _ => {}
        }
    }
    if crit.is_array() {
        for (i, label) in labels.iter().enumerate() {
            if let Some(first) = labels[..i].iter().position(|prev| py_key_eq(prev, label)) {
                return Err(err(
                    qid,
                    format!(
                        "choice label {i} ({}) repeats label {first}; the labels are the answer keys, so every option needs its own (1, 1.0 and True are one key)",
                        py_repr(label)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Noul labels that are not a map of exactly `false` and `true` to distinct non-empty strings
/// ([`resolve_noul_labels`]), with the reference's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("noul labels must map exactly 'false' and 'true' to distinct non-empty strings")]
pub struct BadNoulLabels;

/// Noul labels `(false, true)`, stripped; the reference's message on any problem.
pub fn resolve_noul_labels(labels: Option<&Value>) -> Result<(String, String), BadNoulLabels> {
    let bad = || BadNoulLabels;
    let Some(labels) = labels else {
        return Ok(("false".into(), "true".into()));
    };
    let m = labels.as_object().ok_or_else(bad)?;
    if m.len() != 2 || !m.contains_key("false") || !m.contains_key("true") {
        return Err(bad());
    }
    let (Some(Value::String(f)), Some(Value::String(t))) = (m.get("false"), m.get("true")) else {
        return Err(bad());
    };
    let (f, t) = (py_strip(f), py_strip(t));
    if f.is_empty() || t.is_empty() || f == t {
        return Err(bad());
    }
    Ok((f.to_string(), t.to_string()))
}

/// `render_criterion`: strings as they are, anything else as one-line JSON.
pub fn render_criterion(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => dumps(other),
    }
}

fn normalize(qid: &str, def: &Value) -> Result<Question, RequestError> {
    let empty = Map::new();
    let def = def.as_object().unwrap_or(&empty);
    let qtype = match def.get("type").and_then(Value::as_str) {
        Some("choice") => QType::Choice,
        Some("score") => QType::Score,
        _ => QType::Noul,
    };
    let instructions = match def.get("instructions") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => dumps(other),
        None => String::new(),
    };
    let crit = def.get("criteria").unwrap_or(&Value::Null);
    let mut q = Question {
        id: qid.to_string(),
        qtype,
        instructions,
        options: Vec::new(),
        keys: Vec::new(),
        key_texts: Vec::new(),
        legend: Vec::new(),
        option_order: def
            .get("option_order")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(0) as usize).collect()),
    };
    match qtype {
        QType::Choice => {
            let pairs: Vec<(Value, Value)> = match crit {
                Value::Object(m) => m.iter().map(|(k, v)| (Value::String(k.clone()), v.clone())).collect(),
                Value::Array(a) => a.iter().map(|k| (k.clone(), Value::Null)).collect(),
                _ => Vec::new(),
            };
            for (key, desc) in pairs {
                let label = py_str(&key);
                let text = match &desc {
                    Value::Null => label,
                    Value::String(s) if s.is_empty() => label,
                    other => format!("{label}: {}", render_criterion(other)),
                };
                q.options.push(text);
                q.key_texts.push(super::pyjson::json_key(&key));
                q.keys.push(key);
            }
        }
        QType::Score => {
            for (i, level) in crit.as_array().into_iter().flatten().enumerate() {
                let text = render_criterion(level);
                q.options.push(format!("level {i}: {text}"));
                q.legend.push(text);
            }
        }
        QType::Noul => {
            let (f, t) = resolve_noul_labels(def.get("labels")).map_err(|e| err(qid, e.to_string()))?;
            // Keys lower-cased; a later duplicate wins (dict comprehension semantics).
            let mut false_crit = &Value::Null;
            let mut true_crit = &Value::Null;
            if let Value::Object(m) = crit {
                for (k, v) in m {
                    match k.to_lowercase().as_str() {
                        "false" => false_crit = v,
                        "true" => true_crit = v,
                        _ => {}
                    }
                }
            }
            let describe = |c: &Value, default: &str| match c {
                Value::Null => default.to_string(),
                Value::String(s) if s.is_empty() => default.to_string(),
                other => render_criterion(other),
            };
            q.options.push(format!("{f}: {}", describe(false_crit, "no, the statement does not hold")));
            q.options.push(format!("{t}: {}", describe(true_crit, "yes, the statement holds")));
        }
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first_error(questions: Value) -> String {
        compile_questions(&questions).unwrap_err().to_string()
    }

    #[test]
    fn renders_choice_options_like_python_str_and_json() {
        let qs = compile_questions(&json!({
            "a": {"type": "choice", "instructions": "x", "criteria": {"a": 0, "b": false, "c": null, "d": "", "e": {"covers": ["x"]}}},
            "b": {"type": "choice", "instructions": "x", "criteria": [1, 2.5, false, ""]}
        }))
        .unwrap();
        assert_eq!(qs[0].options, ["a: 0", "b: false", "c", "d", "e: {\"covers\": [\"x\"]}"]);
        assert_eq!(qs[1].options, ["1", "2.5", "False", ""]);
        assert_eq!(qs[1].key_texts, ["1", "2.5", "false", ""]);
    }

    #[test]
    fn renders_score_and_noul_options() {
        let qs = compile_questions(&json!({
            "s": {"type": "score", "instructions": "x", "criteria": ["low", {"desc": "blocking", "sla_h": 1}]},
            "n": {"type": "noul", "instructions": "x", "labels": {"false": " rude ", "true": "polite"}, "criteria": {"TRUE": "polite wording"}},
            "d": {"type": "noul", "instructions": true}
        }))
        .unwrap();
        assert_eq!(qs[0].options, ["level 0: low", "level 1: {\"desc\": \"blocking\", \"sla_h\": 1}"]);
        assert_eq!(qs[1].options, ["rude: no, the statement does not hold", "polite: polite wording"]);
        assert_eq!(
            qs[2].options,
            ["false: no, the statement does not hold", "true: yes, the statement holds"]
        );
        assert_eq!(qs[2].instructions, "true");
    }

    #[test]
    fn rejects_repeated_choice_labels_as_python_keys() {
        assert_eq!(
            first_error(json!({"q": {"type": "choice", "instructions": "x", "criteria": [1, "a", true]}})),
            "question 'q': choice label 2 (True) repeats label 0; the labels are the answer keys, so every option needs its own (1, 1.0 and True are one key)"
        );
    }

    #[test]
    fn reports_first_failing_question_in_order() {
        assert_eq!(
            first_error(
                json!({"ok": {"type": "noul", "instructions": "x"}, "bad": {"type": "poll", "instructions": "x"}})
            ),
            "question 'bad': unknown type 'poll'; use one of ['choice', 'noul', 'score']"
        );
        assert_eq!(
            first_error(json!({"q": {"type": "noul", "instructions": "x", "criteria": {"yes": 1, "True": 2}}})),
            "question 'q': a noul question takes 'criteria' keyed only 'true'/'false' (either or both, and omitted is fine), got ['true', 'yes']. Those keys are the option texts the model reads; any other key was silently dropped and replaced with the defaults. If you want the answer worded differently, keep 'criteria' keyed 'true'/'false' and set 'labels' instead."
        );
    }

    #[test]
    fn rejects_option_order_that_is_not_a_permutation() {
        assert_eq!(
            first_error(json!({"q": {"type": "choice", "instructions": "x", "criteria": ["a", "b"], "option_order": [0, 1.0]}})),
            "question 'q': 'option_order' must be a permutation of range(2) -- one slot per option, each option once -- got [0, 1.0]"
        );
    }

    #[test]
    fn questions_must_be_an_object() {
        assert_eq!(
            first_error(json!(["q"])),
            "questions must be a dict of question id -> definition, got list"
        );
    }
}
