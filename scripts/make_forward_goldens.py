#!/usr/bin/env python3
"""Forward goldens: the reference PyTorch graph on packed batches of real host rows.

Runs `laya_coreml.torch_model.load_model("fixtures/tiny", max_length=512)` (FP32, explicit
attention, CPU, one thread) on batches that the reference host code itself packed
(`scripts/laya_ref.py`), and writes `fixtures/goldens/forward.json`:

    {"schema": "laya-bench-forward-goldens/1", "torch": ..., "cases": [
      {"name", "covers", "option_layout", "arrays": {int arrays as the graph receives them},
       "real_rows", "logits", "action_logits",
       "ablations_max_abs_delta_logit": {"no_rope", "double_window", "tanh_gelu"},
       "ablations_max_abs_delta_action": {...},
       "float64_max_abs_delta_logit", "float64_max_abs_delta_action"}]}

Each ablation monkeypatches the reference model (RoPE removed; `local_attention` doubled; every
GELU replaced by the tanh approximation); its delta is max |logit - ablated| over the real rows'
real option slots and must exceed 1e-2 (100x the 1e-4 parity tolerance) on every case.
`float64_*` is the same model run in float64: the float32 rounding-noise floor of the reference.

    /tmp/refenv/bin/pip install torch   # CPU is enough
    /tmp/refenv/bin/python scripts/make_forward_goldens.py
"""

import contextlib
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import laya_ref as lr  # noqa: E402
from laya_ref import f32, shape_enum, shape_fixed, shape_range  # noqa: E402
from laya_coreml import torch_model as tm  # noqa: E402

import make_host_goldens as hg  # noqa: E402  (request building blocks)

OUT = lr.ROOT / "fixtures" / "goldens" / "forward.json"
MIN_DELTA = 1e-2
PAR = {"option_layout": "parallel"}


@contextlib.contextmanager
def ablation(model, kind):
    undo = []
    if kind == "no_rope":
        orig = tm.Attention.rotate
        tm.Attention.rotate = lambda self, value, position_ids=None: value
        undo.append(lambda: setattr(tm.Attention, "rotate", orig))
    elif kind == "double_window":
        window = model.encoder.window
        model.encoder.window = 2 * window
        undo.append(lambda: setattr(model.encoder, "window", window))
    elif kind == "tanh_gelu":
        orig = tm.MLP.forward

        def forward(self, x):
            value, gate = self.Wi(x).chunk(2, dim=-1)
            return self.Wo(F.gelu(value, approximate="tanh") * gate)

        tm.MLP.forward = forward
        undo.append(lambda: setattr(tm.MLP, "forward", orig))
        for module in model.modules():
            if isinstance(module, torch.nn.GELU):
                module.approximate = "tanh"
                undo.append(lambda m=module: setattr(m, "approximate", "none"))
    else:
        raise ValueError(kind)
    try:
        yield
    finally:
        for fn in reversed(undo):
            fn()


def run(model, arrays, dtype=torch.float32):
    t = {k: torch.from_numpy(np.asarray(v, np.int64)) for k, v in arrays.items()}
    with torch.no_grad():
        logits, action = model(
            t["input_ids"], t["attention_mask"], t["marker_pos"], t["marker_mask"], t["qtype"],
            t.get("position_ids"), t.get("option_ids"),
        )
    return logits.numpy(), action.numpy()


def packed(states, questions, shape, patch=None, pick=None, **kwargs):
    """The packed arrays of one forward the reference host sends (the last one, or `pick`)."""
    agent, forwards = lr.packed_rows(states, questions, shape, agent_config_patch=patch, **kwargs)
    arrays = forwards[-1 if pick is None else pick]
    return arrays


CASES = []


def case(name, covers, arrays, layout="sequential"):
    B, L = arrays["input_ids"].shape
    name = "L%d-B%d-%s" % (L, B, name)
    CASES.append({"name": name, "covers": covers, "option_layout": layout, "arrays": arrays})


def build_cases():
    q2 = {"c": hg.choice(["a", "b"], "Pick.")}
    case("choice-2", "shortest bucket: a 2-option choice with an empty state (row <= 16)",
         packed([""], q2, shape_range()))
    case("noul", "noul row of a short ticket, enumerated bucket 48",
         packed(["Refund my order, please."], hg.Q_NOUL, shape_enum()))
    case("fixed-choice-snake", "ANE-like fixed L96 B1: the snake 4-option choice row",
         packed([hg.SNAKE_STATE], hg.Q_SNAKE, shape_fixed(), pick=0))
    case("choice-dict-state", "dict state, 4-option choice, enumerated bucket 128 "
         "(window +-8 cuts every row)", packed([hg.TICKET_DICT], hg.Q_CHOICE, shape_enum(), pick=0))
    case("score-long-state", "long state, 3-level score, enumerated bucket 256, far past "
         "the sliding window", packed([hg.LONG_TEXT[:650]], hg.Q_SCORE, shape_enum()))
    case("fixed-dummy-row", "B3 batch with 2 real rows (choice, noul) and 1 padded dummy row "
         "(attention on column 0 only, no markers)",
         packed([hg.SNAKE_STATE], {"move": hg.Q_SNAKE["move"], "risk": hg.Q_SNAKE["risk"]},
                shape_fixed(B=3)))
    case("mixed-types", "B3 batch, one row of each question type (choice, score, noul), "
         "enumerated bucket", packed([hg.TICKET_DICT], hg.Q_MIXED, shape_enum(B=3)))
    opt32 = ["option %d" % i for i in range(32)]
    case("K32-choice-all-slots", "32-option choice: every marker slot 0..31 used; B2 with a "
         "2-option row (slots 2..31 masked); range bucket (ceil16)",
         packed([hg.TICKET], {"many": hg.choice(opt32), "n": hg.noul()}, shape_range(B=2)))
    case("K12-score-levels", "12-level score (slots up to 11), enumerated",
         packed([hg.TICKET], {"s": hg.score(["level text %d" % i for i in range(12)])},
                shape_enum()))
    case("parallel-choice", "parallel layout: position_ids/option_ids, option-blind masks",
         packed([hg.TICKET], hg.Q_CHOICE, shape_range(), patch=PAR), "parallel")
    case("parallel-B4-mixed", "parallel layout, B4: noul, permuted score, choice for a dict state",
         packed([hg.TICKET_DICT], {**hg.Q_NOUL,
                                   "s": hg.score(["none", "low", "high"], option_order=[2, 0, 1]),
                                   **hg.Q_CHOICE}, shape_range(B=4), patch=PAR), "parallel")


