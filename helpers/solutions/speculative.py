"""Notebook 06, speculative decoding: the reference solutions of its exercises."""

from __future__ import annotations

import numpy as np
import torch


def verify_draft(p: torch.Tensor, q: torch.Tensor, drafted: list[int], generator=None) -> list[int]:
    """One round of the rule: p (gamma + 1, V) the target's distributions, q (gamma, V) the
    drafter's, drafted the gamma proposed tokens. Returns the tokens the round writes."""
    for i, x in enumerate(drafted):
        u = torch.rand((), generator=generator, dtype=torch.float64)
        if u < p[i, x] / q[i, x]:  # accepted with probability min(1, p/q)
            continue
        residual = (p[i] - q[i]).clamp(min=0)  # where the target wants more than the drafter gave
        if residual.sum() == 0:  # p == q up to rounding: a rejection had probability 0
            residual = p[i]
        fix = torch.multinomial(residual / residual.sum(), 1, generator=generator)
        return [*drafted[:i], int(fix)]  # the first rejection ends the round
    bonus = torch.multinomial(p[-1], 1, generator=generator)  # every draft accepted: one more, free
    return [*drafted, int(bonus)]


def acceptance_rate(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """alpha: the chance the rule accepts a token drawn from q, checked against p, over the last
    axis. sum_x q(x) min(1, p(x)/q(x)) = sum_x min(p(x), q(x)) = 1 - TV(p, q)."""
    return np.minimum(p, q).sum(axis=-1)
