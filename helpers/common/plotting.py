"""One figure style for the whole course, and the colours that mean the same thing everywhere."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

AR_COLOR = "#c0392b"  # the typewriter (autoregressive): red
DLLM_COLOR = "#2471a3"  # the editor (masked diffusion): blue
TRUTH_COLOR = "#555555"  # exact values from the toy language: grey
ACCENT_COLOR = "#d68910"  # anything else worth pointing at: amber

STYLE = {
    "figure.figsize": (7.5, 3.6),
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "font.size": 10,
}


def use_course_style() -> None:
    """Apply the course style to every later figure (inline PNG, small files)."""
    mpl.rcParams.update(STYLE)
    try:  # only inside IPython: PNG figures keep committed notebooks small
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("png")
    except ImportError:
        pass


def new_figure(ncols: int = 1, nrows: int = 1, **kwargs):
    """plt.subplots with the course style; returns (fig, axes)."""
    use_course_style()
    return plt.subplots(nrows, ncols, layout="constrained", **kwargs)
