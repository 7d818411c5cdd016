"""Self-checking exercises: `check_<name>(fn)` runs a learner's function against exact ground
truth, prints one short report (✓ with a measured number, or ✗ with the property that failed
and a hint) and returns True or False. An unfilled stub is reported as not attempted yet.
The reference solutions are in helpers.solutions."""

from helpers.exercises.ar_decoding import check_attend_with_cache, check_top_p_filter
from helpers.exercises.chain_rule import check_sample_sentence, check_sentence_log2prob
from helpers.exercises.masked_diffusion import check_commit_most_confident, check_tokens_per_step
from helpers.exercises.roofline import check_crossover_width, check_predicted_step_seconds
from helpers.exercises.speculative import check_acceptance_rate, check_verify_draft

__all__ = [
    "check_acceptance_rate",
    "check_attend_with_cache",
    "check_commit_most_confident",
    "check_crossover_width",
    "check_predicted_step_seconds",
    "check_sample_sentence",
    "check_sentence_log2prob",
    "check_tokens_per_step",
    "check_top_p_filter",
    "check_verify_draft",
]
