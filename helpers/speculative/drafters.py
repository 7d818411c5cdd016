"""Drafters for speculative decoding: each proposes gamma tokens and says exactly what it sampled from.

The rule of helpers.speculative.rule stays exact for any drafter, as long as q is the distribution
each drafted token was really drawn from, given everything before it:

- CausalDrafter: a small AR model, one pass per drafted token, with its own KV cache;
- LanguageDrafter: the toy language's exact next-token distribution. Not a model: what a
  perfectly trained drafter would propose (the truth the target was trained to imitate);
- MaskedDiffusionDrafter: the masked-diffusion model. In one pass (parallel=True) it fills gamma
  masked positions at once, each drawn from its own marginal: q is a product of marginals, so a
  drafted token never depends on the one before it. Left to right (parallel=False) it spends one
  pass per position, later positions masked, and q is a true left-to-right conditional.

greedy=True proposes the most likely token; its q is then one-hot, which is what was sampled.
softmax_as_q=True scores a greedy draft with its softmax instead: the bug of transformers#32867,
kept here so that notebook 06 can measure what it does to the output.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch

from helpers.common.validation import check_int, check_number
from helpers.decoding.model import PassCounter, Transformer, count_passes
from helpers.diffusion.sampler import masked_logits
from helpers.language.toylang import LANG


class Drafter:
    """What helpers.speculative.rule needs from a drafter: propose, counting, vocab_size, max_len."""

    model: Transformer | None = None
    name = "drafter"

    def __init__(self, vocab_size: int, max_len: int, temperature=1.0, greedy=False, softmax_as_q=False):
        self.vocab_size, self.max_len = vocab_size, max_len
        self.temperature = check_number(temperature, "temperature (the drafter's own)", 0, strict=True)
        for name, flag in (("greedy", greedy), ("softmax_as_q", softmax_as_q)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        if softmax_as_q and not greedy:
            raise ValueError("softmax_as_q only makes sense with greedy=True (a sampled draft's q is its softmax)")
        self.greedy, self.softmax_as_q = greedy, softmax_as_q

    def propose(self, tokens: torch.Tensor, gamma: int, generator=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Draft `gamma` tokens after `tokens` (1, L). Returns drafted (gamma,) int64 and q
        (gamma, V) float64: row i is the distribution drafted token i was drawn from."""
        raise NotImplementedError

    @contextmanager
    def counting(self):
        """Counts the drafter model's forward passes (none for a drafter that is not a model)."""
        if self.model is None:
            yield PassCounter()
        else:
            with count_passes(self.model) as passes:
                yield passes

    def pick(self, probs: torch.Tensor, generator=None) -> tuple[int, torch.Tensor]:
        """One drafted token from probs (V,) float64, and the q to score it with."""
        if not self.greedy:
            return int(torch.multinomial(probs, 1, generator=generator)), probs
        token = int(probs.argmax())
        return token, probs if self.softmax_as_q else torch.nn.functional.one_hot(torch.tensor(token), len(probs))

    def tempered(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.softmax(logits.double() / self.temperature, dim=-1)

    def stacked(self, picks: list[tuple[int, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(token, q) pairs -> drafted (gamma,) int64 and q (gamma, V) float64."""
        drafted = torch.tensor([token for token, _ in picks], dtype=torch.long)  # (gamma,)
        q = torch.stack([q.double() for _, q in picks]) if picks else torch.zeros(0, self.vocab_size).double()
        return drafted, q


class CausalDrafter(Drafter):
    """A small causal model drafting one token per pass. Its KV cache follows the output: before
    each draft it is cropped to the longest prefix the output still shares with what it cached."""

    name = "small AR model"

    def __init__(self, model: Transformer, temperature=1.0, greedy=False, softmax_as_q=False):
        if not isinstance(model, Transformer) or not model.config.causal:
            raise ValueError("CausalDrafter needs a causal helpers.decoding.model.Transformer")
        super().__init__(model.config.vocab_size, model.config.max_len, temperature, greedy, softmax_as_q)
        self.model, self.cache, self.cached = model, model.new_cache(1), []

    def propose(self, tokens, gamma, generator=None):
        ids = tokens[0].tolist()
        shared = 0
        while shared < min(len(self.cached), len(ids) - 1) and self.cached[shared] == ids[shared]:
            shared += 1
        self.cache.crop(shared)  # roll back to the accepted prefix: at least the newest token is fed
        self.cached = ids[:shared]
        feed, picks = tokens[0, shared:], []  # (T,) what the cache has not seen yet
        for _ in range(gamma):
            logits = self.model(feed[None], cache=self.cache, last_only=True, check_ids=False)[0, -1]  # (V,)
            picks.append(self.pick(self.tempered(logits), generator))
            self.cached += feed.tolist()
            feed = torch.tensor([picks[-1][0]])  # (1,) the drafted token, fed by the next pass
        return self.stacked(picks)


class LanguageDrafter(Drafter):
    """The toy language's exact next-token distribution on a canvas of `length`: not a model, what a
    perfectly trained drafter would propose (not a bound: the target is not the language). Where the
    output has already left the language (an invalid prefix), q is uniform."""

    name = "the language itself (not a model)"

    def __init__(self, length: int = 33, greedy=False, softmax_as_q=False):
        length = check_int(length, "length (the canvas: <bos> + tokens)", 2)
        super().__init__(len(LANG.vocab), length, 1.0, greedy, softmax_as_q)
        self.memo: dict[tuple[int, ...], np.ndarray] = {}

    def next_probs(self, prefix: list[int]) -> torch.Tensor:
        key = tuple(prefix)
        if key not in self.memo:
            try:
                self.memo[key] = LANG.document_next_token_probs(prefix, self.max_len)
            except ValueError:  # probability 0 under the language: nothing to follow
                self.memo[key] = np.full(self.vocab_size, 1 / self.vocab_size)
        return torch.from_numpy(self.memo[key])

    def propose(self, tokens, gamma, generator=None):
        prefix, picks = tokens[0].tolist(), []
        for _ in range(gamma):
            token, q = self.pick(self.next_probs(prefix), generator)
            picks.append((token, q))
            prefix.append(token)
        return self.stacked(picks)


class MaskedDiffusionDrafter(Drafter):
    """The masked-diffusion model as a drafter, on its own canvas (its max_len), everything after
    the output masked. parallel=True: one pass, gamma positions drawn at once from their marginals.
    parallel=False: gamma passes, one position each, left to right."""

    def __init__(self, model: Transformer, parallel=True, temperature=1.0, greedy=False, softmax_as_q=False):
        if not isinstance(model, Transformer) or model.config.causal:
            raise ValueError(
                "MaskedDiffusionDrafter needs a bidirectional helpers.decoding.model.Transformer (causal=False)"
            )
        if not isinstance(parallel, bool):
            raise ValueError(f"parallel must be True or False, got {parallel!r}")
        super().__init__(model.config.vocab_size, model.config.max_len, temperature, greedy, softmax_as_q)
        self.model, self.parallel = model, parallel
        self.name = "masked diffusion, one pass" if parallel else "masked diffusion, left to right"

    def propose(self, tokens, gamma, generator=None):
        canvas = torch.full((1, self.max_len), LANG.mask_id, dtype=torch.long)  # (1, max_len)
        start = tokens.size(1)
        canvas[0, :start] = tokens[0]
        if self.parallel:  # one pass: every drafted position drawn from its own marginal
            rows = self.tempered(masked_logits(self.model, canvas)[0, start : start + gamma]) if gamma else []
            return self.stacked([self.pick(probs, generator) for probs in rows])
        picks = []
        for i in range(gamma):  # one pass per position, each seeing the tokens drafted before it
            probs = self.tempered(masked_logits(self.model, canvas)[0, start + i])  # (V,)
            picks.append(self.pick(probs, generator))
            canvas[0, start + i] = picks[-1][0]
        return self.stacked(picks)
