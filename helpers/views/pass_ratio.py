"""Notebook 05, section 3: does the pass ratio set latency on a GPU? The claim on every device
(table, points, summary and figure) and what a block cache changes.

Presentation only: every number is computed by helpers.latency and helpers.costs from the arguments
passed in; these functions lay the numbers out."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from helpers.costs import (
    CEILING,
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    check_fits,
    efficiency_label,
)
from helpers.hardware import Hardware, get_hardware, load_hardware_table
from helpers.latency import ar_latency, dllm_latency
from helpers.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.validation import check_int
from helpers.widgets import readable_log_ticks

PAIRS = {"1B": ("Llama-3.2-1B", "Llama-3.2-1B"), "8B": ("Llama-3-8B", "LLaDA-8B")}  # (AR model, dLLM model)
CACHE_DEVICES = ("NVIDIA A100 80GB SXM", "NVIDIA H100 SXM", "NVIDIA L4", "NVIDIA RTX 4090")


def devices_named(devices) -> list[Hardware]:
    """The rows of data/hardware.csv for a non-empty list of device names."""
    if isinstance(devices, str) or not isinstance(devices, list | tuple) or not devices:
        raise ValueError(f"devices must be a non-empty list of names in data/hardware.csv, got {devices!r}")
    return [get_hardware(d) for d in devices]


def claim_table(n: int = 1000, steps=(32, 256), devices=None, pairs=None) -> str:
    """AR (KV cache) against an uncached dLLM making K passes over the whole N-token canvas, on
    every device with a bf16 peak: AR's typical seconds and AR / dLLM latency ratios, typical
    (ceiling), next to the bound min(N, effective ridge) / K. A model that does not fit says so."""
    n = check_int(n, "n", 1)
    if isinstance(steps, str) or not isinstance(steps, tuple | list) or len(steps) != 2:
        raise ValueError(f"steps must be two pass counts K, e.g. (32, 256), got {steps!r}")
    steps = [check_int(k, "each K in steps", 1, n) for k in steps]
    pairs = PAIRS if pairs is None else pairs
    if not isinstance(pairs, dict) or not pairs:
        raise ValueError(f"pairs must be a dict {{label: (AR model, dLLM model)}}, got {pairs!r}")
    table = [hw for hw in load_hardware_table().values() if hw.bf16_tflops_dense is not None]
    table = table if devices is None else devices_named(devices)
    eff = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY
    k1, k2 = steps
    lines = [
        f"projection, N = {n}, no cache: AR / dLLM latency (above 1: the dLLM is faster), typical (ceiling); "
        f"pass ratio N / K = {n / k1:.1f} and {n / k2:.1f}",
        f"{'device':22s} {'pair':4s} {'AR (s)':>7s} {f'K = {k1}':>14s} {f'K = {k2}':>14s} "
        f"{f'min(N, I*_eff)/{k1}':>18s}",
    ]
    ratios = []
    for hw in table:
        for pair, (ar_model, dllm_model) in pairs.items():
            try:
                check_fits(ar_model, hw, cached_positions=n + 1)
            except ValueError as err:
                lines.append(f"{hw.device:22s} {pair:4s} {str(err).split(': ', 1)[-1]}")
                continue
            ar, ar_c = ar_latency(n, ar_model, hw), ar_latency(n, ar_model, hw, **CEILING)
            cells = []
            for k in steps:
                ratio = ar / dllm_latency(n, k, dllm_model, hw)
                cells.append(f"{ratio:5.2f}x ({ar_c / dllm_latency(n, k, dllm_model, hw, **CEILING):5.2f}x)")
                if k == k1:
                    ratios.append((ratio, hw.device, pair))
            bound = min(n, eff * hw.ridge_point()) / k1
            lines.append(f"{hw.device:22s} {pair:4s} {ar:7.2f} {cells[0]:>14s} {cells[1]:>14s} {bound:18.1f}")
    (lo, lo_dev, lo_pair), (hi, hi_dev, hi_pair) = min(ratios), max(ratios)
    lines.append(
        f"\nK = {k1}, typical: the dLLM is {lo:.1f}x ({lo_dev}, {lo_pair}) to {hi:.1f}x ({hi_dev}, {hi_pair}) faster; "
        f"pass ratio {n / k1:.1f}x"
    )
    return "\n".join(lines)


def claim_points(n: int = 1000, steps=(32, 256), pair: str = "8B") -> tuple[list[dict], list[str]]:
    """The claim on every device with a bf16 peak, for one pair of PAIRS: ([{device, ridge (the
    effective one), ratio: {K: AR / dLLM typical}, bound: {K: min(N, ridge) / K}}, ...] sorted by
    effective ridge, [why each device left out does not fit])."""
    n = check_int(n, "n", 1)
    if isinstance(steps, str) or not isinstance(steps, tuple | list) or not steps:
        raise ValueError(f"steps must be a list of pass counts K, e.g. (32, 256), got {steps!r}")
    steps = [check_int(k, "each K in steps", 1, n) for k in steps]
    if pair not in PAIRS:
        raise ValueError(f"pair must be one of {sorted(PAIRS)}, got {pair!r}")
    ar_model, dllm_model = PAIRS[pair]
    eff = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY
    points, left_out = [], []
    for hw in load_hardware_table().values():
        if hw.bf16_tflops_dense is None:
            continue
        try:
            check_fits(ar_model, hw, cached_positions=n + 1)
        except ValueError as err:
            left_out.append(f"{hw.device}: {str(err).split(': ', 1)[-1]}")
            continue
        ar, ridge = ar_latency(n, ar_model, hw), eff * hw.ridge_point()
        ratio = {k: ar / dllm_latency(n, k, dllm_model, hw) for k in steps}
        points.append(dict(device=hw.device, ridge=ridge, ratio=ratio, bound={k: min(n, ridge) / k for k in steps}))
    return sorted(points, key=lambda p: p["ridge"]), left_out


def claim_summary(points, left_out, n: int = 1000) -> str:
    """The claim_points in words: the range of the first K's ratios, how close they come to the
    bound, and on how many devices each K is slower than AR."""
    if not isinstance(points, list) or not points:
        raise ValueError(f"points must be the non-empty list claim_points() returns, got {points!r:.80}")
    steps = list(points[0]["ratio"])
    k1 = steps[0]
    lo, hi = (f(points, key=lambda p: p["ratio"][k1]) for f in (min, max))
    closeness = sorted({round(p["ratio"][k1] / p["bound"][k1], 2) for p in points})
    lines = [
        f"projection, typical, N = {n}, no cache, Llama-3-8B (AR) against LLaDA-8B (dLLM), {len(points)} devices",
        f"K = {k1}: the dLLM is {lo['ratio'][k1]:.1f}x ({lo['device']}) to {hi['ratio'][k1]:.1f}x ({hi['device']}) "
        f"faster, {' to '.join(f'{c:.2f}' for c in (closeness[0], closeness[-1])[: len(closeness)])} of "
        f"min(N, I*_eff) / K; pass ratio {n / k1:.1f}",
    ]
    for k in steps[1:]:
        slower = sum(p["ratio"][k] < 1 for p in points)
        lines.append(f"K = {k}: the dLLM is slower than AR on {slower} of {len(points)} devices")
    lines += [f"left out, {why}" for why in left_out]
    return "\n".join(lines)


def _device_tick(device: str) -> str:
    """A device name short enough for a tick: 'NVIDIA A100 80GB SXM' -> 'A100 80GB', 'Google TPU v6e' -> 'TPU v6e'."""
    for word in ("NVIDIA ", "Google ", "AMD ", " (HGX)"):
        device = device.replace(word, "")
    return device.replace(" SXM", "") if device.startswith("A100") else device


def draw_claim(points, n: int = 1000) -> Figure:
    """AR / dLLM latency per device (sorted by effective ridge point), one marker per K: filled for
    the first K, hollow for the others, each with its bound min(N, I*_eff) / K as a grey dash just
    right of it (the two nearly coincide: on the marker the dash would hide behind it); the
    break-even line (1) and the first K's pass ratio N / K, what counting passes alone predicts."""
    if not isinstance(points, list) or not points:
        raise ValueError(f"points must be the non-empty list claim_points() returns, got {points!r:.80}")
    steps = list(points[0]["ratio"])
    x = np.arange(len(points))
    fig, ax = new_figure(figsize=(9, 4.4))
    for j, k in enumerate(steps):
        face = DLLM_COLOR if j == 0 else "white"
        ratios = [p["ratio"][k] for p in points]
        ax.plot(x - 0.12, ratios, "s", ms=7, color=DLLM_COLOR, mfc=face, mew=1.5, zorder=3, label=f"K = {k}, typical")
        ax.plot(x + 0.18, [p["bound"][k] for p in points], "_", ms=9, mew=2, color=TRUTH_COLOR, zorder=4,
                label="min(N, I*_eff) / K (dash right of each square)" if j == 0 else None)  # fmt: skip
    ax.axhline(1, color=AR_COLOR, lw=1.2)
    ax.text(len(points) - 0.5, 0.95, "AR as fast", color=AR_COLOR, fontsize=8, ha="right", va="top")
    ax.axhline(n / steps[0], color=TRUTH_COLOR, ls=":", lw=1.2)
    ax.text(len(points) - 0.5, n / steps[0] * 1.06, f"pass ratio N / K = {n / steps[0]:.0f}: what counting passes "
            f"predicts for K = {steps[0]}", color=TRUTH_COLOR, fontsize=8, ha="right", va="bottom")  # fmt: skip
    names = [_device_tick(p["device"]) for p in points]
    ax.set_xticks(x, [f"{name}\n{p['ridge']:.0f}" for name, p in zip(names, points, strict=True)], fontsize=7.5)
    ax.set_yscale("log")
    readable_log_ticks(ax.yaxis)
    ax.set_ylim(0.1, 3 * n / steps[0])
    ax.set_xlim(-0.6, len(points) - 0.4)
    ax.set_xlabel("device, effective ridge point I*_eff (FLOP/B), from low to high")
    ax.set_ylabel("AR / dLLM latency (above 1: dLLM faster)")
    ax.legend(loc="upper left", bbox_to_anchor=(0, 0.86), fontsize=8)
    ax.set_title(f"projection, N = {n}, no cache, Llama-3-8B against LLaDA-8B: {efficiency_label()}", loc="left",
                 fontsize=9)  # fmt: skip
    return fig


