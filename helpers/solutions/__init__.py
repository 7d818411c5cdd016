"""Reference solutions of the notebooks' coding exercises, one module per notebook.

Each function is shown, folded, under its exercise in the notebook (a test keeps the two texts
identical), and `helpers.exercises` checks a learner's version against exact ground truth.
"""

from helpers.solutions.ar_decoder import attend_with_cache, top_p_filter
from helpers.solutions.chain_rule import sample_sentence, sentence_log2prob
from helpers.solutions.masked_diffusion import commit_most_confident, tokens_per_step
from helpers.solutions.roofline import crossover_width, predicted_step_seconds
from helpers.solutions.speculative import acceptance_rate, verify_draft

__all__ = [
    "attend_with_cache",
    "acceptance_rate",
    "commit_most_confident",
    "crossover_width",
    "predicted_step_seconds",
    "sample_sentence",
    "sentence_log2prob",
    "tokens_per_step",
    "top_p_filter",
    "verify_draft",
]
