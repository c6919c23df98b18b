//! The checkpoint's tokenizer: `tokenizer.json` plus the special tokens named in
//! `tokenizer_config.json` (docs/host-path.md §1.5). Encodes never add special tokens.

use serde_json::Value;

/// A tokenizer folder that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// `tokenizer.json` does not parse as a tokenizers file.
    #[error("{file}: not a valid tokenizers file ({detail}); re-export it with the `tokenizers` library")]
    Load { file: String, detail: String },
    /// `tokenizer_config.json` is not JSON.
    #[error("{file}: not valid JSON ({detail})")]
    Config { file: String, detail: String },
    /// A required special token is absent or not in the vocabulary.
    #[error(
        "{file}: Tokenizer is missing a valid {name}; set `{name}` to a token of tokenizer.json's vocabulary"
    )]
    MissingSpecial { file: String, name: &'static str },
    /// Encoding failed inside the tokenizer.
    #[error("tokenizer failed to encode text: {0}")]
    Encode(String),
}

/// One special token: its text and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Special {
    /// Token text, e.g. `[MASK]`.
    pub text: String,
    /// Token id.
    pub id: u32,
}

/// The checkpoint tokenizer with its four special tokens resolved.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    fast: Option<super::bpe::ByteLevelBpe>,
    /// `[CLS]`.
    pub cls: Special,
    /// `[SEP]`.
    pub sep: Special,
    /// `[PAD]`.
    pub pad: Special,
    /// `[MASK]`.
    pub mask: Special,
    vocab_size: usize,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size)
            .field("cls", &self.cls)
            .field("sep", &self.sep)
            .field("pad", &self.pad)
            .field("mask", &self.mask)
            .finish()
    }
}

impl Tokenizer {
    /// Build from the bytes of `tokenizer.json` and `tokenizer_config.json`; `dir` names them.
    pub fn from_bytes(
        tokenizer_json: &[u8],
        tokenizer_config: &[u8],
        dir: &str,
    ) -> Result<Self, TokenizerError> {
        let json_file = format!("{dir}/tokenizer.json");
        let config_file = format!("{dir}/tokenizer_config.json");
        let mut inner = tokenizers::Tokenizer::from_bytes(tokenizer_json)
            .map_err(|e| TokenizerError::Load { file: json_file.clone(), detail: e.to_string() })?;
        inner.with_padding(None);
        inner
            .with_truncation(None)
            .map_err(|e| TokenizerError::Load { file: json_file, detail: e.to_string() })?;
        let config: Value = serde_json::from_slice(tokenizer_config)
            .map_err(|e| TokenizerError::Config { file: config_file.clone(), detail: e.to_string() })?;
        let special = |name: &'static str| -> Result<Special, TokenizerError> {
            let value = config.get(name);
            let text = match value {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Object(o)) => o.get("content").and_then(Value::as_str).map(str::to_string),
                _ => None,
            };
            let missing = || TokenizerError::MissingSpecial { file: config_file.clone(), name };
            let text = text.ok_or_else(missing)?;
            let id = inner.token_to_id(&text).ok_or_else(missing)?;
            Ok(Special { text, id })
        };
        let cls = special("cls_token")?;
        let sep = special("sep_token")?;
        let pad = special("pad_token")?;
        let mask = special("mask_token")?;
        let vocab_size = inner.get_vocab_size(true);
        let fast = serde_json::from_slice::<Value>(tokenizer_json)
            .ok()
            .and_then(|json| super::bpe::ByteLevelBpe::from_json(&json));
        Ok(Self { inner, fast, cls, sep, pad, mask, vocab_size })
    }

    /// Encode `text` without special tokens, appending the ids to `out`.
    pub fn encode_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
        if let Some(fast) = &self.fast {
            if fast.encode_into(text, out).is_some() {
                return Ok(());
            }
        }
        self.encode_reference_into(text, out)
    }

    /// Whether the fast byte-level BPE path is active for this tokenizer.
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// Encode through the `tokenizers` crate itself (the fast path's oracle).
    pub fn encode_reference_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), TokenizerError> {
        let enc = self.inner.encode_fast(text, false).map_err(|e| TokenizerError::Encode(e.to_string()))?;
        out.extend_from_slice(enc.get_ids());
        Ok(())
    }

    /// Encode `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut out = Vec::new();
        self.encode_into(text, &mut out)?;
        Ok(out)
    }

    /// The token text of an id (for `--explain`).
    pub fn id_to_token(&self, id: u32) -> String {
        self.inner.id_to_token(id).unwrap_or_else(|| format!("<{id}>"))
    }

    /// Vocabulary size including added tokens.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }
}
