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

SAMPLERS = {  # sampler -> (short name, colour): the figure's three orders
    "random": ("random", ACCENT_COLOR),
    "confidence": ("confidence", DLLM_COLOR),
    "entropy": ("entropy", "#148f77"),
}
SPLIT_SAMPLERS = ("random", "confidence", "threshold (Fast-dLLM)")
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


def _bracket(ax, x: float, y0: float, y1: float, text: str) -> None:
    """A vertical double arrow from y0 to y1 at x, named on its right: one source of error."""
    ax.annotate("", (x, y1), (x, y0), arrowprops=dict(arrowstyle="<->", lw=1.2, color="black", shrinkA=0, shrinkB=0))
    ax.annotate(text, (x, (y0 + y1) / 2), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8,
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))  # fmt: skip


def _at(sweep: Sweep, name: str, rate: float, measure: str) -> float:
    return SCALE[measure] * next(value(r, measure)[0] for r in curve(sweep, name) if r.tokens_per_pass == rate)


def draw_three_sources(exact: Sweep, trained: Sweep, reference: Run, target: Target) -> Figure:
    """Validity, sentences per document and within-sentence gap against tokens per pass: each order
    (colour) with the exact denoiser (solid) and the trained model (dashed), the language (dotted)
    and the AR model's quality (shaded). Vertical distances are the three sources of error; arrows
    name one of each. Length and gap are drawn where a setting has at least 50 valid documents."""
    fig, axes = new_figure(ncols=3, figsize=(12, 4.2))
    for ax, measure in zip(axes, MEASURES, strict=True):
        _band(ax, measure, reference, target)
        ax.axhline(SCALE[measure] * truth(measure), color=TRUTH_COLOR, ls=":", lw=1.5)
        for name, (_, color) in SAMPLERS.items():
            for sweep, style in ((exact, "-"), (trained, "--")):
                runs = [r for r in curve(sweep, name) if measure == "validity" or r.valid.sum() >= 50]
                points = [(r.tokens_per_pass, SCALE[measure] * value(r, measure)[0]) for r in runs]
                ax.plot(*zip(*points, strict=True), style, color=color, marker="o", ms=3, lw=1.6)
        ax.set(xscale="log", xlabel="tokens per pass (log scale)", title=MEASURE_LABELS[measure])
        ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        ax.set_xticks([], minor=True)
    axes[0].set(ylabel="%", ylim=(-3, 103))
    axes[1].set(ylim=(2.9, 4.3))
    axes[2].set(ylim=(-2.4, 0.9))
    _bracket(axes[0], 1.02, 100.0, _at(trained, "random", 1.0, "validity"), "model")
    _bracket(axes[0], 2.0, 100.0, _at(exact, "random", 2.0, "validity"), "factorization")
    _bracket(axes[1], 1.02, _at(exact, "random", 1.0, "length"), _at(exact, "confidence", 1.0, "length"), "selection")
    handles = [axes[0].plot([], [], color=c, lw=2)[0] for _, c in SAMPLERS.values()]
    handles += [axes[0].plot([], [], "k-")[0], axes[0].plot([], [], "k--")[0]]
    handles += [axes[0].plot([], [], ":", color=TRUTH_COLOR)[0]]
    handles += [axes[0].fill_between([], [], color=AR_COLOR, alpha=0.12, lw=0)]
    names = [f"{label} order" for label, _ in SAMPLERS.values()]
    names += ["exact denoiser (a perfect model)", "trained diffusion model", "the language itself",
              "the AR model's quality, with its tolerance"]  # fmt: skip
    fig.legend(handles, names, loc="outside lower center", ncols=4, fontsize=9)
    return fig


def _cell(pair: tuple[float, float], scale: float, digits: int) -> str:
    """A difference, or '·' when it is within two standard errors of zero (not a finding)."""
    v, se = pair
    if not math.isfinite(v):
        return "-"
    return "·" if abs(v) < 2 * se else f"{scale * v:+.{digits}f}"


def split_table(exact: Sweep, trained: Sweep, rates=(1.0, 2.0, 4.0), samplers=SPLIT_SAMPLERS) -> str:
    """For each sampler and rate, the shortfall against the language on each measure as model +
    factorization + selection ('·': within two standard errors of zero; '-': no valid document)."""
    digits = {"validity": 1, "length": 2, "diversity": 2}
    head = {"validity": "valid (points)", "length": "sentences", "diversity": "gap (bits)"}
    lines = [
        "the trained model's shortfall against the language = model + factorization + selection",
        f"{'':13s} {'tokens':>6s}" + "".join(f"  {head[m]:^23s}" for m in MEASURES),
        f"{'sampler':13s} {'a pass':>6s}" + "  model  factor.  select." * len(MEASURES),
    ]
    for sampler in samplers:
        for rate in rates:
            cells = []
            for m in MEASURES:
                s = three_way_split(exact, trained, sampler, rate, m)
                parts = (s.model, s.factorization, s.selection)
                text = [_cell(p, SCALE[m], digits[m]) for p in parts]
                cells.append(f"{text[0]:>7s}{text[1]:>9s}{text[2]:>9s}")
            lines.append(f"{short(sampler):13s} {rate:6.0f}" + "".join(f" {c}" for c in cells))
    return "\n".join(lines)


def limit_table(exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS) -> str:
    """Tokens per pass at the AR model's quality, all three measures, with the exact denoiser (what
    any model of the language could reach with that sampler) and with the trained model: the
    interpolated rate and its plausible range (the bootstrap's 2.5th to 97.5th percentiles), or
    every measure on which even the slowest setting fails."""
    lines = [
        "tokens per pass at the AR model's quality on all three measures [95 % bootstrap range]",
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
