//! Loading and writing `model.safetensors` (docs/host-path.md §1.4): the exact key set checked
//! against the configs (the `temperature` buffer accepted and ignored), shapes and dtypes
//! checked before any conversion, F32/F16/BF16 converted to f32, and the per-layer structure
//! assembled from named tensors; the checkpoint fingerprint.

use safetensors::{Dtype, SafeTensors};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

use super::{
    tensor_specs, DecisionWeights, EncoderLayer, HeadLayer, Linear, Matrix, Norm, Scorer, TensorSpec,
    WeightsError, TEMPERATURE_BUFFER,
};
use crate::laya::config::{AgentConfig, EncoderConfig};

/// Lowercase hex sha256 of the checkpoint bytes.
pub fn fingerprint(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn more(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" (and {n} more)")
    }
}

/// Convert little-endian F32/F16/BF16 bytes to f32.
pub(crate) fn to_f32(dtype: Dtype, bytes: &[u8]) -> Option<Vec<f32>> {
    match dtype {
        Dtype::F32 => {
            Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        Dtype::F16 => {
            Some(bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect())
        }
        Dtype::BF16 => {
            Some(bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect())
        }
        _ => None,
    }
}

/// Builds the per-layer structure from a name → values map (shapes already checked).
struct Taker {
    values: HashMap<String, Vec<f32>>,
    shapes: HashMap<String, Vec<usize>>,
    /// Matrices given ready-made (e.g. palettized), taken before `values`.
    matrices: HashMap<String, Matrix>,
}

impl Taker {
    fn vec(&mut self, name: &str) -> Result<Vec<f32>, WeightsError> {
        self.values
            .remove(name)
            .ok_or_else(|| WeightsError::Inconsistent(format!("tensor `{name}` taken twice")))
    }
    fn opt_vec(&mut self, name: &str) -> Option<Vec<f32>> {
        self.values.remove(name)
    }
    fn matrix(&mut self, name: &str) -> Result<Matrix, WeightsError> {
        if let Some(m) = self.matrices.remove(name) {
            return Ok(m);
        }
        let shape = self.shapes.get(name).cloned().unwrap_or_default();
        let data = self.vec(name)?;
        match shape.as_slice() {
            [r, c] => Matrix::f32_row_major(*r, *c, data),
            _ => None,
        }
        .ok_or_else(|| WeightsError::Inconsistent(format!("tensor `{name}` is not a matrix")))
    }
    fn linear(&mut self, weight: &str, bias: &str) -> Result<Linear, WeightsError> {
        Ok(Linear { weight: self.matrix(weight)?, bias: self.opt_vec(bias) })
    }
    fn norm(&mut self, prefix: &str) -> Result<Norm, WeightsError> {
        Ok(Norm {
            weight: self.vec(&format!("{prefix}.weight"))?,
            bias: self.opt_vec(&format!("{prefix}.bias")),
        })
    }
}

impl DecisionWeights {
    /// Load `model.safetensors` bytes; the key set must match the configs exactly (the
    /// `temperature` buffer is accepted and ignored). F32, F16 and BF16 are converted to f32.
    /// `file` names the file in errors.
    pub fn from_safetensors(
        bytes: &[u8],
        enc: &EncoderConfig,
        agent: &AgentConfig,
        file: &str,
    ) -> Result<Self, WeightsError> {
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| WeightsError::Corrupt { file: file.into(), detail: e.to_string() })?;
        let specs = tensor_specs(enc, agent);
        let present: BTreeMap<&str, _> = st.iter().collect();
        let missing: Vec<&TensorSpec> =
            specs.iter().filter(|s| !present.contains_key(s.name.as_str())).collect();
        if let Some(first) = missing.first() {
            return Err(WeightsError::Missing {
                file: file.into(),
                tensor: first.name.clone(),
                expected: first.shape.clone(),
                more: more(missing.len() - 1),
            });
        }
        let expected: HashMap<&str, &TensorSpec> = specs.iter().map(|s| (s.name.as_str(), s)).collect();
        let unexpected: Vec<(&str, Vec<usize>)> = present
            .iter()
            .filter(|(name, _)| !expected.contains_key(*name) && **name != TEMPERATURE_BUFFER)
            .map(|(name, view)| (*name, view.shape().to_vec()))
            .collect();
        if let Some((name, shape)) = unexpected.first() {
            return Err(WeightsError::Unexpected {
                file: file.into(),
                tensor: (*name).into(),
                found: shape.clone(),
                more: more(unexpected.len() - 1),
            });
        }
        // Shapes and dtypes first, so no conversion work is done for a file that fails.
        for spec in &specs {
            let view = &present[spec.name.as_str()];
            if view.shape() != spec.shape.as_slice() {
                return Err(WeightsError::Shape {
                    file: file.into(),
                    tensor: spec.name.clone(),
                    expected: spec.shape.clone(),
                    found: view.shape().to_vec(),
                });
            }
            if !matches!(view.dtype(), Dtype::F32 | Dtype::F16 | Dtype::BF16) {
                return Err(WeightsError::Dtype {
                    file: file.into(),
                    tensor: spec.name.clone(),
                    found: format!("{:?}", view.dtype()),
                });
            }
        }
        let mut values = HashMap::with_capacity(specs.len());
        let mut shapes = HashMap::with_capacity(specs.len());
        for spec in &specs {
            let view = &present[spec.name.as_str()];
            let data = to_f32(view.dtype(), view.data()).ok_or_else(|| WeightsError::Dtype {
                file: file.into(),
                tensor: spec.name.clone(),
                found: format!("{:?}", view.dtype()),
            })?;
            values.insert(spec.name.clone(), data);
            shapes.insert(spec.name.clone(), spec.shape.clone());
        }
        Self::from_parts(Taker { values, shapes, matrices: HashMap::new() }, enc, agent)
    }

    /// Build from f32 values keyed by tensor name (row-major, shapes as in [`tensor_specs`]).
    pub fn from_named(
        named: HashMap<String, Vec<f32>>,
        enc: &EncoderConfig,
        agent: &AgentConfig,
    ) -> Result<Self, WeightsError> {
        Self::from_named_with_matrices(named, HashMap::new(), enc, agent)
    }

    /// [`Self::from_named`], with some matrices given ready-made in any precision (for example
    /// palettized); those names must not also appear in `named`, and their shapes must match.
    pub fn from_named_with_matrices(
        named: HashMap<String, Vec<f32>>,
        matrices: HashMap<String, Matrix>,
        enc: &EncoderConfig,
        agent: &AgentConfig,
    ) -> Result<Self, WeightsError> {
        let specs = tensor_specs(enc, agent);
        let mut shapes = HashMap::with_capacity(specs.len());
        for spec in &specs {
            let n: usize = spec.shape.iter().product();
            if let Some(m) = matrices.get(&spec.name) {
                if named.contains_key(&spec.name) {
                    return Err(WeightsError::Inconsistent(format!(
                        "tensor `{}` is given twice (values and a matrix)",
                        spec.name
                    )));
                }
                if [m.rows(), m.cols()] != spec.shape.as_slice() {
                    return Err(WeightsError::Inconsistent(format!(
                        "matrix `{}` is [{}, {}], expected {:?}",
                        spec.name,
                        m.rows(),
                        m.cols(),
                        spec.shape
                    )));
                }
                shapes.insert(spec.name.clone(), spec.shape.clone());
                continue;
            }
            match named.get(&spec.name) {
                Some(v) if v.len() == n => {}
                Some(v) => {
                    return Err(WeightsError::Inconsistent(format!(
                        "tensor `{}` has {} values, expected {n} ({:?})",
                        spec.name,
                        v.len(),
                        spec.shape
                    )))
                }
                None => return Err(WeightsError::Inconsistent(format!("tensor `{}` is missing", spec.name))),
            }
            shapes.insert(spec.name.clone(), spec.shape.clone());
        }
        if let Some(extra) = matrices.keys().find(|k| !shapes.contains_key(k.as_str())) {
            return Err(WeightsError::Inconsistent(format!(
                "matrix `{extra}` is not a tensor of this model"
            )));
        }
        Self::from_parts(Taker { values: named, shapes, matrices }, enc, agent)
    }

    fn from_parts(mut t: Taker, enc: &EncoderConfig, agent: &AgentConfig) -> Result<Self, WeightsError> {
        let tok_embeddings = t.matrix("encoder.embeddings.tok_embeddings.weight")?;
        let emb_norm = t.norm("encoder.embeddings.norm")?;
        let mut layers = Vec::with_capacity(enc.num_layers);
        for l in 0..enc.num_layers {
            let p = format!("encoder.layers.{l}");
            layers.push(EncoderLayer {
                attn_norm: if l == 0 { None } else { Some(t.norm(&format!("{p}.attn_norm"))?) },
                wqkv: t.linear(&format!("{p}.attn.Wqkv.weight"), &format!("{p}.attn.Wqkv.bias"))?,
                wo: t.linear(&format!("{p}.attn.Wo.weight"), &format!("{p}.attn.Wo.bias"))?,
                mlp_norm: t.norm(&format!("{p}.mlp_norm"))?,
                wi: t.linear(&format!("{p}.mlp.Wi.weight"), &format!("{p}.mlp.Wi.bias"))?,
                mlp_wo: t.linear(&format!("{p}.mlp.Wo.weight"), &format!("{p}.mlp.Wo.bias"))?,
            });
        }
        let final_norm = t.norm("encoder.final_norm")?;
        let mut head = Vec::with_capacity(agent.head_layers);
        for j in 0..agent.head_layers {
            let p = format!("head.layers.{j}");
            head.push(HeadLayer {
                in_proj: t.linear(
                    &format!("{p}.self_attn.in_proj_weight"),
                    &format!("{p}.self_attn.in_proj_bias"),
                )?,
                out_proj: t.linear(
                    &format!("{p}.self_attn.out_proj.weight"),
                    &format!("{p}.self_attn.out_proj.bias"),
                )?,
                linear1: t.linear(&format!("{p}.linear1.weight"), &format!("{p}.linear1.bias"))?,
                linear2: t.linear(&format!("{p}.linear2.weight"), &format!("{p}.linear2.bias"))?,
                norm1: t.norm(&format!("{p}.norm1"))?,
                norm2: t.norm(&format!("{p}.norm2"))?,
            });
        }
        let type_emb = t.vec("type_emb.weight")?;
        let scorer = Scorer {
            norm: t.norm("scorer.0")?,
            hidden: t.linear("scorer.1.weight", "scorer.1.bias")?,
            output: t.linear("scorer.3.weight", "scorer.3.bias")?,
        };
        let act_head = crate::model::tail::ActionHead::new(
            t.linear("act_head.0.weight", "act_head.0.bias")?,
            t.linear("act_head.2.weight", "act_head.2.bias")?,
        )
        .map_err(|e| WeightsError::Inconsistent(e.to_string()))?;
        let w = Self { tok_embeddings, emb_norm, layers, final_norm, head, type_emb, scorer, act_head };
        w.check(enc, agent)?;
        Ok(w)
    }

    /// Serialize as a safetensors file (F32, plus the `temperature` buffer of ones) — the
    /// layout PyTorch's `save_file(model.state_dict())` produces.
    pub fn to_safetensors(&self) -> Result<Vec<u8>, WeightsError> {
        let mut tensors = self.named_tensors();
        tensors.push((TEMPERATURE_BUFFER.into(), vec![3], vec![1.0; 3]));
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
            .into_iter()
            .map(|(n, s, v)| (n, s, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
            .collect();
        let views = bytes
            .iter()
            .map(|(n, s, b)| {
                safetensors::tensor::TensorView::new(Dtype::F32, s.clone(), b).map(|v| (n.clone(), v))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| WeightsError::Inconsistent(e.to_string()))?;
        safetensors::serialize(views, None).map_err(|e| WeightsError::Inconsistent(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::synthetic::{random_weights, tiny_shape};

    type Entry = (String, Dtype, Vec<usize>, Vec<u8>);

    fn entries(w: &DecisionWeights) -> Vec<Entry> {
        w.named_tensors()
            .into_iter()
            .map(|(n, s, v)| (n, Dtype::F32, s, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
            .collect()
    }

    fn file(entries: &[Entry]) -> Vec<u8> {
        let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = entries
            .iter()
            .map(|(n, d, s, b)| (n.clone(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap()))
            .collect();
        safetensors::serialize(views, None).unwrap()
    }

    fn load(bytes: &[u8]) -> Result<DecisionWeights, WeightsError> {
        let (e, a) = tiny_shape();
        DecisionWeights::from_safetensors(bytes, &e, &a, "model.safetensors")
    }

    #[test]
    fn round_trips_through_safetensors() {
        let (e, a) = tiny_shape();
        let w = random_weights(&e, &a, 3);
        let bytes = w.to_safetensors().unwrap();
        assert_eq!(load(&bytes).unwrap(), w);
        // without the temperature buffer too
        assert_eq!(load(&file(&entries(&w))).unwrap(), w);
        assert_eq!(tensor_specs(&e, &a).len(), w.named_tensors().len());
    }

    #[test]
    fn converts_f16_and_bf16() {
        let (e, a) = tiny_shape();
        let w = random_weights(&e, &a, 3);
        for dtype in [Dtype::F16, Dtype::BF16] {
            let es: Vec<Entry> = w
                .named_tensors()
                .into_iter()
                .map(|(n, s, v)| {
                    let b = v
                        .iter()
                        .flat_map(|&x| match dtype {
                            Dtype::F16 => half::f16::from_f32(x).to_le_bytes(),
                            _ => half::bf16::from_f32(x).to_le_bytes(),
                        })
                        .collect();
                    (n, dtype, s, b)
                })
                .collect();
            let got = load(&file(&es)).unwrap();
            let tol = if dtype == Dtype::F16 { 2e-3 } else { 1.6e-2 };
            for ((_, _, a), (_, _, b)) in got.named_tensors().iter().zip(w.named_tensors().iter()) {
                for (x, y) in a.iter().zip(b) {
                    assert!((x - y).abs() <= tol * y.abs().max(1.0), "{dtype:?} {x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn truncated_or_garbage_bytes_are_corrupt_not_panics() {
        let (e, a) = tiny_shape();
        let bytes = random_weights(&e, &a, 3).to_safetensors().unwrap();
        for cut in [0, 3, 8, 100, bytes.len() / 2, bytes.len() - 1] {
            let err = load(&bytes[..cut]).unwrap_err();
            assert!(matches!(err, WeightsError::Corrupt { .. }), "cut {cut}: {err}");
            assert!(err.to_string().contains("model.safetensors"));
        }
        let mut garbage = bytes.clone();
        garbage[9] = b'!';
        assert!(matches!(load(&garbage), Err(WeightsError::Corrupt { .. })));
        // header length pointing far past the end
        let mut huge = bytes;
        huge[..8].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
        assert!(matches!(load(&huge), Err(WeightsError::Corrupt { .. })));
    }

    #[test]
    fn missing_tensor_is_named() {
        let (e, a) = tiny_shape();
        let mut es = entries(&random_weights(&e, &a, 3));
        es.retain(|(n, ..)| n != "encoder.layers.2.mlp_norm.weight" && n != "scorer.1.bias");
        let err = load(&file(&es)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, WeightsError::Missing { .. }), "{msg}");
        assert!(msg.contains("encoder.layers.2.mlp_norm.weight") && msg.contains("and 1 more"), "{msg}");
        assert!(msg.contains("[64]") && msg.contains("model.safetensors"), "{msg}");
    }

    #[test]
    fn extra_tensor_is_named() {
        let (e, a) = tiny_shape();
        let mut es = entries(&random_weights(&e, &a, 3));
        es.push(("encoder.layers.0.attn_norm.weight".into(), Dtype::F32, vec![64], vec![0; 256]));
        let err = load(&file(&es)).unwrap_err();
        assert!(matches!(err, WeightsError::Unexpected { .. }), "{err}");
        assert!(err.to_string().contains("encoder.layers.0.attn_norm.weight"));
    }

    #[test]
    fn wrong_shape_names_expected_and_found() {
        let (e, a) = tiny_shape();
        let mut es = entries(&random_weights(&e, &a, 3));
        let t = es.iter_mut().find(|(n, ..)| n == "encoder.layers.1.attn.Wo.weight").unwrap();
        t.2 = vec![32, 128];
        let err = load(&file(&es)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, WeightsError::Shape { .. }), "{msg}");
        assert!(msg.contains("[32, 128]") && msg.contains("[64, 64]"), "{msg}");
    }

    #[test]
    fn wrong_dtype_is_rejected() {
        let (e, a) = tiny_shape();
        let mut es = entries(&random_weights(&e, &a, 3));
        let t = es.iter_mut().find(|(n, ..)| n == "type_emb.weight").unwrap();
        t.1 = Dtype::I32;
        let err = load(&file(&es)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, WeightsError::Dtype { .. }), "{msg}");
        assert!(msg.contains("type_emb.weight") && msg.contains("I32"), "{msg}");
    }

    #[test]
    fn bias_flags_change_the_expected_key_set() {
        let (mut e, a) = tiny_shape();
        let w = random_weights(&e, &a, 3);
        e.attention_bias = true;
        let err = DecisionWeights::from_safetensors(&w.to_safetensors().unwrap(), &e, &a, "m").unwrap_err();
        assert!(err.to_string().contains("encoder.layers.0.attn.Wqkv.bias"), "{err}");
        let wb = random_weights(&e, &a, 3);
        assert!(wb.layers[0].wqkv.bias.is_some());
    }

    #[test]
    fn fingerprint_is_lowercase_sha256() {
        assert_eq!(fingerprint(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
