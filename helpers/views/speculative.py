"""Notebook 06's tables and figures: acceptance predicted against measured, quality on every axis,
and the closing picture of lossless against lossy parallelism.

Every number comes from data/speculative.json (helpers.speculative.sweep), data/matched_quality.json
(helpers.quality.matched_quality) or the arguments; helpers.quality.scores and helpers.quality.matching
score them. These
functions lay the numbers out; the time tables live in helpers.views.speculative_time, re-exported here
so that the notebook reads every table as views.*."""

from __future__ import annotations

import numpy as np

from helpers.common.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR
from helpers.quality.error_sources import value as measured
from helpers.quality.matched_quality import Run, Sweep
from helpers.quality.matching import MEASURES, Target, language_value, margins
from helpers.speculative.sweep import BROKEN, DRAFTERS, GAMMAS, QUALITY_GAMMA
from helpers.views.speculative_time import alpha_for, projection_text, time_lost_text, time_split_text  # noqa: F401
from helpers.views.sweep import MAIN

LANGUAGE_COLOR = "#b7950b"  # gold: not the grey of the legend keys
LEFT_TO_RIGHT_COLOR = "#1e8449"  # green: not the amber of notebook 03's random sampler, nor the gold above
DRAFTER_STYLE = {  # drafter -> (short name, colour, marker): four hues and four shapes, apart in every figure
    DRAFTERS[0]: ("small AR drafter", AR_COLOR, "o"),
    DRAFTERS[1]: ("the language itself", LANGUAGE_COLOR, "*"),
    DRAFTERS[2]: ("diffusion, one pass", DLLM_COLOR, "s"),
    DRAFTERS[3]: ("diffusion, left to right", LEFT_TO_RIGHT_COLOR, "D"),
}
RING_SIZE = dict(zip(DRAFTERS, (6, 14, 10, 15), strict=True))  # marker sizes: the star rings the dot, and so on
MODEL_DRAFTERS = (DRAFTERS[0], DRAFTERS[2], DRAFTERS[3])  # the drafters that are models: the language is not


def _check_drafters(drafters, known=DRAFTERS) -> list[str]:
    """A non-empty list or tuple of names from `known`, as a list."""
    if not isinstance(drafters, list | tuple) or not drafters or any(name not in known for name in drafters):
        raise ValueError(f"drafters must be a non-empty list of runs of {list(known)}, got {drafters!r}")
    return list(drafters)


def rows_of(data: dict, drafter: str) -> list[dict]:
    """The sweep's rows of one drafter, by gamma."""
    return sorted((r for r in data["sweep"] if r["drafter"] == drafter), key=lambda r: r["gamma"])


def measured_alpha(rows: list[dict]) -> float:
    """alpha of a round's first drafted token, measured: at gamma = 1 every checked draft is one."""
    first = next(r for r in rows if r["gamma"] == 1)
    return first["accepted"] / (first["accepted"] + first["rejections"])


def prediction_text(data: dict, gamma: int = QUALITY_GAMMA, drafters=MODEL_DRAFTERS) -> str:
    """Per drafter: alpha of a round's first drafted token, predicted; at `gamma`, tokens per target
    pass from the formula, from the chain and measured. Last, the one-pass diffusion drafter's alpha
    along its draft. (alpha predicted against measured: alpha_check_text.)"""
    drafters, i = _check_drafters(drafters), GAMMAS.index(gamma)
    lines = [
        f"{'':26s} {'alpha of a':>11s}   {'tokens per target pass, gamma = ' + str(gamma):>33s}",
        f"{'drafter':26s} {'1st draft':>11s}   {'formula':>11s} {'chain':>10s} {'measured':>10s}",
    ]
    for name in drafters:
        pred, rows = data["predicted"][name], rows_of(data, name)
        r = rows[i]
        lines.append(
            f"{DRAFTER_STYLE[name][0]:26s} {pred['alpha']:11.3f}   "
            f"{pred['formula'][i]:11.2f} {pred['chain'][i]:10.2f} {r['new_tokens'] / r['target_passes']:10.2f}"
        )
    along = data["predicted"][DRAFTERS[2]]["alpha_by_index"][:4]
    lines.append(f"{DRAFTER_STYLE[DRAFTERS[2]][0]}: alpha of its 1st to 4th drafted token " + ", ".join(
        f"{a:.2f}" for a in along))  # fmt: skip
    return "\n".join(lines)


