"""Reference solutions of the notebooks' coding exercises.

Each function is shown, folded, under its exercise in the notebook (a test keeps the two texts
identical), and `helpers.exercises` checks a learner's version against exact ground truth.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from helpers.ar import top_p_filter  # noqa: F401 (the library's own nucleus filter is the reference)


# ------------------------------------------------------------------ 01 · the chain rule
def sample_sentence(lang, rng: np.random.Generator) -> list[int]:
    """Type one sentence by the chain rule: each token drawn from P(next | everything so far)."""
    prefix = []
    while True:
        probs = lang.next_token_probs(prefix)  # (V,) needs every token typed so far
        token = int(rng.choice(len(probs), p=probs))
        if token == lang.eos_id:  # stopping is a draw too
            return prefix
        prefix.append(token)  # written once, never revised


def sentence_log2prob(lang, ids: list[int]) -> float:
    """log2 P(sentence): the sum of log2 P(x_k | x_<k) over its words and the final <eos>."""
    total = 0.0
    for k, token in enumerate([*ids, lang.eos_id]):
        p = lang.next_token_probs(ids[:k])[token]
        if p == 0:
            return -math.inf  # one impossible factor makes the whole product 0
        total += math.log2(p)
    return total


# ------------------------------------------------------------------ 02 · the AR decoder
@torch.no_grad()
def decode_cached(model, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Greedy decoding with a KV cache: the prompt in the first pass, then one token per pass."""
    cache = model.new_cache(prompt.size(0))  # keys and values of every layer, preallocated
    seq, step_input = prompt, prompt  # (B, T0)
    for _ in range(n_new):
        logits = model(step_input, cache=cache)[:, -1]  # (B, V) scores at the last position
        token = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
        seq = torch.cat([seq, token], dim=1)  # (B, T + 1)
        step_input = token  # the cache remembers everything before it
    return seq


# ------------------------------------------------------------------ 03 · masked diffusion
def tokens_per_step(n_tokens: int, steps: int) -> list[int]:
    """LLaDA's schedule: n_tokens spread over `steps`, the remainder one each to the earliest."""
    base, remainder = divmod(n_tokens, steps)
    return [base + 1 if j < remainder else base for j in range(steps)]


def commit_most_confident(probs: torch.Tensor, canvas: torch.Tensor, k: int, mask_id: int) -> torch.Tensor:
    """One pass of confidence order: at the k masked positions whose most likely token is most
    probable, write that token (leftmost first on ties; every masked one if fewer than k)."""
    confidence, choice = probs.max(dim=-1)  # (B, T) each
    confidence = confidence.masked_fill(canvas != mask_id, -math.inf)  # only masked positions compete
    rank = confidence.argsort(dim=-1, descending=True, stable=True).argsort(dim=-1)  # (B, T) 0 = best
    commit = (rank < k) & (canvas == mask_id)  # (B, T)
    return torch.where(commit, choice, canvas)


# ------------------------------------------------------------------ 04 · the roofline
def predicted_step_seconds(weight_bytes: float, kv_bytes: float, bandwidth: float) -> float:
    """A memory-bound decode step: every byte it must read, divided by bytes per second."""
    return (weight_bytes + kv_bytes) / bandwidth


def crossover_width(peak_flops: float, bandwidth: float, bytes_per_weight: float) -> float:
    """Positions W per pass at which reading the weights once takes as long as the arithmetic:
    W * 2 FLOPs per weight / peak = bytes_per_weight / bandwidth."""
    return peak_flops * bytes_per_weight / (2 * bandwidth)


# ------------------------------------------------------------------ 06 · speculative decoding
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
