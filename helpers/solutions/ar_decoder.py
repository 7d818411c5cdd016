"""Notebook 02, the AR decoder: the reference solutions of its exercises."""

from __future__ import annotations

import torch

from helpers.ar import top_p_filter  # noqa: F401 (the library's own nucleus filter is the reference)


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
