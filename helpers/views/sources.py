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
from helpers.views.sweep import ar_line  # noqa: F401 (section 5.3 prints the AR model's quality with its limits)

SAMPLERS = {  # sampler -> (short name, colour): the figure's orders, coloured as in the rest of notebook 03
    "random": ("random order", ACCENT_COLOR),
    "confidence": ("confidence order", DLLM_COLOR),
    "threshold (Fast-dLLM)": ("threshold", "black"),
    "entropy": ("entropy order", "#6b8e23"),  # olive: no other strategy of the notebook wears it
}
CORE_SAMPLERS = ("random", "confidence")  # section 5's figure in the core: the chain rule's order, and LLaDA's
SPLIT_SAMPLERS = ("random", "confidence", "threshold (Fast-dLLM)", "entropy")
SHORT = {"threshold (Fast-dLLM)": "threshold", "confidence, blocks of 8": "blocks of 8",
         "ancestral (MDLM)": "MDLM", "threshold, entropy order": "threshold, entropy"}  # fmt: skip
ORDER_NAMES = {"random": "random order", "confidence": "confidence order", "entropy": "entropy order",
               "threshold, entropy order": "threshold in entropy order"}  # fmt: skip
LIMIT_ROWS = ("random", "confidence", "confidence, blocks of 8", "threshold (Fast-dLLM)", "ancestral (MDLM)",
              "entropy", "threshold, entropy order")  # fmt: skip
SCALE = {"validity": 100.0, "length": 1.0, "diversity": 1.0}  # validity in points
Y_LABELS = {**MEASURE_LABELS, "validity": "valid documents (%)"}


def short(name: str) -> str:
    return SHORT.get(name, name)


def _band(ax, measure: str, reference: Run, target: Target) -> None:
    """The AR model's quality on one measure, with its tolerance, as a shaded band. Validity's band
    (the target up to 100 %) is thin on a 0-100 axis: its lower edge is drawn as a line too."""
    ref = SCALE[measure] * value(reference, measure)[0]
    low, high = {
        "validity": (100 * target.lowest_validity, 101),
        "length": (ref - target.length_tolerance, ref + target.length_tolerance),
        "diversity": (ref - target.gap_tolerance, ref + target.gap_tolerance),
    }[measure]
    ax.axhspan(low, high, color=AR_COLOR, alpha=0.15, lw=0)
    if measure == "validity":
        ax.axhline(low, color=AR_COLOR, lw=1.2, alpha=0.8, zorder=3)
        ax.annotate(f"AR target: {low:.1f} %", (0.98, low), xycoords=("axes fraction", "data"), xytext=(0, -3),
                    textcoords="offset points", ha="right", va="top", fontsize=8, color=AR_COLOR)  # fmt: skip


def _bracket(ax, x: float, y0: float, y1: float, text: str, left: bool = False, at: float = 0.5) -> None:
    """A vertical double arrow from y0 to y1 at x, named beside it, `at` of the way from y0 to y1:
    one source of error."""
    ax.annotate("", (x, y1), (x, y0), arrowprops=dict(arrowstyle="<->", lw=1.2, color="black", shrinkA=0, shrinkB=0))
    ax.annotate(text, (x, y0 + at * (y1 - y0)), xytext=(-3 if left else 4, 0), textcoords="offset points",
                va="center", ha="right" if left else "left", rotation=90 if left else 0, fontsize=8,
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))  # fmt: skip


def _at(sweep: Sweep, name: str, rate: float, measure: str) -> float:
    return SCALE[measure] * next(value(r, measure)[0] for r in curve(sweep, name) if r.tokens_per_pass == rate)


