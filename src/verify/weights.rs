//! Whether the model under test has the weights the goldens were made from, and the
//! tolerances a backend is checked with (its precision's, or the user's overrides).

use super::{Goldens, Tolerance};
use crate::laya::bundle::{sha256_hex, Weights};

/// A published checkpoint the goldens name in `model`: its name and the sha256 of its
/// `model.safetensors` (the pin the hub module keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pin<'a> {
    /// The checkpoint's name (`laya-multilingual`).
    pub name: &'a str,
    /// sha256 of its weights.
    pub weights_sha256: &'a str,
}

/// The weights check: what the goldens expect, what the model has, and whether they match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightsCheck {
    /// sha256 of the weights the goldens were made from, and where that is known from (their own
    /// `source_weights_sha256`, else the pin of the checkpoint their `model` names).
    pub expected: Option<(String, String)>,
    /// sha256 of the model's weights (`None` for weights that are not one file: synthetic
    /// models, Core ML packages).
    pub found: Option<String>,
    /// The pin the goldens' `model` names, if any.
    pub pin_name: Option<String>,
}

impl WeightsCheck {
    /// The check of `found` against the goldens' own hash, else `pin`'s.
    pub fn new(goldens: &Goldens, pin: Option<Pin<'_>>, found: Option<String>) -> Self {
        let expected = match (&goldens.source_weights_sha256, pin) {
            (Some(g), _) => Some((g.clone(), "`source_weights_sha256`".to_string())),
            (None, Some(p)) => Some((
                p.weights_sha256.to_string(),
                format!("their `model` is `{}`, whose published model.safetensors this tool pins", p.name),
            )),
            (None, None) => None,
        };
        WeightsCheck { expected, found, pin_name: pin.map(|p| p.name.to_string()) }
    }

    /// Whether the weights are the goldens' (`None`: one of the two hashes is unknown).
    pub fn matches(&self) -> Option<bool> {
        match (&self.expected, &self.found) {
            (Some((g, _)), Some(m)) => Some(g == m),
            _ => None,
        }
    }

    /// The refusal when the weights are known to differ: what differs and what to do. `file`
    /// is the goldens file, `model` the `--model` spec as given.
    pub fn mismatch(&self, file: &str, model: &str) -> Option<String> {
        if self.matches() != Some(false) {
            return None;
        }
        let (sha, from) = self.expected.clone().unwrap_or_default();
        Some(format!(
            "{file}: the goldens were made from weights with sha256 {sha} ({from}), but {model}'s weights have sha256 {}; use the checkpoint they were made from{}, or pass --any-weights to see which cases these weights fail",
            self.found.as_deref().unwrap_or_default(),
            match &self.pin_name {
                Some(p) => format!(" (--model hub:{p} pins it)"),
                None => String::new(),
            }
        ))
    }
}

/// The user's tolerance overrides (`--logit-atol`, `--logit-rtol`, `--answer-tol`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrides {
    /// `--logit-atol`.
    pub logit_atol: Option<f64>,
    /// `--logit-rtol`.
    pub logit_rtol: Option<f64>,
    /// `--answer-tol`.
    pub answer_tol: Option<f64>,
}

impl Overrides {
    /// The first override that is not a finite number ≥ 0, as its flag and value.
    pub fn invalid(&self) -> Option<(&'static str, f64)> {
        [
            ("--logit-atol", self.logit_atol),
            ("--logit-rtol", self.logit_rtol),
            ("--answer-tol", self.answer_tol),
        ]
        .into_iter()
        .find_map(|(name, v)| v.filter(|x| !(x.is_finite() && *x >= 0.0)).map(|x| (name, x)))
    }

    /// Bad input (exit 2) naming the first override that is not a finite number ≥ 0.
    pub fn check(&self) -> Result<(), crate::error::Error> {
        match self.invalid() {
            Some((name, x)) => {
                Err(crate::error::Error::input(format!("{name} {x} must be a finite number ≥ 0")))
            }
            None => Ok(()),
        }
    }

    /// `base` with every given override in place of its value.
    pub fn apply(&self, base: Tolerance) -> Tolerance {
        Tolerance {
            logit_atol: self.logit_atol.unwrap_or(base.logit_atol),
            logit_rtol: self.logit_rtol.unwrap_or(base.logit_rtol),
            answer_tol: self.answer_tol.unwrap_or(base.answer_tol),
        }
    }
}

