//! The parity goldens format laya-apple 1.7.0 ships (`laya_apple/parity/goldens/*.json`), read
//! and validated field by field, and a generator that writes the same format from any model.
//!
//! Header: `model`, `reference`, optional `source_weights_sha256`, `generated_from`,
//! `reference_packages`. Each of `cases`: `name`, `state`, `questions` (a question dict in the
//! host contract's form), `items` (one per question, in order: `ids`, `markers`, `qtype`),
//! `logits` (per item, one per marker), `action_logits` (per item, one per action), optional
//! `length` (the longest row) and `answers` (the reference's answers dict per question id).

use serde_json::{json, Map, Value};

use crate::backend::{Backend, ForwardOutput, PreparedBatch};
use crate::error::{Error, Kind};
use crate::laya::host::{CallOptions, Host};
use crate::laya::question::compile_questions;

/// A goldens file that cannot be used, naming the file, case and field.
#[derive(Debug, thiserror::Error)]
pub enum GoldensError {
    /// The file as a whole is not in the format.
    #[error("{file}: {detail}")]
    Format {
        /// The goldens file.
        file: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// One case is malformed or does not fit the model.
    #[error("{file}: case `{case}`: {field}: {detail}")]
    Case {
        /// The goldens file.
        file: String,
        /// The case name (or its index).
        case: String,
        /// The field, as a path inside the case.
        field: String,
        /// What is wrong.
        detail: String,
    },
}

/// One prompt row of a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Marker positions.
    pub markers: Vec<usize>,
    /// 0 choice, 1 score, 2 noul.
    pub qtype: i32,
}

/// One case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name.
    pub name: String,
    /// The state, as the request gives it.
    pub state: Value,
    /// The question dict.
    pub questions: Value,
    /// One row per question.
    pub items: Vec<Item>,
    /// Per row, the reference's slot logits (one per marker).
    pub logits: Vec<Vec<f32>>,
    /// Per row, the reference's raw action logits.
    pub action_logits: Vec<Vec<f32>>,
    /// The longest row, when the case was built to an exact length.
    pub length: Option<usize>,
    /// The reference's answers dict (question id → answer).
    pub answers: Map<String, Value>,
}

/// A goldens file.
#[derive(Debug, Clone, PartialEq)]
pub struct Goldens {
    /// The file, as named.
    pub file: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// `model`.
    pub model: String,
    /// `reference`.
    pub reference: String,
    /// `source_weights_sha256`, if present.
    pub source_weights_sha256: Option<String>,
    /// `reference_packages`, if present.
    pub reference_packages: Option<Value>,
    /// The cases.
    pub cases: Vec<Case>,
}

fn uint(v: &Value) -> Option<u64> {
    v.as_u64()
}

