"""Drive the laya-coreml 0.5.1 reference host code on Linux (shared by the golden scripts).

Nothing of the reference is copied here: it is IMPORTED at run time from an unpacked wheel.
Get it with

    pip download --no-deps laya-coreml==0.5.1 -d /tmp/wheels
    mkdir -p /tmp/laya_coreml && cd /tmp/laya_coreml && unzip -q /tmp/wheels/laya_coreml-0.5.1-*.whl

and point LAYA_COREML_DIR at the directory that CONTAINS the `laya_coreml/` package
(default: the `laya_coreml` folder in the system's temporary directory, where the commands above
unpack it). Only `tokenizers`, `safetensors` and `numpy` are needed for the
host path; `torch` additionally for `laya_coreml.torch_model`.
"""

import copy
import json
import os
import shutil
import sys
import tempfile
import types
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = Path(os.environ.get("LAYA_FIXTURE_DIR", str(ROOT / "fixtures" / "tiny")))
REF_DIR = os.environ.get("LAYA_COREML_DIR", str(Path(tempfile.gettempdir()) / "laya_coreml"))
if not (Path(REF_DIR) / "laya_coreml").is_dir():
    sys.exit(
        f"laya_ref.py: no laya_coreml package in {REF_DIR}; unpack the laya-coreml 0.5.1 wheel there "
        "(see this file's docstring) or set LAYA_COREML_DIR to the folder that contains `laya_coreml/`"
    )

if REF_DIR not in sys.path:
    sys.path.insert(0, REF_DIR)

# `laya_coreml.ane` imports coremltools at module level; a stub is enough for its host code.
if "coremltools" not in sys.modules:
    _ct = types.ModuleType("coremltools")

    class _ComputeUnit:
        CPU_AND_NE = "CPU_AND_NE"
        CPU_AND_GPU = "CPU_AND_GPU"
        ALL = "ALL"
        CPU_ONLY = "CPU_ONLY"

    _ct.ComputeUnit = _ComputeUnit
    _ct.models = types.SimpleNamespace(MLModel=None)
    sys.modules["coremltools"] = _ct

import laya_coreml  # noqa: E402
from laya_coreml.common import option_layout, read_temperatures  # noqa: E402
from laya_coreml.runtime import RuntimeMixin  # noqa: E402
from laya_coreml.tokenizer import Tokenizer  # noqa: E402

REF_VERSION = getattr(laya_coreml, "__version__", "0.5.1")

ENUM_LENGTHS = [16, 32, 48, 64, 80, 96, 112, 128, 192, 256, 384, 512]


def shape_fixed(L=96, B=1, K=32):
    """Like the ANE bundle: every row padded to L."""
    return {"batch_size": B, "max_length": L, "min_length": 16, "max_options": K,
            "flexible": False, "mode": "fixed", "lengths": None}


def shape_enum(B=1, K=32, L=512):
    return {"batch_size": B, "max_length": L, "min_length": 16, "max_options": K,
            "flexible": True, "mode": "enumerated",
            "lengths": [n for n in ENUM_LENGTHS if n <= L]}


def shape_range(B=1, K=32, L=512):
    return {"batch_size": B, "max_length": L, "min_length": 16, "max_options": K,
            "flexible": True, "mode": "range", "lengths": None}


def f32(x):
    """A float32 value written as the Python float it is exactly (round-trips through JSON)."""
    v = float(np.float32(x))
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return v


# ------------------------------------------------------------------------------------------
# Deterministic fake model outputs.


def fake_outputs(arrays, n_actions=2):
    """Logits O(1) that differ per slot and per row; masked slots -1e4 like the real graph."""
    ids = arrays["input_ids"].astype(np.int64)
    att = arrays["attention_mask"].astype(np.int64)
    mpos = arrays["marker_pos"].astype(np.int64)
    mmask = arrays["marker_mask"].astype(bool)
    qtype = arrays["qtype"].astype(np.int64)
    B, L = ids.shape
    K = mpos.shape[1]
    logits = np.zeros((B, K), np.float64)
    act = np.zeros((B, n_actions), np.float64)
    for b in range(B):
        n = int(att[b].sum())
        h = int(((ids[b, :n] * (np.arange(n) + 1)) % 997).sum() % 997)
        for j in range(K):
            m = int(mpos[b, j])
            nxt = int(ids[b, min(m + 1, L - 1)])
            x = 0.61 * j + 0.017 * nxt + 0.031 * m + 0.0029 * h + 0.37 * int(qtype[b])
            logits[b, j] = 2.0 * np.sin(x) + 0.25 * np.cos(3.1 * x)
        for a in range(n_actions):
            act[b, a] = 3.0 * np.sin(0.0017 * h + 0.3 * n + 1.3 * a + 0.5 * int(qtype[b]))
    logits = np.where(mmask, logits, -1e4)
    return logits.astype(np.float32), act.astype(np.float32)


def uniform_outputs(arrays, n_actions=2):
    """Every real slot logit 0 (exact ties), action logits 0."""
    mmask = arrays["marker_mask"].astype(bool)
    logits = np.where(mmask, 0.0, -1e4).astype(np.float32)
    return logits, np.zeros((mmask.shape[0], n_actions), np.float32)


