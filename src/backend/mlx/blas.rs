//! Which BLAS library answers MLX's matrix products on its CPU device.
//!
//! MLX's CPU build calls `cblas_sgemm`; the PyPI wheel bundles netlib's reference BLAS for it
//! (roughly 25× slower than an optimised one on a 512² product), and laya-bench's build links
//! OpenBLAS ahead of it (build.rs). What really answers is asked of the dynamic linker at run
//! time (`graph::blas_library`, in the MLX leaf), so a record never says "OpenBLAS" because the build meant it:
//! it names the library file that defines the symbol MLX binds to. `classify` (portable, tested)
//! turns that file name into a kind, and the MLX arm refuses the reference BLAS unless the build
//! chose it on purpose (`LAYA_BENCH_MLX_BLAS=reference`).

use std::fmt;

/// The kinds of BLAS a library path can be told apart by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlasKind {
    /// OpenBLAS (Debian's `libopenblas.so.0`, or its `openblas-*/libblas.so.3` alternatives).
    OpenBlas,
    /// Intel oneMKL.
    Mkl,
    /// BLIS (AMD AOCL-BLIS included).
    Blis,
    /// Apple's Accelerate.
    Accelerate,
    /// netlib's reference BLAS: the MLX wheel's bundled `libblas-<hash>.so.3`, Debian's
    /// `blas/libblas.so.3`.
    Reference,
    /// A library this table does not know.
    Other,
}

impl fmt::Display for BlasKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BlasKind::OpenBlas => "OpenBLAS",
            BlasKind::Mkl => "oneMKL",
            BlasKind::Blis => "BLIS",
            BlasKind::Accelerate => "Accelerate",
            BlasKind::Reference => "netlib reference BLAS",
            BlasKind::Other => "unrecognised BLAS",
        })
    }
}

/// The kind of the library at `path` (the file that defines `cblas_sgemm`).
pub fn classify(path: &str) -> BlasKind {
    let lower = path.to_ascii_lowercase();
    let file = lower.rsplit('/').next().unwrap_or(&lower);
    if lower.contains("openblas") {
        BlasKind::OpenBlas
    } else if lower.contains("mkl") {
        BlasKind::Mkl
    } else if lower.contains("blis") {
        BlasKind::Blis
    } else if lower.contains("accelerate.framework") || lower.contains("veclib") {
        BlasKind::Accelerate
    } else if file.starts_with("libblas.") || file.starts_with("libblas-") || file.starts_with("libcblas") {
        // netlib's names: libblas.so.3, libcblas.so.3, and auditwheel's libblas-<hash>.so.3.
        BlasKind::Reference
    } else {
        BlasKind::Other
    }
}

/// What the arm records: the kind, the library's own configuration string where it has one
/// (OpenBLAS: `openblas_get_config()`), and the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlasProvider {
    /// The kind, from the file name.
    pub kind: BlasKind,
    /// The library file that defines `cblas_sgemm` in this process.
    pub path: String,
    /// The library's self-description (`OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64`).
    pub config: Option<String>,
    /// Threads the library will use (OpenBLAS: `openblas_get_num_threads()`).
    pub threads: Option<i32>,
}

impl BlasProvider {
    /// One line for `BackendInfo::blas`, raw headers and `doctor`.
    pub fn describe(&self) -> String {
        let mut s = match &self.config {
            Some(c) => format!("{} ({c})", self.kind),
            None => self.kind.to_string(),
        };
        if let Some(t) = self.threads {
            s.push_str(&format!(", {t} thread(s)"));
        }
        s.push_str(&format!(", {}", self.path));
        s
    }
}

/// Why the MLX arm will not run on a provider, or `None` when it may. The reference BLAS is
/// refused unless the build chose it (`chosen_reference`); an unknown library is allowed and
/// recorded by name.
pub fn refusal(provider: Option<&BlasProvider>, chosen_reference: bool) -> Option<String> {
    match provider {
        None => Some(
            "no library in this process defines `cblas_sgemm`, so which BLAS MLX multiplies with cannot be \
             recorded; rebuild with `cargo build --release --features mlx` after `scripts/setup-mlx.sh`"
                .into(),
        ),
        Some(p) if p.kind == BlasKind::Reference && !chosen_reference => Some(format!(
            "MLX would multiply on netlib's reference BLAS ({}), about 25x slower than OpenBLAS: this binary was \
             built to use OpenBLAS, so something (LD_LIBRARY_PATH, LD_PRELOAD, a missing libopenblas.so.0) \
             changed the library it binds to; install libopenblas0 (scripts/setup-mlx.sh), or build with \
             LAYA_BENCH_MLX_BLAS=reference to measure the reference BLAS on purpose",
            p.path
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_files_are_told_apart_by_name() {
        for (path, kind) in [
            ("/usr/lib/x86_64-linux-gnu/libopenblas.so.0", BlasKind::OpenBlas),
            ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", BlasKind::OpenBlas),
            ("/root/.cache/laya-bench/mlx-0.32.2/mlx_cpu.libs/libblas-bd8a282c.so.3.10.0", BlasKind::Reference),
            ("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", BlasKind::Reference),
            ("/usr/lib/x86_64-linux-gnu/libcblas.so.3", BlasKind::Reference),
            ("/opt/intel/oneapi/mkl/latest/lib/libmkl_rt.so.2", BlasKind::Mkl),
            ("/opt/AMD/aocl/lib/libblis-mt.so.4", BlasKind::Blis),
            (
                "/System/Library/Frameworks/Accelerate.framework/Versions/A/Frameworks/vecLib.framework/libBLAS.dylib",
                BlasKind::Accelerate,
            ),
            ("/usr/lib/libfancy.so", BlasKind::Other),
        ] {
            assert_eq!(classify(path), kind, "{path}");
        }
    }

    #[test]
    fn the_reference_blas_is_refused_unless_chosen() {
        let p = |path: &str| BlasProvider {
            kind: classify(path),
            path: path.into(),
            config: None,
            threads: None,
        };
        let reference = p("/x/mlx_cpu.libs/libblas-bd8a282c.so.3.10.0");
        let e = refusal(Some(&reference), false).unwrap();
        assert!(e.contains("libblas-bd8a282c") && e.contains("LAYA_BENCH_MLX_BLAS=reference"), "{e}");
        assert_eq!(refusal(Some(&reference), true), None);
        assert_eq!(refusal(Some(&p("/usr/lib/x86_64-linux-gnu/libopenblas.so.0")), false), None);
        assert_eq!(refusal(Some(&p("/usr/lib/libfancy.so")), false), None);
        assert!(refusal(None, false).unwrap().contains("cblas_sgemm"));
    }

    #[test]
    fn the_description_names_kind_config_threads_and_file() {
        let p = BlasProvider {
            kind: BlasKind::OpenBlas,
            path: "/usr/lib/x86_64-linux-gnu/libopenblas.so.0".into(),
            config: Some("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64".into()),
            threads: Some(2),
        };
        assert_eq!(
            p.describe(),
            "OpenBLAS (OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64), 2 thread(s), \
             /usr/lib/x86_64-linux-gnu/libopenblas.so.0"
        );
        let r = BlasProvider {
            kind: BlasKind::Reference,
            path: "/x/libblas.so.3".into(),
            config: None,
            threads: None,
        };
        assert_eq!(r.describe(), "netlib reference BLAS, /x/libblas.so.3");
    }
}
