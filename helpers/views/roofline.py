"""Notebook 04's figures and tables: this machine's roofline, the batch and width sweeps, and the
decode step predicted from three bandwidths. The measurements come from helpers.bench and
helpers.timing; these functions only lay them out."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator

from helpers.costs import predicted_time
from helpers.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.roofline import attainable, plot_roofline
from helpers.timing import linear_bytes, linear_flops
from helpers.widgets import readable_log_ticks


def _log_ticks(ax, values) -> None:
    ax.set_xticks(values, [str(v) for v in values])
    ax.set_xticks([], minor=True)
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))  # minor ticks at 2 and 5 per decade
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))


def draw_two_roofs(ax, roofs, gpu_peak: float, gpu_bandwidth: float, points: dict[str, tuple[float, float]]) -> None:
    """This machine's measured roofline (GEMV roof) and a GPU's datasheet roofline on one log-log
    plot, with named (intensity, FLOP/s) points on the GPU's."""
    if not isinstance(points, dict):
        raise ValueError(f"points must map labels to (intensity, FLOP/s) pairs, got {type(points).__name__}")
    span = (0.05, 3e4)  # room right of the prefill point for its label
    plot_roofline(
        ax,
        roofs.peak_flops,
        roofs.bandwidth,
        label="this CPU, float32 (measured: GEMV bandwidth, matmul peak)",
        intensity_range=span,
        equal_decades=False,
    )
    plot_roofline(
        ax,
        gpu_peak,
        gpu_bandwidth,
        points=list(points.values()),
        label="H100 SXM, bf16 (datasheet)",
        color=ACCENT_COLOR,
        intensity_range=span,
        equal_decades=False,
    )
    # the first label up and to the left of its point, clear of the CPU's ridge line; the second below
    for (label, point), (offset, align) in zip(
        points.items(), (((-6, 6), "right"), ((-20, -16), "left")), strict=False
    ):
        ax.annotate(label, point, xytext=offset, textcoords="offset points", fontsize=8, ha=align)
    ax.set_title("Two rooflines: the GPU's ridge point lies far to the right", loc="left")
    ax.legend(loc="lower right")


def draw_batch_sweep(rows: list[tuple[int, float, float, float]], roofs, n_rows: int, n_cols: int) -> Figure:
    """Section 4: time per call of y = W x against the batch B (measured and the roofline's
    max(bytes / bandwidth, FLOPs / peak)), and the same points on the roofline. rows: (B, seconds,
    FLOP/B, FLOP/s) per batch."""
    if not rows:
        raise ValueError("rows must hold at least one (B, seconds, intensity, FLOP/s) measurement")
    b, secs, intens, rates = (np.array(c) for c in zip(*rows, strict=True))
    roof_s = [
        max(linear_bytes(n_rows, n_cols, B) / roofs.bandwidth, linear_flops(n_rows, n_cols, B) / roofs.peak_flops)
        for B in b
    ]
    fig, (left, right) = new_figure(ncols=2, figsize=(9, 3.6))
    left.plot(b, secs * 1e3, "o-", color=ACCENT_COLOR, label="measured")
    left.plot(b, np.array(roof_s) * 1e3, "--", color=TRUTH_COLOR, label="roofline: max(bytes / BW, FLOPs / peak)")
    left.set(xscale="log", yscale="log", xlabel="batch B (vectors per call)", ylabel="ms per call")
    readable_log_ticks(left.yaxis)
    ticks = [v for v in (1, 4, 16, 64, 256, 1024, 4096) if v in b]
    left.set_xticks(ticks, [str(v) for v in ticks])
    left.set_xticks([], minor=True)
    left.set_title("time per call: measured vs the roofline's prediction", loc="left")
    left.legend(loc="upper left", fontsize=8)
    plot_roofline(
        right,
        roofs.peak_flops,
        roofs.bandwidth,
        points=list(zip(intens, rates, strict=True)),
        label="this CPU (measured roofs)",
        equal_decades=False,
    )
    for i, r, bb in zip(intens, rates, b, strict=True):
        if bb in (1, 16, 4096):
            right.annotate(f"B={bb}", (i, r), xytext=(4, -12), textcoords="offset points", fontsize=8)
    right.plot([], [], "o", color=ACCENT_COLOR, label="measured, one per batch B")
    right.set_title("the same points on the roofline", loc="left", pad=14)
    right.legend(loc="lower right")
    return fig


