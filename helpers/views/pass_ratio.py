"""Notebook 05, section 2: does the pass ratio set latency on a GPU? Why an uncached pass is
compute-bound (ridge_text), the claim on every device in one line for the core (claim_range), and
for Going deeper the devices' ridge points (hardware_text), the claim on every device (table,
points, summary and figure) and what a block cache changes.

Presentation only: every number is computed by helpers.projection.latency and helpers.roofline.costs from the arguments
passed in; these functions lay the numbers out."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from helpers.common.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.common.validation import check_int
from helpers.projection.latency import ar_latency, dllm_latency
from helpers.roofline.costs import (
    CEILING,
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    check_fits,
    efficiency_label,
    forward_pass_cost,
)
from helpers.roofline.hardware import Hardware, get_hardware, load_hardware_table
from helpers.widgets import readable_log_ticks

PAIRS = {"1B": ("Llama-3.2-1B", "Llama-3.2-1B"), "8B": ("Llama-3-8B", "LLaDA-8B")}  # (AR model, dLLM model)
CACHE_DEVICES = ("NVIDIA A100 80GB SXM", "NVIDIA H100 SXM", "NVIDIA L4", "NVIDIA RTX 4090")


def devices_named(devices) -> list[Hardware]:
    """The rows of data/hardware.csv for a non-empty list of device names."""
    if isinstance(devices, str) or not isinstance(devices, list | tuple) or not devices:
        raise ValueError(f"devices must be a non-empty list of names in data/hardware.csv, got {devices!r}")
    return [get_hardware(d) for d in devices]


def hardware_text(devices=None) -> str:
    """Datasheet bandwidth, dense bf16 FLOP/s, ridge point, typical (effective) ridge and memory of
    every device with a published bf16 peak (devices: names; None: all of data/hardware.csv)."""
    table = list(load_hardware_table().values()) if devices is None else devices_named(devices)
    eff = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY
    lines = [f"{'device':22s} {'GB/s':>6s} {'bf16 TFLOP/s':>13s} {'ridge FLOP/B':>13s} {'effective':>10s} {'GB':>5s}"]
    for hw in table:
        if hw.bf16_tflops_dense is None:
            continue
        ridge = hw.ridge_point()
        lines.append(
            f"{hw.device:22s} {hw.bandwidth_gb_s:6.0f} {hw.bf16_tflops_dense:13.0f} {ridge:13.0f} "
            f"{eff * ridge:10.0f} {hw.memory_gb:5g}"
        )
    return "\n".join(lines)


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
        f"faster, about {' to '.join(f'{c:.2f}' for c in (closeness[0], closeness[-1])[: len(closeness)])} of "
        f"min(N, I*_eff) / K; pass ratio {n / k1:.1f}",
    ]
    for k in steps[1:]:
        slower = sum(p["ratio"][k] < 1 for p in points)
        lines.append(f"K = {k}: the dLLM is slower than AR on {slower} of {len(points)} devices")
    lines += [f"left out, {why}" for why in left_out]
    return "\n".join(lines)


def claim_range(points) -> str:
    """claim_points in one line, for the core: on how many devices, the range of the first K's
    AR / dLLM ratios (typical), and how close they come to the bound min(N, I*_eff) / K."""
    if not isinstance(points, list) or not points:
        raise ValueError(f"points must be the non-empty list claim_points() returns, got {points!r:.80}")
    k = next(iter(points[0]["ratio"]))
    ratios = [p["ratio"][k] for p in points]
    closeness = sorted({round(p["ratio"][k] / p["bound"][k], 2) for p in points})
    close = f"{closeness[0]:.2f}" if len(closeness) == 1 else f"{closeness[0]:.2f} to {closeness[-1]:.2f}"
    return (
        f"{len(points)} devices, K = {k}, typical: the dLLM is {min(ratios):.1f} to {max(ratios):.1f} times faster "
        f"than AR, each time about {close} of its bound"
    )


def ridge_text(n: int, steps: int, hardware, model: str = "LLaDA-8B") -> str:
    """Why an uncached pass is compute-bound, in three lines: the intensity of one bf16 pass of `model`
    over N positions, the device's ridge point at the datasheet and at typical efficiency (the
    effective ridge), and the bound min(N, effective ridge) / K on AR / dLLM."""
    n, steps = check_int(n, "n", 1), check_int(steps, "steps", 1, n)
    hw = get_hardware(hardware)
    intensity = forward_pass_cost(model, tokens=n, bytes_per_param=2).intensity
    ridge = hw.ridge_point()
    effective = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY * ridge
    return "\n".join(
        [
            f"one uncached pass of {model} over {n} positions, bf16: {intensity:.0f} FLOP/B",
            f"{hw.device}: ridge point {ridge:.0f} FLOP/B at the datasheet, effective ridge {effective:.0f} FLOP/B "
            f"at typical efficiency",
            f"bound: min(N, effective ridge) / K = min({n}, {effective:.0f}) / {steps} = "
            f"{min(n, effective) / steps:.1f}",
        ]
    )


def _device_tick(device: str) -> str:
    """A device name short enough for a tick: 'NVIDIA A100 80GB SXM' -> 'A100 80GB', 'Google TPU v6e' -> 'TPU v6e'."""
    for word in ("NVIDIA ", "Google ", "AMD ", " (HGX)"):
        device = device.replace(word, "")
    return device.replace(" SXM", "") if device.startswith("A100") else device


def draw_claim(points, n: int = 1000) -> Figure:
    """AR / dLLM latency per device, sorted by effective ridge point (not by speed), one square per K:
    filled for the first K, hollow for the others, each drawn over a wide grey bar at its bound
    min(N, I*_eff) / K (the two nearly coincide, so the bar shows on both sides of the square); the
    break-even line (1) and the first K's pass ratio N / K, what counting passes alone predicts."""
    if not isinstance(points, list) or not points:
        raise ValueError(f"points must be the non-empty list claim_points() returns, got {points!r:.80}")
    steps = list(points[0]["ratio"])
    x = np.arange(len(points))
    fig, ax = new_figure(figsize=(9, 4.8))
    for j, k in enumerate(steps):
        face = DLLM_COLOR if j == 0 else "white"
        ratios = [p["ratio"][k] for p in points]
        ax.plot(x, [p["bound"][k] for p in points], "_", ms=26, mew=3, color=TRUTH_COLOR, alpha=0.6, zorder=2,
                label="bound min(N, I*_eff) / K" if j == 0 else None)  # fmt: skip
        ax.plot(x, ratios, "s", ms=8, color=DLLM_COLOR, mfc=face, mew=1.5, zorder=3, label=f"K = {k}, typical")
    ax.axhline(1, color=AR_COLOR, lw=1.2)
    ax.text(len(points) - 0.5, 0.95, "AR as fast", color=AR_COLOR, fontsize=9, ha="right", va="top")
    ax.axhline(n / steps[0], color=TRUTH_COLOR, ls=":", lw=1.4)
    ax.text(len(points) - 0.5, n / steps[0] * 1.06, f"pass ratio N / K = {n / steps[0]:.0f}: what counting passes "
            f"predicts for K = {steps[0]}", color=TRUTH_COLOR, fontsize=9, ha="right", va="bottom")  # fmt: skip
    names = [_device_tick(p["device"]) for p in points]
    ax.set_xticks(x, [f"{name}\n{p['ridge']:.0f}" for name, p in zip(names, points, strict=True)], fontsize=8.5)
    ax.set_yscale("log")
    readable_log_ticks(ax.yaxis)
    low = min(min(p["ratio"].values()) for p in points)
    ax.set_ylim(min(0.5, low / 2), 3 * n / steps[0])
    ax.set_xlim(-0.6, len(points) - 0.4)
    ax.set_xlabel("device, and below it its effective ridge point I*_eff (FLOP/B): in order of ridge, not of speed",
                  fontsize=10)  # fmt: skip
    ax.set_ylabel("AR / dLLM latency (above 1: dLLM faster)", fontsize=10)
    bottom, top = (np.log(v) for v in ax.get_ylim())
    under_line = (np.log(n / steps[0]) - bottom) / (top - bottom) - 0.04  # just below the pass-ratio line
    ax.legend(loc="upper left", bbox_to_anchor=(0, under_line), fontsize=9)
    ax.set_title(f"projection, N = {n}, no cache, Llama-3-8B against LLaDA-8B: {efficiency_label()}", loc="left",
                 fontsize=10)  # fmt: skip
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
