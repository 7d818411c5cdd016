"""Speculative decoding: a cheap drafter proposes gamma tokens, the AR model checks them in one pass.

The rule (Leviathan et al. 2023, arXiv 2211.17192, Algorithm 1; Chen et al. 2023, arXiv 2302.01318)
keeps the output distribution exactly the target's, whatever the drafter:

- accept drafted token x with probability min(1, p(x) / q(x));
- at the first rejection, write instead a token drawn from the residual (the target's mass that
  the drafter under-proposes, normalised: `verify` below), and drop the rest;
- when all gamma are accepted, write a bonus token from the target's next distribution.

So one target pass over gamma + 1 positions writes between 1 and gamma + 1 tokens. p is the
target's tempered softmax, q the distribution the drafter really sampled from (helpers.speculative.drafters).
Sampling is in float64, like the rest of the course. Batch 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.common.validation import check_generator, check_int
from helpers.decoding.ar import check_sampling_args
from helpers.decoding.model import Transformer, count_passes
from helpers.speculative.drafters import CausalDrafter, Drafter


@dataclass
class SpeculativeCounts:
    """What one speculative_generate call did."""

    new_tokens: int = 0  # tokens written after the prompt
    target_passes: int = 0  # forward passes of the target model (each over up to gamma + 1 positions)
    draft_passes: int = 0  # forward passes of the drafter's model (0 for a drafter that is not a model)
    rounds: int = 0  # draft-then-verify rounds (= target passes)
    drafted: int = 0  # tokens proposed
    accepted: int = 0  # proposed tokens kept
    rejections: int = 0  # rounds that ended at a rejected token (the rest of that draft is dropped)

    @property
    def tokens_per_target_pass(self) -> float:
        return self.new_tokens / max(self.target_passes, 1)

    @property
    def acceptance(self) -> float:
        """Accepted / (accepted + rejected): every drafted token the rule looked at was one or the
        other, so this estimates alpha. Dropped tokens after a rejection were never looked at."""
        return self.accepted / max(self.accepted + self.rejections, 1)


def verify(p: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, generator=None) -> tuple[torch.Tensor, int]:
    """The rule, for one round. p (gamma + 1, V): the target's distributions after the prefix and
    after each drafted token; q (gamma, V): the drafter's; drafted (gamma,). Returns the tokens
    this round writes (the accepted ones, then one from the residual or the bonus) and how many
    drafted tokens were accepted."""
    for i, x in enumerate(drafted.tolist()):
        u = torch.rand((), generator=generator, dtype=torch.float64)
        if u * q[i, x] < p[i, x]:  # accept with probability min(1, p/q)
            continue
        residual = (p[i] - q[i]).clamp(min=0)  # (V,) where the target wants more than the drafter gave
        residual = residual if residual.sum() > 0 else p[i]  # p == q to rounding: rejection had probability 0
        fix = torch.multinomial(residual / residual.sum(), 1, generator=generator)
        return torch.cat([drafted[:i], fix]), i
    bonus = torch.multinomial(p[-1], 1, generator=generator)
    return torch.cat([drafted, bonus]), len(drafted)


def target_probs(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """The target's next-token distributions (T, V) from its logits, tempered, in float64.
    Temperature 0 is greedy: a one-hot p, and the rule then keeps exactly the greedy tokens."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).double()
    return torch.softmax(logits.double() / temperature, dim=-1)


@torch.inference_mode()
def speculative_generate(
    target: Transformer,
    draft,
    prompt: torch.Tensor,
    max_new_tokens: int,
    gamma: int,
    temperature: float = 1.0,
    eos_id: int | None = None,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, SpeculativeCounts]:
    """Continue `prompt` (1, T0) by up to `max_new_tokens` tokens with the target model's exact
    distribution (temperature applied to the target), drafting `gamma` tokens per round with
    `draft`: a helpers.speculative.drafters.Drafter, or a causal Transformer of the same vocabulary (then a
    CausalDrafter at temperature 1). Stops after `eos_id` if given. Returns (tokens, counts)."""
    draft = _check_args(target, draft, prompt, max_new_tokens, gamma, temperature, eos_id, generator)
    total = prompt.size(1) + max_new_tokens
    out, counts = prompt.clone(), SpeculativeCounts()
    cache = target.new_cache(1)
    with count_passes(target) as target_passes, draft.counting() as draft_passes:
        while out.size(1) < total:
            length = out.size(1)
            room = min(gamma, total - length - 1)  # a round writes up to room + 1 tokens
            drafted, q = draft.propose(out, room, generator)  # (room,), (room, V)
            step_input = torch.cat([out[0, cache.length :], drafted])[None]  # (1, T) uncached tail + draft
            logits = target(step_input, cache=cache, check_ids=cache.length == 0)[0, -(room + 1) :]  # (room+1, V)
            written, n = verify(target_probs(logits, temperature), q, drafted, generator)
            cache.crop(length + n)  # keep the prefix and the accepted tokens; the last is not cached yet
            counts.rounds += 1
            counts.drafted += room
            counts.accepted += n
            counts.rejections += n < room
            ended = eos_id is not None and bool((written == eos_id).any())
            if ended:  # keep the tokens up to the first <eos>
                written = written[: int((written == eos_id).nonzero()[0]) + 1]
            out = torch.cat([out, written[None]], dim=1)
            if ended:
                break
    counts.new_tokens = out.size(1) - prompt.size(1)
    counts.target_passes, counts.draft_passes = target_passes.n, draft_passes.n
    return out, counts


def _check_args(target, draft, prompt, max_new_tokens, gamma, temperature, eos_id, generator) -> Drafter:
    if not isinstance(target, Transformer) or not target.config.causal:
        raise ValueError(
            "target must be a causal helpers.decoding.model.Transformer (the AR model whose output is kept)"
        )
    if isinstance(draft, Transformer):
        draft = CausalDrafter(draft)
    if not isinstance(draft, Drafter):
        raise ValueError(
            f"draft must be a helpers.speculative.drafters.Drafter or a causal Transformer, got {type(draft).__name__}"
        )
    if draft.model is target:
        raise ValueError(
            "the drafter must not be the target model itself (passes would be counted twice): "
            "use a copy, copy.deepcopy(target)"
        )
    if draft.vocab_size != target.config.vocab_size:
        raise ValueError(
            f"the drafter's vocabulary ({draft.vocab_size}) differs from the target's ({target.config.vocab_size})"
        )
    if not isinstance(prompt, torch.Tensor) or prompt.dtype != torch.long or prompt.shape[:1] != (1,):
        raise ValueError("prompt must be an int64 tensor of shape (1, T0): speculative decoding here is batch 1")
    if prompt.dim() != 2 or prompt.size(1) < 1:
        raise ValueError("prompt must be an int64 tensor of shape (1, T0) with T0 >= 1")
    limit = min(target.config.max_len, draft.max_len) - prompt.size(1)
    check_int(max_new_tokens, f"max_new_tokens (prompt + new tokens must fit max_len: at most {limit})", 0, limit)
    check_int(gamma, "gamma (tokens drafted per round)", 1)
    check_sampling_args(temperature, None, None)
    if eos_id is not None:
        check_int(eos_id, "eos_id (None: no early stop)", 0, target.config.vocab_size - 1)
    check_generator(generator)
    return draft
