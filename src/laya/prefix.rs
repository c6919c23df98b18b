//! The question-prefix cache of the published MLX baseline (laya-mlx 0.5.0, `cache_prompts`).
//!
//! What it caches: the tokenized question head (`[CLS] head [SEP] [MASK] opt… [SEP]`, its
//! marker positions and option stats) of [`super::prompt::build_head`], keyed by everything the
//! head depends on: question type, instructions, rendered options, option order and the head
//! budget (the tokenizer is fixed per [`PrefixCache`], as one cache belongs to one host). The
//! state is tokenized and appended on every call, exactly as without the cache, so results are
//! identical; only host tokenization time changes. Nothing of the encoder or its outputs is
//! cached. Bounded: the least recently used entry is dropped beyond the capacity (128 in the
//! baseline).

use std::collections::HashMap;
use std::sync::Arc;

use super::prompt::{build_head, encode_question, Head};
use super::question::{QType, Question};
use super::tokenizer::{Tokenizer, TokenizerError};

/// Entries the baseline keeps (`PrefixCache(capacity=128)`).
pub const DEFAULT_CAPACITY: usize = 128;

/// Everything a question head depends on, besides the tokenizer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PrefixKey {
    /// Head budget.
    pub head_max_len: usize,
    /// Question type.
    pub qtype: QType,
    /// Instructions as given.
    pub instructions: String,
    /// Rendered option texts in label-index order.
    pub options: Vec<String>,
    /// Explicit option order, if any.
    pub option_order: Option<Vec<usize>>,
}

impl PrefixKey {
    /// The key of `q` under budget `head_max_len`.
    pub fn of(q: &Question, head_max_len: usize) -> Self {
        PrefixKey {
            head_max_len,
            qtype: q.qtype,
            instructions: q.instructions.clone(),
            options: q.options.clone(),
            option_order: q.option_order.clone(),
        }
    }
}

/// A bounded least-recently-used map from [`PrefixKey`] to the built [`Head`].
#[derive(Debug)]
pub struct PrefixCache {
    capacity: usize,
    tick: u64,
    entries: HashMap<PrefixKey, (Arc<Head>, u64)>,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that built the head.
    pub misses: u64,
}

impl PrefixCache {
    /// An empty cache holding at most `capacity` heads (at least 1).
    pub fn new(capacity: usize) -> Self {
        PrefixCache { capacity: capacity.max(1), tick: 0, entries: HashMap::new(), hits: 0, misses: 0 }
    }

