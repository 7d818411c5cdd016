"""Where a sampler's shortfall comes from: the rule, its grouping, or the model.

A masked-diffusion sampler can write worse documents than the language for three reasons, and the
exact denoiser (helpers.diffusion.exact_denoiser, a perfect model) tells them apart. Each is measured along
one path, from the language to the trained model, one change at a time:

1. **selection**: the rule alone, with no parallelism. The exact denoiser with the sampler's rule at
   one token per pass minus the language. Random order at one token per pass is the chain rule in a
   random order: it writes the language itself, so its selection is 0. Confidence order is not: it
   commits the likeliest of the tokens it drew, and even one at a time that is a bias.
2. **factorization**: what committing the rule's *own* groups together costs. The exact denoiser
   with the rule at k tokens per pass minus the same rule at one. A pass draws each position of its
   group from its own marginal, a product of marginals in place of their joint.
3. **model**: the trained network's conditionals are not the language's. The trained model minus
   the exact denoiser, same rule, same tokens per pass.

On each measure the three add up, since the path telescopes:
trained model - language = model + factorization + selection.

Random order's own factorization is shown beside each rule's. Their difference, **grouping** (the
rule's factorization minus random order's at the same rate), is what choosing *which* positions go
together is worth: the interaction of the rule with the rate, reported as its own term and never
folded into another name. Confidence order groups positions whose joint is nearly the product of
their marginals (the padding at the end, words fixed by what is written), which is what Fast-dLLM's
threshold is built on: commit together only what is nearly independent given the canvas.

Standard errors are paired: both sweeps draw document i of every setting with the same seed (common
random numbers), so one bootstrap resample of the document indices serves every run a term compares,
and each term's error is the spread of the term itself over the resamples.

Length and gap are measured on each run's own valid documents, as the matching rule
(helpers.quality.matching) measures them, so that the three terms add up to the shortfall it sees. A length
or gap term therefore compares two different sets of survivors (the documents valid in each run),
and is a difference between two settings, not what happened to the same documents.

The factorization also has a price in bits. For a fixed order of the positions (and a fixed
schedule), the sampler draws x with probability Q_order(x), the product over its passes of the
marginals it commits; E over documents x ~ P of log2 P(x) - log2 Q_order(x) is KL(P || Q_order).
`order_averaged_kl` averages it over random orders. The sampler itself draws from Q, the mixture of
Q_order over orders, and by convexity KL(P || Q) <= E_order KL(P || Q_order): the estimate is an
upper bound on the sampler's KL. At one token per pass it is 0 with exact conditionals; at one pass
every order is the same, and it is exactly the total correlation sum_i H(x_i) - H(x)
(`total_correlation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from helpers.common.validation import check_int, check_positive
from helpers.diffusion.sampler import even_split, masked_logits
from helpers.language.toylang import LANG
from helpers.quality.matched_quality import LENGTH, Run, Sweep
from helpers.quality.matching import MEASURES, DocumentArrays, language_value
from helpers.quality.scores import score_documents

SOURCES = ("model", "factorization", "selection")
MEASURE_LABELS = {"validity": "valid documents", "length": "sentences per valid document",
                  "diversity": "within-sentence gap (bits per sentence)"}  # fmt: skip
NEUTRAL = "random"  # the order that never looks at the draws: its selection is 0
LIMIT_OF = {"threshold (Fast-dLLM)": "confidence", "threshold, entropy order": "entropy"}  # tau -> 1: K = 32
BOOT = 1000  # paired bootstrap resamples behind every term's standard error


def truth(measure: str) -> float:
    """The language's own value of a measure: 100 % valid, 3.96 sentences, the pooled gap."""
    return language_value(measure)


def value(run: Run, measure: str) -> tuple[float, float]:
    """(value, standard error) of one setting on a measure."""
    q = run.quality
    return {"validity": q.validity, "length": q.sentences, "diversity": q.sentence_gap}[measure]


def curve(sweep: Sweep, sampler: str) -> list[Run]:
    """A sampler's settings ordered by tokens per pass. A threshold's curve starts at its order's
    K = 32 run: with tau -> 1 it commits the one scheduled token a step, exactly that run."""
    if not isinstance(sweep, Sweep):
        raise ValueError(f"sweep must be a helpers.quality.matched_quality.Sweep, got {type(sweep).__name__}")
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


# ----------------------------------------------------------------------------- paired bootstrap


