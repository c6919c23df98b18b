//! The fast byte-level BPE path must give exactly the `tokenizers` crate's ids.

use laya_bench::laya::bundle::builtin_tokenizer;

/// splitmix64, so the random texts are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn check(tok: &laya_bench::laya::tokenizer::Tokenizer, text: &str) {
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    tok.encode_into(text, &mut fast).unwrap();
    tok.encode_reference_into(text, &mut slow).unwrap();
    assert_eq!(fast, slow, "ids differ for {text:?}");
}

#[test]
fn fast_path_is_active_for_the_builtin_tokenizer() {
    assert!(builtin_tokenizer().unwrap().has_fast_path());
}

#[test]
fn fast_path_matches_tokenizers_on_corpus_lines_and_goldens() {
    let tok = builtin_tokenizer().unwrap();
    let corpus = include_str!("../../scripts/fixture_corpus.txt");
    for line in corpus.lines() {
        check(&tok, line);
    }
    check(&tok, corpus);
    let goldens: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/goldens/host.json")).unwrap();
    for case in goldens["cases"].as_array().unwrap() {
        let call = &case["call"];
        for state in std::iter::once(&call["state"]).chain(call["states"].as_array().into_iter().flatten()) {
            let text = match state {
                serde_json::Value::String(s) => s.clone(),
                other => laya_bench::laya::pyjson::dumps(other),
            };
            check(&tok, &text);
        }
    }
}

#[test]
fn fast_path_matches_tokenizers_on_random_unicode() {
    let tok = builtin_tokenizer().unwrap();
    let atoms = [
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\n\n",
        "\r\n",
        "\u{a0}",
        "\u{3000}",
        "\u{2009}",
        "a",
        "the",
        " the",
        "The",
        "refund",
        " customer",
        "'s",
        "'t",
        "'re",
        "'ve",
        "'m",
        "'ll",
        "'d",
        "'S",
        "'",
        "\"",
        "{\"",
        "\":",
        "1",
        "42",
        "3.14",
        "٣",
        "²",
        "Ⅻ",
        "-",
        "--",
        "...",
        "?!",
        "$",
        "€",
        "😀",
        "👍🏽",
        "é",
        "e\u{301}",
        "ß",
        "İ",
        "ǅ",
        "日本語",
        "Привет",
        "مرحبا",
        "עברית",
        "हिन्दी",
        "ไทย",
        "[MASK]",
        "[CLS]",
        "[SEP]",
        "[PAD]",
        "[UNK]",
        "[MASK",
        "MASK]",
        "[[MASK]]",
        "\u{0}",
        "\u{7f}",
        "\u{200b}",
        "\u{feff}",
        "_",
        "__init__",
        "0x1F",
        "a1b2",
        "ab12cd",
        " 12",
        "  x",
        "x  ",
        "\t\tx",
        " \n x",
    ];
    let mut rng = Rng(0x5eed);
    for _ in 0..20000 {
        let n = 1 + (rng.next() % 12) as usize;
        let text: String = (0..n).map(|_| rng.pick(&atoms)).collect();
        check(&tok, &text);
    }
}

#[test]
fn fast_path_matches_tokenizers_with_prefix_space_and_ignore_merges() {
    let base: serde_json::Value =
        serde_json::from_str(include_str!("../../fixtures/tiny/tokenizer/tokenizer.json")).unwrap();
    let config = include_bytes!("../../fixtures/tiny/tokenizer/tokenizer_config.json");
    for (prefix, ignore) in [(true, false), (false, true), (true, true)] {
        let mut json = base.clone();
        json["pre_tokenizer"]["add_prefix_space"] = serde_json::Value::Bool(prefix);
        json["model"]["ignore_merges"] = serde_json::Value::Bool(ignore);
        let bytes = serde_json::to_vec(&json).unwrap();
        let tok = laya_bench::laya::tokenizer::Tokenizer::from_bytes(&bytes, config, "variant").unwrap();
        assert!(tok.has_fast_path());
        let mut rng = Rng(0xabc);
        let atoms =
            ["x", " the", "[MASK]", "refund", "  ", "\n", "ab12", "é", "'s", "😀", "payment", "[SEP] y"];
        for _ in 0..1500 {
            let n = 1 + (rng.next() % 8) as usize;
            let text: String = (0..n).map(|_| rng.pick(&atoms)).collect();
            check(&tok, &text);
        }
    }
}
