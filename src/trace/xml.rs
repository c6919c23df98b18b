//! Streaming parser for xctrace `trace-query-result` table exports.
//!
//! Layout (see docs/formats.md §4 and `fixtures/trace/README.md`):
//! `trace-query-result / node[@xpath] / (schema[@name] / col / {mnemonic, name,
//! engineering-type}) then row*`. Each row holds one child element per column, in column
//! order; the element's tag is the column's engineering type. The first occurrence of a value
//! carries `id="N"`; a later identical value is an empty element with `ref="N"` (also for
//! values nested inside other values). `<sentinel/>` stands for a missing value. The element
//! text is the raw value (times are integer nanoseconds since the run start); `fmt` is the
//! display form.
//!
//! The parser resolves every `id`/`ref` in document order, maps row values to columns by
//! position, and keeps only the allow-listed fields of each row (timestamp, duration,
//! device, label, state) in a [`TraceInterval`]; every other column (threads, processes,
//! backtraces, arguments) is read only far enough to index its ids and is then dropped.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::error::{shorten, TraceError};
use super::reader::{attr, XmlEvent, XmlEvents, MAX_DEPTH};

/// Largest export file accepted, in bytes (one table of a 15 s trace is a few MB).
pub const MAX_EXPORT_BYTES: u64 = 256 * 1024 * 1024;

/// A start time at or above this value is Instruments' "n/a" sentinel (start times are
/// limited to 50 bits; the time types use their maximum value for n/a).
pub const START_TIME_NA_NS: u64 = (1 << 50) - 1;

/// The kinds of table the summary understands, each with its allow-listed schema names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableKind {
    /// The Neural Engine hardware-intervals table (global: no PID or model per row).
    NeuralEngineHardware,
    /// The Core ML signpost table (model load / prediction intervals).
    CoreMlSignpost,
}

/// How one allow-listed field is found among a schema's columns.
struct FieldRule {
    field: &'static str,
    engineering_types: &'static [&'static str],
    mnemonics: &'static [&'static str],
    required: bool,
}

const NO_RULE: FieldRule = FieldRule { field: "", engineering_types: &[], mnemonics: &[], required: false };

/// Rules for (timestamp, duration, device, label, state), in that order.
type FieldRules = [FieldRule; 5];

/// Every table's start time.
const START_RULE: FieldRule = FieldRule {
    field: "timestamp",
    engineering_types: &["start-time"],
    mnemonics: &["start"],
    required: true,
};

/// Every table's duration.
const DURATION_RULE: FieldRule = FieldRule {
    field: "duration",
    engineering_types: &["duration"],
    mnemonics: &["duration"],
    required: true,
};

const ANE_RULES: FieldRules = [
    START_RULE,
    DURATION_RULE,
    FieldRule {
        field: "device",
        engineering_types: &["ane-event-name"],
        mnemonics: &["channel-name"],
        required: false,
    },
    FieldRule {
        field: "label",
        engineering_types: &["formatted-label"],
        mnemonics: &["label"],
        required: false,
    },
    FieldRule { field: "state", engineering_types: &["gpu-state"], mnemonics: &["state"], required: false },
];

const SIGNPOST_RULES: FieldRules = [
    START_RULE,
    DURATION_RULE,
    NO_RULE,
    FieldRule { field: "label", engineering_types: &["coreml-model-name"], mnemonics: &[], required: false },
    FieldRule { field: "state", engineering_types: &["coreml-model-event"], mnemonics: &[], required: false },
];

impl TableKind {
    /// The schema names accepted for this kind (naming differs by Xcode version).
    pub fn schema_names(self) -> &'static [&'static str] {
        match self {
            TableKind::NeuralEngineHardware => &["ane-hw-intervals", "ane-hw-intervals-internal"],
            TableKind::CoreMlSignpost => &["coreml-os-signpost"],
        }
    }

    /// A short human name for messages.
    pub fn describe(self) -> &'static str {
        match self {
            TableKind::NeuralEngineHardware => "Neural Engine hardware-intervals",
            TableKind::CoreMlSignpost => "Core ML signpost",
        }
    }

    /// Whether `schema` is one of this kind's accepted schema names.
    pub fn accepts(self, schema: &str) -> bool {
        self.schema_names().contains(&schema)
    }

    fn rules(self) -> &'static FieldRules {
        match self {
            TableKind::NeuralEngineHardware => &ANE_RULES,
            TableKind::CoreMlSignpost => &SIGNPOST_RULES,
        }
    }
}

