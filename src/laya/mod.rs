//! The Laya host contract, pure and portable: bundles, tokenizer, prompt rows, packing, decoding.

pub mod batch;
pub mod bpe;
pub mod bundle;
pub mod config;
pub mod coreml_format;
pub mod decode;
pub mod host;
pub mod predict;
pub mod prefix;
pub mod prompt;
pub mod pyjson;
pub mod question;
pub mod request;
pub mod tokenizer;
pub mod workload;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The host contract sits below the engines: nothing in `src/laya/` (tests included)
    /// names the backend module; `backend/` re-exports what it needs from here.
    #[test]
    fn laya_imports_nothing_from_backend() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/laya");
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(files.len() > 10, "found only {files:?}");
        // Spelled in pieces so this file does not match itself.
        let needle = ["crate", "::", "backend"].concat();
        let offenders: Vec<String> = files
            .iter()
            .filter(|f| std::fs::read_to_string(f).unwrap().contains(&needle))
            .map(|f| f.display().to_string())
            .collect();
        assert!(offenders.is_empty(), "src/laya/ must not use {needle}: {offenders:?}");
    }
}
