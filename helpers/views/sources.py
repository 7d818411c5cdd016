"""Notebook 03, section 5: the price of parallelism split into the rule's selection, its own
factorization and the model's error, on the two sweeps (trained model and exact denoiser), with
random order's factorization beside each rule's and their difference, the grouping.
Presentation only: the numbers come from helpers.quality.error_sources and helpers.quality.matching."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.quality.error_sources import MEASURE_LABELS, Split, curve, three_way_split, truth, value
from helpers.quality.matched_quality import Run, Sweep
from helpers.quality.matching import MEASURES, Target, tokens_per_pass_at
from helpers.views.sweep import (
    STYLE,
    ar_line,  # noqa: F401 (section 5.3 prints the AR model's quality with its limits)
)

SAMPLER_STYLE = {  # sampler -> (short name, colour): the figure's orders, coloured as in the rest of notebook 03
    "random": ("random order", ACCENT_COLOR),
    "confidence": ("confidence order", DLLM_COLOR),
    "threshold (Fast-dLLM)": ("threshold", "black"),
    "entropy": ("entropy order", "#6b8e23"),  # olive: no other sampler of the notebook wears it
    "margin": ("margin order", "#8e44ad"),  # purple
}
CORE_SAMPLERS = ("random", "confidence")  # section 5's figure in the core: the chain rule's order, and LLaDA's
SPLIT_SAMPLERS = ("random", "confidence", "margin", "entropy", "threshold (Fast-dLLM)", "threshold, entropy order")
SPLIT_RATES = (1.0, 2.0, 4.0)  # tokens per pass of the full split table
# Short names: the sweep figures' own (views.sweep.STYLE), and the one sampler those figures do not draw.
SHORT = {name: label for name, (label, _, _) in STYLE.items()} | {"threshold, entropy order": "threshold, entropy"}
ORDER_NAMES = {"random": "random order", "confidence": "confidence order", "entropy": "entropy order",
               "margin": "margin order", "threshold, entropy order": "threshold in entropy order"}  # fmt: skip
LIMIT_ROWS = ("random", "confidence", "confidence, blocks of 8", "threshold (Fast-dLLM)", "ancestral (MDLM)",
              "entropy", "threshold, entropy order", "margin")  # fmt: skip
SCALE = {"validity": 100.0, "length": 1.0, "diversity": 1.0}  # validity in points
Y_LABELS = {**MEASURE_LABELS, "validity": "valid documents (%)"}
SURVIVORS = "each run's own valid documents: a term compares two different sets of survivors"


def short(name: str) -> str:
    return SHORT.get(name, name)


def _band(ax, measure: str, reference: Run, target: Target) -> None:
    """What matches on one measure (helpers.quality.matching: as close to the language as the AR model is,
    plus sampling error), as a shaded band. Validity's band (the target up to 100 %) is thin on a
    0-100 axis: its lower edge is drawn as a line too."""
    low, high = target.allowed(measure, value(reference, measure)[0])
    low, high = SCALE[measure] * low, (101 if measure == "validity" else SCALE[measure] * high)
    ax.axhspan(low, high, color=AR_COLOR, alpha=0.15, lw=0)
    if measure == "validity":
        ax.axhline(low, color=AR_COLOR, lw=1.2, alpha=0.8, zorder=3)
        ax.annotate(f"AR target: {low:.1f} %", (0.98, low), xycoords=("axes fraction", "data"), xytext=(0, -3),
                    textcoords="offset points", ha="right", va="top", fontsize=8, color=AR_COLOR)  # fmt: skip


def _bracket(ax, x: float, y0: float, y1: float, text: str, left: bool = False, at: float = 0.5, upright=None,
             **line) -> None:  # fmt: skip
    """A vertical double arrow from y0 to y1 at x, named beside it (on the left: written upwards
    unless upright=True), `at` of the way from y0 to y1: one source of error (`line`: the arrow's
    style, e.g. ls="--")."""
    style = dict(arrowstyle="<->", lw=1.2, color="black", shrinkA=0, shrinkB=0) | line
    ax.annotate("", (x, y1), (x, y0), arrowprops=style)
    rotation = 90 if left and not upright else 0
    ax.annotate(text, (x, y0 + at * (y1 - y0)), xytext=(-3 if left else 4, 0), textcoords="offset points",
                va="center", ha="right" if left else "left", rotation=rotation, fontsize=8,
                bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))  # fmt: skip


def _at(sweep: Sweep, name: str, rate: float, measure: str) -> float:
    return SCALE[measure] * next(value(r, measure)[0] for r in curve(sweep, name) if r.tokens_per_pass == rate)


def _draw_path(exact: Sweep, trained: Sweep, validity, length) -> None:
    """The sources as arrows, each named with its size: random order's model error at one token per
    pass; at two, random and confidence order's own factorizations and the grouping between their
    ends (on validity); confidence order's selection at one token per pass, on its curve (length)."""
    random_one = _at(trained, "random", 1.0, "validity")
    _bracket(validity, 1.0, 100.0, random_one, f"model {random_one - 100:+.0f}", left=True, color=ACCENT_COLOR)
    random_two, confident_two = (_at(exact, name, 2.0, "validity") for name in ("random", "confidence"))
    _bracket(validity, 1.9, 100.0, random_two, f"random order's\nfactorization {random_two - 100:+.0f}", left=True,
             at=0.65, upright=True, color=ACCENT_COLOR)  # fmt: skip
    _bracket(validity, 2.0, 100.0, confident_two, "", color=DLLM_COLOR)
    name = f"confidence order's\nfactorization {confident_two - 100:+.0f}"
    validity.annotate(name, (2.0, (100 + confident_two) / 2), xytext=(2.7, 83), va="center", fontsize=8,
                      arrowprops=dict(arrowstyle="-", lw=0.6, color=DLLM_COLOR),
                      bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))  # fmt: skip
    _bracket(validity, 2.1, confident_two, random_two, f"grouping {confident_two - random_two:+.0f}", at=0.9, ls="--")
    language, selected = SCALE["length"] * truth("length"), _at(exact, "confidence", 1.0, "length")
    _bracket(length, 1.0, language, selected, f"selection {selected - language:+.2f}", left=True)