/// One column of a table's schema (metadata only, no row data).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    /// Short machine name, e.g. `start`.
    pub mnemonic: Option<String>,
    /// Display name, e.g. `Start`.
    pub name: Option<String>,
    /// Engineering type; also the tag of this column's row elements, e.g. `start-time`.
    pub engineering_type: Option<String>,
}

impl Column {
    fn describe(&self) -> String {
        format!(
            "{} ({})",
            self.mnemonic.as_deref().unwrap_or("?"),
            self.engineering_type.as_deref().unwrap_or("?")
        )
    }
}

/// One row reduced to the allow-listed fields; `None` is a missing or n/a value.
///
/// For the Neural Engine table: device = `ane-event-name`, label = `formatted-label`,
/// state = `gpu-state`. For the Core ML signpost table: label = `coreml-model-name`,
/// state = `coreml-model-event` ("Prediction", "Load", ...), and there is no device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceInterval {
    /// Start, in ns since the run start (`None`: sentinel, missing, or the n/a value).
    pub start_ns: Option<u64>,
    /// Duration in ns (`None`: sentinel, missing, or 0, which Instruments uses for n/a).
    pub duration_ns: Option<u64>,
    /// The hardware channel, e.g. "Apple Neural Engine".
    pub device: Option<String>,
    /// The interval's label, e.g. "Neural Engine Prediction" or a model name.
    pub label: Option<String>,
    /// The state or event, e.g. "Active" or "Prediction".
    pub state: Option<String>,
}

impl TraceInterval {
    /// The end in ns (start + duration), when both are known; saturates instead of wrapping.
    pub fn end_ns(&self) -> Option<u64> {
        Some(self.start_ns?.saturating_add(self.duration_ns?))
    }
}

/// One parsed table: its schema and its rows reduced to [`TraceInterval`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalTable {
    /// Which kind of table this is.
    pub kind: TableKind,
    /// The schema name as exported.
    pub schema: String,
    /// The node's `xpath` attribute, naming the TOC run and table it came from.
    pub node_xpath: Option<String>,
    /// The schema's columns, in order.
    pub columns: Vec<Column>,
    /// The rows, in document order.
    pub intervals: Vec<TraceInterval>,
}

impl IntervalTable {
    /// The 1-based run position named by the node xpath (`run[N]`), if any.
    pub fn run_position(&self) -> Option<u32> {
        let xpath = self.node_xpath.as_deref()?;
        let rest = &xpath[xpath.find("run[")? + 4..];
        rest[..rest.find(']')?].parse().ok()
    }
}

/// Parses one table of `kind` from a `trace-query-result` export read from `reader`.
///
/// Tables of other schemas in the same export are skipped; if none of `kind` is present
/// the error is [`TraceError::UnknownSchema`] listing the schemas found.
pub fn parse_interval_table<R: BufRead>(reader: R, kind: TableKind) -> Result<IntervalTable, TraceError> {
    let mut sink = IntervalSink::new(kind);
    parse_query_result(XmlEvents::new(reader), &mut sink)?;
    sink.finish()
}

/// Parses one table of `kind` from an export held in memory.
pub fn parse_interval_table_str(xml: &str, kind: TableKind) -> Result<IntervalTable, TraceError> {
    parse_interval_table(xml.as_bytes(), kind)
}

/// Reads and parses one table of `kind` from the export file at `path`.
pub fn read_interval_table(path: &Path, kind: TableKind) -> Result<IntervalTable, TraceError> {
    parse_interval_table(open_capped(path)?, kind)
}

