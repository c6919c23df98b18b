//! The allowed module edges: which top-level module of `src/` may name which other one
//! (`use crate::x`, `crate::x::y` in code, `laya_bench::x` in `main.rs`). [`ALLOWED`] is the one
//! table; `docs/ARCHITECTURE.md` prints it (between the `edges:begin`/`edges:end` markers) as
//! [`render`] writes it. The tests walk every file of `src/` (tests and macOS leaves
//! included) and fail on any edge the table does not list, naming the file and line.
//!
//! A module is `src/foo.rs` or the folder `src/foo/`; `main.rs`, `lib.rs` and `cli.rs` are
//! their own. The module `*` lists the bottom modules every module may name.

/// Module → the modules it may name. An edge that goes up the layers or closes a cycle is
/// listed in [`EXCEPTIONS`] too, with its reason.
pub const ALLOWED: &[(&str, &[&str])] = &[
    ("*", &["error", "settings", "time"]),
    ("main", &["cli", "commands"]),
    ("lib", &[]),
    ("cli", &["model", "run"]),
    (
        "commands",
        &[
            "backend", "bounds", "cli", "energy", "fidelity", "host", "hub", "laya", "model", "power",
            "record", "report", "run", "snake", "stats", "summary", "trace", "verify",
        ],
    ),
    (
        "run",
        &[
            "backend", "bounds", "energy", "host", "hub", "laya", "model", "power", "record", "report",
            "stats", "summary",
        ],
    ),
    ("snake", &["backend", "laya", "model", "record", "report", "run", "stats"]),
    ("fidelity", &["backend", "bounds", "laya", "model", "record", "report", "run"]),
    ("verify", &["backend", "laya", "report"]),
    ("summary", &["energy", "host", "model", "power", "record", "report", "stats"]),
    ("trace", &["backend", "laya", "report"]),
    ("bounds", &["backend", "laya", "model", "report", "stats"]),
    ("report", &["backend", "energy", "host", "laya", "power", "record", "stats"]),
    ("record", &["backend", "energy", "host", "laya", "power", "stats"]),
    ("power", &["host"]),
    ("energy", &["power"]),
    ("backend", &["host", "hub", "laya", "model"]),
    ("laya", &[]),
    ("model", &["laya"]),
    ("stats", &[]),
    ("host", &[]),
    ("hub", &[]),
    ("settings", &[]),
    ("error", &[]),
    ("time", &[]),
    ("architecture", &[]),
];