def draw_three_sources(
    exact: Sweep,
    trained: Sweep,
    reference: Run,
    target: Target,
    samplers: tuple[str, ...] = tuple(SAMPLER_STYLE),
    measures: tuple[str, ...] = MEASURES,
    arrows: bool = True,
) -> Figure:
    """Validity, sentences per document and within-sentence gap against tokens per pass: each order
    of `samplers` (colour; random and confidence order at least) with the exact denoiser (solid) and
    the trained model (dashed), the language (dotted) and what matches the AR model's quality
    (shaded). Vertical distances are the sources of error, along the path language -> confidence
    order at one token per pass (selection, on length) -> at two (its own factorization, beside
    random order's; the gap between their ends is the grouping) -> trained model (model; random
    order's at one token per pass); arrows=False leaves them out, where more orders crowd the
    panels. Length and gap are drawn where a setting has at least 50 valid documents. `measures`:
    validity and length at least, in MEASURES' order."""
    unknown = [s for s in samplers if s not in SAMPLER_STYLE]
    if unknown or not {"random", "confidence"} <= set(samplers):
        raise ValueError(f"samplers must include 'random' and 'confidence', from {list(SAMPLER_STYLE)}; got {samplers}")
    if tuple(m for m in MEASURES if m in measures) != tuple(measures) or not {"validity", "length"} <= set(measures):
        raise ValueError(f"measures must include 'validity' and 'length', in the order {MEASURES}; got {measures}")
    shown = {name: SAMPLER_STYLE[name] for name in samplers}
    fig, axes = new_figure(ncols=len(measures), figsize=(4 * len(measures), 4.4))
    for ax, measure in zip(axes, measures, strict=True):
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
        ax.set_title(measure, loc="left", fontsize=10)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xticks([], minor=True)
    axes[0].set(ylim=(-3, 103))
    axes[1].set(ylim=(2.9, 4.3))
    if "diversity" in measures:
        axes[2].set(ylim=(-2.4, 0.9))
    validity, length = axes[0], axes[1]
    if arrows:
        _draw_path(exact, trained, validity, length)
    handles = [validity.plot([], [], color=c, lw=2)[0] for _, c in shown.values()]
    handles += [validity.plot([], [], "-", color="#999999")[0], validity.plot([], [], "--", color="#999999")[0]]
    handles += [validity.plot([], [], ":", color=TRUTH_COLOR)[0]]
    handles += [validity.fill_between([], [], color=AR_COLOR, alpha=0.15, lw=0)]
    handles += [validity.plot([], [], color=AR_COLOR, lw=1.2, alpha=0.8)[0]]
    names = [label for label, _ in shown.values()]
    names += ["exact denoiser (a perfect model)", "trained diffusion model", "the language itself",
              "matches the AR model's quality (section 5.3)",
              "AR target: 99 % valid less sampling error"]  # fmt: skip
    fig.legend(handles, names, loc="outside lower center", ncols=len(measures), fontsize=9)
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


