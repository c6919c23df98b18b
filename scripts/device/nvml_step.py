"""Is NVML's board power on this GPU instantaneous or an average? A step test, read with
nvidia-ml-py beside a PyTorch load; not part of laya-bench.

A thread polls the total-energy counter and board power every millisecond for 6 s. From 1.5 s
to 3.5 s the main thread keeps the GPU busy with bf16 matrix products. Each counter refresh
gives the mean power since the previous one (its step over its gap); an instantaneous power
reading follows that slope within a refresh, a trailing 1 s average lags it by about 1 s.
Prints one JSON document: every refresh as (t_s, counter slope W, power W) and the times at
which each first crossed half-way between idle and load, and where it fell back.
"""
import json
import threading
import time

import os

import pynvml
import torch

# NVML_STEP_DEVICE=cpu NVML_STEP_N=256 rehearse the script on a machine without a GPU (with
# the stand-in NVML on LD_LIBRARY_PATH); the figures then mean nothing.
DEVICE = os.environ.get("NVML_STEP_DEVICE", "cuda")
N = int(os.environ.get("NVML_STEP_N", "8192"))


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()

pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
polls = []
stop = threading.Event()
t0 = time.perf_counter()


def poll():
    while not stop.is_set():
        t = time.perf_counter() - t0
        polls.append((t, pynvml.nvmlDeviceGetTotalEnergyConsumption(h), pynvml.nvmlDeviceGetPowerUsage(h)))
        time.sleep(0.001)


a = torch.randn(N, N, device=DEVICE, dtype=torch.bfloat16)
b = torch.randn(N, N, device=DEVICE, dtype=torch.bfloat16)
sync()
time.sleep(2.0)  # let the clocks settle after the allocation
t0 = time.perf_counter()
th = threading.Thread(target=poll)
th.start()
time.sleep(1.5)
load_on = time.perf_counter() - t0
while time.perf_counter() - t0 < 3.5:
    for _ in range(20):
        a @ b
    sync()
load_off = time.perf_counter() - t0
time.sleep(2.5)
stop.set()
th.join()

rows, last = [], None
for t, e, p in polls:
    if last is None or e != last[1]:
        if last is not None:
            rows.append((round(t, 4), round((e - last[1]) / 1e3 / (t - last[0]), 2), p / 1e3))
        last = (t, e)


def crossing(col, after, rising, level):
    for r in rows:
        if r[0] > after and ((r[col] >= level) if rising else (r[col] <= level)):
            return r[0]
    return None


idle = [r for r in rows if r[0] < load_on]
busy = [r for r in rows if load_on + 1.2 < r[0] < load_off]
lo = sum(r[2] for r in idle) / max(len(idle), 1)
hi = sum(r[1] for r in busy) / max(len(busy), 1)
mid = (lo + hi) / 2
print(json.dumps({
    "gpu": pynvml.nvmlDeviceGetName(h),
    "load": f"bf16 {N}^3 matrix products on {DEVICE}, back to back",
    "load_on_s": round(load_on, 4),
    "load_off_s": round(load_off, 4),
    "idle_power_w": round(lo, 2),
    "load_counter_slope_w": round(hi, 2),
    "half_way_w": round(mid, 2),
    "counter_rise_s": crossing(1, load_on, True, mid),
    "power_rise_s": crossing(2, load_on, True, mid),
    "counter_fall_s": crossing(1, load_off, False, mid),
    "power_fall_s": crossing(2, load_off, False, mid),
    "refreshes": [list(r) for r in rows],
}, indent=None))
