#!/usr/bin/env python3
"""laya-mlx 0.5.0's own compiled predict on a checkpoint folder: results and time per decision.

The published baseline ran laya-mlx with `compile=True`, `cache_prompts=True` and
`pad_to_multiple=32` (docs/mlx.md). This script loads a checkpoint folder the same way (dtype
float32 or float16), answers the requests of a request file once and prints each result as
one compact JSON line (the format of `laya-bench predict --json`, so the two can be diffed),
then times `agent.predict(state, questions)` in process with a monotonic ns clock, cycling the
requests, after a warm-up. Used for docs/PERFORMANCE.md's MLX comparison; not run by CI.

    python -m venv /tmp/venv-mlx
    /tmp/venv-mlx/bin/pip install mlx==0.32.2 mlx-cpu==0.32.2 laya-mlx==0.5.0
    /tmp/venv-mlx/bin/python scripts/bench_laya_mlx.py CKPT REQUESTS.json --dtype float32 \
        --results out.jsonl --seconds 20

The checkpoint must be a folder in the original layout whose rl_agent_config.json has the
`encoder` key laya-mlx requires (`laya-bench export` writes one).
"""

import argparse
import json
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("requests", help="a request or a list of {state, questions} requests")
    ap.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    ap.add_argument("--results", help="write one compact result JSON per request here")
    ap.add_argument("--warmup", type=int, default=20, help="calls before timing")
    ap.add_argument("--seconds", type=float, default=10.0, help="time this long (whole calls)")
    ap.add_argument("--no-compile", action="store_true", help="run uncompiled (not the baseline)")
    ap.add_argument(
        "--no-load-warmup",
        action="store_true",
        help="skip laya-mlx's own warm-up over its synthetic shapes at load (--warmup still runs "
        "the requests first, so every shape timed here is traced before timing)",
    )
    args = ap.parse_args()

    import laya_mlx
    import mlx.core as mx

    with open(args.requests, encoding="utf-8") as f:
        reqs = json.load(f)
    if isinstance(reqs, dict):
        reqs = [reqs]
    t0 = time.perf_counter()
    agent = laya_mlx.load(
        args.checkpoint,
        compile=not args.no_compile,
        cache_prompts=True,
        pad_to_multiple=32,
        dtype=args.dtype,
        compile_warmup=not args.no_load_warmup,
        device="cpu" if mx.default_device() == mx.cpu else None,
    )
    load_s = time.perf_counter() - t0
    results = [agent.predict(r["state"], r["questions"]) for r in reqs]
    if args.results:
        with open(args.results, "w", encoding="utf-8") as f:
            for res in results:
                f.write(json.dumps(res, ensure_ascii=False, separators=(",", ":")) + "\n")
    for i in range(args.warmup):
        r = reqs[i % len(reqs)]
        agent.predict(r["state"], r["questions"])
    times = []
    end = time.perf_counter() + args.seconds
    i = 0
    while time.perf_counter() < end:
        r = reqs[i % len(reqs)]
        t = time.perf_counter_ns()
        agent.predict(r["state"], r["questions"])
        times.append(time.perf_counter_ns() - t)
        i += 1
    times.sort()

    def pct(p: float) -> float:
        k = (len(times) - 1) * p
        lo, hi = int(k), min(int(k) + 1, len(times) - 1)
        return (times[lo] + (times[hi] - times[lo]) * (k - lo)) / 1e6

    print(
        json.dumps(
            {
                "runtime": "laya-mlx",
                "laya_mlx_version": getattr(laya_mlx, "__version__", "unknown"),
                "mlx_version": mx.__version__,
                "device": str(mx.default_device()),
                "dtype": args.dtype,
                "compiled": not args.no_compile,
                "load_warmup": not args.no_load_warmup,
                "cache_prompts": True,
                "pad_to_multiple": 32,
                "load_s": round(load_s, 3),
                "calls": len(times),
                "mean_ms": statistics.fmean(times) / 1e6,
                "p50_ms": pct(0.5),
                "p90_ms": pct(0.9),
                "p99_ms": pct(0.99),
                "min_ms": times[0] / 1e6,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
