//! The files a run writes, their default names, and the checks made before anything is
//! measured: every folder exists and can be written in, no two outputs are the same file, no
//! output is a special file (a FIFO, a device, a socket, or a link to one), and nothing is
//! replaced without `--overwrite`. The raw record is claimed for the run alone: a default name
//! is created exclusively (a run of the same second takes the next suffix) and the file is
//! locked while the run writes it ([`lock_raw`]). An export given as `-` goes to standard
//! output instead of a file ([`is_stdout`], [`write_output`]); one export at most.

use std::fs::File;
use std::path::{Path, PathBuf};

pub use crate::report::is_stdout;
use crate::report::write_atomic;

use crate::error::Error;
use crate::time::timestamp_stem;

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
    /// The stem of a default raw name (`speed-<UTC time>`), `None` for a raw path given.
    pub stem: Option<String>,
}

impl OutputFiles {
    /// The paths as given, or `PREFIX-<UTC time>.raw.jsonl` and its `.json`, settled by
    /// [`OutputFiles::claim`] (`PREFIX-<UTC time>-2…` when a run of the same second took that
    /// name); the report defaults to the raw path with `.json` instead of `.raw.jsonl`, or with
    /// `.report.json` added.
    pub fn resolve(
        raw: Option<PathBuf>,
        report: Option<PathBuf>,
        markdown: Option<PathBuf>,
        csv: Option<PathBuf>,
        overwrite: bool,
        prefix: &str,
    ) -> Self {
        let report_for = report_path_for;
        // a default name is a first choice: the claim settles it
        let (raw, stem) = match raw {
            Some(raw) => (raw, None),
            None => {
                let stem = timestamp_stem(prefix);
                (PathBuf::from(format!("{stem}.raw.jsonl")), Some(stem))
            }
        };
        let report = report.unwrap_or_else(|| report_for(&raw));
        Self { raw, report, markdown, csv, overwrite, stem }
    }

    /// Claim a default raw name for this run: create it exclusively (`create_new`), taking the
    /// next suffix when another run of the same second created it first (the report's default
    /// name follows). `None` for a raw path given on the command line (it is opened, checked
    /// and locked when the run starts). The claimed file is empty until the run writes its
    /// header; dropping the claim removes it if it is still empty (a run that never started).
    pub fn claim(&mut self) -> Result<Option<ClaimedFile>, Error> {
        let Some(stem) = self.stem.clone() else { return Ok(None) };
        let default_report = self.report == report_path_for(&self.raw);
        let claim = claim_first_free(&stem, ".raw.jsonl", "raw file", |raw| {
            default_report && report_path_for(raw).exists()
        })?;
        if default_report {
            self.report = report_path_for(&claim.path);
        }
        self.raw = claim.path.clone();
        Ok(Some(claim))
    }

    /// Check every file before anything is measured (exit 2): no two of the raw record, report
    /// and exports are the same file, none is one of the `inputs` the run reads (a workload
    /// file, the model's files), none exists unless `overwrite`, and each one's folder exists
    /// and can be written in. A default raw name and the report that follows it are not
    /// refused for existing: [`OutputFiles::claim`] passes over a taken name to the next
    /// suffix.
    pub fn check(&self, inputs: &[&Path]) -> Result<(), Error> {
        if is_stdout(&self.raw) {
            return Err(Error::input(
                "--raw -: the raw record is a file the run locks and syncs after every block, never standard output; give a path (the report and exports can go to `-`)",
            ));
        }
        let mut files: Vec<(&str, &Path)> = vec![("--raw", &self.raw), ("--output", &self.report)];
        if let Some(p) = &self.markdown {
            files.push(("--export-markdown", p));
        }
        if let Some(p) = &self.csv {
            files.push(("--export-csv", p));
        }
        let claimed: Vec<&Path> = match self.stem {
            Some(_) if self.report == report_path_for(&self.raw) => vec![&self.raw, &self.report],
            Some(_) => vec![&self.raw],
            None => vec![],
        };
        check_files(&files, inputs, self.overwrite, &claimed)
    }

