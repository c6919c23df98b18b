#!/usr/bin/env python3
"""Build the three committed Core ML fixtures of the embedded `builtin:tiny` model.

    fixtures/coreml/ordinary  laya-coreml bundle, made by laya-coreml 0.5.1's own converter
    fixtures/coreml/ane       laya-coreml-ane bundle: B1/K32/L96 channel-first FP16 graph (BC1L)
    fixtures/coreml/ane-w8    the same graph with 8-bit grouped k-means palettized conv weights

Not run by CI. Needs a venv with coremltools, torch and laya-coreml (versions in
fixtures/coreml/README.md):

    python3.11 -m venv /work/venv-coreml
    /work/venv-coreml/bin/pip install torch==2.7.0 coremltools==9.0 "numpy<2.2" safetensors tokenizers huggingface-hub
    /work/venv-coreml/bin/pip install --no-deps laya-coreml==0.5.1
    /work/venv-coreml/bin/python scripts/make_coreml_fixtures.py            # writes fixtures/coreml/
    /work/venv-coreml/bin/python scripts/make_coreml_fixtures.py --out /tmp/again --compare fixtures/coreml

Converting and saving an .mlpackage works on Linux; predicting needs macOS, so the ANE graph
is checked here against laya-coreml's FP32 torch DecisionModel in PyTorch (same weights, FP32),
before conversion. `--compare` rebuilds into another folder and reports every file that
differs from the committed fixtures (see the README for the two that always do).

The BC1L graph is written here from the published design (docs/host-path.md §1.7 and §2):
activations `[1, C, 1, L]`, every Linear a 1x1 convolution, additive masks laid out
`[1, key, 1, query]`, a one-hot marker map `[1, L, 1, 32]`, outputs logits `(1, 1, 1, 32)` and
the pooled CLS `(1, D, 1, 1)`.
"""

import argparse
import hashlib
import json
import math
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "fixtures" / "tiny"
ANE_LENGTH = 96
SLOTS = 32
HIDDEN = -1e4
# The ordinary export: batch 1, K 32, enumerated lengths 16..128.
ORDINARY_MAX_LENGTH = 128
# W8: every conv weight with more than this many elements gets 8-bit k-means tables, one per
# group of output channels. The published W8 config (per tensor, above 65,536 elements) would
# change nothing at D=64, so the fixture uses groups of 16 channels and a lower threshold.
W8 = {"mode": "kmeans", "nbits": 8, "granularity": "per_grouped_channel", "group_size": 16,
      "weight_threshold": 1024, "op_type": "conv"}
HOST_TENSORS = (
    "encoder.embeddings.tok_embeddings.weight",
    "type_emb.weight",
    "act_head.0.weight",
    "act_head.0.bias",
    "act_head.2.weight",
    "act_head.2.bias",
)
# Fixed namespace for the package item identifiers (Manifest.json), so that two runs write
# the same identifiers for the ANE bundles.
ITEM_NAMESPACE = uuid.UUID("6c617961-2d62-656e-6368-2d636f72656d")


def sha256_file(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def versions():
    from importlib.metadata import version

    return {name: version(name) for name in ("coremltools", "torch", "numpy", "laya-coreml", "safetensors")}


# ---------------------------------------------------------------------------------------------
# The BC1L graph (torch), from the checkpoint's tensors


def channel_norm(x, weight, bias, eps):
    """LayerNorm over channels (dim 1) of a [1, C, 1, L] activation."""
    import torch

    mean = x.mean(dim=1, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=1, keepdim=True)
    y = centred * torch.rsqrt(var + eps) * weight.view(1, -1, 1, 1)
    return y if bias is None else y + bias.view(1, -1, 1, 1)


def pointwise(x, weight, bias):
    """A Linear as a 1x1 convolution: weight [out, in] over [1, in, 1, L]."""
    import torch.nn.functional as F

    return F.conv2d(x, weight[:, :, None, None], bias)


def heads_attention(q, k, v, mask, heads, cos=None, sin=None):
    """Per-head attention on [1, C, 1, L]; scores and mask are [key, query] matrices."""
    import torch

    channels, length = q.shape[1], q.shape[3]
    dh = channels // heads
    out = []
    for h in range(heads):
        qh = q[:, h * dh:(h + 1) * dh].reshape(dh, length)
        kh = k[:, h * dh:(h + 1) * dh].reshape(dh, length)
        vh = v[:, h * dh:(h + 1) * dh].reshape(dh, length)
        if cos is not None:
            half = dh // 2
            qh = torch.cat((qh[:half] * cos - qh[half:] * sin, qh[half:] * cos + qh[:half] * sin), dim=0)
            kh = torch.cat((kh[:half] * cos - kh[half:] * sin, kh[half:] * cos + kh[:half] * sin), dim=0)
        scores = torch.matmul(kh.transpose(0, 1), qh) * (dh ** -0.5) + mask
        probs = torch.softmax(scores, dim=0)  # over keys
        out.append(torch.matmul(vh, probs).reshape(1, dh, 1, length))
    return torch.cat(out, dim=1)


def rope_tables(dh, base, length):
    import torch

    inv = 1.0 / (float(base) ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh))
    angles = torch.arange(length, dtype=torch.float32)[None, :] * inv[:, None]  # [dh/2, L]
    return angles.cos(), angles.sin()


