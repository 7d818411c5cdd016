"""The way out: speculative decoding's rule, exact for any drafter (rule); the drafters (drafters);
alpha predicted exactly (acceptance); its sweep (sweep, `python -m helpers.speculative.sweep`); and
where its time goes on a CPU, with GPU projections (cost).

What the notebooks use is re-exported here."""

from helpers.speculative.acceptance import acceptance_table, first_two_joint, target_table, visited_documents
from helpers.speculative.cost import speculative_latency, time_split
from helpers.speculative.drafters import CausalDrafter, MaskedDiffusionDrafter
from helpers.speculative.rule import speculative_generate
from helpers.speculative.sweep import load_small_drafter

__all__ = [
    "CausalDrafter",
    "MaskedDiffusionDrafter",
    "acceptance_table",
    "first_two_joint",
    "load_small_drafter",
    "speculative_generate",
    "speculative_latency",
    "target_table",
    "time_split",
    "visited_documents",
]
