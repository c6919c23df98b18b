//! Parser for the xctrace table of contents (`xctrace export --toc`).
//!
//! Layout (see docs/formats.md §4): `trace-toc / run[@number] / info /
//! {target / process[@type, @name, @pid] or all-processes, summary / {start-date, end-date,
//! duration, end-reason, instruments-version, template-name, ...}}`, then
//! `processes / process`, then `data / table[@schema, ...]`.
//!
//! Only the run facts the summary reports are kept. The target's `environment` (which can
//! hold secrets), the device's name and identifiers, and the `processes` list (with paths)
//! are never read into memory.

use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{shorten, TraceError};
use super::reader::{attr, XmlEvent, XmlEvents};
use super::xml::{open_capped, TableKind};

/// The parsed table of contents: every run in the trace, in document order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceToc {
    /// The runs, in document order.
    pub runs: Vec<TocRun>,
}

/// The process a recording targeted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetProcess {
    /// How it was targeted: `attached`, `launched`, or `all-processes`.
    pub attach_type: Option<String>,
    /// The process name.
    pub name: Option<String>,
    /// The process id.
    pub pid: Option<u32>,
}

/// One table listed for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TocTable {
    /// 1-based position among the run's tables (the `table[N]` of a node xpath).
    pub position: u32,
    /// The table's schema name.
    pub schema: String,
}

/// One recording run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TocRun {
    /// 1-based position among the TOC's runs (the `run[N]` of a node xpath).
    pub position: u32,
    /// The run's `number` attribute.
    pub number: Option<u32>,
    /// The recording template, e.g. "Core ML".
    pub template_name: Option<String>,
    /// The recording's duration in seconds.
    pub duration_s: Option<f64>,
    /// The start date as exported (ISO-8601 with offset).
    pub start_date: Option<String>,
    /// The end date as exported (ISO-8601 with offset).
    pub end_date: Option<String>,
    /// Why recording stopped, e.g. "Time limit reached".
    pub end_reason: Option<String>,
    /// The Instruments version that recorded.
    pub instruments_version: Option<String>,
    /// The targeted process.
    pub target_process: Option<TargetProcess>,
    /// The tables recorded, in order.
    pub tables: Vec<TocTable>,
}

impl TocRun {
    fn new(position: u32, number: Option<u32>) -> Self {
        Self {
            position,
            number,
            template_name: None,
            duration_s: None,
            start_date: None,
            end_date: None,
            end_reason: None,
            instruments_version: None,
            target_process: None,
            tables: Vec::new(),
        }
    }

    /// The schema names of this run's tables, in order.
    pub fn schema_names(&self) -> Vec<String> {
        self.tables.iter().map(|t| t.schema.clone()).collect()
    }

    /// The first table of `kind`, if the run recorded one.
    pub fn table_of(&self, kind: TableKind) -> Option<&TocTable> {
        self.tables.iter().find(|t| kind.accepts(&t.schema))
    }

    /// The `xctrace export --xpath` expression for this run's table of `kind`, built only
    /// from the run number and an allow-listed schema name found in the TOC.
    pub fn export_xpath(&self, kind: TableKind) -> Option<String> {
        let number = self.number?;
        let table = self.table_of(kind)?;
        Some(format!("/trace-toc/run[@number=\"{number}\"]/data/table[@schema=\"{}\"]", table.schema))
    }
}

impl TraceToc {
    /// Parses a TOC export read from `reader`.
    pub fn parse<R: BufRead>(reader: R) -> Result<Self, TraceError> {
        parse_toc(XmlEvents::new(reader))
    }

    /// Parses a TOC export held in memory.
    pub fn parse_str(xml: &str) -> Result<Self, TraceError> {
        Self::parse(xml.as_bytes())
    }

    /// Reads and parses the TOC export file at `path`.
    pub fn read(path: &Path) -> Result<Self, TraceError> {
        Self::parse(open_capped(path)?)
    }

    /// Chooses one run: `number` if given, else the only run; runs are never combined.
    pub fn select_run(&self, number: Option<u32>) -> Result<&TocRun, TraceError> {
        let numbers = || self.runs.iter().filter_map(|r| r.number).collect::<Vec<_>>();
        match (number, self.runs.as_slice()) {
            (_, []) => Err(TraceError::NoRun),
            (None, [only]) => Ok(only),
            (None, _) => Err(TraceError::MultipleRuns { numbers: numbers() }),
            (Some(n), runs) => runs
                .iter()
                .find(|r| r.number == Some(n))
                .ok_or_else(|| TraceError::RunNotFound { number: n, numbers: numbers() }),
        }
    }
}

