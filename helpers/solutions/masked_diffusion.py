"""Notebook 03, masked diffusion: the reference solutions of its exercises."""

from __future__ import annotations

import math

import torch


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