/// The sha256 of the model's weights where it has weights to hash (a safetensors file, the
/// embedded `builtin:tiny`); `None` for synthetic weights and a Core ML package.
pub fn weights_sha256(weights: &Weights) -> Option<String> {
    match weights {
        Weights::Safetensors(b) => Some(sha256_hex(b)),
        Weights::Static(b) => Some(sha256_hex(b)),
        Weights::Synthetic { .. } | Weights::CoreMl(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weights_hash_is_of_their_bytes_and_none_for_synthetic_ones() {
        // sha256("abc"), FIPS 180-2's example
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(weights_sha256(&Weights::Static(b"abc")).as_deref(), Some(abc));
        let file = Weights::Safetensors(std::sync::Arc::new(b"abc".to_vec()));
        assert_eq!(weights_sha256(&file).as_deref(), Some(abc));
        assert_eq!(weights_sha256(&Weights::Synthetic { seed: 1 }), None);
    }

    fn goldens(source: Option<&str>) -> Goldens {
        Goldens {
            file: "g.json".into(),
            sha256: String::new(),
            model: "laya-multilingual".into(),
            reference: "r".into(),
            source_weights_sha256: source.map(str::to_string),
            reference_packages: None,
            cases: Vec::new(),
        }
    }

    const PIN: Pin<'static> = Pin { name: "laya-multilingual", weights_sha256: "pinned" };

    #[test]
    fn the_goldens_own_hash_wins_over_the_pin_and_a_mismatch_says_what_to_do() {
        let own = "ab".repeat(32);
        let c = WeightsCheck::new(&goldens(Some(&own)), Some(PIN), Some(own.clone()));
        assert_eq!((c.matches(), c.mismatch("g.json", "m")), (Some(true), None));
        let c = WeightsCheck::new(&goldens(Some(&own)), Some(PIN), Some("cd".repeat(32)));
        assert_eq!(c.matches(), Some(false));
        let text = c.mismatch("g.json", "ckpt/").unwrap();
        assert!(text.starts_with(&format!("g.json: the goldens were made from weights with sha256 {own} (`source_weights_sha256`), but ckpt/'s weights have sha256 {}", "cd".repeat(32))), "{text}");
        assert!(text.contains("(--model hub:laya-multilingual pins it), or pass --any-weights"), "{text}");
    }

    #[test]
    fn without_their_own_hash_the_pin_decides_and_unknown_weights_are_not_refused() {
        let c = WeightsCheck::new(&goldens(None), Some(PIN), Some("pinned".into()));
        assert_eq!(c.matches(), Some(true));
        let c = WeightsCheck::new(&goldens(None), Some(PIN), Some("other".into()));
        assert!(c.mismatch("g", "m").unwrap().contains("whose published model.safetensors this tool pins"));
        // synthetic weights (no file hash) and goldens without any hash: nothing to compare
        assert_eq!(WeightsCheck::new(&goldens(None), Some(PIN), None).matches(), None);
        assert_eq!(WeightsCheck::new(&goldens(None), None, Some("x".into())).mismatch("g", "m"), None);
    }

    #[test]
    fn overrides_replace_only_what_is_given_and_refuse_negative_or_nan() {
        let base = Tolerance { logit_atol: 1.0, logit_rtol: 2.0, answer_tol: 3.0 };
        let o = Overrides { logit_rtol: Some(0.5), ..Overrides::default() };
        assert_eq!(o.apply(base), Tolerance { logit_atol: 1.0, logit_rtol: 0.5, answer_tol: 3.0 });
        assert_eq!(o.invalid(), None);
        assert_eq!(Overrides { answer_tol: Some(-1.0), ..o }.invalid(), Some(("--answer-tol", -1.0)));
        assert_eq!(
            Overrides { logit_atol: Some(f64::NAN), ..o }.invalid().map(|(n, _)| n),
            Some("--logit-atol")
        );
        assert!(o.check().is_ok());
        let e = Overrides { answer_tol: Some(-1.0), ..o }.check().unwrap_err();
        assert_eq!(e.to_string(), "--answer-tol -1 must be a finite number ≥ 0");
    }
}