impl Goldens {
    /// Read and parse the goldens file `path` (`--goldens`); bad input (exit 2) when it cannot
    /// be read or is not a goldens file.
    pub fn read(path: &std::path::Path) -> Result<Self, crate::error::Error> {
        use crate::error::Error;
        let file = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| Error::input(format!("--goldens: cannot read {file}")).because(e))?;
        Self::parse(&bytes, &file).map_err(|e| Error::input(e.to_string()))
    }

    /// Parse and validate the bytes of a goldens file named `file`.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Self, GoldensError> {
        let format = |detail: String| GoldensError::Format { file: file.to_string(), detail };
        let root: Value =
            serde_json::from_slice(bytes).map_err(|e| format(format!("not valid JSON ({e})")))?;
        let top = root.as_object().ok_or_else(|| {
            format("not a parity goldens file: expected an object with `model`, `reference` and `cases` (the format of laya-apple 1.7.0's laya_apple/parity/goldens/*.json)".into())
        })?;
        for key in ["model", "reference", "cases"] {
            if !top.contains_key(key) {
                return Err(format(format!(
                    "not a parity goldens file: no `{key}` (the format of laya-apple 1.7.0's laya_apple/parity/goldens/*.json has model, reference, cases)"
                )));
            }
        }
        let text = |key: &str| -> Result<String, GoldensError> {
            top[key].as_str().map(str::to_string).ok_or_else(|| format(format!("`{key}` must be a string")))
        };
        let model = text("model")?;
        let reference = text("reference")?;
        let source_weights_sha256 = match top.get("source_weights_sha256") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(s.to_ascii_lowercase())
            }
            Some(_) => return Err(format("`source_weights_sha256` must be 64 hex digits".into())),
        };
        let cases_v = top["cases"].as_array().ok_or_else(|| format("`cases` must be a list".into()))?;
        if cases_v.is_empty() {
            return Err(format("`cases` is empty; there is nothing to verify".into()));
        }
        let mut cases = Vec::with_capacity(cases_v.len());
        let mut names = std::collections::HashSet::new();
        for (i, c) in cases_v.iter().enumerate() {
            let case = parse_case(c, i, file)?;
            if !names.insert(case.name.clone()) {
                return Err(GoldensError::Case {
                    file: file.into(),
                    case: case.name,
                    field: "name".into(),
                    detail: "repeats an earlier case's name".into(),
                });
            }
            cases.push(case);
        }
        Ok(Self {
            file: file.to_string(),
            sha256: crate::laya::bundle::sha256_hex(bytes),
            model,
            reference,
            source_weights_sha256,
            reference_packages: top.get("reference_packages").cloned(),
            cases,
        })
    }
}

