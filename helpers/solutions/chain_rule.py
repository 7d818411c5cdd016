"""Notebook 01, the chain rule: the reference solutions of its exercises."""

from __future__ import annotations

import math

import numpy as np


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
