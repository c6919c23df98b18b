//! A hardened pull reader over quick-xml for xctrace exports.
//!
//! It refuses DTDs and custom entities, decodes text and attributes as UTF-8 with the
//! predefined entities and character references resolved, caps the nesting depth, accepts
//! exactly one root element and reports a truncated document as an error.

use std::borrow::Cow;
use std::io::BufRead;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::error::{shorten, TraceError};
use crate::error::Error;

/// Deepest element nesting accepted; real exports nest about eight levels.
pub(crate) const MAX_DEPTH: usize = 64;

/// One simplified XML event.
#[derive(Debug)]
pub(crate) enum XmlEvent {
    /// An element opens (an empty element is reported as `Start` then `End`).
    Start {
        /// Element name as written (no namespace handling; exports use none).
        name: String,
        /// Attributes, decoded, in document order.
        attrs: Vec<(String, String)>,
    },
    /// The innermost open element closes.
    End,
    /// Character data (text, CDATA or a resolved entity/character reference).
    Text(String),
    /// The document ended after its root element closed.
    Eof,
}

/// Pull reader that yields [`XmlEvent`]s and enforces the hardening rules.
pub(crate) struct XmlEvents<R> {
    reader: Reader<R>,
    buf: Vec<u8>,
    depth: usize,
    pending_end: bool,
    root_seen: bool,
}

impl<R: BufRead> XmlEvents<R> {
    /// Wraps a buffered reader.
    pub(crate) fn new(inner: R) -> Self {
        let mut reader = Reader::from_reader(inner);
        let config = reader.config_mut();
        config.check_end_names = true;
        config.expand_empty_elements = false;
        config.trim_text(false);
        Self { reader, buf: Vec::new(), depth: 0, pending_end: false, root_seen: false }
    }

    /// Byte offset just after the last event.
    pub(crate) fn position(&self) -> u64 {
        self.reader.buffer_position()
    }

    fn malformed(&self, message: impl Into<String>) -> TraceError {
        TraceError::Malformed { position: self.reader.buffer_position(), message: message.into() }
    }

