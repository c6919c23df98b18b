//! The Core ML `MLComputePlan` placement report, shared by `trace` and `convert-check`.
//!
//! A compute plan predicts, per operation, the preferred compute device and an estimated
//! cost (`MLComputePlanCost.weight`, the operation's fraction of the model's total work in
//! [0, 1]; not time, not energy). The macOS code that reads the plan lives elsewhere; this
//! module only aggregates plain rows, so it builds and is tested on every OS.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the [`ComputePlanReport`] JSON layout.
pub const COMPUTE_PLAN_SCHEMA_VERSION: u32 = 1;

/// Fixed statement: a plan is a prediction of placement, not hardware evidence.
pub const CAVEAT_PLAN_IS_PREDICTION: &str = "A compute plan is the expected placement, not \
     hardware evidence; confirm Neural Engine use with the hardware-intervals trace.";

/// The device an operation prefers, as classified from `preferredComputeDevice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreferredDevice {
    /// `MLNeuralEngineComputeDevice`.
    NeuralEngine,
    /// `MLGPUComputeDevice`.
    Gpu,
    /// `MLCPUComputeDevice`.
    Cpu,
    /// No device usage reported (constants, and ops the plan does not place).
    UnknownOrConstant,
}

impl PreferredDevice {
    /// Every device, in report order.
    pub const ALL: [PreferredDevice; 4] = [
        PreferredDevice::NeuralEngine,
        PreferredDevice::Gpu,
        PreferredDevice::Cpu,
        PreferredDevice::UnknownOrConstant,
    ];

    /// Classifies a device name such as `ane`, `neural_engine`, `MLGPUComputeDevice`,
    /// `cpu`; anything unrecognised is [`PreferredDevice::UnknownOrConstant`].
    pub fn from_name(name: &str) -> Self {
        let lower = name.trim().to_ascii_lowercase().replace(['_', '-', ' '], "");
        match lower.as_str() {
            "ane" | "ne" | "neuralengine" | "mlneuralenginecomputedevice" => PreferredDevice::NeuralEngine,
            "gpu" | "mlgpucomputedevice" => PreferredDevice::Gpu,
            "cpu" | "mlcpucomputedevice" => PreferredDevice::Cpu,
            _ => PreferredDevice::UnknownOrConstant,
        }
    }

    /// Its name in reports.
    pub fn label(self) -> &'static str {
        match self {
            PreferredDevice::NeuralEngine => "Neural Engine",
            PreferredDevice::Gpu => "GPU",
            PreferredDevice::Cpu => "CPU",
            PreferredDevice::UnknownOrConstant => "unplaced or constant",
        }
    }
}

/// One operation of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedOp {
    /// The operator name, e.g. `ios17.conv` or `const`.
    pub operator: String,
    /// The preferred device.
    pub preferred: PreferredDevice,
    /// `MLComputePlanCost.weight` in [0, 1], or `None` where the plan gives no estimate.
    pub cost_weight: Option<f64>,
}

/// Operation counts and cost for one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceShare {
    /// The device.
    pub device: PreferredDevice,
    /// Operations preferring it.
    pub op_count: u64,
    /// `op_count` / all operations (`null` when there are none).
    pub op_share_fraction: Option<f64>,
    /// Sum of those operations' cost weights.
    pub cost_weight_sum: f64,
    /// `cost_weight_sum` / the sum over all devices (`null` when no cost was estimated).
    pub cost_weighted_share_fraction: Option<f64>,
}

/// Operations per operator name and device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorCount {
    /// The operator name.
    pub operator: String,
    /// The preferred device.
    pub device: PreferredDevice,
    /// How many operations.
    pub count: u64,
}

