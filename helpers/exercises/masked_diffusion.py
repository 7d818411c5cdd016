"""Checks for notebook 03: LLaDA's schedule of tokens per step, and one pass of confidence order that
commits the k most confident masked positions."""

from __future__ import annotations

from functools import cache

import torch

from helpers.exercises.report import Failed, call, run_check
from helpers.solutions import commit_most_confident, tokens_per_step

SCHEDULE_HINT = (
    "as even as possible: no two steps differ by more than one token, and the steps with one more come first"
)


def _schedule_report(fn) -> str:
    cases = [(n, steps) for n in range(0, 65) for steps in range(1, 41)]
    for n, steps in [(30, 8), *cases]:
        case = f"n_tokens = {n}, steps = {steps}"
        got = call(fn, n, steps, case=case, hint=SCHEDULE_HINT)
        try:
            counts = [int(c) for c in got]
            whole = all(c == int(c) for c in got)
        except (TypeError, ValueError):
            raise Failed(
                f"returned {type(got).__name__}, not a list of counts ({case})", "return a list of ints"
            ) from None
        if not whole:
            raise Failed(
                f"returned {list(got)}, counts that are not whole numbers ({case})",
                "counts are whole tokens: use integer arithmetic, not /",
            )
        got = counts
        expected = tokens_per_step(n, steps)
        if got == expected:
            continue
        if len(got) != steps:
            raise Failed(f"returned {len(got)} counts for {steps} steps ({case})", "return one count per step")
        if sum(got) != n:
            raise Failed(f"the counts {got} add up to {sum(got)}, not {n} ({case})", "every token is committed once")
        if got == expected[::-1]:
            raise Failed(
                f"returned {got}, expected {expected} ({case})",
                "the remainder goes to the earliest steps, one each (LLaDA: 30 over 8 -> [4, 4, 4, 4, 4, 4, 3, 3])",
            )
        raise Failed(f"returned {got}, expected {expected} ({case})", SCHEDULE_HINT)
    example = tokens_per_step(30, 8)
    return f"{len(cases):,} cases (n_tokens 0..64, steps 1..40) follow LLaDA's rule, e.g. 30 over 8 -> {example}"


def check_tokens_per_step(fn) -> bool:
    """Compare `fn(n_tokens, steps)` with LLaDA's schedule on 2,600 cases."""
    return run_check("tokens_per_step", fn, _schedule_report)


PASS_HINT = (
    "probs (B, T, V), canvas (B, T), k, mask_id: take each position's most likely token and its probability, "
    "and write it at the k most probable masked positions; return the new canvas (B, T). (If torch rejects "
    "your arguments, give them by keyword, as dim=...)"
)
BEYOND_HINT = (
    "k may be larger than a row is long (here {k} of {length} positions): then every masked position is "
    "committed, so never ask for more items than a row holds"
)
CHANGED_HINT = (
    "the caller still needs {name} as it was: write the committed tokens into a new canvas, and compute out of "
    "place (no method with a trailing underscore)"
)
MASK_ID, VOCAB, LENGTH = 7, 9, 12  # a mask id that is not 0 or the last id, as in real vocabularies
# torch's CPU sort keeps a row of up to 16 values in order whether or not it is asked to: only longer rows
# of equal confidences (notebook 03's canvas has 33 positions) show a sort or topk that breaks ties elsewhere
LONG_TIES = ((33, 4), (64, 5), (128, 8), (128, 40))  # (positions, k)


@cache
def _pass_cases() -> list[tuple[str, torch.Tensor, torch.Tensor, int]]:
    generator = torch.Generator().manual_seed(0)
    cases = []
    for trial in range(24):
        logits = 2.0 * torch.randn(3, LENGTH, VOCAB, generator=generator, dtype=torch.float64)  # (B, T, V)
        logits[..., MASK_ID] = float("-inf")  # the model never predicts <mask>
        canvas = torch.randint(0, MASK_ID, (3, LENGTH), generator=generator)  # (B, T) filled tokens
        masked = torch.rand(3, LENGTH, generator=generator) < (trial % 6 + 1) / 7  # (B, T)
        canvas[masked] = MASK_ID
        k = 1 + trial % 5 if trial < 18 else LENGTH + 3  # the last ones ask for more than is masked
        cases.append((f"random case {trial + 1}, k = {k}", logits.softmax(-1), canvas, k))
    tied = torch.full((2, LENGTH, VOCAB), 0.5 / (VOCAB - 2), dtype=torch.float64)  # (B, T, V) flat tails
    tied[..., 0], tied[..., MASK_ID] = 0.5, 0.0  # every position equally sure of token 0
    tied[1, 9] = 0.0
    tied[1, 9, 3], tied[1, 9, 0] = 0.7, 0.3  # one clear winner in row 1
    canvas = torch.full((2, LENGTH), MASK_ID)
    canvas[:, :2] = 4  # two filled positions on the left, as confident as the rest
    cases.append(("equal confidences everywhere: the leftmost masked positions win, k = 3", tied, canvas, 3))
    cases += [_long_tie(length, k) for length, k in LONG_TIES]
    full = torch.randint(0, MASK_ID, (1, LENGTH), generator=generator)
    cases.append(("a canvas with nothing masked, k = 2", tied[:1], full, 2))
    return cases


