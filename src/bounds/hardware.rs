//! Hardware profiles (a device's memory bandwidth and peaks per arithmetic, each with its
//! source or the reason it is unknown) and their resolution with command-line overrides.

use serde::Serialize;

use super::{positive, BoundsError};
use crate::model::{ComputeType, Precision};

/// A published or measured figure, or `None` with the reason it is unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The value (TFLOP/s or GB/s), `None` when unknown.
    pub value: Option<f64>,
    /// Where the value comes from, or why it is unknown.
    pub source: &'static str,
}

/// A named hardware profile: one compute device and the memory it streams weights from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// The name used with `--profile`.
    pub name: &'static str,
    /// The device whose peak applies.
    pub device: &'static str,
    /// Memory bandwidth in GB/s.
    pub bandwidth_gbs: Figure,
    /// Dense FP32 peak in TFLOP/s.
    pub peak_f32_tflops: Figure,
    /// Dense FP16 peak in TFLOP/s (also used for palettized weights, which expand to FP16).
    pub peak_f16_tflops: Figure,
    /// Dense BF16 peak in TFLOP/s.
    pub peak_bf16_tflops: Figure,
}

impl Profile {
    /// The peak for an arithmetic type.
    pub fn peak(&self, compute: ComputeType) -> Figure {
        match compute {
            ComputeType::F32 => self.peak_f32_tflops,
            ComputeType::F16 => self.peak_f16_tflops,
            ComputeType::Bf16 => self.peak_bf16_tflops,
        }
    }
}

const fn known(value: f64, source: &'static str) -> Figure {
    Figure { value: Some(value), source }
}

const fn unknown(reason: &'static str) -> Figure {
    Figure { value: None, source: reason }
}

/// Apple M3 Max (16-core CPU, 40-core GPU), Neural Engine: 400 GB/s unified memory (Apple
/// MacBook Pro technical specifications, 2023; the 30-core-GPU M3 Max has 300 GB/s). Peak: the
/// 16-core Neural Engine's 18 TOPS (Apple, M3 family announcement, 30 Oct 2023), read as dense
/// FP16 FLOP/s; the Neural Engine computes in FP16 only.
pub const M3_MAX: Profile = Profile {
    name: "m3-max",
    device: "Apple M3 Max Neural Engine (16-core ANE), 400 GB/s unified memory",
    bandwidth_gbs: known(
        400.0,
        "Apple M3 Max (16-core CPU / 40-core GPU) technical specifications: 400 GB/s",
    ),
    peak_f32_tflops: unknown(
        "the Neural Engine has no FP32 arithmetic; use --profile m3-max-gpu or --peak-tflops",
    ),
    peak_f16_tflops: known(
        18.0,
        "Apple: 16-core Neural Engine, 18 TOPS (M3 family announcement, 2023), taken as dense FP16",
    ),
    peak_bf16_tflops: unknown("the Neural Engine has no published BF16 rate; pass --peak-tflops"),
};

/// Apple M3 Max, 40-core GPU: 400 GB/s (as [`M3_MAX`]). Peak ≈ 14.2 TFLOP/s FP32: 40 cores × 128
/// FP32 ALUs × 2 FLOP per FMA × ≈ 1.39 GHz (Apple publishes no TFLOP/s figure; this is the widely
/// quoted derived value). Apple GPUs run FP16 at the FP32 rate.
pub const M3_MAX_GPU: Profile = Profile {
    name: "m3-max-gpu",
    device: "Apple M3 Max 40-core GPU, 400 GB/s unified memory",
    bandwidth_gbs: M3_MAX.bandwidth_gbs,
    peak_f32_tflops: known(
        14.2,
        "40 cores x 128 FP32 ALUs x 2 FLOP x ~1.39 GHz (derived; Apple publishes none)",
    ),
    peak_f16_tflops: known(14.2, "Apple GPUs run FP16 at the FP32 rate (40 x 128 x 2 x ~1.39 GHz)"),
    peak_bf16_tflops: unknown("the M3 GPU has no published BF16 rate; pass --peak-tflops"),
};