/// Opens `path` for streaming, refusing files over [`MAX_EXPORT_BYTES`].
pub(crate) fn open_capped(path: &Path) -> Result<impl BufRead, TraceError> {
    let io = |source| TraceError::Io { path: path.to_owned(), source };
    let file = File::open(path).map_err(io)?;
    let bytes = file.metadata().map_err(io)?.len();
    if bytes > MAX_EXPORT_BYTES {
        return Err(TraceError::TooLarge { path: path.to_owned(), bytes, limit: MAX_EXPORT_BYTES });
    }
    Ok(BufReader::new(file.take(MAX_EXPORT_BYTES)))
}

/// A resolved row value: tag, display form, raw text and nested values.
#[derive(Debug)]
struct Value {
    tag: Box<str>,
    fmt: Option<Box<str>>,
    text: Box<str>,
    children: Vec<Rc<Value>>,
    /// Nesting height of the resolved tree (1 for a leaf); bounded by `MAX_DEPTH` so that
    /// refs cannot build trees deep enough to overflow the stack.
    height: usize,
}

impl Value {
    /// The display string of a text-like value: `fmt`, else its own text, else the first
    /// non-empty text nested inside (a `formatted-label` wraps a `<string>`).
    fn display(&self) -> Option<String> {
        if let Some(fmt) = self.fmt.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            return Some(fmt.to_owned());
        }
        self.raw_text()
    }

    fn raw_text(&self) -> Option<String> {
        let own = self.text.trim();
        if !own.is_empty() {
            return Some(own.to_owned());
        }
        self.children.iter().find_map(|c| c.raw_text())
    }
}

/// A value element still being read.
struct Frame {
    tag: String,
    id: Option<u64>,
    reference: Option<u64>,
    fmt: Option<String>,
    text: String,
    children: Vec<Rc<Value>>,
    position: u64,
}

/// The schema of one node, handed to the sink when it closes.
struct Schema {
    name: Option<String>,
    columns: Vec<Column>,
}

/// Receives the structure of a `trace-query-result` as it is read.
trait QuerySink {
    fn schema(&mut self, xpath: Option<String>, schema: Schema, position: u64) -> Result<(), TraceError>;
    fn row(&mut self, cells: Vec<Option<Rc<Value>>>, position: u64) -> Result<(), TraceError>;
}

#[derive(Clone, Copy)]
enum ColField {
    Mnemonic,
    Name,
    EngineeringType,
}

enum Place {
    Root,
    Node,
    Schema,
    Col,
    ColField(ColField),
    Row,
    Cell,
}

