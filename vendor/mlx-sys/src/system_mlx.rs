//! laya-bench patch (not in upstream mlx-sys 0.7.0): build mlx-c against an installed MLX.
//!
//! Upstream's build script always fetches MLX's sources at configure time and links Apple's
//! frameworks. On every other target this file is used instead: it builds only the vendored
//! mlx-c (static), against the MLX shared library and CMake package of the PyPI wheels
//! `mlx` + `mlx-cpu` at exactly the version mlx-c pins (`GIT_TAG` in `src/mlx-c/CMakeLists.txt`),
//! installed with `pip install --target PREFIX` (laya-bench's `scripts/setup-mlx.sh` does it).
//! Nothing is downloaded here. Included by `build.rs` through `#[path]`; not part of the library.
//! On Apple targets only [`generate_bindings`]'s messages and [`check_apple_tools`] are used
//! (PATCHES.md, "What differs on macOS").

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Overrides where the MLX wheels were installed (`pip install --target` folder).
pub const PREFIX_ENV: &str = "LAYA_BENCH_MLX_PREFIX";

const FIX: &str = "run `scripts/setup-mlx.sh` from the laya-bench repository (it installs the pinned \
MLX wheels and the system packages the build needs), or set LAYA_BENCH_MLX_PREFIX to a folder \
where `pip install --target` put the `mlx` and `mlx-cpu` wheels";

/// Stops the build with one readable message (no backtrace).
fn fail(msg: &str) -> ! {
    eprintln!("\nlaya-bench: cannot build MLX support: {msg}\n");
    println!("cargo:warning=laya-bench: cannot build MLX support: {msg}");
    std::process::exit(1);
}

/// The MLX version this mlx-c is written against (`GIT_TAG vX.Y.Z` of its CMakeLists).
pub fn pinned_version(mlx_c_root: &Path) -> String {
    let cmake = fs::read_to_string(mlx_c_root.join("CMakeLists.txt"))
        .unwrap_or_else(|e| fail(&format!("cannot read mlx-c's CMakeLists.txt: {e}")));
    cmake
        .lines()
        .find_map(|line| {
            let tag = line.trim().strip_prefix("GIT_TAG v")?;
            tag.split(|c: char| c == ')' || c.is_whitespace()).next().map(str::to_owned)
        })
        .unwrap_or_else(|| fail("mlx-c's CMakeLists.txt names no `GIT_TAG vX.Y.Z`"))
}

/// `$LAYA_BENCH_MLX_PREFIX`, else `$XDG_CACHE_HOME/laya-bench/mlx-VERSION`, else
/// `$HOME/.cache/laya-bench/mlx-VERSION` (the folder `scripts/setup-mlx.sh` installs into).
pub fn prefix(version: &str) -> PathBuf {
    if let Some(p) = env::var_os(PREFIX_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let cache = env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| fail(&format!("neither {PREFIX_ENV}, XDG_CACHE_HOME nor HOME is set; {FIX}")));
    cache.join("laya-bench").join(format!("mlx-{version}"))
}

/// The version a CMake package declares in `MLXConfigVersion.cmake` (`set(PACKAGE_VERSION "…")`).
fn declared_version(cmake_dir: &Path) -> Option<String> {
    let text = fs::read_to_string(cmake_dir.join("MLXConfigVersion.cmake")).ok()?;
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("set(PACKAGE_VERSION \"")?;
        rest.split('"').next().map(str::to_owned)
    })
}

pub fn build_and_link_mlx_c(mlx_c_root: &Path) {
    println!("cargo:rerun-if-env-changed={PREFIX_ENV}");
    println!("cargo:rerun-if-env-changed=XDG_CACHE_HOME");
    println!("cargo:rerun-if-env-changed=HOME");
    println!("cargo:rerun-if-changed=src/system_mlx.rs");
    let version = pinned_version(mlx_c_root);
    let prefix = prefix(&version);
    let cmake_dir = prefix.join("mlx").join("share").join("cmake").join("MLX");
    let lib_dir = prefix.join("mlx").join("lib");
    println!("cargo:rerun-if-changed={}", cmake_dir.join("MLXConfigVersion.cmake").display());
    match declared_version(&cmake_dir) {
        None => fail(&format!(
            "MLX {version} is not installed at {} (no {}); {FIX}",
            prefix.display(),
            cmake_dir.join("MLXConfigVersion.cmake").display()
        )),
        Some(found) if found != version => fail(&format!(
            "the MLX at {} is version {found}, but mlx-sys 0.7.0's mlx-c needs exactly {version}; {FIX}",
            prefix.display()
        )),
        Some(_) => {}
    }
    if !lib_dir.join("libmlx.so").is_file() {
        fail(&format!("{} is missing (an incomplete MLX install); {FIX}", lib_dir.join("libmlx.so").display()));
    }
    if Command::new("cmake").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        fail(&format!("`cmake` was not found on PATH (Debian: `apt-get install cmake`); {FIX}"));
    }

    let dst = cmake::Config::new(mlx_c_root)
        .define("MLX_C_USE_SYSTEM_MLX", "ON")
        .define("MLX_DIR", &cmake_dir)
        .define("MLX_C_BUILD_EXAMPLES", "OFF")
        .define("BUILD_SHARED_LIBS", "OFF")
        .profile("Release")
        .build();
    let mlxc_dir = ["lib", "lib64"]
        .iter()
        .map(|d| dst.join(d))
        .find(|d| d.join("libmlxc.a").is_file())
        .unwrap_or_else(|| fail(&format!("cmake built no libmlxc.a under {}", dst.display())));

    println!("cargo:rustc-link-search=native={}", mlxc_dir.display());
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=mlxc");
    println!("cargo:rustc-link-lib=dylib=mlx");
    println!("cargo:rustc-link-lib=dylib=stdc++");
    // Dependents read these as DEP_MLX_*: laya-bench sets its binaries' rpath from LIBDIR.
    println!("cargo::metadata=libdir={}", lib_dir.display());
    println!("cargo::metadata=prefix={}", prefix.display());
    println!("cargo::metadata=version={version}");
}

