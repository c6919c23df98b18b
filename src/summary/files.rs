//! The file side of `summary`: the raw records it reads (a final report given instead is
//! refused, naming its raw record), the outputs it replaces (derived files, never a raw record),
//! a record given twice, the pictures it writes and a correction it appends.

use std::path::{Path, PathBuf};

use crate::error::{Error, ResultExt};
use crate::record::{self, RawRun};
use crate::summary::correct::resolve;
use crate::summary::pictures::pictures;
use crate::summary::report::{PlotFile, RunSummary};

/// The raw record `STEM.raw.jsonl` of a final report `STEM.json`; `None` for any other name.
fn raw_of_report(path: &Path) -> Option<PathBuf> {
    let s = path.to_str()?;
    let stem = s.strip_suffix(".json").filter(|stem| !stem.ends_with(".raw"))?;
    Some(PathBuf::from(format!("{stem}.raw.jsonl")))
}

/// Refuse (exit 2) a final report (`speed` or `energy`'s `.json`) given where a raw record
/// belongs, naming the raw record of the same stem and whether it exists.
pub fn check_inputs<'p>(raws: impl IntoIterator<Item = (&'p str, &'p Path)>) -> Result<(), Error> {
    for (what, path) in raws {
        let Some(raw) = raw_of_report(path).filter(|_| path.is_file() && !record::is_raw_record(path)) else {
            continue;
        };
        let there = if raw.is_file() {
            format!("{} exists: give it instead", raw.display())
        } else {
            format!(
                "{} does not exist here: give the `--raw` file the run wrote (its path is in the report's `raw` field)",
                raw.display()
            )
        };
        return Err(Error::input(format!(
            "{what} {} is a report, not a raw record: summary re-derives every figure from the raw record (`STEM.raw.jsonl` beside `STEM.json`); {there}",
            path.display()
        )));
    }
    Ok(())
}

/// Refuse (exit 2) an output that would replace a raw record: summary's outputs are derived
/// and replaced, but a measurement never is.
pub fn check_outputs(outputs: &[(&str, &Path)]) -> Result<(), Error> {
    match outputs.iter().find(|(_, p)| !crate::report::is_stdout(p) && record::is_raw_record(p)) {
        None => Ok(()),
        Some((flag, p)) => Err(Error::input(format!(
            "{flag} {} is a raw record: summary replaces its own outputs but never a measurement; choose another path",
            p.display()
        ))),
    }
}

/// Read a raw record to summarize: a `speed` or `energy` record (exit 2 otherwise, or when it
/// cannot be read).
pub fn read(path: &Path) -> Result<RawRun, Error> {
    let run = record::read(path).input_context(|| "cannot read the raw record".into())?;
    if !matches!(run.header.kind.as_str(), "speed" | "energy") {
        return Err(Error::input(format!(
            "{} is a `{}` record; summary reads the raw records of `speed` and `energy`",
            path.display(),
            run.header.kind
        )));
    }
    Ok(run)
}

/// The first two raw records that are the same record: the same file (by path, another path
/// or a link) or byte-identical copies; with how they are the same.
fn same_record(raws: &[&Path]) -> Result<Option<(PathBuf, PathBuf, &'static str)>, Error> {
    if raws.len() < 2 {
        return Ok(None);
    }
    // Bytes are compared only between regular files of the same size, read in bounded pieces;
    // a device or pipe is compared by path only (the reader's bounds refuse it if it is no
    // record).
    let size = |p: &&Path| std::fs::metadata(p).ok().filter(|m| m.is_file()).map(|m| m.len());
    let sizes: Vec<Option<u64>> = raws.iter().map(size).collect();
    let mut seen: Vec<(&Path, Option<PathBuf>, Option<String>)> = Vec::with_capacity(raws.len());
    for (i, path) in raws.iter().enumerate() {
        let twin = sizes[i].is_some() && sizes.iter().enumerate().any(|(j, s)| j != i && *s == sizes[i]);
        let digest = if twin {
            record::file_digest(path).input_context(|| "cannot read the raw record".into())?
        } else {
            None
        };
        let canonical = path.canonicalize().ok();
        for (other, other_canonical, other_digest) in &seen {
            if canonical.is_some() && canonical == *other_canonical {
                return Ok(Some((other.to_path_buf(), path.to_path_buf(), "the same file")));
            }
            if digest.is_some() && digest == *other_digest {
                return Ok(Some((
                    other.to_path_buf(),
                    path.to_path_buf(),
                    "byte-identical copies of one record",
                )));
            }
        }
        seen.push((*path, canonical, digest));
    }
    Ok(None)
}

/// Refuse (exit 2) a record given twice (the baseline record included) unless `allow_same`;
/// with it, the warning to show.
pub fn refuse_same(raws: &[&Path], allow_same: bool) -> Result<Option<String>, Error> {
    let Some((a, b, how)) = same_record(raws)? else { return Ok(None) };
    let msg = format!(
        "{} and {} are {how}: a run compared with itself shows agreement that was never measured",
        a.display(),
        b.display()
    );
    if !allow_same {
        return Err(Error::input(format!(
            "{msg}; give each record once, or pass --allow-same to compare it with itself on purpose"
        )));
    }
    Ok(Some(format!("{msg} (--allow-same)")))
}