/// Walks a `trace-query-result` document and feeds schemas and rows to `sink`.
fn parse_query_result<R: BufRead>(
    mut events: XmlEvents<R>,
    sink: &mut dyn QuerySink,
) -> Result<(), TraceError> {
    match events.next_event()? {
        XmlEvent::Start { name, .. } if name == "trace-query-result" => {}
        XmlEvent::Start { name, .. } => {
            return Err(TraceError::WrongDocument { expected: "trace-query-result", found: shorten(&name) })
        }
        _ => {
            return Err(TraceError::Malformed {
                position: events.position(),
                message: "no root element".to_owned(),
            })
        }
    }
    let mut places = vec![Place::Root];
    let mut xpath: Option<String> = None;
    let mut schema: Option<Schema> = None;
    let mut schema_done = false;
    let mut field_text = String::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut cells: Vec<Option<Rc<Value>>> = Vec::new();
    let mut ids: HashMap<u64, Rc<Value>> = HashMap::new();
    let mut open_ids: HashSet<u64> = HashSet::new();

    loop {
        let position = events.position();
        let structure = |message: String| TraceError::Structure { position, message };
        match events.next_event()? {
            XmlEvent::Start { name, attrs } => {
                let Some(place) = places.last() else {
                    return Err(structure("an element after the root closed".to_owned()));
                };
                let next = match (place, name.as_str()) {
                    (Place::Root, "node") => {
                        xpath = attr(&attrs, "xpath").map(str::to_owned);
                        schema = None;
                        schema_done = false;
                        Place::Node
                    }
                    (Place::Node, "schema") => {
                        if schema.is_some() {
                            return Err(structure("a second <schema> in one <node>".to_owned()));
                        }
                        schema = Some(Schema {
                            name: attr(&attrs, "name").map(str::to_owned),
                            columns: Vec::new(),
                        });
                        Place::Schema
                    }
                    (Place::Node, "row") => {
                        if !schema_done {
                            return Err(structure("a <row> before the <schema>".to_owned()));
                        }
                        cells.clear();
                        Place::Row
                    }
                    (Place::Schema, "col") => {
                        if let Some(schema) = schema.as_mut() {
                            schema.columns.push(Column {
                                mnemonic: None,
                                name: None,
                                engineering_type: None,
                            });
                        }
                        Place::Col
                    }
                    (Place::Col, field @ ("mnemonic" | "name" | "engineering-type")) => {
                        field_text.clear();
                        Place::ColField(match field {
                            "mnemonic" => ColField::Mnemonic,
                            "name" => ColField::Name,
                            _ => ColField::EngineeringType,
                        })
                    }
                    (Place::Row | Place::Cell, _) => {
                        frames.push(open_frame(name, &attrs, position, &ids, &mut open_ids)?);
                        Place::Cell
                    }
                    _ => {
                        // Anything else (unknown wrappers, column documentation) is skipped.
                        events.skip_element()?;
                        continue;
                    }
                };
                places.push(next);
            }
            XmlEvent::Text(text) => match places.last() {
                Some(Place::ColField(_)) => field_text.push_str(&text),
                Some(Place::Cell) => {
                    if let Some(frame) = frames.last_mut() {
                        frame.text.push_str(&text);
                    }
                }
                Some(Place::Row) if !text.trim().is_empty() => {
                    return Err(structure(format!(
                        "text {:?} directly inside a <row>",
                        shorten(text.trim())
                    )));
                }
                _ => {}
            },
            XmlEvent::End => match places.pop() {
                Some(Place::ColField(field)) => {
                    let value = Some(field_text.trim().to_owned()).filter(|s| !s.is_empty());
                    if let Some(column) = schema.as_mut().and_then(|s| s.columns.last_mut()) {
                        match field {
                            ColField::Mnemonic => column.mnemonic = value,
                            ColField::Name => column.name = value,
                            ColField::EngineeringType => column.engineering_type = value,
                        }
                    }
                }
                Some(Place::Schema) => {
                    if let Some(done) = schema.take() {
                        sink.schema(xpath.clone(), done, position)?;
                    }
                    schema_done = true;
                }
                Some(Place::Cell) => {
                    let Some(frame) = frames.pop() else {
                        return Err(structure("a value closed twice".to_owned()));
                    };
                    let value = close_frame(frame, &mut ids, &mut open_ids)?;
                    match frames.last_mut() {
                        Some(parent) => parent.children.push(value),
                        None if &*value.tag == "sentinel" => cells.push(None),
                        None => cells.push(Some(value)),
                    }
                }
                Some(Place::Row) => sink.row(std::mem::take(&mut cells), position)?,
                Some(Place::Root) => {
                    return match events.next_event()? {
                        XmlEvent::Eof => Ok(()),
                        _ => Err(structure("content after the root element".to_owned())),
                    };
                }
                Some(Place::Node | Place::Col) => {}
                None => return Err(structure("an end tag after the root closed".to_owned())),
            },
            XmlEvent::Eof => {
                return Err(TraceError::Malformed {
                    position,
                    message: "the document ended inside the root element".to_owned(),
                })
            }
        }
    }
}

fn parse_id(attrs: &[(String, String)], key: &str, position: u64) -> Result<Option<u64>, TraceError> {
    match attr(attrs, key) {
        None => Ok(None),
        Some(text) => text.trim().parse().map(Some).map_err(|_| TraceError::Structure {
            position,
            message: format!("{key}={:?} is not a non-negative integer", shorten(text)),
        }),
    }
}