    fn open(&mut self, start: &BytesStart<'_>) -> Result<XmlEvent, TraceError> {
        if self.depth == 0 && self.root_seen {
            return Err(self.malformed("a second root element"));
        }
        if self.depth >= MAX_DEPTH {
            return Err(self.malformed(format!("elements nest deeper than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        self.root_seen = true;
        let name = utf8(start.name().as_ref()).map_err(|m| self.malformed(m.to_string()))?;
        let mut attrs = Vec::new();
        for attr in start.attributes() {
            let attr = attr.map_err(|e| self.malformed(format!("attribute: {e}")))?;
            let key = utf8(attr.key.as_ref()).map_err(|m| self.malformed(m.to_string()))?;
            let value = attr
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| self.malformed(format!("attribute `{key}`: {e}")))?;
            attrs.push((key, value.into_owned()));
        }
        Ok(XmlEvent::Start { name, attrs })
    }

    fn close(&mut self) -> Result<XmlEvent, TraceError> {
        if self.depth == 0 {
            return Err(self.malformed("an end tag without a start tag"));
        }
        self.depth -= 1;
        Ok(XmlEvent::End)
    }

    fn text(&self, text: Cow<'_, str>) -> Result<Option<XmlEvent>, TraceError> {
        if self.depth == 0 {
            if text.trim().is_empty() {
                return Ok(None);
            }
            return Err(self.malformed(format!("text outside the root element: {:?}", shorten(text.trim()))));
        }
        Ok(Some(XmlEvent::Text(text.into_owned())))
    }

    /// Returns the next event.
    pub(crate) fn next_event(&mut self) -> Result<XmlEvent, TraceError> {
        if self.pending_end {
            self.pending_end = false;
            return self.close();
        }
        loop {
            self.buf.clear();
            let event = match self.reader.read_event_into(&mut self.buf) {
                Ok(event) => event.into_owned(),
                Err(e) => {
                    return Err(TraceError::Malformed {
                        position: self.reader.error_position(),
                        message: e.to_string(),
                    })
                }
            };
            match event {
                Event::Start(start) => return self.open(&start),
                Event::Empty(start) => {
                    let event = self.open(&start)?;
                    self.pending_end = true;
                    return Ok(event);
                }
                Event::End(_) => return self.close(),
                Event::Text(text) => {
                    let decoded = text.xml10_content().map_err(|e| self.malformed(format!("text: {e}")))?;
                    if let Some(event) = self.text(decoded)? {
                        return Ok(event);
                    }
                }
                Event::CData(data) => {
                    let decoded = data.decode().map_err(|e| self.malformed(format!("CDATA: {e}")))?;
                    if let Some(event) = self.text(decoded)? {
                        return Ok(event);
                    }
                }
                Event::GeneralRef(reference) => {
                    let resolved = resolve_reference(&reference).map_err(|what| TraceError::Forbidden {
                        position: self.reader.buffer_position(),
                        what: what.to_string(),
                    })?;
                    if let Some(event) = self.text(Cow::Owned(resolved.to_string()))? {
                        return Ok(event);
                    }
                }
                Event::DocType(_) => {
                    return Err(TraceError::Forbidden {
                        position: self.reader.buffer_position(),
                        what: "a DOCTYPE declaration".to_owned(),
                    })
                }
                Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(self.malformed(format!(
                            "the document ends with {} element(s) still open (truncated file?)",
                            self.depth
                        )));
                    }
                    if !self.root_seen {
                        return Err(self.malformed("the document has no root element"));
                    }
                    return Ok(XmlEvent::Eof);
                }
            }
        }
    }

    /// Skips the rest of the element whose `Start` was just returned.
    pub(crate) fn skip_element(&mut self) -> Result<(), TraceError> {
        let mut open = 1usize;
        while open > 0 {
            match self.next_event()? {
                XmlEvent::Start { .. } => open += 1,
                XmlEvent::End => open -= 1,
                XmlEvent::Text(_) => {}
                XmlEvent::Eof => return Err(self.malformed("unexpected end of document")),
            }
        }
        Ok(())
    }
}

/// Resolves a character reference or one of the five predefined entities.
fn resolve_reference(reference: &quick_xml::events::BytesRef<'_>) -> Result<char, Error> {
    let name = reference.decode().map_err(|e| Error::input(format!("entity reference: {e}")))?;
    if reference.is_char_ref() {
        return match reference.resolve_char_ref() {
            Ok(Some(c)) => Ok(c),
            Ok(None) | Err(_) => {
                Err(Error::input(format!("invalid character reference &{};", shorten(&name))))
            }
        };
    }
    match name.as_ref() {
        "lt" => Ok('<'),
        "gt" => Ok('>'),
        "amp" => Ok('&'),
        "apos" => Ok('\''),
        "quot" => Ok('"'),
        other => Err(Error::input(format!("the custom entity reference &{};", shorten(other)))),
    }
}

fn utf8(bytes: &[u8]) -> Result<String, Error> {
    std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| Error::input("a name that is not UTF-8"))
}

/// Looks up an attribute by name.
pub(crate) fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(xml: &str) -> Result<Vec<String>, TraceError> {
        let mut reader = XmlEvents::new(xml.as_bytes());
        let mut out = Vec::new();
        loop {
            match reader.next_event()? {
                XmlEvent::Start { name, .. } => out.push(format!("<{name}>")),
                XmlEvent::End => out.push("</>".to_owned()),
                XmlEvent::Text(t) => out.push(t),
                XmlEvent::Eof => return Ok(out),
            }
        }
    }

    #[test]
    fn resolves_predefined_entities_and_character_references() {
        let got = events("<a>x &amp; &#65;&#x42;</a>").unwrap().concat();
        assert_eq!(got, "<a>x & AB</>");
    }

    #[test]
    fn rejects_doctype_and_custom_entities() {
        let dtd = events("<!DOCTYPE a [<!ENTITY e \"boom\">]><a>&e;</a>");
        assert!(matches!(dtd, Err(TraceError::Forbidden { .. })), "{dtd:?}");
        let custom = events("<a>&e;</a>");
        assert!(matches!(custom, Err(TraceError::Forbidden { .. })), "{custom:?}");
    }

    #[test]
    fn rejects_truncated_documents_and_second_roots() {
        assert!(matches!(events("<a><b>"), Err(TraceError::Malformed { .. })));
        assert!(matches!(events("<a/><b/>"), Err(TraceError::Malformed { .. })));
        assert!(matches!(events(""), Err(TraceError::Malformed { .. })));
        assert!(matches!(events("<a></b>"), Err(TraceError::Malformed { .. })));
    }

    #[test]
    fn rejects_nesting_deeper_than_the_cap() {
        let deep = "<a>".repeat(MAX_DEPTH + 1);
        assert!(matches!(events(&deep), Err(TraceError::Malformed { .. })));
    }

    #[test]
    fn reports_empty_elements_as_start_and_end() {
        assert_eq!(events("<a><b/></a>").unwrap(), ["<a>", "<b>", "</>", "</>"]);
    }
}
