"""Autoregressive decoding: one forward pass per new token, each waiting for the last.

`generate(..., use_cache=False)` is the naive loop: every step re-runs the whole prefix.
`generate(..., use_cache=True)` keeps keys/values in a preallocated KV cache, so a step runs
the network on the newest token only. Both produce the same tokens.
"""

from __future__ import annotations

import math

import torch

from helpers.common.validation import check_fraction, check_generator, check_int, check_number
from helpers.decoding.model import Transformer


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
    Tokens tied with the last one kept are kept too, so the result never depends on sort order.
    top_k: None (keep all) or an int >= 1; top_p: None (keep all) or a number in (0, 1]."""
    check_logits(logits)
    top_k, top_p = _check_top_k(top_k), _check_top_p(top_p)
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
    check_sampling_args(temperature, top_k, top_p)
    check_logits(logits)
    check_generator(generator)
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = filter_logits(logits, top_k, top_p)
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)


def check_sampling_args(temperature, top_k, top_p) -> None:
    """temperature: a finite number >= 0 (0 = greedy); top_k: None or an int >= 1 (not a bool);
    top_p: None or a number in (0, 1]."""
    check_number(temperature, "temperature (0 = greedy)", minimum=0)
    _check_top_k(top_k)
    _check_top_p(top_p)


def _check_top_k(top_k) -> int | None:
    return None if top_k is None else check_int(top_k, "top_k (None keeps every token)", minimum=1)


def _check_top_p(top_p) -> float | None:
    return None if top_p is None else check_fraction(top_p, "top_p (None keeps every token)")


def check_logits(logits) -> None:
    """Logits must be a floating-point tensor of shape (B, V) with V >= 1."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() != 2:
        is_tensor = isinstance(logits, torch.Tensor)
        got = f"a {logits.dtype} tensor of shape {tuple(logits.shape)}" if is_tensor else type(logits).__name__
        raise ValueError(f"logits must be a floating-point tensor of shape (B, V), got {got}")
    if logits.size(-1) == 0:
        raise ValueError("logits must have at least one token (V >= 1)")


def _check_prompt(prompt) -> None:
    if not isinstance(prompt, torch.Tensor) or prompt.dtype != torch.long or prompt.dim() != 2 or prompt.size(1) < 1:
        raise ValueError("prompt must be an int64 tensor of shape (B, T0) with T0 >= 1")


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
        raise ValueError("generate needs a causal helpers.decoding.model.Transformer (ModelConfig(causal=True))")
    _check_prompt(prompt)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=0)
    if eos_id is not None:
        eos_id = check_int(eos_id, "eos_id (None: no early stop)", 0, model.config.vocab_size - 1)
    if not isinstance(use_cache, bool):
        raise ValueError(f"use_cache must be True or False, got {use_cache!r}")
    check_generator(generator)
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
        # the prompt's ids are checked once; every later input is the model's own sample
        logits = model(step_input, cache=cache, last_only=True, check_ids=end == T0)[:, -1]  # (B, V)
        token = next_token(logits, temperature, top_k, top_p, generator)  # (B,)
        if eos_id is not None:
            token = token.masked_fill(finished, eos_id)
            finished |= token == eos_id
        out[:, end] = token
        step_input = out[:, end : end + 1]
        if eos_id is not None and bool(finished.all()):
            return out[:, : end + 1]
    return out[:, : T0 + max_new_tokens]


@torch.inference_mode()
def sampled_log2prob(
    model: Transformer,
    tokens: torch.Tensor,
    prompt_length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """log2 Q(x) of each row of `tokens` (B, T) under the sampler `generate` runs with these
    settings, given its first `prompt_length` tokens: the sum over the generated positions of
    log2 of the filtered, tempered softmax at the token written. One teacher-forced pass gives
    every conditional at once, which is why an AR sampler's Q(x) is computable (a diffusion
    sampler's is a sum over every order its positions could have been filled in). (B,) float64."""
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError(
            "sampled_log2prob needs a causal helpers.decoding.model.Transformer (ModelConfig(causal=True))"
        )
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.long or tokens.dim() != 2:
        raise ValueError("tokens must be an int64 tensor of shape (B, T)")
    prompt_length = check_int(prompt_length, "prompt_length", 1, tokens.size(1) - 1)
    check_sampling_args(temperature, top_k, top_p)
    if temperature == 0:
        raise ValueError("temperature must be > 0: greedy decoding has no distribution to score (Q(x) is 0 or 1)")
    B, T = tokens.shape
    logits = model(tokens[:, :-1])[:, prompt_length - 1 :]  # (B, n, V) the conditional of every generated token
    flat = filter_logits(logits.reshape(-1, logits.size(-1)), top_k, top_p)  # (B*n, V)
    log_q = torch.log_softmax(flat.double() / temperature, dim=-1).view(B, -1, logits.size(-1))  # (B, n, V)
    written = tokens[:, prompt_length:, None]  # (B, n, 1)
    return log_q.gather(-1, written).squeeze(-1).sum(dim=1) / math.log(2)  # (B,)


@torch.no_grad()
def decode_with_attention(model: Transformer, attend, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Greedy decoding with a KV cache in which every layer's attention is `attend`, a function
    attend(q, k_new, v_new, cache_k, cache_v, start) -> (B, H, T, hd) that writes the new keys
    and values into its caches (B, H, max_len, hd) and attends over positions 0 .. start + T - 1
    (notebook 02's exercise). The rest is the model's own: embeddings, projections, MLPs, head.
    Slots not yet written hold NaN, so an attention that reads them shows it."""
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("model must be a causal helpers.decoding.model.Transformer")
    if not callable(attend):
        raise ValueError(f"attend must be a function attend(q, k_new, v_new, cache_k, cache_v, start), got {attend!r}")
    _check_prompt(prompt)
    n_new = check_int(n_new, "n_new", 0, model.config.max_len - prompt.size(1))
    cfg, (B, _) = model.config, prompt.shape
    H, hd = cfg.n_head, cfg.head_dim
    caches = [tuple(torch.full((B, H, cfg.max_len, hd), float("nan")) for _ in "kv") for _ in model.blocks]
    seq, step, start = prompt, prompt, 0
    for _ in range(n_new):
        T = step.size(1)
        x = model.tok_emb(step) + model.pos_emb(torch.arange(start, start + T))  # (B, T, C)
        for block, (cache_k, cache_v) in zip(model.blocks, caches, strict=True):
            q, k, v = block.attn.qkv(block.ln1(x)).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)  # (B, H, T, hd) each
            y = attend(q, k, v, cache_k, cache_v, start)  # (B, H, T, hd)
            x = x + block.attn.proj(y.transpose(1, 2).reshape(B, T, H * hd))  # (B, T, C)
            x = x + block.mlp(block.ln2(x))
        token = model.head(model.ln_f(x))[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1) greedy
        seq, step, start = torch.cat([seq, token], dim=1), token, start + T
    return seq
