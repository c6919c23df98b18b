//! Lossless JSON for readings: JSON has no NaN or infinity, and serde_json would write them as
//! `null`, which is neither the reading nor readable as a number. A non-finite value is
//! written as the string `"NaN"`, `"inf"` or `"-inf"` and read back as that value, so a bad
//! reading stays in the raw record exactly as it was received.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Number(f64),
    Text(String),
}

fn to_repr(v: f64) -> Repr {
    if v.is_finite() {
        Repr::Number(v)
    } else if v.is_nan() {
        Repr::Text("NaN".into())
    } else if v > 0.0 {
        Repr::Text("inf".into())
    } else {
        Repr::Text("-inf".into())
    }
}

fn from_repr<E: serde::de::Error>(r: Repr) -> Result<f64, E> {
    match r {
        Repr::Number(v) => Ok(v),
        Repr::Text(t) => match t.as_str() {
            "NaN" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            other => {
                Err(E::custom(format!("expected a number, \"NaN\", \"inf\" or \"-inf\", got {other:?}")))
            }
        },
    }
}

/// `#[serde(with = "float")]` for `f64`.
pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    to_repr(*v).serialize(s)
}

/// `#[serde(with = "float")]` for `f64`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    from_repr(Repr::deserialize(d)?)
}

/// `#[serde(with = "float::option")]` for `Option<f64>`.
pub mod option {
    use super::*;

    /// Serialize `None` as `null`, a value as in the parent module.
    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        v.map(to_repr).serialize(s)
    }

    /// Read `null` as `None`, a value as in the parent module.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<Repr>::deserialize(d)?.map(from_repr).transpose()
    }
}
