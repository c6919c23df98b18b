//! The repository stands alone: no doc, comment, script or workflow cites a design note kept
//! outside it. What the code follows is written in the project's own docs
//! (`docs/methodology.md`, `docs/host-path.md`, `docs/formats.md`, `docs/snake.md`).
//!
//! CHANGELOG.md is scanned too: its entries say what changed for a user, which never needs a
//! document the reader cannot open.

use std::fs;
use std::path::{Path, PathBuf};

/// The citations that must not appear, built from pieces so this file does not match itself.
fn needles() -> Vec<String> {
    let md = ".md";
    vec![
        ["shared", "/spec"].concat(),
        ["shared", "/seeds"].concat(),
        ["energy", "-protocol", md].concat(),
        ["host", "-contract", md].concat(),
        ["power", "-and-trace", md].concat(),
        ["performance", "-anchors", md].concat(),
        ["host", "-contract §"].concat(),
    ]
}

/// Folders walked whole (every text file in them), relative to the crate root.
const TREES: &[&str] = &["docs", "src", "scripts", "benches", "tests", "fuzz", ".github", ".ci"];

/// Single files at the crate root.
const ROOT_FILES: &[&str] = &["README.md", "CHANGELOG.md", "Cargo.toml", "build.rs"];

fn walk(dir: &Path, only_readmes: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            walk(&path, only_readmes, out);
        } else if kind.is_file() && (!only_readmes || path.file_name().is_some_and(|n| n == "README.md")) {
            out.push(path);
        }
    }
}

fn scanned_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ROOT_FILES.iter().map(|f| root.join(f)).filter(|p| p.is_file()).collect();
    for tree in TREES {
        walk(&root.join(tree), false, &mut files);
    }
    walk(&root.join("fixtures"), true, &mut files);
    files.sort();
    files
}

#[test]
fn no_file_cites_a_document_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let needles = needles();
    let files = scanned_files(root);
    assert!(
        files.iter().any(|p| p.ends_with("docs/methodology.md")),
        "the walk found no docs/methodology.md under {}",
        root.display()
    );
    let mut hits = Vec::new();
    for path in &files {
        // Text files only: a file that is not UTF-8 (a binary fixture) has no citations to read.
        let Ok(text) = fs::read_to_string(path) else { continue };
        for (i, line) in text.lines().enumerate() {
            for needle in &needles {
                if line.contains(needle.as_str()) {
                    let rel = path.strip_prefix(root).unwrap_or(path);
                    hits.push(format!("{}:{}: `{needle}` in: {}", rel.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "{} citation(s) of documents outside the repository; write what the reader needs into \
         the project's own docs (docs/methodology.md, docs/host-path.md, docs/formats.md, \
         docs/snake.md) and cite those instead:\n{}",
        hits.len(),
        hits.join("\n")
    );
}
