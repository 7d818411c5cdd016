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


def rows_of(data: dict, drafter: str) -> list[dict]:
    """The sweep's rows of one drafter, by gamma."""
    return sorted((r for r in data["sweep"] if r["drafter"] == drafter), key=lambda r: r["gamma"])


def measured_alpha(rows: list[dict]) -> float:
    """alpha of a round's first drafted token, measured: at gamma = 1 every checked draft is one."""
    first = next(r for r in rows if r["gamma"] == 1)
    return first["accepted"] / (first["accepted"] + first["rejections"])


def canvas_ceiling(gamma: int, positions: int = 32) -> float:
    """Tokens per target pass if every draft were accepted: whole rounds of gamma + 1 tokens."""
    return positions / -(-positions // (gamma + 1))


def prediction_text(data: dict, gamma: int = 8) -> str:
    """Per drafter: alpha of a round's first drafted token, predicted and measured; tokens per
    target pass measured at QUALITY_GAMMA; at `gamma`, the formula, the chain and the measurement.
    Last, the one-pass diffusion drafter's alpha along its draft."""
    i, j = GAMMAS.index(gamma), GAMMAS.index(QUALITY_GAMMA)
    lines = [
        f"{'drafter':26s} {'1st draft alpha: pred / meas':>28s} {'gamma ' + str(QUALITY_GAMMA) + ': measured':>18s}"
        f" {'gamma ' + str(gamma) + ': formula / chain / measured':>36s}"
    ]
    for name in DRAFTERS:
        pred, rows = data["predicted"][name], rows_of(data, name)
        measured = [r["new_tokens"] / r["target_passes"] for r in rows]
        alpha = f"{pred['alpha']:.3f} / {measured_alpha(rows):.3f}"
        at_gamma = f"{pred['formula'][i]:.2f} / {pred['chain'][i]:.2f} / {measured[i]:.2f}"
        lines.append(f"{DRAFTER_STYLE[name][0]:26s} {alpha:>28s} {measured[j]:18.2f} {at_gamma:>36s}")
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


def draw_acceptance(axes, data: dict) -> None:
    """Left: tokens per target pass against gamma, measured (markers) and predicted (the chain:
    solid; the formula: dotted). Right: alpha of the i-th drafted token of a round, with an inset
    that spreads apart the three drafters whose alpha stays near 1. Every drafter keeps one colour
    and one hollow marker in both panels."""
    from matplotlib.lines import Line2D

    left, right = axes
    zoom = right.inset_axes([0.5, 0.46, 0.47, 0.38])  # axes fraction: above the falling curve, below the flat ones
    keys = []
    for name, size in zip(DRAFTERS, (5, 10, 6, 7), strict=True):  # the star rings the small drafter's dot
        label, color, _ = DRAFTER_STYLE[name]
        rows, pred = rows_of(data, name), data["predicted"][name]
        measured = [r["new_tokens"] / r["target_passes"] for r in rows]
        marker = _drafter_marker(name)
        left.plot(GAMMAS, pred["formula"], ":", color=color, lw=1)
        left.plot(GAMMAS, pred["chain"], "-", color=color, lw=1.2, alpha=0.7)
        left.plot(GAMMAS, measured, ls="", ms=size, zorder=3, **marker)
        keys.append(Line2D([], [], ls="", ms=6, label=label, **marker))  # a measurement's key: its marker alone
        places = range(1, len(pred["alpha_by_index"]) + 1)
        right.plot(places, pred["alpha_by_index"], "-", ms=5, label=label, **marker)
        if name != DRAFTERS[2]:  # the one-pass diffusion drafter falls out of the inset's range
            zoom.plot(places, pred["alpha_by_index"], "-", ms=4, **marker)
    grey = "#777777"
    lines = [
        Line2D([], [], color=grey, ls="-", lw=1.2, label="solid: the chain"),
        Line2D([], [], color=grey, ls=":", lw=1, label="dotted: the formula (one line for both diffusion drafters)"),
    ]
    ceiling = [canvas_ceiling(g) for g in GAMMAS]
    lines.append(left.plot(GAMMAS, ceiling, color="black", lw=0.7, ls="--", zorder=0)[0])
    lines[-1].set_label("dashed: every draft accepted (32 positions)")
    left.set(xlabel="gamma (tokens drafted per round)", ylabel="tokens per target pass", xticks=list(GAMMAS))
    left.set_title("Markers: measured (256 documents, 1024 at gamma = 4). Lines: predicted", loc="left", fontsize=9)
    left.add_artist(left.legend(handles=keys, fontsize=7, loc="upper left", title="measured", title_fontsize=7))
    left.legend(handles=lines, fontsize=7, loc="lower right", title="predicted", title_fontsize=7)
    right.set(xlabel="i (position in the draft)", ylabel="alpha of the i-th drafted token", ylim=(0, 1.02))
    right.set_xticks(list(GAMMAS))
    right.set_title("Acceptance along the draft (predicted)", loc="left", fontsize=9)
    right.legend(fontsize=7, loc="lower left")
    zoom.set(ylim=(0.97, 1.0), xticks=list(GAMMAS), yticks=[0.97, 0.98, 0.99, 1.0])
    zoom.tick_params(labelsize=7)
    zoom.set_ylabel("zoomed in", fontsize=7)
    right.indicate_inset_zoom(zoom, edgecolor="#999999")


def first_two_tv(docs: np.ndarray, joint: np.ndarray) -> float:
    """Total variation between the first two tokens of `docs` (n, L) and an exact joint (V, V)."""
    counts = np.zeros_like(joint)
    np.add.at(counts, (docs[:, 1], docs[:, 2]), 1)
    return 0.5 * float(np.abs(counts / len(docs) - joint).sum())


def quality_text(data: dict, reference: Run, target: Target, joint: np.ndarray, drafters=DRAFTERS) -> str:
    """Every measure for the AR model itself and each of `drafters` (DRAFTERS, or BROKEN: the greedy
    draft scored with its softmax) at QUALITY_GAMMA, with the match. Speed is left to section 3:
    this table is about exactness."""
    known = (*DRAFTERS, BROKEN)
    if not isinstance(drafters, list | tuple) or not drafters or any(name not in known for name in drafters):
        raise ValueError(f"drafters must be a non-empty list of runs of {list(known)}, got {drafters!r}")
    head = f"{'decoder':34s} {'valid':>7s} {'sentences':>9s} {'gap':>6s} {'TV(2 tok)':>9s}  matched"
    lines = [head]
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
        lines.append(
            f"{label:34s} {100 * q.validity[0]:6.1f}% {q.sentences[0]:9.2f} {q.sentence_gap[0]:+6.2f} "
            f"{first_two_tv(run.docs, joint):9.3f}  {matched}"
        )
    return "\n".join(lines)


def draw_closing_picture(axes, data: dict, sweep: Sweep, target: Target) -> None:
    """Invalid documents, sentences per document and the within-sentence gap against tokens per
    target pass: speculative decoding (each drafter, gamma = 4) against the five samplers of
    notebook 03's section 5, every setting."""
    from matplotlib.lines import Line2D

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
                    mfc="white", ms=4, ls="-", lw=0.6, alpha=0.7, label=f"diffusion: {label}")  # fmt: skip
        ax.plot(1, value(ref), "*", color="black", ms=10, ls="", label="AR alone")
        for name, size in zip(DRAFTERS, (5, 14, 10, 21), strict=True):  # nested rings: coinciding points stay visible
            run = data["quality"][name]
            ax.plot(run.tokens_per_pass, value(run.quality), ms=size, ls="", zorder=4,
                    label=f"speculative: {DRAFTER_STYLE[name][0]}", **_drafter_marker(name))  # fmt: skip
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
    keys = {f"speculative: {DRAFTER_STYLE[n][0]}": n for n in DRAFTERS}  # their keys at one size, not nested
    handles = [Line2D([], [], ls="", ms=8, **_drafter_marker(keys[k])) if k in keys else h
               for h, k in zip(handles, labels, strict=True)]  # fmt: skip
    order = [
        k for pair in zip(range(6), range(6, 12), strict=False) for k in pair
    ]  # legend rows: diffusion, then the rest
    fig.legend([handles[k] for k in order if k < len(handles)], [labels[k] for k in order if k < len(labels)],
               loc="outside lower center", ncol=6, fontsize=7.5)  # fmt: skip


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


