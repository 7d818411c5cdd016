"""Checks for notebook 06: one round of the speculative rule, whose output must follow the target
exactly whatever the drafter, and the acceptance rate alpha from p and q."""

from __future__ import annotations

import numpy as np
import torch

from helpers.exercises.report import Failed, call, run_check

VERIFY_HINT = (
    "for each drafted x: accept if u < p[i, x] / q[i, x]; at the first rejection draw from "
    "norm(max(0, p[i] - q[i])) and stop; if all are accepted, draw a bonus token from p[-1]"
)
ROUNDS = 3000  # rounds per case
CHI2_LIMIT = 35.0  # 3 degrees of freedom: a right rule exceeds this with probability below 1e-7


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(3, 4, generator=g, dtype=torch.float64) * 1.5, dim=-1)  # (gamma + 1, V)
    far = torch.softmax(torch.randn(2, 4, generator=g, dtype=torch.float64) * 1.5, dim=-1)  # (gamma, V)
    missing = p[:2].clone()
    missing[:, int(p[0].argmax())] = 0  # the drafter never proposes the target's favourite
    missing /= missing.sum(-1, keepdim=True)
    return [
        ("a far drafter", p, far),
        ("a perfect drafter (q = p)", p, p[:2].clone()),
        ("q missing a token", p, missing),
    ]


def _rounds(fn, p, q, case) -> list[np.ndarray]:
    """counts[k]: the k-th written token, over the rounds that accepted the first k drafts."""
    g = torch.Generator().manual_seed(1)
    gamma, vocab = q.shape
    counts = [np.zeros(vocab) for _ in range(gamma + 1)]
    for _ in range(ROUNDS):
        drafted = [int(torch.multinomial(q[i], 1, generator=g)) for i in range(gamma)]
        out = call(fn, p.clone(), q.clone(), list(drafted), g, case=case, hint=VERIFY_HINT)
        try:
            out = [int(t) for t in out]
        except (TypeError, ValueError):
            raise Failed(
                f"returned {type(out).__name__}, not a list of tokens ({case})", "return a list of ints"
            ) from None
        if not 1 <= len(out) <= gamma + 1:
            raise Failed(f"wrote {len(out)} tokens in a round of {gamma} drafts ({case})", VERIFY_HINT)
        if out[:-1] != drafted[: len(out) - 1]:
            raise Failed(f"drafted {drafted}, wrote {out}: only the last token may differ ({case})", VERIFY_HINT)
        for k, token in enumerate(out):
            counts[k][token] += 1
    return counts


def _verify_report(fn) -> str:
    worst = 0.0
    for case, p, q in _cases():
        for k, seen in enumerate(_rounds(fn, p, q, case)):
            if seen.sum() < 50:
                continue  # too few rounds got this far to judge
            expected = seen.sum() * p[k].numpy()
            chi2 = float(((seen - expected) ** 2 / np.maximum(expected, 1e-9)).sum())
            worst = max(worst, chi2)
            if chi2 <= CHI2_LIMIT:
                continue
            what = "first token" if k == 0 else ("bonus token" if k == q.size(0) else f"token {k + 1}")
            hint = _mistake(seen, p[k].numpy(), q[k].numpy()) if k < q.size(0) else VERIFY_HINT
            if k == q.size(0):
                hint = "when every draft is accepted, the bonus token comes from the target's last row, p[-1]"
            raise Failed(
                f"the {what} written does not follow the target ({case}: chi-square {chi2:.0f} on 3 degrees of "
                f"freedom over {int(seen.sum())} rounds; a right rule stays below {CHI2_LIMIT:.0f})",
                hint,
            )
    return f"every written token follows the target in {len(_cases())} cases (worst chi-square {worst:.1f})"


def _mistake(seen: np.ndarray, p: np.ndarray, q: np.ndarray) -> str:
    """The hint for the common mistake whose distribution the written tokens follow, if any."""
    shared = np.minimum(p, q)
    mistakes = {
        "every draft is kept: a draft must be accepted with probability min(1, p/q), else replaced": q,
        "a rejected token is replaced by a draw from norm(max(0, p - q)), not from p": shared + (1 - shared.sum()) * p,
        "a rejected token is replaced by a draw from norm(max(0, p - q)), not from q": shared + (1 - shared.sum()) * q,
    }
    for hint, dist in mistakes.items():
        expected = seen.sum() * dist
        if (((seen - expected) ** 2 / np.maximum(expected, 1e-9)).sum()) <= CHI2_LIMIT:
            return hint
    return VERIFY_HINT


def check_verify_draft(fn) -> bool:
    """The learner's verify_draft(p, q, drafted, generator) -> list of written tokens."""
    return run_check("verify_draft", fn, _verify_report)


ALPHA_HINT = "alpha = sum over tokens of min(p, q): the mass p and q share (1 - their total variation)"


def _alpha_report(fn) -> str:
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(6), size=(5, 4)), rng.dirichlet(np.ones(6), size=(5, 4))  # (5, 4, 6)
    q[0, 0] = p[0, 0]  # identical: alpha 1
    q[0, 1] = np.eye(6)[int(np.argmin(p[0, 1]))]  # a one-hot q on p's least likely token
    cases = [("batched p and q (5, 4, 6)", p, q), ("one pair of distributions (6,)", p[1, 2], q[1, 2])]
    for case, pc, qc in cases:
        got = call(fn, pc.copy(), qc.copy(), case=case, hint=ALPHA_HINT)
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise Failed(f"returned {type(got).__name__}, not numbers ({case})", "return an array") from None
        brute = (qc * np.minimum(1, pc / qc.clip(1e-300))).sum(-1)  # sum_x q(x) * P(accept x)
        if got.shape != brute.shape:
            raise Failed(f"returned shape {got.shape}, expected {brute.shape} ({case})", "sum over the last axis only")
        if np.allclose(got, brute, rtol=0, atol=1e-12):
            continue
        if np.allclose(got, 1 - brute, atol=1e-12):
            hint = "what you returned is the total variation, the mass they do not share: alpha = 1 - TV"
        elif np.allclose(got, np.maximum(pc, qc).sum(-1), atol=1e-12):
            hint = "take the smaller of p and q at each token, not the larger"
        else:
            hint = ALPHA_HINT
        raise Failed(f"alpha differs from the chance of acceptance, sum_x q(x) min(1, p(x)/q(x)) ({case})", hint)
    return f"equals the acceptance probability, summed over every drafted token, in {len(cases)} cases (21 pairs)"


def check_acceptance_rate(fn) -> bool:
    """The learner's acceptance_rate(p, q) -> alpha over the last axis."""
    return run_check("acceptance_rate", fn, _alpha_report)
