//! Fidelity suites: named states and questions asked about them (docs/convert-check.md).
//!
//! ```json
//! {"schema_version": 1, "name": "default", "description": "...",
//!  "states": {"ticket-en": "I was charged twice ...", "order": {"id": 5521}},
//!  "questions": [{"id": "refund", "state": "ticket-en", "note": "optional",
//!                 "question": {"type": "noul", "instructions": "Does ..."}}]}
//! ```
//!
//! Every question definition is validated with the host's own validator, so a suite accepts
//! exactly what `predict` accepts; errors name the file, the item and the field.

use serde_json::{Map, Value};

use crate::laya::bundle::sha256_hex;
use crate::laya::question::{compile_questions, Question};

/// Version of the suite format this build reads.
pub const SUITE_SCHEMA_VERSION: u64 = 1;

/// The default suite (`fixtures/suites/default.json`), embedded in the binary.
pub static DEFAULT_SUITE: &str = include_str!("../../fixtures/suites/default.json");

/// Name under which the embedded default suite is reported.
pub const DEFAULT_SUITE_SOURCE: &str = "builtin:default (fixtures/suites/default.json)";

/// A suite that fails validation, naming the file, the item and what to change.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file is not JSON.
    #[error("{file}: not valid JSON ({detail}); see docs/convert-check.md for the suite format")]
    Json {
        /// The suite file.
        file: String,
        /// Parser message.
        detail: String,
    },
    /// A top-level field is missing or wrong.
    #[error("{file}: {detail}")]
    Field {
        /// The suite file.
        file: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// One question item is invalid.
    #[error("{file}: questions[{index}] (id {id:?}): {detail}")]
    Item {
        /// The suite file.
        file: String,
        /// Position in `questions`.
        index: usize,
        /// The item's id (empty when it has none).
        id: String,
        /// What is wrong and what to do.
        detail: String,
    },
}

/// One question of a suite, validated.
#[derive(Debug, Clone)]
pub struct SuiteItem {
    /// Unique id (also the question id the host sees).
    pub id: String,
    /// Key of the state it is asked about.
    pub state: String,
    /// The question definition as written.
    pub definition: Value,
    /// The definition as the host compiled it.
    pub compiled: Question,
    /// Optional note (why the item is there).
    pub note: Option<String>,
}

impl SuiteItem {
    /// The host's `questions` argument for this item alone: `{id: definition}`.
    pub fn questions_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(self.id.clone(), self.definition.clone());
        Value::Object(m)
    }
}

/// A validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Where it came from (a path or [`DEFAULT_SUITE_SOURCE`]).
    pub source: String,
    /// sha256 of the suite bytes.
    pub sha256: String,
    /// `name` field.
    pub name: String,
    /// `description` field, if any.
    pub description: Option<String>,
    /// States by key, in file order.
    pub states: Vec<(String, Value)>,
    /// Questions in file order.
    pub items: Vec<SuiteItem>,
}

impl Suite {
    /// The embedded default suite.
    pub fn default_suite() -> Result<Self, SuiteError> {
        Self::parse(DEFAULT_SUITE, DEFAULT_SUITE_SOURCE)
    }

