//! A fixed-length run's set-up: the workload it cycles through and its arms, every one built
//! for the same padded length, checked before anything is measured.

use std::path::Path;

use crate::laya::bundle::Bundle;
use crate::laya::host::Host;
use crate::laya::workload::{self, Built};
use crate::protocol::{self, Arm};

use super::arm::ArmSpec;
use super::BenchError;

/// What a `speed`, `energy` or `trace run` arm is asked: the workload and the padded length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadPlan {
    /// `invoice` or the path of a request file.
    pub name: String,
    /// Real tokens per row of the invoice workload.
    pub tokens: usize,
    /// Padded length every arm runs at.
    pub length: usize,
}

impl WorkloadPlan {
    /// Whether this is the built-in invoice workload (token count exact).
    pub fn is_invoice(&self) -> bool {
        self.name == "invoice"
    }

    /// The plan, checked ([`Self::check`]).
    pub fn checked(name: &str, tokens: usize, length: usize) -> Result<Self, BenchError> {
        let plan = Self { name: name.to_string(), tokens, length };
        plan.check()?;
        Ok(plan)
    }

    /// `length` must be positive and, for the invoice workload, hold `tokens` (exit 2).
    pub fn check(&self) -> Result<(), BenchError> {
        if self.length == 0 {
            return Err(BenchError::Input("--length must be at least 1".into()));
        }
        if self.is_invoice() && self.tokens > self.length {
            return Err(BenchError::Input(format!(
                "--tokens {} does not fit --length {}: rows are padded up to the length, never cut; raise --length or lower --tokens",
                self.tokens, self.length
            )));
        }
        Ok(())
    }
}

/// The arms, built for one fixed length, and the workload they run.
pub struct Setup<'b> {
    /// Arms, baseline first.
    pub arms: Vec<Arm<'b>>,
    /// The workload as built (token counts per row).
    pub built: Built,
    /// The workload the protocol cycles through.
    pub workload: protocol::Workload,
    /// What a reader must see before the run: each arm's notes (`arm `a` (spec): note`).
    pub notes: Vec<String>,
    /// The checkpoint's load warnings.
    pub warnings: Vec<String>,
}

impl<'b> Setup<'b> {
    /// Build every arm at the plan's length and the workload (exit 2 for anything that cannot
    /// run).
    pub fn build(bundle: &'b Bundle, specs: &[ArmSpec], plan: &WorkloadPlan) -> Result<Self, BenchError> {
        if plan.length > bundle.agent.max_len {
            return Err(BenchError::Input(format!(
                "--length {} is longer than the model's max_len {}: the host never builds a row that long; pass --length {} or less",
                plan.length, bundle.agent.max_len, bundle.agent.max_len
            )));
        }
        let mut arms: Vec<Arm<'_>> = Vec::with_capacity(specs.len());
        let mut notes = Vec::new();
        for spec in specs {
            let arm = Arm::build_fixed(bundle, spec, plan.length)?;
            notes.extend(arm.notes().iter().map(|n| format!("arm `{}` ({}): {n}", spec.name, spec.spec)));
            arms.push(arm);
        }
        let first = arms.first().ok_or_else(|| BenchError::Input("a run needs at least one arm".into()))?;
        let (built, workload) = build_workload(&first.host, plan)?;
        let warnings = first.host.load_warnings();
        Ok(Setup { arms, built, workload, notes, warnings })
    }
}

/// The invoice workload at exactly `tokens` real tokens per row, or the requests of a file;
/// refused (exit 2) when a row is longer than the length.
pub fn build_workload(
    host: &Host<'_>,
    plan: &WorkloadPlan,
) -> Result<(Built, protocol::Workload), BenchError> {
    let built = if plan.is_invoice() {
        workload::invoice(host, plan.tokens).map_err(|e| BenchError::input_chain("--workload invoice", &e))?
    } else {
        workload::from_file(Path::new(&plan.name), host).map_err(|e| BenchError::input_chain("", &e))?
    };
    let longest = built.tokens_per_row.iter().flatten().copied().max().unwrap_or(0);
    if longest > plan.length {
        return Err(BenchError::Input(format!(
            "the workload has a row of {longest} tokens, longer than --length {}; raise --length",
            plan.length
        )));
    }
    let workload = protocol::Workload { name: built.name.clone(), requests: built.requests.clone() };
    Ok((built, workload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::ModelSpec;

    fn plan(tokens: usize, length: usize) -> WorkloadPlan {
        WorkloadPlan { name: "invoice".into(), tokens, length }
    }

    #[test]
    fn the_length_must_hold_the_tokens() {
        assert!(plan(91, 96).check().is_ok());
        assert!(plan(96, 96).check().is_ok());
        assert!(plan(97, 96)
            .check()
            .unwrap_err()
            .to_string()
            .contains("--tokens 97 does not fit --length 96"));
        assert!(plan(1, 0).check().unwrap_err().to_string().contains("--length must be at least 1"));
        // A request file's rows are measured when it is read, not here.
        let file = WorkloadPlan { name: "r.jsonl".into(), tokens: 500, length: 96 };
        assert!(file.check().is_ok());
    }

    #[test]
    fn every_arm_is_built_at_the_plan_length() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        let specs =
            [ArmSpec::parse_named("a=portable:f32").unwrap(), ArmSpec::parse_named("b=portable:w8").unwrap()];
        let setup = Setup::build(&bundle, &specs, &plan(91, 96)).unwrap();
        assert_eq!(setup.arms.len(), 2);
        assert!(setup.built.tokens_per_row.iter().flatten().all(|&t| t == 91));
        // builtin:tiny has nothing big enough to palettize: the w8 arm says so.
        assert!(setup.notes.iter().any(|n| n.starts_with("arm `b` (portable:w8): ")), "{:?}", setup.notes);
        let long = plan(91, bundle.agent.max_len + 1);
        let e = Setup::build(&bundle, &specs, &long).err().unwrap();
        assert!(e.to_string().contains("longer than the model's max_len"), "{e}");
    }
}