def _long_tie(length: int, k: int) -> tuple[str, torch.Tensor, torch.Tensor, int]:
    """Equal confidences on a canvas of `length`: row 0 as the notebook's canvas (a filled first
    position, the rest masked and tied); row 1 with filled positions every 5th and two levels of
    ties, so that the k winners are the leftmost masked positions of the upper level."""
    probs = torch.full((2, length, VOCAB), 0.5 / (VOCAB - 2), dtype=torch.float64)  # (B, T, V) flat tails
    probs[..., 0], probs[..., MASK_ID] = 0.5, 0.0  # equally sure of token 0 ...
    probs[1, 1::3] = 0.6 / (VOCAB - 2)
    probs[1, 1::3, 0], probs[1, 1::3, MASK_ID] = 0.4, 0.0  # ... except every 3rd position of row 1, less sure
    canvas = torch.full((2, length), MASK_ID)
    canvas[0, 0] = 4  # like <bos>, as confident as the rest
    canvas[1, ::5] = 4
    return f"equal confidences on {length} positions: the leftmost masked positions win, k = {k}", probs, canvas, k


def _pass_report(fn) -> str:
    for case, probs, canvas, k in _pass_cases():
        length = canvas.size(1)
        hint = PASS_HINT if k <= length else BEYOND_HINT.format(k=k, length=length)  # a crash there: k > T
        got = call(fn, probs, canvas, k, MASK_ID, case=case, hint=hint, inputs=("probs", "canvas"),
                   changed_hint=CHANGED_HINT)  # fmt: skip
        expected = commit_most_confident(probs, canvas, k, MASK_ID)
        if not isinstance(got, torch.Tensor) or got.shape != canvas.shape:
            raise Failed(
                f"returned {type(got).__name__} {tuple(getattr(got, 'shape', ()))}, expected a canvas "
                f"{tuple(canvas.shape)} ({case})",
                "return the new canvas (B, T)",
            )
        if torch.equal(got, expected):
            continue
        masked = canvas == MASK_ID
        changed = got != canvas
        if (changed & ~masked).any():
            raise Failed(
                f"overwrote a position that was already filled ({case})",
                "only masked positions compete: a filled position must rank below every masked one, whatever "
                "its confidence, and when fewer than k are masked, commit just those",
            )
        wanted = torch.minimum(torch.tensor(k), masked.sum(dim=1))  # (B,)
        if not torch.equal(changed.sum(dim=1), wanted):
            raise Failed(
                f"committed {changed.sum(dim=1).tolist()} positions per row, expected {wanted.tolist()} ({case})",
                "commit k positions in every row, or every masked one when fewer than k are masked",
            )
        if torch.equal(changed, expected != canvas):
            raise Failed(
                f"the right positions, but other tokens ({case})",
                "write each position's most likely token (the largest entry of its row of probs), not another one",
            )
        hint = "commit the masked positions whose most likely token has the highest probability"
        if "equal" in case:
            hint = (
                "on equal confidence the leftmost position wins, and your ranking broke a tie another way "
                "(torch.topk, for one, promises no order among equal values)"
            )
        raise Failed(f"committed other positions than the k most confident ({case})", hint)
    return (
        "the reference canvas on 24 random passes (the last 6 ask for more positions than are masked) and 2 "
        "edge cases (equal confidences: leftmost wins; nothing masked)"
    )


def check_commit_most_confident(fn) -> bool:
    """Compare `fn(probs, canvas, k, mask_id)` with one pass of confidence order on 24 random passes and 6
    edge cases (equal confidences on 12 to 128 positions, nothing masked)."""
    return run_check("commit_most_confident", fn, _pass_report)
