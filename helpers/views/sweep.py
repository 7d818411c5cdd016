"""Notebook 03, section 5: the sampler sweep's tables and figures (the editor's are in views.editor).

Every number comes from the sweep (helpers.quality.matched_quality.load_sweep), scored by
helpers.quality.scores and matched by helpers.quality.matching; these functions only lay it out."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.language.toylang import LANG
from helpers.projection.calibration import load_parallelism
from helpers.quality.matched_quality import BUDGETS, Run, Sweep
from helpers.quality.matching import MEASURES, Target, language_value, margins, tokens_per_pass_at
from helpers.quality.scores import ExactDocuments, decompose
from helpers.views.labels import place_labels

STYLE = {  # sampler -> (short name, colour, marker): the same in every figure of the notebook
    "confidence": ("confidence", DLLM_COLOR, "o"),
    "random": ("random", ACCENT_COLOR, "s"),
    "confidence, blocks of 8": ("blocks of 8", "#7d3c98", "^"),
    "threshold (Fast-dLLM)": ("threshold", "black", "D"),
    "ancestral (MDLM)": ("MDLM", "#148f77", "v"),
}
MAIN = list(STYLE)
RELAXED = {"validity only": ("validity",), "validity + length": ("validity", "length"), "matched: all three": MEASURES}


def check_sweep(sweep) -> Sweep:
    if not isinstance(sweep, Sweep):
        raise ValueError(
            f"sweep must be a helpers.quality.matched_quality.Sweep (load_sweep()), got {type(sweep).__name__}"
        )
    return sweep


def short(name: str) -> str:
    return STYLE[name][0] if name in STYLE else name


def slowest(runs: list[Run]) -> Run:
    """The setting of a sampler with the fewest tokens per pass."""
    return min(runs, key=lambda r: r.tokens_per_pass)


def setting_name(run: Run) -> str:
    """A setting as the tables name it: 'K = 32' (steps), or 'tau = 0.9' for the threshold."""
    return f"tau = {run.setting}" if run.sampler.startswith("threshold") else f"K = {run.setting}"


def pct(run: Run) -> str:
    return f"{100 * run.validity:5.1f} ± {100 * run.validity_se:3.1f}"


def validity_table(sweep: Sweep) -> str:
    """Valid documents (% ± standard error) of every setting: the fixed budgets by K, then MDLM's
    extra steps, the threshold's taus and the AR model."""
    sweep = check_sweep(sweep)
    fixed = [n for n in MAIN if not n.startswith("threshold")]
    lines = ["valid documents (% ± standard error) when K steps fill the 32 positions"]
    lines.append(f"{'K':>3} {'N/K':>5} " + "".join(f"{short(n):>13}" for n in fixed) + "  MDLM's tokens/pass")
    for k in sorted(BUDGETS, reverse=True):
        runs = [next(r for r in sweep.runs[n] if r.setting == k) for n in fixed]
        lines.append(
            f"{k:>3} {32 / k:>5.2f} " + "".join(f"{pct(r):>13}" for r in runs) + f"{runs[-1].tokens_per_pass:>8.2f}"
        )
    for r in sweep.runs["ancestral (MDLM)"][len(BUDGETS) :]:  # more steps than positions: MDLM skips empty ones
        lines.append(f"{r.setting:>3} {'':>5} {'':>39}{pct(r):>13}{r.tokens_per_pass:>8.2f}")
    lines.append("\nthreshold (Fast-dLLM): the passes adapt to each document")
    for r in sweep.runs["threshold (Fast-dLLM)"]:
        lines.append(f"  tau = {r.setting:<4}: {r.tokens_per_pass:5.2f} tokens per pass, {pct(r)} % valid")
    lines.append(f"\nAR model (notebook 02), temperature 1, one token per pass: {pct(sweep.ar)} % valid")
    return "\n".join(lines)


