//! Minimal local mirrors of the Apple framework crates, compiled only for
//! `cargo check --features apple-shim` on non-Apple targets, so the macOS leaf files
//! type-check on Linux CI. Nothing here runs: every item mirrors the signature of one item of
//! a real crate (named with its version and file next to it), and the bodies call the same
//! framework symbols the real crates call, which exist only on macOS.
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, missing_docs)]

pub mod io_kit;
