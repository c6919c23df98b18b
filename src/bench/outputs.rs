//! The files a run writes, their default names, and the checks made before anything is
//! measured: every folder exists and can be written in, no two outputs are the same file, and
//! nothing is replaced without `--overwrite`.

use std::path::{Path, PathBuf};

use crate::report::write_atomic;

use super::time::timestamp_stem;
use super::BenchError;

/// A run's raw record, its report and the optional exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFiles {
    /// The raw JSONL record.
    pub raw: PathBuf,
    /// The JSON report.
    pub report: PathBuf,
    /// The Markdown table, if asked for.
    pub markdown: Option<PathBuf>,
    /// The CSV table, if asked for.
    pub csv: Option<PathBuf>,
    /// Replace existing files instead of refusing.
    pub overwrite: bool,
}

impl OutputFiles {
    /// The paths as given, or `PREFIX-<UTC time>.raw.jsonl` and its `.json` (`PREFIX-<UTC
    /// time>-2…` when a run of the same second already took that name); the report defaults to
    /// the raw path with `.json` instead of `.raw.jsonl`, or with `.report.json` added.
    pub fn resolve(
        raw: Option<PathBuf>,
        report: Option<PathBuf>,
        markdown: Option<PathBuf>,
        csv: Option<PathBuf>,
        overwrite: bool,
        prefix: &str,
    ) -> Self {
        let report_for = |raw: &Path| {
            let s = raw.to_string_lossy();
            PathBuf::from(match s.strip_suffix(".raw.jsonl") {
                Some(stem) => format!("{stem}.json"),
                None => format!("{s}.report.json"),
            })
        };
        let raw = raw.unwrap_or_else(|| {
            first_free(&timestamp_stem(prefix), |raw| {
                raw.exists() || report.is_none() && report_for(raw).exists()
            })
        });
        let report = report.unwrap_or_else(|| report_for(&raw));
        Self { raw, report, markdown, csv, overwrite }
    }

    /// Check every file before anything is measured (exit 2): no two of the raw record, report
    /// and exports are the same file, none is one of the `inputs` the run reads (a workload
    /// file, the model's files), none exists unless `overwrite`, and each one's folder exists
    /// and can be written in.
    pub fn check(&self, inputs: &[&Path]) -> Result<(), BenchError> {
        let mut files: Vec<(&str, &Path)> = vec![("--raw", &self.raw), ("--output", &self.report)];
        if let Some(p) = &self.markdown {
            files.push(("--export-markdown", p));
        }
        if let Some(p) = &self.csv {
            files.push(("--export-csv", p));
        }
        check_new_files(&files, inputs, self.overwrite)
    }

    /// Write the JSON report and the requested Markdown and CSV exports (each atomically).
    pub fn write(&self, json: &[u8], markdown: &str, csv: &str) -> Result<(), BenchError> {
        let write = |p: &Path, bytes: &[u8]| {
            write_atomic(p, bytes).map_err(|e| BenchError::Run(format!("cannot write {}: {e}", p.display())))
        };
        write(&self.report, json)?;
        if let Some(p) = &self.markdown {
            write(p, markdown.as_bytes())?;
        }
        if let Some(p) = &self.csv {
            write(p, csv.as_bytes())?;
        }
        Ok(())
    }
}

/// The folder `path` will be written in (`.` for a bare file name); exit 2 naming `flag` when
/// it does not exist or cannot be written in (a probe file is created and removed), so a run
/// never measures first and then fails to save.
pub fn check_folder<'p>(flag: &str, path: &'p Path) -> Result<&'p Path, BenchError> {
    let folder = match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    if folder.exists() && !folder.is_dir() {
        return Err(BenchError::Input(format!(
            "{flag} {}: {} is a file, not a folder; choose another path",
            path.display(),
            folder.display()
        )));
    }
    if !folder.is_dir() {
        return Err(BenchError::Input(format!(
            "{flag} {}: the folder {} does not exist; create it or choose another path",
            path.display(),
            folder.display()
        )));
    }
    if path.is_dir() {
        return Err(BenchError::Input(format!("{flag} {}: is a folder; give a file path", path.display())));
    }
    crate::report::check_writable(folder).map_err(|e| {
        BenchError::Input(format!(
            "{flag} {}: cannot write in the folder {} ({e}); choose a folder you can write in",
            path.display(),
            folder.display()
        ))
    })?;
    Ok(folder)
}

