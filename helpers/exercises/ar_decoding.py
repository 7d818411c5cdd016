"""Checks for notebook 02: the KV-cached greedy loop, against helpers.ar.generate with its
forward passes counted, and the nucleus (top-p) filter, on its boundary cases."""

from __future__ import annotations

import math
from functools import cache

import torch

from helpers.ar import generate, top_p_filter
from helpers.checkpoints import load_pretrained
from helpers.exercises.report import Failed, call, run_check
from helpers.model import count_passes
from helpers.toylang import LANG
from helpers.train import held_out_documents

CACHE_HINT = (
    "cache = model.new_cache(B); the first pass reads the whole prompt with cache=cache, every later pass "
    "only the newest token (B, 1); take the argmax at the last position"
)


@cache
def _cases() -> list[tuple[str, torch.Tensor, int]]:
    docs = torch.as_tensor(held_out_documents(8))  # (8, 33)
    return [
        ("<bos> alone, 32 new tokens", torch.tensor([[LANG.bos_id]]), 32),
        ("a batch of 3 prompts of 5 tokens, 12 new tokens", docs[:3, :5].clone(), 12),
        ("a batch of 2 prompts of 9 tokens, 1 new token", docs[3:5, :9].clone(), 1),
    ]


def _cached_report(fn) -> str:
    model = load_pretrained("ar")
    counted = []
    for case, prompt, n_new in _cases():
        B, T0 = prompt.shape
        expected = generate(model, prompt, n_new, temperature=0)  # (B, T0 + n_new)
        with count_passes(model) as counter, torch.no_grad():
            got = call(fn, model, prompt.clone(), n_new, case=case, hint=CACHE_HINT)
        if not isinstance(got, torch.Tensor):
            raise Failed(
                f"returned {type(got).__name__}, not a tensor ({case})", "return the token ids (B, T0 + n_new)"
            )
        if got.shape == (B, n_new) and n_new != T0 + n_new:
            raise Failed(f"returned shape {tuple(got.shape)} ({case})", "return the prompt followed by the new tokens")
        if got.shape != expected.shape:
            raise Failed(f"returned shape {tuple(got.shape)}, expected {tuple(expected.shape)} ({case})", CACHE_HINT)
        if not torch.equal(got.cpu().long(), expected):
            col = int((got.cpu().long() != expected).any(dim=0).nonzero()[0])
            raise Failed(
                f"tokens differ from generate(..., temperature=0) from position {col} on ({case})",
                "greedy decoding takes logits[:, -1].argmax(-1) at every step; the first T0 columns are the prompt",
            )
        naive = B * sum(T0 + j for j in range(n_new))  # the whole prefix at every step
        cached = B * (T0 + n_new - 1) if n_new else 0  # the prompt once, then one token per pass
        if counter.n != n_new:
            raise Failed(f"{counter.n} forward passes for {n_new} new tokens ({case})", "one pass per new token")
        if counter.positions == naive != cached:
            raise Failed(
                f"the network read {counter.positions:,} positions, as the naive loop does; a cached loop reads "
                f"{cached:,} ({case})",
                "pass cache= to every call and feed only the newest token after the first pass",
            )
        if counter.positions != cached:
            raise Failed(
                f"the network read {counter.positions:,} positions; a cached loop reads {cached:,} ({case})", CACHE_HINT
            )
        counted.append((n_new, cached, naive))
    n_new, cached, naive = counted[0]
    return (
        f"tokens identical to generate(..., temperature=0) on {len(counted)} prompts; for 32 new tokens after "
        f"<bos>: {n_new} passes reading {cached} positions (the naive loop reads {naive})"
    )


def check_decode_cached(fn) -> bool:
    """Run `fn(model, prompt, n_new)` on the shipped AR model and count its passes and positions."""
    return run_check("decode_cached", fn, _cached_report)


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
        given = logits.clone()
        got = call(fn, given, p, case=case, hint=hint)
        expected = top_p_filter(logits, p)
        if not torch.equal(given, logits):
            raise Failed(
                f"your function changed its input logits ({case})", "work on a copy: masked_fill, not masked_fill_"
            )
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
                "the most likely token is always kept: compare p with the mass *before* each token "
                "(the cumulative sum minus the token's own probability)",
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
