"""Notebook 03, section 5: the price of parallelism split into the model's error, the
factorization's and the selection's, on the two sweeps (trained model and exact denoiser).
Presentation only: the numbers come from helpers.error_sources and helpers.matching."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from helpers.error_sources import MEASURE_LABELS, curve, three_way_split, truth, value
from helpers.matched_quality import Run, Sweep
from helpers.matching import MEASURES, Target, tokens_per_pass_at
from helpers.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure

SAMPLERS = {  # sampler -> (short name, colour): the figure's orders, coloured as in the rest of notebook 03
    "random": ("random order", ACCENT_COLOR),
    "confidence": ("confidence order", DLLM_COLOR),
    "threshold (Fast-dLLM)": ("threshold", "black"),
    "entropy": ("entropy order", "#b03a8f"),
}
SPLIT_SAMPLERS = ("random", "confidence", "threshold (Fast-dLLM)", "entropy")
SHORT = {"threshold (Fast-dLLM)": "threshold", "confidence, blocks of 8": "blocks of 8",
         "ancestral (MDLM)": "MDLM", "threshold, entropy order": "threshold, entropy"}  # fmt: skip
LIMIT_ROWS = ("random", "confidence", "confidence, blocks of 8", "threshold (Fast-dLLM)", "ancestral (MDLM)",
              "entropy", "threshold, entropy order")  # fmt: skip
SCALE = {"validity": 100.0, "length": 1.0, "diversity": 1.0}  # validity in points


def short(name: str) -> str:
    return SHORT.get(name, name)


def _band(ax, measure: str, reference: Run, target: Target) -> None:
    """The AR model's quality on one measure, with its tolerance, as a shaded band."""
    ref = SCALE[measure] * value(reference, measure)[0]
    low, high = {
        "validity": (100 * target.lowest_validity, 101),
        "length": (ref - target.length_tolerance, ref + target.length_tolerance),
        "diversity": (ref - target.gap_tolerance, ref + target.gap_tolerance),
    }[measure]
    ax.axhspan(low, high, color=AR_COLOR, alpha=0.12, lw=0)


def _bracket(ax, x: float, y0: float, y1: float, text: str, left: bool = False) -> None:
    """A vertical double arrow from y0 to y1 at x, named beside it: one source of error."""
    ax.annotate("", (x, y1), (x, y0), arrowprops=dict(arrowstyle="<->", lw=1.2, color="black", shrinkA=0, shrinkB=0))
    ax.annotate(text, (x, (y0 + y1) / 2), xytext=(-3 if left else 4, 0), textcoords="offset points", va="center",
                ha="right" if left else "left", rotation=90 if left else 0, fontsize=8,
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))  # fmt: skip


def _at(sweep: Sweep, name: str, rate: float, measure: str) -> float:
    return SCALE[measure] * next(value(r, measure)[0] for r in curve(sweep, name) if r.tokens_per_pass == rate)


def draw_three_sources(exact: Sweep, trained: Sweep, reference: Run, target: Target) -> Figure:
    """Validity, sentences per document and within-sentence gap against tokens per pass: each order
    (colour) with the exact denoiser (solid) and the trained model (dashed), the language (dotted)
    and the AR model's quality (shaded). Vertical distances are the three sources of error; arrows
    name one of each. Length and gap are drawn where a setting has at least 50 valid documents."""
    fig, axes = new_figure(ncols=3, figsize=(12, 4.4))
    for ax, measure, title in zip(axes, MEASURES, ("validity", "length", "diversity"), strict=True):
        _band(ax, measure, reference, target)
        ax.axhline(SCALE[measure] * truth(measure), color=TRUTH_COLOR, ls=":", lw=1.5)
        for name, (_, color) in SAMPLERS.items():
            for sweep, style in ((exact, "-"), (trained, "--")):
                runs = [r for r in curve(sweep, name) if measure == "validity" or r.valid.sum() >= 50]
                points = [(r.tokens_per_pass, SCALE[measure] * value(r, measure)[0]) for r in runs]
                ax.plot(*zip(*points, strict=True), style, color=color, marker="o", ms=3, lw=1.6)
        ax.set(xscale="log", xlabel="tokens per pass (log scale)", ylabel=MEASURE_LABELS[measure], xlim=(0.8, 9))
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        ax.set_xticks([], minor=True)
    axes[0].set(ylim=(-3, 103))
    axes[1].set(ylim=(2.9, 4.3))
    axes[2].set(ylim=(-2.4, 0.9))
    _bracket(axes[0], 0.9, 100.0, _at(trained, "random", 1.0, "validity"), "model", left=True)
    _bracket(axes[0], 2.0, 100.0, _at(exact, "random", 2.0, "validity"), "factorization")
    _bracket(axes[1], 0.9, _at(exact, "random", 1.0, "length"), _at(exact, "confidence", 1.0, "length"),
             "selection", left=True)  # fmt: skip
    handles = [axes[0].plot([], [], color=c, lw=2)[0] for _, c in SAMPLERS.values()]
    handles += [axes[0].plot([], [], "-", color="#999999")[0], axes[0].plot([], [], "--", color="#999999")[0]]
    handles += [axes[0].plot([], [], ":", color=TRUTH_COLOR)[0]]
    handles += [axes[0].fill_between([], [], color=AR_COLOR, alpha=0.12, lw=0)]
    names = [label for label, _ in SAMPLERS.values()]
    names += ["exact denoiser (a perfect model)", "trained diffusion model", "the language itself",
              "the AR model's quality, with its tolerance"]  # fmt: skip
    fig.legend(handles, names, loc="outside lower center", ncols=4, fontsize=9)
    fig.suptitle("Solid: the exact denoiser, a perfect model; dashed: the trained model. Length and gap are drawn"
                 " where a setting has 50 or more valid documents", x=0.01, ha="left", fontsize=9)  # fmt: skip
    return fig