def nan_outputs(arrays, n_actions=2):
    logits, act = fake_outputs(arrays, n_actions)
    logits[0, 0] = np.nan
    return logits, act


def explicit_outputs(rows, actions=None):
    """A fake forward returning the given slot logits for the real rows of each forward (in order)."""
    state = {"next": 0}

    def fn(arrays, n_actions=2):
        mmask = arrays["marker_mask"].astype(bool)
        B, K = mmask.shape
        logits, act = fake_outputs(arrays, n_actions)
        for b in range(B):
            if state["next"] >= len(rows) or not mmask[b].any():
                continue
            vals = rows[state["next"]]
            logits[b, : len(vals)] = np.asarray(vals, np.float32)
            if actions is not None:
                act[b] = np.asarray(actions[state["next"]], np.float32)
            state["next"] += 1
        return np.where(mmask, logits, np.float32(-1e4)).astype(np.float32), act

    return fn


FAKES = {"hash": fake_outputs, "uniform": uniform_outputs, "nan": nan_outputs}


# ------------------------------------------------------------------------------------------


class HostAgent(RuntimeMixin):
    """The reference host (RuntimeMixin) over an original checkpoint bundle, with a fake model.

    Mirrors what `laya_coreml.agent.Agent.__init__` does before it loads the Core ML package:
    option_layout check, `read_temperatures`, `Tokenizer`, then the anchor's `_init_host`.
    """

    def __init__(self, bundle=BUNDLE, shape=None, agent_config_patch=None,
                 tokenizer_config_patch=None, fake="hash", record=True):
        bundle = Path(bundle)
        self.shape = dict(shape or shape_fixed())
        self.cfg = json.loads((bundle / "rl_agent_config.json").read_text())
        if agent_config_patch:
            self.cfg.update(copy.deepcopy(agent_config_patch))
        option_layout(self.cfg)
        (
            self.temperature,
            self.temperature_by_options,
            self.temperature_raw,
            self.temperature_by_options_raw,
        ) = read_temperatures(self.cfg)
        tok_dir = bundle / "tokenizer"
        self._tmp = None
        if tokenizer_config_patch:
            self._tmp = tempfile.mkdtemp(prefix="laya-tok-")
            shutil.copytree(tok_dir, self._tmp, dirs_exist_ok=True)
            conf = json.loads((tok_dir / "tokenizer_config.json").read_text())
            conf.update(tokenizer_config_patch)
            (Path(self._tmp) / "tokenizer_config.json").write_text(json.dumps(conf))
            tok_dir = Path(self._tmp)
        try:
            self.tok = Tokenizer(tok_dir)
        finally:
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
        self.batch_size = self.shape["batch_size"]
        self.pad_to_multiple = 16
        self.manifest = {"precision": "float32", "shape": self.shape}
        self.n_actions = len(self.cfg.get("act_costs", {})) + 1
        self.fake = FAKES[fake] if isinstance(fake, str) else fake
        self.record = record
        self.rows_log, self.forward_log = [], []
        self._init_host()

    def _encode_state(self, state, ids, internal, max_len=None, head_max_len=None):
        items = super()._encode_state(state, ids, internal, max_len=max_len,
                                      head_max_len=head_max_len)
        if self.record:
            for it in items:
                self.rows_log.append(copy.deepcopy(it))
        return items

    def forward(self, arrays):
        logits, act = self.fake(arrays, self.n_actions)
        if self.record:
            self.forward_log.append(({k: np.array(v) for k, v in arrays.items()},
                                     np.array(logits), np.array(act)))
        return logits, act

    # -- serialisation helpers -----------------------------------------------------------
    def row_json(self, it):
        return {
            "ids": [int(i) for i in it["ids"]],
            "markers": [int(m) for m in it["markers"]],
            "qtype": int(it["qtype"]),
            "tokens": [self.tok.backend.id_to_token(int(i)) for i in it["ids"]],
            "layout": None if "layout" not in it else {
                k: [int(x) for x in it["layout"][k]] for k in ("position_ids", "option_ids")},
            "state_stats": it["state_stats"],
            "option_stats": it["options"],
        }

    @staticmethod
    def forward_json(entry):
        arrays, logits, act = entry
        order = ["input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype",
                 "position_ids", "option_ids"]
        return {
            "arrays": {k: arrays[k].astype(np.int64).tolist() for k in order if k in arrays},
            "outputs": {
                "logits": [[f32(x) for x in row] for row in logits],
                "action_logits": [[f32(x) for x in row] for row in act],
            },
        }


def run_call(agent, call):
    method = call["method"]
    kwargs = dict(call.get("kwargs") or {})
    if method == "predict":
        return [agent.predict(call["state"], call["questions"], **kwargs)]
    if method == "predict_batch":
        return agent.predict_batch(call["states"], call["questions"], **kwargs)
    raise ValueError(method)


def jsonable(obj):
    """Round-trip through JSON so the reference sees exactly what a JSON request carries."""
    return json.loads(json.dumps(obj, ensure_ascii=False))


def packed_rows(states, questions, shape, agent_config_patch=None, **kwargs):
    """Arrays of every forward the host would send for predict_batch(states, questions)."""
    agent = HostAgent(shape=shape, agent_config_patch=agent_config_patch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent.predict_batch(states, questions, **kwargs)
    return agent, [e[0] for e in agent.forward_log]
