"""One training loop for both model kinds, on freshly sampled toy-language documents.

    python -m helpers.train ar      # rebuild data/ar.pt   (causal, next-token loss)
    python -m helpers.train mdlm    # rebuild data/mdlm.pt (bidirectional, masked-diffusion ELBO)
    python -m helpers.train ar --d-model 32 --n-layer 1 --n-head 2 --steps 2000 --out data/draft.pt
                                    # the small drafter of notebook 06 (a few minutes on one core)

Both kinds share the architecture, the data stream and the budget (TrainConfig defaults), so
the comparison between them is fair. Every batch is new: the language is a generator, so
there is no fixed training set to overfit.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from helpers.common.validation import check_int
from helpers.decoding.checkpoints import save_checkpoint
from helpers.decoding.model import ModelConfig, Transformer
from helpers.decoding.train_config import KINDS, TrainConfig, check_kind
from helpers.language.toylang import LANG

__all__ = ["KINDS", "TrainConfig", "check_kind", "model_config", "train", "held_out_documents", "learning_rate"]

HELD_OUT_SEED = 10_000  # documents for evaluation come from a seed training never uses


def model_config(kind: str, doc_length: int = 33, **overrides) -> ModelConfig:
    """The course's tiny model: the same shape for both kinds, only `causal` differs."""
    check_kind(kind)
    check_int(doc_length, "doc_length (<bos> + at least one token)", minimum=2)
    return ModelConfig(vocab_size=len(LANG.vocab), max_len=doc_length, causal=(kind == "ar"), **overrides)


def ar_loss(model: Transformer, docs: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) over every position after <bos>."""
    logits = model(docs[:, :-1])  # (B, T-1, V)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), docs[:, 1:].reshape(-1))


def loss_fn(kind: str):
    if kind == "ar":
        return lambda model, docs, generator: ar_loss(model, docs)
    from helpers.diffusion.sampler import diffusion_loss

    return lambda model, docs, generator: diffusion_loss(model, docs, generator=generator)


def held_out_documents(n: int = 512, length: int = 33) -> torch.Tensor:
    return torch.from_numpy(LANG.sample_documents(n, length, seed=HELD_OUT_SEED))


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to cfg.lr over cfg.warmup steps, then cosine decay to cfg.lr * cfg.min_lr_ratio."""
    check_int(step, "step", minimum=0)
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def train(kind: str, cfg: TrainConfig | None = None, model: Transformer | None = None, progress: bool = True):
    """Train a fresh (or given) model. Returns (model, losses) with one loss (nats/token) per step."""
    check_kind(kind)
    if cfg is not None and not isinstance(cfg, TrainConfig):
        raise ValueError(f"cfg must be None or a TrainConfig, got {type(cfg).__name__}")
    if model is not None and not isinstance(model, Transformer):
        raise ValueError(f"model must be None or a helpers.decoding.model.Transformer, got {type(model).__name__}")
    cfg = cfg or TrainConfig()
    torch.manual_seed(cfg.seed)
    model = model or Transformer(model_config(kind, cfg.doc_length))
    if model.config.causal != (kind == "ar"):
        raise ValueError(f"kind {kind!r} needs causal={kind == 'ar'}, the model has causal={model.config.causal}")
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.99),
    )
    generator = torch.Generator().manual_seed(cfg.seed)
    compute_loss = loss_fn(kind)
    losses = []
    model.train()
    for step in tqdm(range(cfg.steps), desc=f"training {kind}", disable=not progress):
        docs = torch.from_numpy(LANG.sample_documents(cfg.batch_size, cfg.doc_length, seed=[cfg.seed, step]))
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, cfg)
        loss = compute_loss(model, docs, generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(loss.item())
    model.eval()
    return model, np.array(losses)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--steps", type=int, default=TrainConfig.steps)
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    parser.add_argument("--out", default=None, help="checkpoint path (default: data/<kind>.pt)")
    shape = ModelConfig()
    parser.add_argument("--d-model", type=int, default=shape.d_model, help="width of the residual stream")
    parser.add_argument("--n-layer", type=int, default=shape.n_layer, help="transformer blocks")
    parser.add_argument("--n-head", type=int, default=shape.n_head, help="attention heads")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)  # results are bitwise reproducible for a fixed thread count
    cfg = TrainConfig(steps=args.steps, seed=args.seed)
    command = "python -m helpers.train " + " ".join(argv if argv is not None else sys.argv[1:])
    started = time.perf_counter()
    sizes = dict(d_model=args.d_model, n_layer=args.n_layer, n_head=args.n_head)
    model = None  # the course's shape: train() builds it, as it built the shipped checkpoints
    if sizes != dict(d_model=shape.d_model, n_layer=shape.n_layer, n_head=shape.n_head):
        torch.manual_seed(cfg.seed)
        model = Transformer(model_config(args.kind, cfg.doc_length, **sizes))
    model, losses = train(args.kind, cfg, model)
    minutes = (time.perf_counter() - started) / 60
    path = save_checkpoint(model, args.kind, cfg, path=args.out, losses=losses, command=command)
    print(f"trained {args.kind} for {cfg.steps} steps in {minutes:.1f} min; final loss {losses[-100:].mean():.4f} nats")
    print(f"saved {path}")


if __name__ == "__main__":
    main()