def draw_validity(ax, sweep: Sweep, target: Target) -> None:
    """Validity against tokens per pass for every sampler on `ax`; filled markers: the settings
    that match the AR model on all three measures of helpers.quality.matching."""
    sweep = check_sweep(sweep)
    n_matched = 0
    for name in MAIN:
        label, color, marker = STYLE[name]
        runs = sweep.runs[name]
        matched = [all(v >= 0 for v in margins(r, sweep.ar, target).values()) for r in runs]
        n_matched += sum(matched)
        x, y, e = zip(*[(r.tokens_per_pass, 100 * r.validity, 100 * r.validity_se) for r in runs], strict=True)
        ax.errorbar(x, y, yerr=e, color=color, ms=4, capsize=2, marker=marker, mfc="white", label=label)
        for xi, yi, m in zip(x, y, matched, strict=True):
            if m:
                ax.plot(xi, yi, marker, color=color, ms=7)
    # The AR model writes one token per pass, where the slowest diffusion settings sit too: a line
    # at its validity, drawn under them, rather than a marker on top of theirs.
    ar_label = f"AR model, T = 1: {100 * sweep.ar.validity:.1f} %"
    ax.axhline(100 * sweep.ar.validity, color=AR_COLOR, ls=":", lw=1.2, zorder=0, label=ar_label)
    ax.set(xscale="log", xlabel="tokens per pass (log scale)", ylabel="valid documents (%)", ylim=(-3, 103))
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    ax.set_xticks([], minor=True)
    matches = f"{n_matched} settings do" if n_matched else "none does"
    ax.set_title(
        "Validity against tokens per pass, 1024 documents a point\n(a filled marker would match the AR model on"
        f" validity, length and diversity; {matches})",
        loc="left",
        fontsize=9,
    )
    ax.legend(loc="upper right", bbox_to_anchor=(1, 0.93), fontsize=8)  # below the AR line


def draw_published(ax) -> None:
    """The d3LLM leaderboard's GSM8K accuracy against tokens per forward pass, AR and diffusion."""
    offsets = {"D2F-LLaDA": (5, -10), "Qwen2.5-7B-Instruct": (7, -3), "dParallel-LLaDA": (-30, -12)}
    for p in load_parallelism():
        style = dict(marker="*", ms=11, color=AR_COLOR) if p.kind == "AR" else dict(marker="o", ms=6, color=DLLM_COLOR)
        ax.plot(p.tokens_per_pass, p.accuracy_pct, ls="", **style)
        ax.annotate(
            p.system,
            (p.tokens_per_pass, p.accuracy_pct),
            xytext=offsets.get(p.system, (5, 4)),
            textcoords="offset points",
            fontsize=7,
        )
    ax.set(xscale="log", xlabel="tokens per forward pass (log scale)", ylabel="GSM8K-CoT accuracy (%)")
    ax.set(ylim=(70, 77), xlim=(0.8, 16))
    ax.plot([], [], "*", color=AR_COLOR, ms=11, ls="", label="AR")
    ax.plot([], [], "o", color=DLLM_COLOR, ms=6, ls="", label="LLaDA-based diffusion samplers")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)  # beside the axes, over no point
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    ax.set_xticks([], minor=True)
    ax.set_title("GSM8K, published (d3LLM leaderboard): accuracy, the only measure", loc="left", fontsize=9)