def _row(split: Split, digits: int, show_random: bool) -> str:
    """One row's terms: model, factorization, selection, then random order's factorization and the
    grouping (blank for random order itself, whose grouping is 0 by definition)."""
    scale = SCALE[split.measure]
    parts = [_cell(p, scale, digits, 9) for p in (split.model, split.factorization, split.selection)]
    if show_random:
        parts += [_cell(split.random_factorization, scale, digits, 15), _cell(split.grouping, scale, digits, 10)]
    return "".join(parts)


def _trained(split: Split, digits: int) -> str:
    mine = SCALE[split.measure] * (split.total + truth(split.measure))
    return f"{mine:9.{digits}f}" if math.isfinite(mine) else f"{'-':>9s}"


def split_table(exact: Sweep, trained: Sweep, rates=SPLIT_RATES, samplers=SPLIT_SAMPLERS) -> str:
    """For each measure, sampler and rate: the trained value and its shortfall against the language
    as model + factorization + selection (they add up to trained - language: the path telescopes),
    then random order's factorization and the grouping, the rule's factorization minus random
    order's. '(x)': within two paired standard errors of zero; '-': undefined (no valid document at
    that rate or next to it, or a rule whose settings do not reach the rate). A rate between two
    settings (the threshold's, which adapt to each document) is read off the straight line between
    them, as helpers.quality.error_sources.value_at does. Length and gap: each run's own valid documents."""
    digits = {"validity": 1, "length": 2, "diversity": 2}
    heads = {"validity": "valid documents (%)", "length": f"sentences per valid document ({SURVIVORS})",
             "diversity": "within-sentence gap, bits per sentence (the same survivors' caveat)"}  # fmt: skip
    lines = [
        "trained model - language = model + factorization + selection (they add up); then random order's own",
        "factorization and the grouping (fact. - random's fact.); (x): within 2 paired s.e. of 0; 0: zero by",
        "construction; -: undefined (no valid document at a setting at or beside the rate, or no setting there)",
    ]
    for m in MEASURES:
        lines += ["", f"{heads[m]}; the language: {SCALE[m] * truth(m):.{digits[m]}f}"]
        lines.append(f"{'sampler':18s}{'tok/pass':>8s}{'trained':>9s}{'model':>9s}{'fact.':>9s}{'sel.':>9s}"
                     f"{'random fact.':>15s}{'grouping':>10s}")  # fmt: skip
        for sampler in samplers:
            for rate in rates:
                split = three_way_split(exact, trained, sampler, rate, m)
                row = _row(split, digits[m], sampler != "random")
                lines.append(f"{short(sampler):18s}{rate:8.0f}{_trained(split, digits[m])}{row}")
    return "\n".join(lines)


