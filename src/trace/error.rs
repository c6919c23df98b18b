//! The error type shared by the xctrace export parsers and the trace summary.

use std::path::PathBuf;

/// Everything that can go wrong while reading an xctrace export or summarizing it.
///
/// Each variant is one kind of failure; messages name the place in the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The export file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that was being read.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// The export is larger than the parser accepts.
    #[error(
        "too large: {path} has {bytes} bytes, over the {limit}-byte limit; export one table \
         with `xctrace export --xpath` instead of the whole trace"
    )]
    TooLarge {
        /// The file that was too large.
        path: PathBuf,
        /// Its size in bytes (at least; reading stops past the limit).
        bytes: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The bytes are not well-formed XML (syntax, encoding, truncation, nesting).
    #[error("malformed XML at byte {position}: {message}")]
    Malformed {
        /// Byte offset where the problem was noticed.
        position: u64,
        /// What was wrong.
        message: String,
    },
    /// The XML uses a feature that xctrace exports never use and that the parser refuses
    /// (a DTD, a custom entity).
    #[error("forbidden XML at byte {position}: {what}; xctrace exports never contain it")]
    Forbidden {
        /// Byte offset of the forbidden markup.
        position: u64,
        /// The forbidden construct.
        what: String,
    },
    /// The document is well-formed XML but not the kind of export that was expected.
    #[error(
        "wrong document: expected an xctrace {expected} export (root <{expected}>), found root \
         <{found}>"
    )]
    WrongDocument {
        /// The expected root element.
        expected: &'static str,
        /// The root element found.
        found: String,
    },
    /// The export breaks the trace-query-result structure (rows before a schema, a row
    /// with more values than columns, a value whose element does not match its column).
    #[error("structure: at byte {position}: {message}")]
    Structure {
        /// Byte offset where the problem was noticed.
        position: u64,
        /// What was wrong.
        message: String,
    },
    /// Two elements carry the same `id` in one export.
    #[error("duplicate id: id=\"{id}\" is defined again at byte {position}; ids are unique in one export")]
    DuplicateId {
        /// The repeated id.
        id: u64,
        /// Byte offset of the second definition.
        position: u64,
    },
    /// A `ref` names no element defined earlier in the document.
    #[error("unknown ref: ref=\"{id}\" at byte {position} names no earlier element")]
    UnknownRef {
        /// The id referred to.
        id: u64,
        /// Byte offset of the referring element.
        position: u64,
    },
    /// A `ref` names an element that is still open around it, which would make a cycle.
    #[error("ref cycle: ref=\"{id}\" at byte {position} names an element that encloses it")]
    RefCycle {
        /// The id referred to.
        id: u64,
        /// Byte offset of the referring element.
        position: u64,
    },
    /// A `ref` element's tag differs from the tag of the element it names.
    #[error("ref type mismatch: <{used_as} ref=\"{id}\"> at byte {position} names a <{defined_as}>")]
    RefTypeMismatch {
        /// The id referred to.
        id: u64,
        /// The tag of the referring element.
        used_as: String,
        /// The tag of the element that defined the id.
        defined_as: String,
        /// Byte offset of the referring element.
        position: u64,
    },
    /// A value of an allow-listed column cannot be read (a time that is not an integer).
    #[error("invalid value: row {row}, column `{column}`: {value:?} {reason}")]
    InvalidValue {
        /// 1-based row number within the table.
        row: u64,
        /// The column's mnemonic (or engineering type).
        column: String,
        /// The offending raw text (shortened).
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The export holds no table of an expected schema (unknown or renamed schema).
    #[error(
        "unknown schema: expected a table of schema {expected:?}, found tables {found:?}; \
         export the table the TOC lists, or extend the allow-list if Xcode renamed it"
    )]
    UnknownSchema {
        /// Schema names of the tables found in the export, in document order.
        found: Vec<String>,
        /// Schema names that would have been accepted.
        expected: Vec<String>,
    },
    /// An accepted schema lacks a column the summary needs (a renamed column).
    #[error("missing column: schema `{schema}` has no `{field}` column; columns found: {found:?}")]
    MissingColumn {
        /// The schema name.
        schema: String,
        /// The allow-listed field that has no column.
        field: &'static str,
        /// The columns found, as `mnemonic (engineering-type)`.
        found: Vec<String>,
    },
    /// The export holds more than one table of the expected kind; runs and tables are never
    /// combined.
    #[error(
        "multiple tables: the export holds {count} tables of schema {schemas:?}; export one \
         table of one run per file"
    )]
    MultipleTables {
        /// How many accepted tables were found.
        count: usize,
        /// Their schema names.
        schemas: Vec<String>,
    },
    /// A TOC field has a value that cannot be read.
    #[error("invalid TOC: field `{field}` has value {value:?}: {reason}")]
    InvalidToc {
        /// The TOC element or attribute.
        field: &'static str,
        /// The offending text (shortened).
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The TOC holds no run.
    #[error("no run: the TOC lists no <run>; was the recording empty?")]
    NoRun,
    /// The TOC holds several runs and none was chosen; runs are never combined.
    #[error(
        "multiple runs: the TOC lists runs {numbers:?}; choose one with --run N (runs are never combined)"
    )]
    MultipleRuns {
        /// The run numbers found.
        numbers: Vec<u32>,
    },
    /// The chosen run number is not in the TOC.
    #[error("run not found: the TOC has no run number {number}; runs found: {numbers:?}")]
    RunNotFound {
        /// The run number asked for.
        number: u32,
        /// The run numbers found.
        numbers: Vec<u32>,
    },
    /// A table export comes from a different run than the TOC run chosen.
    #[error(
        "run mismatch: the {table} export comes from run position {table_run} but the TOC run \
         chosen is at position {toc_run}; runs are never combined"
    )]
    RunMismatch {
        /// Which table (hardware or signpost).
        table: &'static str,
        /// 1-based run position named in the export's node xpath.
        table_run: u32,
        /// 1-based position of the chosen run in the TOC.
        toc_run: u32,
    },
    /// A table of one kind was passed where another kind was needed.
    #[error("wrong table: expected a {expected} table, got schema `{found}`")]
    WrongTable {
        /// The kind needed.
        expected: &'static str,
        /// The schema of the table given.
        found: String,
    },
    /// One of several input files failed: which option gave it, and why.
    #[error("{option} {}: {source}", path.display())]
    Input {
        /// The command-line option that named the file (`--toc-xml`, ...).
        option: &'static str,
        /// The file.
        path: PathBuf,
        /// What went wrong in it.
        source: Box<TraceError>,
    },
}

/// Shortens untrusted text for an error message.
pub(crate) fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(MAX).collect();
        out.push('…');
        out
    }
}