def alpha_check_text(data: dict, drafters=DRAFTERS) -> str:
    """Per drafter: alpha of a round's first drafted token, predicted (averaged over the prefixes of
    the language's documents) and measured (at gamma = 1, where every checked draft is a first one),
    with the measurement's standard error."""
    lines = [f"{'drafter':26s} {'predicted':>10s} {'measured':>10s} {'± s.e.':>7s}  (alpha of a round's 1st draft)"]
    for name in _check_drafters(drafters):
        first = next(r for r in rows_of(data, name) if r["gamma"] == 1)
        checked = first["accepted"] + first["rejections"]
        alpha = first["accepted"] / checked
        se = (alpha * (1 - alpha) / checked) ** 0.5
        lines.append(f"{DRAFTER_STYLE[name][0]:26s} {data['predicted'][name]['alpha']:10.3f} {alpha:10.3f} {se:7.4f}")
    return "\n".join(lines)


def end_effect_text(data: dict, gamma: int = 8) -> str:
    """Where the formula's error comes from, at one gamma: the end of the canvas, then alpha's
    variation along the documents and along the draft."""
    i = GAMMAS.index(gamma)
    lines = [
        f"gamma = {gamma}, tokens per target pass",
        f"{'drafter':26s} {'formula':>8s} {'+ canvas end':>12s} {'+ alpha by place':>16s} {'measured':>9s}",
        "(alpha by place: along the sentence and along the draft; with both, the chain)",
    ]
    for name in DRAFTERS:
        pred, r = data["predicted"][name], rows_of(data, name)[i]
        values = (
            pred["formula"][i],
            pred["chain, one alpha"][i],
            pred["chain"][i],
            r["new_tokens"] / r["target_passes"],
        )
        lines.append(
            f"{DRAFTER_STYLE[name][0]:26s} {values[0]:8.2f} {values[1]:12.2f} {values[2]:16.2f} {values[3]:9.2f}"
        )
    return "\n".join(lines)


def _drafter_marker(name: str) -> dict:
    """The marker of one drafter, the same in every figure: hollow but for the small AR drafter's
    dot, so that drafters whose points coincide stay visible one inside the other."""
    _, color, marker = DRAFTER_STYLE[name]
    return dict(marker=marker, color=color, mfc=color if name == DRAFTERS[0] else "none", mec=color, mew=1.5)


def _shared_note(shared: list[str]) -> str:
    """The formula key's note on drafters whose dotted lines coincide: one line for them."""
    if not shared:
        return ""
    if set(shared) == {DRAFTERS[2], DRAFTERS[3]}:
        return "\n(one line for both diffusion drafters)"
    return "\n(one line for " + "; ".join(DRAFTER_STYLE[n][0] for n in shared) + ")"