/// The placement report of one compute plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputePlanReport {
    /// Layout version, [`COMPUTE_PLAN_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// All operations.
    pub op_count: u64,
    /// Operations with a cost estimate.
    pub ops_with_cost: u64,
    /// Operations whose device is known (not unknown-or-constant).
    pub placed_op_count: u64,
    /// Share of placed operations that prefer the Neural Engine (`null` when none placed).
    pub neural_engine_share_of_placed_fraction: Option<f64>,
    /// Sum of all cost weights (about 1 when every operation was estimated).
    pub total_cost_weight: f64,
    /// One entry per device, in [`PreferredDevice::ALL`] order.
    pub by_device: Vec<DeviceShare>,
    /// Per operator and device, sorted by operator then device.
    pub by_operator: Vec<OperatorCount>,
    /// The fixed caveat.
    pub caveat: String,
}

impl ComputePlanReport {
    /// One line for an arm's notes: operation counts by preferred device, and the Neural
    /// Engine's share of the placed operations (the plan's preference, not a measurement).
    pub fn summary_line(&self) -> String {
        let devices: Vec<String> = self
            .by_device
            .iter()
            .filter(|d| d.op_count > 0)
            .map(|d| format!("{} {}", d.device.label(), d.op_count))
            .collect();
        let devices = if devices.is_empty() { "none".to_string() } else { devices.join(", ") };
        let ne = match self.neural_engine_share_of_placed_fraction {
            Some(f) => format!("{:.1} % of the placed operations prefer the Neural Engine", f * 100.0),
            None => "no operation is placed on a device".to_string(),
        };
        format!("{} operations by preferred device: {devices}; {ne}", self.op_count)
    }
}

/// Why a compute-plan report could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComputePlanError {
    /// A cost weight is not a finite number in [0, 1].
    #[error("invalid cost: operation {index} (`{operator}`) has cost weight {weight}, outside [0, 1]")]
    InvalidCost {
        /// 0-based position of the operation.
        index: usize,
        /// Its operator name.
        operator: String,
        /// The weight given.
        weight: f64,
    },
}

