#!/usr/bin/env python3
"""Write fixtures/reference/laya-cuda/results.json: laya-cuda results in laya 0.3's shape, for the
tests of laya-bench's result-shape adapter (CI only reads the file).

Three kinds of result are in it:
  recorded   what laya-cuda 0.1.1.post1 answered on an NVIDIA H200 (CUDA 13, FP16 kernels) in the
             run of docs/runs/2026-12-04-h200 (its run.log), copied here as it was printed
  emulated   laya-cuda 0.1.1.post1's own host code (its `Laya.prepare` rows and `Laya.decode`
             answers, imported from the unpacked wheel) around laya-mlx 0.5.0's FP32 forward on
             the CPU in place of laya-cuda's CUDA kernels, beside laya-mlx's own answer to the
             same request (laya 0.4's shape). No CUDA is needed; the numbers are the model's.
  invoice    the same for the 8 requests of laya-bench's invoice workload (rows of 91 tokens),
             as scripts/request_recorder.py captured them from a `speed` run

Usage (the venv of scripts/setup-ref.sh has laya-mlx, tokenizers and numpy):
  pip download --no-deps laya-cuda==0.1.1.post1 --python-version 3.12 --only-binary=:all: -d /tmp/lc
  unzip -q /tmp/lc/laya_cuda-0.1.1.post1-py3-none-any.whl -d /tmp/lc/src
  laya-bench export --model synthetic:multilingual --output /tmp/ckpt-ml
  # the invoice workload's requests as laya-bench builds them (rows of exactly 91 tokens):
  LAYA_BENCH_PYTHON=~/.cache/laya-bench/ref-venv/bin/python laya-bench speed --model /tmp/ckpt-ml \
    --arm r=ref:factory:scripts/request_recorder.py:make:/tmp/ckpt-ml:/tmp/invoice.jsonl \
    --cycles 1 --seconds 1s --warmup 8 --no-progress --raw /tmp/r.raw.jsonl --output /tmp/r.json
  ~/.cache/laya-bench/ref-venv/bin/python scripts/make_laya_cuda_fixtures.py /tmp/lc/src /tmp/ckpt-ml \
    /tmp/invoice.jsonl
"""
import hashlib
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures/reference/laya-cuda/results.json"

# The H200 run's probe (docs/runs/2026-12-04-h200/run.log, 15:13:50 UTC): its request and the
# result laya-cuda returned, which laya-bench then refused for its shape.
RECORDED = {
    "source": "docs/runs/2026-12-04-h200/run.log (laya-cuda 0.1.1.post1 on an NVIDIA H200, cupy-cuda13x, CUDA 13)",
    "state": "The customer wants a refund.",
    "questions": {"refund": {"type": "noul", "instructions": "Refund asked for?"}},
    "result": {"model": "laya-rl-agent", "answers": {"refund": {"type": "noul", "confidence": 0.5429,
               "action": {"act_probability": 0.4414}, "noul": 0.4571}},
               "usage": {"input_tokens": 40, "output_tokens": 0}},
}

REQUESTS = [
    (RECORDED["state"], RECORDED["questions"]),
    ({"vendor": "Acme", "amount": 1200, "note": "urgent, second reminder"}, {
        "pay": {"type": "noul", "instructions": "Should this invoice be paid now?"},
        "next": {"type": "choice", "instructions": "What next?", "criteria": ["pay", "hold", "escalate"]},
        "risk": {"type": "score", "instructions": "How risky?", "criteria": ["none", "some", "high"]},
    }),
    ("Der Kunde fragt nach dem Status seiner Bestellung.", {
        "intent": {"type": "choice", "instructions": "Intent?",
                   "criteria": {"status": "order status", "refund": "money back", "other": None}},
        "urgent": {"type": "noul", "instructions": "Is it urgent?",
                   "criteria": {"true": "needs an answer today", "false": ""}},
    }),
    ({"ticket": 7, "messages": ["hi", "my parcel is late", "again"]}, {
        "mood": {"type": "score", "instructions": "How upset is the customer?",
                 "criteria": ["calm", "annoyed", "angry", "furious"]},
    }),
]


def invoice_requests(path):
    """The distinct requests of a request_recorder.py file, in first-seen order."""
    seen, out = set(), []
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if r.get("kwargs"):
            raise SystemExit(f"{path}: a request passes per-call options {r['kwargs']}; laya-cuda takes none")
        key = json.dumps([r["state"], r["questions"]], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((r["state"], r["questions"]))
    return out


def main(wheel_src, ckpt, invoice_path):
    sys.path.insert(0, wheel_src)
    import numpy as np
    import laya_cuda
    from laya_cuda.models import adapter, resolve
    import laya_mlx
    from laya_mlx.agent import collate_items

    host = adapter(resolve(ckpt))
    agent = laya_mlx.load(ckpt, device="cpu")

    def emulate(requests):
        out = []
        for state, questions in requests:
            items = host.prepare(state, questions)
            rows = [{"ids": ids, "markers": markers, "qtype": kind} for ids, markers, kind in items]
            logits, acts = agent.forward(collate_items(rows, agent.tok.pad_token_id))
            result = host.decode(np.asarray(logits), np.asarray(acts), questions, items)
            out.append({"state": state, "questions": questions, "laya_cuda_result": result,
                        "laya_mlx_result": agent.predict(state, questions)})
        return out

    emulated = emulate(REQUESTS)
    invoice = emulate(invoice_requests(invoice_path))
    weights = hashlib.sha256(Path(ckpt, "model.safetensors").read_bytes()).hexdigest()
    doc = {
        "generator": "scripts/make_laya_cuda_fixtures.py",
        "checkpoint": "laya-bench export --model synthetic:multilingual",
        "model_safetensors_sha256": weights,
        "laya_cuda": laya_cuda.__version__,
        "laya_mlx": laya_mlx.__version__,
        "recorded": [RECORDED],
        "emulated": emulated,
        "invoice_rows_tokens": 91,
        "invoice": invoice,
    }
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(emulated)} emulated, {len(invoice)} invoice requests, 1 recorded)")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