/// Runs bindgen; a missing libclang (bindgen panics) becomes one message naming the fix, for
/// the target's system: Debian's package and `scripts/setup-mlx.sh` off Apple, Xcode's
/// command-line tools on Apple targets (`apple`), where the build is otherwise upstream's.
pub fn generate_bindings<F>(apple: bool, generate: F) -> bindgen::Bindings
where
    F: FnOnce() -> Result<bindgen::Bindings, bindgen::BindgenError> + std::panic::UnwindSafe,
{
    match (std::panic::catch_unwind(generate), apple) {
        (Ok(Ok(bindings)), _) => bindings,
        (Ok(Err(e)), false) => fail(&format!(
            "bindgen could not read mlx-c's headers: {e} (is libclang installed? Debian: \
             `apt-get install libclang-dev`; or set LIBCLANG_PATH); {FIX}"
        )),
        (Err(_), false) => fail(&format!(
            "bindgen stopped (see its message above); the usual cause is a missing libclang \
             (Debian: `apt-get install libclang-dev`; or set LIBCLANG_PATH); {FIX}"
        )),
        (Ok(Err(e)), true) => fail(&format!(
            "bindgen could not read mlx-c's headers: {e}; {APPLE_LIBCLANG}"
        )),
        (Err(_), true) => fail(&format!(
            "bindgen stopped (see its message above); the usual cause is a missing libclang; {APPLE_LIBCLANG}"
        )),
    }
}

/// Apple targets: where bindgen's libclang comes from.
const APPLE_LIBCLANG: &str = "bindgen loads libclang.dylib from Xcode or its command-line tools: \
install them (`xcode-select --install`, or Xcode, then `sudo xcode-select -s /Applications/Xcode.app`), \
or set LIBCLANG_PATH to a folder holding libclang.dylib";

/// Apple targets only, before upstream's build: the tools it needs, each checked with one
/// message naming the macOS fix (upstream's build would otherwise stop deep inside cmake's
/// output). `cmake` (the cmake crate's `CMAKE`, else `cmake` on PATH) and, with the `metal`
/// feature, the Metal shader compiler MLX's kernels are built with (`xcrun -sdk macosx metal`),
/// which Xcode 26 and newer install as a separate component. Changes nothing that is built.
pub fn check_apple_tools(metal: bool) {
    println!("cargo:rerun-if-env-changed=CMAKE");
    let cmake = env::var_os("CMAKE").unwrap_or_else(|| "cmake".into());
    if Command::new(&cmake).arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
        fail(&format!(
            "`{}` does not run: MLX is built with cmake (Homebrew: `brew install cmake`; or \
             `pip install cmake`), with Xcode or its command-line tools (`xcode-select --install`)",
            cmake.to_string_lossy()
        ));
    }
    if metal {
        match Command::new("xcrun").args(["-sdk", "macosx", "metal", "--version"]).output() {
            Ok(o) if o.status.success() => {}
            found => {
                let why = match found {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                    Err(e) => format!("cannot run xcrun: {e}"),
                };
                fail(&format!(
                    "the Metal shader compiler does not run (`xcrun -sdk macosx metal --version`: {why}); \
                     MLX's Metal kernels are compiled with it. It comes with Xcode (the command-line tools \
                     alone have none: install Xcode and `sudo xcode-select -s /Applications/Xcode.app`); \
                     Xcode 26 and newer download it as a separate component: \
                     `xcodebuild -downloadComponent MetalToolchain`"
                ));
            }
        }
    }
}