def draw_pass_counts(ax, lengths: list[int], counted: dict[str, list[int]]) -> None:
    """Section 4: sequential passes counted against the output length, log-log, one line per decoder."""
    styles = {"AR": ("o-", AR_COLOR, 1.0)}
    for name, passes in counted.items():
        fmt, color, alpha = styles.get(name, ("s-" if name.endswith("16") else "s--", DLLM_COLOR, 1.0))
        ax.plot(lengths, passes, fmt, color=color, alpha=alpha if name == "AR" else 0.9, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ticks = sorted({v for passes in counted.values() for v in passes if v in (4, 16, 64, 256, 1024)})
    ax.set_yticks(ticks, [str(t) for t in ticks])
    ax.set_xticks([], minor=True)
    ax.set_yticks([], minor=True)
    ax.set(
        xlabel="output length N (tokens)",
        ylabel="sequential passes (counted)",
        title="Sequential passes vs output length",
    )
    ax.legend()


def quality_table(sweep: Sweep, exact: ExactDocuments) -> str:
    """Validity, sentences per document, the length histogram's total variation from the exact
    one and the within-sentence gap: each sampler at its slowest setting, and the AR model."""
    sweep = check_sweep(sweep)
    slowest_settings = ", ".join(f"{short(n)} {setting_name(slowest(sweep.runs[n]))}" for n in MAIN)
    head = f"{'':13s} {'tok/':>5s} {'valid':>6s} {'sentences per':>14s} {'TV to':>6s} {'within-sentence':>15s}"
    lines = [f"each strategy at its slowest setting: {slowest_settings}", head]
    lines.append(f"{'':13s} {'pass':>5s} {'%':>6s} {'document':>14s} {'exact':>6s} {'gap (bits)':>15s}")
    truth_gap = exact.pooled_sentence_bits - exact.sentence_entropy
    lines.append(
        f"{'the language':13s} {'':5s} {100.0:6.1f} {exact.mean_sentences:7.2f}{'':7s} {0:6.2f} {truth_gap:+8.2f}"
    )
    rows = [(short(n), slowest(sweep.runs[n])) for n in MAIN] + [("AR, T = 1", sweep.ar)]
    for label, run in rows:
        q = run.quality
        lines.append(
            f"{label:13s} {run.tokens_per_pass:5.2f} {100 * q.validity[0]:6.1f} {q.sentences[0]:7.2f} ± "
            f"{q.sentences[1]:.2f} {q.length_tv:6.2f} {q.sentence_gap[0]:+8.2f} ± {q.sentence_gap[1]:.2f}"
        )
    return "\n".join(lines)


def decomposition_table(sweep: Sweep) -> str:
    """The per-document gap of each sampler's slowest setting, and of the AR model, in its
    length, within-sentence and padding parts (helpers.quality.scores.decompose)."""
    sweep = check_sweep(sweep)
    lines = [f"{'':13s} {'length':>8s} {'within':>8s} {'padding':>8s} {'= per-document gap (bits)':>27s}"]
    for label, run in [(short(n), slowest(sweep.runs[n])) for n in MAIN] + [("AR, T = 1", sweep.ar)]:
        p = decompose(run.scores)
        lines.append(f"{label:13s} {p['length']:+8.2f} {p['within']:+8.2f} {p['padding']:+8.2f} {p['total']:+14.2f}")
    return "\n".join(lines)


def draw_eos_per_pass(eos: dict[str, np.ndarray], mean_padding: float) -> Figure:
    """Cumulative <eos> committed against the pass, one curve per sampler name of `eos`."""
    if not isinstance(eos, dict) or not eos or any(n not in STYLE for n in eos):
        raise ValueError(f"eos must map sampler names of {MAIN} to per-pass counts, got {eos!r:.80}")
    fig, ax = new_figure(figsize=(7.5, 3.2))
    for name, counts in eos.items():
        label, color, marker = STYLE[name]
        ax.plot(np.arange(1, len(counts) + 1), np.cumsum(counts), marker + "-", ms=3, color=color, label=label)
    ax.axhline(mean_padding, color=TRUTH_COLOR, ls="--", label=f"the language's mean padding ({mean_padding:.2f})")
    ax.set(xlabel="pass", ylabel="<eos> committed so far (mean)", title="Confidence order writes the padding first")
    fig.legend(loc="outside right center")  # beside the axes: the curves fill them
    return fig


def draw_frontier(sweep: Sweep, target: Target, exact: ExactDocuments) -> Figure:
    """Sentences per document against the within-sentence gap for every setting with at least 50
    valid documents (dot size: validity; labels: tokens per pass, where a label fits without
    covering a marker or another label), the AR model by temperature and the language itself; the
    shaded box matches on both measures: centred on the language, as far out as the AR model at
    T = 1 plus the tolerances (helpers.quality.matching). The left panel shows every setting;
    the middle one zooms on the lower-left cluster of confidence order and the threshold, the right
    one on the settings near the language's own point."""
    sweep = check_sweep(sweep)
    zooms = ((3.0, 3.17, -1.95, -0.88), (3.82, 4.24, -0.45, 0.45))  # (sentences, sentences, gap, gap)
    ar_q = sweep.ar.quality
    truth = (exact.mean_sentences, exact.pooled_sentence_bits - exact.sentence_entropy)
    fig, panels = new_figure(ncols=3, figsize=(13, 5.2), width_ratios=(1.1, 0.8, 1))
    wide, cluster, near = panels
    labels = {ax: [] for ax in panels}  # (rank, x, y, text, colour): rank 0 the AR model and each slowest setting
    points = {ax: [] for ax in panels}  # every marker: (x, y, radius in points)

    def panel_of(x, y):  # the zoom a point is labelled in, else the wide panel
        for ax, (x0, x1, y0, y1) in zip((cluster, near), zooms, strict=True):
            if x0 < x < x1 and y0 < y < y1:
                return ax
        return wide

    temps = sweep.ar_runs["AR"]
    ar_xy = [(r.quality.sentences[0], r.quality.sentence_gap[0]) for r in temps]
    for r, (x, y) in zip(temps, ar_xy, strict=True):  # the AR model's temperatures, labelled in the zoom
        labels[near].append((0, x, y, f"T = {r.setting}", AR_COLOR))
    (x0, x1), (y0, y1) = target.allowed("length", ar_q.sentences[0]), target.allowed("diversity", ar_q.sentence_gap[0])
    for ax in panels:
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, color=AR_COLOR, alpha=0.12, lw=0))
        points[ax] += [(x, y, 3.5) for x, y in ar_xy] + [(*truth, 7)]
        for name in MAIN:
            label, color, marker = STYLE[name]
            runs = [r for r in sweep.runs[name] if r.valid.sum() >= 50]
            x, y = [r.quality.sentences[0] for r in runs], [r.quality.sentence_gap[0] for r in runs]
            sizes = [8 + 80 * r.validity for r in runs]
            hollow = name.startswith("threshold")  # it sits on top of confidence order: drawn as outlines
            ax.scatter(
                x,
                y,
                s=sizes,
                marker=marker,
                alpha=0.8,
                facecolors="none" if hollow else color,
                edgecolors=color,
                label=label,
            )
            points[ax] += [(xi, yi, s**0.5 / 2) for xi, yi, s in zip(x, y, sizes, strict=True)]
            last = -1.0
            ranked = sorted(zip(runs, x, y, strict=True), key=lambda p: p[0].tokens_per_pass)
            for rank, (r, xi, yi) in enumerate(ranked):
                if panel_of(xi, yi) is ax and (ax is cluster or r.tokens_per_pass > last + 0.4):  # rates apart
                    last = r.tokens_per_pass
                    labels[ax].append((min(rank, 1), xi, yi, f"{last:.1f}", color))
        ax.plot(*zip(*ar_xy, strict=True), "o-", color=AR_COLOR, ms=5, zorder=5, label="AR model, T = 0.5 ... 1")
        ax.plot(*truth, "*", color=TRUTH_COLOR, ms=14, zorder=6, label="the language itself")
    for v in (1.0, 0.5, 0.1):  # what the dot sizes mean
        near.scatter([], [], s=8 + 80 * v, color="grey", alpha=0.6, label=f"{100 * v:.0f} % valid")
    for ax, (x0, x1, y0, y1), line in zip((cluster, near), zooms, (":", "--"), strict=True):
        wide.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ls=line))
        ax.set(xlim=(x0, x1), ylim=(y0, y1))
    ylabel = "within-sentence gap (bits per sentence)"
    for ax in panels:
        ax.set(xlabel="sentences per valid document", ylabel=ylabel)
    wide.set(xlim=(2.98, 4.3), ylim=(-2.2, 1))
    wide.set_title("Length and diversity (dot size: validity;\nlabels: tokens per pass)", loc="left", fontsize=10)
    cluster.set_title("Zoom on the dotted box:\nconfidence order and the threshold", loc="left", fontsize=10)
    near.set_title("Zoom on the dashed box; shaded: as close\nto the language as AR at T = 1, + tolerance", loc="left",
                   fontsize=10)  # fmt: skip
    handles, names = wide.get_legend_handles_labels()
    sizes, size_names = near.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower left", ncols=4, fontsize=8)
    fig.legend(sizes[-3:], size_names[-3:], loc="outside lower right", ncols=3, fontsize=8)  # dot size: validity
    fig.canvas.draw()  # the layout first: the labels are placed in display space
    for ax in panels:
        ordered = [label[1:] for label in sorted(labels[ax], key=lambda label: label[0])]  # stable: by rate after
        place_labels(ax, ordered, points[ax], avoid=[])
    return fig