/// Apple M4 Max (16-core CPU, 40-core GPU): 546 GB/s unified memory (Apple MacBook Pro technical
/// specifications, 2024; the 32-core-GPU M4 Max has 410 GB/s). Apple quotes 38 TOPS for the M4
/// Neural Engine without naming the precision (read widely as INT8), so no FP16 peak is assumed.
pub const M4_MAX: Profile = Profile {
    name: "m4-max",
    device: "Apple M4 Max Neural Engine, 546 GB/s unified memory",
    bandwidth_gbs: known(546.0, "Apple M4 Max (16-core CPU / 40-core GPU) technical specifications: 546 GB/s"),
    peak_f32_tflops: unknown("the Neural Engine has no FP32 arithmetic; pass --peak-tflops"),
    peak_f16_tflops: unknown(
        "Apple's 38 TOPS for the M4 Neural Engine names no precision (read widely as INT8); pass --peak-tflops",
    ),
    peak_bf16_tflops: unknown("the Neural Engine has no published BF16 rate; pass --peak-tflops"),
};

/// NVIDIA H200 SXM: 4.8 TB/s HBM3e; dense FP16/BF16 tensor-core peak ≈ 989 TFLOP/s (the data
/// sheet's 1,979 TFLOP/s is with 2:4 sparsity); FP32 (no tensor cores) 67 TFLOP/s.
pub const H200: Profile = Profile {
    name: "h200",
    device: "NVIDIA H200 SXM, 4.8 TB/s HBM3e",
    bandwidth_gbs: known(4800.0, "NVIDIA H200 data sheet: 4.8 TB/s"),
    peak_f32_tflops: known(67.0, "NVIDIA H200 data sheet: FP32 67 TFLOP/s (TF32 tensor cores not assumed)"),
    peak_f16_tflops: known(
        989.0,
        "NVIDIA H200 data sheet: FP16 tensor core 1,979 TFLOP/s with sparsity, ~989 dense",
    ),
    peak_bf16_tflops: known(
        989.0,
        "NVIDIA H200 data sheet: BF16 tensor core 1,979 TFLOP/s with sparsity, ~989 dense",
    ),
};

/// This development VM: 2 AMD EPYC Zen 4 cores. FP32 FMA peak 228.6 GFLOP/s measured on
/// 2026-11-29 (docs/methodology.md, "Measurements on the development machines"); BF16 dot
/// products ≈ 2× that; no FP16 arithmetic (no avx512_fp16), so FP16 weights compute at the FP32
/// rate. Bandwidth not measured: the VM
/// shares its host with other work, so `--bandwidth-gbs` is required.
pub const ZEN4_2CORE: Profile = Profile {
    name: "zen4-2core",
    device: "2 AMD EPYC Zen 4 cores (this development VM)",
    bandwidth_gbs: unknown(
        "not measured: this VM shares memory bandwidth with other work, so a figure would not be reproducible",
    ),
    peak_f32_tflops: known(0.2286, "measured FP32 FMA peak on 2 cores, 228.6 GFLOP/s (docs/methodology.md)"),
    peak_f16_tflops: known(
        0.2286,
        "no FP16 arithmetic (no avx512_fp16): FP16 weights widen to FP32, 228.6 GFLOP/s measured",
    ),
    peak_bf16_tflops: known(0.4572, "avx512_bf16 dot products measured at ~2x the FP32 rate (docs/methodology.md)"),
};

/// No named hardware: both figures come from `--peak-tflops` and `--bandwidth-gbs`.
pub const CUSTOM: Profile = Profile {
    name: "custom",
    device: "user-supplied figures",
    bandwidth_gbs: unknown("the custom profile has no bandwidth of its own"),
    peak_f32_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
    peak_f16_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
    peak_bf16_tflops: unknown("the custom profile has no peak of its own; pass --peak-tflops"),
};

