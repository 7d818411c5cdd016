"""What one pass of a masked-diffusion sampler commits, and what it re-masks.

helpers.diffusion.sampler.sample runs the loop; the rules of a single step live here, one function each,
so that a notebook cell can show any of them and a test can pin it:

- how many tokens a step commits (even_split, LLaDA) and which ones (commit_top_scores:
  LLaDA's confidence order, with Fast-dLLM's threshold; mdlm_commit: MDLM's ancestral step);
- which tokens already written are re-masked, the editor's move (ReMDM, Wang et al. 2025,
  arXiv:2503.00307): remdm_sigma gives the probability sigma_t of the paper's "cap" and
  "rescale" schedules, remdm_remask draws with it; remdm_conf_remask is this course's own
  deterministic schedule (a stress test, not one of ReMDM's).

Time runs from t = 1 (all masked) to 0 with the linear schedule alpha_t = 1 - t (alpha: the
fraction of positions written), so a step from t to s < t has (1 - alpha_s) / alpha_t = s / (1 - t).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from helpers.common.validation import check_int
from helpers.language.toylang import LANG

REMASK_SCHEDULES = ("cap", "rescale", "lowest-confidence")


def even_split(n_tokens: int, steps: int) -> list[int]:
    """Tokens to commit per step: n_tokens over `steps`, remainder to the earliest steps
    (LLaDA: 30 over 8 -> [4, 4, 4, 4, 4, 4, 3, 3])."""
    steps, n_tokens = check_int(steps, "steps", 1), check_int(n_tokens, "n_tokens", 0)
    base, extra = divmod(n_tokens, steps)
    return [base + (j < extra) for j in range(steps)]


def _chosen_probability(probs, chosen, generator):
    return probs.gather(-1, chosen[..., None]).squeeze(-1)  # (B, T) LLaDA's low_confidence


def _margin(probs, chosen, generator):
    top2 = probs.topk(2, dim=-1).values  # (B, T, 2)
    return top2[..., 0] - top2[..., 1]


def _low_entropy(probs, chosen, generator):
    return (probs * probs.clamp_min(1e-300).log()).sum(-1)  # (B, T) minus the entropy


def _uniform(probs, chosen, generator):
    return torch.rand(chosen.shape, generator=generator, dtype=torch.float64, device=chosen.device)


@dataclass(frozen=True)
class Rule:
    """An unmasking rule: which masked positions a pass commits first. `score(probs, chosen,
    generator)` gives (B, T), higher first; a rule without one draws which positions to commit
    instead (MDLM's ancestral step, mdlm_commit)."""

    name: str
    score: Callable[[torch.Tensor, torch.Tensor, torch.Generator | None], torch.Tensor] | None
    about: str  # one line, for the docs and the error messages


# The one table of rules: the sampler's choices and its error messages read it, and the exact sweep
# which of its samplers are a ranking rule alone. Order matters only for printing.
RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in (
        Rule("confidence", _chosen_probability, "the probability of the chosen token (LLaDA)"),
        Rule("random", _uniform, "a uniform draw: random order"),
        Rule("margin", _margin, "top-1 minus top-2 probability"),
        Rule("entropy", _low_entropy, "low entropy first"),
        Rule("ancestral", None, "MDLM: each masked position with probability (t - s) / t"),
    )
}


def confidence_scores(probs: torch.Tensor, chosen: torch.Tensor, rule: str, generator=None) -> torch.Tensor:
    """How sure the model is at each position by a ranking rule of RULES, higher = commit first.
    probs (B, T, V) float64, chosen (B, T) the token each position would take. Returns (B, T) float64."""
    if rule not in RULES or RULES[rule].score is None:
        ranked = ", ".join(name for name, entry in RULES.items() if entry.score is not None)
        raise ValueError(f"no confidence score for rule {rule!r}; use one of {ranked}")
    return RULES[rule].score(probs, chosen, generator)


def choose_tokens(logits: torch.Tensor, temperature: float, generator=None) -> torch.Tensor:
    """One token per position from logits (B, T, V): argmax at temperature 0, else a sample from
    softmax(logits / temperature) computed in float64. Returns (B, T) int64."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (B, T, V)
    flat = probs.reshape(-1, probs.size(-1))  # (B*T, V)
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


def top_counts(scores: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Boolean (B, T): in each row, the counts[b] positions with the highest finite score.
    Ties: the leftmost position wins (a stable sort), so the choice never depends on the backend."""
    rank = scores.argsort(dim=-1, descending=True, stable=True).argsort(dim=-1)  # (B, T) 0 = best
    return (rank < counts[:, None]) & torch.isfinite(scores)