fn parse_case(c: &Value, index: usize, file: &str) -> Result<Case, GoldensError> {
    let obj = c.as_object();
    let name = obj
        .and_then(|o| o.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("#{index}"));
    let err = |field: String, detail: String| GoldensError::Case {
        file: file.into(),
        case: name.clone(),
        field,
        detail,
    };
    let obj = obj.ok_or_else(|| err("(case)".into(), "must be an object".into()))?;
    if !matches!(obj.get("name"), Some(Value::String(_))) {
        return Err(err("name".into(), "must be a string".into()));
    }
    for key in ["state", "questions", "items", "logits", "action_logits", "answers"] {
        if !obj.contains_key(key) {
            return Err(err(key.into(), "is missing".into()));
        }
    }
    let questions = obj["questions"].clone();
    let qmap = questions.as_object().ok_or_else(|| err("questions".into(), "must be an object".into()))?;
    let items_v = obj["items"].as_array().ok_or_else(|| err("items".into(), "must be a list".into()))?;
    if items_v.len() != qmap.len() {
        return Err(err(
            "items".into(),
            format!(
                "{} rows for {} questions; there must be one row per question",
                items_v.len(),
                qmap.len()
            ),
        ));
    }
    let mut items = Vec::with_capacity(items_v.len());
    for (j, it) in items_v.iter().enumerate() {
        let f = |k: &str| format!("items[{j}].{k}");
        let o = it.as_object().ok_or_else(|| err(format!("items[{j}]"), "must be an object".into()))?;
        let ids_v = o
            .get("ids")
            .and_then(Value::as_array)
            .ok_or_else(|| err(f("ids"), "must be a list of token ids".into()))?;
        let mut ids = Vec::with_capacity(ids_v.len());
        for (t, v) in ids_v.iter().enumerate() {
            let id = uint(v)
                .filter(|&x| x <= u64::from(u32::MAX))
                .ok_or_else(|| err(format!("items[{j}].ids[{t}]"), format!("{v} is not a token id")))?;
            ids.push(id as u32);
        }
        if ids.is_empty() {
            return Err(err(f("ids"), "is empty".into()));
        }
        let markers_v = o
            .get("markers")
            .and_then(Value::as_array)
            .ok_or_else(|| err(f("markers"), "must be a list of positions".into()))?;
        let mut markers = Vec::with_capacity(markers_v.len());
        for (m, v) in markers_v.iter().enumerate() {
            let p = uint(v).filter(|&x| (x as usize) < ids.len()).ok_or_else(|| {
                err(
                    format!("items[{j}].markers[{m}]"),
                    format!("{v} is not a position inside the row ({} tokens)", ids.len()),
                )
            })?;
            markers.push(p as usize);
        }
        if markers.is_empty() {
            return Err(err(f("markers"), "is empty".into()));
        }
        let qtype = o
            .get("qtype")
            .and_then(Value::as_i64)
            .filter(|q| (0..=2).contains(q))
            .ok_or_else(|| err(f("qtype"), "must be 0 (choice), 1 (score) or 2 (noul)".into()))?;
        items.push(Item { ids, markers, qtype: qtype as i32 });
    }
    let floats =
        |key: &str, widths: &dyn Fn(usize) -> Option<usize>| -> Result<Vec<Vec<f32>>, GoldensError> {
            let rows = obj[key].as_array().ok_or_else(|| err(key.into(), "must be a list of rows".into()))?;
            if rows.len() != items.len() {
                return Err(err(key.into(), format!("{} rows for {} items", rows.len(), items.len())));
            }
            let mut out = Vec::with_capacity(rows.len());
            for (j, r) in rows.iter().enumerate() {
                let r = r
                    .as_array()
                    .ok_or_else(|| err(format!("{key}[{j}]"), "must be a list of numbers".into()))?;
                if let Some(w) = widths(j) {
                    if r.len() != w {
                        return Err(err(format!("{key}[{j}]"), format!("{} values, expected {w}", r.len())));
                    }
                }
                let mut row = Vec::with_capacity(r.len());
                for (k, v) in r.iter().enumerate() {
                    let x = v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                        err(format!("{key}[{j}][{k}]"), format!("{v} is not a finite number"))
                    })?;
                    row.push(x as f32);
                }
                out.push(row);
            }
            Ok(out)
        };
    let logits = floats("logits", &|j| Some(items[j].markers.len()))?;
    let action_logits = floats("action_logits", &|_| None)?;
    let width = action_logits.first().map(Vec::len).unwrap_or(0);
    if width < 2 || action_logits.iter().any(|r| r.len() != width) {
        return Err(err(
            "action_logits".into(),
            "every row needs the same number (≥ 2) of action logits".into(),
        ));
    }
    let length = match obj.get("length") {
        None | Some(Value::Null) => None,
        Some(v) => {
            Some(uint(v).ok_or_else(|| err("length".into(), "must be a positive integer".into()))? as usize)
        }
    };
    if let Some(l) = length {
        let longest = items.iter().map(|i| i.ids.len()).max().unwrap_or(0);
        if l != longest {
            return Err(err("length".into(), format!("{l}, but the longest row has {longest} tokens")));
        }
    }
    let answers = obj["answers"]
        .as_object()
        .cloned()
        .ok_or_else(|| err("answers".into(), "must be an object".into()))?;
    let qids: Vec<&String> = qmap.keys().collect();
    let aids: Vec<&String> = answers.keys().collect();
    if qids != aids {
        return Err(err("answers".into(), format!("keys {aids:?} differ from the question ids {qids:?}")));
    }
    Ok(Case { name, state: obj["state"].clone(), questions, items, logits, action_logits, length, answers })
}

/// A request to turn into a golden case: a name, a state and a question dict.
#[derive(Debug, Clone)]
pub struct CaseRequest {
    /// Case name.
    pub name: String,
    /// The state.
    pub state: Value,
    /// The question dict.
    pub questions: Value,
}

