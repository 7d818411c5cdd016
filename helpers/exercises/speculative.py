"""Checks for notebook 06: one round of the speculative rule, whose output must follow the target
exactly whatever the drafter, and the acceptance rate alpha from p and q."""

from __future__ import annotations

import numpy as np
import torch

from helpers.exercises.report import Failed, call, run_check

VERIFY_HINT = (
    "follow section 1's rule step by step: the chance of keeping each draft, the residual at the first rejection "
    "(which ends the round), and the bonus row when every draft is kept"
)
RESIDUAL_CHANGED_HINT = (
    "the caller still needs {name} as it was: compute the residual in a new tensor (out of place: no -=, no "
    "method with a trailing underscore such as clamp_)"
)
KEPT_HINT = "every draft is kept: section 1's rule keeps a draft only by chance, and replaces the first it rejects"
BACKWARDS_HINT = (
    "your residual is the wrong way round: a rejection must write a token the drafter proposes less often than the "
    "target wants it, not one it proposes too often"
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


def _rounds(fn, p, q, case) -> tuple[list[np.ndarray], np.ndarray]:
    """counts[k]: the k-th written token, over the rounds that accepted the first k drafts;
    lengths[n]: how many rounds wrote n tokens."""
    g = torch.Generator().manual_seed(1)
    gamma, vocab = q.shape
    counts, lengths = [np.zeros(vocab) for _ in range(gamma + 1)], np.zeros(gamma + 2, dtype=int)
    for _ in range(ROUNDS):
        drafted = [int(torch.multinomial(q[i], 1, generator=g)) for i in range(gamma)]
        out = call(fn, p, q, drafted, g, case=case, hint=VERIFY_HINT, inputs=("p", "q", "drafted"),
                   changed_hint=RESIDUAL_CHANGED_HINT)  # fmt: skip
        try:
            out = [int(t) for t in out]
        except (TypeError, ValueError):
            raise Failed(
                f"returned {type(out).__name__}, not a list of tokens ({case})", "return a list of ints"
            ) from None
        if not 1 <= len(out) <= gamma + 1:
            raise Failed(f"wrote {len(out)} tokens in a round of {gamma} drafts ({case})", VERIFY_HINT)
        if out[:-1] != drafted[: len(out) - 1]:
            raise Failed(
                f"drafted {drafted}, wrote {out}: only the last token written may differ from its draft ({case})",
                "the first rejection ends the round: its replacement is the last token written",
            )
        for k, token in enumerate(out):
            counts[k][token] += 1
        lengths[len(out)] += 1
    return counts, lengths


def _verify_report(fn) -> str:
    worst = 0.0
    for case, p, q in _cases():
        counts, lengths = _rounds(fn, p, q, case)
        gamma = q.size(0)
        if torch.equal(p[:gamma], q) and lengths[gamma + 1] < ROUNDS:  # q = p: every draft is kept
            if lengths[gamma] == ROUNDS:
                raise Failed(
                    f"wrote only the {gamma} drafts when every one was accepted ({case})",
                    "a round that keeps every draft writes one more token, the bonus, drawn from p[-1]",
                )
            raise Failed(
                f"rejected a draft in {ROUNDS - lengths[gamma + 1]} of {ROUNDS} rounds although q = p ({case})",
                "with q = p, section 1's chance of keeping a draft is 1: every draft must be kept",
            )
        for k, seen in enumerate(counts):
            if seen.sum() < 50:
                continue  # too few rounds got this far to judge
            expected = seen.sum() * p[k].numpy()
            chi2 = float(((seen - expected) ** 2 / np.maximum(expected, 1e-9)).sum())
            worst = max(worst, chi2)
            if chi2 <= CHI2_LIMIT:
                continue
            what = "first token" if k == 0 else ("bonus token" if k == q.size(0) else f"token {k + 1}")
            all_kept = lengths[gamma + 1] == ROUNDS
            hint = _mistake(seen, p[k].numpy(), q[k].numpy(), all_kept) if k < q.size(0) else VERIFY_HINT
            if k == q.size(0):
                hint = "when every draft is accepted, the bonus token comes from the target's last row, p[-1]"
            raise Failed(
                f"the {what} written does not follow the target ({case}: chi-square {chi2:.0f} on 3 degrees of "
                f"freedom over {int(seen.sum())} rounds; a right rule stays below {CHI2_LIMIT:.0f})",
                hint,
            )
    return f"every written token follows the target in {len(_cases())} cases (worst chi-square {worst:.1f})"


def _mistake(seen: np.ndarray, p: np.ndarray, q: np.ndarray, all_kept: bool) -> str:
    """The hint for the common mistake whose distribution the written tokens follow, if any.
    all_kept: whether every round kept every draft. A residual the wrong way round writes tokens
    that follow q, as keeping every draft does: only the rejections tell the two apart."""
    shared = np.minimum(p, q)
    residual = np.maximum(p - q, 0) / max(np.maximum(p - q, 0).sum(), 1e-300)
    backwards = np.maximum(q - p, 0) / max(np.maximum(q - p, 0).sum(), 1e-300)  # the residual the wrong way round
    inverted = q * np.minimum(1, q / np.maximum(p, 1e-300))  # kept with probability min(1, q/p)
    sure = q * (p >= q)  # kept only where p >= q
    mistakes = {
        KEPT_HINT: q,
        "a rejected token is replaced by a draw from section 1's residual, not from p": shared + (1 - shared.sum()) * p,
        "a rejected token is replaced by a draw from section 1's residual, not from q": shared + (1 - shared.sum()) * q,
        BACKWARDS_HINT: shared + (1 - shared.sum()) * backwards,
        "the ratio is upside down: check which distribution section 1's chance of keeping a draft divides by": inverted
        + (1 - inverted.sum()) * residual,
        "a draft the target likes less than the drafter (p < q) is not always rejected: section 1's rule still keeps "
        "it by chance": sure + (1 - sure.sum()) * residual,
    }
    del mistakes[BACKWARDS_HINT if all_kept else KEPT_HINT]
    chi2 = {hint: float(((seen - seen.sum() * dist) ** 2 / np.maximum(seen.sum() * dist, 1e-9)).sum())
            for hint, dist in mistakes.items()}  # fmt: skip
    closest = min(chi2, key=chi2.get)  # the mistake the written tokens follow most closely
    return closest if chi2[closest] <= CHI2_LIMIT else VERIFY_HINT


def check_verify_draft(fn) -> bool:
    """The learner's verify_draft(p, q, drafted, generator) -> list of written tokens."""
    return run_check("verify_draft", fn, _verify_report)


ALPHA_HINT = (
    "alpha is the chance that one drafted token is kept: think of what each token contributes to it, given how "
    "often the drafter proposes it and how the rule treats it"
)


def _alpha_mistakes(p: np.ndarray, q: np.ndarray) -> dict[str, np.ndarray]:
    """What the usual wrong answers return, each under its hint."""
    kept = np.minimum(1, p / q.clip(1e-300))  # the chance each token is kept, once drafted
    alpha = (q * kept).sum(-1)
    return {
        "what you returned is the total variation between p and q: the chance of a rejection, not of an acceptance": (
            1 - alpha
        ),
        "a probability cannot exceed 1: what you added up counts more than the chance of one drafted token being "
        "kept": np.maximum(p, q).sum(-1),
        "your sum counts every token as if the drafter always proposed it: a token it rarely proposes is rarely "
        "kept, whatever the rule would do with it": kept.sum(-1),
        "an average over the tokens treats them as equally likely to be drafted: the drafter proposes some far "
        "more often than others": kept.mean(-1),
        "that is the chance that two independent draws, one from p and one from q, agree; the rule also keeps "
        "a draft the target would not have drawn itself": (p * q).sum(-1),
    }


def _alpha_report(fn) -> str:
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(6), size=(5, 4)), rng.dirichlet(np.ones(6), size=(5, 4))  # (5, 4, 6)
    q[0, 0] = p[0, 0]  # identical: alpha 1
    q[0, 1] = np.eye(6)[int(np.argmin(p[0, 1]))]  # a one-hot q on p's least likely token
    p[0, 2, 5] = q[0, 2, 5] = 0  # a token neither proposes nor accepts: p / q is 0 / 0 there
    p[0, 2], q[0, 2] = p[0, 2] / p[0, 2].sum(), q[0, 2] / q[0, 2].sum()
    cases = [("batched p and q (5, 4, 6)", p, q), ("one pair of distributions (6,)", p[1, 2], q[1, 2])]
    lowest = 1.0
    for case, pc, qc in cases:
        with np.errstate(divide="ignore", invalid="ignore"):  # the one-hot q has zeros: p / q may divide by 0
            got = call(fn, pc, qc, case=case, hint=ALPHA_HINT, inputs=("p", "q"))
        try:
            got = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise Failed(f"returned {type(got).__name__}, not numbers ({case})", "return an array") from None
        brute = (qc * np.minimum(1, pc / qc.clip(1e-300))).sum(-1)  # sum_x q(x) * P(accept x)
        if got.shape != brute.shape:
            raise Failed(f"returned shape {got.shape}, expected {brute.shape} ({case})", "sum over the last axis only")
        lowest = min(lowest, float(brute.min()))
        if np.allclose(got, brute, rtol=0, atol=1e-12):
            continue
        nan_hint = "where p and q are both 0, p / q is 0 / 0: a token the drafter never proposes adds nothing"
        known = np.isfinite(got)  # a known mistake is named even where it also divides 0 by 0
        hint = next(
            (
                hint
                for hint, wrong in _alpha_mistakes(pc, qc).items()
                if np.allclose(got[known], wrong[known], rtol=0, atol=1e-12)
            ),
            ALPHA_HINT if known.all() else nan_hint,
        )
        where = np.unravel_index(int(np.argmax(np.abs(got - brute))), brute.shape)
        raise Failed(
            f"alpha differs from the exact chance of acceptance ({case}: {round(float(got[where]), 3) + 0.0:.3f} "
            f"where it is {float(brute[where]):.3f})",
            hint,
        )
    return f"equals the exact chance of acceptance for 21 pairs of distributions (alpha from {lowest:.4f} to 1)"


def check_acceptance_rate(fn) -> bool:
    """The learner's acceptance_rate(p, q) -> alpha over the last axis."""
    return run_check("acceptance_rate", fn, _alpha_report)
