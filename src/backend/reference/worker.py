# laya-bench's reference worker (shipped inside the binary; docs/reference-runtimes.md).
#
# One persistent process per `ref:` arm. Line protocol over the pipes, one JSON object a line:
#   laya-bench -> worker, first line: {"kind": K, "args": [...]}      (what to load)
#   worker -> laya-bench: {"ready": true, "python": V, "runtime": NAME, "version": V,
#                          "packages": {...}, "options": {...}, "precision": P|null, "load_ns": N,
#                          "result_shape": "current"|"laya-0.3", "call_options": [NAME...]|null}
#                      or {"ready": false, "missing": MODULE, "pip": CMD, "error": TEXT}
#                      or {"ready": false, "error": TEXT}
#   then per request: {"state": S, "questions": Q, "kwargs": {...}}
#   worker -> laya-bench: {"ok": true, "runtime_ns": N, "result": R} or {"ok": false, "error": TEXT}
# `runtime_ns` is the runtime's own predict(state, questions) timed in this process with
# time.perf_counter_ns(); the JSON encoding and the pipes are outside it by construction.
# The runtime's own prints go to stderr: file descriptor 1 is moved to 2 before anything is
# imported, and the protocol writes to a private copy of the original stdout.
import json
import os
import sys
import time
import traceback

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
os.environ["LAYA_BENCH_WORKER_FD"] = str(_proto.fileno())

PIP = {
    "laya_mlx": "pip install laya-mlx==0.5.0 mlx==0.32.2" + (" mlx-cpu==0.32.2" if sys.platform == "linux" else ""),
    "mlx": "pip install mlx==0.32.2" + (" mlx-cpu==0.32.2" if sys.platform == "linux" else ""),
    "laya": "pip install laya==0.4.15 torch",
    "torch": "pip install torch",
    "laya_apple": "pip install laya-apple==1.7.0",
    "laya_coreml": "pip install laya-coreml==0.5.1",
    "coremltools": "pip install coremltools",
    "laya_cuda": "pip install laya-cuda==0.1.1.post1",
    "laya_mnn": "pip install laya-mnn==0.1.3",
    "MNN": "pip install MNN",
}


def send(obj):
    _proto.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n")
    _proto.flush()


def version_of(dist):
    try:
        import importlib.metadata as md

        return md.version(dist)
    except Exception:
        return None


class Missing(Exception):
    def __init__(self, module, error):
        super().__init__(error)
        self.module = module


def need(module):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = (getattr(e, "name", None) or module).split(".")[0]
        raise Missing(top, f"{type(e).__name__}: {e}")


DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def dtype_of(prec, default):
    if prec in (None, ""):
        return default
    if prec not in DTYPES:
        raise ValueError(f"precision {prec!r}: use fp32, fp16 or bf16")
    return DTYPES[prec]


def load_laya_mlx(args):
    ckpt, prec = args[0], (args[1] if len(args) > 1 else None)
    laya_mlx = need("laya_mlx")
    mx = need("mlx.core")
    opts = {
        "compile": True,
        "cache_prompts": True,
        "pad_to_multiple": 32,
        "dtype": dtype_of(prec, "float32"),
        "compile_warmup": True,
        "device": "cpu" if mx.default_device() == mx.cpu else None,
    }
    agent = laya_mlx.load(ckpt, **opts)
    return agent.predict, "laya-mlx", opts, ["laya-mlx", "mlx", "mlx-cpu"]


# laya 0.4.15 chooses its precision at load: on CUDA it autocasts to the checkpoint's `amp_dtype`
# (fp16 where the config has none), LAYA_CUDA_AMP=fp16|bf16 overriding it; on the CPU it stays
# FP32 unless LAYA_CPU_AMP=bf16. It has no switch for FP32 on CUDA: `agent.amp_enabled`, the
# flag its forward reads, is turned off after load for `fp32`. Whatever was asked, the precision
# reported is the one laya says a one-row forward runs in (`agent.dtype_for(1)`).
LAYA_AMP_ENV = ("LAYA_CUDA_AMP", "LAYA_CPU_AMP")


def laya_precision(agent):
    if not hasattr(agent, "dtype_for"):
        return None
    dtype = str(agent.dtype_for(1)).replace("torch.", "")
    short = {v: k for k, v in DTYPES.items()}.get(dtype, dtype)
    return short if short == "fp32" else f"{short} autocast"


