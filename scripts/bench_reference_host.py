#!/usr/bin/env python3
"""Time the laya-coreml 0.5.1 reference HOST path per decision (docs only, not a test).

One decision = `predict(state, questions)` on the invoice workload (`fixtures/workloads/
invoice.json`: 8 states cycled, one 4-option choice question) through the reference's own
code: validation, prompt building and tokenization, collation, packing into the fixed ANE-like
shape (B1, L96, K32), the model call, non-finite check, decoding and the result dict. The model
call is replaced by returning precomputed constant arrays, so this measures host overhead only.
Tokenizer: the fixture's (`fixtures/tiny`, 1400-token byte-level BPE), not a published one.

    /tmp/refenv/bin/python scripts/bench_reference_host.py [--calls 2000] [--warmup 200]

Prints one JSON line.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import laya_ref as lr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    args = ap.parse_args()
    wl = json.loads((lr.ROOT / "fixtures" / "workloads" / "invoice.json").read_text())
    states, questions = wl["states"], wl["questions"]
    logits = np.full((1, 32), -1e4, np.float32)
    logits[0, :4] = [0.3, -0.2, 1.1, 0.05]
    action = np.array([[0.4, -0.4]], np.float32)

    def constant(arrays, n_actions=2):
        return logits, action

    agent = lr.HostAgent(shape=lr.shape_fixed(L=96, B=1, K=32), fake=constant, record=False)
    first = agent.predict(states[0], questions)
    for i in range(args.warmup):
        agent.predict(states[i % len(states)], questions)
    samples = np.empty(args.calls)
    clock = time.perf_counter_ns
    for i in range(args.calls):
        state = states[i % len(states)]
        t0 = clock()
        agent.predict(state, questions)
        samples[i] = (clock() - t0) / 1e3
    print(json.dumps({
        "bench": "reference-host-per-decision",
        "reference": "laya-coreml %s" % lr.REF_VERSION,
        "workload": "invoice (8 states, 1 choice question, 4 options)",
        "shape": "fixed B1 L96 K32",
        "model_call": "constant arrays",
        "calls": args.calls,
        "warmup": args.warmup,
        "p50_us": round(float(np.percentile(samples, 50)), 1),
        "mean_us": round(float(samples.mean()), 1),
        "p95_us": round(float(np.percentile(samples, 95)), 1),
        "min_us": round(float(samples.min()), 1),
        "input_tokens_first_state": first["usage"]["input_tokens"],
        "python": platform.python_version(),
    }))


if __name__ == "__main__":
    main()