    /// The suite a check runs: the file at `path` (`--suite`), else the embedded default
    /// (exit 2 when the file cannot be read or fails validation).
    pub fn load(path: Option<&std::path::Path>) -> Result<Self, crate::error::Error> {
        use crate::error::ResultExt;
        let suite = match path {
            None => Suite::default_suite(),
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .input_context(|| format!("--suite: cannot read {}", p.display()))?;
                Suite::parse(&text, &p.display().to_string())
            }
        };
        suite.input_context(|| "the fidelity suite is invalid".into())
    }

    /// The state value an item is asked about.
    pub fn state(&self, key: &str) -> Option<&Value> {
        self.states.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Parse and validate suite text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, SuiteError> {
        let field = |detail: String| SuiteError::Field { file: file.into(), detail };
        let root: Value = serde_json::from_str(text)
            .map_err(|e| SuiteError::Json { file: file.into(), detail: e.to_string() })?;
        let Value::Object(root) = root else {
            return Err(field(
                "the suite must be a JSON object with schema_version, states and questions".into(),
            ));
        };
        for key in root.keys() {
            if !matches!(key.as_str(), "schema_version" | "name" | "description" | "states" | "questions") {
                return Err(field(format!(
                    "unknown field `{key}`; a suite has schema_version, name, description, states, questions"
                )));
            }
        }
        match root.get("schema_version").and_then(Value::as_u64) {
            Some(SUITE_SCHEMA_VERSION) => {}
            _ => {
                return Err(field(format!(
                    "schema_version must be {SUITE_SCHEMA_VERSION} (got {})",
                    root.get("schema_version").map_or("nothing".to_string(), Value::to_string)
                )))
            }
        }
        let name = match root.get("name") {
            None => "unnamed".to_string(),
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(other) => return Err(field(format!("name must be a non-empty string, got {other}"))),
        };
        let description = match root.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(field(format!("description must be a string, got {other}"))),
        };
        let states = match root.get("states") {
            Some(Value::Object(m)) if !m.is_empty() => m,
            _ => {
                return Err(field(
                    "states must be a non-empty object of state key -> state (text, object or list)".into(),
                ))
            }
        };
        for (key, value) in states {
            if value.is_null() {
                return Err(field(format!(
                    "states[{key:?}] is null; give a text, object or list (the host rejects a None state)"
                )));
            }
        }
        let questions = match root.get("questions") {
            Some(Value::Array(a)) if !a.is_empty() => a,
            _ => {
                return Err(field(
                    "questions must be a non-empty list of {\"id\", \"state\", \"question\"} items".into(),
                ))
            }
        };
        let mut items: Vec<SuiteItem> = Vec::with_capacity(questions.len());
        for (index, raw) in questions.iter().enumerate() {
            let item = parse_item(raw, index, file, states)?;
            if items.iter().any(|i| i.id == item.id) {
                return Err(SuiteError::Item {
                    file: file.into(),
                    index,
                    id: item.id,
                    detail: "repeats an earlier id; every question needs its own id".into(),
                });
            }
            items.push(item);
        }
        Ok(Self {
            source: file.into(),
            sha256: sha256_hex(text.as_bytes()),
            name,
            description,
            states: states.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            items,
        })
    }
}

