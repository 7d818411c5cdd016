"""Tokens per pass at the AR model's quality, matched on every measure (or on some, to compare).

The reference is the language itself, whose every measure this course knows exactly; the AR model
at temperature 1 is the bar to clear. A setting matches when, on its valid documents
(helpers.quality.scores), it is at least as close to the language as the AR model is, up to sampling error:

- validity: it is at least `Target.validity` less `validity_tolerance`. The 99 % is a convention
  (the AR model's 99.3 %, rounded down), not a measurement; the tolerance allows for sampling error;
- length: |its sentences per document - the language's| <= |the AR model's - the language's| +
  `length_tolerance`;
- diversity: the same rule on the within-sentence gap, against the language's own gap (not 0: a
  late sentence must fit the room left on the canvas, so the language's own gap is below 0). A far
  lower gap is mode-seeking, a far higher one (AR at T = 0.5) writes unlikely sentences.

A setting closer to the language than the AR model is never penalised for it: the perfect model in
random order at one token per pass, which draws from the language itself, matches.

The tolerances come from the standard errors: twice the standard error of a difference between
two settings of the AR model's size (2 x sqrt(2) x the AR model's own standard error), so a
setting drawn like the AR model passes each test at least 19 times in 20. Reading the settings of
one sampler from the slowest up, each measure's margin (positive: it holds) is interpolated to
the rate where it reaches 0, as `crossing` does; the setting matches up to the first such rate.
Every measure a setting fails is reported (`failing`), not only the first. The bootstrap is
paired: the sweeps' runs share seeds document by document (common random numbers), so every
resample takes the same documents of every setting and of the AR model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from helpers.common.validation import check_fraction, check_int, check_positive
from helpers.language.toylang import LANG
from helpers.quality.matched_quality import LENGTH
from helpers.quality.scores import exact_documents

MEASURES = ("validity", "length", "diversity")


@cache
def language_value(measure: str) -> float:
    """The language's own value of a measure, exactly: 100 % valid, 3.96 sentences per document,
    and its pooled within-sentence gap (-0.07 bits: later sentences must fit, so are likelier)."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
    exact = exact_documents(LENGTH + 1)
    return {"validity": 1.0, "length": exact.mean_sentences,
            "diversity": exact.pooled_sentence_bits - exact.sentence_entropy}[measure]  # fmt: skip


def crossing(points: list[tuple[float, float]], target: float) -> float | None:
    """The tokens per pass at which a measure falls below `target`, reading the points (tokens per
    pass, value) from the slowest setting up: linear interpolation between the last point at or
    above the target and the first below it. None if even the slowest point is below it; +inf if
    no point falls below (the target holds at every rate measured)."""
    points = sorted(points)
    if not points or points[0][1] < target:
        return None
    for (x0, v0), (x1, v1) in zip(points, points[1:], strict=False):
        if v1 < target:
            return x0 + (v0 - target) * (x1 - x0) / (v0 - v1)
    return math.inf


@dataclass(frozen=True)
class Target:
    """How close to the language a setting must come on each measure: as close as the AR model at
    temperature 1 (the bar), plus sampling error. The AR model's own values are measured on its
    documents (again on every bootstrap resample of them), so they are not stored here."""

    validity: float  # the validity asked for, a convention (0.99)
    length_tolerance: float  # sentences per document a setting may lie further from the language than AR
    gap_tolerance: float  # bits per sentence of within-sentence gap it may lie further from the language than AR
    validity_tolerance: float = 0.0  # how far below `validity` a measured validity may fall by chance

    @property
    def lowest_validity(self) -> float:
        """The lowest measured validity that matches."""
        return self.validity - self.validity_tolerance

    def allowed(self, measure: str, reference_value: float) -> tuple[float, float]:
        """The values of `measure` that match when the AR model measures `reference_value`: at least
        lowest_validity; or the language's value ± (|the AR model's distance from it| + tolerance)."""
        if measure == "validity":
            return self.lowest_validity, 1.0
        tolerance = {"length": self.length_tolerance, "diversity": self.gap_tolerance}.get(measure)
        if tolerance is None:
            raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}")
        language = language_value(measure)
        width = abs(float(reference_value) - language) + tolerance
        return language - width, language + width

    def __str__(self) -> str:
        return (
            f"validity >= {100 * self.validity:g} % - {100 * self.validity_tolerance:.1f} points of sampling error;"
            f" length and within-sentence gap as close to the language as the AR model's, + {self.length_tolerance:.2f}"
            f" sentences and + {self.gap_tolerance:.2f} bits of sampling error"
        )