/// Edges of [`ALLOWED`] that break the layering (a lower layer naming a higher one, or a
/// cycle), each with why it is still there. `(from, to, reason)`.
pub const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// The table as `docs/ARCHITECTURE.md` prints it between its markers.
pub fn render() -> String {
    let mut out = String::from("| module | may name | exceptions (reason) |\n|---|---|---|\n");
    for (from, to) in ALLOWED {
        let list = if to.is_empty() {
            "nothing".to_string()
        } else {
            to.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ")
        };
        let why: Vec<String> = EXCEPTIONS
            .iter()
            .filter(|(f, _, _)| f == from)
            .map(|(_, t, reason)| format!("`{t}`: {reason}"))
            .collect();
        let name = if *from == "*" { "every module".to_string() } else { format!("`{from}`") };
        out.push_str(&format!("| {name} | {list} | {} |\n", why.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{render, ALLOWED, EXCEPTIONS};
    use std::collections::{BTreeMap, BTreeSet};
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

    /// `src/foo.rs` and `src/foo/…` are `foo`.
    fn module_of(rel: &Path) -> String {
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        first.strip_suffix(".rs").unwrap_or(&first).to_string()
    }

    /// The module path of a file inside its top-level module, for `super::` chains:
    /// `backend/portable/amx.rs` → 3, `backend/portable/mod.rs` → 2, `cli.rs` → 1.
    fn file_depth(rel: &Path) -> usize {
        let n = rel.components().count();
        if rel.file_name().is_some_and(|f| f == "mod.rs") {
            n - 1
        } else {
            n
        }
    }

    /// The source with comments, string and char literals blanked (newlines kept, so byte
    /// offsets still give line numbers).
    fn code_only(src: &str) -> Vec<u8> {
        let b = src.as_bytes();
        let mut out = b.to_vec();
        let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
            for c in &mut out[from..to.min(b.len())] {
                if *c != b'\n' {
                    *c = b' ';
                }
            }
        };
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while i < b.len() {
            let rest = &b[i..];
            if rest.starts_with(b"//") {
                let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            } else if rest.starts_with(b"/*") {
                let (mut depth, mut j) = (0usize, i);
                while j < b.len() {
                    if b[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if b[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br"))
                && (i == 0 || !ident(b[i - 1]))
            {
                let start = i + usize::from(rest[0] == b'b') + 1;
                let hashes = b[start..].iter().take_while(|&&c| c == b'#').count();
                if b.get(start + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let body = start + hashes + 1;
                let end = b[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| body + p + close.len());
                blank(&mut out, i, end);
                i = end;
            } else if rest[0] == b'"' {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            } else if rest[0] == b'\'' {
                // A char literal ('x', '\n', '\u{1F600}'), not a lifetime ('a).
                let end = if rest.get(1) == Some(&b'\\') {
                    rest.iter().skip(3).position(|&c| c == b'\'').map(|p| i + 3 + p + 1)
                } else {
                    let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (rest.get(1 + len) == Some(&b'\'')).then_some(i + 2 + len)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            } else {
                i += 1;
            }
        }
        out
    }

    fn skip_ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }

    fn read_ident(b: &[u8], i: usize) -> (String, usize) {
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        (String::from_utf8_lossy(&b[i..j]).into_owned(), j)
    }

    /// After `::` at `i`: the first name of each path (`x` of `x::y`, `a` and `b` of
    /// `{a::c, b}`).
    fn first_names(b: &[u8], i: usize) -> Vec<String> {
        let i = skip_ws(b, i);
        if b.get(i) != Some(&b'{') {
            let (name, _) = read_ident(b, i);
            return vec![name];
        }
        let (mut names, mut depth, mut j, mut expect) = (Vec::new(), 0usize, i, true);
        while j < b.len() {
            match b[j] {
                b'{' => {
                    depth += 1;
                    expect = depth == 1;
                    j += 1;
                }
                b'}' => {
                    depth -= 1;
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                }
                b',' => {
                    expect = depth == 1;
                    j += 1;
                }
                c if expect && (c.is_ascii_alphabetic() || c == b'_') => {
                    let (name, end) = read_ident(b, j);
                    names.push(name);
                    expect = false;
                    j = end;
                }
                _ => j += 1,
            }
        }
        names
    }

    /// Whether the `{` at `at` opens an inline module (`mod x {`).
    fn opens_a_module(b: &[u8], at: usize) -> bool {
        let word_before = |end: usize| {
            let mut e = end;
            while e > 0 && b[e - 1].is_ascii_whitespace() {
                e -= 1;
            }
            let mut s = e;
            while s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_') {
                s -= 1;
            }
            (s, &b[s..e])
        };
        let (s, name) = word_before(at);
        !name.is_empty() && word_before(s).1 == b"mod"
    }

    /// Every (line, module named) of one file: `crate::x`, `$crate::x`, `laya_bench::x`, and
    /// `super::` chains that climb out of the file's top-level module.
    fn named_modules(src: &str, depth: usize) -> Vec<(usize, String)> {
        let b = code_only(src);
        let line_of = |at: usize| b[..at].iter().filter(|&&c| c == b'\n').count() + 1;
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut found = Vec::new();
        // Inline `mod x {` blocks deepen the `super::` chains inside them.
        let mut braces: Vec<bool> = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if !ident(b[i]) || (i > 0 && ident(b[i - 1])) {
                match b[i] {
                    b'{' => braces.push(opens_a_module(&b, i)),
                    b'}' => {
                        braces.pop();
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            let (word, end) = read_ident(&b, i);
            let after = skip_ws(&b, end);
            if !b[after..].starts_with(b"::") {
                i = end;
                continue;
            }
            match word.as_str() {
                "crate" | "laya_bench" => {
                    for name in first_names(&b, after + 2) {
                        found.push((line_of(i), name));
                    }
                }
                "super" => {
                    // Count the chain; only one that climbs past the file's module path
                    // (plus its inline modules) reaches the crate root.
                    let (mut supers, mut j) = (1, after + 2);
                    loop {
                        let k = skip_ws(&b, j);
                        let (w, e) = read_ident(&b, k);
                        let a = skip_ws(&b, e);
                        if w == "super" && b[a..].starts_with(b"::") {
                            supers += 1;
                            j = a + 2;
                        } else {
                            break;
                        }
                    }
                    let inline = braces.iter().filter(|&&m| m).count();
                    if supers >= depth + inline {
                        for name in first_names(&b, j) {
                            found.push((line_of(i), name));
                        }
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i = end;
        }
        found
    }

    /// The rows that apply to `from`: its own, and the `*` row unless `from` is in it.
    fn rows_of(from: &str) -> impl Iterator<Item = &'static str> + '_ {
        let everyone: &[&str] = ALLOWED.iter().find(|(f, _)| *f == "*").map_or(&[], |(_, l)| *l);
        let shared = if everyone.contains(&from) { &[][..] } else { everyone };
        let own = ALLOWED.iter().find(|(f, _)| *f == from).map_or(&[][..], |(_, l)| *l);
        own.iter().chain(shared).copied()
    }

    fn allowed(from: &str, to: &str) -> bool {
        from == to || rows_of(from).any(|t| t == to)
    }

    fn src_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
    }

    /// `src/` and every Rust file below it.
    fn src_files() -> (PathBuf, Vec<PathBuf>) {
        let root = src_root();
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        (root, files)
    }

    /// Every edge of `src/`: (from, to) → the places that make it.
    fn edges() -> BTreeMap<(String, String), Vec<String>> {
        let (root, files) = src_files();
        assert!(files.len() > 100, "found only {} files under {}", files.len(), root.display());
        let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            let from = module_of(rel);
            let src = std::fs::read_to_string(&file).unwrap();
            for (line, to) in named_modules(&src, file_depth(rel)) {
                if to != from && to != "self" {
                    edges
                        .entry((from.clone(), to))
                        .or_default()
                        .push(format!("src/{}:{line}", rel.display()));
                }
            }
        }
        edges
    }

    /// Every top-level module of `src/`.
    fn modules() -> BTreeSet<String> {
        std::fs::read_dir(src_root())
            .unwrap()
            .map(|e| module_of(Path::new(&e.unwrap().file_name())))
            .collect()
    }

    #[test]
    fn every_module_edge_is_in_the_table() {
        let bad: Vec<String> = edges()
            .into_iter()
            .filter(|((from, to), _)| !allowed(from, to))
            .map(|((from, to), at)| format!("{from} -> {to}: {}", at.join(", ")))
            .collect();
        assert!(
            bad.is_empty(),
            "module edges not in architecture::ALLOWED (move the code down, or add the edge with \
             its reason to EXCEPTIONS and docs/ARCHITECTURE.md):\n{}",
            bad.join("\n")
        );
    }

    #[test]
    fn the_table_names_every_module_and_each_exception_is_still_needed() {
        let listed: BTreeSet<&str> = ALLOWED.iter().map(|(m, _)| *m).collect();
        assert_eq!(listed.len(), ALLOWED.len(), "a module is listed twice");
        let missing: Vec<String> = modules().into_iter().filter(|m| !listed.contains(m.as_str())).collect();
        assert!(missing.is_empty(), "modules of src/ missing from architecture::ALLOWED: {missing:?}");
        for (_, to) in ALLOWED {
            for t in *to {
                assert!(listed.contains(t), "architecture::ALLOWED names `{t}`, which it does not list");
            }
        }
        let edges = edges();
        for (from, to, reason) in EXCEPTIONS {
            assert!(allowed(from, to), "exception {from} -> {to} is not in ALLOWED");
            assert!(!reason.is_empty());
            assert!(
                edges.contains_key(&(from.to_string(), to.to_string())),
                "exception {from} -> {to} is no longer used: remove it from EXCEPTIONS and ALLOWED"
            );
        }
    }

    #[test]
    fn the_scanner_sees_every_spelling() {
        let src = "use crate::{a::b, c::{d, e}, self};\nfn f() { crate :: g::h(); }\n\
                   // crate::comment\nconst S: &str = \"crate::string\";\nconst C: char = '\"'; \
                   use crate::i;\nmod t { use super::super::j::k; fn l<'a>(x: &'a u8) { laya_bench::m::n(); } }\n\
                   /* crate::block */ $crate::o::p!();";
        let names: Vec<(usize, String)> = named_modules(src, 1);
        let want = [(1, "a"), (1, "c"), (1, "self"), (2, "g"), (5, "i"), (6, "j"), (6, "m"), (7, "o")];
        assert_eq!(names, want.map(|(l, n)| (l, n.to_string())).to_vec());
        // One `super` from a file at depth 2 stays inside its module.
        assert!(named_modules("use super::x;", 2).is_empty());
        assert_eq!(named_modules("use super::super::x;", 2), vec![(1, "x".to_string())]);
        assert!(!allowed("laya", "commands"), "the table lets laya name commands");
    }

    /// Without its exceptions the table is a layering: no cycle, and the bottom modules every
    /// module may name name nothing.
    #[test]
    fn the_table_without_its_exceptions_has_no_cycle() {
        let is_exception = |f: &str, t: &str| EXCEPTIONS.iter().any(|(ef, et, _)| *ef == f && *et == t);
        let next = |m: &str| -> Vec<&'static str> {
            rows_of(m).filter(|t| *t != m && !is_exception(m, t)).collect()
        };
        for (_, bottoms) in ALLOWED.iter().filter(|(f, _)| *f == "*") {
            for bottom in *bottoms {
                let own = ALLOWED.iter().find(|(f, _)| f == bottom).map_or(&[][..], |(_, l)| *l);
                assert!(own.is_empty(), "every module may name `{bottom}`, so it names nothing: {own:?}");
            }
        }
        // Depth-first search from each module, reporting the first cycle found.
        fn visit(
            m: &'static str,
            path: &mut Vec<&'static str>,
            done: &mut BTreeSet<&'static str>,
            next: &dyn Fn(&str) -> Vec<&'static str>,
        ) {
            if let Some(at) = path.iter().position(|p| *p == m) {
                panic!("the table without EXCEPTIONS has a cycle: {} -> {m}", path[at..].join(" -> "));
            }
            if !done.insert(m) {
                return;
            }
            path.push(m);
            for t in next(m) {
                visit(t, path, done, next);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        for (m, _) in ALLOWED {
            visit(m, &mut Vec::new(), &mut done, &next);
        }
    }

    /// Where code outside `src/record/` parses raw records itself, `(line, what)`: a serde
    /// deserializer typed with the raw record's `Record` or `Header` (turbofish or a typed
    /// `let`), or a JSON value picked by the records' tag key (`["record"]`, `.get("record")`),
    /// which every kind-by-name match of raw lines needs. Comments and string literals are
    /// skipped, and a file that defines its own `Record` or `Header` (the snake recording)
    /// deserializes its own type, not the raw one.
    fn parses_raw_records(src: &str) -> Vec<(usize, String)> {
        let code = code_only(src);
        let text = String::from_utf8_lossy(&code).into_owned();
        let line_of = |i: usize| code[..i].iter().filter(|&&c| c == b'\n').count() + 1;
        let mut found = Vec::new();
        for ty in ["Record", "Header"] {
            let defines = |kw: &str| {
                let def = format!("{kw} {ty}");
                text.match_indices(&def).any(|(i, _)| {
                    !text[i + def.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                })
            };
            if defines("struct") || defines("enum") {
                continue;
            }
            for de in ["from_str", "from_slice", "from_reader", "from_value"] {
                for (i, _) in text.match_indices(de) {
                    let rest = text[i + de.len()..].trim_start();
                    // `from_str::<crate::record::Record>(…)`
                    let turbofish = rest
                        .strip_prefix("::")
                        .map(str::trim_start)
                        .and_then(|r| r.strip_prefix('<'))
                        .and_then(|r| r.split_once('>'))
                        .is_some_and(|(t, _)| t.rsplit("::").next().map(str::trim) == Some(ty));
                    // `let r: Record = serde_json::from_str(…)`
                    let statement = text[..i].rsplit([';', '{', '}']).next().unwrap_or("");
                    let typed_let = statement.split_once(':').is_some_and(|(l, t)| {
                        l.trim_start().starts_with("let ")
                            && t.split('=').next().and_then(|t| t.trim().rsplit("::").next()) == Some(ty)
                    });
                    if turbofish || typed_let {
                        found.push((line_of(i), format!("deserializes `{ty}` with `{de}`")));
                    }
                }
            }
        }
        // The tag key, read as code: the bracket or the call survives `code_only`, the
        // literal does not.
        for (pattern, at) in [("[\"record\"]", 0), ("get(\"record\")", 0)] {
            for (i, _) in src.match_indices(pattern) {
                if code[i + at] == pattern.as_bytes()[at] {
                    found.push((line_of(i), format!("picks lines by the raw tag key `{pattern}`")));
                }
            }
        }
        found
    }

    /// Only `src/record/` parses raw records; everything else reads them through its types.
    #[test]
    fn only_the_record_module_parses_raw_records() {
        let (root, files) = src_files();
        let mut bad = Vec::new();
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            if module_of(rel) == "record" {
                continue;
            }
            let src = std::fs::read_to_string(&file).unwrap();
            for (line, what) in parses_raw_records(&src) {
                bad.push(format!("src/{}:{line}: {what}", rel.display()));
            }
        }
        assert!(
            bad.is_empty(),
            "code outside src/record/ parses raw records (read them with crate::record::read and \
             match its types):\n{}",
            bad.join("\n")
        );
    }

    #[test]
    fn the_raw_record_scanner_sees_parsing_and_skips_comments_strings_and_own_types() {
        let bad = "use crate::record::Record;\nfn f(t: &str) {\n    let r = serde_json::from_str::<Record>(t);\n\
                   let h: crate::record::Header = serde_json::from_value(v);\n    if v[\"record\"] == \"block\" {}\n\
                   let k = v.get(\"record\");\n}";
        let lines: Vec<usize> = parses_raw_records(bad).into_iter().map(|(l, _)| l).collect();
        assert_eq!(lines, vec![3, 4, 5, 6]);
        let fine =
            "// serde_json::from_str::<Record>(t), v[\"record\"]\nconst S: &str = \"from_str::<Header>\";\n\
                    fn g(r: &crate::record::Record) -> &str { r.kind() }";
        assert!(parses_raw_records(fine).is_empty());
        let own = "enum RecordError { B }\nenum Record { A }\nfn f(t: &str) { let _ = serde_json::from_str::<Record>(t); }";
        assert!(parses_raw_records(own).is_empty());
        let near = "enum RecordError { B }\nfn f(t: &str) { let _ = serde_json::from_str::<Record>(t); }";
        assert_eq!(parses_raw_records(near).len(), 1, "a type named like `Record` is not its own `Record`");
    }

    #[test]
    fn architecture_md_prints_the_table() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let (begin, end) = ("<!-- edges:begin -->\n", "<!-- edges:end -->");
        let printed = doc
            .split_once(begin)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(table, _)| table)
            .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no {begin:?} … {end:?} markers"));
        let want = render();
        assert!(
            printed == want,
            "docs/ARCHITECTURE.md's module table is not architecture::render(); paste this between \
             the markers:\n{want}"
        );
    }

    /// Whether a file of `src/` (relative path) is library code: not the command edge
    /// (`commands/`, `main.rs`, `cli.rs`) and not a test file.
    fn is_library(rel: &Path) -> bool {
        let name = rel.file_name().unwrap().to_string_lossy();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy();
        !(first == "commands"
            || first == "main.rs"
            || first == "cli.rs"
            || name == "tests.rs"
            || name.ends_with("_tests.rs"))
    }

    /// The lines of `src` (its code before a `#[cfg(test)]` at column 0) that spell a
    /// `Result` whose error type is `String`.
    fn string_results(src: &str) -> Vec<usize> {
        let code = code_only(src);
        let end = code
            .windows(13)
            .enumerate()
            .find(|(i, w)| *w == b"#[cfg(test)]\n" && (*i == 0 || code[i - 1] == b'\n'))
            .map_or(code.len(), |(i, _)| i);
        let code = &code[..end];
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut lines = Vec::new();
        let mut i = 0;
        while let Some(p) = code[i..].windows(7).position(|w| w == b"Result<") {
            let at = i + p;
            i = at + 7;
            if at > 0 && ident(code[at - 1]) {
                continue;
            }
            // The last top-level argument of `Result<…>` (`->` is not a closing bracket).
            let (mut depth, mut j, mut last) = (1usize, i, None);
            while j < code.len() && depth > 0 {
                match code[j] {
                    b'<' | b'(' | b'[' => depth += 1,
                    b'>' if code[j - 1] != b'-' => depth -= 1,
                    b')' | b']' => depth -= 1,
                    b',' if depth == 1 => last = Some(j + 1),
                    _ => {}
                }
                j += 1;
            }
            // (`io::Result<String>` has one argument: no error type to check)
            let Some(last) = last else { continue };
            let error: String = String::from_utf8_lossy(&code[last..j.saturating_sub(1)])
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            if error == "String" || error == "std::string::String" {
                lines.push(code[..at].iter().filter(|&&c| c == b'\n').count() + 1);
            }
        }
        lines
    }

    #[test]
    fn the_string_error_scanner_sees_every_spelling() {
        let src = "fn a() -> Result<(), String> {}\nfn b(f: impl Fn() -> Result<Vec<(u8, u8)>, \n String>) {}\n\
                   fn c() -> Result<u8, Error> {}\n// fn d() -> Result<(), String>\nstatic E: &str = \"Result<(), String>\";\n\
                   fn f() -> io::Result<String> {}\nfn g() -> Result<String, Box<dyn Fn() -> String>> {}\n\
                   fn h() -> Result<Option<String>, std::string::String> {}\nfn k() -> MyResult<u8, String> {}\n\
                   #[cfg(test)]\nmod tests { fn t() -> Result<(), String> {} }\n";
        assert_eq!(string_results(src), [1, 2, 9]);
    }

    #[test]
    fn no_library_module_returns_a_string_error() {
        let (root, files) = src_files();
        let mut bad = Vec::new();
        for file in files {
            let rel = file.strip_prefix(&root).unwrap();
            let shown = rel.display().to_string().replace('\\', "/");
            if !is_library(rel) {
                continue;
            }
            let src = std::fs::read_to_string(&file).unwrap();
            bad.extend(string_results(&src).into_iter().map(|line| format!("src/{shown}:{line}")));
        }
        assert!(
            bad.is_empty(),
            "library code returns `Result<_, String>` (use the module's typed error, or \
             crate::error::Error, so that the failure keeps its kind and its causes):\n{}",
            bad.join("\n")
        );
    }
}
