"""Notebook 01: the two figures whose drawing is presentation only (the numbers they show are
computed in the notebook and passed in)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from helpers.plotting import ACCENT_COLOR, AR_COLOR, TRUTH_COLOR


def _probabilities(name: str, values, shape: tuple[int, ...] | None = None) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}; it must have shape {shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array > 1):
        raise ValueError(f"{name} must hold probabilities: finite numbers between 0 and 1")
    return array


def draw_exact_vs_sampled(ax, labels: Sequence[str], exact, sampled, std_err, n_samples: int) -> None:
    """Horizontal bars, one pair per sentence: its exact probability (grey) and its frequency in
    `n_samples` draws (red) with an error bar of ± `std_err`, the most likely sentence on top."""
    n = len(labels)
    if n == 0:
        raise ValueError("labels is empty: pass one label per sentence shown")
    exact = _probabilities("exact", exact, (n,))
    sampled = _probabilities("sampled", sampled, (n,))
    std_err = _probabilities("std_err", std_err, (n,))
    if not isinstance(n_samples, int | np.integer) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer (the number of draws), got {n_samples!r}")
    y = np.arange(n)  # (n,) one row per sentence
    ax.barh(y + 0.2, exact, height=0.4, color=TRUTH_COLOR, label="exact P(x)")
    ax.barh(y - 0.2, sampled, height=0.4, xerr=std_err, color=AR_COLOR, label=f"frequency in {n_samples:,} samples")
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("probability")
    ax.set_title(f"The {n} most likely sentences: exact vs sampled (error bars: one standard error)")
    ax.legend(loc="lower right")


def draw_joint_vs_product(axes, joint, product, row_labels: Sequence[str], col_labels: Sequence[str]) -> None:
    """Two heatmaps of the same pair of positions: the true joint (left) and the product of the two
    marginals (right), every cell labelled with its probability and the cells where the joint is
    non-zero (the pairs the language allows) outlined in both."""
    if len(axes) != 2:
        raise ValueError(f"axes must be two panels (truth, all at once), got {len(axes)}")
    shape = (len(row_labels), len(col_labels))
    if 0 in shape:
        raise ValueError("row_labels and col_labels must each name at least one token")
    joint = _probabilities("joint", joint, shape)
    product = _probabilities("product", product, shape)
    allowed = joint > 0  # (rows, cols) the pairs the language can produce
    panels = (
        (joint, "Greys", f"truth: P(x3) P(x4 | x3), valid mass {joint.sum():.3f}"),
        (product, "Blues", f"all at once: P(x3) P(x4), valid mass {product[allowed].sum():.3f}"),
    )
    vmax = max(joint.max(), product.max()) / 0.75  # one colour scale for both panels; the largest cell not black
    for ax, (grid, cmap, title) in zip(axes, panels, strict=True):
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=vmax)
        for i, j in zip(*np.nonzero(allowed), strict=True):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=ACCENT_COLOR, linewidth=2))
        ax.set_xticks(range(shape[1]), col_labels, rotation=40, ha="right")
        ax.set_yticks(range(shape[0]), row_labels)
        ax.grid(False)
        ax.set_title(title, fontsize=10)
        for (i, j), v in np.ndenumerate(grid):
            dark = v >= 0.6 * vmax  # white text where the cell is dark enough to hide black
            ax.text(
                j,
                i,
                f"{v:.3f}" if v > 0 else "0",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if dark else "black",
            )