    /// Whether one of the report and exports goes to standard output (`-`): the command then
    /// prints nothing else there.
    pub fn to_stdout(&self) -> bool {
        [Some(&self.report), self.markdown.as_ref(), self.csv.as_ref()]
            .into_iter()
            .flatten()
            .any(|p| is_stdout(p))
    }

    /// Write the JSON report and the requested Markdown and CSV exports (each file atomically;
    /// `-` to standard output).
    pub fn write(&self, json: &[u8], markdown: &str, csv: &str) -> Result<(), Error> {
        let write = write_output;
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

/// Write an output: `-` to standard output (a closed pipe is the reader's choice, not an
/// error), any other path atomically as a file; a failed write is a failed run (exit 1)
/// naming where.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if is_stdout(path) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        return match out.write_all(bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(Error::run("cannot write to standard output").because(e))
            }
            _ => Ok(()),
        };
    }
    write_atomic(path, bytes).map_err(|e| Error::run(format!("cannot write {}", path.display())).because(e))
}

/// The flag of the one output among `files` that goes to standard output (`-`), if any; two
/// at once is a bad invocation (exit 2) naming both, as their text would interleave.
pub fn stdout_flag<'f>(files: &[(&'f str, &Path)]) -> Result<Option<&'f str>, Error> {
    let mut on_stdout = files.iter().filter(|(_, p)| is_stdout(p)).map(|(flag, _)| *flag);
    match (on_stdout.next(), on_stdout.next()) {
        (Some(first), Some(second)) => Err(Error::input(format!(
            "{first} - and {second} - both write to standard output; at most one output can be `-`: give the other a file path"
        ))),
        (first, _) => Ok(first),
    }
}

/// The folder `path` will be written in (`.` for a bare file name); exit 2 naming `flag` when
/// it does not exist or cannot be written in (a probe file is created and removed), so a run
/// never measures first and then fails to save.
pub fn check_folder<'p>(flag: &str, path: &'p Path) -> Result<&'p Path, Error> {
    refuse_special(Some(flag), path)?;
    let folder = match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    if folder.exists() && !folder.is_dir() {
        return Err(Error::input(format!(
            "{flag} {}: {} is a file, not a folder; choose another path",
            path.display(),
            folder.display()
        )));
    }
    if !folder.is_dir() {
        return Err(Error::input(format!(
            "{flag} {}: the folder {} does not exist; create it or choose another path",
            path.display(),
            folder.display()
        )));
    }
    if path.is_dir() {
        return Err(Error::input(format!("{flag} {}: is a folder; give a file path", path.display())));
    }
    crate::report::check_writable(folder).map_err(|e| {
        Error::input(format!(
            "{flag} {}: cannot write in the folder {} ({e}); choose a folder you can write in",
            path.display(),
            folder.display()
        ))
    })?;
    Ok(folder)
}

/// Check the files a command will write before it reads or measures anything (exit 2): at most
/// one goes to standard output (`-`, [`stdout_flag`]; it is not a file and is not checked
/// further), each other one's folder exists and can be written in, no two are the same file,
/// none is one of the `inputs` the command reads (never even with `overwrite`), and none exists
/// unless `overwrite`.
pub fn check_new_files(files: &[(&str, &Path)], inputs: &[&Path], overwrite: bool) -> Result<(), Error> {
    check_files(files, inputs, overwrite, &[])
}

