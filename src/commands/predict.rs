//! `laya-bench predict`: one or more requests through the shared host path and a backend.

use std::path::Path;

use anyhow::{anyhow, Context};
use serde_json::{json, Value};

use super::common::{build_backend, load_bundle};
use super::{Failure, Outcome};
use crate::backend::registry;
use crate::backend::PreparedBatch;
use crate::cli::PredictArgs;
use crate::laya::decode::MinConfidence;
use crate::laya::host::{CallOptions, Trace};
use crate::laya::pyjson::dumps_indent;
use crate::laya::tokenizer::Tokenizer;

/// One request: a state, questions and per-call options.
struct Request {
    state: Value,
    questions: Value,
    opts: CallOptions,
}

pub(crate) fn run(args: &PredictArgs, cx: &crate::backend::Context) -> Outcome {
    let requests = read_requests(args)?;
    let bundle = load_bundle(&args.model.model, &cx.hub)?;
    // A budget above the model's own is allowed, as the reference allows it (only a row that
    // long fails); a failure then says where the budget came from.
    let model_max = bundle.agent.max_len;
    let over = |r: &Request| {
        r.opts.max_len.filter(|&n| n > model_max).map(|n| {
            let from = if args.max_len.is_some() { "--max-len" } else { "the request's max_len" };
            format!(" ({from} {n} is above the model's max_len {model_max}; pass at most {model_max})")
        })
    };
    let mut backend = build_backend(&args.backend, &bundle, cx)?;
    let host = registry::host_for(&bundle, backend.info().shapes.clone(), backend.info());
    for w in host.load_warnings() {
        eprintln!("warning: {w}");
    }
    if args.explain && backend.answers_requests().is_some() {
        return Err(Failure::input(anyhow!(
            "--explain shows our host path (rows, tokens, packed shapes); a ref: backend answers whole requests in its Python runtime and has none"
        )));
    }
    let mut outputs = Vec::with_capacity(requests.len());
    for (i, req) in requests.iter().enumerate() {
        let mut trace = Trace::default();
        let answered = match backend.answers_requests() {
            Some(worker) => worker.answer(&req.state, &req.questions, &req.opts).map(|(r, _)| r),
            None => host.predict(
                backend.as_mut(),
                &req.state,
                &req.questions,
                &req.opts,
                args.explain.then_some(&mut trace),
            ),
        };
        let result = answered.map_err(|e| {
            // which request, and of which file, the message is about
            let which = if requests.len() > 1 { format!("request {i}") } else { "the request".to_string() };
            let hint = over(req).unwrap_or_default();
            Failure::of(e).context(match &args.request {
                Some(file) => format!("--request {}: {which} failed{hint}", file.display()),
                None => format!("{which} failed{hint}"),
            })
        })?;
        let explain = args.explain.then(|| explain_json(&bundle.tokenizer, &trace, &req.questions));
        outputs.push((result.to_json(), explain));
    }
    print_outputs(args, outputs)
}

fn print_outputs(args: &PredictArgs, outputs: Vec<(Value, Option<Value>)>) -> Result<(), Failure> {
    if args.json {
        for (result, explain) in outputs {
            let line = match explain {
                Some(e) => json!({"result": result, "explain": e}),
                None => result,
            };
            outln!("{}", serde_json::to_string(&line).unwrap_or_default())?;
        }
        return Ok(());
    }
    let many = outputs.len() > 1 || args.request.as_deref().is_some_and(is_list_request);
    let results: Vec<Value> = outputs.iter().map(|(r, _)| r.clone()).collect();
    if many {
        outln!("{}", dumps_indent(&Value::Array(results)))?;
    } else if let Some(r) = results.first() {
        outln!("{}", dumps_indent(r))?;
    }
    for (i, (_, explain)) in outputs.iter().enumerate() {
        if let Some(e) = explain {
            print_explain(i, e)?;
        }
    }
    Ok(())
}

