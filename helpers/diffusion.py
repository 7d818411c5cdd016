"""Masked diffusion: the training objective (and, below, the samplers).

Forward process: each token of a clean document x0 is replaced by <mask> with probability t.
The model sees the partly masked canvas x_t (no time input) and predicts the clean token at
every masked position. With the linear schedule the continuous-time ELBO (MDLM, LLaDA) is

    -log p(x0) <= E_{t ~ U(0,1)} [ (1/t) * sum over masked positions of -log p(x0_i | x_t) ]

The 1/t weight makes it a bound: at small t few positions are masked and each one counts a lot.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from helpers.model import Transformer
from helpers.toylang import LANG


def _check_model(model: Transformer) -> None:
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.model.Transformer, got {type(model).__name__}")
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
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    B, T = x0.shape
    u = torch.rand(1, generator=generator, device=x0.device)
    t = eps + (1 - eps) * ((u + torch.arange(B, device=x0.device) / B) % 1)  # (B,)
    return masked_nll(model, x0, t, generator).sum() / (B * (T - 1))


@torch.no_grad()
def nelbo(model: Transformer, x0: torch.Tensor, draws: int = 128, generator=None) -> float:
    """The ELBO bound on -log p(x0), nats per token, averaged over documents: `draws` masking
    rates per document, stratified over (0, 1] so the estimate has little variance."""
    _check_model(model)
    _check_docs(x0)
    if not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive int, got {draws!r}")
    B, T = x0.shape
    total = 0.0
    for j in range(draws):
        u = torch.rand(B, generator=generator, device=x0.device)
        t = ((j + u) / draws).clamp_min(1e-6)  # (B,) one stratum per draw
        total += masked_nll(model, x0, t, generator).sum().item()
    return total / (draws * B * (T - 1))
