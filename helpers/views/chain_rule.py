"""Notebook 01: the two figures whose drawing is presentation only (the numbers they show are
computed in the notebook and passed in)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, TRUTH_COLOR

LABEL_WIDTH = 26  # characters per line of a sentence label; longer ones wrap onto a second line
OUTLINE = 0.86  # side of the outline of an allowed pair, in cells
OUTLINE_KEY = "outlined: a whole city"  # the key's entry for the outlines (the pairs the language allows)


def _probabilities(name: str, values, shape: tuple[int, ...] | None = None) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}; it must have shape {shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array > 1):
        raise ValueError(f"{name} must hold probabilities: finite numbers between 0 and 1")
    return array


def draw_exact_vs_sampled(ax, labels: Sequence[str], exact, sampled, std_err, n_samples: int) -> None:
    """One row per sentence, the most likely on top: a grey band over its exact probability ± `std_err`
    (the noise a perfect sampler shows in `n_samples` draws), a grey tick at the exact value, and a red
    dot at its frequency in the `n_samples` draws: filled when it lies within one standard error (inside
    its band, edges included), hollow when outside, so that a dot on a band's edge can be told by eye."""
    n = len(labels)
    if n == 0:
        raise ValueError("labels is empty: pass one label per sentence shown")
    exact = _probabilities("exact", exact, (n,))
    sampled = _probabilities("sampled", sampled, (n,))
    std_err = _probabilities("std_err", std_err, (n,))
    if not isinstance(n_samples, int | np.integer) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer (the number of draws), got {n_samples!r}")
    y = np.arange(n)  # (n,) one row per sentence
    ax.barh(
        y,
        2 * std_err,
        left=exact - std_err,
        height=0.6,
        color=TRUTH_COLOR,
        alpha=0.3,
        label="exact P(x) ± one standard error",
    )
    ax.plot(exact, y, "|", color=TRUTH_COLOR, markersize=12, markeredgewidth=2, label="exact P(x)")
    inside = np.abs(sampled - exact) <= std_err  # (n,) within one standard error, as the notebook counts
    for where, face, words in ((inside, AR_COLOR, "inside"), (~inside, "white", "outside")):
        if where.any():  # a key only for what is drawn
            label = f"frequency in {n_samples:,} samples, {words} its band"
            ax.plot(sampled[where], y[where], "o", color=AR_COLOR, markerfacecolor=face, markersize=5, label=label)
    ax.set_yticks(y, [textwrap.fill(label, LABEL_WIDTH) for label in labels], fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)  # the most likely sentence on top
    low, high = float(np.min(np.minimum(exact - std_err, sampled))), float(np.max(np.maximum(exact + std_err, sampled)))
    margin = 0.05 * (high - low)
    ax.set_xlim(max(0.0, low - margin), high + margin)  # dots need no zero: the axis spans the data
    ax.set_xlabel("probability")
    ax.set_title(f"The {n} most likely sentences: frequency in {n_samples:,} samples vs exact probability", loc="left")
    ax.legend(loc="lower right", fontsize=8)


def draw_joint_vs_product(
    axes,
    joint,
    product,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    label: str = "all",
    given: str | None = None,
) -> None:
    """Two heatmaps of the same pair of positions on one grey scale, with one colour bar: the true joint
    (left) and the product of the two marginals (right). The cells where the joint is non-zero (the pairs
    the language allows) are outlined in both, each on its own, inside the cell. `label="all"` labels
    every cell with its probability (four decimals, enough for the labels of the outlined cells to add
    up to the title's valid mass; an empty cell reads "0"); `label="nonzero"` labels every cell with a
    non-zero probability and leaves the empty ones blank; `label="allowed"` labels only the outlined
    cells, and the shading alone shows the rest. A key over the right panel says what the outlines mean
    (OUTLINE_KEY). `given`, if set, names what both panels are conditioned on, in a title over the two."""
    if len(axes) != 2:
        raise ValueError(f"axes must be two panels (truth, all at once), got {len(axes)}")
    if label not in ("all", "nonzero", "allowed"):
        raise ValueError(
            f"label must be 'all' (every cell), 'nonzero' (every non-empty cell) or 'allowed' (the outlined cells), "
            f"got {label!r}"
        )
    shape = (len(row_labels), len(col_labels))
    if 0 in shape:
        raise ValueError("row_labels and col_labels must each name at least one token")
    joint = _probabilities("joint", joint, shape)
    product = _probabilities("product", product, shape)
    allowed = joint > 0  # (rows, cols) the pairs the language can produce
    panels = (
        (joint, f"truth: P(x3) P(x4 | x3), valid mass {joint.sum():.4f}"),
        (product, f"all at once: P(x3) P(x4), valid mass {product[allowed].sum():.4f}"),
    )
    vmax = max(joint.max(), product.max()) / 0.8  # one scale for both panels; the largest cell not black
    for ax, (grid, title) in zip(axes, panels, strict=True):
        image = ax.imshow(grid, cmap="Greys", vmin=0, vmax=vmax)
        for i, j in zip(*np.nonzero(allowed), strict=True):
            corner = (j - OUTLINE / 2, i - OUTLINE / 2)  # inside its cell: neighbours stay apart, off the frame
            ax.add_patch(plt.Rectangle(corner, OUTLINE, OUTLINE, fill=False, edgecolor=ACCENT_COLOR, linewidth=2))
        ax.set_xticks(range(shape[1]), col_labels, rotation=40, ha="right")
        ax.set_yticks(range(shape[0]), row_labels)
        ax.set(xlabel="second half of the city (position 4)", ylabel="first half (position 3)")
        ax.grid(False)
        ax.set_title(title, fontsize=10)
        for (i, j), v in np.ndenumerate(grid):
            if (label == "allowed" and not allowed[i, j]) or (label == "nonzero" and v == 0):
                continue
            dark = v >= 0.45 * vmax  # white text where the cell is dark enough to hide black
            text = f"{v:.4f}" if v > 0 else "0"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    axes[0].figure.colorbar(image, ax=list(axes), label="probability", shrink=0.9)
    key = plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor=ACCENT_COLOR, linewidth=2, label=OUTLINE_KEY)
    axes[1].legend(handles=[key], loc="lower right", bbox_to_anchor=(1.0, 1.06), fontsize=9, frameon=False)
    if given is not None:
        axes[0].figure.suptitle(f"Every probability given {given}", fontsize=11)