/// Every named profile.
pub const PROFILES: [Profile; 6] = [M3_MAX, M3_MAX_GPU, M4_MAX, H200, ZEN4_2CORE, CUSTOM];

/// The named profile, or an error that lists the known names.
pub fn profile(name: &str) -> Result<Profile, BoundsError> {
    PROFILES.iter().find(|p| p.name.eq_ignore_ascii_case(name)).copied().ok_or_else(|| {
        BoundsError::UnknownProfile {
            name: name.to_string(),
            known: PROFILES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
        }
    })
}

/// The hardware a bound is computed for: a profile with any overrides applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hardware {
    /// Profile name.
    pub profile: String,
    /// The device whose peak applies.
    pub device: String,
    /// The arithmetic the precision runs in.
    pub compute: ComputeType,
    /// Peak for that arithmetic in TFLOP/s; `null` when unknown.
    pub peak_tflops: Option<f64>,
    /// Where the peak comes from, or why it is unknown.
    pub peak_source: String,
    /// Memory bandwidth in GB/s.
    pub bandwidth_gbs: f64,
    /// Where the bandwidth comes from.
    pub bandwidth_source: String,
}
/// Resolve a profile for a precision; `--peak-tflops` and `--bandwidth-gbs` override it.
pub fn resolve_hardware(
    profile: &Profile,
    precision: Precision,
    peak_tflops: Option<f64>,
    bandwidth_gbs: Option<f64>,
) -> Result<Hardware, BoundsError> {
    let compute = precision.compute();
    let (peak_tflops, peak_source) = match peak_tflops {
        Some(v) => (Some(positive(v, "peak", "e.g. --peak-tflops 18")?), "--peak-tflops".to_string()),
        None => {
            let f = profile.peak(compute);
            (f.value, f.source.to_string())
        }
    };
    let (bandwidth_gbs, bandwidth_source) = match bandwidth_gbs {
        Some(v) => (positive(v, "bandwidth", "e.g. --bandwidth-gbs 400")?, "--bandwidth-gbs".to_string()),
        None => match profile.bandwidth_gbs.value {
            Some(v) => (v, profile.bandwidth_gbs.source.to_string()),
            None => {
                return Err(BoundsError::MissingBandwidth {
                    profile: profile.name.to_string(),
                    reason: profile.bandwidth_gbs.source.to_string(),
                })
            }
        },
    };
    Ok(Hardware {
        profile: profile.name.to_string(),
        device: profile.device.to_string(),
        compute,
        peak_tflops,
        peak_source,
        bandwidth_gbs,
        bandwidth_source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_resolve_by_name_and_missing_bandwidth_is_an_error() {
        assert_eq!(profile("M3-MAX").unwrap().name, "m3-max");
        assert_eq!(profile("m4-max").unwrap().bandwidth_gbs.value, Some(546.0));
        assert_eq!(profile("h200").unwrap().peak(ComputeType::Bf16).value, Some(989.0));
        let err = profile("m9").unwrap_err();
        assert!(err.to_string().contains("zen4-2core"), "{err}");
        let zen = profile("zen4-2core").unwrap();
        let err = resolve_hardware(&zen, Precision::F32, None, None).unwrap_err();
        assert!(matches!(err, BoundsError::MissingBandwidth { .. }));
        assert!(err.to_string().contains("--bandwidth-gbs"));
        let hw = resolve_hardware(&zen, Precision::F32, None, Some(30.0)).unwrap();
        assert_eq!(hw.peak_tflops, Some(0.2286));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(resolve_hardware(&M3_MAX, Precision::F16, Some(bad), None).is_err());
            assert!(resolve_hardware(&M3_MAX, Precision::F16, None, Some(bad)).is_err());
        }
    }
}