/// Check the files a command will write before it reads or measures anything (exit 2): each
/// one's folder exists and can be written in, no two are the same file, none is one of the
/// `inputs` the command reads (never even with `overwrite`), and none exists unless `overwrite`.
pub fn check_new_files(files: &[(&str, &Path)], inputs: &[&Path], overwrite: bool) -> Result<(), BenchError> {
    // the same file however it is named: its folder resolved, then its name
    let key = |folder: &Path, path: &Path| {
        folder
            .canonicalize()
            .unwrap_or_else(|_| folder.to_path_buf())
            .join(path.file_name().unwrap_or_default())
    };
    let inputs: Vec<(PathBuf, &Path)> =
        inputs.iter().map(|p| (p.canonicalize().unwrap_or_else(|_| p.to_path_buf()), *p)).collect();
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for &(flag, path) in files {
        let folder = check_folder(flag, path)?;
        let k = key(folder, path);
        if let Some((other, _)) = seen.iter().find(|(_, s)| *s == k) {
            return Err(BenchError::Input(format!(
                "{other} and {flag} both name {}: each output needs its own file",
                path.display()
            )));
        }
        if let Some((_, given)) = inputs.iter().find(|(i, _)| *i == k) {
            return Err(BenchError::Input(format!(
                "{flag} {} is the input {}: an output never replaces what it is made from; choose another path",
                path.display(),
                given.display()
            )));
        }
        seen.push((flag, k));
        refuse_existing(path, overwrite)?;
    }
    Ok(())
}

/// Refuse to replace an existing measurement unless `overwrite` (exit 2).
pub fn refuse_existing(path: &Path, overwrite: bool) -> Result<(), BenchError> {
    if path.exists() && !overwrite {
        return Err(BenchError::Input(format!(
            "{} exists; laya-bench never replaces a measurement silently: choose another path or pass --overwrite",
            path.display()
        )));
    }
    Ok(())
}

/// `STEM.raw.jsonl`, or `STEM-2.raw.jsonl`, `STEM-3…` when `taken`.
fn first_free(stem: &str, taken: impl Fn(&Path) -> bool) -> PathBuf {
    let mut raw = PathBuf::from(format!("{stem}.raw.jsonl"));
    let mut n = 2;
    while taken(&raw) {
        raw = PathBuf::from(format!("{stem}-{n}.raw.jsonl"));
        n += 1;
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_name_taken_in_the_same_second_gets_a_suffix() {
        let taken = ["speed-T.raw.jsonl", "speed-T-2.raw.jsonl"];
        let free = first_free("speed-T", |p: &Path| taken.iter().any(|t| Path::new(t) == p));
        assert_eq!(free, PathBuf::from("speed-T-3.raw.jsonl"));
        assert_eq!(first_free("speed-T", |_: &Path| false), PathBuf::from("speed-T.raw.jsonl"));
    }

    #[test]
    fn the_report_follows_the_raw_name() {
        let f = OutputFiles::resolve(Some("a/run.raw.jsonl".into()), None, None, None, false, "speed");
        assert_eq!(f.report, PathBuf::from("a/run.json"));
        let f = OutputFiles::resolve(Some("run.txt".into()), None, None, None, false, "speed");
        assert_eq!(f.report, PathBuf::from("run.txt.report.json"));
    }

    #[test]
    fn outputs_are_checked_before_measuring() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let same = OutputFiles::resolve(Some(p("x")), Some(p("x")), None, None, false, "speed");
        assert!(same.check(&[]).unwrap_err().to_string().contains("--raw and --output both name"));
        std::fs::write(p("r.json"), "{}").unwrap();
        let exists = OutputFiles::resolve(Some(p("r.raw.jsonl")), None, None, None, false, "speed");
        assert!(exists.check(&[]).unwrap_err().to_string().contains("--overwrite"));
        // an input is never replaced, even with --overwrite
        let input = p("r.json");
        let over = OutputFiles { overwrite: true, ..exists };
        assert!(over.check(&[&input]).unwrap_err().to_string().contains("is the input"));
        assert!(over.check(&[]).is_ok());
        let missing = OutputFiles::resolve(Some(p("no/r.raw.jsonl")), None, None, None, false, "speed");
        assert!(missing.check(&[]).unwrap_err().to_string().contains("does not exist"));
        // a file where the folder should be is called a file
        std::fs::write(p("afile"), "x").unwrap();
        let e = check_folder("--raw", &p("afile/r.raw.jsonl")).unwrap_err().to_string();
        assert!(e.ends_with("afile is a file, not a folder; choose another path"), "{e}");
    }

    #[test]
    fn no_output_replaces_an_input_or_another_output() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("in.raw.jsonl"), "x").unwrap();
        // the input named another way (./) is still the input, even with overwrite
        let dotted = dir.path().join(".").join("in.raw.jsonl");
        let e =
            check_new_files(&[("--output", &dotted)], &[&p("in.raw.jsonl")], true).unwrap_err().to_string();
        assert!(e.contains("is the input") && e.contains("never replaces"), "{e}");
        let e = check_new_files(&[("--output", &p("s")), ("--csv", &p("s"))], &[], false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--output and --csv both name"), "{e}");
        assert!(check_new_files(&[("--output", &p("s")), ("--csv", &p("c"))], &[&p("in.raw.jsonl")], false)
            .is_ok());
    }
}