fn invalid(field: &'static str, value: &str, reason: &'static str) -> TraceError {
    TraceError::InvalidToc { field, value: shorten(value), reason }
}

fn parse_u32(field: &'static str, value: &str) -> Result<u32, TraceError> {
    value.trim().parse().map_err(|_| invalid(field, value, "is not a non-negative integer"))
}

fn parse_toc<R: BufRead>(mut events: XmlEvents<R>) -> Result<TraceToc, TraceError> {
    match events.next_event()? {
        XmlEvent::Start { name, .. } if name == "trace-toc" => {}
        XmlEvent::Start { name, .. } => {
            return Err(TraceError::WrongDocument { expected: "trace-toc", found: shorten(&name) })
        }
        _ => {
            return Err(TraceError::Malformed {
                position: events.position(),
                message: "no root element".to_owned(),
            })
        }
    }
    let mut toc = TraceToc { runs: Vec::new() };
    // Element names from the root's child down to the current element.
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    loop {
        match events.next_event()? {
            XmlEvent::Start { name, attrs } => {
                let parent: Vec<&str> = path.iter().map(String::as_str).collect();
                match (parent.as_slice(), name.as_str()) {
                    ([], "run") => {
                        let number =
                            attr(&attrs, "number").map(|n| parse_u32("run/@number", n)).transpose()?;
                        let position = u32::try_from(toc.runs.len() + 1).unwrap_or(u32::MAX);
                        toc.runs.push(TocRun::new(position, number));
                    }
                    (["run", "info", "target"], "process" | "all-processes") => {
                        let pid =
                            attr(&attrs, "pid").map(|p| parse_u32("target/process/@pid", p)).transpose()?;
                        let attach_type = if name == "all-processes" {
                            Some("all-processes".to_owned())
                        } else {
                            attr(&attrs, "type").map(str::to_owned)
                        };
                        if let Some(run) = toc.runs.last_mut() {
                            run.target_process = Some(TargetProcess {
                                attach_type,
                                name: attr(&attrs, "name").map(str::to_owned),
                                pid,
                            });
                        }
                    }
                    (["run", "data"], "table") => {
                        if let (Some(run), Some(schema)) = (toc.runs.last_mut(), attr(&attrs, "schema")) {
                            let position = u32::try_from(run.tables.len() + 1).unwrap_or(u32::MAX);
                            run.tables.push(TocTable { position, schema: schema.to_owned() });
                        }
                    }
                    ([], _)
                    | (["run"], "info" | "data")
                    | (["run", "info"], "target" | "summary")
                    | (["run", "info", "summary"], _) => {}
                    _ => {
                        // environment, device, processes and anything unknown: never read.
                        events.skip_element()?;
                        continue;
                    }
                }
                path.push(name);
                text.clear();
            }
            XmlEvent::Text(t) => text.push_str(&t),
            XmlEvent::End => {
                let Some(name) = path.pop() else {
                    return match events.next_event()? {
                        XmlEvent::Eof => Ok(toc),
                        _ => Err(TraceError::Malformed {
                            position: events.position(),
                            message: "content after the root element".to_owned(),
                        }),
                    };
                };
                let in_summary = path.len() == 3 && path[1] == "info" && path[2] == "summary";
                if in_summary {
                    if let Some(run) = toc.runs.last_mut() {
                        store_summary_field(run, &name, text.trim())?;
                    }
                }
                text.clear();
            }
            XmlEvent::Eof => {
                return Err(TraceError::Malformed {
                    position: events.position(),
                    message: "the document ended inside the root element".to_owned(),
                })
            }
        }
    }
}

fn store_summary_field(run: &mut TocRun, name: &str, value: &str) -> Result<(), TraceError> {
    let value_opt = Some(value.to_owned()).filter(|v| !v.is_empty());
    match name {
        "template-name" => run.template_name = value_opt,
        "start-date" => run.start_date = value_opt,
        "end-date" => run.end_date = value_opt,
        "end-reason" => run.end_reason = value_opt,
        "instruments-version" => run.instruments_version = value_opt,
        "duration" => {
            let seconds: f64 = value
                .parse()
                .map_err(|_| invalid("summary/duration", value, "is not a number of seconds"))?;
            if !seconds.is_finite() || seconds < 0.0 {
                return Err(invalid(
                    "summary/duration",
                    value,
                    "is not a finite, non-negative number of seconds",
                ));
            }
            run.duration_s = Some(seconds);
        }
        _ => {}
    }
    Ok(())
}
