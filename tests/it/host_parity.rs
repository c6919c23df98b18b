//! Host-path parity with laya-coreml 0.5.1: token rows, packed arrays, decoded results and error
//! messages must equal the goldens its own host code produced (scripts/make_host_goldens.py).

use std::collections::VecDeque;
use std::time::Duration;

use laya_bench::backend::mock::{Script, ScriptedBackend};
use laya_bench::backend::{ForwardOutput, ShapeCaps, ShapeMode};
use laya_bench::laya::config::AgentConfig;
use laya_bench::laya::decode::MinConfidence;
use laya_bench::laya::host::{states_from_value, CallOptions, Host, StateResult, Trace};
use laya_bench::laya::tokenizer::Tokenizer;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tiny");

fn goldens() -> Value {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/goldens/host.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn patched(path: &str, patch: &Value) -> String {
    let mut cfg: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    if let (Some(base), Some(p)) = (cfg.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            base.insert(k.clone(), v.clone());
        }
    }
    cfg.to_string()
}

/// Load the fixture's tokenizer and agent config with a case's patches; a load error is the
/// case's outcome (the reference raises it at agent construction).
fn load(case: &Value) -> Result<(Tokenizer, AgentConfig), String> {
    let dir = format!("{FIXTURE}/tokenizer");
    let tok_cfg = patched(&format!("{dir}/tokenizer_config.json"), &case["tokenizer_config_patch"]);
    let tok_json = std::fs::read(format!("{dir}/tokenizer.json")).unwrap();
    let tok = Tokenizer::from_bytes(&tok_json, tok_cfg.as_bytes(), &dir).map_err(|e| e.to_string())?;
    let agent_text = patched(&format!("{FIXTURE}/rl_agent_config.json"), &case["agent_config_patch"]);
    let agent = AgentConfig::from_json(&agent_text, "rl_agent_config.json").map_err(|e| e.to_string())?;
    Ok((tok, agent))
}

fn shape(v: &Value) -> ShapeCaps {
    let n = |k: &str| v[k].as_u64().unwrap() as usize;
    let mode = match (v["mode"].as_str(), v["lengths"].as_array()) {
        (_, Some(lengths)) => {
            ShapeMode::Enumerated(lengths.iter().map(|l| l.as_u64().unwrap() as usize).collect())
        }
        (Some("fixed"), None) => ShapeMode::Fixed,
        _ if v["flexible"].as_bool() == Some(false) => ShapeMode::Fixed,
        _ => ShapeMode::Range,
    };
    ShapeCaps {
        batch_size: n("batch_size"),
        max_length: n("max_length"),
        min_length: v["min_length"].as_u64().unwrap_or(16) as usize,
        max_options: n("max_options"),
        mode,
    }
}

