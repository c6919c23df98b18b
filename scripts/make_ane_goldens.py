"""ANE host goldens: laya-coreml 0.5.1's own `ANEAgent.model_inputs()` and `ANEAgent.forward()`.

Runs the reference's ANE host code (imported at run time, never copied; a stub coremltools from
`laya_ref` makes `laya_coreml.ane` importable) on the tiny fixture's tensors with a deterministic
fake `model.predict`, and writes fixtures/goldens/ane.json:

- `cases[].batch`: a fixed-signature prepared batch (B1, L96, K32), int32;
- `cases[].inputs`: per input tensor the dtype, shape and sha256 of its FP16 bytes (C order,
  little-endian), plus the one-hot positions of `marker_map` and the FP16 bits of `type_vectors`;
- `cases[].fake_outputs`: what the fake `model.predict` returned (name, dtype, shape, values; the
  CLS output comes first so the host must tell the outputs apart by shape);
- `cases[].forward`: `ANEAgent.forward()`'s masked logits [1, 32] and action logits [1, A] as the
  exact Python floats of the float32 results.

Usage (see fixtures/goldens/README.md for the venv and LAYA_COREML_DIR):
    /tmp/refenv/bin/python scripts/make_ane_goldens.py
"""

import hashlib
import json
import math

import numpy as np
from safetensors.numpy import load_file

import laya_ref as lr
from laya_coreml.ane import ANEAgent

OUT = lr.ROOT / "fixtures" / "goldens" / "ane.json"
L, K = 96, 32


def make_agent(outputs_dtype):
    """An ANEAgent with the fixture's host tensors and a fake Core ML model (no __init__)."""
    weights = load_file(str(lr.BUNDLE / "model.safetensors"))
    encoder = json.loads((lr.BUNDLE / "encoder" / "config.json").read_text())
    agent = ANEAgent.__new__(ANEAgent)
    agent.shape = {"batch_size": 1, "max_length": L, "min_length": L, "max_options": K,
                   "flexible": False, "lengths": None}
    agent.embedding = weights["encoder.embeddings.tok_embeddings.weight"]
    agent.type_embedding = weights["type_emb.weight"]
    agent.action = {key: weights["act_head." + key].astype(np.float32)
                    for key in ("0.weight", "0.bias", "2.weight", "2.bias")}
    agent._erf = np.frompyfunc(math.erf, 1, 1)
    pos = np.arange(L)
    agent.window = np.abs(pos[:, None] - pos[None, :]) <= int(encoder.get("local_attention", 128)) // 2
    agent.fake_dtype = outputs_dtype
    return agent, int(encoder["hidden_size"])


class FakeModel:
    """Deterministic outputs: CLS (1, D, 1, 1) first, then logits (1, 1, 1, 32)."""

    def __init__(self, seed, width, dtype, scale):
        self.rng = np.random.default_rng(seed)
        self.width, self.dtype, self.scale = width, dtype, scale
        self.last = None

    def predict(self, inputs):
        assert set(inputs) == {"embeddings", "full_mask", "local_mask", "type_vectors", "marker_map"}
        cls = (self.rng.standard_normal((1, self.width, 1, 1)) * 0.5).astype(self.dtype)
        logits = (self.rng.standard_normal((1, 1, 1, K)) * self.scale).astype(self.dtype)
        self.last = {"var_cls": cls, "var_logits": logits}
        return dict(self.last)


def batch_case(rng, n_tokens, n_markers, qtype, vocab):
    ids = np.full((1, L), 3, np.int32)
    ids[0, :n_tokens] = rng.integers(0, vocab, n_tokens)
    mask = np.zeros((1, L), np.int32)
    mask[0, :n_tokens] = 1
    mask[0, 0] = 1
    marker_pos = np.zeros((1, K), np.int32)
    marker_mask = np.zeros((1, K), np.int32)
    if n_markers:
        marker_pos[0, :n_markers] = np.sort(rng.choice(np.arange(1, max(n_tokens, n_markers + 1)),
                                                       n_markers, replace=False))
        marker_mask[0, :n_markers] = 1
    return {"input_ids": ids, "attention_mask": mask, "marker_pos": marker_pos,
            "marker_mask": marker_mask, "qtype": np.array([qtype], np.int32)}


def f32_list(a):
    return [lr.f32(x) for x in np.asarray(a, np.float32).reshape(-1)]


def main():
    specs = [
        # name, tokens, markers, qtype, fake output dtype, logit scale
        ("short-2-options-choice", 12, 2, 0, np.float16, 2.0),
        ("one-marker-noul", 9, 1, 2, np.float16, 3.0),
        ("five-options-score", 40, 5, 1, np.float16, 1.0),
        ("full-length-32-options", 96, 32, 0, np.float16, 4.0),
        ("half-length-fp32-outputs", 48, 7, 1, np.float32, 2.5),
        ("degenerate-large-logits", 70, 3, 2, np.float16, 2000.0),
        ("no-markers", 20, 0, 0, np.float16, 1.0),
    ]
    rng = np.random.default_rng(20261129)
    cases = []
    for i, (name, n_tokens, n_markers, qtype, dtype, scale) in enumerate(specs):
        agent, width = make_agent(dtype)
        batch = batch_case(rng, n_tokens, n_markers, qtype, agent.embedding.shape[0])
        inputs = agent.model_inputs(batch)
        agent.model = FakeModel(1000 + i, width, dtype, scale)
        logits, action = agent.forward(batch)
        summary = {}
        for key, value in inputs.items():
            assert value.dtype == np.float16
            summary[key] = {"dtype": str(value.dtype), "shape": list(value.shape),
                            "sha256": hashlib.sha256(np.ascontiguousarray(value, "<f2").tobytes()).hexdigest()}
        summary["marker_map"]["ones"] = np.argwhere(inputs["marker_map"][0, :, 0, :] == 1).tolist()
        summary["type_vectors"]["bits"] = inputs["type_vectors"].reshape(-1).view(np.uint16).tolist()
        summary["local_mask"]["open"] = int((inputs["local_mask"] == 0).sum())
        summary["full_mask"]["open"] = int((inputs["full_mask"] == 0).sum())
        cases.append({
            "name": name,
            "batch": {k: v.tolist() for k, v in batch.items()},
            "inputs": summary,
            "fake_outputs": [{"name": k, "dtype": str(v.dtype), "shape": list(v.shape),
                              "values": f32_list(v)} for k, v in agent.model.last.items()],
            "forward": {"logits": f32_list(logits), "action_logits": f32_list(action),
                        "action_shape": list(action.shape)},
        })
    doc = {
        "schema": "laya-bench-ane-goldens/1",
        "reference": {"package": "laya-coreml", "version": lr.REF_VERSION, "numpy": np.__version__,
                      "entry_points": ["laya_coreml.ane.ANEAgent.model_inputs",
                                       "laya_coreml.ane.ANEAgent.forward"]},
        "bundle": "fixtures/tiny (host tensors from model.safetensors)",
        "notes": [
            "inputs[].sha256 is over the FP16 tensor bytes, C order, little-endian.",
            "fake_outputs are the fake model.predict outputs in the order it returned them "
            "(CLS first); values are exact (float16 or float32 widened to Python floats).",
            "forward values are the exact Python floats of the float32 results; the action head "
            "runs through numpy/BLAS, so compare it with a small tolerance.",
        ],
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print("%d ANE cases -> %s" % (len(cases), OUT))


if __name__ == "__main__":
    main()