def draw_acceptance(axes, data: dict, drafters=MODEL_DRAFTERS) -> None:
    """Left: tokens per target pass against gamma, measured (markers) and predicted (the chain:
    solid; the formula: dotted). Right: alpha of the i-th drafted token of a round, given that every
    draft before it was kept (predicted). Every drafter keeps one colour and one marker in both
    panels, named in one legend below them; the left panel's legend says what markers and lines are.
    Drafters with the same formula (the two diffusion drafters share their alpha) share one dotted
    line, its dots in each one's colour, and that key says so."""
    from matplotlib.lines import Line2D

    left, right = axes
    drafters = _check_drafters(drafters)
    formulas = [np.asarray(data["predicted"][name]["formula"]) for name in drafters]
    shared = [n for n, f in zip(drafters, formulas, strict=True) if sum(np.allclose(f, g) for g in formulas) > 1]
    for k, name in enumerate(drafters):
        label, color, _ = DRAFTER_STYLE[name]
        rows, pred = rows_of(data, name), data["predicted"][name]
        measured = [r["new_tokens"] / r["target_passes"] for r in rows]
        marker = _drafter_marker(name)
        same = [j for j, f in enumerate(formulas) if np.allclose(f, formulas[k])]  # drafters sharing this line
        dots = (1.0, 2.0 * len(same) - 1.0)  # a dot, then room for the others' dots
        left.plot(GAMMAS, pred["formula"], color=color, lw=1.5, ls=(2.0 * same.index(k), dots))
        left.plot(GAMMAS, pred["chain"], "-", color=color, lw=1.2, alpha=0.7)
        left.plot(GAMMAS, measured, ls="", ms=7, zorder=3, **marker)
        places = range(1, len(pred["alpha_by_index"]) + 1)
        right.plot(places, pred["alpha_by_index"], "-", ms=6, label=label, **marker)
    grey = "#777777"
    keys = [
        Line2D([], [], color=grey, ls="", marker="o", mfc="none", label="markers: measured"),
        Line2D([], [], color=grey, ls="-", lw=1.2, label="solid: the chain"),
        Line2D([], [], color=grey, ls=":", lw=1.5, label="dotted: the formula" + _shared_note(shared)),
    ]
    left.set(xlabel="gamma (tokens drafted per round)", ylabel="tokens per target pass", xticks=list(GAMMAS))
    left.set_title("Measured (256 documents, 1024 at gamma = 4) and predicted", loc="left", fontsize=10)
    left.legend(handles=keys, fontsize=9, loc="upper left")
    ylabel = "alpha of the i-th draft\n(given every draft before it was kept)"
    right.set(xlabel="i (position in the draft)", ylabel=ylabel, ylim=(0, 1.05))
    right.set_xticks(list(GAMMAS))
    right.set_title("Acceptance along the draft (predicted)", loc="left", fontsize=10)
    handles, labels = right.get_legend_handles_labels()
    left.figure.legend(handles, labels, ncol=len(labels), loc="outside lower center", fontsize=9,
                       title="drafters, in both panels", title_fontsize=9)  # fmt: skip


def first_two_tv(docs: np.ndarray, joint: np.ndarray) -> float:
    """Total variation between the first two tokens of `docs` (n, L) and an exact joint (V, V)."""
    counts = np.zeros_like(joint)
    np.add.at(counts, (docs[:, 1], docs[:, 2]), 1)
    return 0.5 * float(np.abs(counts / len(docs) - joint).sum())


def quality_text(
    data: dict, reference: Run, target: Target, joint: np.ndarray | None = None, drafters=MODEL_DRAFTERS
) -> str:
    """Notebook 03's three measures for the language (exactly: the reference), the AR model itself
    and each of `drafters` (of DRAFTERS, or BROKEN: the greedy draft scored with its softmax) at
    QUALITY_GAMMA, with the match; with an
    exact `joint` of the first two tokens, also their TV against it. Speed is left to section 3:
    this table is about exactness."""
    drafters = _check_drafters(drafters, known=(*DRAFTERS, BROKEN))
    tv = "" if joint is None else f" {'TV(2 tok)':>10s}"
    lines = [f"{'decoder':34s} {'valid %':>8s} {'sentences/doc':>14s} {'gap, bits':>10s}{tv}  matched"]
    length, gap = language_value("length"), language_value("diversity")
    lines.append(f"{'the language (exact, the reference)':34s} {100.0:8.1f} {length:14.2f} {gap:+10.2f}")
    runs = {"AR model alone (T = 1)": reference}
    for name in drafters:
        runs[DRAFTER_STYLE.get(name, ("greedy draft, softmax as q (bug)",))[0]] = data["quality"][name]
    for label, run in runs.items():
        q = run.quality
        held = margins(run, reference, target)
        matched = (
            "all three"
            if all(v >= 0 for v in held.values())
            else "fails " + ", ".join(k for k in MEASURES if held[k] < 0)
        )
        tv = "" if joint is None else f" {first_two_tv(run.docs, joint):10.3f}"
        lines.append(
            f"{label:34s} {100 * q.validity[0]:8.1f} {q.sentences[0]:14.2f} {q.sentence_gap[0]:+10.2f}{tv}  {matched}"
        )
    return "\n".join(lines)