/// Write goldens in the laya-apple format from `host` and `backend`: per case the host's rows,
/// the backend's logits and raw action logits on one packed batch of those rows, and the host's
/// answers. `model`, `reference` and `weights_sha256` fill the header. A request the host
/// refuses is an input error, a failed forward a run error; either names its case.
pub fn generate(
    host: &Host<'_>,
    backend: &mut dyn Backend,
    model: &str,
    reference: &str,
    weights_sha256: Option<&str>,
    requests: &[CaseRequest],
) -> Result<Value, Error> {
    let mut cases = Vec::with_capacity(requests.len());
    for req in requests {
        let ctx = |kind: Kind| {
            move |e: &dyn std::fmt::Display| Error::new(kind, format!("case `{}`: {e}", req.name))
        };
        let (input, run) = (ctx(Kind::Input), ctx(Kind::Run));
        let qs = compile_questions(&req.questions).map_err(|e| input(&e))?;
        let rows = host
            .prepare_rows(std::slice::from_ref(&req.state), &qs, &CallOptions::default())
            .map_err(|e| input(&e))?;
        let (logits, actions) = forward_rows(host, backend, &rows).map_err(|e| run(&e))?;
        let result = host
            .predict(backend, &req.state, &req.questions, &CallOptions::default(), None)
            .map_err(|e| run(&e))?;
        let items: Vec<Value> =
            rows.iter().map(|r| json!({"ids": r.ids, "markers": r.markers, "qtype": r.qtype})).collect();
        let num = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        cases.push(json!({
            "name": req.name,
            "state": req.state,
            "questions": req.questions,
            "items": items,
            "logits": logits.iter().map(|l| num(l)).collect::<Vec<_>>(),
            "action_logits": actions.iter().map(|a| num(a)).collect::<Vec<_>>(),
            "length": rows.iter().map(|r| r.ids.len()).max().unwrap_or(0),
            "answers": result.to_json()["answers"].clone(),
        }));
    }
    let info = backend.info();
    Ok(json!({
        "model": model,
        "reference": reference,
        "source_weights_sha256": weights_sha256,
        "generated_from": {"tool": format!("laya-bench {}", env!("CARGO_PKG_VERSION")), "backend": info.name, "precision": info.precision},
        "reference_packages": {"laya-bench": env!("CARGO_PKG_VERSION")},
        "cases": cases,
    }))
}

/// Per row, its slot logits and its raw action logits.
pub type RowOutputs = (Vec<Vec<f32>>, Vec<Vec<f32>>);

