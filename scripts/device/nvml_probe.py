"""How the NVML values behave on this GPU, read independently of laya-bench (nvidia-ml-py).

Polls the total-energy counter and board power every millisecond for a few seconds with the
GPU idle, and reads the driver's power-sample buffer; prints one JSON document: when each
value changed (the refresh period), the step sizes (resolution), idle power, and the spacing
of the sample buffer's timestamps. Used by h200-energy.sh; not part of laya-bench.
"""
import json
import statistics
import sys
import time

import pynvml


def changes(polls):
    out = [polls[0]]
    for t, v in polls[1:]:
        if v != out[-1][1]:
            out.append((t, v))
    return out


def gaps(seq):
    return [b - a for a, b in zip(seq, seq[1:])]


def describe(xs):
    if not xs:
        return None
    return {"n": len(xs), "min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def main(seconds):
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    e_polls, p_polls = [], []
    t0 = time.perf_counter()
    while (t := time.perf_counter() - t0) < seconds:
        e_polls.append((t, pynvml.nvmlDeviceGetTotalEnergyConsumption(h)))
        p_polls.append((t, pynvml.nvmlDeviceGetPowerUsage(h)))
        time.sleep(0.001)
    e_ch, p_ch = changes(e_polls), changes(p_polls)
    stamps = []
    try:
        _, samples = pynvml.nvmlDeviceGetSamples(h, pynvml.NVML_TOTAL_POWER_SAMPLES, 0)
        stamps = sorted({s.timeStamp for s in samples})
    except pynvml.NVMLError as e:
        stamps_err = str(e)
    else:
        stamps_err = None
    e_steps = [b[1] - a[1] for a, b in zip(e_ch, e_ch[1:])]
    doc = {
        "gpu": pynvml.nvmlDeviceGetName(h),
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "polled_s": seconds,
        "polls": len(e_polls),
        "poll_spacing_ms": describe([g * 1e3 for g in gaps([t for t, _ in e_polls])]),
        "counter_change_gap_ms": describe([g * 1e3 for g in gaps([t for t, _ in e_ch[1:]])]),
        "counter_step_mj": describe(e_steps),
        "counter_mean_power_w": (e_ch[-1][1] - e_ch[1][1]) / (e_ch[-1][0] - e_ch[1][0]) / 1e3 if len(e_ch) > 2 else None,
        "power_change_gap_ms": describe([g * 1e3 for g in gaps([t for t, _ in p_ch[1:]])]),
        "power_mw": describe([v for _, v in p_polls]),
        "power_distinct_values": len({v for _, v in p_polls}),
        "sample_stamp_gap_ms": describe([g / 1e3 for g in gaps(stamps)]),
        "sample_stamps": len(stamps),
        "sample_error": stamps_err,
    }
    print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