    /// Heads held now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The head of `q`: cached, or built with `tok` and cached.
    pub fn head(
        &mut self,
        tok: &Tokenizer,
        q: &Question,
        head_max_len: usize,
    ) -> Result<Arc<Head>, TokenizerError> {
        self.tick += 1;
        let key = PrefixKey::of(q, head_max_len);
        if let Some((head, used)) = self.entries.get_mut(&key) {
            *used = self.tick;
            self.hits += 1;
            return Ok(Arc::clone(head));
        }
        self.misses += 1;
        let head = Arc::new(build_head(tok, &encode_question(tok, q)?, q, head_max_len));
        self.entries.insert(key, (Arc::clone(&head), self.tick));
        while self.entries.len() > self.capacity {
            let oldest = self.entries.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.entries.remove(&k),
                None => break,
            };
        }
        Ok(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laya::bundle::{builtin_tokenizer, Bundle, ModelSpec};
    use crate::laya::host::{CallOptions, Host};
    use crate::laya::question::compile_questions;
    use serde_json::json;

    fn questions() -> Vec<Question> {
        compile_questions(&json!({
            "a": {"type": "choice", "instructions": "pick one", "criteria": ["red", "green", "blue"]},
            "b": {"type": "choice", "instructions": "pick two", "criteria": ["red", "green", "blue"]},
            "c": {"type": "score", "instructions": "pick one", "criteria": ["red", "green", "blue"]},
            "d": {"type": "noul", "instructions": "is it true"}
        }))
        .unwrap()
    }

    #[test]
    fn cached_heads_equal_built_heads_and_count_hits() {
        let tok = builtin_tokenizer().unwrap();
        let qs = questions();
        let mut cache = PrefixCache::new(DEFAULT_CAPACITY);
        for round in 0..2 {
            for q in &qs {
                let cached = cache.head(&tok, q, 64).unwrap();
                let built = build_head(&tok, &encode_question(&tok, q).unwrap(), q, 64);
                assert_eq!(*cached, built, "round {round} question {}", q.id);
            }
        }
        assert_eq!((cache.misses, cache.hits, cache.len()), (4, 4, 4));
        // The head budget is part of the key: a different budget is a different head.
        let small = cache.head(&tok, &qs[0], 8).unwrap();
        assert_eq!(cache.misses, 5);
        assert_eq!(*small, build_head(&tok, &encode_question(&tok, &qs[0]).unwrap(), &qs[0], 8));
    }

    #[test]
    fn keys_differ_in_every_field_the_head_depends_on() {
        let qs = questions();
        let k = |i: usize| PrefixKey::of(&qs[i], 64);
        assert_ne!(k(0), k(1), "instructions");
        assert_ne!(k(0), k(2), "question type");
        assert_ne!(PrefixKey::of(&qs[0], 64), PrefixKey::of(&qs[0], 65), "head budget");
        let mut reordered = qs[0].clone();
        reordered.option_order = Some(vec![2, 1, 0]);
        assert_ne!(PrefixKey::of(&reordered, 64), k(0), "option order");
        let mut renamed = qs[0].clone();
        renamed.options[1] = "teal".into();
        assert_ne!(PrefixKey::of(&renamed, 64), k(0), "options");
        // The question id is not part of the key: two ids asking the same thing share a head.
        let mut other_id = qs[0].clone();
        other_id.id = "zzz".into();
        assert_eq!(PrefixKey::of(&other_id, 64), k(0));
    }

    #[test]
    fn least_recently_used_head_is_dropped_beyond_capacity() {
        let tok = builtin_tokenizer().unwrap();
        let qs = questions();
        let mut cache = PrefixCache::new(2);
        cache.head(&tok, &qs[0], 64).unwrap();
        cache.head(&tok, &qs[1], 64).unwrap();
        cache.head(&tok, &qs[0], 64).unwrap(); // hit: qs[1] is now the oldest
        cache.head(&tok, &qs[2], 64).unwrap(); // evicts qs[1]
        assert_eq!(cache.len(), 2);
        assert_eq!((cache.misses, cache.hits), (3, 1));
        cache.head(&tok, &qs[0], 64).unwrap();
        assert_eq!((cache.misses, cache.hits), (3, 2), "qs[0] stayed");
        cache.head(&tok, &qs[1], 64).unwrap();
        assert_eq!((cache.misses, cache.hits), (4, 2), "qs[1] was dropped");
        assert_eq!(PrefixCache::new(0).capacity, 1, "a cache holds at least one head");
        assert!(PrefixCache::new(3).is_empty());
    }

    #[test]
    fn host_rows_are_identical_with_and_without_the_cache() {
        let bundle = Bundle::load(&ModelSpec::Builtin, |_| None).unwrap();
        // The portable engine's default shapes (`backend::registry::portable_shapes`).
        let shapes = crate::laya::batch::ShapeCaps {
            batch_size: 8,
            max_length: bundle.agent.max_len,
            min_length: 16,
            max_options: 255,
            mode: crate::laya::batch::ShapeMode::Range,
        };
        let plain = Host::new(&bundle.tokenizer, &bundle.agent, shapes.clone());
        let cached = Host::new(&bundle.tokenizer, &bundle.agent, shapes).with_prefix_cache(DEFAULT_CAPACITY);
        let qs = questions();
        let states = [json!("the sky is blue"), json!({"k": "v", "n": [1, 2]}), json!(["turn 1", "turn 2"])];
        let opts = CallOptions::default();
        for _ in 0..2 {
            let a = plain.prepare_rows(&states, &qs, &opts).unwrap();
            let b = cached.prepare_rows(&states, &qs, &opts).unwrap();
            assert_eq!(a, b);
        }
        let c = cached.prefix_cache.as_ref().unwrap().lock().unwrap();
        assert_eq!((c.misses, c.hits), (4, 4));
    }
}