fn ints(v: &Value) -> Vec<i32> {
    fn walk(v: &Value, out: &mut Vec<i32>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Bool(b) => out.push(i32::from(*b)),
            other => out.push(other.as_i64().unwrap() as i32),
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

fn floats(v: &Value) -> Vec<f32> {
    let one = |x: &Value| match x.as_str() {
        Some("NaN") => f32::NAN,
        Some("Infinity") => f32::INFINITY,
        Some("-Infinity") => f32::NEG_INFINITY,
        _ => x.as_f64().unwrap() as f32,
    };
    v.as_array().unwrap().iter().flat_map(|r| r.as_array().unwrap().iter().map(one)).collect()
}

fn options(kwargs: &Value) -> Result<CallOptions, String> {
    let mut o = CallOptions::default();
    if let Some(v) = kwargs.get("max_len").filter(|v| !v.is_null()) {
        o.max_len = Some(v.as_u64().unwrap() as usize);
    }
    if let Some(v) = kwargs.get("head_max_len").filter(|v| !v.is_null()) {
        o.head_max_len = Some(v.as_u64().unwrap() as usize);
    }
    if let Some(v) = kwargs.get("batch_size").filter(|v| !v.is_null()) {
        o.states_per_batch = Some(v.as_u64().unwrap() as usize);
    }
    if let Some(v) = kwargs.get("min_confidence").filter(|v| !v.is_null()) {
        o.min_confidence = Some(MinConfidence::parse(v).map_err(|e| e.to_string())?);
    }
    Ok(o)
}

#[test]
fn host_path_matches_reference_goldens() {
    let g = goldens();
    let cases = g["cases"].as_array().unwrap();
    assert!(cases.len() >= 40, "expected at least 40 golden cases, found {}", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (tok, agent) = match load(case) {
            Ok(loaded) => loaded,
            Err(msg) => {
                // Load errors carry the file and a fix around the reference's exact text.
                let want = case["error"]["message"].as_str().unwrap_or("(no error expected)");
                if !msg.contains(want) {
                    failures.push(format!("{name}: load error\n  got:  {msg}\n  want: ...{want}..."));
                }
                continue;
            }
        };
        let caps = shape(&case["shape"]);
        let outputs: VecDeque<ForwardOutput> = case["forwards"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        let logits = floats(&f["outputs"]["logits"]);
                        let act = floats(&f["outputs"]["action_logits"]);
                        let b = f["outputs"]["logits"].as_array().unwrap().len();
                        ForwardOutput {
                            batch: b,
                            max_options: logits.len() / b,
                            num_actions: act.len() / b,
                            logits,
                            action_logits: act,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut backend = ScriptedBackend::new(caps.clone(), Script::Replay(outputs), Duration::ZERO);
        let host = Host::new(&tok, &agent, caps);
        let call = &case["call"];
        let mut trace = Trace::default();
        let result = options(&call["kwargs"]).map_err(|e| e.to_string()).and_then(|opts| {
            let states: Vec<Value> = match call["method"].as_str() {
                Some("predict_batch") => states_from_value(&call["states"]).map_err(|e| e.to_string())?,
                _ => vec![call["state"].clone()],
            };
            host.predict_batch(&mut backend, &states, &call["questions"], &opts, Some(&mut trace))
                .map_err(|e| e.to_string())
        });
        let mut fail = |what: String| failures.push(format!("{name}: {what}"));
        if let Some(err) = case.get("error").filter(|e| !e.is_null()) {
            match result {
                Err(msg) if msg == err["message"].as_str().unwrap() => {}
                // Deliberate wording: the reference names Core ML, laya-bench names the backend.
                Err(msg)
                    if err["type"] == "FloatingPointError" && msg.starts_with("Non-finite model outputs") => {
                }
                Err(msg) => fail(format!("error message\n  got:  {msg}\n  want: {}", err["message"])),
                Ok(_) => fail(format!("expected error {}", err["message"])),
            }
            continue;
        }
        let results = match result {
            Ok(r) => r,
            Err(e) => {
                fail(format!("unexpected error: {e}"));
                continue;
            }
        };
        let want_warnings: Vec<String> = case["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| w.as_str().unwrap().to_string())
            .collect();
        if host.load_warnings() != want_warnings {
            fail(format!("warnings {:?} != {:?}", host.load_warnings(), want_warnings));
        }
        let rows = case["rows"].as_array().cloned().unwrap_or_default();
        if rows.len() != trace.rows.len() {
            fail(format!("{} rows, want {}", trace.rows.len(), rows.len()));
        }
        for (i, (got, want)) in trace.rows.iter().zip(&rows).enumerate() {
            let ids: Vec<i32> = got.ids.iter().map(|&x| x as i32).collect();
            if ids != ints(&want["ids"]) {
                fail(format!("row {i} ids\n  got:  {ids:?}\n  want: {:?}", ints(&want["ids"])));
            }
            let markers: Vec<i32> = got.markers.iter().map(|&x| x as i32).collect();
            if markers != ints(&want["markers"]) {
                fail(format!("row {i} markers {markers:?} != {:?}", ints(&want["markers"])));
            }
            if let Some(layout) = want.get("layout").filter(|l| !l.is_null()) {
                let l = got.layout.as_ref().map(|l| {
                    (
                        l.position_ids.iter().map(|&x| x as i32).collect::<Vec<_>>(),
                        l.option_ids.iter().map(|&x| x as i32).collect::<Vec<_>>(),
                    )
                });
                if l != Some((ints(&layout["position_ids"]), ints(&layout["option_ids"]))) {
                    fail(format!("row {i} layout differs"));
                }
            }
        }
        let forwards = case["forwards"].as_array().cloned().unwrap_or_default();
        if forwards.len() != backend.seen.len() {
            fail(format!("{} forwards, want {}", backend.seen.len(), forwards.len()));
        }
        for (i, (got, want)) in backend.seen.iter().zip(&forwards).enumerate() {
            let a = &want["arrays"];
            for (field, mine) in [
                ("input_ids", &got.input_ids),
                ("attention_mask", &got.attention_mask),
                ("marker_pos", &got.marker_pos),
                ("marker_mask", &got.marker_mask),
                ("qtype", &got.qtype),
            ] {
                if *mine != ints(&a[field]) {
                    fail(format!("forward {i} array {field} differs (L={})", got.length));
                }
            }
            if let Some(p) = a.get("position_ids") {
                if got.position_ids.as_ref() != Some(&ints(p)) {
                    fail(format!("forward {i} position_ids differ"));
                }
            }
        }
        let got_json: Vec<Value> = results.iter().map(|r| r.to_json()).collect();
        let want_json = case["results"].as_array().cloned().unwrap_or_default();
        if got_json != want_json {
            fail(format!(
                "results differ\n  got:  {}\n  want: {}",
                serde_json::to_string(&got_json).unwrap(),
                serde_json::to_string(&want_json).unwrap()
            ));
        }
    }
    failures.extend(result_dicts_round_trip(cases));
    assert!(
        failures.is_empty(),
        "{} of {} golden cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Every result dict the reference wrote reads back as our `StateResult` and writes out again
/// byte for byte: a `ref:` arm's worker result goes through `StateResult::from_json`.
fn result_dicts_round_trip(cases: &[Value]) -> Vec<String> {
    let mut failures = Vec::new();
    let mut read = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        for want in case["results"].as_array().into_iter().flatten() {
            read += 1;
            match StateResult::from_json(want) {
                Ok(r) if r.to_json() == *want => {}
                Ok(r) => failures.push(format!(
                    "{name}: result dict does not round-trip\n  read:  {want}\n  wrote: {}",
                    r.to_json()
                )),
                Err(e) => failures.push(format!("{name}: result dict does not read back ({e}): {want}")),
            }
        }
    }
    if read < 20 {
        failures.push(format!("only {read} golden result dicts to round-trip; expected at least 20"));
    }
    failures
}
