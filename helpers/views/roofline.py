"""Notebook 04's figures and tables: section 1's prediction worked, the decode step on this
machine's roofline, the batch sweep on it (and, under Going deeper, beside a GPU's), the decode
step against its prediction, the width sweep with a GPU's projection, and a flag for a step timed
on a busy machine. The measurements come from helpers.bench and helpers.measure.timing; these functions
only lay them out."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator

from helpers.common.plotting import ACCENT_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.measure.timing import linear_bytes, linear_flops
from helpers.roofline.attainable import attainable, plot_roofline
from helpers.roofline.costs import predicted_time
from helpers.roofline.hardware import Hardware
from helpers.widgets import readable_log_ticks


def _log_ticks(ax, values) -> None:
    ax.set_xticks(values, [str(v) for v in values])
    ax.set_xticks([], minor=True)
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))  # minor ticks at 2 and 5 per decade
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))


def draw_step_on_roofline(ax, roofs, cost, measured_s: float) -> None:
    """Section 2: this machine's measured roofline, its two regions named (memory-bound left of the
    ridge, compute-bound right of it), and one decode step on it: cost (helpers.roofline.costs.StepCost) at
    its FLOPs per byte and the FLOP/s it reached in measured_s seconds."""
    if not measured_s > 0:
        raise ValueError(f"measured_s must be the step's time in seconds (> 0), got {measured_s!r}")
    rate = cost.flops / measured_s
    plot_roofline(
        ax,
        roofs.peak_flops,
        roofs.bandwidth,
        points=[(cost.intensity, rate)],
        label="this CPU, float32 (measured roofs)",
        point_color=DLLM_COLOR,
        equal_decades=False,
    )
    ax.annotate(
        "section 1's decode step", (cost.intensity, rate), xytext=(0, -24), textcoords="offset points", fontsize=8,
        ha="center", va="top", arrowprops=dict(arrowstyle="-", lw=0.6, color=TRUTH_COLOR, shrinkA=0, shrinkB=4),
    )  # fmt: skip
    bottom = ax.get_xaxis_transform()  # x in FLOP per byte, y in axes fractions
    for x, text, align in ((roofs.ridge / 1.3, "memory-bound", "right"), (roofs.ridge * 1.3, "compute-bound", "left")):
        ax.text(x, 0.06, text, transform=bottom, ha=align, va="bottom", fontsize=9, color=TRUTH_COLOR)
    ax.set_title("The roofline of this CPU, with one decode step", loc="left", pad=14)
    ax.legend(loc="upper left", fontsize=8)


def ridge_batch(roofs, n_rows: int, n_cols: int) -> float:
    """The batch B at which y = W x (W n_rows x n_cols, float32) reaches the ridge: where its bytes at
    the memory roof take as long as its FLOPs at the compute roof (the intensity is about B / 2 FLOP per
    byte for small B, as notebook 04's section 3 says)."""
    per_vector = linear_bytes(n_rows, n_cols, 2) - linear_bytes(n_rows, n_cols, 1)  # one more x and y
    weights = linear_bytes(n_rows, n_cols, 1) - per_vector
    # the batch where weights / bandwidth + B per_vector / bandwidth = B FLOPs per vector / peak
    slope = linear_flops(n_rows, n_cols, 1) / roofs.peak_flops - per_vector / roofs.bandwidth
    if slope <= 0:
        return float("inf")  # never compute-bound: each vector's own bytes take longer than its FLOPs
    return weights / roofs.bandwidth / slope


def batch_summary(rows: list[tuple[int, float, float, float]], roofs, n_rows: int, n_cols: int) -> str:
    """Section 3 in two lines: B = 2 and B = 16, each as a multiple of B = 1's time, B = 2 beside the
    roofline's multiple, B = 16 beside 16 calls with one vector. The ridge's batch is left to the
    figure: printed before notebook 04's crossover_width, it would answer it. rows as
    draw_batch_sweep's; they must hold B = 1, 2 and 16."""
    seconds = {int(r[0]): r[1] for r in rows}
    missing = {1, 2, 16} - set(seconds)
    if missing:
        raise ValueError(f"rows must hold the batches 1, 2 and 16; missing {sorted(missing)}")

    def roof_s(batch):
        return max(
            linear_bytes(n_rows, n_cols, batch) / roofs.bandwidth,
            linear_flops(n_rows, n_cols, batch) / roofs.peak_flops,
        )

    one = seconds[1]
    return "\n".join(
        [
            f"B =  2 costs {seconds[2] / one:.1f}x B = 1's time (the roofline says {roof_s(2) / roof_s(1):.1f}x)",
            f"B = 16 costs {seconds[16] / one:.1f}x B = 1's time (16 calls with B = 1: 16x)",
        ]
    )


def draw_batch_sweep(
    rows: list[tuple[int, float, float, float]],
    roofs,
    n_rows: int,
    n_cols: int,
    gpu: Hardware | None = None,
    gpu_points: dict[str, tuple[float, float]] | None = None,
) -> Figure:
    """Section 3: time per call of y = W x against the batch B (measured and the roofline's
    max(bytes / bandwidth, FLOPs / peak) with the measured roofs), and the same points on this
    machine's roofline (draw_roofline_panel; gpu and gpu_points as there). rows: (B, seconds, FLOP
    per byte, FLOP/s) per batch."""
    _check_sweep(rows, gpu, gpu_points)
    b, secs, _, _ = (np.array(c) for c in zip(*rows, strict=True))
    roof_s = [
        max(linear_bytes(n_rows, n_cols, B) / roofs.bandwidth, linear_flops(n_rows, n_cols, B) / roofs.peak_flops)
        for B in b
    ]
    fig, (left, right) = new_figure(ncols=2, figsize=(10, 4.2))
    left.plot(b, secs * 1e3, "o-", color=DLLM_COLOR, label="measured")
    left.plot(b, np.array(roof_s) * 1e3, "--", color=TRUTH_COLOR, label="roofline (measured roofs)")
    ridge_b = ridge_batch(roofs, n_rows, n_cols)
    if b.min() < ridge_b < b.max():
        left.axvline(ridge_b, color=TRUTH_COLOR, ls=":", lw=1, label=f"the ridge, at B = {ridge_b:.1f}")
    left.set(xscale="log", yscale="log", xlabel="batch B (vectors per call)", ylabel="ms per call")
    readable_log_ticks(left.yaxis)
    ticks = [v for v in (1, 4, 16, 64, 256, 1024, 4096) if v in b]
    left.set_xticks(ticks, [str(v) for v in ticks])
    left.set_xticks([], minor=True)
    left.set_title("time per call: measured vs the roofline", loc="left")
    left.legend(loc="upper left", fontsize=8)
    draw_roofline_panel(right, rows, roofs, gpu, gpu_points)
    return fig


def _check_sweep(rows, gpu, gpu_points) -> None:
    if not rows:
        raise ValueError("rows must hold at least one (B, seconds, intensity, FLOP/s) measurement")
    if gpu is not None and not isinstance(gpu, Hardware):
        raise ValueError(f"gpu must be None or a Hardware row (helpers.roofline.hardware.get_hardware), got {gpu!r}")
    if not isinstance(gpu_points, dict | None):
        raise ValueError(f"gpu_points must map labels to (intensity, FLOP/s) pairs, got {type(gpu_points).__name__}")


LABELLED_BATCHES = (1, 16, 4096)  # the batches named on the roofline, each by a label on a leader line


def draw_roofline_panel(
    ax,
    rows: list[tuple[int, float, float, float]],
    roofs,
    gpu: Hardware | None = None,
    gpu_points: dict[str, tuple[float, float]] | None = None,
) -> None:
    """The batch sweep's points (rows as draw_batch_sweep's) on this machine's measured roofline, a
    few of them named B = ... by a label centred below its point on a leader line, clear of its
    neighbours. gpu: a row of data/hardware.csv whose bf16 roofline (datasheet) is drawn beside this
    machine's, with gpu_points {label: (FLOP per byte, FLOP/s)} on it."""
    _check_sweep(rows, gpu, gpu_points)
    gpu_points = gpu_points or {}
    b, _, intens, rates = (np.array(c) for c in zip(*rows, strict=True))
    span = (0.02, 1e5) if gpu is not None else None  # room for the labels left and right of the GPU's points
    plot_roofline(
        ax,
        roofs.peak_flops,
        roofs.bandwidth,
        points=list(zip(intens, rates, strict=True)),
        label="this CPU, float32 (measured roofs)",
        point_color=DLLM_COLOR,
        intensity_range=span,
        equal_decades=False,
    )
    for i, r, bb in zip(intens, rates, b, strict=True):
        if bb in LABELLED_BATCHES:
            ax.annotate(
                f"B = {bb}", (i, r), xytext=(0, -24), textcoords="offset points", fontsize=8, ha="center",
                va="top", arrowprops=dict(arrowstyle="-", lw=0.6, color=TRUTH_COLOR, shrinkA=0, shrinkB=4),
            )  # fmt: skip
    ax.plot([], [], "o", color=DLLM_COLOR, label="measured, one per batch B")
    if gpu is not None:
        plot_roofline(
            ax,
            gpu.peak_flops("bf16"),
            gpu.bandwidth,
            points=list(gpu_points.values()),
            label=f"{gpu.device}, bf16 (datasheet)",
            color=ACCENT_COLOR,
            point_color=ACCENT_COLOR,
            intensity_range=span,
            equal_decades=False,
        )
        # each label on two lines: the first above and left of its point, clear of the roof that rises
        # through it; the second centred under its point, inside the axes and clear of the GPU's ridge line
        for (label, point), (offset, align) in zip(
            gpu_points.items(), (((-8, 6), "right"), ((0, -10), "center")), strict=False
        ):
            ax.annotate(
                label.replace(", ", ",\n", 1), point, xytext=offset, textcoords="offset points", fontsize=8,
                ha=align, va="bottom" if offset[1] > 0 else "top", linespacing=1.0,
            )  # fmt: skip
    ax.set_title("the same points on the roofline" + (", and a GPU's" if gpu else ""), loc="left", pad=14)
    # below the roofs; beside a GPU's, in the empty band between the two roofs, clear of the B labels
    ax.legend(loc="center right" if gpu else "lower right", fontsize=8, frameon=True, framealpha=1, edgecolor="none")


def prediction_table(step, roofs) -> str:
    """The decode step's measured time beside the roofline's prediction from three bandwidths: its
    own GEMVs', one large GEMV's and STREAM's, each as predicted / measured - 1 (negative: the
    roofline predicts a faster step than measured), with MBU against STREAM."""
    rows = [
        ("the model's own 49 GEMVs (this step's)", step.gemv.si, step.predicted_s),
        ("one large GEMV (section 2's memory roof)", roofs.bandwidth, step.predicted_generic_s),
        (
            "STREAM, the faster of copy and triad",
            roofs.stream_bandwidth,
            predicted_time(step.cost, roofs.stream_bandwidth, roofs.peak_flops),
        ),
    ]
    lines = [
        f"measured: {step.measured}\n",
        f"{'bandwidth fed to the roofline':40s} {'GB/s':>6s} {'predicted':>10s} {'vs measured':>12s}",
    ]
    for name, bandwidth, seconds in rows:
        error = seconds / step.measured.si - 1
        lines.append(f"{name:40s} {bandwidth / 1e9:6.1f} {seconds * 1e3:7.1f} ms {100 * error:+11.1f} %")
    lines.append(f"\nachieved: {step.achieved_bandwidth / 1e9:.1f} GB/s = {100 * step.vs_gemv:.0f} % of its own GEMVs'")
    lines.append(f"MBU:      {100 * step.mbu:.0f} % of the STREAM bandwidth")
    return "\n".join(lines)


DISTURBED_IQR = 0.25  # a step whose IQR exceeds this share of its median was timed on a busy machine


def disturbance(measured) -> str:
    """One line flagging a disturbed timing, or "" for a steady one: measured (a Measurement, e.g.
    section 1's step) is disturbed when its IQR exceeds DISTURBED_IQR of its median. Sections 4 and 5
    read their numbers against section 1's step, so a disturbed step can flip their conclusions."""
    if not measured.value > 0:
        raise ValueError(f"measured must be a positive measurement, got {measured!r}")
    share = measured.spread / measured.value
    if share <= DISTURBED_IQR:
        return ""
    return f"this run looks disturbed (IQR {100 * share:.0f} % of the median): rerun from section 1 on a quiet machine"


def step_line(measured) -> str:
    """Section 1's line: one decode step's median and IQR, then disturbance's line if it has one."""
    return "\n".join(line for line in (f"one decode step: {measured}", disturbance(measured)) if line)


def hand_prediction(cost, bandwidth: float) -> str:
    """Section 1's prediction, worked: the step's weights (cost, a helpers.roofline.costs.StepCost) read at
    `bandwidth` bytes per second, in one line to set beside the measured step."""
    if not bandwidth > 0:
        raise ValueError(f"bandwidth must be in bytes per second (> 0), got {bandwidth!r}")
    megabytes, seconds = cost.weight_bytes / 1e6, cost.weight_bytes / bandwidth
    return f"predicted ({megabytes:.0f} MB of weights at {bandwidth / 1e9:.0f} GB/s): {seconds * 1e3:.1f} ms"


def step_summary(step) -> str:
    """Section 4 in two labelled lines: the roofline's prediction from the bandwidth of the model's own
    GEMVs, then the step's measured time (section 1's) and how far the prediction is from it (MBU,
    against STREAM, is in prediction_table); a third line if section 1's step looks disturbed."""
    error = step.predicted_s / step.measured.si - 1
    gap = f"{100 * abs(error):.0f} % {'below' if error < 0 else 'above'}"
    lines = [
        f"predicted, its bytes at its own GEMVs' {step.bandwidth / 1e9:.1f} GB/s: {step.predicted_s * 1e3:.1f} ms",
        f"measured in section 1: {step.measured.si * 1e3:.1f} ms (the prediction is {gap} it)",
        disturbance(step.measured),
    ]
    return "\n".join(line for line in lines if line)


def draw_width_sweep(ax, passes, crossover: float, gpu: dict | None = None) -> None:
    """Section 5: the cost of a pass over W positions in AR decode steps on this machine, measured
    and predicted by the roofline, with its crossover W*; and, given `gpu` = {"label": str,
    "widths": [int], "ratios": [float], "crossover": float}, a GPU's projected cost and its W*."""
    if gpu is not None:
        if not isinstance(gpu, dict) or set(gpu) != {"label", "widths", "ratios", "crossover"}:
            raise ValueError("gpu must be None or a dict with the keys label, widths, ratios and crossover")
        if len(gpu["widths"]) != len(gpu["ratios"]) or not gpu["widths"]:
            raise ValueError("gpu['widths'] and gpu['ratios'] must be equally long and not empty")
    w = np.array([p.width for p in passes])
    ax.plot(w, [p.ratio for p in passes], "o-", color=DLLM_COLOR, label="this CPU, measured")
    ax.plot(w, [p.predicted_ratio for p in passes], "--", color=TRUTH_COLOR, label="this CPU, roofline prediction")
    ax.axvline(crossover, color=TRUTH_COLOR, ls=":", lw=1.2, label=f"this CPU's W* = {crossover:.0f}")
    ticks = list(w)
    if gpu is not None:
        ax.plot(gpu["widths"], gpu["ratios"], "-.", color=ACCENT_COLOR, lw=2, label=gpu["label"])
        ax.axvline(gpu["crossover"], color=ACCENT_COLOR, ls=":", lw=1.2, label=f"its W* = {gpu['crossover']:.0f}")
        ticks = sorted(set(ticks) | {max(gpu["widths"])})
    ax.axhline(1, color=TRUTH_COLOR, lw=0.8, label="one AR decode step")
    ax.set(xscale="log", yscale="log", xlabel="positions in the pass, W", ylabel="cost in AR decode steps")
    _log_ticks(ax, ticks)
    ax.set_title("A pass over W positions, in AR decode steps", loc="left")
    ax.legend(loc="upper left", fontsize=8)


def roof_points(points: dict, peak: float, bandwidth: float) -> dict[str, tuple[float, float]]:
    """{label: cost} -> {label: (intensity, attainable FLOP/s)} on a roofline of peak and bandwidth."""
    return {label: (c.intensity, attainable(c.intensity, peak, bandwidth)) for label, c in points.items()}
