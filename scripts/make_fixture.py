#!/usr/bin/env python3
"""Write the tiny Laya fixture checkpoint `fixtures/tiny/` (original checkpoint layout).

Deterministic: the same bytes on every run (seeded numpy RNG, single-threaded BPE training,
sorted JSON keys where we write JSON ourselves). Pinned versions used to produce the committed
fixture (other versions may serialize `tokenizer.json` differently or draw other numbers):

    tokenizers == 0.23.3
    numpy      == 2.4.6
    safetensors== 0.8.0
    Python 3.11

Usage (from the repository root):

    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install tokenizers==0.23.3 numpy==2.4.6 safetensors==0.8.0
    /tmp/refenv/bin/python scripts/make_fixture.py            # writes fixtures/tiny/
    /tmp/refenv/bin/python scripts/make_fixture.py --out DIR  # elsewhere (e.g. to diff)

The tokenizer is a byte-level BPE trained here on `scripts/fixture_corpus.txt`; the weights are
random with scales chosen so the model is *sensitive* (peaked attention, logits of order 1),
see `fixtures/tiny/README.md` and `scripts/make_forward_goldens.py` (ablation deltas).
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

# Single-threaded tokenizer training: the BPE trainer is deterministic, but make sure no
# parallel word counting can reorder anything.
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["RAYON_RS_NUM_CPUS"] = "1"

import numpy as np  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "scripts" / "fixture_corpus.txt"
SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]  # ids 0..4, in this order
VOCAB_TARGET = 1400
SEED = 20260529

ENCODER = {
    "model_type": "modernbert",
    "hidden_activation": "gelu",
    "vocab_size": None,  # filled from the tokenizer
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_hidden_layers": 4,
    "intermediate_size": 96,
    "norm_eps": 1e-5,
    "norm_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "global_attn_every_n_layers": 3,
    "local_attention": 16,
    "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0,
    # As a Hugging Face ModernBERT config gives them (the published checkpoints'
    # encoder/config.json): transformers defaults the ids to ModernBERT's 50281..50283, outside
    # this vocabulary, where they are missing. SPECIALS: [CLS] 1, [SEP] 2, [PAD] 3.
    "max_position_embeddings": 8192,
    "pad_token_id": 3,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "cls_token_id": 1,
    "sep_token_id": 2,
}

AGENT = {
    # The published checkpoints name their base encoder's hub id here; upstream laya and
    # laya-mlx refuse a config without the key (it is only a tokenizer fallback at inference).
    "encoder": "laya-bench/builtin-tiny",
    "head_layers": 2,
    "act_costs": {"ask": 0.1},
    "max_len": 512,
    "head_max_len": 192,
    "temperature": [1.3, 1.2, 1.6],
    "temperature_by_options": {
        "choice:2": 1.906,
        "choice:3-5": 1.76,
        "noul:2": 1.983,
        "score:3-5": 1.251,
    },
    "option_layout": "sequential",
}

# Init scales (the "gain" multiplies 1/sqrt(fan_in)). Chosen so that, on real requests,
# attention is peaked, slot logits are O(1) and spread, and the RoPE / window / erf-GELU
# ablations each move the logits by >> 1e-2 (measured in make_forward_goldens.py).
SCALES = {
    "embed_std": 1.0,
    "norm_jitter": 0.1,  # LayerNorm weight = 1 + jitter * N(0,1)
    "bias_std": 0.1,
    "qkv_gain": 1.5,  # peaked encoder attention; larger gains amplify f32 noise
    "attn_out_gain": 1.0,
    "mlp_gate_gain": 4.0,
    "mlp_value_gain": 0.6,
    "mlp_out_gain": 8.0,
    # A shared embedding direction (norm ratio vs the per-token part) gives the bias-free encoder
    # MLPs a constant input: their GELU value units sit in the negative tail around -mlp_tail,
    # where exact erf GELU and the tanh approximation differ most relative to the value.
    "common_ratio": 3.0,
    "mlp_tail": 2.7,
    "mlp_tail_jitter": 0.3,
    # Measured fraction (LN(x) . common) / sqrt(D) at each layer's mlp_norm output, found by
    # fixed-point iteration so that the mean value pre-activation is -mlp_tail in every layer.
    "mlp_kappa": [0.9165, 0.8107, 0.6806, 0.5035],
    "head_qkv_gain": 1.5,
    "head_out_gain": 1.0,
    "head_ff1_gain": 1.0,
    "head_ff2_gain": 1.0,
    "type_std": 1.0,
    "scorer1_gain": 2.0,
    "scorer3_gain": 2.0,
    "act0_gain": 1.0,
    "act2_gain": 1.0,
}


def train_tokenizer():
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_TARGET,
        min_frequency=1,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = CORPUS.read_text(encoding="utf-8")
    lines = [line for line in text.split("\n") if line]
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    for i, name in enumerate(SPECIALS):
        assert tok.token_to_id(name) == i, (name, tok.token_to_id(name))
    return tok


def make_weights(vocab_size):
    rng = np.random.default_rng(SEED)
    s = SCALES
    D = ENCODER["hidden_size"]
    N = ENCODER["num_hidden_layers"]
    I = ENCODER["intermediate_size"]
    H = AGENT["head_layers"]
    A = len(AGENT["act_costs"]) + 1
    w = {}

    def lin(out, inp, gain):
        return (rng.standard_normal((out, inp)) * (gain / np.sqrt(inp))).astype(np.float32)

    def norm_w(n):
        return (1.0 + s["norm_jitter"] * rng.standard_normal(n)).astype(np.float32)

    def bias(n):
        return (s["bias_std"] * rng.standard_normal(n)).astype(np.float32)

    # "Massive activation" channel: every token embedding shares a direction `common` (zero mean
    # over features). It survives LayerNorm (fraction kappa of the normalized vector) and gives the
    # bias-free encoder MLPs a constant input, which puts their GELU value units in the negative
    # tail. Every other encoder weight neither reads (V, MLP gate) nor writes (Wo) that direction,
    # so the channel stays constant through the layers.
    emb = rng.standard_normal((vocab_size, D)) * s["embed_std"]
    common = rng.standard_normal(D)
    common -= common.mean()
    common /= np.linalg.norm(common)
    r = s["common_ratio"]
    emb = emb + r * np.sqrt(D) * s["embed_std"] * common
    proj = np.eye(D) - np.outer(common, common) if r > 0 else np.eye(D)
    w["encoder.embeddings.tok_embeddings.weight"] = emb.astype(np.float32)
    w["encoder.embeddings.norm.weight"] = norm_w(D)
    for i in range(N):
        p = "encoder.layers.%d." % i
        if i != 0:
            w[p + "attn_norm.weight"] = norm_w(D)
        qkv = lin(3 * D, D, s["qkv_gain"])
        qkv[2 * D :] = qkv[2 * D :] @ proj
        w[p + "attn.Wqkv.weight"] = qkv.astype(np.float32)
        w[p + "attn.Wo.weight"] = (proj @ lin(D, D, s["attn_out_gain"])).astype(np.float32)
        w[p + "mlp_norm.weight"] = norm_w(D)
        wi = lin(2 * I, D, s["mlp_gate_gain"])
        if r > 0:
            kappa = s["mlp_kappa"][i]  # expected (LN(x) . common) / sqrt(D) at this layer
            value = lin(I, D, s["mlp_value_gain"]) @ proj
            tail = s["mlp_tail"] + s["mlp_tail_jitter"] * rng.standard_normal(I)
            wi[:I] = value - tail[:, None] / (kappa * np.sqrt(D)) * common[None, :]
            wi[I:] = wi[I:] @ proj
        w[p + "mlp.Wi.weight"] = wi.astype(np.float32)
        w[p + "mlp.Wo.weight"] = (proj @ lin(D, I, s["mlp_out_gain"])).astype(np.float32)
    w["encoder.final_norm.weight"] = norm_w(D)
    for j in range(H):
        p = "head.layers.%d." % j
        w[p + "self_attn.in_proj_weight"] = lin(3 * D, D, s["head_qkv_gain"])
        w[p + "self_attn.in_proj_bias"] = bias(3 * D)
        w[p + "self_attn.out_proj.weight"] = lin(D, D, s["head_out_gain"])
        w[p + "self_attn.out_proj.bias"] = bias(D)
        w[p + "linear1.weight"] = lin(4 * D, D, s["head_ff1_gain"])
        w[p + "linear1.bias"] = bias(4 * D)
        w[p + "linear2.weight"] = lin(D, 4 * D, s["head_ff2_gain"])
        w[p + "linear2.bias"] = bias(D)
        w[p + "norm1.weight"] = norm_w(D)
        w[p + "norm1.bias"] = bias(D)
        w[p + "norm2.weight"] = norm_w(D)
        w[p + "norm2.bias"] = bias(D)
    w["type_emb.weight"] = (rng.standard_normal((3, D)) * s["type_std"]).astype(np.float32)
    w["scorer.0.weight"] = norm_w(D)
    w["scorer.0.bias"] = bias(D)
    w["scorer.1.weight"] = lin(D, D, s["scorer1_gain"])
    w["scorer.1.bias"] = bias(D)
    w["scorer.3.weight"] = lin(1, D, s["scorer3_gain"])
    w["scorer.3.bias"] = bias(1)
    w["act_head.0.weight"] = lin(256, D + 4, s["act0_gain"])
    w["act_head.0.bias"] = bias(256)
    w["act_head.2.weight"] = lin(A, 256, s["act2_gain"])
    w["act_head.2.bias"] = bias(A)
    # Buffer present in real checkpoints; not used at inference (calibration is in the JSON).
    w["temperature"] = np.array(AGENT["temperature"], dtype=np.float32)
    return w


def dump_json(path, obj):
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "fixtures" / "tiny"))
    args = ap.parse_args()
    out = Path(args.out)
    (out / "tokenizer").mkdir(parents=True, exist_ok=True)
    (out / "encoder").mkdir(parents=True, exist_ok=True)

    tok = train_tokenizer()
    tok.save(str(out / "tokenizer" / "tokenizer.json"), pretty=True)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)

    # Both accepted forms: the object form for mask_token, plain strings for the others.
    dump_json(
        out / "tokenizer" / "tokenizer_config.json",
        {
            "cls_token": "[CLS]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "unk_token": "[UNK]",
            "mask_token": {
                "content": "[MASK]",
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            },
            "model_max_length": 512,
            "tokenizer_class": "PreTrainedTokenizerFast",
        },
    )
    dump_json(
        out / "tokenizer" / "special_tokens_map.json",
        {
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
            "pad_token": "[PAD]",
            "sep_token": "[SEP]",
            "unk_token": "[UNK]",
        },
    )
    enc = dict(ENCODER, vocab_size=vocab_size)
    dump_json(out / "encoder" / "config.json", enc)
    dump_json(out / "rl_agent_config.json", AGENT)

    weights = make_weights(vocab_size)
    save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})

    for f in sorted(p for p in out.rglob("*") if p.is_file() and p.name != "README.md"):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        print("%s  %8d  %s" % (digest, f.stat().st_size, f.relative_to(out)))
    print("vocab_size", vocab_size, file=sys.stderr)


if __name__ == "__main__":
    main()
