#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

/// laya-bench patch: off Apple, mlx-c's `half.h` declares `float16_t` as a 16-bit storage
/// type (`uint16_t`) and bindgen leaves it out; this is the shape bindgen gives `__fp16` on
/// aarch64 (a transparent tuple struct of the bits), which is what `mlx-rs` expects.
/// (`bfloat16_t` needs nothing: bindgen gives `__bf16` and `uint16_t` alike as `u16`.)
#[cfg(not(any(target_os = "macos", target_os = "ios")))]
#[repr(transparent)]
#[derive(Debug, Default, Copy, Clone, PartialEq, Eq, Hash)]
pub struct float16_t(pub u16);


/// laya-bench patch: `mlx-rs` 0.33 seeds `RandomState::new` from Mach's
/// `mach_approximate_time`, which only Apple's libc has. Elsewhere this crate provides the
/// symbol: nanoseconds of the system clock, which is all a seed needs (a value that differs
/// between runs). Nothing in laya-bench draws random numbers through MLX.
#[cfg(not(target_vendor = "apple"))]
#[no_mangle]
pub extern "C" fn mach_approximate_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
