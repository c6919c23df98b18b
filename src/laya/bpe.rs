//! A fast, exact encoder for byte-level BPE `tokenizer.json` files (GPT-2 / ModernBERT style:
//! no normalizer, `ByteLevel` pre-tokenizer with its regex, `BPE` model without dropout or
//! subword affixes). It reproduces the `tokenizers` crate's ids for those files and is used only
//! when a file has exactly that structure; anything else goes through `tokenizers` itself.
//!
//! Why: the host path is inside every timed call, and `tokenizers` spends most of its time
//! building `Encoding` objects (token strings, offsets) the host never reads.

use std::collections::HashMap;
use std::sync::Mutex;

use regex::Regex;
use serde_json::Value;

/// The byte-level BPE tables of one `tokenizer.json`.
pub struct ByteLevelBpe {
    added: Vec<(String, u32)>,
    added_first_bytes: [bool; 256],
    add_prefix_space: bool,
    ignore_merges: bool,
    splitter: Regex,
    byte_char: [char; 256],
    vocab: HashMap<String, u32>,
    merges: HashMap<(u32, u32), (u32, u32)>,
    cache: Mutex<HashMap<String, Box<[u32]>>>,
}

const CACHE_LIMIT: usize = 65_536;

/// GPT-2's byte → printable character table.
fn bytes_to_unicode() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..256u32 {
        let printable =
            (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
        let c = if printable {
            b
        } else {
            n += 1;
            255 + n
        };
        table[b as usize] = char::from_u32(c).unwrap_or('\u{fffd}');
    }
    table
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn is_null_or_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

impl ByteLevelBpe {
    /// Build from `tokenizer.json` when it has the supported structure; `None` otherwise.
    pub fn from_json(json: &Value) -> Option<Self> {
        if !json.get("normalizer").is_none_or(Value::is_null) {
            return None;
        }
        let pre = json.get("pre_tokenizer")?;
        if str_field(pre, "type") != Some("ByteLevel")
            || pre.get("use_regex").and_then(Value::as_bool) != Some(true)
        {
            return None;
        }
        let add_prefix_space = pre.get("add_prefix_space").and_then(Value::as_bool).unwrap_or(true);
        let model = json.get("model")?;
        if str_field(model, "type") != Some("BPE")
            || !model.get("dropout").is_none_or(Value::is_null)
            || !is_null_or_empty(model.get("continuing_subword_prefix"))
            || !is_null_or_empty(model.get("end_of_word_suffix"))
            || model.get("byte_fallback").and_then(Value::as_bool).unwrap_or(false)
        {
            return None;
        }
        let ignore_merges = model.get("ignore_merges").and_then(Value::as_bool).unwrap_or(false);
        let vocab: HashMap<String, u32> = model
            .get("vocab")?
            .as_object()?
            .iter()
            .map(|(k, v)| Some((k.clone(), u32::try_from(v.as_u64()?).ok()?)))
            .collect::<Option<_>>()?;
        let mut merges = HashMap::new();
        for (rank, m) in model.get("merges")?.as_array()?.iter().enumerate() {
            let (a, b) = match m {
                Value::String(s) => s.split_once(' ')?,
                Value::Array(pair) if pair.len() == 2 => (pair[0].as_str()?, pair[1].as_str()?),
                _ => return None,
            };
            let merged = format!("{a}{b}");
            let (ia, ib, im) = (*vocab.get(a)?, *vocab.get(b)?, *vocab.get(&merged)?);
            merges.entry((ia, ib)).or_insert((rank as u32, im));
        }
        let mut added = Vec::new();
        for t in json.get("added_tokens").and_then(Value::as_array).into_iter().flatten() {
            for flag in ["single_word", "lstrip", "rstrip"] {
                if t.get(flag).and_then(Value::as_bool).unwrap_or(false) {
                    return None;
                }
            }
            let content = str_field(t, "content")?;
            if content.is_empty() {
                return None;
            }
            added.push((content.to_string(), u32::try_from(t.get("id")?.as_u64()?).ok()?));
        }
        let mut added_first_bytes = [false; 256];
        for (c, _) in &added {
            added_first_bytes[c.as_bytes()[0] as usize] = true;
        }
        let splitter =
            Regex::new(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+").ok()?;
        Some(Self {
            added,
            added_first_bytes,
            add_prefix_space,
            ignore_merges,
            splitter,
            byte_char: bytes_to_unicode(),
            vocab,
            merges,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Encode `text` (no special tokens added), appending ids to `out`. `None` if a character
    /// is outside the vocabulary (the caller then uses the full tokenizer).
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Option<()> {
        let start_len = out.len();
        let bytes = text.as_bytes();
        let mut seg_start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if self.added_first_bytes[bytes[i] as usize] {
                if let Some((len, id)) = self.added_at(&text[i..]) {
                    if seg_start < i && self.encode_segment(&text[seg_start..i], out).is_none() {
                        out.truncate(start_len);
                        return None;
                    }
                    out.push(id);
                    i += len;
                    seg_start = i;
                    continue;
                }
            }
            i += 1;
        }
        if seg_start < bytes.len() && self.encode_segment(&text[seg_start..], out).is_none() {
            out.truncate(start_len);
            return None;
        }
        Some(())
    }

    /// The longest added token at the start of `s` (leftmost-longest matching).
    fn added_at(&self, s: &str) -> Option<(usize, u32)> {
        self.added
            .iter()
            .filter(|(c, _)| s.starts_with(c.as_str()))
            .max_by_key(|(c, _)| c.len())
            .map(|(c, id)| (c.len(), *id))
    }

    fn encode_segment(&self, seg: &str, out: &mut Vec<u32>) -> Option<()> {
        // Like `tokenizers`, the prefix space goes on every segment between added tokens.
        let owned;
        let seg = if self.add_prefix_space && !seg.starts_with(' ') {
            owned = format!(" {seg}");
            owned.as_str()
        } else {
            seg
        };
        let mut pos = 0;
        while pos < seg.len() {
            let m = self.splitter.find_at(seg, pos)?;
            let mut end = m.end();
            // `\s+(?!\S)`: a whitespace run followed by a non-space gives its last char back.
            if end < seg.len() {
                let piece = &seg[m.start()..end];
                let mut chars = piece.chars();
                let last = chars.next_back();
                if chars.next().is_some() && piece.chars().all(char::is_whitespace) {
                    end -= last.map_or(0, char::len_utf8);
                }
            }
            self.encode_piece(&seg[m.start()..end], out)?;
            pos = end;
        }
        Some(())
    }

    fn encode_piece(&self, piece: &str, out: &mut Vec<u32>) -> Option<()> {
        if let Ok(cache) = self.cache.lock() {
            if let Some(ids) = cache.get(piece) {
                out.extend_from_slice(ids);
                return Some(());
            }
        }
        let mapped: String = piece.bytes().map(|b| self.byte_char[b as usize]).collect();
        let ids: Vec<u32> = match (self.ignore_merges, self.vocab.get(&mapped)) {
            (true, Some(&id)) => vec![id],
            _ => self.merge(&mapped)?,
        };
        out.extend_from_slice(&ids);
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(piece.to_string(), ids.into_boxed_slice());
        }
        Some(())
    }

    /// Apply merges by rank, leftmost first among equal ranks, one merge at a time.
    fn merge(&self, mapped: &str) -> Option<Vec<u32>> {
        let mut buf = [0u8; 4];
        let mut syms: Vec<u32> = mapped
            .chars()
            .map(|c| self.vocab.get(c.encode_utf8(&mut buf) as &str).copied())
            .collect::<Option<_>>()?;
        loop {
            let mut best: Option<(u32, usize, u32)> = None;
            for i in 0..syms.len().saturating_sub(1) {
                if let Some(&(rank, id)) = self.merges.get(&(syms[i], syms[i + 1])) {
                    if best.is_none_or(|(r, _, _)| rank < r) {
                        best = Some((rank, i, id));
                    }
                }
            }
            let Some((_, i, id)) = best else { break };
            syms[i] = id;
            syms.remove(i + 1);
        }
        Some(syms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_table_maps_printable_bytes_to_themselves() {
        let t = bytes_to_unicode();
        assert_eq!(t[b'a' as usize], 'a');
        assert_eq!(t[b' ' as usize], 'Ġ');
        assert_eq!(t[b'\n' as usize], 'Ċ');
        assert_eq!(t[0], 'Ā');
    }
}