def target_from(reference, validity: float = 0.99, z: float = 2.0) -> Target:
    """The target a Run (the AR model at temperature 1) sets: tolerances z * sqrt(2) * its standard
    errors (those of a difference between two samples of its size), rounded up: to the next
    hundredth of a sentence or a bit, to the next tenth of a point of validity."""
    validity = check_fraction(validity, "validity (the convention asked for, e.g. 0.99)", allow_one=False)
    z = check_positive(z, "z (standard errors of a difference a match may differ by)")
    q = reference.quality
    length_tolerance, gap_tolerance = (math.ceil(100 * z * math.sqrt(2) * se) / 100 for se in
                                       (q.sentences[1], q.sentence_gap[1]))  # fmt: skip
    validity_tolerance = math.ceil(1000 * z * math.sqrt(2) * q.validity[1]) / 1000
    return Target(validity, length_tolerance, gap_tolerance, validity_tolerance)


@dataclass
class DocumentArrays:
    """What the measures need of each document of a run, so a bootstrap only reindexes arrays."""

    valid: np.ndarray
    sentences: np.ndarray  # 0 where invalid
    bits: np.ndarray  # sum of -log2 P(s) over the sentences (0 where invalid)
    passes: np.ndarray
    positions: int  # positions each document fills

    @classmethod
    def of(cls, run) -> DocumentArrays:
        s = run.scores
        bits = np.nan_to_num(np.nansum(s.sentence_bits, axis=1))
        return cls(s.valid, s.sentences.astype(float), bits, run.passes, LENGTH)

    def values(self, rows=slice(None)) -> tuple:
        """(tokens per pass, validity, sentences per valid document, within-sentence gap) on the
        documents `rows`, NaN where no document is valid. `rows` (boot, n) measures `boot`
        resamples at once: each value is then an array (boot,)."""
        valid, count = self.valid[rows], self.sentences[rows]
        n_valid, n_sentences = valid.sum(axis=-1), count.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_sentences = np.where(n_valid > 0, n_sentences / n_valid, np.nan)
            gap = np.where(n_sentences > 0, self.bits[rows].sum(axis=-1) / n_sentences - LANG.entropy_bits(), np.nan)
        out = (self.positions / self.passes[rows].mean(axis=-1), valid.mean(axis=-1), mean_sentences, gap)
        return tuple(float(v) for v in out) if np.ndim(gap) == 0 else out


def _margins(values, ref_values, target: Target) -> dict[str, float]:
    """Positive where the measure holds. NaN measures (no valid document) fail."""
    _, validity, sentences, gap = values
    _, _, ref_sentences, ref_gap = ref_values
    length, diversity = language_value("length"), language_value("diversity")
    margins = {
        "validity": validity - target.lowest_validity,
        "length": abs(ref_sentences - length) + target.length_tolerance - abs(sentences - length),
        "diversity": abs(ref_gap - diversity) + target.gap_tolerance - abs(gap - diversity),
    }
    return {k: (-math.inf if math.isnan(v) else v) for k, v in margins.items()}


def margins(run, reference, target: Target) -> dict[str, float]:
    """How far one setting is inside the target on each measure (positive: it matches there):
    validity above target.lowest_validity; on length and gap, how much further from the language
    it may still go: |the reference's distance from the language| + tolerance - |its own|."""
    if not isinstance(target, Target):
        raise ValueError(
            f"target must be a helpers.quality.matching.Target (see target_from), got {type(target).__name__}"
        )
    return _margins(DocumentArrays.of(run).values(), DocumentArrays.of(reference).values(), target)


def failing(run, reference, target: Target) -> tuple[str, ...]:
    """Every measure on which one setting misses the target (empty: it matches)."""
    return tuple(m for m, v in margins(run, reference, target).items() if v < 0)


def _matched_rate(points, measures) -> tuple[float | None, tuple[str, ...]]:
    """(rate up to which every measure holds, the measures that end it). Where even the slowest
    setting fails, the rate is None and the measures are every one it fails."""
    rates = {m: crossing([(x, margin[m]) for x, margin in points], 0.0) for m in measures}
    if any(r is None for r in rates.values()):
        return None, tuple(m for m in measures if rates[m] is None)
    binding = min(rates[m] for m in measures)
    return binding, (() if math.isinf(binding) else tuple(m for m in measures if rates[m] == binding))


