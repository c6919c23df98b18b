//! The rate report's life outside a run: a new one ([`RateReport::new`]), one read back to
//! resume ([`RateReport::read_to_resume`]) and checked against the model and arm it continues
//! with ([`RateReport::check_resumable`]), its stored method prose, the line printed per
//! episode ([`Episode::line`]) and its verdict as text ([`Render`]).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{parse_rates, Episode, Phase, RateError, RateReport, RateSettings, REPORT_KIND, SCHEMA_VERSION};
use crate::error::{Error, ResultExt};
use crate::record::model::ModelInfo;
use crate::record::provenance::ReportHead;
use crate::record::ArmInfo;
use crate::report::Render;
use crate::snake::game::RNG_IDENTITY;

impl RateSettings {
    /// The settings of a new run with the sweep's rates checked and put in order (exit 2 for a
    /// bad rate list or no seeds).
    pub fn checked(self) -> Result<Self, Error> {
        let rates_fps = parse_rates(&self.rates_fps)?;
        if self.seeds.is_empty() {
            return Err(Error::input("--seed needs at least one seed, e.g. --seed 101,102"));
        }
        Ok(Self { rates_fps, ..self })
    }
}

impl RateReport {
    /// A report with no episode yet, begun now.
    pub fn new(model: ModelInfo, arm: ArmInfo, settings: RateSettings) -> Self {
        RateReport {
            head: ReportHead::current(SCHEMA_VERSION, REPORT_KIND, crate::time::iso_utc_now()),
            model,
            arm,
            rng: RNG_IDENTITY.into(),
            method: method(),
            settings,
            raw_top1: Vec::new(),
            uncapped: None,
            sweep: Vec::new(),
            uncapped_soak: Vec::new(),
            soak_attempts: Vec::new(),
            fastest_tested_stable_fps: None,
            complete: false,
            resumed_sessions: 0,
        }
    }

    /// The report a run goes on with: `resumed` (its settings kept, one more session counted)
    /// when it was measured with `model` and `arm` (exit 2 otherwise), or a new one of
    /// `settings`.
    pub fn resume_or_new(
        resumed: Option<Self>,
        model: ModelInfo,
        arm: &ArmInfo,
        settings: RateSettings,
    ) -> Result<Self, Error> {
        match resumed {
            Some(mut report) => {
                report.check_resumable(&model, arm)?;
                report.resumed_sessions += 1;
                Ok(report)
            }
            None => Ok(Self::new(model, arm.clone(), settings)),
        }
    }

    /// The report at `path` to resume (`--resume`; exit 2 when it is missing, unreadable or
    /// another kind or version, or `-`: standard output, which cannot be read back).
    pub fn read_to_resume(path: &Path) -> Result<Self, Error> {
        if crate::report::is_stdout(path) {
            return Err(Error::input(
                "--resume --output -: a report on standard output cannot be read back; give the --output FILE of an earlier snake bench",
            ));
        }
        let shown = path.display();
        let text = std::fs::read_to_string(path).input_context(|| {
            format!("--resume: cannot read {shown}; give the --output of an earlier snake bench")
        })?;
        let value: Value =
            serde_json::from_str(&text).input_context(|| format!("--resume: {shown} is not JSON"))?;
        let kind = value.get("kind").and_then(Value::as_str);
        let version = value.get("schema_version").and_then(Value::as_u64);
        if kind != Some(REPORT_KIND) || version != Some(u64::from(SCHEMA_VERSION)) {
            return Err(Error::input(format!(
                "--resume: {shown} is not a snake bench report of schema_version {SCHEMA_VERSION} (kind {}, schema_version {})",
                kind.map_or_else(|| "missing".to_string(), |k| format!("`{k}`")),
                version.map_or_else(|| "missing".to_string(), |v| v.to_string())
            )));
        }
        serde_json::from_value(value)
            .input_context(|| format!("--resume: {shown} does not hold a complete snake bench report"))
    }

