"""Notebook 03, section 6: the editor (ReMDM) measured in the sweep, and one repaired document."""

from __future__ import annotations

import math

from helpers.language.toylang import LANG
from helpers.quality.matched_quality import BUDGETS, Run, Sweep
from helpers.views.sweep import check_sweep, pct, short


def _editor_label(name: str) -> str:
    return name.split(" + ")[1] if " + " in name else "stress test"


def editor_table(sweep: Sweep, base: str, editors: list[str]) -> str:
    """Validity of `base` at each K and, for every editor, its validity and its difference from
    `base` at the same K (± the standard error of the difference)."""
    sweep = check_sweep(sweep)
    if base not in sweep.runs or not editors or any(e not in sweep.runs for e in editors):
        raise ValueError(f"base and editors must be samplers of the sweep ({list(sweep.runs)})")
    lines = [f"valid % (± se), 1024 documents; {base}, then each editor: its difference from it at the same K"]
    lines.append(
        f"{'K':>3} {'tok/pass':>8} {base.split()[0]:>10s}" + "".join(f"{_editor_label(e):>24s}" for e in editors)
    )
    for k in BUDGETS:
        b = next(r for r in sweep.runs[base] if r.setting == k)
        line = f"{k:>3} {b.tokens_per_pass:8.2f} {pct(b):>10s}"
        for e in editors:
            r = next(r for r in sweep.runs[e] if r.setting == k)
            diff, se = 100 * (r.validity - b.validity), 100 * math.hypot(r.validity_se, b.validity_se)
            line += f"{100 * r.validity:>11.1f} {diff:+6.1f} ± {se:3.1f}"
        lines.append(line)
    return "\n".join(lines)


def interpolated_validity(runs: list[Run], rate: float) -> tuple[float, float] | None:
    """Validity (and its standard error) of a sampler at `rate` tokens per pass, on the straight
    line between its two settings around it; None outside the rates measured."""
    points = sorted((r.tokens_per_pass, r.validity, r.validity_se) for r in runs)
    for (x0, v0, e0), (x1, v1, e1) in zip(points, points[1:], strict=False):
        if x0 <= rate <= x1:
            w = (rate - x0) / (x1 - x0)
            return (1 - w) * v0 + w * v1, math.hypot((1 - w) * e0, w * e1)
    return None


def equal_passes_table(sweep: Sweep, editors: list[str], base: str = "ancestral (MDLM)") -> str:
    """Each editor's validity minus `base`'s at the same counted passes: for every K, the editor's
    tokens per pass and its difference (percentage points ± se) from `base`'s validity read off
    `base`'s curve at that rate ('-' outside the rates `base` was measured at)."""
    sweep = check_sweep(sweep)
    if base not in sweep.runs or not editors or any(e not in sweep.runs for e in editors):
        raise ValueError(f"base and editors must be samplers of the sweep ({list(sweep.runs)})")
    lines = [
        f"at the same counted passes: valid % of each editor minus {short(base)}'s, read off {short(base)}'s curve"
        " at the editor's tokens per pass",
        f"{'K':>3} " + "".join(f"{_editor_label(e):>28s}" for e in editors),
        f"{'':>3} " + "".join(f"{'tok/pass':>14s}{'difference':>14s}" for _ in editors),
    ]
    for k in BUDGETS:
        line = f"{k:>3} "
        for e in editors:
            r = next(r for r in sweep.runs[e] if r.setting == k)
            at = interpolated_validity(sweep.runs[base], r.tokens_per_pass)
            if at is None:
                line += f"{r.tokens_per_pass:>14.2f}{'-':>14s}"
            else:
                diff, se = 100 * (r.validity - at[0]), 100 * math.hypot(r.validity_se, at[1])
                line += f"{r.tokens_per_pass:>14.2f}{f'{diff:+.1f} ± {se:.1f}':>14s}"
        lines.append(line)
    return "\n".join(lines)


