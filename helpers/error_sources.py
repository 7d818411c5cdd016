"""Where a sampler's shortfall comes from: the model, the factorization, or the selection.

A masked-diffusion sampler can write worse documents than the language for three reasons, and the
exact denoiser (helpers.exact_denoiser) tells them apart:

1. **model error**: the trained network's conditionals are not the language's. The trained model's
   documents minus the exact denoiser's, same sampler, same tokens per pass.
2. **factorization error**: a pass commits several positions, each drawn from its own marginal, a
   product of marginals in place of their joint. The exact denoiser in random order (positions
   chosen without looking at what was drawn) minus the language itself. At one token per pass it
   is zero: that is the chain rule in a random order.
3. **selection bias**: choosing *which* positions to commit by how likely the token drawn there is.
   The exact denoiser with the sampler's rule minus the exact denoiser in random order.

On each measure the three add up: trained model - language = model + factorization + selection.

The factorization also has an exact price in bits. Random order with k positions a pass replaces,
at every step, the joint of the k positions by the product of their marginals. Summed over the
steps, E[-log2 prod p(x_i | visible) - (-log2 P(x))] over documents x ~ P and random orders bounds
KL(P || Q) of the sampler's output Q (data processing: the order is forgotten). With exact
conditionals it is 0 at k = 1 and sum_i H(x_i) - H(x) at k = 32 (one pass), both exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from helpers.diffusion import even_split, masked_logits
from helpers.matched_quality import LENGTH, Run, Sweep
from helpers.quality import exact_documents, score_documents
from helpers.toylang import LANG
from helpers.validation import check_int, check_positive

SOURCES = ("model", "factorization", "selection")
MEASURE_LABELS = {"validity": "valid documents", "length": "sentences per valid document",
                  "diversity": "within-sentence gap (bits per sentence)"}  # fmt: skip
NEUTRAL = "random"  # the order that never looks at the draws
LIMIT_OF = {"threshold (Fast-dLLM)": "confidence", "threshold, entropy order": "entropy"}  # tau -> 1: K = 32


def truth(measure: str) -> float:
    """The language's own value of a measure: 100 % valid, 3.96 sentences, the pooled gap."""
    exact = exact_documents(LENGTH + 1)
    values = {"validity": 1.0, "length": exact.mean_sentences,
              "diversity": exact.pooled_sentence_bits - exact.sentence_entropy}  # fmt: skip
    if measure not in values:
        raise ValueError(f"measure must be one of {tuple(values)}, got {measure!r}")
    return values[measure]


def value(run: Run, measure: str) -> tuple[float, float]:
    """(value, standard error) of one setting on a measure."""
    q = run.quality
    return {"validity": q.validity, "length": q.sentences, "diversity": q.sentence_gap}[measure]


def curve(sweep: Sweep, sampler: str) -> list[Run]:
    """A sampler's settings ordered by tokens per pass. A threshold's curve starts at its order's
    K = 32 run: with tau -> 1 it commits the one scheduled token a step, exactly that run."""
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a helpers.matched_quality.Sweep, got {type(sweep).__name__}")
    if sampler not in sweep.runs:
        raise ValueError(f"sampler must be one of {list(sweep.runs)}, got {sampler!r}")
    runs = list(sweep.runs[sampler])
    if sampler in LIMIT_OF:
        runs += [r for r in sweep.runs[LIMIT_OF[sampler]] if r.setting == LENGTH]
    return sorted(runs, key=lambda r: r.tokens_per_pass)


def value_at(runs: list[Run], rate: float, measure: str) -> tuple[float, float]:
    """A measure at `rate` tokens per pass, interpolated linearly between the two settings around
    it, with its standard error; NaN outside the settings measured or where a value is undefined."""
    rate = check_positive(rate, "rate (tokens per pass)")
    runs = sorted(runs, key=lambda r: r.tokens_per_pass)
    for lo, hi in zip(runs, runs[1:], strict=False):
        if lo.tokens_per_pass - 1e-9 <= rate <= hi.tokens_per_pass + 1e-9:
            w = (rate - lo.tokens_per_pass) / (hi.tokens_per_pass - lo.tokens_per_pass)
            (a, sa), (b, sb) = value(lo, measure), value(hi, measure)
            return (1 - w) * a + w * b, math.hypot((1 - w) * sa, w * sb)
    if runs and abs(runs[0].tokens_per_pass - rate) < 1e-9:
        return value(runs[0], measure)
    return math.nan, math.nan