def tolerances_text(target: Target, reference: Run) -> str:
    """What "matched" means (notebook 03's rule: as close to the language as the AR model
    `reference`, plus sampling error), as the closing picture's bands and panel titles give it."""
    (s0, s1), (g0, g1) = (target.allowed(m, measured(reference, m)[0]) for m in ("length", "diversity"))
    return (
        f"matched: at least {100 * target.lowest_validity:.1f} % valid; sentences/doc and gap as close to the"
        f" language as the AR model's, + {target.length_tolerance:.2f} sentences and + {target.gap_tolerance:.2f} bits:"
        f" {s0:.2f} to {s1:.2f} sentences, gap {g0:+.2f} to {g1:+.2f} bits"
    )


SAMPLER_COLOR = "#8c8c8c"  # grey: notebook 03's samplers, one key for all five


def _matched(run, reference: Run, target: Target) -> bool:
    return all(v >= 0 for v in margins(run, reference, target).values())


def matched_count_text(data: dict, sweep: Sweep, target: Target, drafters=MODEL_DRAFTERS) -> str:
    """How many runs sit inside all three of the closing picture's bands: speculative decoding with
    each of `drafters` (gamma = 4), and every setting of notebook 03's five samplers."""
    drafters = _check_drafters(drafters)
    spec = sum(_matched(data["quality"][name], sweep.ar, target) for name in drafters)
    runs = [run for name in MAIN for run in sweep.runs[name]]
    diffusion = sum(_matched(run, sweep.ar, target) for run in runs)
    return (
        f"inside all three bands: speculative decoding, {spec} of {len(drafters)} drafters; "
        f"masked diffusion on the trained model, {diffusion} of {len(runs)} settings"
    )