fn open_frame(
    tag: String,
    attrs: &[(String, String)],
    position: u64,
    ids: &HashMap<u64, Rc<Value>>,
    open_ids: &mut HashSet<u64>,
) -> Result<Frame, TraceError> {
    let id = parse_id(attrs, "id", position)?;
    let reference = parse_id(attrs, "ref", position)?;
    if id.is_some() && reference.is_some() {
        return Err(TraceError::Structure {
            position,
            message: format!("<{}> has both id and ref", shorten(&tag)),
        });
    }
    if let Some(id) = id {
        if ids.contains_key(&id) || !open_ids.insert(id) {
            return Err(TraceError::DuplicateId { id, position });
        }
    }
    Ok(Frame {
        tag,
        id,
        reference,
        fmt: attr(attrs, "fmt").map(str::to_owned),
        text: String::new(),
        children: Vec::new(),
        position,
    })
}

fn close_frame(
    frame: Frame,
    ids: &mut HashMap<u64, Rc<Value>>,
    open_ids: &mut HashSet<u64>,
) -> Result<Rc<Value>, TraceError> {
    let position = frame.position;
    if let Some(id) = frame.reference {
        if !frame.children.is_empty() || !frame.text.trim().is_empty() {
            return Err(TraceError::Structure {
                position,
                message: format!("<{} ref=\"{id}\"> is not empty", shorten(&frame.tag)),
            });
        }
        let Some(target) = ids.get(&id) else {
            return Err(if open_ids.contains(&id) {
                TraceError::RefCycle { id, position }
            } else {
                TraceError::UnknownRef { id, position }
            });
        };
        if *target.tag != *frame.tag {
            return Err(TraceError::RefTypeMismatch {
                id,
                used_as: shorten(&frame.tag),
                defined_as: shorten(&target.tag),
                position,
            });
        }
        return Ok(Rc::clone(target));
    }
    let height = 1 + frame.children.iter().map(|c| c.height).max().unwrap_or(0);
    if height > MAX_DEPTH {
        return Err(TraceError::Structure {
            position,
            message: format!("values nest deeper than {MAX_DEPTH} levels once refs are resolved"),
        });
    }
    let value = Rc::new(Value {
        tag: frame.tag.into(),
        fmt: frame.fmt.map(Into::into),
        text: frame.text.into(),
        children: frame.children,
        height,
    });
    if let Some(id) = frame.id {
        open_ids.remove(&id);
        ids.insert(id, Rc::clone(&value));
    }
    Ok(value)
}

/// Column positions of the five allow-listed fields.
struct ColumnMap {
    fields: [Option<usize>; 5],
}

impl ColumnMap {
    fn build(schema: &str, columns: &[Column], rules: &FieldRules) -> Result<Self, TraceError> {
        let mut fields = [None; 5];
        for (slot, rule) in fields.iter_mut().zip(rules.iter()) {
            if rule.field.is_empty() {
                continue;
            }
            let by_type = |c: &Column| {
                c.engineering_type.as_deref().is_some_and(|t| rule.engineering_types.contains(&t))
            };
            let by_mnemonic = |c: &Column| c.mnemonic.as_deref().is_some_and(|m| rule.mnemonics.contains(&m));
            // Several columns can share an engineering type (two durations): prefer the one
            // whose mnemonic also matches, then the first of the type, then a mnemonic match
            // on a column without an engineering type.
            *slot = columns
                .iter()
                .position(|c| by_type(c) && by_mnemonic(c))
                .or_else(|| columns.iter().position(by_type))
                .or_else(|| columns.iter().position(|c| c.engineering_type.is_none() && by_mnemonic(c)));
            if slot.is_none() && rule.required {
                return Err(TraceError::MissingColumn {
                    schema: schema.to_owned(),
                    field: rule.field,
                    found: columns.iter().map(Column::describe).collect(),
                });
            }
        }
        Ok(Self { fields })
    }
}

/// Turns the rows of the first table of one kind into [`TraceInterval`]s.
struct IntervalSink {
    kind: TableKind,
    found: Vec<String>,
    accepted: Vec<String>,
    table: Option<IntervalTable>,
    map: Option<ColumnMap>,
    /// Whether rows of the current node belong to the accepted table.
    active: bool,
    rows: u64,
}

