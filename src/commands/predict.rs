//! `laya-bench predict`: one or more requests through the shared host path and a backend. The
//! requests and the explain view are [`crate::laya::predict`]'s; this file turns the flags into
//! them, runs each request and prints.

use anyhow::anyhow;
use serde_json::{json, Value};

use super::common::{build_backend, load_bundle};
use super::{Failure, Outcome};
use crate::backend::registry;
use crate::cli::PredictArgs;
use crate::laya::host::Trace;
use crate::laya::predict::{explain_json, explain_text, is_list_file, read_requests, Request, RequestFlags};
use crate::laya::pyjson::dumps_indent;

pub(crate) fn run(args: &PredictArgs, cx: &crate::backend::Context) -> Outcome {
    let requests = read_requests(&RequestFlags {
        request: args.request.as_deref(),
        state: args.state.as_deref(),
        questions: args.questions.as_deref(),
        max_len: args.max_len,
        head_max_len: args.head_max_len,
        min_confidence: args.min_confidence.as_deref(),
    })?;
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
    if let Some((i, why)) = crate::backend::first_refusal(backend.as_mut(), requests.iter().map(|r| &r.opts))
    {
        let which = if requests.len() > 1 { format!("request {i}") } else { "the request".to_string() };
        return Err(Failure::input(anyhow!("{}: {which}: {why}", args.backend)));
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
    let many = outputs.len() > 1 || args.request.as_deref().is_some_and(is_list_file);
    let results: Vec<Value> = outputs.iter().map(|(r, _)| r.clone()).collect();
    if many {
        outln!("{}", dumps_indent(&Value::Array(results)))?;
    } else if let Some(r) = results.first() {
        outln!("{}", dumps_indent(r))?;
    }
    for (i, (_, explain)) in outputs.iter().enumerate() {
        if let Some(e) = explain {
            super::write_stdout(&explain_text(i, e))?;
        }
    }
    Ok(())
}
