"""Checks for notebook 04: the memory-bound time of a decode step, and the width at which a
pass over W positions stops being free."""

from __future__ import annotations

import math

from helpers.exercises.report import Failed, call, run_check
from helpers.solutions import crossover_width, predicted_step_seconds

STEP_CASES = [  # (what, weight bytes, KV bytes, bandwidth in bytes/s)
    ("GPT-2 small fp32 at 17.4 GB/s (a fixed test case)", 494.6e6, 37.7e6, 17.4e9),
    ("Llama-3-8B bf16 at 4k context on an H100 (3350 GB/s)", 16.06e9, 0.54e9, 3.35e12),
    ("no KV cache yet", 2e9, 0.0, 1e12),
    ("a tiny model in a slow memory", 3.3e6, 0.4e6, 5e9),
]
STEP_HINT = (
    "section 2 says what sets the time of a memory-bound kernel; count everything the step reads "
    "(bytes in, bytes per second in, seconds out)"
)
WIDTH_CASES = [  # (what, peak FLOP/s, bandwidth in bytes/s, bytes per weight)
    ("an H100 in bf16", 989e12, 3.35e12, 2),
    ("an A100 in bf16", 312e12, 2.039e12, 2),
    ("a 2-core CPU in fp32", 158e9, 17.4e9, 4),
    ("a GPU with int8 weights", 1979e12, 3.35e12, 1),
]
WIDTH_HINT = (
    "W* is the width at which a pass's arithmetic takes as long as reading its weights once: write both "
    "times for one weight in a pass over W positions and solve for W"
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
            hint = "the KV cache is read at every step too: its bytes count as well as the weights'"
        elif _close(got, (weights + kv) * bandwidth_case):
            hint = "more bandwidth must mean a shorter step: check what you did with bytes per second"
        else:
            hint = STEP_HINT
        raise Failed(f"{got:.4g} s for {case} is not the roofline's time", hint)  # never the expected value
    case, weights, kv, bandwidth_case = STEP_CASES[0]
    report = f"matches the roofline in {len(STEP_CASES)} cases"
    if cost is None or bandwidth is None or measured_s is None:
        return report + f", e.g. {1e3 * predicted_step_seconds(weights, kv, bandwidth_case):.1f} ms for {case}"
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
    cost (helpers.roofline.costs.StepCost), a bandwidth and the measured step time, with the measurement."""
    return run_check("predicted_step_seconds", fn, lambda f: _step_report(f, cost, bandwidth, measured_s))


def _width_report(fn, peak_flops=None, bandwidth=None) -> str:
    for case, peak, bandwidth_case, bytes_per_weight in WIDTH_CASES:
        got = _number(call(fn, peak, bandwidth_case, bytes_per_weight, case=case, hint=WIDTH_HINT), case)
        expected = crossover_width(peak, bandwidth_case, bytes_per_weight)
        if _close(got, expected):
            continue
        if _close(got, 2 * expected):
            hint = "count the FLOPs one weight costs per position: a multiply and an add"
        elif _close(got, peak / bandwidth_case):
            hint = (
                "that is the ridge point, in FLOP per byte; W* counts positions: how many FLOP per byte of "
                "weights does each position of the pass add?"
            )
        elif _close(got, 1 / expected):
            hint = "upside down: a machine with more FLOP/s per byte/s stays memory-bound over more positions"
        elif _close(got, peak / (2 * bandwidth_case * bytes_per_weight)):
            hint = "bytes_per_weight is on the wrong side: more bytes to read per weight leave time for more positions"
        elif got == math.floor(got) and abs(got - expected) < 1:
            hint = "do not round: return the float your formula gives (the check compares it exactly)"
        else:
            hint = WIDTH_HINT
        raise Failed(f"{got:.4g} positions for {case} is not the roofline's W*", hint)  # never the expected value
    h100 = crossover_width(*WIDTH_CASES[0][1:])
    report = (
        f"matches the roofline on {len(WIDTH_CASES)} machines, e.g. W* = {h100:.0f} positions for {WIDTH_CASES[0][0]}"
    )
    if peak_flops is None or bandwidth is None:
        return report
    mine = _number(call(fn, peak_flops, bandwidth, 4, case="this machine", hint=WIDTH_HINT), "this machine")
    return report + (
        f"; here, float32 at {peak_flops / 1e9:.0f} GFLOP/s and {bandwidth / 1e9:.1f} GB/s: W* = {mine:.0f} positions"
    )


def check_crossover_width(fn, *, peak_flops: float | None = None, bandwidth: float | None = None) -> bool:
    """Compare `fn(peak_flops, bandwidth, bytes_per_weight)` with the roofline's crossover width on four
    machines, and, given this machine's peak FLOP/s and bandwidth, report its W* in float32."""
    return run_check("crossover_width", fn, lambda f: _width_report(f, peak_flops, bandwidth))