def draw_three_sources(
    exact: Sweep,
    trained: Sweep,
    reference: Run,
    target: Target,
    samplers: tuple[str, ...] = tuple(SAMPLERS),
    measures: tuple[str, ...] = MEASURES,
) -> Figure:
    """Validity, sentences per document and within-sentence gap against tokens per pass: each order
    of `samplers` (colour; random and confidence order at least) with the exact denoiser (solid) and
    the trained model (dashed), the language (dotted) and the AR model's quality (shaded). Vertical
    distances are the three sources of error; arrows at one and two tokens per pass name one of each.
    Length and gap are drawn where a setting has at least 50 valid documents. `measures`: validity
    and length at least, in MEASURES' order (the core of notebook 03 leaves diversity to its tables)."""
    unknown = [s for s in samplers if s not in SAMPLERS]
    if unknown or not {"random", "confidence"} <= set(samplers):
        raise ValueError(f"samplers must include 'random' and 'confidence', from {list(SAMPLERS)}; got {samplers}")
    if tuple(m for m in MEASURES if m in measures) != tuple(measures) or not {"validity", "length"} <= set(measures):
        raise ValueError(f"measures must include 'validity' and 'length', in the order {MEASURES}; got {measures}")
    shown = {name: SAMPLERS[name] for name in samplers}
    titles = {"validity": "validity", "length": "length", "diversity": "diversity"}
    fig, axes = new_figure(ncols=len(measures), figsize=(4 * len(measures), 4.4))
    for ax, measure in zip(axes, measures, strict=True):
        title = titles[measure]
        _band(ax, measure, reference, target)
        ax.axhline(SCALE[measure] * truth(measure), color=TRUTH_COLOR, ls=":", lw=1.5)
        for name, (_, color) in shown.items():
            for sweep, style in ((exact, "-"), (trained, "--")):
                runs = [r for r in curve(sweep, name) if measure == "validity" or r.valid.sum() >= 50]
                points = [(r.tokens_per_pass, SCALE[measure] * value(r, measure)[0]) for r in runs]
                ax.plot(*zip(*points, strict=True), style, color=color, marker="o", ms=3, lw=1.6)
        ticks = [1, 2, 4, 8] if measure == "validity" else [1, 2, 4]  # length and gap stop where validity fades
        ax.set(xscale="log", xlabel="tokens per pass (log scale)", ylabel=Y_LABELS[measure])
        ax.set(xlim=(0.72, 9) if measure == "validity" else (0.75, 4.6))  # room for the arrows' names at the left
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xticks([], minor=True)
    axes[0].set(ylim=(-3, 103))
    axes[1].set(ylim=(2.9, 4.3))
    if "diversity" in measures:
        axes[2].set(ylim=(-2.4, 0.9))
    _bracket(axes[0], 1.0, 100.0, _at(trained, "random", 1.0, "validity"), "model", left=True)
    _bracket(axes[0], 2.0, 100.0, _at(exact, "random", 2.0, "validity"), "factorization", at=0.15)  # above the curves
    _bracket(axes[1], 1.0, _at(exact, "random", 1.0, "length"), _at(exact, "confidence", 1.0, "length"),
             "selection", left=True)  # fmt: skip
    handles = [axes[0].plot([], [], color=c, lw=2)[0] for _, c in shown.values()]
    handles += [axes[0].plot([], [], "-", color="#999999")[0], axes[0].plot([], [], "--", color="#999999")[0]]
    handles += [axes[0].plot([], [], ":", color=TRUTH_COLOR)[0]]
    handles += [axes[0].fill_between([], [], color=AR_COLOR, alpha=0.15, lw=0)]
    handles += [axes[0].plot([], [], color=AR_COLOR, lw=1.2, alpha=0.8)[0]]
    names = [label for label, _ in shown.values()]
    names += ["exact denoiser (a perfect model)", "trained diffusion model", "the language itself",
              "the AR model's quality, with its tolerance (section 5.3)",
              "AR target: 99 % valid less sampling error"]  # fmt: skip
    fig.legend(handles, names, loc="outside lower center", ncols=4 if len(measures) > 2 else 3, fontsize=9)
    later = "Length and gap are" if "diversity" in measures else "Length is"
    gap = " " if "diversity" in measures else "\n"  # two panels: the title in two lines
    fig.suptitle(f"Solid: the exact denoiser, a perfect model; dashed: the trained model (run up to 4 tokens per"
                 f" pass).{gap}{later} drawn where a setting has 50 or more valid documents", x=0.01, ha="left",
                 fontsize=9)  # fmt: skip
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
    of zero; '-': no valid document at that rate (or next to it, where a value is interpolated).
    A rate between two settings (the threshold's, which adapt to each document) is read off the
    straight line between them, as helpers.error_sources.value_at does."""
    digits = {"validity": 1, "length": 2, "diversity": 2}
    head = {"validity": "valid documents (%)", "length": "sentences per document", "diversity": "gap (bits)"}
    lines = [
        "trained model - language = model + factorization + selection (by construction); (x): within 2 s.e. of 0",
        "tok/pass: tokens per pass; a rate between two settings is interpolated (the threshold's, always)",
        f"{'':17s}" + "".join(f" {head[m]:^31s}" for m in MEASURES),
        f"{'sampler':8s} {'tok/pass':>8s}" + " trained   model    fact.    sel." * len(MEASURES),
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


def split_summary(exact: Sweep, trained: Sweep, rates=(1.0, 2.0), samplers=CORE_SAMPLERS) -> str:
    """Section 5.2's split in the core: for each of `samplers` at each of `rates` tokens per pass,
    the trained model's validity and its shortfall from the language's 100 % as model +
    factorization + selection, which add up to it; then confidence order's selection in sentences
    per document. '(x)': within two standard errors of zero. split_table gives every measure and
    sampler."""
    lines = [
        "valid documents (%): trained model - language (100) = model + factorization + selection",
        f"{'(x): within 2 s.e. of 0':30s}{'trained':>9s}{'model':>9s}{'fact.':>9s}{'sel.':>9s}",
    ]
    for sampler in samplers:
        for rate in rates:
            s = three_way_split(exact, trained, sampler, rate, "validity")
            parts = "".join(_cell(p, SCALE["validity"], 1, 9) for p in (s.model, s.factorization, s.selection))
            label = f"{ORDER_NAMES.get(sampler, short(sampler))}, {rate:g} tok/pass"
            lines.append(f"{label:30s}{SCALE['validity'] * (s.total + truth('validity')):9.1f}{parts}")
    if "confidence" in samplers:
        parts = [three_way_split(exact, trained, "confidence", r, "length").selection for r in rates]
        at = ", ".join(f"{_cell(p, 1.0, 2, 0)} at {r:g}" for p, r in zip(parts, rates, strict=True))
        lines.append(f"selection of confidence order in sentences per document: {at} tok/pass")
    return "\n".join(lines)


def limit_table(exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS) -> str:
    """Tokens per pass at the AR model's quality, all three measures, with the exact denoiser (what
    any model of the language could reach with that sampler) and with the trained model: the rate
    interpolated between the two settings around the crossing, ± its bootstrap standard error
    (sampling noise only, not the straight line drawn between the settings, over the resamples in
    which some setting matches), or every measure on which even the slowest setting fails. Last, the
    share of resamples in which some setting matches at all, for each rate given."""
    lines = [
        "tokens per pass at the AR model's quality on all three measures",
        "(± bootstrap standard error; settings: the two measured rates the crossing is interpolated between)",
        f"{'sampler':19s} {'exact denoiser':>36s} {'trained model':>36s}",
    ]
    shares = []
    for name in rows:
        at = [tokens_per_pass_at(curve(s, name), reference, target) for s in (exact, trained)]
        lines.append(f"{short(name):19s} {at[0].settings_text:>36s} {at[1].settings_text:>36s}")
        shares += [f"{short(name)} ({model}) {a.matched_share:.2f}" for a, model in zip(at, ("exact", "trained"),
                   strict=True) if a.tokens_per_pass is not None]  # fmt: skip
    if shares:
        lines += ["share of the bootstrap resamples in which some setting matches at all:", "  " + ", ".join(shares)]
    return "\n".join(lines)


def limit_summary(exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS) -> str:
    """The rates section 5.3 reads: tokens per pass at the AR model's quality on all three measures
    for each sampler that matches (with the two settings it is interpolated between), the samplers
    that never match, and the trained threshold on validity alone. limit_table gives them all."""
    lines = ["tokens per pass at the AR model's quality on all three measures, interpolated between two settings:"]
    for label, sweep in (("exact denoiser", exact), ("trained model", trained)):
        at = {name: tokens_per_pass_at(curve(sweep, name), reference, target) for name in rows}
        for name, a in at.items():
            if a.tokens_per_pass is not None:
                rate = f"{a.tokens_per_pass:.2f} (settings {a.bracket[0]:.2f} and {a.bracket[1]:.2f})"
                lines.append(f"  {label}, {ORDER_NAMES.get(name, short(name)) + ':':27s} {rate}")
        never = [ORDER_NAMES.get(n, short(n)) for n, a in at.items() if a.tokens_per_pass is None]
        if never:
            which = f"any of the {len(never)} samplers" if len(never) == len(rows) else ", ".join(never)
            lines.append(f"  {label}, never with {which}")
    alone = tokens_per_pass_at(trained.runs["threshold (Fast-dLLM)"], reference, target, ("validity",))
    low, high = alone.plausible
    lines.append(
        f"  trained model, threshold, on validity alone: {alone.tokens_per_pass:.2f}"
        f" (settings {alone.bracket[0]:.2f} and {alone.bracket[1]:.2f}; bootstrap 95 % range {low:.2f} to {high:.2f})"
    )
    return "\n".join(lines)


def limit_headline(
    exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS, core=CORE_SAMPLERS
) -> str:
    """Section 5.3 in the core: tokens per pass at the AR model's quality on all three measures for
    the `core` samplers and for the best of `rows`, with the exact denoiser and the trained model
    (± the bootstrap standard error, and the share of resamples in which some setting matches at
    all), then the trained model's best of `rows` on validity alone. limit_table names each."""

    def text(a) -> str:
        if a.tokens_per_pass is None:
            return f"never ({', '.join(a.limited_by)})"
        return f"{a} (matches in {100 * a.matched_share:.0f} % of resamples)"

    def best(sweep: Sweep, measures=MEASURES):
        at = [tokens_per_pass_at(curve(sweep, n), reference, target, measures) for n in rows]
        matched = [a for a in at if a.tokens_per_pass is not None]
        return max(matched, key=lambda a: a.tokens_per_pass) if matched else None

    lines = [
        "tokens per pass at the AR model's quality (validity, length, diversity), ± bootstrap standard error",
        f"{'':19s} {'exact denoiser':44s} {'trained model'}",
    ]
    for name in core:
        at = [tokens_per_pass_at(curve(s, name), reference, target) for s in (exact, trained)]
        lines.append(f"{ORDER_NAMES.get(name, short(name)):19s} {text(at[0]):44s} {text(at[1])}")
    top = [best(s) for s in (exact, trained)]
    shown = [text(a) if a is not None else "never" for a in top]
    alone = best(trained, ("validity",))
    shown[1] += f"; validity alone: {alone if alone else 'never'}"
    lines.append(f"{f'best of {len(rows)} samplers':19s} {shown[0]:44s} {shown[1]}")
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
