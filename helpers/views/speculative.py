"""Notebook 06's tables and figures: acceptance predicted against measured, quality on every axis,
and the closing picture of lossless against lossy parallelism.

Every number comes from data/speculative.json (helpers.speculative_sweep), data/matched_quality.json
(helpers.matched_quality) or the arguments; helpers.quality and helpers.matching score them. These
functions lay the numbers out."""

from __future__ import annotations

import numpy as np

from helpers.matched_quality import Run, Sweep
from helpers.matching import MEASURES, Target, margins
from helpers.plotting import AR_COLOR, DLLM_COLOR
from helpers.speculative_sweep import BROKEN, DRAFTERS, GAMMAS, QUALITY_GAMMA
from helpers.views.sweep import MAIN, STYLE

LANGUAGE_COLOR = "#b7950b"  # gold: not the grey of the legend keys
LEFT_TO_RIGHT_COLOR = "#1e8449"  # green: not the amber of notebook 03's random sampler, nor the gold above
DRAFTER_STYLE = {  # drafter -> (short name, colour, marker): four hues and four shapes, apart in every figure
    DRAFTERS[0]: ("small AR drafter", AR_COLOR, "o"),
    DRAFTERS[1]: ("the language itself", LANGUAGE_COLOR, "*"),
    DRAFTERS[2]: ("diffusion, one pass", DLLM_COLOR, "s"),
    DRAFTERS[3]: ("diffusion, left to right", LEFT_TO_RIGHT_COLOR, "D"),
}
RING_SIZE = dict(zip(DRAFTERS, (5, 14, 10, 21), strict=True))  # marker sizes: the star rings the dot, and so on
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
    """Per drafter: alpha of a round's first drafted token, predicted and measured; at `gamma`,
    tokens per target pass from the formula, from the chain and measured. Last, the one-pass
    diffusion drafter's alpha along its draft."""
    drafters, i = _check_drafters(drafters), GAMMAS.index(gamma)
    lines = [
        f"{'':26s} {'alpha of the 1st draft':>22s}   {'tokens per target pass, gamma = ' + str(gamma):>33s}",
        f"{'drafter':26s} {'predicted':>11s} {'measured':>10s}   {'formula':>11s} {'chain':>10s} {'measured':>10s}",
    ]
    for name in drafters:
        pred, rows = data["predicted"][name], rows_of(data, name)
        r = rows[i]
        lines.append(
            f"{DRAFTER_STYLE[name][0]:26s} {pred['alpha']:11.3f} {measured_alpha(rows):10.3f}   "
            f"{pred['formula'][i]:11.2f} {pred['chain'][i]:10.2f} {r['new_tokens'] / r['target_passes']:10.2f}"
        )
    along = data["predicted"][DRAFTERS[2]]["alpha_by_index"][:4]
    lines.append(f"{DRAFTER_STYLE[DRAFTERS[2]][0]}: alpha of its 1st to 4th drafted token " + ", ".join(
        f"{a:.2f}" for a in along))  # fmt: skip
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


def draw_acceptance(axes, data: dict, drafters=MODEL_DRAFTERS) -> None:
    """Left: tokens per target pass against gamma, measured (markers) and predicted (the chain:
    solid; the formula: dotted). Right: alpha of the i-th drafted token of a round (predicted).
    Every drafter keeps one colour and one marker in both panels; the right panel's legend names
    them, the left one's says what markers and lines are."""
    from matplotlib.lines import Line2D

    left, right = axes
    for name in _check_drafters(drafters):
        label, color, _ = DRAFTER_STYLE[name]
        rows, pred = rows_of(data, name), data["predicted"][name]
        measured = [r["new_tokens"] / r["target_passes"] for r in rows]
        marker = _drafter_marker(name)
        left.plot(GAMMAS, pred["formula"], ":", color=color, lw=1.2)
        left.plot(GAMMAS, pred["chain"], "-", color=color, lw=1.2, alpha=0.7)
        left.plot(GAMMAS, measured, ls="", ms=7, zorder=3, **marker)
        places = range(1, len(pred["alpha_by_index"]) + 1)
        right.plot(places, pred["alpha_by_index"], "-", ms=6, label=label, **marker)
    grey = "#777777"
    keys = [
        Line2D([], [], color=grey, ls="", marker="o", mfc="none", label="markers: measured"),
        Line2D([], [], color=grey, ls="-", lw=1.2, label="solid: the chain"),
        Line2D([], [], color=grey, ls=":", lw=1.2, label="dotted: the formula (one for both diffusion drafters)"),
    ]
    left.set(xlabel="gamma (tokens drafted per round)", ylabel="tokens per target pass", xticks=list(GAMMAS))
    left.set_title("Measured (256 documents, 1024 at gamma = 4) and predicted", loc="left", fontsize=10)
    left.legend(handles=keys, fontsize=9, loc="upper left")
    right.set(xlabel="i (position in the draft)", ylabel="alpha of the i-th drafted token", ylim=(0, 1.05))
    right.set_xticks(list(GAMMAS))
    right.set_title("Acceptance along the draft (predicted)", loc="left", fontsize=10)
    right.legend(fontsize=9, loc="lower left")