/// Write a derived file, replacing it (exit 1 when it cannot be written).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    crate::report::write_atomic(path, bytes).run_context(|| format!("cannot write {}", path.display()))
}

/// The path to put in the Markdown: relative to the Markdown's folder when the picture is
/// inside it, else as written.
fn link(file: &Path, markdown: Option<&Path>) -> String {
    let base =
        markdown.and_then(|m| m.parent()).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    let rel = base.and_then(|b| {
        let (b, f) = (b.canonicalize().ok()?, file.canonicalize().ok()?);
        f.strip_prefix(&b).ok().map(Path::to_path_buf)
    });
    rel.unwrap_or_else(|| file.to_path_buf()).display().to_string()
}

/// Write every run's pictures into `dir` (created if needed; pictures of the same names are
/// replaced), `runN-` before their names when there are several runs; linked relative to the
/// `markdown` file's folder.
pub fn write_plots(
    dir: &Path,
    markdown: Option<&Path>,
    runs: &[RunSummary],
    raws: &[RawRun],
) -> Result<Vec<PlotFile>, Error> {
    std::fs::create_dir_all(dir)
        .input_context(|| format!("cannot create the plots folder {}", dir.display()))?;
    let mut files = Vec::new();
    for (i, (s, run)) in runs.iter().zip(raws).enumerate() {
        let prefix = if runs.len() > 1 { format!("run{i}-") } else { String::new() };
        // A run summarized by its whole cycles is drawn from them (every sample kept).
        let view =
            s.whole_cycles.as_ref().filter(|w| w.usable).map(|w| record::whole::cut(run, w.cycles_used));
        for (kind, svg) in pictures(s, view.as_ref().unwrap_or(run)) {
            let svg = svg.run_context(|| format!("cannot draw the {kind} picture"))?;
            let path: PathBuf = dir.join(format!("{prefix}{kind}.svg"));
            write(&path, svg.as_bytes())?;
            files.push(PlotFile { run: i, kind: kind.into(), path: link(&path, markdown) });
        }
    }
    Ok(files)
}

/// `--correct RAW --field PATH --note TEXT`: append one `metadata_correction` record at
/// `now_unix_s`, after checking that `field` names a field of the record's header.
pub fn append_correction(raw: &Path, field: &str, note: &str, now_unix_s: f64) -> Result<(), Error> {
    if note.trim().is_empty() {
        return Err(Error::input("--note is empty: say what is wrong and what is right"));
    }
    let run = record::read(raw).input_context(|| "cannot read the raw record".into())?;
    let header = serde_json::to_value(&run.header).run_context(|| "cannot serialize the header".into())?;
    resolve(&header, field).input_context(|| {
        format!(
            "--field `{field}` names no field of the header of {}; give a dotted path such as `host.cpu_model` or `arms.0.precision`",
            raw.display()
        )
    })?;
    record::append_correction(raw, field, note, now_unix_s)
        .input_context(|| format!("cannot append the correction to {}", raw.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_refused_naming_its_raw_record() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(raw_of_report(Path::new("a/r.json")), Some(PathBuf::from("a/r.raw.jsonl")));
        assert_eq!(raw_of_report(Path::new("r.raw.jsonl")), None);
        assert_eq!(raw_of_report(Path::new("r.raw.json")), None);
        std::fs::write(d.join("r.json"), "{\n  \"schema_version\": 1\n}\n").unwrap();
        let report = d.join("r.json");
        let e = check_inputs([("RAW", report.as_path())]).unwrap_err().to_string();
        assert!(
            e.contains("is a report, not a raw record") && e.contains("r.raw.jsonl does not exist"),
            "{e}"
        );
        let shape = crate::record::synthetic::RunShape::published();
        let mut w = crate::record::RawWriter::create(&d.join("r.raw.jsonl")).unwrap();
        for r in crate::record::synthetic::records(&shape).iter().take(3) {
            w.write(r).unwrap();
        }
        w.sync().unwrap();
        let text = std::fs::read(d.join("r.raw.jsonl")).unwrap();
        let e = check_inputs([("RAW", report.as_path())]).unwrap_err().to_string();
        assert!(e.contains("r.raw.jsonl exists: give it instead"), "{e}");
        // A raw record named `.json` is read as one; other names are left to the reader.
        std::fs::write(d.join("odd.json"), &text).unwrap();
        assert!(check_inputs([
            ("RAW", d.join("odd.json").as_path()),
            ("RAW", d.join("r.raw.jsonl").as_path())
        ])
        .is_ok());
        // And an output never replaces a raw record, whatever its name.
        let e = check_outputs(&[("--csv", report.as_path()), ("--output", d.join("odd.json").as_path())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--output") && e.contains("is a raw record"), "{e}");
        assert!(
            check_outputs(&[("--csv", report.as_path()), ("--markdown", d.join("new.md").as_path())]).is_ok()
        );
    }
}