def make_bc1l(weights, enc, agent, length):
    """The ANE body as a torch module over the five host tensors."""
    import torch

    d, heads = enc["hidden_size"], enc["num_attention_heads"]
    eps = enc.get("norm_eps", 1e-5)
    n_layers = enc["num_hidden_layers"]
    every = enc.get("global_attn_every_n_layers", 3)
    kinds = enc.get("layer_types") or [
        "full_attention" if i % every == 0 else "sliding_attention" for i in range(n_layers)
    ]
    thetas = {"full_attention": enc.get("global_rope_theta", 160000.0),
              "sliding_attention": enc.get("local_rope_theta", 10000.0)}
    for kind, params in enc.get("rope_parameters", {}).items():
        if "rope_theta" in params:
            thetas[kind] = params["rope_theta"]
    head_heads = max(1, d // 64)
    w = {k: torch.tensor(v, dtype=torch.float32) for k, v in weights.items()}
    tables = {kind: rope_tables(d // heads, theta, length) for kind, theta in thetas.items()}

    class BC1L(torch.nn.Module):
        def forward(self, embeddings, full_mask, local_mask, type_vectors, marker_map):
            full = full_mask.reshape(length, length)
            local = local_mask.reshape(length, length)
            x = channel_norm(embeddings, w["encoder.embeddings.norm.weight"], None, eps)
            for i, kind in enumerate(kinds):
                p = f"encoder.layers.{i}."
                a = x if i == 0 else channel_norm(x, w[p + "attn_norm.weight"], None, eps)
                qkv = pointwise(a, w[p + "attn.Wqkv.weight"], w.get(p + "attn.Wqkv.bias"))
                q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
                cos, sin = tables[kind]
                o = heads_attention(q, k, v, full if kind == "full_attention" else local, heads, cos, sin)
                x = x + pointwise(o, w[p + "attn.Wo.weight"], w.get(p + "attn.Wo.bias"))
                m = pointwise(channel_norm(x, w[p + "mlp_norm.weight"], None, eps),
                              w[p + "mlp.Wi.weight"], w.get(p + "mlp.Wi.bias"))
                inter = m.shape[1] // 2
                gated = torch.nn.functional.gelu(m[:, :inter]) * m[:, inter:]
                x = x + pointwise(gated, w[p + "mlp.Wo.weight"], w.get(p + "mlp.Wo.bias"))
            x = channel_norm(x, w["encoder.final_norm.weight"], None, eps) + type_vectors
            for j in range(agent["head_layers"]):
                p = f"head.layers.{j}."
                a = channel_norm(x, w[p + "norm1.weight"], w[p + "norm1.bias"], 1e-5)
                qkv = pointwise(a, w[p + "self_attn.in_proj_weight"], w[p + "self_attn.in_proj_bias"])
                o = heads_attention(qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:], full, head_heads)
                x = x + pointwise(o, w[p + "self_attn.out_proj.weight"], w[p + "self_attn.out_proj.bias"])
                f = channel_norm(x, w[p + "norm2.weight"], w[p + "norm2.bias"], 1e-5)
                f = torch.relu(pointwise(f, w[p + "linear1.weight"], w[p + "linear1.bias"]))
                x = x + pointwise(f, w[p + "linear2.weight"], w[p + "linear2.bias"])
            markers = torch.matmul(x.reshape(d, length), marker_map.reshape(length, SLOTS)).reshape(1, d, 1, SLOTS)
            s = channel_norm(markers, w["scorer.0.weight"], w["scorer.0.bias"], 1e-5)
            s = torch.nn.functional.gelu(pointwise(s, w["scorer.1.weight"], w["scorer.1.bias"]))
            logits = pointwise(s, w["scorer.3.weight"], w["scorer.3.bias"])  # [1, 1, 1, 32]
            cls = x[:, :, :, 0:1]
            return logits, cls

    return BC1L().eval()


def host_tensors(weights, enc, ids, valid, marker_pos, qtype, length):
    """The five host tensors of docs/host-path.md §1.7 (numpy, FP32 values)."""
    emb = weights["encoder.embeddings.tok_embeddings.weight"]
    e = emb[ids].T[None, :, None, :]
    half = enc.get("local_attention", 128) // 2
    pos = np.arange(length)
    window = np.abs(pos[:, None] - pos[None, :]) <= half  # [query, key]
    full_qk = np.broadcast_to(valid[None, :], (length, length))
    local_qk = (window | ~valid[:, None]) & full_qk
    as_mask = lambda qk: np.where(qk.T, 0.0, HIDDEN).astype(np.float32)[None, :, None, :]  # [key, query]
    marker_map = np.zeros((1, length, 1, SLOTS), np.float32)
    marker_map[0, marker_pos, 0, np.arange(SLOTS)] = 1
    types = weights["type_emb.weight"][qtype][None, :, None, None]
    return [e.astype(np.float32), as_mask(full_qk), as_mask(local_qk), types.astype(np.float32), marker_map]


def check_against_reference(body, weights, enc, agent, length):
    """FP32 BC1L body vs laya-coreml's FP32 DecisionModel on random rows: masked logits."""
    import torch
    from laya_coreml.torch_model import load_model

    ref = load_model(TINY, 512)
    rng = np.random.default_rng(18)
    worst = 0.0
    for case in range(6):
        n = int(rng.integers(20, length + 1))
        ids = np.full(length, 3, np.int64)
        ids[:n] = rng.integers(5, enc["vocab_size"], n)
        valid = np.arange(length) < n
        m = int(rng.integers(2, 9))
        marker_pos = np.zeros(SLOTS, np.int64)
        marker_pos[:m] = np.sort(rng.choice(np.arange(1, n), m, replace=False))
        marker_mask = np.arange(SLOTS) < m
        qtype = int(rng.integers(0, 3))
        feats = host_tensors(weights, enc, ids, valid, marker_pos, qtype, length)
        with torch.no_grad():
            logits, cls = body(*[torch.tensor(t) for t in feats])
            want, _ = ref(torch.tensor(ids[None], dtype=torch.int32),
                          torch.tensor(valid[None].astype(np.int32)),
                          torch.tensor(marker_pos[None], dtype=torch.int32),
                          torch.tensor(marker_mask[None].astype(np.int32)),
                          torch.tensor([qtype], dtype=torch.int32))
        got = logits.reshape(SLOTS).numpy()[:m]
        diff = float(np.abs(got - want.numpy()[0, :m]).max())
        worst = max(worst, diff)
        print(f"  layout check case {case}: {n} tokens, {m} options, qtype {qtype}: max |dlogit| {diff:.2e}")
    if worst > 1e-4:
        raise SystemExit(f"the BC1L body disagrees with the reference DecisionModel (max |dlogit| {worst})")
    return worst


# ---------------------------------------------------------------------------------------------
# Bundles


def copy_host_files(out):
    shutil.copytree(TINY / "tokenizer", out / "tokenizer")
    (out / "encoder").mkdir()
    shutil.copy2(TINY / "encoder" / "config.json", out / "encoder" / "config.json")
    shutil.copy2(TINY / "rl_agent_config.json", out / "rl_agent_config.json")


SPEC = Path("Data/com.apple.CoreML/model.mlmodel")


def canonical_spec(path):
    """The model specification serialized with sorted map keys (coremltools' own save writes
    protobuf maps in an order that changes from run to run)."""
    from coremltools.proto import Model_pb2

    spec = Model_pb2.Model()
    spec.ParseFromString(Path(path).read_bytes())
    return spec.SerializeToString(deterministic=True)


def fix_item_identifiers(package):
    """Replace the random item identifiers of Manifest.json with name-derived ones."""
    path = package / "Manifest.json"
    manifest = json.loads(path.read_text())
    renamed = {}
    for old, item in manifest["itemInfoEntries"].items():
        renamed[old] = str(uuid.uuid5(ITEM_NAMESPACE, item["path"])).upper()
    manifest["itemInfoEntries"] = {renamed[k]: v for k, v in manifest["itemInfoEntries"].items()}
    manifest["rootModelIdentifier"] = renamed[manifest["rootModelIdentifier"]]
    path.write_text(json.dumps(manifest, indent=4, sort_keys=True) + "\n")


def file_table(out):
    return {
        str(p.relative_to(out)): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "coreml_config.json"
    }


def build_ordinary(out):
    from laya_coreml.convert import convert

    convert("fixtures/tiny", out,
            max_length=ORDINARY_MAX_LENGTH, flexible=True, batch_size=1, max_options=SLOTS,
            precision="float16", attention="sdpa", shape_mode="enumerated")


def convert_ane(body, d, length):
    import coremltools as ct
    import torch

    examples = [torch.zeros((1, d, 1, length)), torch.zeros((1, length, 1, length)),
                torch.zeros((1, length, 1, length)), torch.zeros((1, d, 1, 1)),
                torch.zeros((1, length, 1, SLOTS))]
    with torch.no_grad():
        traced = torch.jit.trace(body, tuple(examples), strict=True, check_trace=True)
    names = ("embeddings", "full_mask", "local_mask", "type_vectors", "marker_map")
    model = ct.convert(
        traced,
        source="pytorch",
        convert_to="mlprogram",
        inputs=[ct.TensorType(name=n, shape=tuple(t.shape), dtype=np.float16) for n, t in zip(names, examples)],
        outputs=[ct.TensorType(name="logits", dtype=np.float16), ct.TensorType(name="cls", dtype=np.float16)],
        minimum_deployment_target=ct.target.macOS15,
        compute_precision=ct.precision.FLOAT16,
        skip_model_load=True,
    )
    model.author = "laya-bench fixtures (random-weight builtin:tiny)"
    model.license = "Apache-2.0"
    model.short_description = "Laya typed-decision body, channel-first BC1L, fixed B1/K32/L96, FP16"
    return model


def palettize(model):
    from coremltools.optimize.coreml import OpPalettizerConfig, OptimizationConfig, palettize_weights

    op = OpPalettizerConfig(mode=W8["mode"], nbits=W8["nbits"], granularity=W8["granularity"],
                            group_size=W8["group_size"], weight_threshold=W8["weight_threshold"],
                            num_kmeans_workers=1)
    return palettize_weights(model, OptimizationConfig(op_type_configs={W8["op_type"]: op}))


def write_ane_bundle(out, model, weights, extra):
    from safetensors.numpy import save_file

    out.mkdir(parents=True)
    model.save(str(out / "model.mlpackage"))
    fix_item_identifiers(out / "model.mlpackage")
    spec = out / "model.mlpackage" / SPEC
    spec.write_bytes(canonical_spec(spec))
    copy_host_files(out)
    save_file({k: np.ascontiguousarray(weights[k], dtype=np.float32) for k in HOST_TENSORS},
              str(out / "host_weights.safetensors"))
    manifest = {
        "format": "laya-coreml-ane",
        "format_version": 1,
        "option_layout": "sequential",
        "source": "fixtures/tiny",
        "source_weights_sha256": sha256_file(TINY / "model.safetensors"),
        "precision": "float16",
        "graph": "bc1l-masked",
        "minimum_deployment_target": "macOS15 / iOS18",
        "shape": {"batch_size": 1, "max_length": ANE_LENGTH, "min_length": ANE_LENGTH,
                  "max_options": SLOTS, "flexible": False, "mode": "fixed", "lengths": None},
        "inputs": {"embeddings": "float16 (1, D, 1, L)", "full_mask": "float16 (1, L, 1, L)",
                   "local_mask": "float16 (1, L, 1, L)", "type_vectors": "float16 (1, D, 1, 1)",
                   "marker_map": "float16 (1, L, 1, 32)"},
        "outputs": {"logits": "float16 (1, 1, 1, 32)", "cls": "float16 (1, D, 1, 1)"},
        **extra,
        "versions": versions(),
        "files": file_table(out),
    }
    (out / "coreml_config.json").write_text(json.dumps(manifest, indent=2) + "\n")


def equivalent(rel, new, old):
    """Why two differing files are the same artifact, or None. Only the ordinary bundle, which
    laya-coreml's converter writes as it does, needs this: its Manifest.json has random item
    identifiers, its model.mlmodel protobuf maps come in run-dependent order, and its
    coreml_config.json records conversion_seconds and the hashes of those two files."""
    if rel.name == "model.mlmodel":
        if canonical_spec(new) == canonical_spec(old):
            return "same specification (protobuf map order differs)"
    elif rel.name == "Manifest.json":
        strip = lambda p: sorted(json.loads(p.read_text())["itemInfoEntries"].values(), key=lambda e: e["path"])
        if strip(new) == strip(old):
            return "same items (random item identifiers differ)"
    elif rel.name == "coreml_config.json":
        a, b = json.loads(new.read_text()), json.loads(old.read_text())
        loose = {str(SPEC), "Manifest.json"}
        for m in (a, b):
            m.pop("conversion_seconds", None)
            for name in [n for n in m.get("files", {}) if n.removeprefix("model.mlpackage/") in loose]:
                m["files"][name].pop("sha256")
                m["files"][name].pop("bytes")
        if a == b:
            return "same manifest (conversion_seconds and the hashes of the two files above differ)"
    return None


def compare(new_root, old_root):
    """Every file that differs between two fixture trees, and whether it is equivalent."""
    differ = []
    for new in sorted(p for p in new_root.rglob("*") if p.is_file()):
        rel = new.relative_to(new_root)
        old = old_root / rel
        if not old.is_file():
            differ.append(f"{rel} (only in {new_root})")
        elif old.read_bytes() != new.read_bytes():
            why = equivalent(rel, new, old)
            differ.append(f"{rel}: {why}" if why else f"{rel}: DIFFERENT")
    for old in sorted(p for p in old_root.rglob("*") if p.is_file()):
        if not (new_root / old.relative_to(old_root)).exists() and old.name != "README.md":
            differ.append(f"{old.relative_to(old_root)} (only in {old_root})")
    return differ


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "fixtures" / "coreml")
    parser.add_argument("--compare", type=Path, help="after building, list files that differ from this tree")
    args = parser.parse_args()
    args.out = args.out.resolve()
    import os

    from safetensors.numpy import load_file

    os.chdir(ROOT)  # the ordinary manifest records its source as given: fixtures/tiny

    enc = json.loads((TINY / "encoder" / "config.json").read_text())
    agent = json.loads((TINY / "rl_agent_config.json").read_text())
    weights = load_file(str(TINY / "model.safetensors"))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in ("ordinary", "ane", "ane-w8"):
        if (args.out / name).exists():
            shutil.rmtree(args.out / name)

    print("ordinary: laya_coreml.convert (enumerated lengths up to", ORDINARY_MAX_LENGTH, ")")
    build_ordinary(args.out / "ordinary")

    print("ane: BC1L body, FP32 layout check against laya_coreml.torch_model.DecisionModel")
    body = make_bc1l(weights, enc, agent, ANE_LENGTH)
    worst = check_against_reference(body, weights, enc, agent, ANE_LENGTH)
    model = convert_ane(body, enc["hidden_size"], ANE_LENGTH)
    check = {"layout_check": {"reference": "laya_coreml.torch_model.DecisionModel (FP32, torch)",
                              "cases": 6, "max_abs_logit_difference": float(f"{worst:.3e}")}}
    write_ane_bundle(args.out / "ane", model, weights, check)

    print("ane-w8: palettize_weights", W8)
    write_ane_bundle(args.out / "ane-w8", palettize(model), weights, {**check, "quantization": "w8", "palettization": W8})

    for name in ("ordinary", "ane", "ane-w8"):
        total = sum(p.stat().st_size for p in (args.out / name).rglob("*") if p.is_file())
        print(f"{name}: {total} bytes")
    if args.compare:
        differ = compare(args.out, args.compare.resolve())
        print(f"files that differ from {args.compare}:", *differ or ["none"], sep="\n  ")
        if any(d.endswith("DIFFERENT") or "(only in" in d for d in differ):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
