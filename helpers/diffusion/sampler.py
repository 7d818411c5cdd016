"""Masked diffusion: the training objective and, below, the samplers.

Forward process: each token of a clean document x0 is replaced by <mask> with probability t.
The model sees the partly masked canvas x_t (no time input) and predicts the clean token at
every masked position. With the linear schedule the continuous-time ELBO (MDLM, LLaDA) is

    -log p(x0) <= E_{t ~ U(0,1)} [ (1/t) * sum over masked positions of -log p(x0_i | x_t) ]

The 1/t weight makes it a bound: at small t few positions are masked and each one counts a lot.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from helpers.common.validation import check_fraction, check_generator, check_int, check_number
from helpers.decoding.model import Transformer
from helpers.diffusion.exact_denoiser import ExactDenoiser

# the rules of one step, re-exported so that `from helpers.diffusion.sampler import ...` works
from helpers.diffusion.unmasking import (
    REMASK_SCHEDULES,
    RULES,
    choose_tokens,
    commit_top_scores,
    confidence_scores,
    even_split,
    mdlm_commit,
    remdm_conf_remask,
    remdm_remask,
    remdm_sigma,
    top_counts,
)
from helpers.language.toylang import LANG

__all__ = [
    "REMASK_SCHEDULES",
    "choose_tokens",
    "confidence_scores",
    "diffusion_loss",
    "even_split",
    "commit_top_scores",
    "masked_logits",
    "masked_nll",
    "mdlm_commit",
    "nelbo",
    "remdm_conf_remask",
    "remdm_remask",
    "remdm_sigma",
    "sample",
    "top_counts",
]


def _check_model(model: Transformer | ExactDenoiser) -> None:
    if isinstance(model, ExactDenoiser):  # the language's exact conditionals: a perfect denoiser
        return
    if not isinstance(model, Transformer):
        raise ValueError(
            "model must be a bidirectional helpers.decoding.model.Transformer or a "
            "helpers.diffusion.exact_denoiser.ExactDenoiser, "
            f"got {type(model).__name__}"
        )
    if model.config.causal:
        raise ValueError("masked diffusion needs a bidirectional model (ModelConfig(causal=False)); this one is causal")


def _check_docs(x0) -> None:
    if not isinstance(x0, torch.Tensor) or x0.dtype != torch.long or x0.dim() != 2 or x0.size(1) < 2:
        raise ValueError("x0 must be an int64 tensor of shape (B, T) with T >= 2 (<bos> then tokens)")


def masked_logits(model: Transformer, canvas: torch.Tensor) -> torch.Tensor:
    """Logits (B, T, V) with the <mask> logit at -inf: the model never predicts a mask (SUBS)."""
    logits = model(canvas)  # (B, T, V)
    logits[..., LANG.mask_id] = float("-inf")
    return logits


def masked_nll(model: Transformer, x0: torch.Tensor, t: torch.Tensor, generator=None) -> torch.Tensor:
    """Mask x0 at rate t (B,) (position 0, <bos>, always stays) and return the weighted
    per-document sum (1/t) * sum_masked -log p(x0_i | x_t), shape (B,)."""
    B, T = x0.shape
    noise = torch.rand(B, T, generator=generator, device=x0.device)  # (B, T)
    masked = noise < t[:, None]  # (B, T)
    masked[:, 0] = False
    canvas = torch.where(masked, LANG.mask_id, x0)  # (B, T)
    logits = masked_logits(model, canvas)  # (B, T, V)
    nll = F.cross_entropy(logits.transpose(1, 2), x0, reduction="none")  # (B, T)
    return (nll * masked).sum(dim=1) / t  # (B,)


def diffusion_loss(model: Transformer, x0: torch.Tensor, eps: float = 1e-3, generator=None) -> torch.Tensor:
    """One-sample estimate of the ELBO in nats per token (positions after <bos>).

    t ~ U(eps, 1), antithetic across the batch: t_b = eps + (1 - eps) * ((u + b / B) mod 1),
    so the batch covers the whole range of masking rates evenly.
    """
    _check_model(model)
    _check_docs(x0)
    eps = check_fraction(eps, "eps", allow_one=False)
    B, T = x0.shape
    u = torch.rand(1, generator=generator, device=x0.device)
    t = eps + (1 - eps) * ((u + torch.arange(B, device=x0.device) / B) % 1)  # (B,)
    return masked_nll(model, x0, t, generator).sum() / (B * (T - 1))


@torch.no_grad()
def nelbo(model: Transformer, x0: torch.Tensor, draws: int = 128, generator=None, per_document: bool = False):
    """The ELBO bound on -log p(x0), nats per token, averaged over documents: `draws` masking
    rates per document, stratified over [0, 1) so the estimate has little variance. With
    per_document=True, the bound of each document (B,) instead of their mean."""
    _check_model(model)
    _check_docs(x0)
    draws = check_int(draws, "draws", 1)
    B, T = x0.shape
    total = torch.zeros(B, dtype=torch.float64, device=x0.device)  # (B,)
    for j in range(draws):
        u = torch.rand(B, generator=generator, device=x0.device)
        t = ((j + u) / draws).clamp_min(1e-6)  # (B,) one stratum per draw
        total += masked_nll(model, x0, t, generator).double()
    per_doc = total / (draws * (T - 1))  # (B,)
    return per_doc if per_document else per_doc.mean().item()


# ---------------------------------------------------------------------------------- sampling
def _ranks(rule: str) -> bool:
    """Whether a rule of RULES ranks positions by a score (else it draws them: MDLM's ancestral step)."""
    return RULES[rule].score is not None


def _remdm_moves(canvas, masked, in_block, t, s, remask, schedule, generator):
    """Drawn before the pass of the step from t to s: one uniform draw per position decides which
    filled positions ReMDM re-masks (none without `remask`) and, for the ancestral sampler, which
    masked ones MDLM commits. Returns (re-masked, sigma, draws)."""
    u = torch.rand(canvas.shape, generator=generator, device=canvas.device)  # (B, T)
    if remask is None:
        return torch.zeros_like(masked), 0.0, u
    remasked, sigma = remdm_remask((canvas != LANG.mask_id) & in_block, u, t, s, remask, schedule)
    return remasked, sigma, u


def _check_prompt(prompt, batch: int, vocab_size: int) -> None:
    if (
        not isinstance(prompt, torch.Tensor)
        or prompt.dim() not in (1, 2)
        or prompt.dtype != torch.long
        or not prompt.size(-1)
    ):
        raise ValueError("prompt must be None or an int64 torch.Tensor of shape (T0,) or (B, T0) with T0 >= 1")
    if prompt.dim() == 2 and prompt.size(0) != batch:
        raise ValueError(f"prompt has {prompt.size(0)} rows but batch_size is {batch}")
    if ((prompt < 0) | (prompt >= vocab_size)).any():
        bad = prompt[(prompt < 0) | (prompt >= vocab_size)][0].item()
        raise ValueError(f"prompt token ids must be in [0, {vocab_size}) (the model's vocab_size), got {bad}")
    if (prompt == LANG.mask_id).any():
        raise ValueError(
            f"prompt must not contain <mask> (id {LANG.mask_id}): the sampler fills only the positions after it"
        )


def _check_remask(remask, schedule, rule) -> float | None:
    if not isinstance(schedule, str) or schedule not in REMASK_SCHEDULES:
        raise ValueError(f"remask_schedule must be one of {REMASK_SCHEDULES}, got {schedule!r}")
    if remask is None:
        return None
    if schedule == "lowest-confidence" and not _ranks(rule):
        raise ValueError(f"remask_schedule='lowest-confidence' needs a ranking rule, not {rule!r}")
    return check_fraction(remask, "remask (None or ReMDM's eta)", allow_one=False)


def _check_sample_args(model, length, steps, prompt, rule, block_length, threshold, temperature, batch):
    """The checked arguments: (length, steps, block_length, threshold, temperature, batch)."""
    _check_model(model)
    length = check_int(length, "length (tokens to generate)", 1)
    batch = check_int(batch, "batch_size", 1)
    _check_prompt(prompt, batch, model.config.vocab_size)
    if prompt.size(-1) + length > model.config.max_len:
        raise ValueError(
            f"prompt ({prompt.size(-1)}) + length ({length}) exceeds the model's max_len ({model.config.max_len})"
        )
    if not isinstance(rule, str) or rule not in RULES:
        rules = "; ".join(f"{name!r}: {entry.about}" for name, entry in RULES.items())
        raise ValueError(f"rule must be one of {tuple(RULES)} ({rules}), got {rule!r}")
    block_length = length if block_length is None else check_int(block_length, "block_length", 1)
    if length % block_length:
        raise ValueError(f"block_length must be an int that divides length ({length}), got {block_length!r}")
    if threshold is not None:
        threshold = check_fraction(threshold, "threshold (None or Fast-dLLM's tau)")
        if not _ranks(rule):
            ranked = tuple(name for name in RULES if _ranks(name))
            raise ValueError(f"threshold applies to the ranking rules {ranked}, not to {rule!r}")
    steps = check_int(steps, "steps", 1)
    if threshold is None and steps > length and _ranks(rule):
        raise ValueError(f"steps ({steps}) must be <= length ({length}): each step commits at least one token")
    if steps % (length // block_length):
        raise ValueError(f"steps ({steps}) must be a multiple of the number of blocks ({length // block_length})")
    temperature = check_number(temperature, "temperature", 0)
    return length, steps, block_length, threshold, temperature, batch


def _trace_step(canvas, commit, remasked, revised, stored_conf, block, step) -> dict:
    confidence = stored_conf.masked_fill(canvas == LANG.mask_id, float("nan"))
    return dict(
        canvas=canvas.clone(),
        committed=commit,
        remasked=remasked,
        revised=revised,
        confidence=confidence,
        block=block,
        step=step,
    )


def _setup(model, length, steps, prompt, rule, block_length, threshold, remask, remask_schedule,
           temperature, batch_size, generator):  # fmt: skip
    """The checked arguments, and the canvas (B, T0 + length): the prompt, then <mask>."""
    prompt = torch.tensor([LANG.bos_id], dtype=torch.long) if prompt is None else prompt
    check_generator(generator)
    length, steps, block_length, threshold, temperature, batch_size = _check_sample_args(
        model, length, steps, prompt, rule, block_length, threshold, temperature, batch_size
    )
    remask = _check_remask(remask, remask_schedule, rule)
    device = torch.device("cpu") if isinstance(model, ExactDenoiser) else next(model.parameters()).device
    prompt = prompt.to(device).expand(batch_size, -1) if prompt.dim() == 1 else prompt.to(device)
    canvas = torch.cat([prompt, torch.full((batch_size, length), LANG.mask_id, device=device)], dim=1)  # (B, T)
    return canvas, prompt.size(1), steps, block_length, threshold, remask, temperature


def _moves_before_pass(canvas, masked, in_block, t, s, k, pending, remask, schedule, ancestral, generator):
    """What is drawn before a step's pass: the positions ReMDM re-masks (none without `remask`; the
    stress test re-masks after the pass instead) and, for MDLM's ancestral rule, those it commits.
    A ranking rule re-masks at most what the step can fill again, so its k stays on schedule."""
    remasked, commit = torch.zeros_like(masked), None
    if ancestral or (remask is not None and schedule != "lowest-confidence"):
        remdm = remask if schedule != "lowest-confidence" else None
        remasked, sigma, u = _remdm_moves(canvas, masked, in_block, t, s, remdm, schedule, generator)
        if ancestral:
            commit = mdlm_commit(masked, u, t, s, sigma)
        elif remdm is not None:
            room = (masked.sum(dim=1) - k - pending).clamp_min(0)  # (B,)
            remasked = top_counts((-u).masked_fill(~remasked, float("-inf")), torch.minimum(remasked.sum(1), room))
    return remasked, commit


@torch.no_grad()
def sample(
    model: Transformer | ExactDenoiser,
    length: int,
    steps: int,
    *,
    prompt: torch.Tensor | None = None,
    rule: str = "confidence",
    block_length: int | None = None,
    threshold: float | None = None,
    remask: float | None = None,
    remask_schedule: str = "cap",
    temperature: float = 0.0,
    batch_size: int = 1,
    generator: torch.Generator | None = None,
    return_trace: bool = False,
):
    """Fill `length` masked positions after `prompt` in about `steps` passes: in every step one
    forward pass predicts all masked positions at once, and an unmasking rule (helpers.diffusion.
    unmasking.RULES) commits some of them. The canvas is split into blocks of `block_length`,
    filled left to right with steps // n_blocks steps each.

    Args:
        model: a bidirectional Transformer, or the ExactDenoiser (a perfect model).
        length: positions to fill after the prompt.
        steps: passes at most (LLaDA's schedule: even_split(block_length, steps_per_block) tokens a
            step); with "ancestral", MDLM's T, which may exceed `length`: a step that would change
            nothing is skipped, no pass run or counted.
        prompt: int64 (T0,) or (B, T0), without <mask>; default: <bos>.
        rule: the unmasking rule, a name of RULES. A ranking rule ("confidence", "random",
            "margin", "entropy") commits the k best-scored masked positions of the block
            (commit_top_scores; ties: the leftmost). "ancestral" is MDLM's step: from t to s each
            masked position with probability (t - s) / t, the last step everything left.
        block_length: positions a block holds (semi-autoregressive decoding); default: one block.
        threshold: Fast-dLLM's tau, ranking rules only: also commit every masked position whose
            chosen token has probability >= tau, so passes adapt; `steps` is then a bound.
        remask: ReMDM's eta, the editor (unmasking.remdm_remask): before each pass every filled
            token of the block is re-masked with probability sigma_t, and the step commits as many
            more (the last step re-masks nothing).
        remask_schedule: "cap" (min(eta, s/(1-t))) or "rescale" (eta * min(1, s/(1-t))), ReMDM's;
            or "lowest-confidence", this course's stress test (unmasking.remdm_conf_remask), ranking
            rules only: after committing, re-mask round(eta * n) of the block's n older tokens, the
            least confident when committed, and commit as many more next step.
        temperature: 0 takes the argmax; above, tokens are drawn (float64) from the tempered
            softmax. A rule's confidence is always the untempered softmax's.
        batch_size: rows, each its own canvas.
        generator: the torch.Generator behind every draw, or None.
        return_trace: also return one dict per pass: the canvas after it, boolean (B, T) masks of
            the positions committed, remasked and revised (re-committed with another token), the
            confidence of every filled position (NaN where masked, +inf for the prompt), and the
            block and step.

    Returns:
        the canvas (B, T0 + length); with return_trace, (canvas, trace).
    """
    canvas, T0, steps, block_length, threshold, remask, temperature = _setup(
        model, length, steps, prompt, rule, block_length, threshold, remask, remask_schedule, temperature,
        batch_size, generator,
    )  # fmt: skip
    stored_conf = torch.full(canvas.shape, float("inf"), dtype=torch.float64, device=canvas.device)  # (B, T)
    last_token = torch.full_like(canvas, -1)  # (B, T) the token each position last held
    positions, n_blocks, ancestral = (
        torch.arange(canvas.size(1), device=canvas.device),
        length // block_length,
        not _ranks(rule),
    )
    steps_per_block, trace = steps // n_blocks, []
    for b in range(n_blocks):
        in_block = (positions >= T0 + b * block_length) & (positions < T0 + (b + 1) * block_length)  # (T,)
        schedule = even_split(block_length, steps_per_block)
        pending = torch.zeros(canvas.size(0), dtype=torch.long, device=canvas.device)  # stress test's re-masked
        for j in range(steps_per_block):
            masked = (canvas == LANG.mask_id) & in_block  # (B, T)
            if not masked.any():
                break  # threshold decoding can finish a block early
            last_step, t, s = j == steps_per_block - 1, 1 - j / steps_per_block, 1 - (j + 1) / steps_per_block
            remasked, commit = _moves_before_pass(
                canvas, masked, in_block, t, s, schedule[j], pending, remask, remask_schedule, ancestral, generator
            )
            if ancestral and not (commit.any() or remasked.any()):
                continue  # nothing would change: the pass is skipped, and not counted
            logits = masked_logits(model, canvas)  # (B, T, V) one forward pass
            probs = torch.softmax(logits.double(), dim=-1)  # (B, T, V)
            chosen = choose_tokens(logits, temperature, generator)  # (B, T)
            chosen_conf = probs.gather(-1, chosen[..., None]).squeeze(-1)  # (B, T) p(chosen token)
            if not ancestral:  # a ranking rule, with Fast-dLLM's threshold: one more per token re-masked
                scores = confidence_scores(probs, chosen, rule, generator)  # (B, T)
                k = schedule[j] + pending + remasked.sum(dim=1)  # (B,)
                commit = commit_top_scores(scores, masked, k, chosen_conf, threshold, last_step)
            revised = commit & (last_token >= 0) & (last_token != chosen)
            canvas, stored_conf = torch.where(commit, chosen, canvas), torch.where(commit, chosen_conf, stored_conf)
            last_token = torch.where(commit, chosen, last_token)
            if remask is not None and remask_schedule == "lowest-confidence" and not last_step:
                remasked = remdm_conf_remask(canvas, in_block & ~commit, stored_conf, remask)
                pending = remasked.sum(dim=1)
            canvas = canvas.masked_fill(remasked, LANG.mask_id)
            if return_trace:
                trace.append(_trace_step(canvas, commit, remasked, revised, stored_conf, b, j))
    return (canvas, trace) if return_trace else canvas
