//! Which instruction set the portable engine's matrix kernels use, chosen at run time from the
//! CPU's features, optionally capped by `LAYA_BENCH_ISA` (`avx512`, `avx2` or `generic`) so the
//! AVX2 path can be exercised on an AVX-512 machine.
//!
//! * [`Isa::Avx512`] (AVX-512F): FP32 products on the 8 × 48 register tile over weights packed
//!   at load into 16-row panels and activations packed per product; FP16/BF16/palettized
//!   weights decoded into the same panels; BF16 on AMX tiles (`tdpbf16ps`) where AMX-BF16
//!   exists and the OS grants the tile state, else on the `vdpbf16ps` pair-dot kernel where
//!   AVX-512 BF16 exists and the load-time probe ([`super::probe`]) finds it at least as fast
//!   per FLOP as the FMA; 8-bit palettes through byte permutes where AVX-512 VBMI exists.
//! * [`Isa::Avx2`] (AVX2 + FMA + F16C): the same packing on a 6 × 16 register tile (12 ymm
//!   accumulators); FP16/BF16 widened with AVX2 and F16C, and 8-bit palettes looked up eight
//!   values a step (table values inserted into 128-bit registers: faster on Zen 4 than one
//!   load and store per value, and than `vgatherdps`), into the panels.
//! * [`Isa::Generic`] (anything else, aarch64 included): FP32 products on the `gemm` crate
//!   (which picks its own kernels, NEON on aarch64), other precisions decoded tile by tile.
//!
//! Norms, GELU, softmax and RoPE take their AVX2 builds wherever AVX2+FMA exist
//! ([`crate::model::ops::has_avx2`]), whatever the cap. The attention products follow the cap:
//! register tiles on [`Isa::Avx512`], the `gemm` crate below it (`attention::AttnKernel`).

use crate::settings::Settings;

/// The matrix-kernel family, from the most to the least capable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// No explicit SIMD kernel of this crate: the `gemm` crate and scalar decoders.
    Generic,
    /// AVX2 + FMA + F16C.
    Avx2,
    /// AVX-512F (BF16 and VBMI extras used where present).
    Avx512,
}

/// The environment variable that caps the engine's instruction set.
pub const ISA_ENV: &str = "LAYA_BENCH_ISA";