def find_repair(trace: list[dict], docs) -> tuple[int, int, int, int]:
    """A revision that repaired a city name: (document, position, pass that first wrote it, pass
    that last wrote it), where putting the first token back would make the final document invalid."""
    valid = [LANG.document_is_valid(d) for d in docs]
    cities = set(LANG.grammar.cities)
    for p, step in enumerate(trace):
        for row, pos in step["revised"].nonzero().tolist():
            first = max(k for k in range(p) if trace[k]["committed"][row, pos])
            undone = docs[row].clone()
            undone[pos] = trace[first]["canvas"][row, pos]
            words = [LANG.vocab[t] for t in docs[row].tolist()]
            in_city = (words[pos - 1], words[pos]) in cities or (words[pos], words[pos + 1]) in cities
            if valid[row] and in_city and not LANG.document_is_valid(undone):
                last = max(k for k in range(len(trace)) if trace[k]["committed"][row, pos])
                return row, pos, first, last
    raise ValueError("no revision in this trace repaired a city name; sample more documents")


def remaskings_table() -> str:
    """How often each ReMDM setting of the sweep re-masks a token over a run (the scripts' eta over
    their own 1024 steps too, the only column their values were tuned for)."""
    from helpers.diffusion.unmasking import remdm_remaskings_per_token
    from helpers.quality.matched_quality import REMDM_ETAS

    lines = [
        f"{'schedule':16s} {'re-maskings per token over a run of':>38s}",
        f"{'':16s} {'1024 steps':>10s} {'K = 8':>8s} {'K = 16':>8s} {'K = 32':>8s}",
    ]
    for (schedule, eta), source in REMDM_ETAS.items():
        counts = [remdm_remaskings_per_token(eta, schedule, k) for k in (1024, 8, 16, 32)]
        scripts = source.startswith("ReMDM")
        cells = [f"{counts[0]:>9.2f}" if scripts else f"{'-':>9s}"] + [f"{c:>9.2f}" for c in counts[1:]]
        lines.append(f"{schedule + ' ' + str(eta):16s} " + "".join(cells) + f"   {source.split(':')[0]}")
    return "\n".join(lines)


def draw_repair(trace: list[dict], docs, show) -> None:
    """Draw the document of find_repair pass by pass around the repaired position (the passes from
    its first writing to its last) and print the position's first and final token and the document."""
    from matplotlib.patches import Patch

    from helpers.common.plotting import ACCENT_COLOR, AR_COLOR, DLLM_COLOR, new_figure
    from helpers.views.canvas_figure import draw_canvas_history

    row, pos, first, last = find_repair(trace, docs)
    fig, ax = new_figure(figsize=(9, 0.36 * (last - first + 2) + 1.1))
    draw_canvas_history(ax, trace, row, range(pos - 8, pos + 3), range(first, last + 2))
    ax.set_title(
        f"One document edited, positions {pos - 8}-{pos + 2} around the repair, passes {first + 1}-{last + 2}",
        loc="left",
        fontsize=10,
    )
    key = [  # the same colours as draw_canvas_history draws
        Patch(facecolor="white", edgecolor="#999999", label="masked"),
        Patch(facecolor=DLLM_COLOR, alpha=0.25, edgecolor="#999999", label="written"),
        Patch(facecolor="white", edgecolor=ACCENT_COLOR, lw=2, label="re-masked by this pass"),
        Patch(facecolor=AR_COLOR, alpha=0.85, label="rewritten with another token"),
    ]
    fig.legend(handles=key, loc="outside lower center", ncols=4, fontsize=9)
    before, after = LANG.vocab[trace[first]["canvas"][row, pos]], LANG.vocab[docs[row, pos]]
    print(f"position {pos}: '{before}' in pass {first + 1}, '{after}' at the end")
    print(f"final: {show(docs[row])}")