def time_split_text(splits: dict, tokens: int, reference: str) -> str:
    """Where each decoder's time per document goes (helpers.speculative_cost.time_split): forward
    passes of the target and of the drafter (count x median time), everything else per token
    written, the total, and the speed-up over `reference` from the passes alone and measured."""
    if reference not in splits:
        raise ValueError(f"reference must be one of the timed decoders {list(splits)}, got {reference!r}")
    base = splits[reference]
    head = (
        f"{'decoder':40s} {'target passes':>14s} {'drafter passes':>15s} {'rest, per token':>15s} {'total':>8s}"
        f"  {'speed-up: passes only':>21s} {'measured':>9s}"
    )
    lines = [head]
    for name, t in splits.items():
        target = f"{t.target_passes:3.0f} x {1e3 * t.target_forward / max(t.target_passes, 1):.2f} ms"
        draft = f"{t.draft_passes:3.0f} x {1e3 * t.draft_forward / t.draft_passes:.2f} ms" if t.draft_passes else "-"
        passes_only = (base.target_forward + base.draft_forward) / (t.target_forward + t.draft_forward)
        lines.append(
            f"{name:40s} {target:>14s} {draft:>15s} {1e3 * t.other / tokens:12.2f} ms {1e3 * t.total:5.1f} ms"
            f"  {passes_only:20.2f}x {base.total / t.total:8.2f}x"
        )
    return "\n".join(lines)


def time_lost_text(splits: dict, reference: str) -> str:
    """Why each speculative decoder falls short of the AR model's time divided by its tokens per
    target pass: what that would be (each target pass at the price of one AR step, with the AR loop's
    per-token work spread over the passes likewise), then what it adds on top, in ms per document:
    target passes dearer than an AR step, the drafter's passes, and per-token work beyond that share.
    The four add up to the measured total; `largest` names the biggest addition."""
    if reference not in splits:
        raise ValueError(f"reference must be one of the timed decoders {list(splits)}, got {reference!r}")
    base = splits[reference]
    if base.target_passes < 1:
        raise ValueError(f"the reference {reference!r} must run the target at least once, got no target pass")
    step, work = base.target_forward / base.target_passes, base.other / base.target_passes  # s per AR pass
    parts = ("dearer target passes", "drafter passes", "per-token work")
    lines = [
        f"{'decoder':28s} {'AR time ÷ tokens/pass':>22s} {'+ ' + parts[0]:>22s} {'+ ' + parts[1]:>16s}"
        f" {'+ ' + parts[2]:>16s} {'= total':>8s}  largest"
    ]
    for name, t in splits.items():
        if name == reference:
            continue
        added = (t.target_forward - t.target_passes * step, t.draft_forward, t.other - t.target_passes * work)
        ideal = t.target_passes * (step + work)
        lines.append(
            f"{name:28s} {1e3 * ideal:19.1f} ms {1e3 * added[0]:19.1f} ms {1e3 * added[1]:13.1f} ms"
            f" {1e3 * added[2]:13.1f} ms {1e3 * t.total:5.1f} ms  {parts[int(np.argmax(added))]}"
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
