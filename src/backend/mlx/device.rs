//! Where an MLX arm computes, decided once per process, and the check behind the decision.
//! Portable and tested on Linux; `graph.rs` (feature `mlx`) only runs the check and applies
//! the choice.
//!
//! MLX's Metal build makes the GPU its default device without looking for one: its Metal
//! backend reports itself available unconditionally, and a machine without a usable Metal
//! device (GitHub's Apple-silicon runners are VMs with a paravirtual GPU; a headless or
//! sandboxed session) fails only when the first GPU stream or kernel is made ("No Metal device
//! available"). MLX itself never falls back to its CPU. So before anything else the arm
//! evaluates one small matrix product on the GPU and the same product on the CPU
//! ([`probe_operands`], [`compare_products`]); where the GPU errors or disagrees,
//! [`choose_device`] moves MLX's default device to the CPU and every report says so (the
//! device text and a note), or, with `LAYA_BENCH_REQUIRE_MLX_GPU=1`, the arm is refused.

use crate::error::{Classify, Kind};

/// `1` refuses an MLX arm where MLX would not run on the Metal GPU, instead of falling back to
/// MLX's CPU device (for runs whose numbers must be the GPU's).
pub const REQUIRE_GPU_ENV: &str = "LAYA_BENCH_REQUIRE_MLX_GPU";

/// The check's product: `[M, K] · [K, N]`.
pub const PROBE_SHAPE: (usize, usize, usize) = (64, 48, 32);

/// A device MLX computes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlxDevice {
    /// The Metal GPU.
    Gpu,
    /// MLX's CPU device.
    Cpu,
}

/// Why the device check failed: MLX's error, or a product that is not the exact one. Its text
/// names the checked device "the GPU" (see `graph::product_check`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// MLX raised an error (no Metal device, a stream or kernel it cannot make): its exception's
    /// text (an MLX exception is a message and a location, with no cause of its own).
    #[error("{0}")]
    Mlx(String),
    /// A device's product has the wrong number of values.
    #[error(
        "the {device}'s {dtype} {m}×{k} · {k}×{n} product has {got} values, expected {want}",
        m = PROBE_SHAPE.0,
        k = PROBE_SHAPE.1,
        n = PROBE_SHAPE.2
    )]
    Length {
        /// `CPU` or `GPU`.
        device: &'static str,
        /// The dtype's name (`float32`, `float16`).
        dtype: &'static str,
        /// How many values it has.
        got: usize,
        /// How many it should have.
        want: usize,
    },
    /// The CPU's product differs from the exact one at `[row, col]`.
    #[error("the CPU's {dtype} product is wrong at [{row}, {col}]: {got} instead of {want}")]
    WrongOnCpu {
        /// The dtype's name.
        dtype: &'static str,
        /// The element's row.
        row: usize,
        /// The element's column.
        col: usize,
        /// The CPU's value.
        got: f32,
        /// The exact value.
        want: f32,
    },
    /// The GPU's product differs from the CPU's at `[row, col]` (or is not finite).
    #[error(
        "the GPU's {dtype} {m}×{k} · {k}×{n} product differs from the CPU's at [{row}, {col}]: {gpu} vs {cpu}",
        m = PROBE_SHAPE.0,
        k = PROBE_SHAPE.1,
        n = PROBE_SHAPE.2
    )]
    Differs {
        /// The dtype's name.
        dtype: &'static str,
        /// The element's row.
        row: usize,
        /// The element's column.
        col: usize,
        /// The GPU's value.
        gpu: f32,
        /// The CPU's value.
        cpu: f32,
    },
}

impl Classify for CheckError {
    /// The check ran and failed.
    fn kind(&self) -> Kind {
        Kind::Run
    }
}

/// Why the MLX arms are refused (`LAYA_BENCH_REQUIRE_MLX_GPU=1` without a usable GPU), or why
/// MLX cannot say where it runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// The GPU is required, and this MLX build has no Metal.
    #[error("{REQUIRE_GPU_ENV}=1, but MLX's default device is its CPU: this MLX build has no Metal")]
    NoMetal,
    /// The GPU is required, and its check failed.
    #[error("the Metal GPU is unusable here ({0}), and {REQUIRE_GPU_ENV}=1 refuses MLX's CPU device")]
    GpuRequired(#[source] CheckError),
    /// MLX could not tell its default device: its exception's text.
    #[error("MLX cannot tell its default device: {0}")]
    UnknownDefault(String),
}

