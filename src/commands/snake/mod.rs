//! `laya-bench snake`: play (terminal view or headless), replay, compare, bench.
//!
//! The game, policy, paired check and rate benchmark live in `crate::snake`; this folder turns
//! arguments into those runs, owns the terminal (`tui.rs`; what a frame shows is
//! `crate::snake::view`) and prints.

mod compare;
mod play;
mod rate;
mod replay;
mod tui;

use std::path::Path;

use anyhow::anyhow;
use serde::Serialize;

use super::common::load_bundle;
use super::{Failure, Outcome};
use crate::cli::{SnakeArgs, SnakeCommand, SnakeGameArgs};
use crate::host::HostInfo;
use crate::laya::bundle::Bundle;
use crate::run::outputs::write_output;
use crate::snake::game::Game;
use crate::snake::host_predictor::{self, HostPredictor};
use crate::snake::rate_search::warm_up;
use crate::snake::{PolicyConfig, PromptStyle};
use crate::time::iso_utc_now;

/// Run `laya-bench snake …`.
pub(crate) fn run(args: &SnakeArgs, cx: &crate::backend::Context) -> Outcome {
    match &args.command {
        SnakeCommand::Play(a) => play::run(a, cx),
        SnakeCommand::Replay(a) => replay::run(a),
        SnakeCommand::Compare(a) => compare::run(a, cx),
        SnakeCommand::Bench(a) => rate::run(a, cx),
    }
}

/// `SPEC` or `NAME=SPEC` as (name, spec) (exit 2 when either is empty).
fn single_arm(text: &str) -> Result<(String, String), Failure> {
    Ok(crate::run::arm::split_single(text)?)
}

/// Check the board and prompt before loading anything (exit 2) and return the policy.
fn policy(game: &SnakeGameArgs, guarded: bool) -> Result<PolicyConfig, Failure> {
    Game::new(game.width, game.height, 0, game.initial_length).map_err(|e| {
        Failure::input(anyhow!(
            "--width {} --height {} --initial-length {}: {e}",
            game.width,
            game.height,
            game.initial_length
        ))
    })?;
    let prompt: PromptStyle = game.prompt.parse().map_err(|e| Failure::input(anyhow!("--prompt: {e}")))?;
    Ok(PolicyConfig { guarded, prompt })
}

/// `--length`, or the automatic length for this model, board and prompt
/// ([`host_predictor::auto_row_length`] of a probe walk); says on stderr which it is.
fn row_length(bundle: &Bundle, game: &SnakeGameArgs, policy: PolicyConfig) -> Result<usize, Failure> {
    if let Some(given) = game.row_length {
        let max_len = bundle.agent.max_len;
        return match usize::try_from(given) {
            Ok(l) if l <= max_len => Ok(l),
            _ => Err(Failure::input(anyhow!(
                "--length {given} is longer than the model's max_len {max_len}: the host never builds a row that long; pass at most {max_len}"
            ))),
        };
    }
    let walk = new_game(game, 0)?;
    let longest = host_predictor::probe_row_tokens(bundle, walk, policy)
        .map_err(|e| Failure::input(anyhow!(e).context("probing the row length (pass --length L)")))?;
    let length = host_predictor::auto_row_length(longest, bundle.agent.max_len);
    eprintln!(
        "row length: {length} tokens (automatic: the longest row of a probe walk has {longest}; --length sets it)"
    );
    Ok(length)
}

/// Build an arm at the Snake budget with rows of `length` tokens (exit 2 for a spec that
/// cannot run); prints load warnings.
fn build_arm<'b>(
    bundle: &'b Bundle,
    name: &str,
    spec: &str,
    length: usize,
    cx: &crate::backend::Context,
) -> Result<HostPredictor<'b>, Failure> {
    let arm = HostPredictor::build(name, spec, bundle, length, cx)
        .map_err(|e| Failure::input(anyhow!(e).context(format!("arm `{name}`"))))?;
    for w in arm.load_warnings() {
        eprintln!("warning: {w}");
    }
    Ok(arm)
}

/// A board of `game`'s size and initial length on seed `seed` (exit 2 when it cannot be built).
fn new_game(game: &SnakeGameArgs, seed: i64) -> Result<Game, Failure> {
    Game::new(game.width, game.height, seed, game.initial_length).map_err(Failure::input)
}

/// The untimed warm-up of an arm: `decisions` shielded decisions on the board of seed `seed`,
/// then its counts are reset (exit 2 for a board that cannot be built, 1 when a decision
/// fails, under the context `what`).
fn warm_up_arm(
    arm: &mut HostPredictor<'_>,
    game: &SnakeGameArgs,
    seed: i64,
    policy: PolicyConfig,
    decisions: u64,
    what: &str,
) -> Outcome {
    warm_up(new_game(game, seed)?, policy, arm, decisions)
        .map_err(|e| Failure::run(anyhow!("{e}").context(what.to_string())))?;
    arm.reset_counts();
    Ok(())
}

/// Write a report as pretty JSON: atomically to a file (a reader never sees half a report),
/// or to standard output for `-`.
fn write_report(path: &Path, report: &impl Serialize) -> Result<(), Failure> {
    let bytes = serde_json::to_vec_pretty(report)
        .map_err(|e| crate::error::Error::run("cannot serialize the report").because(e))?;
    Ok(write_output(path, &bytes)?)
}

/// Print a line of results: on standard output, or on standard error when the report goes
/// to standard output (`--output -`), which then holds the report alone.
fn say(report_on_stdout: bool, line: &str) -> Outcome {
    if report_on_stdout {
        eprintln!("{line}");
        Ok(())
    } else {
        outln!("{line}")
    }
}

/// Load the model (exit 2) and build one arm from `--arm SPEC|NAME=SPEC`.
fn load_single(model: &str, arm: &str, hub: &crate::hub::Hub) -> Result<(Bundle, String, String), Failure> {
    let (name, spec) = single_arm(arm)?;
    Ok((load_bundle(model, hub)?, name, spec))
}

/// The CPU model, or the architecture when it cannot be read.
fn hardware() -> String {
    let host = HostInfo::detect();
    host.cpu_model.unwrap_or(host.arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_arm_accepts_a_spec_or_a_named_spec() {
        assert_eq!(single_arm("portable:f16").unwrap(), ("portable:f16".into(), "portable:f16".into()));
        assert_eq!(single_arm("b=portable:f16").unwrap(), ("b".into(), "portable:f16".into()));
        let mock = "mock:fail-after=3".to_string();
        assert_eq!(single_arm(&mock).unwrap(), (mock.clone(), mock));
        assert_eq!(single_arm("=portable:f16").unwrap_err().kind, crate::error::Kind::Input);
        assert_eq!(single_arm("").unwrap_err().kind, crate::error::Kind::Input);
    }

    #[test]
    fn iso_time_has_the_iso_shape() {
        let t = iso_utc_now();
        assert_eq!(t.len(), 20, "{t}");
        assert_eq!((&t[4..5], &t[10..11], &t[19..20]), ("-", "T", "Z"));
    }
}
