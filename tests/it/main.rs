//! The integration tests, built as one test binary: every binary target links the whole
//! dependency tree, so one binary keeps a cold `cargo test` fast and its disk use small.
//! Each module runs `laya-bench` as a user would, or checks parity with the reference goldens.

mod common;

mod cli_bounds;
mod cli_convert_check;
mod cli_coreml_fixtures;
mod cli_doctor;
mod cli_energy;
mod cli_exports;
mod cli_flags;
mod cli_hub;
#[cfg(feature = "mlx")]
mod cli_mlx;
#[cfg(feature = "nvml")]
mod cli_nvml;
mod cli_palettize;
mod cli_predict;
mod cli_reference;
mod cli_snake;
mod cli_speed;
mod cli_speed_batch;
mod cli_speed_sweep;
mod cli_summary;
mod cli_summary_gate;
mod cli_trace;
mod cli_verify;
mod docs_self_contained;
mod forward_parity;
mod host_parity;
mod hub_server;
mod interrupts;
#[cfg(feature = "mlx")]
mod mlx_graph;
mod precision;
mod real_runs;
mod reliability_files;
mod reliability_inputs;
mod reliability_meters;
mod tokenizer_parity;