@dataclass(frozen=True)
class Split:
    """One sampler's shortfall against the language on one measure at one rate, in three parts
    (each a difference of two measured values; se: standard error, the two taken as independent)."""

    sampler: str
    rate: float
    measure: str
    model: tuple[float, float]
    factorization: tuple[float, float]
    selection: tuple[float, float]

    @property
    def total(self) -> float:
        """The trained model's value minus the language's."""
        return self.model[0] + self.factorization[0] + self.selection[0]


def three_way_split(exact: Sweep, trained: Sweep, sampler: str, rate: float, measure: str) -> Split:
    """Split `sampler`'s shortfall on `measure` at `rate` tokens per pass into model error (trained
    minus exact, same sampler), factorization error (exact random order minus the language) and
    selection bias (exact sampler minus exact random order)."""
    mine = value_at(curve(trained, sampler), rate, measure)
    perfect = value_at(curve(exact, sampler), rate, measure)
    neutral = value_at(curve(exact, NEUTRAL), rate, measure)

    def diff(a, b):
        return a[0] - b[0], math.hypot(a[1], b[1])

    return Split(sampler, rate, measure, diff(mine, perfect), diff(neutral, (truth(measure), 0.0)),
                 diff(perfect, neutral))  # fmt: skip


# ----------------------------------------------------------------------------- the factorization, in bits


@torch.no_grad()
def parallel_commit_bits(model, steps: int, n_docs: int = 256, seed: int = 0) -> tuple[float, float]:
    """Bits per document (mean, standard error) that random order in `steps` passes loses to the
    chain rule: E[sum over the passes of -log2 p(x_i | what was visible) - (-log2 P(x))] over
    n_docs documents x of the language and one random order each. With the exact denoiser it is
    the factorization's price, a bound on KL(P || Q); with a trained model, model + factorization."""
    steps = check_int(steps, "steps", 1, LENGTH)
    n_docs, seed = check_int(n_docs, "n_docs", 2), check_int(seed, "seed", 0)
    docs = torch.from_numpy(LANG.sample_documents(n_docs, LENGTH + 1, seed=seed))  # (B, T)
    order = torch.rand(n_docs, LENGTH, generator=torch.Generator().manual_seed(seed)).argsort(dim=1) + 1  # (B, N)
    step_of_rank = torch.repeat_interleave(torch.arange(steps), torch.tensor(even_split(LENGTH, steps)))  # (N,)
    step_of = torch.full(docs.shape, -1).scatter_(1, order, step_of_rank.expand(n_docs, -1))  # (B, T) -1: <bos>
    nats = torch.zeros(n_docs, dtype=torch.float64)
    for j in range(steps):
        canvas = torch.where(step_of >= j, LANG.mask_id, docs)  # (B, T) what earlier passes wrote
        logp = torch.log_softmax(masked_logits(model, canvas).double(), dim=-1)  # (B, T, V)
        here = logp.gather(-1, docs[..., None]).squeeze(-1)  # (B, T) log p(true token)
        nats -= torch.where(step_of == j, here, torch.zeros_like(here)).sum(dim=1)
    excess = nats.numpy() / math.log(2) - score_documents(docs).document_bits  # (B,)
    return float(excess.mean()), float(excess.std(ddof=1) / math.sqrt(n_docs))


def one_pass_bits(length: int = LENGTH + 1) -> float:
    """Exactly what one pass over an empty canvas loses: sum_i H(x_i) - H(x), bits per document
    (the total correlation of the document's positions)."""
    marginals = LANG.document_marginals(length)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_position = -np.nansum(np.where(marginals > 0, marginals * np.log2(marginals), 0.0), axis=1)
    return float(per_position.sum() - LANG.document_entropy_bits(length))
