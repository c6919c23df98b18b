"""A `ref:factory:` runtime that records every request it is asked and answers it with laya-mlx:
`ref:factory:scripts/request_recorder.py:make:CKPT:OUT.jsonl` appends
`{"state", "questions", "kwargs"}` per call to OUT.jsonl. Used to capture the requests of a
laya-bench workload (the invoice workload's states are grown to an exact token count with the
model's own tokenizer) for scripts/make_laya_cuda_fixtures.py."""
import json

import laya_mlx


class Recorder:
    def __init__(self, ckpt, out):
        self.agent, self.out = laya_mlx.load(ckpt, device="cpu"), out

    def predict(self, state, questions, **kwargs):
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"state": state, "questions": questions, "kwargs": kwargs}, ensure_ascii=False) + "\n")
        return self.agent.predict(state, questions, **kwargs)


def make(ckpt, out):
    return Recorder(ckpt, out)