/// [`check_new_files`], except that the `claimed` files may exist: they are default names a
/// claim takes or passes over ([`OutputFiles::claim`]).
fn check_files(
    files: &[(&str, &Path)],
    inputs: &[&Path],
    overwrite: bool,
    claimed: &[&Path],
) -> Result<(), Error> {
    stdout_flag(files)?;
    let files: Vec<(&str, &Path)> = files.iter().copied().filter(|(_, p)| !is_stdout(p)).collect();
    // the same file however it is named: its device and inode, else its folder and name
    let inputs: Vec<(FileId, &Path)> = inputs.iter().map(|p| (file_id(p), *p)).collect();
    let mut seen: Vec<(&str, FileId)> = Vec::new();
    for (flag, path) in files {
        check_folder(flag, path)?;
        let k = file_id(path);
        if let Some((other, _)) = seen.iter().find(|(_, s)| *s == k) {
            return Err(Error::input(format!(
                "{other} and {flag} both name {}: each output needs its own file",
                path.display()
            )));
        }
        if let Some((_, given)) = inputs.iter().find(|(i, _)| *i == k) {
            return Err(Error::input(format!(
                "{flag} {} is the input {}: an output never replaces what it is made from; choose another path",
                path.display(),
                given.display()
            )));
        }
        seen.push((flag, k));
        refuse_existing(path, overwrite || claimed.contains(&path))?;
    }
    Ok(())
}

/// Check a report's `--output` before anything runs (exit 2): an existing file is not replaced
/// without `--overwrite` ([`refuse_existing`]), and its folder must exist and take files
/// ([`check_folder`]); `-` (standard output) needs neither.
pub fn check_new_output(path: &Path, overwrite: bool) -> Result<(), Error> {
    if !is_stdout(path) {
        refuse_existing(path, overwrite)?;
        check_folder("--output", path)?;
    }
    Ok(())
}