def cache_table(n: int = 1024, steps=(64, 256), devices=CACHE_DEVICES, block_length: int = 32) -> str:
    """Llama-3-8B (AR) against LLaDA-8B, N tokens, K passes: AR / dLLM latency without a cache and
    with Fast-dLLM's dual cache in blocks of `block_length`, typical."""
    n = check_int(n, "n", 1)
    block_length = check_int(block_length, "block_length", 1, n)
    if isinstance(steps, str) or not isinstance(steps, tuple | list) or not steps:
        raise ValueError(f"steps must be a list of pass counts K, e.g. (64, 256), got {steps!r}")
    steps = [check_int(k, "each K in steps", 1, n) for k in steps]
    lines = [
        f"projection: Llama-3-8B (AR) vs LLaDA-8B (dLLM), N = {n}, blocks of {block_length}, typical: "
        "AR / dLLM (above 1: dLLM faster)",
        f"{'device':22s} {'K':>4s} {'passes/block':>12s} {'no cache':>9s} {'dual cache':>11s} {'N / K':>6s}",
    ]
    for hw in devices_named(devices):
        ar = ar_latency(n, "Llama-3-8B", hw)
        for k in steps:
            plain = dllm_latency(n, k, "LLaDA-8B", hw)
            dual = dllm_latency(n, k, "LLaDA-8B", hw, block_length=block_length, cache="dual")
            lines.append(
                f"{hw.device:22s} {k:4d} {k * block_length // n:12d} {ar / plain:9.2f} {ar / dual:11.2f} {n / k:6.1f}"
            )
    return "\n".join(lines)
