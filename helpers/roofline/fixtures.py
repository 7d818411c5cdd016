"""Models to measure: the course's Transformer with random weights, in the shapes the benchmarks time.

Timing does not depend on what the weights are, only on their shape, dtype and layout, so the
measurements of helpers.bench, helpers.bench.precision and helpers.hf_compare run on these:
- `random_model`: a Transformer of any ModelConfig, in the dtype the device runs models in
  (`model_dtype`) and the layout that device decodes with (`default_layout`), built directly on a GPU;
- `tiny_config`: the course's tiny shape with room for <bos> + N tokens;
- `bidirectional_twin`: the same weights in a bidirectional (masked-diffusion) model;
- `prefilled_cache`: a KV cache already holding some positions, and the token a step feeds.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from helpers.common.device import as_device
from helpers.common.validation import check_int
from helpers.decoding.model import LAYOUTS, ModelConfig, Transformer, default_layout
from helpers.language.toylang import LANG

MODEL_DTYPES = {"cpu": torch.float32, "cuda": torch.bfloat16, "mps": torch.float16}  # what models run in
TINY_TOKENS = 256  # N new tokens the tiny models generate by default


def model_dtype(device) -> torch.dtype:
    """The dtype the course models are timed in: fp32 on the CPU, bf16 on CUDA, fp16 on MPS."""
    return MODEL_DTYPES[as_device(device).type]


def model_device_dtype(model: Transformer) -> tuple[torch.device, torch.dtype]:
    """Where `model`'s weights are, and in which dtype."""
    p = model.tok_emb.weight
    return p.device, p.dtype


def _check_model(model, causal: bool = False) -> Transformer:
    if not isinstance(model, Transformer) or (causal and not model.config.causal):
        kind = "a causal " if causal else "a "
        raise ValueError(f"model must be {kind}helpers.decoding.model.Transformer, got {type(model).__name__}")
    return model


def random_model(config: ModelConfig, device=None, *, seed: int = 0, layout: str | None = None) -> Transformer:
    """A Transformer of `config` with random (GPT-2 style) weights on `device`, in model_dtype(device),
    in eval mode, in `layout` (None: default_layout(device)). Timing does not depend on what the
    weights are, only on their shape, dtype and layout.

    On the CPU the model is built as training builds it. On a GPU it is allocated directly on the
    device in its dtype and initialised there (no float32 copy on the host: a 1.8B model would
    need 7 GB of it), so its random values differ from the CPU's for the same seed."""
    device = as_device(device)
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a helpers.decoding.model.ModelConfig, got {type(config).__name__}")
    layout = default_layout(device) if layout is None else layout
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be None or one of {LAYOUTS}, got {layout!r}")
    torch.manual_seed(check_int(seed, "seed", 0))
    return _new_model(config, device, model_dtype(device)).eval().set_layout_(layout)


def _new_model(config: ModelConfig, device: torch.device, dtype: torch.dtype) -> Transformer:
    """Built as training builds it on the CPU; allocated and initialised on the device elsewhere."""
    if device.type == "cpu":
        return Transformer(config).to(dtype=dtype)
    return build_on_device(config, device, dtype)


def build_on_device(config: ModelConfig, device, dtype: torch.dtype) -> Transformer:
    """A Transformer allocated on `device` in `dtype` and initialised there (init_parameters_), via
    PyTorch's meta device: no weights are ever created on the host. Uses the device's RNG."""
    with torch.device("meta"):
        model = Transformer(config)  # shapes only, no memory
    model = model.to(dtype=dtype).to_empty(device=as_device(device))
    if config.tie_weights:  # to_empty gives every parameter its own storage: tie them again
        model.head.weight = model.tok_emb.weight
    return model.init_parameters_()


def tiny_config(n_tokens: int = TINY_TOKENS, causal: bool = True) -> ModelConfig:
    """The course's tiny model shape (helpers.train.model_config), long enough for <bos> + N tokens."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    return ModelConfig(vocab_size=len(LANG.vocab), max_len=n_tokens + 1, causal=causal)


def layout_of(model: Transformer) -> str:
    """ "decode" if the model's qkv weight is stored input-major (decode_layout_), else "row-major"."""
    return "row-major" if model.blocks[0].attn.qkv.weight.is_contiguous() else "decode"


def bidirectional_twin(model: Transformer) -> Transformer:
    """The same weights in a bidirectional (masked-diffusion) model: what a dLLM pass runs."""
    device, dtype = model_device_dtype(_check_model(model))
    twin = _new_model(replace(model.config, causal=False), device, dtype)
    twin.load_state_dict(model.state_dict())
    return twin.eval().set_layout_(layout_of(model))


def prefilled_cache(model: Transformer, context: int, batch: int, seed: int):
    """A KV cache holding `context` positions of random tokens (one prefill pass), and the
    (batch, 1) token the timed steps feed. model: a causal Transformer with room for context + 1."""
    device, _ = model_device_dtype(_check_model(model, causal=True))
    context, batch = check_int(context, "context", 0), check_int(batch, "batch", 1)
    if context + 1 > model.config.max_len:
        raise ValueError(f"context ({context}) + 1 new token must fit in max_len ({model.config.max_len})")
    gen = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    cache = model.new_cache(batch)
    if context:
        prompt = torch.randint(0, model.config.vocab_size, (batch, context), generator=gen).to(device)  # (B, S)
        model(prompt, cache=cache, last_only=True)
    token = torch.randint(0, model.config.vocab_size, (batch, 1), generator=gen).to(device)  # (B, 1)
    return cache, token
