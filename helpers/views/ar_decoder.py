"""Notebook 02's tables and figures: the pass counts of section 4 and the time per token of its
Going deeper section. Presentation only: the notebook counts and times, these functions show what
it passes in."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from helpers.plotting import ACCENT_COLOR, AR_COLOR, new_figure
from helpers.validation import check_int
from helpers.widgets import readable_log_ticks


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


def print_pass_table(lengths, passes, positions_cached, positions_naive) -> None:
    """One row per N: the passes counted and the positions each loop pushed through the network.
    positions_naive covers the first lengths only; the rest of its column stays blank."""
    lengths, passes, cached, naive = _pass_counts(lengths, passes, positions_cached, positions_naive)
    print(f"{'N':>5} {'passes':>7} {'positions (cached)':>19} {'positions (naive)':>18}")
    for i, n in enumerate(lengths):
        counted = f"{naive[i]:>18,d}" if i < len(naive) else ""
        print(f"{n:>5} {passes[i]:>7} {cached[i]:>19,d} {counted}".rstrip())


def draw_pass_counts(lengths, passes, positions_cached, positions_naive) -> Figure:
    """Left: sequential passes against N. Right: positions processed, cached loop against naive loop."""
    lengths, passes, cached, naive = _pass_counts(lengths, passes, positions_cached, positions_naive)
    fig, (left, right) = new_figure(ncols=2, figsize=(9, 3.6))
    counted_to = lengths[len(naive) - 1]
    left.plot(
        lengths, passes, "o-", color=AR_COLOR, label=f"counted (naive loop, counted to N = {counted_to}: the same)"
    )
    left.set(xscale="log", yscale="log", xlabel="tokens generated N", ylabel="sequential forward passes")
    left.set_title("N tokens cost N passes, one after another")
    right.plot(lengths, cached, "o-", color=AR_COLOR, label="KV cache: the new token only")
    right.plot(lengths[: len(naive)], naive, "s--", color=ACCENT_COLOR, label="naive loop: the whole prefix")
    right.set(xscale="log", yscale="log", xlabel="tokens generated N", ylabel="positions processed, all passes")
    right.set_title("Work inside those passes")
    left.legend(loc="lower right")  # upper left would cover the last points
    right.legend()
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