def at_quality(runs: list[Run], reference: Run, target: Target, measures) -> str:
    """Tokens per pass at the target on `measures`, with the two settings it lies between."""
    return tokens_per_pass_at(runs, reference, target, measures).settings_text


def ar_line(sweep: Sweep) -> str:
    """The language's quality (the reference) and the AR model's at T = 1 (the bar every match must
    clear), two lines."""
    q = check_sweep(sweep).ar.quality
    length, gap = language_value("length"), language_value("diversity")
    return (
        f"the language:      100.0 % valid, {length:.2f} sentences, gap {gap:+.2f} bits per sentence\n"
        f"AR model at T = 1: {100 * q.validity[0]:.1f} % valid, {q.sentences[0]:.2f} ± {q.sentences[1]:.2f}"
        f" sentences, gap {q.sentence_gap[0]:+.2f} ± {q.sentence_gap[1]:.2f} bits per sentence"
    )


def matched_table(sweep: Sweep, target: Target) -> str:
    """Per sampler, tokens per pass matched on validity only, on validity and length, and on all
    three measures (helpers.quality.matching), with the target's tolerances first."""
    sweep = check_sweep(sweep)
    lines = [
        ar_line(sweep),
        f"the target: {target}\n",
        f"{'tokens per pass':13s}" + "".join(f"{name:>37s}" for name in RELAXED),
    ]
    for name in MAIN:
        cells = [at_quality(sweep.runs[name], sweep.ar, target, m) for m in RELAXED.values()]
        lines.append(f"{short(name):13s}" + "".join(f"{c:>37s}" for c in cells))
    return "\n".join(lines)