/// Builds the report from the plan's operations; pure.
pub fn build_compute_plan_report(ops: &[PlannedOp]) -> Result<ComputePlanReport, ComputePlanError> {
    let mut counts: BTreeMap<PreferredDevice, (u64, f64)> = BTreeMap::new();
    let mut operators: BTreeMap<(&str, PreferredDevice), u64> = BTreeMap::new();
    let mut ops_with_cost = 0u64;
    let mut total_cost_weight = 0.0f64;
    for (index, op) in ops.iter().enumerate() {
        let weight = match op.cost_weight {
            Some(w) if w.is_finite() && (0.0..=1.0).contains(&w) => {
                ops_with_cost += 1;
                w
            }
            Some(w) => {
                return Err(ComputePlanError::InvalidCost { index, operator: op.operator.clone(), weight: w })
            }
            None => 0.0,
        };
        total_cost_weight += weight;
        let entry = counts.entry(op.preferred).or_default();
        entry.0 += 1;
        entry.1 += weight;
        *operators.entry((op.operator.as_str(), op.preferred)).or_default() += 1;
    }
    let op_count = ops.len() as u64;
    let ratio = |part: f64, whole: f64| (whole > 0.0).then(|| part / whole);
    let by_device: Vec<DeviceShare> = PreferredDevice::ALL
        .iter()
        .map(|&device| {
            let (count, cost) = counts.get(&device).copied().unwrap_or_default();
            DeviceShare {
                device,
                op_count: count,
                op_share_fraction: ratio(count as f64, op_count as f64),
                cost_weight_sum: cost,
                cost_weighted_share_fraction: if ops_with_cost > 0 {
                    ratio(cost, total_cost_weight)
                } else {
                    None
                },
            }
        })
        .collect();
    let unknown = counts.get(&PreferredDevice::UnknownOrConstant).map_or(0, |c| c.0);
    let placed_op_count = op_count - unknown;
    let neural = counts.get(&PreferredDevice::NeuralEngine).map_or(0, |c| c.0);
    Ok(ComputePlanReport {
        schema_version: COMPUTE_PLAN_SCHEMA_VERSION,
        op_count,
        ops_with_cost,
        placed_op_count,
        neural_engine_share_of_placed_fraction: ratio(neural as f64, placed_op_count as f64),
        total_cost_weight,
        by_device,
        by_operator: operators
            .into_iter()
            .map(|((operator, device), count)| OperatorCount { operator: operator.to_owned(), device, count })
            .collect(),
        caveat: CAVEAT_PLAN_IS_PREDICTION.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(operator: &str, preferred: PreferredDevice, cost: Option<f64>) -> PlannedOp {
        PlannedOp { operator: operator.to_owned(), preferred, cost_weight: cost }
    }

    #[test]
    fn counts_ops_by_device_and_weights_share_by_cost() {
        use PreferredDevice::*;
        let ops = [
            op("ios17.conv", NeuralEngine, Some(0.6)),
            op("ios17.conv", NeuralEngine, Some(0.3)),
            op("ios17.matmul", Cpu, Some(0.1)),
            op("const", UnknownOrConstant, None),
            op("const", UnknownOrConstant, None),
        ];
        let report = build_compute_plan_report(&ops).unwrap();
        assert_eq!(report.op_count, 5);
        assert_eq!(report.ops_with_cost, 3);
        assert_eq!(report.placed_op_count, 3);
        let ne = &report.by_device[0];
        assert_eq!((ne.device, ne.op_count), (NeuralEngine, 2));
        assert!((ne.cost_weighted_share_fraction.unwrap() - 0.9).abs() < 1e-12);
        assert!((ne.op_share_fraction.unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(report.by_device[1].op_count, 0);
        assert_eq!(report.by_device[1].cost_weighted_share_fraction, Some(0.0));
        assert!((report.neural_engine_share_of_placed_fraction.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            report.by_operator[0],
            OperatorCount { operator: "const".into(), device: UnknownOrConstant, count: 2 }
        );
        assert_eq!(
            report.summary_line(),
            "5 operations by preferred device: Neural Engine 2, CPU 1, unplaced or constant 2; 66.7 % of the placed operations prefer the Neural Engine"
        );
        let empty = build_compute_plan_report(&[]).unwrap();
        assert_eq!(
            empty.summary_line(),
            "0 operations by preferred device: none; no operation is placed on a device"
        );
    }

    #[test]
    fn empty_plan_gives_null_shares_not_zero() {
        let report = build_compute_plan_report(&[]).unwrap();
        assert_eq!(report.op_count, 0);
        assert!(report.by_device.iter().all(|d| d.op_share_fraction.is_none()));
        assert!(report.by_device.iter().all(|d| d.cost_weighted_share_fraction.is_none()));
        assert_eq!(report.neural_engine_share_of_placed_fraction, None);
    }

    #[test]
    fn rejects_cost_weights_outside_unit_interval() {
        for bad in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
            let err = build_compute_plan_report(&[op("x", PreferredDevice::Cpu, Some(bad))]);
            assert!(matches!(err, Err(ComputePlanError::InvalidCost { index: 0, .. })));
        }
    }

    #[test]
    fn classifies_device_names_from_objc_classes_and_short_names() {
        use PreferredDevice::*;
        assert_eq!(PreferredDevice::from_name("MLNeuralEngineComputeDevice"), NeuralEngine);
        assert_eq!(PreferredDevice::from_name("ane"), NeuralEngine);
        assert_eq!(PreferredDevice::from_name("neural_engine"), NeuralEngine);
        assert_eq!(PreferredDevice::from_name("MLGPUComputeDevice"), Gpu);
        assert_eq!(PreferredDevice::from_name("CPU"), Cpu);
        assert_eq!(PreferredDevice::from_name("unknown"), UnknownOrConstant);
        assert_eq!(PreferredDevice::from_name(""), UnknownOrConstant);
    }

    #[test]
    fn report_round_trips_through_json() {
        let ops = [op("ios17.add", PreferredDevice::Gpu, Some(1.0))];
        let report = build_compute_plan_report(&ops).unwrap();
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.contains("\"device\":\"gpu\""));
        let back: ComputePlanReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
    }
}