/// An output path as messages name it: `standard output` for `-`, else the path.
pub fn shown(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Refuse to replace an existing measurement unless `overwrite`, and a special file even with
/// it (exit 2).
pub fn refuse_existing(path: &Path, overwrite: bool) -> Result<(), Error> {
    refuse_special(None, path)?;
    if path.exists() && !overwrite {
        return Err(Error::input(format!(
            "{} exists; laya-bench never replaces a measurement silently: choose another path or pass --overwrite",
            path.display()
        )));
    }
    Ok(())
}

/// The report's default path for a raw path: `.json` instead of `.raw.jsonl`, or
/// `.report.json` added.
fn report_path_for(raw: &Path) -> PathBuf {
    let s = raw.to_string_lossy();
    PathBuf::from(match s.strip_suffix(".raw.jsonl") {
        Some(stem) => format!("{stem}.json"),
        None => format!("{s}.report.json"),
    })
}

/// Create `STEM<ext>` exclusively (`create_new`), or `STEM-2<ext>`, `STEM-3<ext>`… when another
/// run (of the same second) created it first or `skip` passes over it; `what` names the file
/// in an error (exit 2). Never replaces a file, however many runs start at once.
fn claim_first_free(
    stem: &str,
    ext: &str,
    what: &str,
    skip: impl Fn(&Path) -> bool,
) -> Result<ClaimedFile, Error> {
    let mut n = 1u32;
    loop {
        let path = if n == 1 {
            PathBuf::from(format!("{stem}{ext}"))
        } else {
            PathBuf::from(format!("{stem}-{n}{ext}"))
        };
        n += 1;
        if skip(&path) {
            continue;
        }
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => return Ok(ClaimedFile { path }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => continue,
            Err(e) => {
                return Err(Error::input(format!("cannot create the {what} {}", path.display())).because(e))
            }
        }
    }
}

/// An output named by default: the path given on the command line, or `PREFIX-<UTC time><ext>`
/// created exclusively for this run (`…-2<ext>`… when a run of the same second took it), for a command whose default-named output stands alone (`convert-check`'s report, `trace
/// run`'s raw record, `snake`'s reports); `what` names it in an error (exit 2). A given path is
/// the caller's to check ([`check_new_output`], [`refuse_existing`]); a claimed one is new and
/// is opened as one the run may replace. Keep the claim until the run ends: dropped while the
/// file is still empty, it removes the file.
pub fn given_or_claimed(
    given: Option<&Path>,
    prefix: &str,
    ext: &str,
    what: &str,
) -> Result<(PathBuf, Option<ClaimedFile>), Error> {
    match given {
        Some(path) => Ok((path.to_path_buf(), None)),
        None => {
            let claim = claim_first_free(&timestamp_stem(prefix), ext, what, |_| false)?;
            Ok((claim.path.clone(), Some(claim)))
        }
    }
}

/// A default file name this run created ([`OutputFiles::claim`], [`given_or_claimed`]);
/// dropped while still empty (the run stopped before writing it), the file is removed.
#[derive(Debug)]
pub struct ClaimedFile {
    path: PathBuf,
}

impl Drop for ClaimedFile {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What a path that exists but is not a regular file is, in words (`None` for a regular
/// file or a folder, which [`check_folder`] names itself).
fn special_kind(kind: std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    if kind.is_file() || kind.is_dir() || kind.is_symlink() {
        None
    } else {
        Some("a special file")
    }
}

/// Refuse an output path that is, or links to, something other than a regular file (exit 2):
/// laya-bench replaces outputs by renaming a finished file over them, which would put a
/// regular file where a FIFO, a device or a link was, so it never writes to one. A symbolic
/// link to a regular file is written through (its target is replaced; the link stays).
pub fn refuse_special(flag: Option<&str>, path: &Path) -> Result<(), Error> {
    let named = match flag {
        Some(f) => format!("{f} {}", path.display()),
        None => path.display().to_string(),
    };
    let fix = "laya-bench writes only regular files: choose another path";
    let Ok(meta) = std::fs::symlink_metadata(path) else { return Ok(()) };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return match std::fs::metadata(path) {
            Err(_) => Err(Error::input(format!(
                "{named} is a symbolic link to {}, which does not exist; {fix}",
                target.display()
            ))),
            Ok(m) => match special_kind(m.file_type()) {
                Some(kind) => Err(Error::input(format!(
                    "{named} is a symbolic link to {}, which is not a regular file ({kind}); {fix}",
                    target.display()
                ))),
                None => Ok(()),
            },
        };
    }
    match special_kind(meta.file_type()) {
        Some(kind) => Err(Error::input(format!("{named} is not a regular file ({kind}); {fix}"))),
        None => Ok(()),
    }
}

/// Which file a path names, for telling two paths of one file apart: its device and inode
/// where it exists (so a link, a hard link or `./` is the same file), else its folder resolved
/// and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

fn file_id(path: &Path) -> FileId {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(path) {
            return FileId::Inode(m.dev(), m.ino());
        }
    }
    let folder = match path.parent() {
        Some(f) if !f.as_os_str().is_empty() => f,
        _ => Path::new("."),
    };
    let folder = folder.canonicalize().unwrap_or_else(|_| folder.to_path_buf());
    FileId::Path(match path.file_name() {
        Some(name) => folder.join(name),
        None => folder,
    })
}

/// The raw record opened for this run alone: a regular file, write-locked (`fcntl` `F_SETLK`)
/// until this is dropped, so a second run given the same `--raw` refuses before it measures
/// instead of writing into the same file. The lock belongs to the process: keep this alive
/// until the footer is written.
#[derive(Debug)]
pub struct RawLock {
    _file: File,
}

/// Open (creating it; an existing file only with `replace`) and lock the raw record at `path`
/// for this run, before anything is written to it: nothing is truncated here, so a run that
/// loses the lock leaves the other run's record untouched. A bad path, a special file, an
/// existing file without `replace` or a file another run holds is a bad input (exit 2) naming
/// the file (and the holder's process id).
pub fn lock_raw(path: &Path, replace: bool) -> Result<RawLock, Error> {
    refuse_special(Some("--raw"), path)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if replace {
        options.create(true);
    } else {
        options.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // never block on a FIFO that appeared since the check, never take a terminal
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::input(format!(
                "{} exists; laya-bench never replaces a measurement silently: choose another path or pass --overwrite",
                path.display()
            )))
        }
        Err(e) => {
            return Err(Error::input(format!("cannot create the raw file {}", path.display())).because(e))
        }
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::input(format!("cannot create the raw file {}", path.display())).because(e))?;
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(Error::input(format!(
            "--raw {} is not a regular file ({kind}); laya-bench writes only regular files: choose another path",
            path.display()
        )));
    }
    lock_file(&file).map_err(|holder| match holder {
        LockRefused::Held(Some(pid)) => Error::input(format!(
            "--raw {} is being written by another run (process {pid}); two runs never write one record: wait for it to end or choose another path",
            path.display()
        )),
        LockRefused::Held(None) => Error::input(format!(
            "--raw {} is being written by another run; two runs never write one record: wait for it to end or choose another path",
            path.display()
        )),
        LockRefused::Io(e) => {
            Error::input(format!("cannot lock the raw file {}", path.display())).because(e)
        }
    })?;
    Ok(RawLock { _file: file })
}

