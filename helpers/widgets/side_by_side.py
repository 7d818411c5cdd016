"""Notebook 03's side by side: the AR document and the diffusion canvas after the same number of
forward passes (`side_by_side_widget`; `draw_side_by_side` is its static figure)."""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from helpers.common.plotting import use_course_style
from helpers.common.validation import check_int
from helpers.decoding.model import Transformer
from helpers.language.toylang import LANG
from helpers.widgets.model_typewriter import model_typewriter_trace
from helpers.widgets.stepper import stepper_widget


@dataclass
class SideBySide:
    """Both decoders on the same budget: the AR document and the diffusion canvas after every pass."""

    ar_tokens: list[int]  # the AR document after all passes (no bos), one token per pass
    ar_probs: list[float]  # probability of each typed token when it was typed
    canvases: list[np.ndarray]  # diffusion canvas (no bos) after pass 0 (all masks), 1, ..., K
    confidences: list[np.ndarray]  # confidence of each filled position after each pass (NaN = masked)


@torch.no_grad()
def side_by_side_trace(ar_model: Transformer, dllm: Transformer, steps: int = 8, seed: int = 0) -> SideBySide:
    """Sample one document with each model at temperature 1: the AR model token by token, the
    diffusion model in `steps` passes with the confidence rule."""
    from helpers.diffusion.sampler import sample

    if not isinstance(dllm, Transformer):
        raise ValueError(f"dllm must be a helpers.decoding.model.Transformer, got {type(dllm).__name__}")
    steps = check_int(steps, "steps", 1)
    typed = model_typewriter_trace(ar_model, seed)
    length = dllm.config.max_len - 1
    generator = torch.Generator().manual_seed(seed)
    _, trace = sample(dllm, length, steps, temperature=1.0, generator=generator, return_trace=True)
    canvases = [np.full(length, LANG.mask_id)] + [t["canvas"][0, 1:].numpy() for t in trace]
    confidences = [np.full(length, np.nan)] + [t["confidence"][0, 1:].numpy() for t in trace]
    return SideBySide(
        ar_tokens=[s.token for s in typed],
        ar_probs=[float(s.probs[s.token]) for s in typed],
        canvases=canvases,
        confidences=confidences,
    )


def _draw_row(ax: Axes, words: list[str | None], shade: list[float], color_map, title: str, per_line: int = 16):
    """Positions as boxes, `per_line` to a line, each a word (None = still masked, drawn blank)
    on its colour: the darker, the more probable the token was when it was written."""
    lines = -(-len(words) // per_line)
    ax.set_xlim(0, per_line)
    ax.set_ylim(lines, 0)
    ax.axis("off")
    for i, (word, value) in enumerate(zip(words, shade, strict=True)):
        x, y = i % per_line, i // per_line
        face = "white" if word is None else color_map(value)
        ax.add_patch(Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, facecolor=face, edgecolor="#999999", linewidth=0.6))
        if word is not None:
            dark = value > 0.55
            ax.text(x + 0.5, y + 0.5, word, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_title(title, loc="left", fontsize=9)


def _shades(name: str):
    """A matplotlib colour map from light (p = 0; not white, which means 'masked') to dark (p = 1)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    return ListedColormap(colormaps[name](np.linspace(0.15, 1.0, 256)))


def _word(token: int) -> str:
    return "eos" if token == LANG.eos_id else LANG.vocab[token]  # padding


def draw_side_by_side_step(fig: Figure, trace: SideBySide, passes: int) -> None:
    """The two decoders after `passes` forward passes each, 16 positions to a line (colour =
    probability of each token when it was written, keys on the right; white = not written yet)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    if not isinstance(trace, SideBySide):
        raise ValueError(f"trace must be the SideBySide that side_by_side_trace returns, got {type(trace).__name__}")
    K = len(trace.canvases) - 1
    n = len(trace.ar_tokens)
    if isinstance(passes, bool) or not isinstance(passes, int | np.integer) or not 0 <= passes <= n:
        raise ValueError(f"passes must be an int in 0 .. {n}, got {passes!r}")
    fig.set_size_inches(10, 3.9)  # one readable box per position
    reds, blues = _shades("Reds"), _shades("Blues")
    top, bottom = fig.subplots(2, 1)
    ar_words = [_word(t) if i < passes else None for i, t in enumerate(trace.ar_tokens)]
    ar_shade = [p if i < passes else 0.0 for i, p in enumerate(trace.ar_probs)]
    _draw_row(
        top,
        ar_words,
        ar_shade,
        reds,
        f"typewriter (AR): {passes} passes, {passes} of {n} positions written",
    )
    k = min(passes, K)
    canvas, conf = trace.canvases[k], np.nan_to_num(trace.confidences[k], nan=0.0)
    d_words = [None if t == LANG.mask_id else _word(t) for t in canvas]
    filled = int(np.sum(canvas != LANG.mask_id))
    done = " (finished)" if passes >= K else ""
    _draw_row(
        bottom,
        d_words,
        list(conf),
        blues,
        f"editor (masked diffusion, K = {K}): {k} passes{done}, {filled} of {n} positions written",
    )
    for ax, shades in ((top, reds), (bottom, blues)):  # colour keys
        key = ScalarMappable(Normalize(0, 1), shades)
        bar = fig.colorbar(key, ax=ax, fraction=0.03, pad=0.01, ticks=[0, 0.5, 1])
        bar.set_label("P(token) when\nwritten", fontsize=8)
        bar.ax.tick_params(labelsize=7)


def draw_side_by_side(ar_model: Transformer, dllm: Transformer, passes: int = 4, steps: int = 8, seed: int = 0):
    """The static figure (a pyplot figure) of `side_by_side_widget` with the same arguments."""
    import matplotlib.pyplot as plt

    use_course_style()
    fig = plt.figure(layout="constrained")
    draw_side_by_side_step(fig, side_by_side_trace(ar_model, dllm, steps, seed), passes)
    return fig


def side_by_side_widget(
    ar_model: Transformer, dllm: Transformer, passes: int = 4, steps: int = 8, seed: int = 0
) -> widgets.VBox:
    """A pass slider (0 .. the document length: 32 for the course's models) over both decoders, and a
    seed box (see `stepper_widget`). steps: K, the diffusion sampler's passes."""
    steps = check_int(steps, "steps", 1)
    return stepper_widget(
        make_trace=lambda s: side_by_side_trace(ar_model, dllm, steps, s),
        draw=lambda fig, trace, k: draw_side_by_side_step(fig, trace, k),
        seed=seed,
        step=passes,
        last_step=lambda trace: len(trace.ar_tokens),
        label="passes",
    )
