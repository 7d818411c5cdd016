"""Checks for notebook 02: attention over a KV cache, pass by pass against causal attention over
the whole sequence and then inside the trained model, and the nucleus (top-p) filter, on its
boundary cases."""

from __future__ import annotations

import math
from functools import cache

import torch

from helpers.decoding.ar import decode_with_attention, generate, top_p_filter
from helpers.decoding.checkpoints import load_pretrained
from helpers.exercises.report import Failed, call, run_check
from helpers.language.toylang import LANG

ATTEND_HINT = (
    "write k_new and v_new into cache_k and cache_v at positions start .. start + T - 1 (in place), then return "
    "(B, H, T, hd): each new position's attention over the cached positions up to and including its own"
)
CHANGED_HINT = (
    "the caller still needs {name} as it was: compute the scores and weights in new tensors (out of place: no "
    "/= or *=, no method with a trailing underscore)"
)
SCHEDULE = ((0, 5), (5, 1), (6, 1), (7, 1), (8, 2), (10, 3))  # (start, T): a prompt of 5, single tokens, blocks


def causal_attention(q, k, v, scale: bool = True) -> torch.Tensor:
    """Exact truth: causal attention of a whole sequence (B, H, S, hd), every position at once."""
    S = q.size(2)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)  # (B, H, S, S)
    future = torch.ones(S, S, dtype=torch.bool).triu(diagonal=1)  # (S, S) True where s > t
    return scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v  # (B, H, S, hd)


def _attend_mistake(q, k, v, start: int, T: int) -> dict[str, torch.Tensor]:
    """The outputs of the usual mistakes for the new positions, each with its hint."""
    S = start + T
    qs, ks, vs = q[:, :, start:S], k[:, :, :S], v[:, :, :S]
    scores = qs @ ks.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
    candidates = {
        "no causal mask within the pass: a new position saw the new positions after it": scores.softmax(-1) @ vs,
        "the mask ignores `start`: new position i is position start + i of the sequence": scores.masked_fill(
            torch.arange(S) > torch.arange(T)[:, None], float("-inf")
        ).softmax(-1)
        @ vs,
        "the scores lack attention's scaling by the head dimension hd (section 3)": causal_attention(
            q[:, :, :S], ks, vs, scale=False
        )[:, :, start:S],
    }
    return candidates


def _nan_without_unwritten_slots(fn, q, k, v, cache_k, cache_v, start: int, T: int) -> bool:
    """Run the pass again on copies of the caches whose unwritten slots hold 0, not NaN: whether the
    output still holds NaN, which then comes from the learner's own arithmetic (a fully masked row)."""
    new = slice(start, start + T)
    finite_k, finite_v = cache_k.nan_to_num(0.0), cache_v.nan_to_num(0.0)
    try:
        again = fn(q[:, :, new].clone(), k[:, :, new].clone(), v[:, :, new].clone(), finite_k, finite_v, start)
    except Exception:  # the first run returned: a second one that raises tells nothing
        return False
    return isinstance(again, torch.Tensor) and bool(again.isnan().any())


def _attend_report(fn) -> str:
    generator = torch.Generator().manual_seed(0)
    B, H, max_len, hd = 2, 3, 16, 4
    q, k, v = (torch.randn(B, H, 13, hd, generator=generator, dtype=torch.float64) for _ in range(3))
    truth = causal_attention(q, k, v)  # (B, H, 13, hd)
    cache_k, cache_v = (torch.full((B, H, max_len, hd), float("nan"), dtype=torch.float64) for _ in range(2))
    for start, T in SCHEDULE:
        case = f"{T} new position{'s' if T > 1 else ''} at start = {start}"
        new = slice(start, start + T)
        got = call(fn, q[:, :, new], k[:, :, new], v[:, :, new], cache_k, cache_v, start, case=case,
                   hint=ATTEND_HINT, inputs=("q", "k_new", "v_new"), changed_hint=CHANGED_HINT)  # fmt: skip
        if not (torch.equal(cache_k[:, :, new], k[:, :, new]) and torch.equal(cache_v[:, :, new], v[:, :, new])):
            raise Failed(
                f"the cache does not hold the new keys and values at positions {start} .. {start + T - 1} ({case})",
                "the next passes read keys and values from the caches: store the new ones there, in place, at start .. "
                "start + T - 1",
            )
        if not (cache_k[:, :, start + T :].isnan().all() and cache_v[:, :, start + T :].isnan().all()):
            raise Failed(
                f"wrote into the cache beyond position {start + T - 1} ({case})", "write T positions, at start"
            )
        if not isinstance(got, torch.Tensor) or got.shape != (B, H, T, hd):
            raise Failed(
                f"returned {type(got).__name__} {tuple(getattr(got, 'shape', ()))}, expected (B, H, T, hd) = "
                f"{(B, H, T, hd)} ({case})",
                "return one output vector per head and new position, before heads are merged",
            )
        if got.isnan().any() and _nan_without_unwritten_slots(fn, q, k, v, cache_k, cache_v, start, T):
            raise Failed(
                f"the output holds NaN although every cache slot it may read holds numbers: softmax gave NaN for a "
                f"row whose every score is masked ({case})",
                "a position may always attend to itself: the mask hides only the positions after it, so no row is "
                "ever fully masked",
            )
        if got.isnan().any():
            raise Failed(
                f"the output holds NaN: it read cache slots not written yet, which hold NaN here ({case})",
                "attend over positions 0 .. start + T - 1 only, not the whole cache",
            )
        if not torch.allclose(got, truth[:, :, new], rtol=1e-9, atol=1e-12):
            for hint, wrong in _attend_mistake(q, k, v, start, T).items():
                if torch.allclose(got, wrong, rtol=1e-9, atol=1e-12):
                    raise Failed(f"the output differs from causal attention over the whole sequence ({case})", hint)
            raise Failed(f"the output differs from causal attention over the whole sequence ({case})", ATTEND_HINT)
    model = load_pretrained("ar")
    prompt = torch.tensor([[LANG.bos_id]])
    mine = decode_with_attention(model, fn, prompt, 32)
    if not torch.equal(mine, generate(model, prompt, 32, temperature=0)):
        raise Failed("inside the trained model, greedy decoding wrote other tokens than generate(...)", ATTEND_HINT)
    return (
        f"the same outputs as causal attention over the whole sequence in {len(SCHEDULE)} passes (a prompt of 5, "
        "single tokens, blocks of 2 and 3), the cache written in place; inside the trained model, 32 greedy tokens "
        "identical to generate(..., temperature=0)"
    )


