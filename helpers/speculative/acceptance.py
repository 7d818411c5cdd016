"""How many drafted tokens the rule keeps, predicted before anything is sampled.

At one prefix the rule accepts a drafted token with probability alpha = sum_x min(p(x), q(x))
= 1 - TV(p, q) (Leviathan et al. 2023, section 3). If every drafted token were accepted with
the same alpha, independently, a round would write (1 - alpha^(gamma+1)) / (1 - alpha) tokens.

alpha is not one number on a real text: a drafter agrees with the target on "the" and fails on
a city. `chain_prediction` keeps alpha position by position along documents the language writes
(the prefixes the target visits), and adds up the rounds a document takes, stopping at its
<eos>. `acceptance_table` gives every alpha a round can meet: the i-th drafted token of a round
started at prefix s, checked against the target's distribution at position s + i - 1.
"""

from __future__ import annotations

import numpy as np
import torch

from helpers.common.validation import check_fraction, check_int, check_number
from helpers.decoding.model import Transformer
from helpers.diffusion.sampler import masked_logits
from helpers.language.toylang import LANG
from helpers.speculative.drafters import CausalDrafter, Drafter, LanguageDrafter, MaskedDiffusionDrafter


def overlap(p, q):
    """alpha = sum over the last axis of min(p, q): the chance the rule accepts one drafted token."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    if p.shape != q.shape or p.ndim == 0:
        raise ValueError(f"p and q must be distributions of the same shape (..., V), got {p.shape} and {q.shape}")
    return np.minimum(p, q).sum(axis=-1)


def expected_tokens(alpha: float, gamma: int) -> float:
    """Tokens one target pass writes on average if each of gamma drafts is accepted with
    probability alpha, independently: 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha)."""
    alpha = check_fraction(alpha, "alpha (acceptance, 0 to 1)", allow_zero=True)
    gamma = check_int(gamma, "gamma (tokens drafted per round)", 0)
    return float(gamma + 1) if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Leviathan et al.'s wall-clock speed-up: expected tokens per round over the round's cost,
    gamma draft steps at cost_ratio c of a target step, plus one target pass (as one step)."""
    cost_ratio = check_number(cost_ratio, "cost_ratio (draft step / target step)", 0)
    return expected_tokens(alpha, gamma) / (gamma * cost_ratio + 1)


def visited_documents(n: int, length: int = 33, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """n documents of the language (n, length), and where each one's first <eos> is: a
    generation that stops at <eos> visits the prefixes of lengths 1 .. that position."""
    docs = torch.from_numpy(LANG.sample_documents(check_int(n, "n", 1), length, seed=seed))  # (n, L)
    eos = docs[:, 1:] == LANG.eos_id  # (n, L - 1); a document that fills its canvas exactly has none
    first_eos = torch.where(eos.any(dim=1), eos.int().argmax(dim=1) + 1, length - 1)  # (n,) else the last position
    return docs, first_eos.numpy()


@torch.inference_mode()
def target_table(target: Transformer, docs: torch.Tensor, temperature: float = 1.0) -> np.ndarray:
    """p (n, L - 1, V): row s - 1 is the target's distribution after the prefix of length s."""
    logits = target(docs[:, :-1])  # (n, L - 1, V)
    return torch.softmax(logits.double() / temperature, dim=-1).numpy()


@torch.inference_mode()
def acceptance_table(drafter: Drafter, p: np.ndarray, docs: torch.Tensor, gamma: int) -> np.ndarray:
    """A (n, L - 1, gamma): A[d, s - 1, i - 1] = alpha of the i-th drafted token of a round that
    starts after prefix s of document d. Sequential drafters draft from the prefix itself (their
    q at position s + i - 1 is their next-token distribution there); the one-pass diffusion
    drafter drafts every position from prefix s alone."""
    n, length = docs.shape
    gamma = check_int(gamma, "gamma", 1)
    per_position = np.zeros((n, length - 1))  # alpha of a drafter's next-token q at each prefix
    if isinstance(drafter, LanguageDrafter):
        for d in range(n):
            for s in range(1, length):
                per_position[d, s - 1] = overlap(p[d, s - 1], drafter.next_probs(docs[d, :s].tolist()))
    elif isinstance(drafter, CausalDrafter):
        q = drafter.tempered(drafter.model(docs[:, :-1])).numpy()  # (n, L - 1, V)
        per_position = overlap(p, q)
    elif isinstance(drafter, MaskedDiffusionDrafter):
        table = np.zeros((n, length - 1, gamma))
        for s in range(1, length):
            canvas = docs.clone()
            canvas[:, s:] = LANG.mask_id  # (n, L): prefix s visible, the rest masked
            q = drafter.tempered(masked_logits(drafter.model, canvas)).numpy()  # (n, L, V)
            for i in range(min(gamma, length - s)):
                if drafter.parallel or i == 0:
                    table[:, s - 1, i] = overlap(p[:, s - 1 + i], q[:, s + i])
            per_position[:, s - 1] = table[:, s - 1, 0]
        if drafter.parallel:
            return table
    else:
        raise ValueError(f"no acceptance table for a {type(drafter).__name__}")
    padded = np.concatenate([per_position, np.ones((n, gamma))], axis=1)  # past the canvas: never used
    return np.stack([padded[:, i : i + length - 1] for i in range(gamma)], axis=-1)


def chain_prediction(table: np.ndarray, first_eos: np.ndarray, gamma: int) -> float:
    """Predicted tokens per target pass: for each document, the expected number of rounds to
    write it (up to its first <eos>), each round accepting its i-th draft with probability
    table[d, s - 1, i - 1] given the ones before it, independently; tokens over rounds, pooled."""
    gamma = check_int(gamma, "gamma", 1)
    n, positions, _ = table.shape
    total_rounds = 0.0
    for d in range(n):
        end = int(first_eos[d])  # the round that writes position `end` (the <eos>) is the last
        rounds = np.zeros(end + 2)  # rounds[s]: expected rounds still needed at prefix length s
        for s in range(end, 0, -1):
            reach, expected = 1.0, 0.0  # reach: chance the first k drafts were all accepted
            for k in range(gamma + 1):
                stop = 1.0 if k == gamma else 1 - table[d, s - 1, k]
                written = min(k + 1, end + 1 - s)
                expected += reach * stop * rounds[s + written]
                if k < gamma:
                    reach *= table[d, s - 1, k]
            rounds[s] = 1 + expected
        total_rounds += rounds[1]
    return float(first_eos.sum() / total_rounds)


def mean_alpha(table: np.ndarray, first_eos: np.ndarray) -> float:
    """alpha of a round's first drafted token, averaged over every prefix the target visits."""
    visited = np.arange(1, table.shape[1] + 1)[None, :] <= first_eos[:, None]  # (n, L - 1)
    return float(table[..., 0][visited].mean())


@torch.inference_mode()
def first_two_joint(target: Transformer, temperature: float = 1.0) -> np.ndarray:
    """The target's exact joint of the first two tokens after <bos>: p(a) p(b | a), (V, V)."""
    first = target_table(target, torch.tensor([[LANG.bos_id, 0]]), temperature)[0, 0]  # (V,)
    pairs = torch.tensor([[LANG.bos_id, a, 0] for a in range(target.config.vocab_size)])  # (V, 3)
    second = target_table(target, pairs, temperature)[:, 1]  # (V, V): row a is p(. | a)
    return first[:, None] * second
