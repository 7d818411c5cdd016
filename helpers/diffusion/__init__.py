"""The editor: masked diffusion's loss and its sampler, LLaDA's, Fast-dLLM's, MDLM's and ReMDM's
(sampler); the unmasking rules, what one pass commits and what ReMDM re-masks (unmasking); and the
language's exact conditionals for any canvas, a perfect model (exact_denoiser).

What the notebooks use is re-exported here."""

from helpers.diffusion.exact_denoiser import ExactDenoiser
from helpers.diffusion.sampler import even_split, masked_logits, nelbo, sample

__all__ = ["ExactDenoiser", "even_split", "masked_logits", "nelbo", "sample"]