impl IntervalSink {
    fn new(kind: TableKind) -> Self {
        Self { kind, found: Vec::new(), accepted: Vec::new(), table: None, map: None, active: false, rows: 0 }
    }

    fn finish(self) -> Result<IntervalTable, TraceError> {
        if self.accepted.len() > 1 {
            return Err(TraceError::MultipleTables { count: self.accepted.len(), schemas: self.accepted });
        }
        self.table.ok_or_else(|| TraceError::UnknownSchema {
            found: self.found,
            expected: self.kind.schema_names().iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    fn time(
        &self,
        value: Option<&Rc<Value>>,
        column: &Column,
        duration: bool,
    ) -> Result<Option<u64>, TraceError> {
        let Some(value) = value else { return Ok(None) };
        let invalid = |text: &str, reason| TraceError::InvalidValue {
            row: self.rows,
            column: column.describe(),
            value: shorten(text),
            reason,
        };
        if !value.children.is_empty() {
            return Err(invalid(&value.tag, "is a composite value where a time was expected"));
        }
        let text = value.text.trim();
        let ns: u64 = text.parse().map_err(|_| invalid(text, "is not an integer number of nanoseconds"))?;
        let not_available = if duration { ns == 0 || ns == u64::MAX } else { ns >= START_TIME_NA_NS };
        Ok((!not_available).then_some(ns))
    }
}

impl QuerySink for IntervalSink {
    fn schema(&mut self, xpath: Option<String>, schema: Schema, _position: u64) -> Result<(), TraceError> {
        let name = schema.name.unwrap_or_else(|| "(unnamed)".to_owned());
        self.found.push(name.clone());
        self.active = false;
        if !self.kind.accepts(&name) {
            return Ok(());
        }
        self.accepted.push(name.clone());
        if self.table.is_some() {
            return Ok(());
        }
        self.map = Some(ColumnMap::build(&name, &schema.columns, self.kind.rules())?);
        self.table = Some(IntervalTable {
            kind: self.kind,
            schema: name,
            node_xpath: xpath,
            columns: schema.columns,
            intervals: Vec::new(),
        });
        self.active = true;
        Ok(())
    }

    fn row(&mut self, cells: Vec<Option<Rc<Value>>>, position: u64) -> Result<(), TraceError> {
        if !self.active {
            return Ok(());
        }
        let (Some(table), Some(map)) = (self.table.as_ref(), self.map.as_ref()) else {
            return Ok(());
        };
        self.rows += 1;
        if cells.len() > table.columns.len() {
            return Err(TraceError::Structure {
                position,
                message: format!(
                    "row {} has {} values for {} columns",
                    self.rows,
                    cells.len(),
                    table.columns.len()
                ),
            });
        }
        let mut picked: [Option<&Rc<Value>>; 5] = [None; 5];
        for (slot, index) in picked.iter_mut().zip(map.fields.iter()) {
            let Some(index) = *index else { continue };
            // Missing trailing values read as missing, like a sentinel.
            let value = cells.get(index).and_then(Option::as_ref);
            if let (Some(value), Some(expected)) = (value, &table.columns[index].engineering_type) {
                if *value.tag != **expected {
                    return Err(TraceError::Structure {
                        position,
                        message: format!(
                            "row {}: value {} is a <{}> but column `{}` has engineering type {}",
                            self.rows,
                            index + 1,
                            shorten(&value.tag),
                            table.columns[index].describe(),
                            expected
                        ),
                    });
                }
            }
            *slot = value;
        }
        let column = |i: usize| map.fields[i].map(|c| &table.columns[c]);
        let start_ns = match column(0) {
            Some(c) => self.time(picked[0], c, false)?,
            None => None,
        };
        let duration_ns = match column(1) {
            Some(c) => self.time(picked[1], c, true)?,
            None => None,
        };
        let interval = TraceInterval {
            start_ns,
            duration_ns,
            device: picked[2].and_then(|v| v.display()),
            label: picked[3].and_then(|v| v.display()),
            state: picked[4].and_then(|v| v.display()),
        };
        if let Some(table) = self.table.as_mut() {
            table.intervals.push(interval);
        }
        Ok(())
    }
}
