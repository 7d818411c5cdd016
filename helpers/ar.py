"""Autoregressive decoding: one forward pass per new token, each waiting for the last.

`generate(..., use_cache=False)` is the naive loop: every step re-runs the whole prefix.
`generate(..., use_cache=True)` keeps keys/values in a preallocated KV cache, so a step runs
the network on the newest token only. Both produce the same tokens.
"""

from __future__ import annotations

import torch

from helpers.model import Transformer


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filter: keep a token while the tokens strictly more likely than it hold less than
    p of the mass (so the kept set is the smallest one reaching p, ties kept together)."""
    if p >= 1:
        return logits.clone()  # everything is kept, however unlikely
    probs = torch.softmax(logits.double(), dim=-1)  # (B, V)
    sorted_probs = probs.sort(dim=-1, descending=True).values  # (B, V)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (B, V) mass ahead in the sort
    first_of_tie = torch.searchsorted(-sorted_probs, -probs, side="left")  # (B, V) rank of each token
    strictly_more_likely = mass_before.gather(-1, first_of_tie)  # (B, V)
    return logits.masked_fill(strictly_more_likely >= p, float("-inf"))


def filter_logits(logits: torch.Tensor, top_k: int | None = None, top_p: float | None = None) -> torch.Tensor:
    """Set to -inf every logit outside the top-k and outside the top-p nucleus. (B, V) -> (B, V).
    Tokens tied with the last one kept are kept too, so the result never depends on sort order."""
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.size(-1)), dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def next_token(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Pick one token per row from logits (B, V): argmax at temperature 0, otherwise sample
    from the filtered, tempered softmax, computed in float64. Returns (B,) int64."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = filter_logits(logits, top_k, top_p)
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def check_sampling_args(temperature, top_k, top_p) -> None:
    if not isinstance(temperature, int | float) or temperature < 0:
        raise ValueError(f"temperature must be a number >= 0 (0 = greedy), got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or an int >= 1, got {top_k!r}")
    if top_p is not None and (not isinstance(top_p, int | float) or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")


@torch.inference_mode()
def generate(
    model: Transformer,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    use_cache: bool = True,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Continue every row of `prompt` (B, T0) by up to `max_new_tokens` tokens: (B, T0 + n).

    Rows that have produced `eos_id` keep producing it; the loop stops early only when every
    row has. Each new token costs exactly one forward pass of the model.
    """
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("generate needs a causal helpers.model.Transformer (ModelConfig(causal=True))")
    if not isinstance(prompt, torch.Tensor) or prompt.dtype != torch.long or prompt.dim() != 2 or prompt.size(1) < 1:
        raise ValueError("prompt must be an int64 tensor of shape (B, T0) with T0 >= 1")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    B, T0 = prompt.shape
    if T0 + max_new_tokens > model.config.max_len:
        raise ValueError(
            f"prompt ({T0}) + max_new_tokens ({max_new_tokens}) exceeds the model's max_len ({model.config.max_len})"
        )
    check_sampling_args(temperature, top_k, top_p)

    out = torch.empty(B, T0 + max_new_tokens, dtype=torch.long, device=prompt.device)
    out[:, :T0] = prompt
    finished = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    cache = model.new_cache(B) if use_cache else None
    step_input = prompt  # with a cache: the prompt once, then one token per step
    end = T0
    for end in range(T0, T0 + max_new_tokens):
        if cache is None:
            step_input = out[:, :end]  # the naive loop: the whole prefix, every step
        logits = model(step_input, cache=cache, last_only=True)[:, -1]  # (B, V)
        token = next_token(logits, temperature, top_k, top_p, generator)  # (B,)
        if eos_id is not None:
            token = token.masked_fill(finished, eos_id)
            finished |= token == eos_id
        out[:, end] = token
        step_input = out[:, end : end + 1]
        if eos_id is not None and bool(finished.all()):
            return out[:, : end + 1]
    return out[:, : T0 + max_new_tokens]