def first_two_tv(docs: np.ndarray, joint: np.ndarray) -> float:
    """Total variation between the first two tokens of `docs` (n, L) and an exact joint (V, V)."""
    counts = np.zeros_like(joint)
    np.add.at(counts, (docs[:, 1], docs[:, 2]), 1)
    return 0.5 * float(np.abs(counts / len(docs) - joint).sum())


def quality_text(
    data: dict, reference: Run, target: Target, joint: np.ndarray | None = None, drafters=MODEL_DRAFTERS
) -> str:
    """Notebook 03's three measures for the AR model itself and each of `drafters` (of DRAFTERS, or
    BROKEN: the greedy draft scored with its softmax) at QUALITY_GAMMA, with the match; with an
    exact `joint` of the first two tokens, also their TV against it. Speed is left to section 3:
    this table is about exactness."""
    drafters = _check_drafters(drafters, known=(*DRAFTERS, BROKEN))
    tv = "" if joint is None else f" {'TV(2 tok)':>10s}"
    lines = [f"{'decoder':34s} {'valid %':>8s} {'sentences/doc':>14s} {'gap, bits':>10s}{tv}  matched"]
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


def draw_closing_picture(axes, data: dict, sweep: Sweep, target: Target, drafters=MODEL_DRAFTERS) -> None:
    """Invalid documents, sentences per document and the within-sentence gap against tokens per
    target pass: speculative decoding (each of `drafters`, gamma = 4) against the five samplers of
    notebook 03's section 5, every setting. Two legends below the panels: the diffusion samplers,
    and speculative decoding with the AR model alone."""
    from matplotlib.lines import Line2D

    drafters = _check_drafters(drafters)

    ref = sweep.ar.quality
    floor = 0.05  # % invalid drawn for a sample with none (a log axis has no 0)
    bands = [
        (floor / 2, 100 * (1 - target.lowest_validity), "invalid documents (%, log scale)",
         lambda q: max(100 * (1 - q.validity[0]), floor)),
        (ref.sentences[0] - target.length_tolerance, ref.sentences[0] + target.length_tolerance,
         "sentences per document", lambda q: q.sentences[0]),
        (ref.sentence_gap[0] - target.gap_tolerance, ref.sentence_gap[0] + target.gap_tolerance,
         "within-sentence gap (bits per sentence)",
         lambda q: q.sentence_gap[0]),
    ]  # fmt: skip
    for ax, (low, high, ylabel, value) in zip(axes, bands, strict=True):
        ax.axhspan(low, high, color=AR_COLOR, alpha=0.12, lw=0, zorder=0)
        for name in MAIN:
            label, color, marker = STYLE[name]
            runs = [r for r in sweep.runs[name] if not np.isnan(value(r.quality))]
            ax.plot([r.tokens_per_pass for r in runs], [value(r.quality) for r in runs], marker, color=color,
                    mfc="white", ms=4, ls="-", lw=0.6, alpha=0.7, label=label)  # fmt: skip
        ax.plot(1, value(ref), "*", color="black", ms=10, ls="", label="AR alone")
        for name in drafters:
            run, size = data["quality"][name], RING_SIZE[name]  # nested rings: coinciding points stay visible
            ax.plot(run.tokens_per_pass, value(run.quality), ms=size, ls="", zorder=4,
                    label=DRAFTER_STYLE[name][0], **_drafter_marker(name))  # fmt: skip
        ax.set(xscale="log", xlabel="tokens per (target) pass, log scale", ylabel=ylabel)
        ax.set_xticks([1, 2, 4, 8, 16], ["1", "2", "4", "8", "16"])
        ax.set_xticks([], minor=True)
    axes[0].set(yscale="log", ylim=(floor / 2, 150))
    axes[0].set_yticks([0.1, 1, 10, 100], ["0.1", "1", "10", "100"])
    axes[2].set_ylim(-2.2, 0.6)
    titles = (
        f"validity: at most {100 * (1 - target.lowest_validity):.1f} % invalid",
        f"length: within {target.length_tolerance:.2f} sentences",
        f"diversity: gap within {target.gap_tolerance:.2f} bits",
    )
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, loc="left", fontsize=9)
    fig = axes[0].figure
    fig.suptitle("Shaded: the AR model's own quality, with notebook 03's tolerances", x=0.01, ha="left", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    samplers = len(MAIN)  # the first handles: notebook 03's samplers; then AR alone and the drafters
    keys = {DRAFTER_STYLE[n][0]: n for n in drafters}  # the drafters' keys at one size, not nested
    handles = [Line2D([], [], ls="", ms=9, **_drafter_marker(keys[k])) if k in keys else h
               for h, k in zip(handles, labels, strict=True)]  # fmt: skip
    below = dict(fontsize=9, title_fontsize=9, alignment="left")
    fig.legend(handles[:samplers], labels[:samplers], ncol=samplers, loc="outside lower left",
               title="masked diffusion (notebook 03), every setting", **below)  # fmt: skip
    fig.legend(handles[samplers:], labels[samplers:], ncol=len(handles) - samplers, loc="outside lower right",
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


def time_split_text(splits: dict, reference: str) -> str:
    """Where each decoder's time per document goes (helpers.speculative_cost.time_split): forward
    passes of the target and of the drafter (count x median time of one), everything else, the
    total, and the speed-up over `reference`. Each row adds up: passes plus everything else."""
    if reference not in splits:
        raise ValueError(f"reference must be one of the timed decoders {list(splits)}, got {reference!r}")
    base = splits[reference]
    head = (
        f"{'decoder, per document':30s} {'target passes':>14s} {'drafter passes':>15s} {'everything else':>16s}"
        f" {'total':>8s} {'speed-up':>9s}"
    )
    lines = [head]
    for name, t in splits.items():
        target = f"{t.target_passes:3.0f} x {1e3 * t.target_forward / max(t.target_passes, 1):.2f} ms"
        draft = f"{t.draft_passes:3.0f} x {1e3 * t.draft_forward / t.draft_passes:.2f} ms" if t.draft_passes else "-"
        lines.append(
            f"{name:30s} {target:>14s} {draft:>15s} {1e3 * t.other:13.1f} ms {1e3 * t.total:5.1f} ms"
            f" {base.total / t.total:8.2f}x"
        )
    return "\n".join(lines)


def time_lost_text(splits: dict, reference: str) -> str:
    """Why each speculative decoder falls short of the AR model's time divided by its tokens per
    target pass: what that would be (each target pass at the price of one AR step, with the AR loop's
    everything else spread over the passes likewise), then what it adds on top, in ms per document:
    target passes dearer than an AR step, the drafter's passes, and everything else beyond that share.
    The four add up to the measured total; `largest` names the biggest addition."""
    if reference not in splits:
        raise ValueError(f"reference must be one of the timed decoders {list(splits)}, got {reference!r}")
    base = splits[reference]
    if base.target_passes < 1:
        raise ValueError(f"the reference {reference!r} must run the target at least once, got no target pass")
    step, work = base.target_forward / base.target_passes, base.other / base.target_passes  # s per AR pass
    parts = ("dearer target passes", "drafter passes", "everything else")
    lines = [
        f"{'decoder':28s} {'AR time ÷ tokens/pass':>22s} {'+ ' + parts[0]:>22s} {'+ ' + parts[1]:>16s}"
        f" {'+ ' + parts[2]:>18s} {'= total':>8s}  largest"
    ]
    for name, t in splits.items():
        if name == reference:
            continue
        added = (t.target_forward - t.target_passes * step, t.draft_forward, t.other - t.target_passes * work)
        ideal = t.target_passes * (step + work)
        lines.append(
            f"{name:28s} {1e3 * ideal:19.1f} ms {1e3 * added[0]:19.1f} ms {1e3 * added[1]:13.1f} ms"
            f" {1e3 * added[2]:15.1f} ms {1e3 * t.total:5.1f} ms  {parts[int(np.argmax(added))]}"
        )
    return "\n".join(lines)


def projection_text(target: str, draft: str, hardware: str, n_tokens: int, alphas, gammas, **kwargs) -> str:
    """Projected speed-up over AR (typical efficiency) for assumed alphas and each gamma, and
    whether the ceiling gives another ratio."""
    from helpers.speculative_cost import projected_speedup

    def ratio(alpha, gamma, **efficiency):
        return projected_speedup(n_tokens, target, draft, hardware, gamma=gamma, alpha=alpha, **efficiency, **kwargs)

    lines = [
        f"projection: {target} verifying, {draft} drafting, {hardware}, N = {n_tokens}; speed-up over AR",
        f"{'alpha (assumed)':>15s}  " + "  ".join(f"{'gamma ' + str(g):>8s}" for g in gammas),
    ]
    spread = 0.0
    for alpha in alphas:
        lines.append(f"{alpha:15.2f}  " + "  ".join(f"{ratio(alpha, g):7.2f}x" for g in gammas))
        for g in gammas:
            ceiling = ratio(alpha, g, bandwidth_efficiency=1.0, compute_efficiency=1.0)
            spread = max(spread, abs(ceiling / ratio(alpha, g) - 1))
    same = "are the same (within 0.1 %)" if spread < 1e-3 else f"differ by up to {100 * spread:.1f} %"
    lines.append(f"typical efficiency; the ceiling's ratios {same}")
    return "\n".join(lines)


def alpha_for(ratio: float, target: str, draft: str, hardware: str, n_tokens: int, gamma: int, **kwargs) -> float:
    """The alpha at which the projection reaches a speed-up `ratio` (bisection)."""
    from helpers.speculative_cost import projected_speedup

    low, high = 0.0, 1.0
    for _ in range(50):
        mid = (low + high) / 2
        fast = projected_speedup(n_tokens, target, draft, hardware, gamma=gamma, alpha=mid, **kwargs) >= ratio
        low, high = (low, mid) if fast else (mid, high)
    return (low + high) / 2
