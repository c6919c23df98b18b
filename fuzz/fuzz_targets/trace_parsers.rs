//! Fuzz target: every xctrace parser must return Ok or Err on any bytes, never panic.
#![no_main]

use laya_bench::trace::{parse_interval_table, summarize, TableKind, TraceToc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let toc = TraceToc::parse(data);
    let hardware = parse_interval_table(data, TableKind::NeuralEngineHardware);
    let _ = parse_interval_table(data, TableKind::CoreMlSignpost);
    if let (Ok(toc), Ok(hardware)) = (toc, hardware) {
        if let Some(run) = toc.runs.first() {
            let _ = summarize(run, &hardware, None);
        }
    }
});