fn parse_item(
    raw: &Value,
    index: usize,
    file: &str,
    states: &Map<String, Value>,
) -> Result<SuiteItem, SuiteError> {
    let id_text = raw.get("id").and_then(Value::as_str).unwrap_or("").to_string();
    let err = |detail: String| SuiteError::Item { file: file.into(), index, id: id_text.clone(), detail };
    let Value::Object(obj) = raw else {
        return Err(err("an item must be an object with id, state and question".into()));
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "id" | "state" | "question" | "note") {
            return Err(err(format!(
                "unknown field `{key}`; an item has id, state, question and an optional note"
            )));
        }
    }
    if id_text.trim().is_empty() {
        return Err(err("`id` must be a non-empty string".into()));
    }
    let state = match obj.get("state") {
        Some(Value::String(s)) if states.contains_key(s) => s.clone(),
        Some(Value::String(s)) => {
            return Err(err(format!("`state` {s:?} is not a key of `states`; add it there or fix the key")))
        }
        _ => return Err(err("`state` must name a key of `states`".into())),
    };
    let note = match obj.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => return Err(err(format!("`note` must be a string, got {other}"))),
    };
    let definition = obj.get("question").cloned().ok_or_else(|| err("`question` is missing".into()))?;
    let mut single = Map::new();
    single.insert(id_text.clone(), definition.clone());
    let compiled = compile_questions(&Value::Object(single))
        .map_err(|e| err(format!("{e}")))?
        .pop()
        .ok_or_else(|| err("`question` compiled to nothing".into()))?;
    Ok(SuiteItem { id: id_text.clone(), state, definition, compiled, note })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::question::QType;

    #[test]
    fn a_suite_is_the_default_or_a_readable_valid_file() {
        assert!(!Suite::load(None).unwrap().items.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let e = Suite::load(Some(&path)).unwrap_err();
        let text = crate::error::chain(&e);
        assert!(
            crate::error::Classify::kind(&e) == crate::error::Kind::Input
                && text.starts_with("--suite: cannot read "),
            "{text}"
        );
        std::fs::write(&path, "[]").unwrap();
        let text = crate::error::chain(&Suite::load(Some(&path)).unwrap_err());
        assert!(text.starts_with("the fidelity suite is invalid: "), "{text}");
    }

    fn suite(questions: &str) -> Result<Suite, SuiteError> {
        let text = format!(
            r#"{{"schema_version": 1, "name": "t", "states": {{"s": "hello", "j": {{"a": 1}}}}, "questions": {questions}}}"#
        );
        Suite::parse(&text, "suite.json")
    }

    #[test]
    fn parses_items_in_order_with_notes() {
        let s = suite(
            r#"[{"id": "a", "state": "s", "question": {"type": "noul", "instructions": "x"}, "note": "n"},
                {"id": "b", "state": "j", "question": {"type": "choice", "instructions": "y", "criteria": ["p", "q", "r"]}}]"#,
        )
        .unwrap();
        assert_eq!(s.items.len(), 2);
        assert_eq!(s.items[0].note.as_deref(), Some("n"));
        assert_eq!(s.items[1].compiled.qtype, QType::Choice);
        assert_eq!(s.items[1].compiled.option_count(), 3);
        assert_eq!(s.state("j").unwrap()["a"], 1);
        assert_eq!(s.items[0].questions_value()["a"]["type"], "noul");
        assert_eq!(s.sha256.len(), 64);
    }

    #[test]
    fn unknown_type_names_the_item_with_the_reference_message() {
        let e = suite(r#"[{"id": "poll", "state": "s", "question": {"type": "poll", "instructions": "x"}}]"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("suite.json: questions[0] (id \"poll\"): question 'poll': unknown type 'poll'"),
            "{e}"
        );
    }

    #[test]
    fn empty_options_name_the_item() {
        let e = suite(
            r#"[{"id": "ok", "state": "s", "question": {"type": "noul", "instructions": "x"}},
                {"id": "none", "state": "s", "question": {"type": "choice", "instructions": "x", "criteria": []}}]"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("questions[1] (id \"none\")") && e.contains("needs at least one criterion"),
            "{e}"
        );
    }

    #[test]
    fn structural_errors_say_what_to_fix() {
        let cases = [
            (
                r#"[{"id": "a", "state": "missing", "question": {"type": "noul", "instructions": "x"}}]"#,
                "not a key of `states`",
            ),
            (
                r#"[{"id": "", "state": "s", "question": {"type": "noul", "instructions": "x"}}]"#,
                "non-empty string",
            ),
            (r#"[{"id": "a", "state": "s"}]"#, "`question` is missing"),
            (
                r#"[{"id": "a", "state": "s", "question": {"type": "noul", "instructions": "x"}, "tags": []}]"#,
                "unknown field `tags`",
            ),
            (
                r#"[{"id": "a", "state": "s", "question": {"type": "noul", "instructions": "x"}}, {"id": "a", "state": "s", "question": {"type": "noul", "instructions": "y"}}]"#,
                "repeats an earlier id",
            ),
            ("[]", "non-empty list"),
        ];
        for (questions, needle) in cases {
            let e = suite(questions).unwrap_err().to_string();
            assert!(e.contains(needle), "{questions}: {e}");
        }
        let e =
            Suite::parse(r#"{"schema_version": 2, "states": {}, "questions": []}"#, "f.json").unwrap_err();
        assert!(e.to_string().contains("schema_version must be 1"), "{e}");
        let e = Suite::parse("{", "f.json").unwrap_err();
        assert!(e.to_string().starts_with("f.json: not valid JSON"), "{e}");
        let e = Suite::parse(r#"{"schema_version": 1, "states": {"s": null}, "questions": []}"#, "f.json")
            .unwrap_err();
        assert!(e.to_string().contains("states[\"s\"] is null"), "{e}");
    }

    #[test]
    fn the_default_suite_is_valid_and_covers_the_issue_list() {
        let s = Suite::default_suite().unwrap();
        assert!(s.items.len() >= 60, "{} questions", s.items.len());
        let count = |t: QType| s.items.iter().filter(|i| i.compiled.qtype == t).count();
        assert!(count(QType::Choice) >= 10 && count(QType::Score) >= 10 && count(QType::Noul) >= 10);
        let choice_sizes: Vec<usize> = s
            .items
            .iter()
            .filter(|i| i.compiled.qtype == QType::Choice)
            .map(|i| i.compiled.option_count())
            .collect();
        for k in 2..=12 {
            assert!(choice_sizes.contains(&k), "no choice question with {k} options");
        }
        let text: String = s.states.iter().map(|(_, v)| v.to_string()).collect();
        let has = |lo: u32, hi: u32| text.chars().any(|c| (lo..=hi).contains(&(c as u32)));
        assert!(has(0x0400, 0x04FF), "Cyrillic");
        assert!(has(0x4E00, 0x9FFF), "CJK");
        assert!(has(0x0600, 0x06FF), "Arabic");
        assert!(has(0x0900, 0x097F), "Devanagari");
        assert!(has(0x1F300, 0x1FAFF), "emoji");
        assert!(s.states.iter().any(|(_, v)| v.is_array()), "a conversation (list) state");
        assert!(s.states.iter().any(|(_, v)| v.is_object()), "a JSON object state");
    }
}