def _cell(pair: tuple[float, float], scale: float, digits: int, width: int) -> str:
    """A difference, in parentheses when it is within two standard errors of zero (not a finding)."""
    v, se = pair
    if not math.isfinite(v):
        return f"{'-':>{width}s}"
    if v == 0:  # exactly: the same measurement subtracted from itself, or 100 % valid on both sides
        return f"{'0':>{width}s}"
    text = f"{scale * v:+.{digits}f}"
    return f"{f'({text})' if abs(v) < 2 * se else text:>{width}s}"


def split_table(exact: Sweep, trained: Sweep, rates=(1.0, 2.0), samplers=SPLIT_SAMPLERS) -> str:
    """For each sampler and rate, each measure's trained value and its shortfall against the
    language as model + factorization + selection. The three add up to trained - language by
    construction (each is a difference of two measured values); '(x)': within two standard errors
    of zero; '-': no valid document at that rate (or next to it, where a value is interpolated)."""
    digits = {"validity": 1, "length": 2, "diversity": 2}
    head = {"validity": "valid documents (%)", "length": "sentences per document", "diversity": "gap (bits)"}
    lines = [
        "trained model - language = model + factorization + selection (by construction); (x): within 2 s.e. of 0",
        f"{'':17s}" + "".join(f" {head[m]:^31s}" for m in MEASURES),
        f"{'sampler':13s} {'tok':>3s}" + " trained   model    fact.    sel." * len(MEASURES),
        f"{'the language':17s}" + "".join(f" {SCALE[m] * truth(m):7.{digits[m]}f}{'':24s}" for m in MEASURES),
    ]
    for sampler in samplers:
        for rate in rates:
            cells = []
            for m in MEASURES:
                s = three_way_split(exact, trained, sampler, rate, m)
                mine = SCALE[m] * (s.total + truth(m))
                parts = [_cell(p, SCALE[m], digits[m], 8) for p in (s.model, s.factorization, s.selection)]
                shown = f"{mine:7.{digits[m]}f}" if math.isfinite(mine) else f"{'-':>7s}"
                cells.append(f" {shown}" + "".join(parts))
            lines.append(f"{short(sampler):13s} {rate:3.0f}" + "".join(cells))
    return "\n".join(lines)


def limit_table(exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS) -> str:
    """Tokens per pass at the AR model's quality, all three measures, with the exact denoiser (what
    any model of the language could reach with that sampler) and with the trained model: the
    interpolated rate and its plausible range (the bootstrap's 2.5th to 97.5th percentiles), or
    every measure on which even the slowest setting fails."""
    lines = [
        "tokens per pass at the AR model's quality on all three measures (95 % bootstrap range)",
        f"{'sampler':19s} {'exact denoiser':>36s} {'trained model':>36s}",
    ]
    for name in rows:
        cells = [tokens_per_pass_at(curve(s, name), reference, target).range_text for s in (exact, trained)]
        lines.append(f"{short(name):19s} {cells[0]:>36s} {cells[1]:>36s}")
    return "\n".join(lines)


def commit_bits_table(bits: dict) -> str:
    """Random order's bits per document lost to the chain rule, by tokens per pass, for the exact
    denoiser (the factorization alone) and the trained model (model + factorization)."""
    lines = [f"{'tokens':>6s} {'exact denoiser':>16s} {'trained model':>16s}   bits per document lost in random order",
             f"{'a pass':>6s} {'(factorization)':>16s} {'(+ model)':>16s}"]  # fmt: skip
    for k in sorted(bits["exact"], key=int):
        (e, se), (t, st) = bits["exact"][k], bits["trained"][k]
        lines.append(f"{int(k):6d} {e:8.2f} ± {se:5.2f} {t:8.2f} ± {st:5.2f}")
    return "\n".join(lines)