/// Run rows through the backend, packed as one logical batch (the longest row sets the length),
/// and return per row its first `k` slot logits and its raw action logits.
pub fn forward_rows(
    host: &Host<'_>,
    backend: &mut dyn Backend,
    rows: &[crate::laya::prompt::Row],
) -> Result<RowOutputs, crate::laya::host::HostError> {
    let lmax = rows.iter().map(|r| r.ids.len()).max().unwrap_or(0);
    let mut batch = PreparedBatch::default();
    let mut out = ForwardOutput::default();
    let (mut logits, mut actions) = (Vec::with_capacity(rows.len()), Vec::with_capacity(rows.len()));
    for chunk in rows.chunks(host.shapes.batch_size.max(1)) {
        host.pack(chunk, lmax, &mut batch)?;
        backend.forward(&batch, &mut out)?;
        let (k, a) = (out.max_options, out.num_actions);
        for (r, row) in chunk.iter().enumerate() {
            let n = row.markers.len().min(k);
            logits.push(out.logits[r * k..r * k + n].to_vec());
            actions.push(out.action_logits[r * a..(r + 1) * a].to_vec());
        }
    }
    Ok((logits, actions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_goldens_names_the_flag_or_the_file_and_is_bad_input() {
        use crate::error::{Classify, Kind};
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json");
        let e = Goldens::read(&missing).unwrap_err();
        assert_eq!(e.kind(), Kind::Input);
        assert_eq!(e.to_string(), format!("--goldens: cannot read {}", missing.display()));
        let garbled = dir.path().join("g.json");
        std::fs::write(&garbled, b"[1]").unwrap();
        let e = Goldens::read(&garbled).unwrap_err();
        assert_eq!(e.kind(), Kind::Input);
        assert!(
            e.to_string().starts_with(&format!("{}: not a parity goldens file", garbled.display())),
            "{e}"
        );
    }

    fn case() -> Value {
        json!({
            "name": "c1", "state": "hi",
            "questions": {"q0": {"type": "noul", "instructions": "x?"}},
            "items": [{"ids": [1, 5, 2, 4, 7, 4, 8, 2], "markers": [3, 5], "qtype": 2}],
            "logits": [[0.5, -0.25]], "action_logits": [[1500.0, -1600.5]], "length": 8,
            "answers": {"q0": {"type": "noul", "noul": 0.32}}
        })
    }

    fn file(cases: Vec<Value>) -> Vec<u8> {
        serde_json::to_vec(&json!({"model": "m", "reference": "r", "source_weights_sha256": "AB".repeat(32), "cases": cases})).unwrap()
    }

    #[test]
    fn a_well_formed_file_reads_with_exact_values() {
        let g = Goldens::parse(&file(vec![case()]), "g.json").unwrap();
        assert_eq!(g.source_weights_sha256.as_deref(), Some("ab".repeat(32).as_str()));
        let c = &g.cases[0];
        assert_eq!(c.items[0], Item { ids: vec![1, 5, 2, 4, 7, 4, 8, 2], markers: vec![3, 5], qtype: 2 });
        assert_eq!(
            (c.logits[0].clone(), c.action_logits[0].clone()),
            (vec![0.5, -0.25], vec![1500.0, -1600.5])
        );
        assert_eq!(c.length, Some(8));
    }

    #[test]
    fn every_malformed_field_is_named_with_its_case() {
        type Edit = Box<dyn Fn(&mut Value)>;
        let edits: Vec<(&str, Edit, &str)> = vec![
            ("items", Box::new(|c| c["items"] = json!([])), "0 rows for 1 questions"),
            ("items[0].ids[1]", Box::new(|c| c["items"][0]["ids"][1] = json!(-3)), "not a token id"),
            (
                "items[0].markers[1]",
                Box::new(|c| c["items"][0]["markers"][1] = json!(8)),
                "inside the row (8 tokens)",
            ),
            ("items[0].qtype", Box::new(|c| c["items"][0]["qtype"] = json!(3)), "0 (choice)"),
            ("logits[0]", Box::new(|c| c["logits"][0] = json!([0.5])), "1 values, expected 2"),
            ("action_logits", Box::new(|c| c["action_logits"][0] = json!([1.0])), "≥ 2"),
            ("logits[0][1]", Box::new(|c| c["logits"][0][1] = json!("x")), "not a finite number"),
            ("length", Box::new(|c| c["length"] = json!(9)), "longest row has 8"),
            ("answers", Box::new(|c| c["answers"] = json!({"q9": {}})), "differ from the question ids"),
            (
                "state",
                Box::new(|c| {
                    c.as_object_mut().unwrap().remove("state");
                }),
                "is missing",
            ),
        ];
        for (field, edit, detail) in edits {
            let mut c = case();
            edit(&mut c);
            let e = Goldens::parse(&file(vec![c]), "g.json").unwrap_err().to_string();
            assert!(e.starts_with(&format!("g.json: case `c1`: {field}: ")), "{field}: {e}");
            assert!(e.contains(detail), "{field}: {e}");
        }
    }

    #[test]
    fn another_format_is_refused_as_a_whole() {
        for (bytes, detail) in [
            (b"[1, 2]".to_vec(), "not a parity goldens file"),
            (br#"{"schema": 1, "cases": []}"#.to_vec(), "no `model`"),
            (br#"{"model": "m", "reference": "r", "cases": []}"#.to_vec(), "`cases` is empty"),
            (b"{".to_vec(), "not valid JSON"),
        ] {
            let e = Goldens::parse(&bytes, "x.json").unwrap_err().to_string();
            assert!(e.starts_with("x.json: ") && e.contains(detail), "{e}");
        }
        let twice = file(vec![case(), case()]);
        assert!(Goldens::parse(&twice, "g.json")
            .unwrap_err()
            .to_string()
            .contains("repeats an earlier case"));
    }
}