def commit_top_scores(scores, masked, k, confidence=None, threshold=None, last_step=False) -> torch.Tensor:
    """Of the masked positions (B, T), commit the k (int or (B,)) with the highest scores and leave
    the rest masked: what LLaDA calls low-confidence remasking (Nie et al. 2025, arXiv:2502.09992),
    named here for what it commits. k comes from even_split, per block in semi-autoregressive
    decoding. Ties: the leftmost.

    threshold=tau (Fast-dLLM, Wu et al. 2025, arXiv:2505.22618): commit every masked position whose
    confidence (p of its chosen token) is >= tau, and at least the k scheduled ones.
    In a block's last step (last_step=True) every masked position is committed."""
    n_masked = masked.sum(dim=1)  # (B,)
    k = torch.as_tensor(k, device=masked.device).expand_as(n_masked)
    if threshold is not None:
        k = torch.maximum(k, ((confidence >= threshold) & masked).sum(dim=1))
    k = n_masked if last_step else torch.minimum(k, n_masked)
    return top_counts(scores.masked_fill(~masked, float("-inf")), k)


def mdlm_commit(masked, u, t, s, sigma=0.0) -> torch.Tensor:
    """MDLM's ancestral step from time t to s < t (Sahoo et al. 2024, arXiv:2406.07524): each masked
    position (B, T) is committed with probability (alpha_s - alpha_t) / (1 - alpha_t) = (t - s) / t,
    decided by the uniform draws u (B, T); at s = 0 every one is. While ReMDM re-masks at rate sigma
    (remdm_remask) the probability is (alpha_s - (1 - sigma) alpha_t) / (1 - alpha_t), which keeps
    the expected masked fraction at s."""
    p_unmask = ((1 - s) - (1 - sigma) * (1 - t)) / t  # = (t - s) / t when sigma = 0
    return masked & (u < p_unmask)


def remdm_sigma(t: float, s: float, eta: float, schedule: str) -> float:
    """ReMDM's re-masking probability sigma_t for the step from t to s (Wang et al. 2025, section 4):
    sigma_max = min(1, (1 - alpha_s) / alpha_t) = min(1, s / (1 - t)) is the most the step allows;
    "cap": sigma = min(eta, sigma_max); "rescale": sigma = eta * sigma_max. At t = 1 nothing is
    written yet, so sigma = 0; at s = 0 sigma_max = 0: the last step re-masks nothing."""
    if schedule not in ("cap", "rescale"):
        raise ValueError(f"schedule must be 'cap' or 'rescale' (ReMDM's sigma_t), got {schedule!r}")
    if t == 1:
        return 0.0
    sigma_max = min(1.0, s / (1 - t))
    return min(eta, sigma_max) if schedule == "cap" else eta * sigma_max


def remdm_remask(filled, u, t, s, eta, schedule="cap") -> tuple[torch.Tensor, float]:
    """ReMDM (Wang et al. 2025, arXiv:2503.00307): in the step from t to s, re-mask each filled
    position (B, T) with probability sigma = remdm_sigma(t, s, eta, schedule), using the uniform
    draws u (B, T) (the same draws mdlm_commit uses: a position is either filled or masked).
    Returns (re-masked positions, sigma)."""
    sigma = remdm_sigma(t, s, eta, schedule)
    return filled & (u < sigma), sigma


def remdm_conf_remask(canvas, allowed, stored_conf, fraction) -> torch.Tensor:
    """This course's deterministic schedule, a stress test (not one of ReMDM's): re-mask
    round(fraction * n) of the n filled positions in `allowed` (B, T), those whose confidence when
    they were committed (stored_conf) is lowest; ties: the leftmost. (ReMDM-conf instead scales each
    token's probability sigma_t by softmax(-confidence): the least confident go most often.)"""
    filled = (canvas != LANG.mask_id) & allowed  # (B, T)
    n = (fraction * filled.sum(dim=1)).round().long()  # (B,)
    return top_counts((-stored_conf).masked_fill(~filled, float("-inf")), n)


def remdm_remaskings_per_token(eta: float, schedule: str, steps: int) -> float:
    """How often ReMDM re-masks a token over a run of `steps` equal steps, in expectation:
    the sum over the steps of sigma_t times the written fraction alpha_t = 1 - t. It compares an
    eta tuned for one number of steps with an eta for another."""
    steps = check_int(steps, "steps", 1)
    return sum(remdm_sigma(1 - j / steps, 1 - (j + 1) / steps, eta, schedule) * j / steps for j in range(steps))
