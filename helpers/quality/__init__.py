"""Quality, measured exactly: a sampler's documents scored for validity, length and diversity
(scores); the sweep of every sampler setting (matched_quality, `python -m
helpers.quality.matched_quality`) and the same on the exact denoiser (exact_sweep, `python -m
helpers.quality.exact_sweep`); tokens per pass at the AR model's quality (matching); a shortfall
split into the rule's selection, its factorization and the model's error (error_sources).

What the notebooks use is re-exported here."""

from helpers.quality.error_sources import order_averaged_kl, total_correlation
from helpers.quality.exact_sweep import exact_run, load_exact_sweep
from helpers.quality.matched_quality import load_sweep, sweep_run
from helpers.quality.matching import margins, target_from
from helpers.quality.scores import exact_documents, score_documents

__all__ = [
    "exact_documents",
    "exact_run",
    "load_exact_sweep",
    "load_sweep",
    "margins",
    "order_averaged_kl",
    "score_documents",
    "sweep_run",
    "target_from",
    "total_correlation",
]
