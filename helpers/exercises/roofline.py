"""Checks for notebook 04: the memory-bound time of a decode step, and the width at which a
pass over W positions stops being free."""

from __future__ import annotations

import math

from helpers.exercises.report import Failed, call, run_check
from helpers.solutions import crossover_width, predicted_step_seconds

STEP_CASES = [  # (what, weight bytes, KV bytes, bandwidth in bytes/s)
    ("GPT-2 small fp32 on a 17.4 GB/s CPU", 494.6e6, 37.7e6, 17.4e9),
    ("Llama-3-8B bf16 at 4k context on an H100 (3350 GB/s)", 16.06e9, 0.54e9, 3.35e12),
    ("no KV cache yet", 2e9, 0.0, 1e12),
    ("a tiny model in a slow memory", 3.3e6, 0.4e6, 5e9),
]
STEP_HINT = "a memory-bound step takes (bytes it must read) / (bytes per second): weights and KV cache together"
WIDTH_CASES = [  # (what, peak FLOP/s, bandwidth in bytes/s, bytes per weight)
    ("an H100 in bf16", 989e12, 3.35e12, 2),
    ("an A100 in bf16", 312e12, 2.039e12, 2),
    ("a 2-core CPU in fp32", 158e9, 17.4e9, 4),
    ("a GPU with int8 weights", 1979e12, 3.35e12, 1),
]
WIDTH_HINT = (
    "a pass over W positions does 2 W FLOPs per weight (a multiply and an add for each position) and reads "
    "bytes_per_weight bytes per weight once; set W-pass arithmetic time equal to read time and solve for W"
)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9)


def _number(value, case: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise Failed(f"returned {type(value).__name__}, not a number ({case})", "return a float") from None


def _step_report(fn, cost=None, bandwidth=None, measured_s=None) -> str:
    for case, weights, kv, bandwidth_case in STEP_CASES:
        got = _number(call(fn, weights, kv, bandwidth_case, case=case, hint=STEP_HINT), case)
        expected = predicted_step_seconds(weights, kv, bandwidth_case)
        if _close(got, expected):
            continue
        if _close(got, 1e3 * expected):
            hint = "that is milliseconds: return seconds"
        elif _close(got, weights / bandwidth_case):
            hint = "the KV cache is read at every step too: add its bytes"
        elif _close(got, (weights + kv) * bandwidth_case):
            hint = "bandwidth is bytes per second: divide the bytes by it"
        else:
            hint = STEP_HINT
        raise Failed(f"{got:.4g} s for {case}; the roofline says {expected:.4g} s", hint)
    report = f"agrees with (weights + KV bytes) / bandwidth in {len(STEP_CASES)} cases"
    if cost is None or bandwidth is None or measured_s is None:
        return report
    mine = _number(call(fn, cost.weight_bytes, cost.kv_bytes, bandwidth, case="this machine", hint=STEP_HINT), "")
    off = mine / measured_s - 1
    report += f"; here it predicts {1e3 * mine:.1f} ms against {1e3 * measured_s:.1f} ms measured ({100 * off:+.0f} %)"
    if abs(off) > 0.30:
        report += (
            ": more than 30 % off; your formula is right, so the gap is in the bandwidth fed to it or in the timing"
        )
    return report


def check_predicted_step_seconds(fn, *, cost=None, bandwidth: float | None = None, measured_s: float | None = None):
    """Compare `fn(weight_bytes, kv_bytes, bandwidth)` with the roofline's time, and, given a step's
    cost (helpers.costs.StepCost), a bandwidth and the measured step time, with the measurement."""
    return run_check("predicted_step_seconds", fn, lambda f: _step_report(f, cost, bandwidth, measured_s))


def _width_report(fn) -> str:
    for case, peak, bandwidth, bytes_per_weight in WIDTH_CASES:
        got = _number(call(fn, peak, bandwidth, bytes_per_weight, case=case, hint=WIDTH_HINT), case)
        expected = crossover_width(peak, bandwidth, bytes_per_weight)
        if _close(got, expected):
            continue
        if _close(got, 2 * expected):
            hint = "each weight costs 2 FLOPs per position (a multiply and an add): divide by 2"
        elif _close(got, peak / bandwidth):
            hint = "that is the ridge point in FLOP per byte; a position brings 2 / bytes_per_weight FLOP per byte"
        elif _close(got, 1 / expected):
            hint = "upside down: more FLOP/s per byte/s means more positions before the pass is compute-bound"
        else:
            hint = WIDTH_HINT
        raise Failed(f"{got:.4g} positions for {case}; the roofline says {expected:.4g}", hint)
    h100 = crossover_width(*WIDTH_CASES[0][1:])
    cpu = crossover_width(*WIDTH_CASES[2][1:])
    return (
        f"agrees with W* = peak x bytes per weight / (2 x bandwidth) on {len(WIDTH_CASES)} machines: "
        f"{h100:.0f} positions on an H100 in bf16, {cpu:.0f} on a 2-core CPU in fp32"
    )


def check_crossover_width(fn) -> bool:
    """Compare `fn(peak_flops, bandwidth, bytes_per_weight)` with the roofline's crossover width."""
    return run_check("crossover_width", fn, _width_report)
