//! The process's settings from its environment, read once at the command edge
//! (`commands::settings::from_env`, called by `commands::dispatch`) into one [`Settings`] value
//! that the commands pass down, as `&Settings` or the one field needed, to what uses it;
//! nothing below `commands/` reads an environment variable, and there is no global copy. This
//! module depends on no other module of the crate, so every layer may take a `Settings`.
//!
//! The hub's variables (`HF_HOME`, `HF_ENDPOINT`, `LAYA_BENCH_HUB_STALL_S`, …) are read at the
//! edge too, into `hub::HubConfig` (`commands/hub_progress.rs`).

use std::ffi::OsString;
use std::path::PathBuf;

/// Every environment variable the libraries use, as read once at start-up. A field is `None`
/// where its variable is unset (or, for the text fields, not valid Unicode); each field says
/// what an unset variable means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `LAYA_BENCH_ISA`: caps the portable engine's kernel family (`avx512`, `avx2`,
    /// `generic`); unset: the best family this CPU runs (`backend::portable::isa::selection`).
    pub isa: Option<String>,
    /// `LAYA_BENCH_BF16`: the portable engine's BF16 and 8-bit palette product (`auto`, `amx`,
    /// `dot`, `decode`); unset or `auto`: the engine picks (`backend::portable::bf16_selection`).
    pub bf16: Option<String>,
    /// `LAYA_BENCH_REQUIRE_MLX_GPU`: exactly `1` refuses MLX arms rather than fall back to MLX's
    /// CPU device when the Metal GPU is missing or fails its check; unset: fall back (and say so).
    pub require_mlx_gpu: Option<String>,
    /// `LAYA_BENCH_NVML_LIB` (non-empty): the NVML library the `nvml` sensor loads; unset:
    /// `libnvidia-ml.so.1`.
    pub nvml_lib: Option<OsString>,
    /// `LAYA_BENCH_PYTHON` (non-empty): the interpreter of `ref:` workers; unset: the venv
    /// `scripts/setup-ref.sh` makes under [`Settings::cache_home`], else `python3`.
    pub python: Option<PathBuf>,
    /// `XDG_CACHE_HOME` (non-empty), else `$HOME/.cache` (`HOME` non-empty): where
    /// `scripts/setup-ref.sh` makes `laya-bench/ref-venv`; `None` when neither is set.
    pub cache_home: Option<PathBuf>,
    /// `HOME`: expands a leading `~/` of an `exec:` sensor's program and roots the Core ML
    /// compile cache (`~/Library/Caches/laya-bench`); unset: `~` is an error there, and the
    /// compile cache is under the temporary folder.
    pub home: Option<OsString>,
    /// `PATH`: where an `exec:` sensor's program and `doctor`'s `ref:` interpreter are looked
    /// up; unset: nothing is found there.
    pub path: Option<OsString>,
}

impl Settings {
    /// No variable set: every default.
    pub const UNSET: Settings = Settings {
        isa: None,
        bf16: None,
        require_mlx_gpu: None,
        nvml_lib: None,
        python: None,
        cache_home: None,
        home: None,
        path: None,
    };

    /// The settings from the variables `var` gives (`None`: unset). Reads nothing itself: the
    /// command edge passes the process environment's lookup (`commands::settings::from_env`).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Settings {
        let text = |k: &str| var(k).and_then(|v| v.into_string().ok());
        let nonempty = |k: &str| var(k).filter(|v| !v.is_empty());
        let dir = |k: &str| nonempty(k).map(PathBuf::from);
        Settings {
            isa: text("LAYA_BENCH_ISA"),
            bf16: text("LAYA_BENCH_BF16"),
            require_mlx_gpu: text("LAYA_BENCH_REQUIRE_MLX_GPU"),
            nvml_lib: nonempty("LAYA_BENCH_NVML_LIB"),
            python: dir("LAYA_BENCH_PYTHON"),
            cache_home: dir("XDG_CACHE_HOME").or_else(|| dir("HOME").map(|h| h.join(".cache"))),
            home: var("HOME"),
            path: var("PATH"),
        }
    }
}

#[cfg(test)]
impl Settings {
    /// The test process's environment, as the command edge would read it (the crate's unit
    /// tests, where no command runs).
    pub(crate) fn of_test_process() -> Settings {
        Settings::from_vars(|k| std::env::var_os(k))
    }
}

#[cfg(test)]
mod tests {
    use super::Settings;
    use std::ffi::OsString;

    #[test]
    fn variables_fill_their_fields_with_the_edge_s_filters() {
        let vars = [
            ("LAYA_BENCH_ISA", "avx2"),
            ("LAYA_BENCH_NVML_LIB", ""),
            ("LAYA_BENCH_PYTHON", "/p/python"),
            ("HOME", "/h"),
            ("PATH", "/bin"),
        ];
        let s = Settings::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v)));
        assert_eq!(s.isa.as_deref(), Some("avx2"));
        assert_eq!((s.bf16, s.require_mlx_gpu, s.nvml_lib), (None, None, None));
        assert_eq!(s.python, Some("/p/python".into()));
        assert_eq!(s.cache_home, Some("/h/.cache".into()));
        assert_eq!((s.home, s.path), (Some("/h".into()), Some("/bin".into())));
        let x = Settings::from_vars(|k| (k == "XDG_CACHE_HOME").then(|| OsString::from("/x")));
        assert_eq!(x.cache_home, Some("/x".into()));
        assert_eq!(Settings::from_vars(|_| None), Settings::UNSET);
    }
}
