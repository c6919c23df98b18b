//! The published Laya checkpoints by name: repository, pinned revisions and the sha256 of
//! their weights, with where each pin was read.
//!
//! Sources (PyPI wheels, read with `pip download --no-deps` and unzipped; nothing copied):
//! - laya-coreml 0.5.1, `laya_coreml/convert.py`: the source revision of each published
//!   conversion (the revision of the published laya-coreml study).
//! - laya-apple 1.7.0, `laya_apple/registry.py`: the same revisions and the sha256 of each
//!   `model.safetensors`; the same hashes are the `source_weights_sha256` of its parity goldens
//!   (`laya_apple/parity/goldens/{laya,laya-multilingual,laya-typed-decisions}.json`).
//! - laya-cuda 0.1.1.post1, `laya_cuda/models.json`: the same revisions for laya-multilingual
//!   and laya-typed-decisions; for laya it pins the later head `1c5edc17…`, whose
//!   `model.safetensors` laya-apple's registry says is byte-identical to `c5d78730…`'s.
//!
//! No source publishes a hash for the small files (configs, tokenizer): they are fixed by the
//! pinned commit only, and `verify` checks what they produce (token ids) against the goldens.

/// The files of a checkpoint that are fetched (the allow-list laya-apple and laya-cuda use).
pub const CHECKPOINT_FILES: [&str; 3] = ["model.safetensors", "rl_agent_config.json", "encoder/config.json"];
/// The folder whose every file is fetched too (`tokenizer/*`).
pub const TOKENIZER_DIR: &str = "tokenizer/";
/// The tokenizer files the host reads; a checkpoint without them is refused.
pub const TOKENIZER_FILES: [&str; 2] = ["tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"];

/// One pinned revision and who publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedRevision {
    /// The full commit id.
    pub commit: &'static str,
    /// Where the pin was read.
    pub source: &'static str,
}

/// A published checkpoint: short name, repository, pinned revisions (the first is the default)
/// and the sha256 of `model.safetensors` at those revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin {
    /// `laya`, `laya-multilingual`, `laya-typed-decisions`.
    pub name: &'static str,
    /// `owner/repo` on the hub.
    pub repo: &'static str,
    /// Pinned commits; `revisions[0]` is used when the spec names none.
    pub revisions: &'static [PinnedRevision],
    /// sha256 of `model.safetensors` at every pinned revision.
    pub weights_sha256: &'static str,
    /// Where the weight hash was read.
    pub weights_source: &'static str,
}

/// Every pinned checkpoint.
pub const PINS: [Pin; 3] = [
    Pin {
        name: "laya",
        repo: "convaiinnovations/laya",
        revisions: &[
            PinnedRevision { commit: "c5d78730f3493e4fe16d61507ef4b78eef7318cf", source: "laya-coreml 0.5.1 laya_coreml/convert.py; laya-apple 1.7.0 laya_apple/registry.py" },
            PinnedRevision {
                commit: "1c5edc17a7acd8701df6fc341c0d179f1c62c982",
                source: "laya-cuda 0.1.1.post1 laya_cuda/models.json (model.safetensors byte-identical to c5d78730 per laya-apple 1.7.0 laya_apple/registry.py)",
            },
        ],
        weights_sha256: "891102d372688fc2a094dac56a384bc537b87c63f21f9f3dac0be2b7cbc8d86c",
        weights_source: "laya-apple 1.7.0 laya_apple/registry.py and parity/goldens/laya.json source_weights_sha256",
    },
    Pin {
        name: "laya-multilingual",
        repo: "convaiinnovations/laya-multilingual",
        revisions: &[PinnedRevision {
            commit: "052592a15d198d9ad47da779604259b10b47b7aa",
            source: "laya-coreml 0.5.1 laya_coreml/convert.py; laya-apple 1.7.0 laya_apple/registry.py; laya-cuda 0.1.1.post1 laya_cuda/models.json",
        }],
        weights_sha256: "9d628fd971b700382ac6f65920a86f149777b2e748e0c955fb3b19695aa8f204",
        weights_source: "laya-apple 1.7.0 laya_apple/registry.py and parity/goldens/laya-multilingual.json source_weights_sha256",
    },
    Pin {
        name: "laya-typed-decisions",
        repo: "convaiinnovations/laya-typed-decisions",
        revisions: &[PinnedRevision {
            commit: "f9ab0b228f0fc0f14d873dbc99038f135c2da1b2",
            source: "laya-coreml 0.5.1 laya_coreml/convert.py; laya-apple 1.7.0 laya_apple/registry.py; laya-cuda 0.1.1.post1 laya_cuda/models.json",
        }],
        weights_sha256: "4fa56de72383a9d3efa9cfa78955733c81b9fc8067a587ca4beb82c78107a24e",
        weights_source: "laya-apple 1.7.0 laya_apple/registry.py and parity/goldens/laya-typed-decisions.json source_weights_sha256",
    },
];

/// The pin of a short name or of its repository id.
pub fn find(name_or_repo: &str) -> Option<&'static Pin> {
    PINS.iter().find(|p| p.name == name_or_repo || p.repo.eq_ignore_ascii_case(name_or_repo))
}

impl Pin {
    /// The pinned revision equal to `revision` (a full commit id), if any.
    pub fn pinned(&self, revision: &str) -> Option<&'static PinnedRevision> {
        self.revisions.iter().find(|r| r.commit == revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_repositories_find_their_pin() {
        assert_eq!(find("laya-multilingual").map(|p| p.repo), Some("convaiinnovations/laya-multilingual"));
        assert_eq!(find("convaiinnovations/laya").map(|p| p.name), Some("laya"));
        assert!(find("laya-english").is_none());
        assert!(find("someone/laya").is_none());
        // Hub repository ids are case-insensitive.
        assert_eq!(find("ConvaiInnovations/Laya").map(|p| p.name), Some("laya"));
    }

    #[test]
    fn every_pin_is_a_full_commit_and_a_full_sha256() {
        let hex = |s: &str, n: usize| {
            s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        for p in PINS {
            assert!(hex(p.weights_sha256, 64), "{}", p.name);
            assert!(!p.revisions.is_empty());
            for r in p.revisions {
                assert!(hex(r.commit, 40), "{} {}", p.name, r.commit);
                assert!(!r.source.is_empty());
            }
        }
        // laya has two pinned revisions with one weight hash; the default is the published study's.
        let laya = find("laya").map(|p| p.revisions[0].commit);
        assert_eq!(laya, Some("c5d78730f3493e4fe16d61507ef4b78eef7318cf"));
        assert!(find("laya").and_then(|p| p.pinned("1c5edc17a7acd8701df6fc341c0d179f1c62c982")).is_some());
    }
}
