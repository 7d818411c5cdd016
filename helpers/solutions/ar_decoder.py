"""Notebook 02, the AR decoder: the reference solutions of its exercises."""

from __future__ import annotations

import math

import torch

from helpers.decoding.ar import top_p_filter  # noqa: F401 (the library's own nucleus filter is the reference)


def attend_with_cache(q, k_new, v_new, cache_k, cache_v, start: int) -> torch.Tensor:
    """Causal attention of T new positions, start .. start + T - 1, over everything cached so far.
    q, k_new, v_new (B, H, T, hd); cache_k, cache_v (B, H, max_len, hd), filled before `start`."""
    T = q.size(2)
    cache_k[:, :, start : start + T] = k_new  # the new keys and values join the cache, in place
    cache_v[:, :, start : start + T] = v_new
    k, v = cache_k[:, :, : start + T], cache_v[:, :, : start + T]  # (B, H, S, hd), S = start + T
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
    sees = torch.arange(start + T) <= torch.arange(start, start + T)[:, None]  # (T, S) s <= t: no future
    weights = scores.masked_fill(~sees, float("-inf")).softmax(dim=-1)  # (B, H, T, S)
    return weights @ v  # (B, H, T, hd)