def check_attend_with_cache(fn) -> bool:
    """Run `fn(q, k_new, v_new, cache_k, cache_v, start)` pass after pass against causal attention over the
    whole sequence, then inside every layer of the shipped AR model."""
    return run_check("attend_with_cache", fn, _attend_report)


TOP_P_CHANGED_HINT = "leave the {name} you were given as they are: build the result out of place"


def _probs(*values: float) -> torch.Tensor:
    return torch.tensor([values], dtype=torch.float64).log()  # (1, V) logits whose softmax is `values`


@cache
def _top_p_cases() -> list[tuple[str, torch.Tensor, float, str]]:
    generator = torch.Generator().manual_seed(0)
    random = 2.5 * torch.randn(8, 55, generator=generator)  # (8, 55) logits, one row per document
    boundary = "the nucleus is the smallest set of most likely tokens whose mass reaches p: keep a token while "
    boundary += "the tokens strictly more likely than it hold less than p (>= p: drop)"
    tie = "tokens with equal probability are kept or dropped together: compare p with the mass of the tokens "
    tie += "strictly more likely, not with a position in the sorted order"
    return [
        *[(f"random logits (8, 55), p = {p}", random, p, boundary) for p in (0.1, 0.5, 0.9, 0.99)],
        (
            "probabilities 0.5, 0.25, 0.25 and p = 0.5: the first token alone reaches p",
            _probs(0.5, 0.25, 0.25),
            0.5,
            boundary,
        ),
        ("probabilities 0.4, 0.3, 0.3 and p = 0.5: a tie at the boundary", _probs(0.4, 0.3, 0.3), 0.5, tie),
        (
            "p = 1 with a token of probability about 1e-35",
            torch.tensor([[0.0, -40.0, -80.0]]),
            1.0,
            "p = 1 keeps every token, however unlikely (a float sum can reach 1.0 before the last token)",
        ),
        (
            "one dominant token (probability 0.99998) and p = 0.9",
            torch.tensor([[12.0, 0.0, 0.0, 0.0, 0.0]]),
            0.9,
            "the most likely token is always kept",
        ),
    ]


def _top_p_report(fn) -> str:
    for case, logits, p, hint in _top_p_cases():
        got = call(fn, logits, p, case=case, hint=hint, inputs=("logits",), changed_hint=TOP_P_CHANGED_HINT)
        expected = top_p_filter(logits, p)
        if not isinstance(got, torch.Tensor) or got.shape != logits.shape:
            raise Failed(
                f"returned {type(got).__name__} {getattr(got, 'shape', '')}, expected a tensor {tuple(logits.shape)} "
                f"({case})",
                "return the logits with the dropped ones set to -inf",
            )
        kept, should = torch.isfinite(got), torch.isfinite(expected)
        if not kept.any(dim=-1).all():
            raise Failed(
                f"a row kept no token at all ({case})",
                "the most likely token is always kept: a token's own probability does not count in the mass "
                "compared with p",
            )
        if not torch.equal(kept, should):
            extra, missing = int((kept & ~should).sum()), int((should & ~kept).sum())
            raise Failed(
                f"kept {int(kept.sum())} tokens where the nucleus has {int(should.sum())} ({extra} too many, "
                f"{missing} missing; {case})",
                hint,
            )
        if not torch.equal(got[kept].double(), logits[kept].double()):
            raise Failed(
                f"changed the logits of kept tokens ({case})",
                "leave kept logits as they are (no softmax, no renormalising) and set the others to -inf",
            )
        if math.isnan(float(got[kept].sum())):
            raise Failed(f"returned nan ({case})", "only ever write -inf into the logits")
    return (
        "the same tokens as the nucleus on 4 random batches and 4 boundary cases "
        "(mass exactly p, a tie, p = 1, one dominant token)"
    )


def check_top_p_filter(fn) -> bool:
    """Compare `fn(logits, p)` with the nucleus on random logits and on its boundary cases."""
    return run_check("top_p_filter", fn, _top_p_report)