@dataclass
class AtQuality:
    """Tokens per pass a sampler allows at the target, on the measures named."""

    sampler: str
    measures: tuple[str, ...]
    tokens_per_pass: float | None  # None: no setting matches; inf: every setting does
    se: float  # bootstrap standard error (documents resampled in every setting); NaN if undefined
    limited_by: tuple[str, ...]  # the measures that end the match (for None: every one the slowest fails)
    bracket: tuple[float, float] | None = None  # the two measured rates the crossing lies between
    plausible: tuple[float, float] | None = None  # the bootstrap's 2.5th and 97.5th percentiles
    matched_share: float = math.nan  # share of bootstrap resamples in which some setting matches

    def __str__(self) -> str:
        if self.tokens_per_pass is None:
            return f"never ({', '.join(self.limited_by)})"
        if math.isinf(self.tokens_per_pass):
            return "every rate measured"
        return f"{self.tokens_per_pass:.2f} ± {self.se:.2f}"

    @property
    def settings_text(self) -> str:
        """str() with the two measured rates the crossing lies between, e.g. '1.09 ± 0.03, settings
        1.08-1.16'; 'never (...)' as str()."""
        return f"{self}" + (f", settings {self.bracket[0]:.2f}-{self.bracket[1]:.2f}" if self.bracket else "")

    @property
    def range_text(self) -> str:
        """The value with its plausible range, e.g. '1.32 (1.30 to 1.34)'; 'never (...)' as str()."""
        if self.plausible is None:
            return str(self)
        return f"{self.tokens_per_pass:.2f} ({self.plausible[0]:.2f} to {self.plausible[1]:.2f})"


def tokens_per_pass_at(runs, reference, target: Target, measures=MEASURES, *, boot=200, seed=0) -> AtQuality:
    """Where the sampler `runs` stops matching the target that `reference` (a Run: AR at
    temperature 1) sets on `measures`, interpolated between settings, with a standard error from
    `boot` bootstrap resamples of the documents. Where every run and the reference hold the same
    number of documents (the sweeps: document i of every setting drawn with the same seed), the
    resamples are paired: one draw of document indices for all of them. The error covers sampling
    noise only, not the straight line drawn between the two settings around the crossing
    (`bracket`): where those are far apart, the bracket is the honest resolution."""
    runs = list(runs) if isinstance(runs, list | tuple) else runs
    if not isinstance(runs, list) or not runs or not all(hasattr(r, "scores") for r in runs):
        raise ValueError(f"runs must be a non-empty list of Run (e.g. load_sweep().runs[name]), got {runs!r:.80}")
    if not isinstance(target, Target):
        raise ValueError(
            f"target must be a helpers.quality.matching.Target (see target_from), got {type(target).__name__}"
        )
    measures = tuple(measures)
    if not measures or any(m not in MEASURES for m in measures):
        raise ValueError(f"measures must be a non-empty subset of {MEASURES}, got {measures!r}")
    boot, seed = check_int(boot, "boot", 0), check_int(seed, "seed", 0)
    docs, ref = [DocumentArrays.of(r) for r in runs], DocumentArrays.of(reference)

    def rate(picks, ref_rows):
        ref_values = ref.values(ref_rows)
        points = [
            (v[0], _margins(v, ref_values, target)) for v in (d.values(p) for d, p in zip(docs, picks, strict=True))
        ]
        return _matched_rate(points, measures)

    value, limited_by = rate([slice(None)] * len(docs), slice(None))
    rng = np.random.default_rng(seed)
    paired = len({len(d.valid) for d in (*docs, ref)}) == 1  # common random numbers: resample them together
    draws = []
    for _ in range(boot):
        if paired:
            rows = rng.integers(0, len(ref.valid), len(ref.valid))
            draws.append(rate([rows] * len(docs), rows)[0])
        else:
            picks = [rng.integers(0, len(d.valid), len(d.valid)) for d in docs]
            draws.append(rate(picks, rng.integers(0, len(ref.valid), len(ref.valid)))[0])
    finite = [d for d in draws if d is not None and math.isfinite(d)]
    defined = value is not None and math.isfinite(value) and len(finite) > 1
    se = float(np.std(finite, ddof=1)) if defined else math.nan
    plausible = tuple(float(x) for x in np.percentile(finite, [2.5, 97.5])) if defined else None
    share = float(np.mean([d is not None for d in draws])) if draws else math.nan
    bracket = None
    if value is not None and math.isfinite(value):
        rates = sorted(r.tokens_per_pass for r in runs)
        bracket = (max(x for x in rates if x <= value), min(x for x in rates if x >= value))
    return AtQuality(runs[0].sampler, measures, value, se, limited_by, bracket, plausible, share)
