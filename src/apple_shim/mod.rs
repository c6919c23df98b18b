//! A type-checking mirror of the Apple framework crates, for `cargo check --features
//! apple-shim` on non-Apple targets (see docs/coreml.md, "Compiling blind").
//!
//! Each item mirrors, by name and signature, exactly one item of `objc2` 0.6.5,
//! `objc2-foundation` 0.3.2, `objc2-core-ml` 0.3.2, `block2` 0.6.2 or Darwin `libc` 0.2.191
//! that a macOS leaf file uses (each item's doc names the crate file). The macOS leaves import either the real crates
//! or these modules under the same aliases, so one source file type-checks against both. The
//! bodies never run: no code path constructs a shim value (the registry answers "needs macOS"
//! on other OSes), and every function that would produce one diverges through [`never`].
//! Generic bounds are simplified where the real ones only encode Objective-C message rules.

pub mod block2;
pub mod core_ml;
/// `libc` 0.2.191 Darwin items used by the host probe (src/report/host_macos.rs).
#[allow(non_camel_case_types, missing_docs)]
pub mod darwin_libc;
pub mod foundation;
/// `objc2-io-kit` 0.3.2 items used by the PSTR leaf (src/power/smc_iokit.rs); extern
/// declarations of the same IOKit symbols, which exist only on macOS.
#[allow(non_snake_case, non_camel_case_types, non_upper_case_globals, missing_docs)]
pub mod io_kit;
pub mod objc2;

/// The body of every mirrored function: the shim exists only for type checking.
pub(crate) fn never() -> ! {
    unreachable!("crate::apple_shim mirrors Apple frameworks for type checking only; it never runs")
}
