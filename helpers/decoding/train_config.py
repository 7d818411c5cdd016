"""What training and the checkpoints share: the two model kinds and the training budget.

helpers.train (the loop) and helpers.decoding.checkpoints (saving and loading) both import from here, so
neither needs the other at import time. Both names stay importable from helpers.train.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.common.validation import check_fraction, check_int, check_number, check_positive

KINDS = ("ar", "mdlm")  # ar: causal, next-token loss; mdlm: bidirectional, masked-diffusion ELBO


def check_kind(kind: str) -> None:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


@dataclass
class TrainConfig:
    steps: int = 6000  # optimizer steps
    batch_size: int = 128  # documents per step (4224 tokens)
    doc_length: int = 33  # canvas length: <bos> + 32 tokens (= ModelConfig.max_len)
    lr: float = 2e-3  # peak learning rate, after linear warm-up
    warmup: int = 200  # warm-up steps
    min_lr_ratio: float = 0.05  # cosine decay ends at lr * min_lr_ratio
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    seed: int = 0  # model init, data stream and masking noise all derive from it

    def __post_init__(self):
        check_int(self.steps, "TrainConfig.steps", minimum=1)
        check_int(self.batch_size, "TrainConfig.batch_size", minimum=1)
        check_int(self.doc_length, "TrainConfig.doc_length (<bos> + at least one token)", minimum=2)
        check_positive(self.lr, "TrainConfig.lr")
        check_int(self.warmup, "TrainConfig.warmup", minimum=0)
        check_fraction(self.min_lr_ratio, "TrainConfig.min_lr_ratio", allow_zero=True)
        check_number(self.weight_decay, "TrainConfig.weight_decay", minimum=0)
        check_positive(self.grad_clip, "TrainConfig.grad_clip")
        check_int(self.seed, "TrainConfig.seed", minimum=0)