impl Classify for DeviceError {
    /// The arm cannot run as asked here; found before anything is measured.
    fn kind(&self) -> Kind {
        Kind::Input
    }
}

/// Where every MLX arm of this process runs ([`choose_device`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceChoice {
    /// The device MLX's default is set to.
    pub device: MlxDevice,
    /// Why the Metal GPU, MLX's default device, is not used: the check's error or
    /// disagreement. `None` where nothing fell back (the GPU passed, or the build has no Metal).
    pub metal_unusable: Option<CheckError>,
}

/// Whether [`REQUIRE_GPU_ENV`]'s value asks to refuse rather than fall back: exactly `1`.
pub fn require_gpu(value: Option<&str>) -> bool {
    value.map(str::trim) == Some("1")
}

/// Decide where MLX runs. `default_is_gpu`: MLX's default device is the GPU (its Metal build);
/// `gpu_check` runs the product check on the GPU (called only then). The GPU is kept when the
/// check passes; otherwise MLX falls back to its CPU device with the reason, or, when
/// `require_gpu`, the arm is refused (`Err`, with the check's failure as its cause). Without
/// Metal (the Linux CPU build) MLX runs on its CPU and nothing is checked, unless
/// `require_gpu` refuses that too.
pub fn choose_device(
    default_is_gpu: bool,
    require_gpu: bool,
    gpu_check: impl FnOnce() -> Result<(), CheckError>,
) -> Result<DeviceChoice, DeviceError> {
    if !default_is_gpu {
        if require_gpu {
            return Err(DeviceError::NoMetal);
        }
        return Ok(DeviceChoice { device: MlxDevice::Cpu, metal_unusable: None });
    }
    match gpu_check() {
        Ok(()) => Ok(DeviceChoice { device: MlxDevice::Gpu, metal_unusable: None }),
        Err(reason) if require_gpu => Err(DeviceError::GpuRequired(reason)),
        Err(reason) => Ok(DeviceChoice { device: MlxDevice::Cpu, metal_unusable: Some(reason) }),
    }
}

impl DeviceChoice {
    /// `BackendInfo::device` of an MLX arm: the device, MLX's version, the build and, after a
    /// fallback, why Metal was not used.
    pub fn device_text(&self, mlx_version: &str, metal_build: bool) -> String {
        match (self.device, &self.metal_unusable) {
            (MlxDevice::Gpu, _) => format!("gpu (Metal, MLX {mlx_version} default device)"),
            (MlxDevice::Cpu, Some(reason)) => {
                format!("cpu (MLX {mlx_version} Metal build; Metal unusable: {reason})")
            }
            (MlxDevice::Cpu, None) if metal_build => {
                format!("cpu (MLX {mlx_version} Metal build; default device)")
            }
            (MlxDevice::Cpu, None) => {
                format!("cpu (MLX {mlx_version} CPU build from the PyPI wheels, no Metal; default device)")
            }
        }
    }

    /// The note an arm carries after a fallback (printed when it is built, kept in the raw
    /// header): its numbers are the CPU's.
    pub fn note(&self) -> Option<String> {
        self.metal_unusable.as_ref().map(|reason| {
            format!(
                "MLX's default device, the Metal GPU, is unusable here ({reason}); this arm runs on MLX's CPU \
                 device, so its times and energy are the CPU's, not the GPU's (set {REQUIRE_GPU_ENV}=1 to refuse instead)"
            )
        })
    }
}

/// `doctor`'s Apple MLX line: whether the `mlx:` arms would run on the Metal GPU, and what
/// happens otherwise (fall back to the CPU, or refuse).
pub fn doctor_line(choice: &Result<DeviceChoice, DeviceError>) -> (bool, String) {
    let (m, k, n) = PROBE_SHAPE;
    match choice {
        Ok(DeviceChoice { device: MlxDevice::Gpu, .. }) => (
            true,
            format!(
                "mlx: arms run on the Metal GPU (a {m}×{k} · {k}×{n} product in float32 and float16 on the GPU equals the CPU's)"
            ),
        ),
        Ok(DeviceChoice { device: MlxDevice::Cpu, metal_unusable: Some(reason) }) => (
            false,
            format!(
                "the Metal GPU is unusable here ({reason}): mlx: arms fall back to MLX's CPU device and say so \
                 in their device and notes ({REQUIRE_GPU_ENV}=1 refuses them instead)"
            ),
        ),
        Ok(DeviceChoice { device: MlxDevice::Cpu, metal_unusable: None }) => {
            (false, "this MLX build has no Metal: mlx: arms run on MLX's CPU device".into())
        }
        Err(e) => (false, format!("mlx: arms are refused: {e}")),
    }
}

