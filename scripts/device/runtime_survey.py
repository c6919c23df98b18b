#!/usr/bin/env python3
"""Which Laya runtimes, and which engines under them, this interpreter can import, as JSON on
stdout (scripts/device/h200-energy.sh, H200_PLAN=runtimes). Nothing is installed or downloaded:
it only says what is there, with each import's error where it fails."""
import importlib
import importlib.metadata as md
import json
import sys

# (import name, distribution, why it matters)
CANDIDATES = [
    ("laya", "laya", "laya 0.4.15, PyTorch eager (the ref:laya arms)"),
    ("laya_cuda", "laya-cuda", "laya-cuda, its own CUDA kernels over cupy (the ref:laya-cuda arm)"),
    ("laya_mlx", "laya-mlx", "laya-mlx, the MLX runtime: on Linux it needs MLX's CUDA build to use the GPU"),
    ("laya_apple", "laya-apple", "laya-apple, MLX models from the Hub (pinned, needs the network)"),
    ("laya_mnn", "laya-mnn", "laya-mnn, MNN models (needs a converted MNN model)"),
    ("laya_coreml", "laya-coreml", "laya-coreml, Core ML (macOS only)"),
    ("torch", "torch", "PyTorch"),
    ("cupy", None, "cupy (laya-cuda's array library)"),
    ("mlx.core", "mlx", "MLX"),
    ("MNN", "MNN", "MNN"),
    ("onnxruntime", "onnxruntime-gpu", "ONNX Runtime (no published Laya runtime uses it)"),
    ("tensorrt", "tensorrt", "TensorRT (no published Laya runtime uses it)"),
]


def version(dist, module):
    for d in ([dist] if dist else []) + [module.split(".")[0].replace("_", "-")]:
        try:
            return md.version(d)
        except md.PackageNotFoundError:
            pass
    return getattr(module, "__version__", None) if not isinstance(module, str) else None


def detail(name, mod):
    try:
        if name == "torch":
            return {"cuda": mod.cuda.is_available(), "cuda_version": mod.version.cuda,
                    "device": mod.cuda.get_device_name(0) if mod.cuda.is_available() else None}
        if name == "cupy":
            return {"cuda_runtime": mod.cuda.runtime.runtimeGetVersion(),
                    "cuda_driver": mod.cuda.runtime.driverGetVersion(), "version": mod.__version__}
        if name == "mlx.core":
            return {"default_device": str(mod.default_device()),
                    "cuda": bool(getattr(getattr(mod, "cuda", None), "is_available", lambda: False)())}
        if name == "onnxruntime":
            return {"providers": mod.get_available_providers()}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return None


def main():
    out = {"python": sys.version.split()[0], "runtimes": []}
    for name, dist, why in CANDIDATES:
        entry = {"module": name, "what": why}
        try:
            mod = importlib.import_module(name)
        except Exception as e:
            entry.update(importable=False, error=f"{type(e).__name__}: {e}"[:300])
        else:
            entry.update(importable=True, version=version(dist, name) or getattr(mod, "__version__", None))
            d = detail(name, mod)
            if d is not None:
                entry["detail"] = d
        out["runtimes"].append(entry)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
