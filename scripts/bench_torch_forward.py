#!/usr/bin/env python3
"""Time the reference PyTorch forward (laya_coreml.torch_model.DecisionModel) on CPU, FP32.

Random weights with the multilingual checkpoint's shape (mmBERT-base: D 768, N 22, 12 heads,
I 1152; local_attention 128, RoPE theta 160000 for both kinds; head_layers 2, A 2). The vocabulary
is shrunk from ~256000 to 4096: the embedding gather is a negligible part of the forward (the
full table would only cost memory). Batch 1, length 96, 4 option markers, explicit attention,
`torch.set_num_threads(2)`, 20 warm-up + 30 timed calls; prints the median in ms as one JSON line.

    /tmp/refenv/bin/python scripts/bench_torch_forward.py

`--serve`: after the warm-up, print `ready torch VERSION`, then time one forward for every line
read from stdin and print its time in ms (one line each) until stdin closes. This is how
`cargo bench --bench forward -- --interleave --torch PYTHON` gives PyTorch its turn in the
interleaved rounds.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import laya_ref as lr  # noqa: E402,F401  (puts the reference on sys.path)
from laya_coreml.torch_model import DecisionModel  # noqa: E402

ENCODER = {
    "model_type": "modernbert", "hidden_activation": "gelu", "vocab_size": 4096,
    "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 22,
    "intermediate_size": 1152, "norm_eps": 1e-5, "norm_bias": False, "attention_bias": False,
    "mlp_bias": False, "global_attn_every_n_layers": 3, "local_attention": 128,
    "global_rope_theta": 160000.0, "local_rope_theta": 160000.0,
}
AGENT = {"head_layers": 2, "act_costs": {"ask": 0.1}, "option_layout": "sequential"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--length", type=int, default=96)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--serve", action="store_true",
                    help="time one forward per stdin line, print its ms (after `ready torch VERSION`)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = DecisionModel(ENCODER, AGENT, max_length=512)
    with torch.no_grad():
        for p in model.parameters():  # in_proj_weight starts as torch.empty: never time garbage
            p.normal_(0.0, 0.02)
    model.eval()
    L = args.length
    n = L - 5  # like the invoice rows: 91 real tokens padded to 96
    ids = torch.randint(5, 4096, (1, L))
    att = torch.zeros((1, L), dtype=torch.long)
    att[0, :n] = 1
    mpos = torch.zeros((1, 32), dtype=torch.long)
    mpos[0, :4] = torch.tensor([14, 22, 31, 40])
    mmask = torch.zeros((1, 32), dtype=torch.long)
    mmask[0, :4] = 1
    qtype = torch.zeros((1,), dtype=torch.long)
    samples = []
    with torch.inference_mode():
        for _ in range(args.warmup):
            model(ids, att, mpos, mmask, qtype)
        if args.serve:
            print(f"ready torch {torch.__version__}", flush=True)
            for _ in sys.stdin:
                t0 = time.perf_counter()
                model(ids, att, mpos, mmask, qtype)
                print(f"{(time.perf_counter() - t0) * 1e3:.4f}", flush=True)
            return
        for _ in range(args.iters):
            t0 = time.perf_counter()
            model(ids, att, mpos, mmask, qtype)
            samples.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({
        "bench": "torch-forward-fp32-cpu",
        "torch": torch.__version__,
        "shape": {"B": 1, "L": L, "K": 32, "D": 768, "N": 22, "heads": 12, "I": 1152,
                  "V": 4096, "local_attention": 128, "head_layers": 2, "A": 2},
        "threads": args.threads,
        "warmup": args.warmup,
        "iters": args.iters,
        "median_ms": round(float(np.median(samples)), 2),
        "min_ms": round(float(np.min(samples)), 2),
        "mean_ms": round(float(np.mean(samples)), 2),
    }))


if __name__ == "__main__":
    main()
