"""The roofline model (Williams, Waterman & Patterson, CACM 2009) and its log-log plot.

A kernel that does F FLOPs while moving Q bytes has operational intensity I = F / Q and can run
at most at min(peak FLOP/s, bandwidth x I). Below the ridge point I* = peak / bandwidth it is
memory-bound; above it, compute-bound. Units: FLOP/s, bytes/s, FLOP/byte.

What a forward pass costs and how long it takes is in helpers.roofline.costs (`pass_in_steps` puts the
two together: a pass over W positions in decode steps); the device table in helpers.roofline.hardware;
latencies of whole generations in helpers.projection.latency. Importing this module does not import
matplotlib: `plot_roofline` draws on an axes it is given.
"""

from __future__ import annotations

import numpy as np

from helpers.common.validation import check_int, check_positive
from helpers.roofline.costs import decode_step_cost, forward_pass_cost, predicted_time

# ----------------------------------------------------------------------------- the roofline


def attainable(intensity, peak_flops: float, bandwidth: float):
    """Roofline: min(peak_flops, bandwidth x intensity) in FLOP/s. intensity in FLOP/byte,
    a number or an array (the answer has the same shape)."""
    peak_flops = check_positive(peak_flops, "peak_flops")
    bandwidth = check_positive(bandwidth, "bandwidth")
    try:
        values = np.asarray(intensity, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"intensity must be a number or an array of numbers (FLOP/byte), got {intensity!r}") from err
    if isinstance(intensity, bool) or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("intensity must be finite and >= 0 (FLOP per byte)")
    result = np.minimum(peak_flops, bandwidth * values)
    return float(result) if result.ndim == 0 else result


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the bandwidth roof meets the compute roof: peak / bandwidth."""
    return check_positive(peak_flops, "peak_flops") / check_positive(bandwidth, "bandwidth")


def pass_in_steps(
    model, widths, bandwidth: float, peak_flops: float, bytes_per_param: float = 2, context: int = 512
) -> list[float]:
    """The roofline's cost of one pass over W positions without a cache (a diffusion sampler's pass
    over a canvas of W), in AR decode steps with `context` positions cached, for each W in widths.

    Both times are helpers.roofline.costs.predicted_time on one machine of `bandwidth` bytes/s and
    `peak_flops` FLOP/s, so the answer assumes kernels that reach those roofs at every width.
    model: a name in helpers.roofline.costs.MODEL_SHAPES, a ModelShape or a ModelConfig."""
    bandwidth = check_positive(bandwidth, "bandwidth")
    peak_flops = check_positive(peak_flops, "peak_flops")
    if isinstance(widths, str) or not hasattr(widths, "__iter__"):
        raise ValueError(f"widths must be a list of ints >= 1, got {widths!r}")
    widths = [check_int(w, "each width", 1) for w in widths]
    if not widths:
        raise ValueError("widths must hold at least one width (an int >= 1)")
    step = decode_step_cost(model, context=context, bytes_per_param=bytes_per_param)
    step_s = predicted_time(step, bandwidth, peak_flops)
    return [
        predicted_time(forward_pass_cost(model, tokens=w, bytes_per_param=bytes_per_param), bandwidth, peak_flops)
        / step_s
        for w in widths
    ]


def _unpack_point(point):
    if not isinstance(point, tuple | list) or len(point) not in (2, 3):
        raise ValueError(f"each point must be (intensity, flops) or (intensity, flops, label), got {point!r}")
    intensity = check_positive(point[0], "a point's intensity")
    flops = check_positive(point[1], "a point's FLOP/s")
    return intensity, flops, (point[2] if len(point) == 3 else None)


def _short(x: float) -> str:
    """Three significant figures, no exponent: 3350, 989, 80.5, 4.12."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _flops_text(flops: float) -> str:
    return f"{_short(flops / 1e12)} TFLOP/s" if flops >= 1e12 else f"{_short(flops / 1e9)} GFLOP/s"


def plot_roofline(
    ax,
    peak_flops: float,
    bandwidth: float,
    points=(),
    label: str | None = None,
    color: str | None = None,
    point_color: str | None = None,
    intensity_range: tuple[float, float] | None = None,
    equal_decades: bool = True,
):
    """Draw a roofline on log-log axes: the bandwidth roof (slope 1: a 45 degree line when both
    axes span the same decades), the flat compute roof, the ridge point, and measured points.

    points: (intensity FLOP/byte, achieved FLOP/s) or (intensity, FLOP/s, label) tuples.
    intensity_range: (lowest, highest) intensity on the x axis; default ridge / 100 to ridge x 100,
    widened to include every point. equal_decades: give a decade the same length on both axes,
    so the bandwidth roof is drawn at 45 degrees (turn off to fill a wide axes).
    color, point_color: of the roofs and of the points (default the course's grey and amber,
    helpers.common.plotting.TRUTH_COLOR and ACCENT_COLOR). Returns ax.
    """
    from helpers.common.plotting import ACCENT_COLOR, TRUTH_COLOR  # here, not at the top: the model needs no pyplot

    color = TRUTH_COLOR if color is None else color
    point_color = ACCENT_COLOR if point_color is None else point_color
    ridge = ridge_point(peak_flops, bandwidth)
    unpacked = [_unpack_point(p) for p in points]
    if intensity_range is None:
        xs = [ridge / 100, ridge * 100] + [i for i, _, _ in unpacked]
        intensity_range = (min(xs) / 2, max(xs) * 2)
    lo, hi = intensity_range
    if not (check_positive(lo, "intensity_range[0]") < check_positive(hi, "intensity_range[1]")):
        raise ValueError(f"intensity_range must be (low, high) with 0 < low < high, got {intensity_range!r}")
    if label is None:
        label = f"roof: {_short(bandwidth / 1e9)} GB/s, {_flops_text(peak_flops)}"
    corners_x = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    ax.plot(corners_x, attainable(np.array(corners_x), peak_flops, bandwidth), color=color, lw=2, label=label)
    if lo < ridge < hi:
        ax.axvline(ridge, color=color, ls=":", lw=1)
        ax.annotate(f"ridge {_short(ridge)} FLOP/byte", (ridge, peak_flops), xytext=(4, 5), textcoords="offset points")
    for intensity, flops, name in unpacked:
        ax.plot([intensity], [flops], "o", color=point_color)
        if name:
            ax.annotate(str(name), (intensity, flops), xytext=(5, 4), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if equal_decades:  # one decade equally long on both axes: the bandwidth roof rises at 45 degrees
        ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("operational intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    return ax
