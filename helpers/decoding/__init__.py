"""The typewriter: the transformer, causal or bidirectional, its KV cache and the pass counter
(model); autoregressive decoding, naive and cached, with its sampling controls (ar); the shipped
checkpoints, checked against their sha256 (checkpoints), and their training settings (train_config).

What the notebooks use is re-exported here."""

from helpers.decoding.ar import filter_logits, generate, top_p_filter
from helpers.decoding.checkpoints import DATA_DIR, load_pretrained, training_losses
from helpers.decoding.model import ModelConfig, Transformer, count_passes, gpt2_small_config, gpu_wide_config, pad_vocab

__all__ = [
    "DATA_DIR",
    "ModelConfig",
    "Transformer",
    "count_passes",
    "filter_logits",
    "generate",
    "gpt2_small_config",
    "gpu_wide_config",
    "load_pretrained",
    "pad_vocab",
    "top_p_filter",
    "training_losses",
]
