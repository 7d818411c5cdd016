"""Notebook 02's figures: the pass counts of section 4, the time per token of its Going deeper
section and the typewriter step drawn readably. Presentation only: the notebook counts
and times, these functions show what it passes in."""

from __future__ import annotations

import math
import textwrap

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, LogLocator

from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, new_figure
from helpers.common.validation import check_int
from helpers.widgets import draw_model_step, readable_log_ticks


def _counts(values, name: str, minimum: int = 0) -> list[int]:
    if isinstance(values, str) or not hasattr(values, "__len__") or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty list of ints >= {minimum}, got {values!r}")
    return [check_int(v, f"every entry of {name}", minimum) for v in values]


def _times(values, name: str) -> list[float]:
    if isinstance(values, str) or not hasattr(values, "__len__") or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty list of times > 0 in ms, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"every entry of {name} must be a finite time > 0 in ms, got {v!r}")
        out.append(float(v))
    return out


def _lengths(lengths) -> list[int]:
    lengths = _counts(lengths, "lengths", 1)
    if any(b <= a for a, b in zip(lengths, lengths[1:], strict=False)):
        raise ValueError(f"lengths must increase (one entry per N generated), got {lengths}")
    return lengths


def _pass_counts(lengths, passes, positions_cached, positions_naive):
    lengths = _lengths(lengths)
    passes = _counts(passes, "passes")
    positions_cached = _counts(positions_cached, "positions_cached")
    positions_naive = _counts(positions_naive, "positions_naive")
    for name, values in (("passes", passes), ("positions_cached", positions_cached)):
        if len(values) != len(lengths):
            raise ValueError(f"{name} needs one entry per length ({len(lengths)}), got {len(values)}")
    # the naive loop is counted only for the shortest lengths, because it gets slow: a prefix of them
    if len(positions_naive) > len(lengths):
        raise ValueError(
            f"positions_naive may cover at most the {len(lengths)} lengths (the first ones), got {len(positions_naive)}"
        )
    return lengths, passes, positions_cached, positions_naive


def draw_pass_counts(lengths, passes, positions_cached, positions_naive, passes_naive) -> Figure:
    """Left: sequential passes against N, for both loops. Right: positions processed, cached loop
    against naive loop. passes_naive covers the same first lengths as positions_naive."""
    lengths, passes, cached, naive = _pass_counts(lengths, passes, positions_cached, positions_naive)
    passes_naive = _counts(passes_naive, "passes_naive")
    if len(passes_naive) != len(naive):
        raise ValueError(
            f"passes_naive needs one entry per naive count ({len(naive)}, as positions_naive), got {len(passes_naive)}"
        )
    fig, (left, right) = new_figure(ncols=2, figsize=(9, 3.6))
    naive_label = "naive loop"
    if len(naive) < len(lengths):  # counted for the first lengths only: say where it stopped
        naive_label += f" (counted to N = {lengths[len(naive) - 1]})"
    naive_style = dict(color=ACCENT_COLOR, ls="--", marker="s", ms=9, mfc="none", mew=1.5)  # hollow, larger: visible
    left.plot(lengths, passes, "o-", color=AR_COLOR, label="KV cache")
    left.plot(lengths[: len(naive)], passes_naive, **naive_style, label=naive_label)
    left.set(xscale="log", yscale="log", xlabel="tokens generated N", ylabel="sequential forward passes")
    left.set_title("N tokens cost N passes, with or without the cache")
    right.plot(lengths, cached, "o-", color=AR_COLOR, label="KV cache: the new token only\n(slope 1)")
    naive_slope = "naive loop: the whole prefix\n(slope about 2 at large N)"  # 1 + 2 + ... + N: below 2 at small N
    right.plot(lengths[: len(naive)], naive, **naive_style, label=naive_slope)
    right.set(xscale="log", yscale="log", xlabel="tokens generated N", ylabel="positions processed, all passes")
    right.set_title("Work inside those passes")
    for axis in (left.xaxis, left.yaxis, right.xaxis):
        readable_log_ticks(axis)  # 1, 2, 5, 10 ... rather than powers of ten
    right.yaxis.set_major_locator(LogLocator(base=10))  # 1, 10, 100 ...: the positions span four decades
    right.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    left.legend(loc="lower right")  # upper left would cover the last points
    right.legend(loc="upper left")  # both lines start low at the left: the corner above them is free
    return fig


def draw_time_per_token(lengths, cached_ms, naive_ms) -> Figure:
    """Milliseconds per generated token against N, log-log; naive_ms covers the first lengths only."""
    lengths = _lengths(lengths)
    cached_ms, naive_ms = _times(cached_ms, "cached_ms"), _times(naive_ms, "naive_ms")
    if len(cached_ms) != len(lengths):
        raise ValueError(f"cached_ms needs one time per length ({len(lengths)}), got {len(cached_ms)}")
    if len(naive_ms) > len(lengths):
        raise ValueError(f"naive_ms may cover at most the {len(lengths)} lengths (the first ones), got {len(naive_ms)}")
    fig, ax = new_figure()
    ax.plot(lengths, cached_ms, "o-", color=AR_COLOR, label="KV cache")
    ax.plot(lengths[: len(naive_ms)], naive_ms, "s--", color=ACCENT_COLOR, label="naive (re-run the prefix)")
    ax.set(xscale="log", yscale="log", xlabel="tokens generated N", ylabel="ms per token")
    ax.set_title("Time per token, with and without the KV cache")
    every = cached_ms + naive_ms
    ax.set_ylim(min(every) / 1.6, max(every) * 1.6)  # room for at least two plain-number ticks on a log axis
    readable_log_ticks(ax.xaxis)
    readable_log_ticks(ax.yaxis)
    ax.legend()
    return fig


def draw_typed_step(ax: Axes, trace, step: int, top: int = 8) -> None:
    """`helpers.widgets.draw_model_step`, readable at any step: the y axis fitted to the tallest
    bar (probabilities near 0.2 would be squashed on 0 .. 1), a title at the course style's size that says
    "model probability" rather than "p" (top-p's threshold in notebook 02), and the value written above every
    bar too short to see (an exact 0, or a model's 1e-04)."""
    draw_model_step(ax, trace, step, top=top)
    heights = [bar.get_height() for bar in ax.patches]
    tallest = max(heights)
    ax.set_ylim(0, min(1.12, 1.4 * tallest))  # headroom for the legend above the bars
    for bar, height in zip(ax.patches, heights, strict=True):
        if height < 0.02 * tallest:
            text = "0" if height == 0 else f"{height:.0e}"
            ax.annotate(
                text, (bar.get_x() + bar.get_width() / 2, height), xytext=(0, 3), textcoords="offset points",
                rotation=90, ha="center", va="bottom", fontsize=8, color=bar.get_facecolor(),
            )  # fmt: skip
    header, _, typed = ax.get_title(loc="left").partition("\n")  # draw_model_step wraps at 95 characters
    header = header.replace(" with p = ", " with model probability ")  # p is top-p's threshold in notebook 02
    typed = textwrap.fill(typed.replace("\n", " "), width=80)  # fewer at the larger size
    ax.set_title(f"{header}\n{typed}", loc="left", fontsize=11)  # the course style's title size