def load_laya(args):
    ckpt = args[0]
    device = (args[1] if len(args) > 1 else None) or None
    prec = (args[2] if len(args) > 2 else None) or None
    dtype_of(prec, None)  # refuses an unknown precision
    laya = need("laya")
    opts = {"device": device}
    if prec is not None:
        for k in LAYA_AMP_ENV:
            os.environ.pop(k, None)
        amp = {} if prec == "fp32" else {"LAYA_CUDA_AMP": prec}
        if prec == "bf16":
            amp["LAYA_CPU_AMP"] = prec
        os.environ.update(amp)
        opts.update(amp)
    agent = laya.load(ckpt, device=device)
    if prec == "fp32" and agent.amp_enabled:
        agent.amp_enabled = False
        opts["amp_enabled"] = False
    got = laya_precision(agent)
    if prec is not None and (got or "unknown").split()[0] != prec:
        raise ValueError(
            f"ref:laya: {prec} was asked, but laya on {agent.device} runs {got} "
            f"(laya offers fp16 and bf16 autocast on CUDA and bf16 on the CPU); ask for another precision"
        )
    opts["device"] = str(agent.device)
    if opts["device"].startswith("cuda") and "torch" in sys.modules:
        # FP32 products on CUDA may run as TF32 ("high"/"medium"); "highest" is true FP32.
        opts["float32_matmul_precision"] = sys.modules["torch"].get_float32_matmul_precision()
    opts["precision"] = got
    return agent.predict, "laya", opts, ["laya", "torch", "transformers"]


