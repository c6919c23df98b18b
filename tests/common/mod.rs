//! Helpers shared by the integration tests that run the binary.

#![allow(dead_code)] // each test crate uses its own subset

use std::path::Path;
use std::process::{Command, Output};

/// Run `laya-bench ARGS` in `dir`.
pub fn laya_bench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laya-bench"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run laya-bench")
}

/// The run's stdout, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The run's stderr, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