def prediction_table(step, roofs) -> str:
    """The decode step's measured time beside the roofline's prediction from three bandwidths: its
    own GEMVs', one large GEMV's and STREAM's, with MBU against STREAM."""
    rows = [
        ("the model's own 49 GEMVs (this step's)", step.gemv.si, step.predicted_s),
        ("one large GEMV (section 3, independent)", roofs.bandwidth, step.predicted_generic_s),
        (
            "STREAM (section 3, independent)",
            roofs.stream_bandwidth,
            predicted_time(step.cost, roofs.stream_bandwidth, roofs.peak_flops),
        ),
    ]
    lines = [
        f"measured: {step.measured}\n",
        f"{'bandwidth fed to the roofline':40s} {'GB/s':>6s} {'predicted':>10s} {'error':>8s}",
    ]
    for name, bandwidth, seconds in rows:
        error = seconds / step.measured.si - 1
        lines.append(f"{name:40s} {bandwidth / 1e9:6.1f} {seconds * 1e3:7.1f} ms {100 * error:+7.1f} %")
    lines.append(f"\nachieved: {step.achieved_bandwidth / 1e9:.1f} GB/s = {100 * step.vs_gemv:.0f} % of its own GEMVs'")
    lines.append(f"MBU:      {100 * step.mbu:.0f} % of the STREAM bandwidth")
    return "\n".join(lines)


def draw_width_sweep(ax, passes, crossover: float) -> None:
    """Section 6: the cost of a pass over W positions in AR decode steps, measured and predicted,
    with the roofline's crossover W*."""
    w = np.array([p.width for p in passes])
    ax.plot(w, [p.ratio for p in passes], "o-", color=DLLM_COLOR, label="measured: pass over W / AR decode step")
    ax.plot(w, [p.predicted_ratio for p in passes], "--", color=TRUTH_COLOR, label="roofline prediction")
    ax.axhline(1, color=TRUTH_COLOR, lw=0.8, label="one AR decode step")
    ax.axvline(crossover, color=ACCENT_COLOR, ls=":", label=f"W* = {crossover:.0f} (the roofline's crossover)")
    ax.set(xscale="log", yscale="log", xlabel="positions in the pass, W", ylabel="cost in AR decode steps")
    _log_ticks(ax, list(w))
    ax.set_title("A pass over W positions in AR decode steps: measured vs roofline", loc="left")
    ax.legend(loc="upper left")


def draw_cpu_latency(ax, lengths, ar_seconds, dllm_seconds, k: int) -> None:
    """Section 6: latency against N on this CPU, AR (N steps) and dLLM (K passes over N positions),
    with what pass counting alone promises."""
    lengths, ar_seconds = np.asarray(lengths), np.asarray(ar_seconds)
    ax.plot(lengths, ar_seconds, "o-", color=AR_COLOR, label="AR: N x measured decode step")
    ax.plot(lengths, dllm_seconds, "s-", color=DLLM_COLOR, label=f"dLLM: K = {k} x measured pass over N positions")
    ax.plot(lengths, ar_seconds * k / lengths, ":", color=DLLM_COLOR, label="dLLM if a pass cost one AR step")
    ax.set(xscale="log", yscale="log", xlabel="tokens generated, N", ylabel="latency on this CPU (s)")
    _log_ticks(ax, list(lengths))
    ax.set_title("GPT-2-small shape on this CPU: measured per pass x counted passes", loc="left")
    ax.legend(loc="upper left")


def roof_points(points: dict, peak: float, bandwidth: float) -> dict[str, tuple[float, float]]:
    """{label: cost} -> {label: (intensity, attainable FLOP/s)} on a roofline of peak and bandwidth."""
    return {label: (c.intensity, attainable(c.intensity, peak, bandwidth)) for label, c in points.items()}
