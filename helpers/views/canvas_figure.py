"""One diffusion canvas drawn pass by pass: what was written, re-masked and revised (notebook 03)."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR
from helpers.common.validation import check_int
from helpers.language.toylang import LANG


def draw_canvas_history(ax: Axes, trace: list[dict], row: int, positions: range, passes: range) -> None:
    """A grid: one line per pass of `passes` (indices into `trace`, as helpers.diffusion.sampler.sample
    returns it), one box per canvas position of `positions`, for document `row` of the batch.
    A box shows the token after that pass: blank while masked, blue where written, outlined in
    amber where the pass re-masked it, red where it was rewritten with a different token."""
    if not isinstance(trace, list) or not trace:
        raise ValueError("trace must be the non-empty list that sample(..., return_trace=True) returns")
    row = check_int(row, "row", 0, trace[0]["canvas"].size(0) - 1)
    width = trace[0]["canvas"].size(1)
    if not isinstance(positions, range) or not positions or positions.start < 0 or positions.stop > width:
        raise ValueError(f"positions must be a non-empty range inside 0 .. {width - 1}, got {positions!r}")
    if not isinstance(passes, range) or not passes or passes.start < 0 or passes.stop > len(trace):
        raise ValueError(f"passes must be a non-empty range inside 0 .. {len(trace) - 1}, got {passes!r}")
    for y, p in enumerate(passes):
        step = trace[p]
        for x, pos in enumerate(positions):
            token = int(step["canvas"][row, pos])
            remasked, revised = bool(step["remasked"][row, pos]), bool(step["revised"][row, pos])
            face = "white" if token == LANG.mask_id else (AR_COLOR if revised else DLLM_COLOR)
            alpha = 0.85 if revised else 0.25
            edge, lw = (ACCENT_COLOR, 2.0) if remasked else ("#999999", 0.6)
            ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, facecolor=face, alpha=alpha, lw=0))
            ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, fill=False, edgecolor=edge, lw=lw))
            if token != LANG.mask_id:
                word = "·" if token == LANG.eos_id else LANG.vocab[token]
                ax.text(x + 0.5, y + 0.5, word, ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(positions))
    ax.set_ylim(len(passes), 0)
    ax.set_yticks([y + 0.5 for y in range(len(passes))], [f"pass {p + 1}" for p in passes])
    ax.set_xticks([x + 0.5 for x in range(len(positions))], [str(p) for p in positions], fontsize=7)
    ax.set_xlabel("canvas position")
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