def repair_story(trace: list[dict], docs, show) -> str:
    """The repair of find_repair in words: the repaired position's token pass by pass (each change,
    'masked' where a pass re-masked it), the same for its city neighbour, and the final document."""
    row, pos, _, _ = find_repair(trace, docs)
    words = [LANG.vocab[t] for t in docs[row].tolist()]
    other = pos - 1 if (words[pos - 1], words[pos]) in set(LANG.grammar.cities) else pos + 1

    def story(p: int) -> str:
        seen, changes = LANG.mask_id, []
        for j, step in enumerate(trace):
            token = int(step["canvas"][row, p])
            if token != seen:
                changes.append(f"{'masked' if token == LANG.mask_id else LANG.vocab[token]} ({j + 1})")
                seen = token
        return ", ".join(changes)

    return "\n".join([f"position {pos}, token (pass): {story(pos)}",
                      f"position {other}, beside it: {story(other)}",
                      f"final: {show(docs[row])}"])  # fmt: skip


def editor_headline(trained: Sweep, k: int = 16, eta: str = "ReMDM-cap 0.4") -> str:
    """Section 6's table: on the trained model at K = k, the valid % and the passes run (a mean per
    document) of MDLM and confidence order, each without and with one ReMDM schedule. MDLM skips a
    step that would change nothing; a step that re-masks a token changes the canvas and is run.
    editor_summary adds the exact denoiser and a second K."""
    trained = check_sweep(trained)
    lines = [f"trained model, K = {k}, 1024 documents a setting   valid %   passes run"]
    for base in ("ancestral (MDLM)", "confidence"):
        for name in (base, ("MDLM" if base.startswith("ancestral") else base) + f" + {eta}"):
            r = next(r for r in trained.runs[name] if r.setting == k)
            label = ("MDLM's sampler" if base.startswith("ancestral") else "confidence order") + (
                "" if name == base else f" + {eta}"
            )
            lines.append(f"  {label:44s} {100 * r.validity:6.1f} {r.passes.mean():12.1f}")
    return "\n".join(lines)


def editor_summary(trained: Sweep, exact: Sweep, ks=(16, 32), eta: str = "ReMDM-cap 0.4") -> str:
    """Valid % of MDLM and confidence order, without and with one ReMDM schedule, at K = ks, for the
    trained model and the exact denoiser; the editor's rows give their difference from the base.
    Then the passes MDLM runs of its K steps (a mean per document), without and with the editor:
    MDLM skips a step that would change nothing, and a step that re-masks a token changes the canvas."""
    trained, exact = check_sweep(trained), check_sweep(exact)
    sweeps = (("trained model", trained), ("exact denoiser", exact))
    head = "".join(f"{name:>{9 * len(ks) + 2}s}" for name, _ in sweeps)
    lines = [f"valid documents (%), 1024 a setting{'':3s}" + head,
             f"{'':38s}" + ("  " + "".join(f"{f'K = {k}':>9s}" for k in ks)) * 2]  # fmt: skip
    for base in ("ancestral (MDLM)", "confidence"):
        editor = ("MDLM" if base.startswith("ancestral") else base) + f" + {eta}"
        for name in (base, editor):
            label = short(base) if name == base else f"  + {eta}"
            cells = []
            for _, sweep in sweeps:
                for k in ks:
                    r = next(r for r in sweep.runs[name] if r.setting == k)
                    if name == base:
                        cells.append(f"{100 * r.validity:9.1f}")
                    else:
                        b = next(r for r in sweep.runs[base] if r.setting == k)
                        cells.append(f"{100 * (r.validity - b.validity):+9.1f}")
            lines.append(f"{label:38s}  " + "".join(cells[: len(ks)]) + "  " + "".join(cells[len(ks) :]))
    lines.append("passes run of the K steps, mean per document (the same seeds and coin flips with either model)")
    for name in ("ancestral (MDLM)", f"MDLM + {eta}"):
        cells = [f"{next(r for r in trained.runs[name] if r.setting == k).passes.mean():9.1f}" for k in ks]
        label = short(name) if name.startswith("ancestral") else f"  + {eta}"
        lines.append(f"{label:38s}  " + "".join(cells))
    return "\n".join(lines)