def _resampled(run: Run, boot: int, seed: int) -> dict[str, np.ndarray]:
    """Tokens per pass and every measure of `run` on `boot` resamples of its documents, (boot,)
    each. The resamples depend only on (boot, seed, n): every run of n documents gets the same
    document indices, so runs that share seeds document by document are resampled in pairs."""
    key = f"_paired_bootstrap_{boot}_{seed}"
    if key not in run.__dict__:
        rows = np.random.default_rng(seed).integers(0, run.n, (boot, run.n))  # (boot, n)
        run.__dict__[key] = dict(zip(("rate", *MEASURES), DocumentArrays.of(run).values(rows), strict=True))
    return run.__dict__[key]


def _resampled_at(runs: list[Run], rate: float, measure: str, boot: int, seed: int) -> np.ndarray:
    """`measure` at `rate` tokens per pass on every resample (boot,), read off the straight line
    between the two settings around the rate as that resample measures both; NaN where the rate
    lies outside the resample's settings."""
    rates = np.stack([_resampled(r, boot, seed)["rate"] for r in runs], axis=1)  # (boot, R)
    values = np.stack([_resampled(r, boot, seed)[measure] for r in runs], axis=1)  # (boot, R)
    order = np.argsort(rates, axis=1)  # each resample's settings from the slowest up
    x, y = np.take_along_axis(rates, order, axis=1), np.take_along_axis(values, order, axis=1)  # (boot, R)
    above = (x < rate - 1e-9).sum(axis=1).clip(1, len(runs) - 1)  # (boot,) the first setting at or past the rate
    x0, x1 = np.take_along_axis(x, above[:, None] - 1, 1)[:, 0], np.take_along_axis(x, above[:, None], 1)[:, 0]
    y0, y1 = np.take_along_axis(y, above[:, None] - 1, 1)[:, 0], np.take_along_axis(y, above[:, None], 1)[:, 0]
    if len(runs) == 1:
        x0 = x1 = x[:, 0]
        y0 = y1 = y[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(x1 > x0, (rate - x0) / (x1 - x0), 0.0)
    inside = (x[:, 0] - 1e-9 <= rate) & (rate <= x[:, -1] + 1e-9)
    return np.where(inside, (1 - w) * y0 + w * y1, np.nan)


def paired_se(draws: np.ndarray) -> float:
    """The standard error of a term from its paired bootstrap draws (NaN where fewer than half are
    defined: the term has no stable value there)."""
    draws = np.asarray(draws, dtype=float)
    finite = draws[np.isfinite(draws)]
    if len(finite) < max(2, len(draws) / 2):
        return math.nan
    return float(finite.std(ddof=1))


# ----------------------------------------------------------------------------- the split


@dataclass(frozen=True)
class Split:
    """One sampler's shortfall against the language on one measure at one rate, in three parts
    that add up, each (value, paired bootstrap standard error); and, beside them, random order's
    own factorization and the grouping, the rule's factorization minus random order's."""

    sampler: str
    rate: float
    measure: str
    model: tuple[float, float]  # trained minus exact denoiser, this rule at this rate
    factorization: tuple[float, float]  # exact denoiser: this rule at this rate minus at one token per pass
    selection: tuple[float, float]  # exact denoiser: this rule at one token per pass minus the language
    random_factorization: tuple[float, float]  # exact denoiser: random order at this rate minus at one
    grouping: tuple[float, float]  # factorization - random_factorization: what the rule's choice of groups is worth

    @property
    def total(self) -> float:
        """The trained model's value minus the language's."""
        return self.model[0] + self.factorization[0] + self.selection[0]

    @property
    def survivors(self) -> bool:
        """True for length and gap: each run's own valid documents, so each term compares different
        survivors (module docstring)."""
        return self.measure != "validity"


def three_way_split(
    exact: Sweep, trained: Sweep, sampler: str, rate: float, measure: str, *, boot: int = BOOT, seed: int = 0
) -> Split:
    """Split `sampler`'s shortfall on `measure` at `rate` tokens per pass along the path language ->
    rule at one token per pass (selection) -> rule at `rate` (factorization) -> trained model
    (model), on the exact denoiser until the last step. Standard errors: `boot` paired bootstrap
    resamples of the documents (the same indices for every run). NaN where a rule's settings do
    not reach one token per pass or `rate`, or where a measure has no valid document."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    boot, seed = check_int(boot, "boot", 2), check_int(seed, "seed", 0)
    mine, perfect, neutral = curve(trained, sampler), curve(exact, sampler), curve(exact, NEUTRAL)
    points = {  # where each quantity is read: (the curve, tokens per pass)
        "trained": (mine, rate), "exact": (perfect, rate), "exact at 1": (perfect, 1.0),
        "random": (neutral, rate), "random at 1": (neutral, 1.0),
    }  # fmt: skip
    at = {k: (value_at(runs, r, measure)[0], _resampled_at(runs, r, measure, boot, seed)) for k, (runs, r) in
          points.items()}  # fmt: skip
    at["language"] = (truth(measure), np.full(boot, truth(measure)))

    def minus(a, b):  # a term: its value on every document, and on each paired resample
        return a[0] - b[0], a[1] - b[1]

    def term(t) -> tuple[float, float]:  # (value, paired standard error)
        return float(t[0]), (paired_se(t[1]) if math.isfinite(t[0]) else math.nan)

    fact, random_fact = minus(at["exact"], at["exact at 1"]), minus(at["random"], at["random at 1"])
    return Split(sampler, rate, measure, term(minus(at["trained"], at["exact"])), term(fact),
                 term(minus(at["exact at 1"], at["language"])), term(random_fact),
                 term(minus(fact, random_fact)))  # fmt: skip


# ----------------------------------------------------------------------------- the factorization, in bits


@torch.no_grad()
def lost_bits_per_document(model, steps: int, n_docs: int = 256, seed: int = 0) -> np.ndarray:
    """For n_docs documents x of the language, each with its own random order of the 32 positions
    filled in `steps` passes (the even split): log2 P(x) - log2 Q_order(x), where Q_order(x) is the
    product over the passes of the conditionals p(x_i | what earlier passes wrote). (n_docs,) bits."""
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
    return nats.numpy() / math.log(2) - score_documents(docs).document_bits  # (B,)


def order_averaged_kl(model, steps: int, n_docs: int = 256, seed: int = 0) -> tuple[float, float]:
    """E over random orders of KL(P || Q_order), bits per document (mean, standard error over
    n_docs documents, one order each): what filling the 32 positions in `steps` passes loses to the
    chain rule. An upper bound on KL(P || Q) of the sampler's output Q, which mixes over orders;
    at steps = 1 every order is the same and it is the total correlation (`total_correlation`).
    With a trained model it holds the model's own error too."""
    lost = lost_bits_per_document(model, steps, n_docs, seed)
    return float(lost.mean()), float(lost.std(ddof=1) / math.sqrt(len(lost)))


def total_correlation(length: int = LENGTH + 1) -> float:
    """Exactly what one pass over an empty canvas loses: sum_i H(x_i) - H(x) = KL(P || prod of the
    marginals), bits per document (the total correlation of the document's positions)."""
    marginals = LANG.document_marginals(length)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_position = -np.nansum(np.where(marginals > 0, marginals * np.log2(marginals), 0.0), axis=1)
    return float(per_position.sum() - LANG.document_entropy_bits(length))


def one_pass_calibration(samples: int = 100, n_docs: int = 1024, first_seed: int = 1) -> dict[str, float]:
    """Is the one-pass estimate's standard error honest? `samples` independent estimates of
    n_docs documents each (seeds first_seed, first_seed + 1, ...) on the exact denoiser, each as a
    z-score (estimate - total correlation) / its standard error: their mean and spread (0 and 1 if
    calibrated), the share below the exact value and the share more than 2 standard errors below
    (0.5 and about 0.023), and the skewness of the per-document losses, all samples pooled."""
    from helpers.diffusion.exact_denoiser import ExactDenoiser

    samples, n_docs = check_int(samples, "samples", 2), check_int(n_docs, "n_docs", 2)
    exact, model, z, pooled = total_correlation(), ExactDenoiser(), [], []
    for seed in range(check_int(first_seed, "first_seed", 0), first_seed + samples):
        lost = lost_bits_per_document(model, 1, n_docs, seed)
        z.append((lost.mean() - exact) / (lost.std(ddof=1) / math.sqrt(n_docs)))
        pooled.append(lost)
    z, pooled = np.array(z), np.concatenate(pooled)
    skew = float(((pooled - pooled.mean()) ** 3).mean() / pooled.std() ** 3)
    return {"samples": samples, "n_docs": n_docs, "first_seed": first_seed, "z_mean": float(z.mean()),
            "z_sd": float(z.std(ddof=1)), "share_below": float((z < 0).mean()),
            "share_below_2se": float((z < -2).mean()), "skewness": skew}  # fmt: skip