def load_laya_cuda(args):
    ckpt, device = args[0], (args[1] if len(args) > 1 else "cuda:0")
    laya_cuda = need("laya_cuda")
    opts = {"device": device, "backend": "cuda"}
    engine = laya_cuda.Engine(ckpt, **opts)
    VERSION_HINT["laya-cuda"] = getattr(laya_cuda, "__version__", None)

    # What it runs on: laya-cuda pins cupy-cuda12x and CUDA 12's wheels, a machine may have
    # CUDA 13's; record the CUDA runtime and driver cupy actually loaded.
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            opts["cupy"] = cupy.__version__
            opts["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
            opts["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
        except Exception as e:  # a stand-in or a broken install: say so, never guess
            opts["cuda_runtime"] = f"unknown ({type(e).__name__})"
    # Its CUDA engine runs FP16 (its own metrics say "float16"), decision logits in FP32.
    opts["precision"] = "fp16"

    def predict(state, questions, **kw):
        if kw:
            raise ValueError(f"laya-cuda's predict(state, questions) takes no per-call options; got {sorted(kw)}")
        return engine.predict(state, questions)

    dists = ["laya-cuda", "cupy-cuda12x", "cupy-cuda13x", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime",
             "nvidia-cublas-cu12", "nvidia-cublas", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc", "numpy",
             "tokenizers", "safetensors"]
    return predict, "laya-cuda", opts, dists


def load_laya_coreml(args):
    bundle, units = args[0], (args[1] if len(args) > 1 else None)
    laya_coreml = need("laya_coreml")
    opts = {"compute_units": units} if units else {}
    agent = laya_coreml.load(bundle, **opts)
    return agent.predict, "laya-coreml", opts, ["laya-coreml", "coremltools"]


def load_laya_coreml_ane(args):
    # laya-coreml reads the package's manifest (`format: laya-coreml-ane`) and loads its ANE
    # agent itself; SOURCE (the FP32 checkpoint it was converted from) is recorded only.
    if len(args) < 2:
        raise ValueError("ref:laya-coreml-ane:PACKAGE:SOURCE needs the package and its source checkpoint")
    laya_coreml = need("laya_coreml")
    opts = {"compute_units": "cpu_ne", "source": args[1]}
    agent = laya_coreml.load(args[0], compute_units="cpu_ne")
    return agent.predict, "laya-coreml", opts, ["laya-coreml", "coremltools"]


def load_laya_apple(args):
    model = args[0]
    device = args[1] if len(args) > 1 else "auto"
    prec = args[2] if len(args) > 2 else None
    if prec not in (None, "", "fp16", "fp32"):
        raise ValueError(f"precision {prec!r}: laya-apple takes fp16 or fp32")
    laya_apple = need("laya_apple")
    opts = {"device": device, "dtype": dtype_of(prec, "float16")}
    agent = laya_apple.Laya.from_pretrained(model, **opts)

    def predict(state, questions, **kw):
        if kw:
            raise ValueError(f"laya-apple's predict(state, questions) takes no per-call options; got {sorted(kw)}")
        res = agent.predict(state=state, questions=questions)
        return res.to_dict() if hasattr(res, "to_dict") else res

    return predict, "laya-apple", opts, ["laya-apple", "mlx", "mlx-cpu"]


def load_laya_mnn(args):
    folder = args[0]
    threads = int(args[1]) if len(args) > 1 else 0
    laya_mnn = need("laya_mnn")
    opts = {"threads": threads}
    agent = laya_mnn.LayaMNN(folder, threads=threads)

    def predict(state, questions, max_len=None, **kw):
        if kw or max_len not in (None, agent.max_len):
            raise ValueError(f"laya-mnn's system_one(state, questions) runs its manifest's max_len {agent.max_len}; per-call options {dict(kw, max_len=max_len)} are not supported")
        return agent.system_one(state, questions)

    return predict, "laya-mnn", opts, ["laya-mnn", "MNN"]


def load_factory(args):
    if len(args) < 2:
        raise ValueError("ref:factory:MODULE:CALLABLE[:ARG...] needs a module and a callable")
    module, name = args[0], args[1]
    if module.endswith(".py"):
        import importlib.util

        spec = importlib.util.spec_from_file_location(os.path.basename(module)[:-3], module)
        if spec is None:
            raise ValueError(f"cannot load {module}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    else:
        mod = need(module)
    obj = getattr(mod, name)(*args[2:])
    if not callable(getattr(obj, "predict", None)):
        raise ValueError(f"{module}:{name}(...) returned {type(obj).__name__}, which has no predict(state, questions)")
    top = getattr(mod, "__name__", module).split(".")[0]
    VERSION_HINT[top] = getattr(mod, "__version__", None)
    return obj.predict, top, {"args": list(args[2:])}, [top.replace("_", "-")]


VERSION_HINT = {}

# What laya-bench must know of a runtime before its first call: the shape of its result dicts
# (absent: laya 0.4's) and the per-call options its predict takes (absent: all of them).
RESULT_SHAPE = {"laya-cuda": "laya-0.3"}
CALL_OPTIONS = {"laya-cuda": [], "laya-apple": []}

KINDS = {
    "laya-mlx": load_laya_mlx,
    "laya": load_laya,
    "laya-cuda": load_laya_cuda,
    "laya-coreml": load_laya_coreml,
    "laya-coreml-ane": load_laya_coreml_ane,
    "laya-apple": load_laya_apple,
    "laya-mnn": load_laya_mnn,
    "factory": load_factory,
}


def tail(exc):
    # the cause first ("ValueError: ..."), then where it was raised: the innermost frame
    cause = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return cause
    f = frames[-1]
    return f"{cause} (raised at {f.filename}:{f.lineno}, in {f.name})"


def main():
    first = sys.stdin.readline()
    if not first:
        return 0
    cfg = json.loads(first)
    t0 = time.perf_counter_ns()
    try:
        predict, runtime, opts, dists = KINDS[cfg["kind"]](cfg["args"])
    except Missing as e:
        send({"ready": False, "missing": e.module, "pip": PIP.get(e.module, f"pip install {e.module}"), "error": str(e)})
        return 0
    except Exception as e:
        send({"ready": False, "error": tail(e)})
        return 0
    load_ns = time.perf_counter_ns() - t0
    precision = opts.pop("precision", None)
    packages = {d: version_of(d) for d in dists}
    packages = {k: v for k, v in packages.items() if v is not None}
    version = version_of(runtime) or packages.get(runtime) or VERSION_HINT.get(runtime)
    send({
        "ready": True,
        "python": sys.version.split()[0],
        "runtime": runtime,
        "version": version,
        "packages": packages,
        "options": {k: v for k, v in opts.items() if v is not None},
        "precision": precision,
        "load_ns": load_ns,
        "result_shape": RESULT_SHAPE.get(cfg["kind"], "current"),
        "call_options": CALL_OPTIONS.get(cfg["kind"]),
    })
    clock = time.perf_counter_ns
    for line in sys.stdin:
        req = json.loads(line)
        state, questions, kwargs = req["state"], req["questions"], req.get("kwargs") or {}
        try:
            t = clock()
            result = predict(state, questions, **kwargs)
            runtime_ns = clock() - t
        except Exception as e:
            send({"ok": False, "error": tail(e)})
            continue
        try:
            send({"ok": True, "runtime_ns": runtime_ns, "result": result})
        except (TypeError, ValueError) as e:
            send({"ok": False, "error": f"the runtime's result is not JSON: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