def bundle_for(layout, tmp):
    if layout == "sequential":
        return lr.BUNDLE
    path = Path(tmp) / "tiny-parallel"
    if not path.exists():
        shutil.copytree(lr.BUNDLE, path)
        cfg = json.loads((path / "rl_agent_config.json").read_text())
        cfg["option_layout"] = "parallel"
        (path / "rl_agent_config.json").write_text(json.dumps(cfg))
    return path


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_cases()
    out_cases = []
    tmp = tempfile.mkdtemp(prefix="laya-fwd-")
    try:
        models = {}
        for c in CASES:
            layout = c["option_layout"]
            if layout not in models:
                path = bundle_for(layout, tmp)
                m32 = tm.load_model(path, max_length=512)
                m64 = tm.load_model(path, max_length=512).double()
                m64.act_head.float()  # the graph casts the CLS row to float32 before act_head
                models[layout] = (m32, m64)
            m32, m64 = models[layout]
            arrays = c["arrays"]
            mmask = arrays["marker_mask"].astype(bool)
            real = [b for b in range(mmask.shape[0]) if mmask[b].any()]
            logits, action = run(m32, arrays)
            sel = np.zeros_like(mmask)
            sel[real] = mmask[real]

            def delta(other):
                return float(np.abs(other[0][sel] - logits[sel]).max()), float(
                    np.abs(other[1][real] - action[real]).max())

            abl_l, abl_a = {}, {}
            for kind in ("no_rope", "double_window", "tanh_gelu"):
                with ablation(m32, kind):
                    abl_l[kind], abl_a[kind] = delta(run(m32, arrays))
            d64_l, d64_a = delta(run(m64, arrays))
            out = {
                "name": c["name"],
                "covers": c["covers"],
                "option_layout": layout,
                "arrays": {k: np.asarray(v).astype(np.int64).tolist() for k, v in arrays.items()},
                "real_rows": real,
                "logits": [[f32(x) for x in row] for row in logits],
                "action_logits": [[f32(x) for x in row] for row in action],
                "ablations_max_abs_delta_logit": abl_l,
                "ablations_max_abs_delta_action": abl_a,
                "float64_max_abs_delta_logit": d64_l,
                "float64_max_abs_delta_action": d64_a,
                "stats": {
                    "max_abs_logit": float(np.abs(logits[sel]).max()),
                    "min_option_spread": float(min(np.ptp(logits[b][mmask[b]]) for b in real)),
                    "max_abs_action_logit": float(np.abs(action[real]).max()),
                },
            }
            assert np.isfinite(logits).all() and np.isfinite(action).all(), c["name"]
            out_cases.append(out)
            print("%-24s L=%-3d B=%d  no_rope %.3g  double_window %.3g  tanh_gelu %.3g  f64 %.2g"
                  % (c["name"], arrays["input_ids"].shape[1], arrays["input_ids"].shape[0],
                     abl_l["no_rope"], abl_l["double_window"], abl_l["tanh_gelu"], d64_l))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    worst = {k: min(c["ablations_max_abs_delta_logit"][k] for c in out_cases)
             for k in ("no_rope", "double_window", "tanh_gelu")}
    doc = {
        "schema": "laya-bench-forward-goldens/1",
        "torch": torch.__version__,
        "reference": {"package": "laya-coreml", "version": lr.REF_VERSION,
                      "module": "laya_coreml.torch_model", "attention": "explicit",
                      "dtype": "float32", "device": "cpu", "threads": 1},
        "bundle": "fixtures/tiny",
        "notes": [
            "arrays are exactly what the reference host packed (scripts/laya_ref.py); logits of "
            "masked slots are -1e4 as the graph writes them.",
            "parallel cases use a copy of fixtures/tiny with option_layout=parallel.",
            "real_rows: batch rows that carry a question (others are padding dummies).",
            "ablation and float64 deltas are max |delta| over real rows' real option slots.",
        ],
        "min_ablation_delta": worst,
        "cases": out_cases,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(hg.dump_doc(doc), encoding="utf-8")
    print("min over cases:", json.dumps(worst))
    bad = [(c["name"], k, v) for c in out_cases
           for k, v in c["ablations_max_abs_delta_logit"].items() if not v > MIN_DELTA]
    if bad:
        raise SystemExit("ablation deltas <= %g: %r -- rescale the fixture" % (MIN_DELTA, bad))


if __name__ == "__main__":
    main()