def split_summary(exact: Sweep, trained: Sweep, rates=(1.0, 2.0), samplers=CORE_SAMPLERS) -> str:
    """Section 5.2's split in the core: for each of `samplers` at each of `rates` tokens per pass,
    the trained model's validity and its shortfall from the language's 100 % as model +
    factorization + selection, which add up to it, with random order's factorization and the
    grouping beside the other rules; then confidence order's terms in sentences per document at the
    last rate.
    '(x)': within two paired standard errors of zero. split_table gives every measure and sampler."""
    lines = [
        "valid documents (%): trained model - language (100) = model + factorization + selection",
        f"{'(x): within 2 paired s.e. of 0':30s}{'trained':>9s}{'model':>9s}{'fact.':>9s}{'sel.':>9s}"
        f"{'random fact.':>15s}{'grouping':>10s}",
    ]
    for sampler in samplers:
        for rate in rates:
            split = three_way_split(exact, trained, sampler, rate, "validity")
            label = f"{ORDER_NAMES.get(sampler, short(sampler))}, {rate:g} tok/pass"
            lines.append(f"{label:30s}{_trained(split, 1)}{_row(split, 1, sampler != 'random')}")
    if "confidence" in samplers:
        lines.append(f"sentences per valid document ({SURVIVORS}):")
        for rate in rates[-1:]:
            split = three_way_split(exact, trained, "confidence", rate, "length")
            named = ((split.model, "model"), (split.factorization, "fact."), (split.selection, "sel."))
            terms = ", ".join(f"{name} {_cell(p, 1.0, 2, 0)}" for p, name in named)
            lines.append(f"  confidence order, {rate:g} tok/pass: {_trained(split, 2).strip()} - "
                         f"{truth('length'):.2f} = {terms}")  # fmt: skip
    return "\n".join(lines)


def limit_table(exact: Sweep, trained: Sweep, reference: Run, target: Target, rows=LIMIT_ROWS) -> str:
    """Tokens per pass at the AR model's quality, all three measures, with the exact denoiser (what
    any model of the language could reach with that sampler) and with the trained model: the rate
    interpolated between the two settings around the crossing, ± its paired bootstrap standard error
    (sampling noise only, not the straight line drawn between the settings, over the resamples in
    which some setting matches), or every measure on which even the slowest setting fails. Last, the
    share of resamples in which some setting matches at all, for each rate given."""
    lines = [
        "tokens per pass at the AR model's quality on all three measures",
        "(± paired bootstrap standard error; settings: the two measured rates the crossing is interpolated between)",
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
        "tokens per pass at the AR model's quality (validity, length, diversity), ± paired bootstrap standard error",
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


def lost_bits_table(bits: dict) -> str:
    """Random order's bits per document lost to the chain rule, by tokens per pass: the fixed-order
    KL averaged over orders (helpers.quality.error_sources.order_averaged_kl), for the exact denoiser (the
    factorization alone) and the trained model (its own error too)."""
    lines = [f"bits per document lost in random order, E over orders of KL(P || Q_order), {bits['n_docs']} documents:",
             "an upper bound on the sampler's own KL(P || Q); at one pass, the total correlation",
             f"{'tokens':>6s} {'exact denoiser':>16s} {'trained model':>16s}",
             f"{'a pass':>6s} {'(factorization)':>16s} {'(+ model)':>16s}"]  # fmt: skip
    for k in sorted(bits["exact"], key=int):
        (e, se), (t, st) = bits["exact"][k], bits["trained"][k]
        lines.append(f"{int(k):6d} {e:8.2f} ± {se:5.2f} {t:8.2f} ± {st:5.2f}")
    return "\n".join(lines)


def calibration_text(calibration: dict) -> str:
    """How the one-pass estimate's standard error holds up over many independent samples
    (helpers.quality.error_sources.one_pass_calibration): its z-scores' mean and spread, and the shares
    below the exact value and more than two standard errors below."""
    c = calibration
    return (
        f"the one-pass estimate on {c['samples']} other samples of {c['n_docs']} documents, as z = (estimate - exact)"
        f" / s.e.:\n  mean {c['z_mean']:+.2f}, s.d. {c['z_sd']:.2f} (0 and 1 if the errors are honest);"
        f" {100 * c['share_below']:.0f} % below the exact value, {100 * c['share_below_2se']:.0f} % more than 2 s.e."
        f" below (2.3 % expected);\n  skewness of the per-document losses {c['skewness']:.2f}"
    )
