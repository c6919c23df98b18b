//! Bounded mutation fuzzing of the trace parsers: the fixtures are mutated with a seeded
//! PRNG (byte flips, truncations, tag duplication, splices) and every parser must return
//! `Ok` or `Err`, never panic. Runs at most `ITERATIONS` cases or `TIME_BUDGET`; for a
//! longer local run set `LAYA_TRACE_FUZZ_ITERATIONS` (and optionally `LAYA_TRACE_FUZZ_SEED`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use super::tests::{ANE, ANE_EMPTY, RENAMED, SIGNPOST, TOC, TRUNCATED};
use super::*;

const ITERATIONS: u64 = 2_000;
const TIME_BUDGET: Duration = Duration::from_secs(5);
const SEED: u64 = 0x1a7a_be4c_0001;

/// splitmix64: small, seeded, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// The byte range of a random `<...>` tag in `data`, if any.
fn random_tag(rng: &mut Rng, data: &[u8]) -> Option<(usize, usize)> {
    let from = rng.below(data.len());
    let start = from + data[from..].iter().position(|&b| b == b'<')?;
    let end = start + data[start..].iter().position(|&b| b == b'>')? + 1;
    Some((start, end))
}

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[&[u8]]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..=rng.below(3) {
        let len = data.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next() as u8;
            }
            2 => data.truncate(rng.below(len + 1)),
            3 => {
                if let Some((s, e)) = random_tag(rng, &data) {
                    let tag = data[s..e].to_vec();
                    let at = rng.below(data.len() + 1);
                    data.splice(at..at, tag);
                }
            }
            4 => {
                if let Some((s, e)) = random_tag(rng, &data) {
                    data.drain(s..e);
                }
            }
            5 if len > 0 => {
                let s = rng.below(len);
                let e = (s + rng.below(200)).min(len);
                let chunk = data[s..e].to_vec();
                let at = rng.below(data.len() + 1);
                data.splice(at..at, chunk);
            }
            6 => {
                let other = corpus[rng.below(corpus.len())];
                let s = rng.below(other.len());
                let e = (s + rng.below(400)).min(other.len());
                let at = rng.below(len + 1);
                data.splice(at..at, other[s..e].iter().copied());
            }
            7 => {
                let snippets: [&[u8]; 10] = [
                    b" ref=\"1\"",
                    b" id=\"1\"",
                    b"<sentinel/>",
                    b"18446744073709551615",
                    b"&amp;",
                    b"&bogus;",
                    b"<![CDATA[x]]>",
                    b"</row>",
                    b"<row>",
                    b"run[9]",
                ];
                let at = rng.below(len + 1);
                data.splice(at..at, snippets[rng.below(snippets.len())].iter().copied());
            }
            _ if len > 0 => {
                let s = rng.below(len);
                let e = (s + rng.below(64)).min(len);
                data.drain(s..e);
            }
            _ => {}
        }
    }
    data
}

/// Runs every parser on `bytes`; returns how many of the three parses succeeded.
fn exercise(bytes: &[u8]) -> usize {
    let toc = TraceToc::parse(bytes);
    let hardware = parse_interval_table(bytes, TableKind::NeuralEngineHardware);
    let signposts = parse_interval_table(bytes, TableKind::CoreMlSignpost);
    if let Ok(toc) = &toc {
        let _ = toc.select_run(None);
    }
    let run = TraceToc::parse_str(TOC).unwrap().runs.remove(0);
    if let Ok(hardware) = &hardware {
        let _ = summarize(&run, hardware, None);
        if let Ok(summary) = summarize(&run, hardware, None) {
            let _ = serde_json::to_string(&summary);
        }
    }
    if let Ok(signposts) = &signposts {
        let hw = parse_interval_table_str(ANE, TableKind::NeuralEngineHardware).unwrap();
        let _ = summarize(&run, &hw, Some(signposts));
    }
    usize::from(toc.is_ok()) + usize::from(hardware.is_ok()) + usize::from(signposts.is_ok())
}

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[test]
fn mutated_exports_never_panic_the_parsers() {
    let corpus: [&[u8]; 6] = [
        ANE.as_bytes(),
        SIGNPOST.as_bytes(),
        TOC.as_bytes(),
        ANE_EMPTY.as_bytes(),
        RENAMED.as_bytes(),
        TRUNCATED.as_bytes(),
    ];
    let custom = env_u64("LAYA_TRACE_FUZZ_ITERATIONS");
    let (iterations, budget) = match custom {
        Some(n) => (n, Duration::MAX),
        None => (ITERATIONS, TIME_BUDGET),
    };
    let seed = env_u64("LAYA_TRACE_FUZZ_SEED").unwrap_or(SEED);
    let mut rng = Rng(seed);
    let started = Instant::now();
    let mut cases = 0u64;
    let mut accepted = 0u64;
    while cases < iterations && started.elapsed() < budget {
        let base = corpus[rng.below(corpus.len())];
        let input = mutate(&mut rng, base, &corpus);
        let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&input)));
        match outcome {
            Ok(parsed) => accepted += u64::from(parsed > 0),
            Err(_) => panic!(
                "parser panicked on case {cases} (seed {seed:#x}); input:\n{}",
                String::from_utf8_lossy(&input)
            ),
        }
        cases += 1;
    }
    assert!(cases >= 100, "only {cases} cases ran within {budget:?}");
    // Some mutants must still parse, or the fuzzer never reaches the row and summary code.
    assert!(accepted * 50 >= cases, "only {accepted} of {cases} mutants parsed");
}

#[test]
fn unmutated_fixtures_parse_as_expected_kinds() {
    assert_eq!(exercise(ANE.as_bytes()), 1);
    assert!(parse_interval_table_str(ANE, TableKind::NeuralEngineHardware).is_ok());
    assert!(parse_interval_table_str(SIGNPOST, TableKind::CoreMlSignpost).is_ok());
    assert!(TraceToc::parse_str(TOC).is_ok());
}