def draw_closing_picture(axes, data: dict, sweep: Sweep, target: Target, drafters=MODEL_DRAFTERS) -> None:
    """Valid documents, sentences per document and the within-sentence gap against tokens per
    target pass: speculative decoding (each of `drafters`, gamma = 4) against the five samplers of
    notebook 03's section 5 on the trained model, every setting, all in one grey. Validity is read
    as valid % but drawn on a log scale of the invalid share, so that 99 and 99.9 stand apart. Two
    legends below the panels: the diffusion samplers, and speculative decoding with the AR model alone."""
    from matplotlib.lines import Line2D

    drafters = _check_drafters(drafters)

    ref = sweep.ar.quality
    floor = 0.05  # % invalid drawn for a sample with none (a log axis has no 0)
    length, gap = (target.allowed(m, measured(sweep.ar, m)[0]) for m in ("length", "diversity"))
    bands = [
        (floor / 2, 100 * (1 - target.lowest_validity),
         "valid documents (%), drawn as the invalid\nshare (100 - valid) on a log scale",
         lambda q: max(100 * (1 - q.validity[0]), floor)),
        (*length, "sentences per document", lambda q: q.sentences[0]),
        (*gap, "within-sentence gap (bits per sentence)", lambda q: q.sentence_gap[0]),
    ]  # fmt: skip
    samplers = f"{len(MAIN)} samplers, every setting"
    truths = (None, language_value("length"), language_value("diversity"))  # validity: 100 %, off the log axis
    for ax, (low, high, ylabel, value), truth in zip(axes, bands, truths, strict=True):
        ax.axhspan(low, high, color=AR_COLOR, alpha=0.12, lw=0, zorder=0)
        if truth is not None:
            ax.axhline(
                truth,
                color=TRUTH_COLOR,
                ls=":",
                lw=1.5,
                zorder=1,
                label="the language itself" if ax is axes[1] else None,
            )
        for k, name in enumerate(MAIN):
            runs = [r for r in sweep.runs[name] if not np.isnan(value(r.quality))]
            ax.plot([r.tokens_per_pass for r in runs], [value(r.quality) for r in runs], "o", color=SAMPLER_COLOR,
                    mfc="white", ms=4, ls="-", lw=0.6, alpha=0.8, label=samplers if k == 0 else None)  # fmt: skip
        ax.plot(1, value(ref), "*", color="black", ms=10, ls="", label="AR alone")
        for name in drafters:
            run, size = data["quality"][name], RING_SIZE[name]  # nested rings: coinciding points stay visible
            on_top = name == DRAFTERS[0]  # the dot over the diamond it nearly coincides with, white-rimmed
            marker = _drafter_marker(name) | (dict(mec="white", mew=0.8) if on_top else {})
            ax.plot(run.tokens_per_pass, value(run.quality), ms=size, ls="", zorder=5 if on_top else 4,
                    label=DRAFTER_STYLE[name][0], **marker)  # fmt: skip
        ax.set(xscale="log", xlabel="tokens per (target) pass, log scale", ylabel=ylabel)
        ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
        ax.set_xticks([], minor=True)
    axes[0].set(yscale="log", ylim=(150, floor / 2))  # inverted: the most valid at the top, as in the others
    axes[0].set_yticks([0.1, 1, 10, 100], ["99.9", "99", "90", "0"])
    axes[0].set_yticks([], minor=True)
    axes[2].set_ylim(-2.2, 0.6)
    titles = (
        f"validity: at least {100 * target.lowest_validity:.1f} % valid",
        f"length: {length[0]:.2f} to {length[1]:.2f} sentences",
        f"diversity: gap {gap[0]:+.2f} to {gap[1]:+.2f} bits",
    )
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, loc="left", fontsize=9)
    fig = axes[0].figure
    fig.suptitle("Shaded: what matches, as close to the language (dotted) as the AR model + notebook 03's tolerances",
                 x=0.01, ha="left", fontsize=10)  # fmt: skip
    handles, labels = axes[0].get_legend_handles_labels()
    keys = {DRAFTER_STYLE[n][0]: n for n in drafters}  # the drafters' keys at one size, not nested
    handles = [Line2D([], [], ls="", ms=9, **_drafter_marker(keys[k])) if k in keys else h
               for h, k in zip(handles, labels, strict=True)]  # fmt: skip
    below = dict(fontsize=9, title_fontsize=9, alignment="left")
    fig.legend(handles[:1], labels[:1], loc="outside lower left",
               title="masked diffusion, trained model (notebook 03)", **below)  # fmt: skip
    fig.legend(handles[1:], labels[1:], ncol=len(handles) - 1, loc="outside lower right",
               title="speculative decoding at gamma = 4, and the AR model alone", **below)  # fmt: skip


def tv_noise(joint: np.ndarray, n: int, draws: int = 200, seed: int = 0) -> tuple[float, float]:
    """The TV that n exact samples of `joint` show against it by chance: (mean, 95th percentile)."""
    rng = np.random.default_rng(seed)
    flat = joint.ravel() / joint.sum()
    tvs = [0.5 * np.abs(rng.multinomial(n, flat) / n - flat).sum() for _ in range(draws)]
    return float(np.mean(tvs)), float(np.percentile(tvs, 95))


def pass_cost_text(data: dict, draft_cost: dict[str, float]) -> str:
    """Speed-up over AR if every pass costs its model's bytes, as on a bandwidth-bound GPU: a round
    is its drafter passes at cost c each (draft bytes / target bytes) plus one target pass."""
    lines = [f"{'drafter':26s} {'tok/target pass':>15s} {'draft passes/round':>18s} {'c':>7s} {'speed-up':>9s}"]
    for name in DRAFTERS:
        r = next(r for r in data["sweep"] if r["drafter"] == name and r["gamma"] == QUALITY_GAMMA)
        tokens, per_round, c = r["new_tokens"] / r["target_passes"], r["draft_passes"] / r["rounds"], draft_cost[name]
        speed = tokens / (per_round * c + 1)
        lines.append(f"{DRAFTER_STYLE[name][0]:26s} {tokens:15.2f} {per_round:18.2f} {c:7.3f} {speed:8.2f}x")
    return "\n".join(lines)
