"""Notebook 06's time tables: where each decoder's time goes on this CPU (section 5 and "Going deeper:
the CPU time, part by part"), and the speed-up projected for real models on a GPU ("Going deeper: real
models on a GPU"). helpers.views.speculative re-exports them, so the notebook reads them as `views.*`."""

from __future__ import annotations

import numpy as np


def time_split_text(splits: dict, reference: str) -> str:
    """Where each decoder's time per document goes (helpers.speculative.cost.time_split): forward
    passes of the target and of the drafter (count x median time of one), everything else, the
    total, and the speed-up over `reference`. Each row adds up before rounding: passes plus everything
    else (a pass count times a rounded time of one need not match to the last digit)."""
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
    from helpers.speculative.cost import projected_speedup

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
    from helpers.speculative.cost import projected_speedup

    low, high = 0.0, 1.0
    for _ in range(50):
        mid = (low + high) / 2
        fast = projected_speedup(n_tokens, target, draft, hardware, gamma=gamma, alpha=mid, **kwargs) >= ratio
        low, high = (low, mid) if fast else (mid, high)
    return (low + high) / 2
