//! Records the git revision for raw-file headers (`unknown` outside a git checkout; `-dirty`
//! appended when tracked files differ from it, so a record never names a revision that is not
//! what ran), and links the MLX backend's shared libraries on Linux (feature `mlx`, see
//! `mlx_linux`).
fn main() {
    mlx_linux();
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(rev) = rev {
        let dirty = std::process::Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .is_some_and(|o| !o.stdout.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=LAYA_BENCH_GIT_REVISION={rev}{suffix}");
        // an edit makes the tree dirty (or clean again) without moving HEAD: what the binary is
        // built from is watched too
        for path in ["src", "fixtures", "Cargo.toml", "Cargo.lock"] {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    // Rerun when HEAD moves: HEAD itself, and the branch file it points to (in a worktree the
    // git dir is elsewhere; ask git where).
    let git_dir = std::process::Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(dir) = git_dir {
        let head = dir.join("HEAD");
        println!("cargo:rerun-if-changed={}", head.display());
        if let Ok(text) = std::fs::read_to_string(&head) {
            if let Some(r) = text.trim().strip_prefix("ref: ") {
                println!("cargo:rerun-if-changed={}", dir.join(r).display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// Feature `mlx` off Apple: the binaries find the wheel's `libmlx.so` through an rpath (the
/// folder comes from the patched mlx-sys as `DEP_MLX_LIBDIR`), and MLX's `cblas_sgemm` resolves
/// to OpenBLAS. The wheel's own BLAS is netlib's reference BLAS (~25× slower on a 512² matmul);
/// OpenBLAS linked into the executable comes first in the symbol lookup order, ahead of the
/// reference library that `libmlx.so` itself needs. `LAYA_BENCH_MLX_BLAS=reference` builds on the
/// reference BLAS on purpose; the arm records which library really answered (`blas` in its info).
fn mlx_linux() {
    println!("cargo:rerun-if-env-changed=LAYA_BENCH_MLX_BLAS");
    let mlx = std::env::var_os("CARGO_FEATURE_MLX").is_some();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !mlx || os == "macos" || os == "ios" {
        return;
    }
    let Ok(libdir) = std::env::var("DEP_MLX_LIBDIR") else {
        eprintln!("laya-bench: mlx-sys published no DEP_MLX_LIBDIR: is the [patch.crates-io] entry for vendor/mlx-sys in Cargo.toml?");
        std::process::exit(1);
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    println!("cargo:rustc-env=LAYA_BENCH_MLX_LIBDIR={libdir}");
    if let Ok(v) = std::env::var("DEP_MLX_VERSION") {
        println!("cargo:rustc-env=LAYA_BENCH_MLX_VERSION={v}");
    }
    let blas = std::env::var("LAYA_BENCH_MLX_BLAS").unwrap_or_else(|_| "openblas".into());
    match blas.as_str() {
        "openblas" => {
            let triple = std::env::var("TARGET").unwrap_or_default();
            let arch_triple = triple.replace("-unknown-", "-");
            let dirs = [
                format!("/usr/lib/{arch_triple}"),
                "/usr/lib64".into(),
                "/usr/lib".into(),
                "/usr/local/lib".into(),
            ];
            if !dirs.iter().any(|d| std::path::Path::new(d).join("libopenblas.so").exists()) {
                eprintln!(
                    "\nlaya-bench: the MLX backend links OpenBLAS, but no libopenblas.so was found in {}: \
                     run scripts/setup-mlx.sh (Debian: apt-get install libopenblas-dev), or build with \
                     LAYA_BENCH_MLX_BLAS=reference to multiply on the wheel's reference BLAS on purpose\n",
                    dirs.join(", ")
                );
                std::process::exit(1);
            }
            // Not as-needed: nothing in laya-bench calls OpenBLAS itself; libmlx.so does. As a
            // direct dependency of the executable it is searched before libmlx.so's own BLAS.
            println!("cargo:rustc-link-arg=-Wl,--no-as-needed,-lopenblas,--as-needed");
        }
        "reference" => {}
        other => {
            eprintln!("laya-bench: LAYA_BENCH_MLX_BLAS={other} is not `openblas` or `reference`");
            std::process::exit(1);
        }
    }
    println!("cargo:rustc-env=LAYA_BENCH_MLX_BLAS_CHOICE={blas}");
}