def entropy_bound_table(sweep: Sweep) -> str:
    """Going deeper: the first-sentence gap, the entropy bound it gives and, where Q is known (the
    AR settings), KL(Q | valid || P), beside sentences and the within-sentence gap."""
    sweep = check_sweep(sweep)
    lines = [
        f"{'':15s} {'sentences':>9s} {'gap, every':>14s} {'gap, first':>14s} {'H(Q(s1))':>9s} {'KL(Q|valid||P)':>15s}",
        f"{'':15s} {'':9s} {'sentence':>14s} {'sentence':>14s} {'<= bits':>9s} {'bits/document':>15s}",
    ]
    rows = [(short(n), slowest(sweep.runs[n])) for n in MAIN]
    rows += [(f"{n} {'T = ' if n == 'AR' else ''}{r.setting}", r) for n, runs in sweep.ar_runs.items() for r in runs]
    for label, run in rows:
        q = run.quality
        kl = f"{q.kl[0]:6.2f} ± {q.kl[1]:.2f}" if q.kl else "       -"
        lines.append(
            f"{label:15s} {q.sentences[0]:9.2f} {q.sentence_gap[0]:+7.2f} ± {q.sentence_gap[1]:.2f}"
            f" {q.first_sentence_gap[0]:+7.2f} ± "
            f"{q.first_sentence_gap[1]:.2f} {q.first_sentence_entropy_bound:9.2f} {kl:>15s}"
        )
    return "\n".join(lines)


def first_word_table(sweep: Sweep, words=("the", "does", "bob")) -> str:
    """Going deeper: the exact share of sentences each first word opens, their mean surprisal, and
    how often the AR model starts its first sentence with it at each temperature."""
    sweep = check_sweep(sweep)
    tokens, probs = LANG.support()
    temps = sweep.ar_runs["AR"]
    lines = [
        f"{'first word':10s} {'P(first word)':>14s} {'mean -log2 P(s) of its sentences':>34s}"
        + "".join(f"{'share, T = ' + str(r.setting):>16s}" for r in temps)
    ]
    for word in words:
        starts = tokens[:, 0] == LANG.stoi[word]
        p_word = probs[starts].sum()
        bits = (probs[starts] * -np.log2(probs[starts])).sum() / p_word
        shares = [np.mean(r.docs[r.valid, 1] == LANG.stoi[word]) for r in temps]
        lines.append(f"{word:10s} {p_word:14.3f} {bits:34.2f}" + "".join(f"{s:16.3f}" for s in shares))
    return "\n".join(lines)