/// Why a lock was not taken.
enum LockRefused {
    /// Another process holds it (its pid, when the system says).
    Held(Option<i32>),
    /// The lock call itself failed.
    Io(std::io::Error),
}

#[cfg(unix)]
fn lock_file(file: &File) -> Result<(), LockRefused> {
    use std::os::fd::AsRawFd;
    let whole = || {
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are valid.
        let mut l: libc::flock = unsafe { std::mem::zeroed() };
        l.l_type = libc::F_WRLCK as libc::c_short;
        l.l_whence = libc::SEEK_SET as libc::c_short;
        l
    };
    let mut lock = whole();
    // SAFETY: a valid open fd and a valid, initialised flock owned by this frame.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EACCES | libc::EAGAIN)) {
        return Err(LockRefused::Io(e));
    }
    // SAFETY: as above; F_GETLK writes the holder into `lock`.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
    let pid = (asked == 0 && lock.l_type != libc::F_UNLCK as libc::c_short).then_some(lock.l_pid);
    Err(LockRefused::Held(pid))
}

#[cfg(not(unix))]
fn lock_file(_file: &File) -> Result<(), LockRefused> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_output_is_named_and_needs_no_file_checks() {
        assert_eq!(shown(Path::new("-")), "standard output");
        assert_eq!(shown(Path::new("out/r.json")), "out/r.json");
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("r.json");
        std::fs::write(&taken, b"{}").unwrap();
        assert!(check_new_output(Path::new("-"), false).is_ok());
        assert!(check_new_output(&dir.path().join("new.json"), false).is_ok());
        assert!(check_new_output(&taken, true).is_ok());
        assert!(check_new_output(&taken, false).is_err());
        assert!(check_new_output(&dir.path().join("no/such/folder/r.json"), false).is_err());
    }

    #[test]
    fn a_default_name_taken_in_the_same_second_gets_a_suffix() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("speed-T").to_string_lossy().into_owned();
        let at = |name: &str| dir.path().join(name);
        for taken in ["speed-T.raw.jsonl", "speed-T-2.raw.jsonl"] {
            std::fs::write(at(taken), "{}\n").unwrap();
        }
        let free = claim_first_free(&stem, ".raw.jsonl", "raw file", |_| false).unwrap();
        assert_eq!(free.path, at("speed-T-3.raw.jsonl"));
        let report = claim_first_free(&stem, ".json", "report", |_| false).unwrap();
        assert_eq!(report.path, at("speed-T.json"));
        // a name passed over is never created
        let skipped = claim_first_free(&stem, ".csv", "table", |p| p == at("speed-T.csv")).unwrap();
        assert_eq!(skipped.path, at("speed-T-2.csv"));
        assert!(!at("speed-T.csv").exists());
        // a given path is not claimed, nor created
        let (given, claim) = given_or_claimed(Some(&at("mine.json")), "x", ".json", "report").unwrap();
        assert_eq!((given, claim.is_none()), (at("mine.json"), true));
        assert!(!at("mine.json").exists());
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

    #[cfg(unix)]
    #[test]
    fn special_files_are_refused_and_links_to_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let fifo = std::ffi::CString::new(p("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("/dev/null", p("null")).unwrap();
        std::os::unix::fs::symlink("missing", p("dangling")).unwrap();
        std::fs::write(p("file"), "x").unwrap();
        std::os::unix::fs::symlink("file", p("link")).unwrap();
        let e = refuse_special(Some("--raw"), &p("fifo")).unwrap_err().to_string();
        assert!(e.contains("--raw") && e.ends_with("is not a regular file (a FIFO); laya-bench writes only regular files: choose another path"), "{e}");
        let e = refuse_special(None, &p("null")).unwrap_err().to_string();
        assert!(
            e.contains("a symbolic link to /dev/null, which is not a regular file (a character device)"),
            "{e}"
        );
        let e = check_folder("--output", Path::new("/dev/null")).unwrap_err().to_string();
        assert!(e.starts_with("--output /dev/null is not a regular file"), "{e}");
        assert!(refuse_special(None, &p("dangling")).unwrap_err().to_string().contains("does not exist"));
        assert!(refuse_special(None, &p("link")).is_ok() && refuse_special(None, &p("new")).is_ok());
        // --overwrite never lets one through
        assert!(refuse_existing(&p("fifo"), true).is_err());
        assert!(refuse_existing(&p("file"), true).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn the_same_file_is_found_by_its_inode() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("in.raw.jsonl"), "x").unwrap();
        std::fs::hard_link(p("in.raw.jsonl"), p("hard.raw.jsonl")).unwrap();
        std::os::unix::fs::symlink("in.raw.jsonl", p("soft.raw.jsonl")).unwrap();
        for other in ["hard.raw.jsonl", "soft.raw.jsonl"] {
            let e = check_new_files(&[("--raw", &p(other))], &[&p("in.raw.jsonl")], true).unwrap_err();
            assert!(e.to_string().contains("is the input"), "{other}: {e}");
        }
        assert_eq!(file_id(&p("hard.raw.jsonl")), file_id(&p("in.raw.jsonl")));
        assert_ne!(file_id(&p("new.raw.jsonl")), file_id(&p("in.raw.jsonl")));
    }

    #[test]
    fn a_claimed_default_name_takes_the_next_suffix_and_is_removed_unused() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("speed-T").to_string_lossy().into_owned();
        let mut files = OutputFiles {
            raw: PathBuf::from(format!("{stem}.raw.jsonl")),
            report: PathBuf::from(format!("{stem}.json")),
            markdown: None,
            csv: None,
            overwrite: false,
            stem: Some(stem.clone()),
        };
        // another run created the name after this one chose it: the check leaves that to the
        // claim, which takes the next suffix
        std::fs::write(&files.raw, "").unwrap();
        files.check(&[]).expect("a default name taken since it was chosen is not refused");
        let claim = files.claim().unwrap().expect("a default name is claimed");
        assert_eq!(files.raw, PathBuf::from(format!("{stem}-2.raw.jsonl")));
        assert_eq!(files.report, PathBuf::from(format!("{stem}-2.json")));
        assert!(files.raw.is_file());
        drop(claim);
        assert!(!files.raw.exists(), "an unused claim is removed");
        // a claim the run wrote to is kept
        let mut again = files.clone();
        let claim = again.claim().unwrap().unwrap();
        std::fs::write(&again.raw, "{}\n").unwrap();
        drop(claim);
        assert!(again.raw.is_file());
        // a given path is not claimed
        let mut given =
            OutputFiles::resolve(Some(dir.path().join("r.raw.jsonl")), None, None, None, false, "x");
        assert!(given.claim().unwrap().is_none() && !given.raw.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_raw_record_is_locked_and_never_a_special_file() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("r.raw.jsonl");
        let lock = lock_raw(&raw, false).unwrap();
        assert!(raw.is_file());
        // an existing file only with replace
        assert!(lock_raw(&raw, false).unwrap_err().to_string().contains("--overwrite"));
        drop(lock);
        let e = lock_raw(Path::new("/dev/full"), true).unwrap_err().to_string();
        assert!(e.contains("--raw /dev/full is not a regular file (a character device)"), "{e}");
    }
}