fn is_list_request(path: &Path) -> bool {
    crate::laya::request::read_input_file(path).map(|t| t.trim_start().starts_with('[')).unwrap_or(false)
}

fn print_explain(index: usize, e: &Value) -> Result<(), Failure> {
    for row in e.get("rows").and_then(Value::as_array).into_iter().flatten() {
        outln!(
            "# request {index} question {} qtype {} ({} tokens) markers {} shape {}",
            row["question"],
            row["qtype"],
            row["length"],
            row["marker_pos"],
            row["shape"]
        )?;
        let ids = row["token_ids"].as_array().cloned().unwrap_or_default();
        let toks = row["tokens"].as_array().cloned().unwrap_or_default();
        let pairs: Vec<String> =
            ids.iter().zip(&toks).map(|(i, t)| format!("{}:{}", i, t.as_str().unwrap_or(""))).collect();
        outln!("#   {}", pairs.join(" "))?;
    }
    Ok(())
}

/// Per question row: token ids and strings, markers, qtype and the packed shape it ran at.
fn explain_json(tok: &Tokenizer, trace: &Trace, questions: &Value) -> Value {
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

fn read_requests(args: &PredictArgs) -> Result<Vec<Request>, Failure> {
    let cli_opts = cli_options(args)?;
    if let Some(path) = &args.request {
        let text = crate::laya::request::read_input_file(path)
            .map_err(|e| Failure::input(anyhow!(e).context("cannot read the request file")))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))
            .map_err(Failure::input)?;
        let items = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        if items.is_empty() {
            return Err(Failure::input(anyhow!(
                "{}: the request list is empty; add {{\"state\": ..., \"questions\": {{...}}}}",
                path.display()
            )));
        }
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                request_from_json(item, &cli_opts)
                    .map_err(|e| Failure::input(anyhow!("{}: request {i}: {e}", path.display())))
            })
            .collect();
    }
    let (Some(state), Some(questions)) = (&args.state, &args.questions) else {
        return Err(Failure::input(anyhow!(
            "give either --request FILE, or --state TEXT with --questions JSON (see laya-bench predict --help)"
        )));
    };
    let questions = parse_questions_arg(questions)?;
    Ok(vec![Request { state: Value::String(state.clone()), questions, opts: cli_opts }])
}

fn parse_questions_arg(arg: &str) -> Result<Value, Failure> {
    let trimmed = arg.trim_start();
    let text = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        arg.to_string()
    } else {
        crate::laya::request::read_input_file(Path::new(arg)).map_err(|e| {
            Failure::input(anyhow!(e).context(format!(
                "--questions: `{arg}` is not inline JSON (it starts with neither `{{` nor `[`), so it was read as a file"
            )))
        })?
    };
    serde_json::from_str(&text).context("--questions is not valid JSON").map_err(Failure::input)
}

fn cli_options(args: &PredictArgs) -> Result<CallOptions, Failure> {
    let min_confidence = match &args.min_confidence {
        None => None,
        Some(text) => {
            let v: Value = serde_json::from_str(text).map_err(|_| {
                Failure::input(anyhow!("--min-confidence: `{text}` is neither a number nor a JSON map"))
            })?;
            Some(MinConfidence::parse(&v).map_err(Failure::input)?)
        }
    };
    Ok(CallOptions {
        max_len: args.max_len,
        head_max_len: args.head_max_len,
        min_confidence,
        states_per_batch: None,
    })
}

fn request_from_json(item: Value, cli: &CallOptions) -> Result<Request, String> {
    let (state, questions, opts) = crate::laya::request::parse_request(item).map_err(|e| e.to_string())?;
    Ok(Request {
        state,
        questions,
        opts: CallOptions {
            max_len: opts.max_len.or(cli.max_len),
            head_max_len: opts.head_max_len.or(cli.head_max_len),
            min_confidence: opts.min_confidence.or_else(|| cli.min_confidence.clone()),
            states_per_batch: None,
        },
    })
}