    /// A resumed report must continue with the same model and arm (exit 2 otherwise).
    pub fn check_resumable(&self, model: &ModelInfo, arm: &ArmInfo) -> Result<(), Error> {
        let old = &self.arm;
        let mut changed = Vec::new();
        if self.model != *model {
            changed.push(format!("model {:?} → {:?}", self.model.spec, model.spec));
        }
        for (field, a, b) in [
            ("arm spec", &old.spec, &arm.spec),
            ("backend", &old.backend, &arm.backend),
            ("precision", &old.precision, &arm.precision),
            ("weight fingerprint", &old.fingerprint, &arm.fingerprint),
        ] {
            if a != b {
                changed.push(format!("{field} {a} → {b}"));
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        Err(Error::input(format!(
            "--resume: the report was measured with a different model or arm ({}); resume with the same --model and --arm, or start a new --output",
            changed.join(", ")
        )))
    }
}

/// What a benchmark that ended early with `error` says: a stop how to continue the report at
/// `output` (`None`: the report went to standard output, which cannot be resumed), any other
/// error where the finished episodes are.
pub fn ended_early(error: &RateError, output: Option<&Path>) -> String {
    let shown = output.map_or("standard output".into(), |o| o.display().to_string());
    match (error, output) {
        (RateError::Stopped, None) => {
            "stopped; the report on standard output keeps every finished episode".into()
        }
        (RateError::Stopped, Some(_)) => {
            format!("stopped; {shown} keeps every finished episode: continue with --resume --output {shown}")
        }
        (e, _) => format!("the benchmark stopped; finished episodes are in {shown}: {e}"),
    }
}

/// The report's verdict: the fastest tested stable rate, or nothing when no tested rate was
/// stable (the command then fails saying so).
impl Render for RateReport {
    fn terminal(&self) -> String {
        match self.fastest_tested_stable_fps {
            Some(fps) => format!(
                "fastest tested stable rate: {fps} decisions/s (every soak seed alive, ≤1% deadline misses)\n"
            ),
            None => String::new(),
        }
    }
}

impl Episode {
    /// The line printed when the episode finishes in `phase`.
    pub fn line(&self, phase: Phase) -> String {
        let mode = if self.guarded { "shield" } else { "top-1" };
        let target = self.target_fps.map_or("uncapped".to_string(), |f| format!("{f}/s"));
        let actual = self.achieved_steps_per_second.map_or("n/a".into(), |r| format!("{r:.1}/s"));
        let p99 = self.active_tick.map_or("n/a".into(), |l| format!("{:.2}ms", l.p99_ms));
        let miss = self.miss_fraction.map_or("n/a".into(), |m| format!("{:.1}%", m * 100.0));
        format!(
            "{:<13} {mode} seed={} target={target} steps={} score={} alive={} actual={actual} active-tick-p99={p99} miss={miss}",
            phase.as_str(),
            self.seed,
            self.steps,
            self.score,
            self.alive
        )
    }
}

/// The method prose stored in every report.
fn method() -> Map<String, Value> {
    let value = json!({
        "stable": "A rate is stable when every soak seed stays alive with at most 1% of its ticks over the tick period; fastest_tested_stable_fps is the fastest rate whose soak passed, tried from the fastest passing sweep rate down.",
        "timing": "active_tick = one whole decision (planner features, one predict call carrying the move, risk and food questions, decoding, shield) + drawing a full frame into an in-memory terminal + the game step. decision = the whole decision; inference = its predict call. The Snake frame time is the active tick, never the latency of a single question.",
        "color_system": "truecolor",
        "excluded": "model loading, the untimed warm-up (20 shielded steps on seed 9001), pacing sleeps (counted only in seconds and achieved_steps_per_second), report writing between episodes",
        "safety": "the cycle-safety shield is on in every phase except raw_top1; shielded episodes check the cycle-order and food-progress invariants on every tick",
        "limitation": "one arm on this host's backend; paced rates use a sleep after each tick, so a rate the machine cannot sustain fails by missed deadlines, not by skipped ticks",
        "uncapped_stability": "uncapped and uncapped_soak run without pacing: they show survival and the unpaced decision rate, not a stable rate",
    });
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
