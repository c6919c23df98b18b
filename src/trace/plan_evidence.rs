//! The compute-plan evidence `trace record` shows next to a recording: for a Core ML arm its
//! `MLComputePlan` placement, asked of the backend; for any other arm, why there is none.

use super::ComputePlanReport;
use crate::backend::registry::BackendSpec;

/// Compute-plan evidence for the traced arm, shown next to the trace summary.
///
/// For a Core ML arm, the one-line summary of its `MLComputePlan` placement
/// ([`crate::backend::coreml::compute_plan_for`], the [`ComputePlanReport`] that
/// `convert-check` also prints) with the report itself; for other arms, why there is none.
pub fn evidence_for(
    name: &str,
    spec: &str,
    parsed: &BackendSpec,
    settings: &crate::settings::Settings,
) -> (String, Option<ComputePlanReport>) {
    match parsed {
        BackendSpec::Portable(_)
        | BackendSpec::PortablePalette { .. }
        | BackendSpec::Mock { .. }
        | BackendSpec::Mlx(_)
        | BackendSpec::Reference(_) => {
            (format!("not applicable: arm `{name}` is {spec}, not a Core ML arm"), None)
        }
        BackendSpec::CoreMl(cm) => {
            let units = cm.units.unwrap_or_else(|| crate::backend::coreml::default_units_for(&cm.bundle));
            match crate::backend::coreml::compute_plan_for(&cm.bundle, units, settings) {
                Ok(r) => (
                    format!(
                        "MLComputePlan ({}): {} operations, {} placed, Neural Engine share of placed {} \
                         (expected placement before running, not proof of execution; the intervals \
                         above are the execution evidence)",
                        units.name(),
                        r.op_count,
                        r.placed_op_count,
                        r.neural_engine_share_of_placed_fraction.map_or_else(
                            || "n/a (nothing placed)".to_string(),
                            |f| format!("{:.1} %", f * 100.0)
                        )
                    ),
                    Some(r),
                ),
                Err(e) => (format!("unavailable for arm `{name}`: {e}"), None),
            }
        }
    }
}