impl Isa {
    /// The name used by `LAYA_BENCH_ISA` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Generic => "generic",
        }
    }

    /// Parse a `LAYA_BENCH_ISA` value (case-insensitive).
    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" | "avx512f" => Some(Isa::Avx512),
            "avx2" => Some(Isa::Avx2),
            "generic" | "portable" | "none" => Some(Isa::Generic),
            _ => None,
        }
    }

    /// The best kernel family this CPU runs.
    pub fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx2") && has!("fma") && has!("f16c") {
                return Isa::Avx512;
            }
            if has!("avx2") && has!("fma") && has!("f16c") {
                return Isa::Avx2;
            }
        }
        Isa::Generic
    }

    /// Whether this CPU runs the family.
    pub fn runs_here(self) -> bool {
        self <= Isa::detected()
    }

    /// Every family this CPU runs, best first.
    pub fn all_here() -> Vec<Isa> {
        [Isa::Avx512, Isa::Avx2, Isa::Generic].into_iter().filter(|i| i.runs_here()).collect()
    }

    /// The family the engine uses by default: [`Isa::detected`] capped by `LAYA_BENCH_ISA` (as the
    /// command edge read it, [`Settings::isa`]).
    pub fn selected(settings: &Settings) -> Isa {
        selection(settings.isa.as_deref()).0
    }

    /// Whether the packed-panel kernels (FP32 and decoded weights) run on this family.
    pub fn has_panels(self) -> bool {
        self >= Isa::Avx2
    }

    /// Whether the BF16 pair-dot kernel (`vdpbf16ps`) runs on this family and CPU.
    pub fn has_bf16_dot(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            self == Isa::Avx512 && std::arch::is_x86_feature_detected!("avx512bf16")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Whether the AMX BF16 tile kernel (`super::amx`) runs on this family, CPU and OS
    /// (AMX-TILE, AMX-BF16 and the OS's grant of the tile state; the AVX-512 family only, so
    /// `LAYA_BENCH_ISA=avx2` turns it off with the other AVX-512 kernels).
    pub fn has_amx_bf16(self) -> bool {
        self == Isa::Avx512 && self.has_bf16_dot() && super::amx::usable()
    }

    /// Whether the 8-bit palette byte-permute decoder (AVX-512 BW + VBMI) runs here.
    pub fn has_lut8(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            self == Isa::Avx512 && has!("avx512bw") && has!("avx512vbmi")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Whether the elementwise kernels that have an AVX-512F build (the GELU gate and the
    /// attention softmax in [`crate::model::ops`]: the same bits as their AVX2 builds) may use
    /// it: the AVX-512 family only, so `LAYA_BENCH_ISA=avx2` keeps them on AVX2.
    pub fn has_wide_elementwise(self) -> bool {
        self == Isa::Avx512
    }

    /// The register tile of the family's panel kernels (FP32 arithmetic), as reports name it.
    pub fn tile(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512f 8x48 register tile",
            Isa::Avx2 => "avx2+fma 6x16 register tile",
            Isa::Generic => "gemm crate kernels",
        }
    }

    /// The FP32 product's kernel, as reports name it.
    pub fn f32_kernel(self) -> String {
        match self {
            Isa::Generic => "gemm crate (its own dispatch), row-major weights".into(),
            panels => format!("{}, weights packed at load in 16-row panels", panels.tile()),
        }
    }
}

/// The family for a `LAYA_BENCH_ISA` value, and a note when the value was not usable as given.
pub fn selection(env: Option<&str>) -> (Isa, Option<String>) {
    let best = Isa::detected();
    match env {
        None => (best, None),
        Some(v) if v.trim().is_empty() => (best, None),
        Some(v) => match Isa::parse(v) {
            None => (
                best,
                Some(format!("{ISA_ENV}={v} is not avx512, avx2 or generic; ignored, using {}", best.name())),
            ),
            Some(want) if want > best => {
                (best, Some(format!("{ISA_ENV}={v} asks for more than this CPU runs; using {}", best.name())))
            }
            Some(want) => {
                (want, (want < best).then(|| format!("{ISA_ENV}={v}: kernels capped at {}", want.name())))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_caps_at_the_cpu_and_explains_odd_values() {
        let best = Isa::detected();
        assert_eq!(selection(None), (best, None));
        assert_eq!(selection(Some("")).0, best);
        let (isa, note) = selection(Some("generic"));
        assert_eq!(isa, Isa::Generic);
        assert_eq!(note.is_some(), best > Isa::Generic);
        let (isa, note) = selection(Some("avx9"));
        assert_eq!(isa, best);
        assert!(note.unwrap().contains("ignored"));
        let (isa, note) = selection(Some("AVX512"));
        assert_eq!(isa, best);
        assert_eq!(note.is_some(), best < Isa::Avx512);
        assert!(Isa::Generic.runs_here());
        assert_eq!(Isa::all_here()[0], best);
        for i in [Isa::Avx512, Isa::Avx2, Isa::Generic] {
            assert_eq!(Isa::parse(i.name()), Some(i));
        }
    }

    #[test]
    fn only_the_avx512_family_widens_the_elementwise_kernels() {
        // so `LAYA_BENCH_ISA=avx2` keeps the GELU gate and the softmax on their AVX2 builds
        assert!(Isa::Avx512.has_wide_elementwise());
        assert!(!Isa::Avx2.has_wide_elementwise());
        assert!(!Isa::Generic.has_wide_elementwise());
    }
}
