//! `laya-bench`: parse, dispatch, print the error chain, map the outcome to an exit code.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = match laya_bench::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match laya_bench::commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // (a stderr that cannot be written loses the message, never the exit code)
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: {failure}");
            ExitCode::from(failure.kind.exit_code())
        }
    }
}

/// Let a closed pipe end the process quietly (`laya-bench ... | head`), as Unix tools do,
/// instead of the Rust runtime's panic on the failed write. Raw records are flushed and
/// synced per record, so an earlier end loses nothing already measured; a run ended this
/// way has no footer and `summary` reports it as incomplete.
#[cfg(unix)]
fn restore_default_sigpipe() {
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_default_sigpipe() {}