/// The check's operands and their exact product, row-major: `a` `[M, K]`, `b` `[K, N]` and
/// `a·b` `[M, N]`. Small integers (|x| ≤ 5, K = 48), so every product and sum is exact in
/// float32 and in float16 (|a·b| ≤ 1200 < 2048): any difference is a fault, not rounding.
pub fn probe_operands() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (m, k, n) = PROBE_SHAPE;
    let a: Vec<i64> = (0..m * k).map(|i| ((i * 7 + i / k) % 11) as i64 - 5).collect();
    let b: Vec<i64> = (0..k * n).map(|i| ((i * 5 + i / n * 3) % 11) as i64 - 5).collect();
    let mut c = vec![0i64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|t| a[i * k + t] * b[t * n + j]).sum();
        }
    }
    let f = |v: Vec<i64>| v.into_iter().map(|x| x as f32).collect();
    (f(a), f(b), f(c))
}

/// Compare the check's product on the GPU and on the CPU (`dtype`: the name for messages) with
/// the exact one: `Err` names the first element where either differs (or is not finite).
pub fn compare_products(
    dtype: &'static str,
    gpu: &[f32],
    cpu: &[f32],
    exact: &[f32],
) -> Result<(), CheckError> {
    let n = PROBE_SHAPE.2;
    for (device, got) in [("CPU", cpu), ("GPU", gpu)] {
        if got.len() != exact.len() {
            return Err(CheckError::Length { device, dtype, got: got.len(), want: exact.len() });
        }
    }
    // exact small integers: any difference (or a NaN, which is never close) is a fault
    let close = |x: f32, y: f32| (x - y).abs() <= 1e-3;
    for (i, ((&g, &c), &e)) in gpu.iter().zip(cpu).zip(exact).enumerate() {
        if !close(c, e) {
            return Err(CheckError::WrongOnCpu { dtype, row: i / n, col: i % n, got: c, want: e });
        }
        if !close(g, c) {
            return Err(CheckError::Differs { dtype, row: i / n, col: i % n, gpu: g, cpu: c });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu() -> DeviceChoice {
        DeviceChoice { device: MlxDevice::Cpu, metal_unusable: None }
    }

    #[test]
    fn without_metal_mlx_runs_on_its_cpu_and_nothing_is_checked() {
        let never = || -> Result<(), CheckError> { panic!("the GPU check must not run without Metal") };
        assert_eq!(choose_device(false, false, never), Ok(cpu()));
        let c = cpu();
        assert_eq!(c.note(), None);
        assert_eq!(
            c.device_text("0.32.2", false),
            "cpu (MLX 0.32.2 CPU build from the PyPI wheels, no Metal; default device)"
        );
        assert_eq!(c.device_text("0.32.2", true), "cpu (MLX 0.32.2 Metal build; default device)");
        let (metal, line) = doctor_line(&Ok(c));
        assert!(!metal && line.contains("no Metal") && line.contains("CPU device"), "{line}");
    }

    #[test]
    fn a_gpu_that_passes_the_check_stays_the_device() {
        let choice = choose_device(true, false, || Ok(())).unwrap();
        assert_eq!(choice, DeviceChoice { device: MlxDevice::Gpu, metal_unusable: None });
        assert_eq!(choice.note(), None);
        assert_eq!(choice.device_text("0.32.2", true), "gpu (Metal, MLX 0.32.2 default device)");
        // requiring the GPU changes nothing when it works
        assert_eq!(choose_device(true, true, || Ok(())), Ok(choice.clone()));
        let (metal, line) = doctor_line(&Ok(choice));
        assert!(metal && line.contains("run on the Metal GPU") && line.contains("64×48 · 48×32"), "{line}");
    }

    #[test]
    fn a_gpu_that_fails_falls_back_to_the_cpu_and_every_text_says_why() {
        let why = "[metal::load_device] No Metal device available.";
        let choice = choose_device(true, false, || Err(CheckError::Mlx(why.to_string()))).unwrap();
        assert_eq!(choice.device, MlxDevice::Cpu);
        assert_eq!(choice.metal_unusable.as_ref().map(ToString::to_string).as_deref(), Some(why));
        assert_eq!(
            choice.device_text("0.32.2", true),
            format!("cpu (MLX 0.32.2 Metal build; Metal unusable: {why})")
        );
        let note = choice.note().unwrap();
        assert!(
            note.contains(why) && note.contains("CPU device") && note.contains("not the GPU's"),
            "{note}"
        );
        assert!(note.contains("LAYA_BENCH_REQUIRE_MLX_GPU=1"), "{note}");
        let (metal, line) = doctor_line(&Ok(choice));
        assert!(!metal && line.contains(why) && line.contains("fall back to MLX's CPU device"), "{line}");
        // a disagreeing product falls back the same way
        let wrong = "the GPU's float32 64×48 · 48×32 product differs from the CPU's at [0, 0]: 0 vs 7";
        let differs = CheckError::Differs { dtype: "float32", row: 0, col: 0, gpu: 0.0, cpu: 7.0 };
        let choice = choose_device(true, false, || Err(differs)).unwrap();
        assert_eq!(choice.metal_unusable.as_ref().map(ToString::to_string).as_deref(), Some(wrong));
    }

    #[test]
    fn requiring_the_gpu_refuses_instead_of_falling_back() {
        let no_device = CheckError::Mlx("No Metal device available".into());
        let refused = choose_device(true, true, || Err(no_device.clone())).unwrap_err();
        let e = refused.to_string();
        assert!(e.contains("No Metal device available") && e.contains("LAYA_BENCH_REQUIRE_MLX_GPU=1"), "{e}");
        // the check's failure stays the refusal's cause, printed once
        let cause = std::error::Error::source(&refused).map(ToString::to_string);
        assert_eq!(cause, Some(no_device.to_string()));
        assert_eq!(crate::error::chain(&refused), e);
        let refused = choose_device(false, true, || Ok(())).unwrap_err();
        let e = refused.to_string();
        assert!(e.contains("no Metal") && e.contains("LAYA_BENCH_REQUIRE_MLX_GPU=1"), "{e}");
        let (metal, line) = doctor_line(&Err(refused));
        assert!(!metal && line.starts_with("mlx: arms are refused: ") && line.ends_with(&e), "{line}");
    }

    #[test]
    fn only_exactly_1_requires_the_gpu() {
        for (value, want) in [(None, false), (Some(""), false), (Some("0"), false), (Some("yes"), false)] {
            assert_eq!(require_gpu(value), want, "{value:?}");
        }
        assert!(require_gpu(Some("1")) && require_gpu(Some(" 1\n")));
    }

    #[test]
    fn the_operands_product_is_exact_and_not_trivial() {
        let (m, k, n) = PROBE_SHAPE;
        let (a, b, c) = probe_operands();
        assert_eq!((a.len(), b.len(), c.len()), (m * k, k * n, m * n));
        assert!(a.iter().chain(&b).all(|&x| x.fract() == 0.0 && x.abs() <= 5.0));
        // exact in float16: every |value| below 2048
        assert!(c.iter().all(|&x| x.fract() == 0.0 && x.abs() < 2048.0));
        // not a degenerate product: many distinct values, signs both ways
        let mut distinct: Vec<i64> = c.iter().map(|&x| x as i64).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 50 && distinct[0] < 0 && *distinct.last().unwrap() > 0, "{distinct:?}");
        // spot check one element by hand
        let want: f32 = (0..k).map(|t| a[3 * k + t] * b[t * n + 5]).sum();
        assert_eq!(c[3 * n + 5], want);
    }

    #[test]
    fn products_are_compared_element_by_element() {
        let (_, _, exact) = probe_operands();
        assert_eq!(compare_products("float32", &exact, &exact, &exact), Ok(()));
        let mut gpu = exact.clone();
        gpu[33] += 1.0;
        let e = compare_products("float32", &gpu, &exact, &exact).unwrap_err().to_string();
        assert!(e.contains("GPU's float32") && e.contains("[1, 1]"), "{e}");
        gpu[33] = f32::NAN;
        let e = compare_products("float16", &gpu, &exact, &exact).unwrap_err().to_string();
        assert!(e.contains("GPU's float16"), "{e}");
        let zeros = vec![0.0; exact.len()];
        assert!(compare_products("float32", &zeros, &exact, &exact).is_err());
        let e = compare_products("float32", &exact, &zeros, &exact).unwrap_err().to_string();
        assert!(e.contains("CPU's float32 product is wrong"), "{e}");
        let e = compare_products("float32", &exact[1..], &exact, &exact).unwrap_err().to_string();
        assert!(e.contains("GPU's float32") && e.contains("values"), "{e}");
    }
}
