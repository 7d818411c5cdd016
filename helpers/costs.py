"""What a forward pass costs: bytes moved and FLOPs done, for the course model and real LLMs.

Units: plain SI (bytes, FLOPs, seconds, bytes/s, FLOP/s).

What one forward pass costs (`forward_pass_cost`, `StepCost`), for B rows of T new positions
each, with S positions already in a KV cache:
- weight bytes = the parameters the pass actually reads x bytes_per_param
  (`ModelShape.params_read`): every matrix, norm and bias, and the V x d output head, in full,
  but of a table that is only indexed (an untied token embedding, a learned positional table)
  just the B x T rows looked up. A tied token embedding is read in full: the head multiplies
  by all of it. This is gpt-fast's accounting (it leaves nn.Embedding out of its model size):
  Llama-2-7B in bf16 reads 13.21 GB per step, so 146.7 tok/s is 1938 GB/s, as it reports.
  "Model size" (`num_params() x bytes`: 13.48 GB) is larger by the lookup tables: 0.6 % for
  GPT-2 small, 1.9 % for Llama-2-7B, 6.5 % for Llama-3-8B, 0 for the tied Llama-3.2-1B.
- KV bytes = B x S x kv_bytes_per_token(model), the cache read by attention;
  kv_bytes_per_token = 2 (K and V) x layers x kv_heads x head_dim x bytes_per_kv.
  The pass's own new keys/values (B x T x kv_bytes_per_token, written once) and all other
  activations are not counted: for a decode step they are 1/S of the cache read or less.
- weight FLOPs = 2 x (parameters used in matmuls) x B x T: one multiply-add per weight per
  position. Matmul parameters = the attention and MLP matrices of every layer plus the V x d
  output head; embedding lookups, norms and biases do (almost) no arithmetic.
- attention FLOPs = 4 x layers x B x T x (S + T) x (n_head x head_dim): q.k and p.v, one
  multiply-add each, for every new position against every key it sees. Like the course model,
  this counts the full T x (S + T) score matrix even when a causal mask discards part of it.
  For a decode step (T = 1) this is 4 x layers x B x (S + 1) x d_model ~ the textbook 4 L S d.

Predicted time (`predicted_time`): the weight matmuls and attention run one after another,
each bounded by its own roof:
    t = max(weight_bytes / BW, weight_flops / F) + max(kv_bytes / BW, attention_flops / F)
For a decode step this is the form in JAX's "How to Scale Your Model" (inference chapter),
B S KV / BW + max(2 B P / F, P_bytes / BW), with attention FLOPs kept; with no KV cache and
no attention it is the plain roofline max(bytes / BW, FLOPs / F).

Ceiling and typical. Fed with datasheet peaks, that time is a ceiling no real code reaches.
`effective_roofs` scales the peaks by an efficiency: 1.0 is the ceiling ("100 % of datasheet"),
the TYPICAL_* constants below are what published decoders reach (data/published_decoding.csv).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from helpers.hardware import Hardware, get_hardware
from helpers.model import ModelConfig

# What published stacks reach, as fractions of the datasheet (data/published_decoding.csv; notebook 04 shows
# every row next to its projection):
# - bandwidth: batch-1 AR decoding in tuned stacks reaches 46-69 % of datasheet bandwidth: gpt-fast bf16
#   (torch.compile + CUDA graphs) 68 % and 69 % on an A100 80GB, 58 % on an H100; SGLang 46 % (H100),
#   67 % (A100), 49 % (B200). Their geometric mean is 59 %: 60 %. (Databricks reports 55-60 % with
#   TensorRT-LLM, llama.cpp 65-71 % on RTX 3090/4090; plain Hugging Face generate reaches about 25 %.)
# - compute: a pass over a long canvas is compute-bound. LLaDA's reference sampler (every pass over
#   prompt + canvas, no cache) reaches 44 % of the A100's dense bf16 peak in Fast-dLLM's Figure 1(c):
#   45 %. (Large cuBLAS matmuls reach 60-80 %; these passes also pay for attention and the 126k-word head.)
TYPICAL_BANDWIDTH_EFFICIENCY = 0.60
TYPICAL_COMPUTE_EFFICIENCY = 0.45
TYPICAL = dict(bandwidth_efficiency=TYPICAL_BANDWIDTH_EFFICIENCY, compute_efficiency=TYPICAL_COMPUTE_EFFICIENCY)
CEILING = dict(bandwidth_efficiency=1.0, compute_efficiency=1.0)  # 100 % of the datasheet

# Weight formats the projections accept: bytes per weight, bytes per KV value, and the dtype whose
# peak FLOP/s the arithmetic runs at (weight-only quantisation dequantises to bf16 before the matmul).
DTYPES = {
    "fp32": (4.0, 4.0, "fp32"),
    "bf16": (2.0, 2.0, "bf16"),
    "int8": (1.0, 2.0, "bf16"),  # weight-only int8, per-channel scales (negligible bytes)
    "int4": (0.625, 2.0, "bf16"),  # weight-only int4, groups of 32 with a bf16 scale and zero: 0.5 + 4/32 bytes
}


# ----------------------------------------------------------------------------- checks


def _check_positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_dtype(dtype: str) -> tuple[float, float, str]:
    """(bytes per weight, bytes per KV value, compute dtype) of a weight format in DTYPES."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def check_efficiency(value, name: str) -> float:
    """A fraction of the datasheet in (0, 1]."""
    value = _check_positive(value, name)
    if value > 1:
        raise ValueError(f"{name} must be a fraction in (0, 1] of the datasheet peak, got {value!r}")
    return value


# ----------------------------------------------------------------------------- model shapes


@dataclass(frozen=True)
class ModelShape:
    """The sizes that decide what a forward pass reads and computes. Covers the course model
    (GPT-2 style) and Llama-style models (grouped-query attention, gated MLP, no biases)."""

    name: str
    n_layer: int
    d_model: int
    n_head: int  # query heads
    n_kv_head: int  # heads with their own keys/values: n_head without GQA, fewer with it
    d_ff: int  # MLP hidden width
    vocab_size: int
    gated_mlp: bool = False  # SwiGLU (Llama): three d_model x d_ff matrices instead of two
    tie_weights: bool = True  # output head shares the token embedding
    bias: bool = False  # biases in linear layers and norms (GPT-2, the course model)
    max_positions: int = 0  # rows of a learned positional table (GPT-2); 0 with rotary (Llama)
    head_dim: int = 0  # 0: d_model // n_head
    source: str = ""  # where the numbers come from

    def __post_init__(self):
        for name in ("n_layer", "d_model", "n_head", "n_kv_head", "d_ff", "vocab_size"):
            _check_int(getattr(self, name), f"ModelShape.{name}", 1)
        _check_int(self.max_positions, "ModelShape.max_positions", 0)
        _check_int(self.head_dim, "ModelShape.head_dim", 0)
        if self.n_head % self.n_kv_head:
            raise ValueError(f"n_head ({self.n_head}) must be a multiple of n_kv_head ({self.n_kv_head})")
        if self.head_dim == 0:
            if self.d_model % self.n_head:
                raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
            object.__setattr__(self, "head_dim", self.d_model // self.n_head)

    @property
    def q_dim(self) -> int:
        return self.n_head * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_head * self.head_dim

    def _layer_matmul_params(self) -> int:
        attention = self.d_model * (self.q_dim + 2 * self.kv_dim) + self.q_dim * self.d_model  # qkv + output
        mlp = (3 if self.gated_mlp else 2) * self.d_model * self.d_ff
        return attention + mlp

    def _layer_other_params(self) -> int:
        norms = 2 * self.d_model * (2 if self.bias else 1)  # two norms: weight (+ bias)
        if not self.bias:
            return norms
        mlp_in = (2 if self.gated_mlp else 1) * self.d_ff
        return norms + (self.q_dim + 2 * self.kv_dim) + self.d_model + mlp_in + self.d_model

    def matmul_params(self) -> int:
        """Parameters used as matmul operands in every pass: all layers' matrices + the V x d head."""
        return self.n_layer * self._layer_matmul_params() + self.vocab_size * self.d_model

    def lookup_params(self) -> int:
        """Parameters in tables that are only indexed: an untied token embedding and a positional table."""
        untied_embedding = 0 if self.tie_weights else self.vocab_size * self.d_model
        return untied_embedding + self.max_positions * self.d_model

    def num_params(self) -> int:
        """All parameters, tied weights counted once (matches Transformer.num_params())."""
        final_norm = self.d_model * (2 if self.bias else 1)
        return self.matmul_params() + self.lookup_params() + self.n_layer * self._layer_other_params() + final_norm

    def params_read(self, positions: int = 1) -> int:
        """Parameters a pass over `positions` (B x T) positions reads: all of them, except that
        of each lookup-only table it reads just the rows it indexes (at most the whole table)."""
        positions = _check_int(positions, "positions", 1)
        rows = 0 if self.tie_weights else min(positions, self.vocab_size)
        if self.max_positions:
            rows += min(positions, self.max_positions)
        return self.num_params() - self.lookup_params() + rows * self.d_model


def shape_from_config(config: ModelConfig, name: str = "course model") -> ModelShape:
    """The ModelShape of a helpers.model.ModelConfig (GPT-2 style: MHA, LayerNorm, GELU MLP)."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a helpers.model.ModelConfig, got {type(config).__name__}")
    return ModelShape(
        name=name,
        n_layer=config.n_layer,
        d_model=config.d_model,
        n_head=config.n_head,
        n_kv_head=config.n_head,
        d_ff=config.mlp_ratio * config.d_model,
        vocab_size=config.vocab_size,
        tie_weights=config.tie_weights,
        bias=config.bias,
        max_positions=config.max_len,
    )


_LLAMA = dict(gated_mlp=True, bias=False, max_positions=0)  # RMSNorm, SwiGLU, rotary positions, no biases
MODEL_SHAPES = {
    s.name: s
    for s in [
        ModelShape(
            name="gpt2-small",
            n_layer=12,
            d_model=768,
            n_head=12,
            n_kv_head=12,
            d_ff=3072,
            vocab_size=50257,
            bias=True,
            max_positions=1024,
            source="GPT-2 small (Radford et al. 2019), 124M parameters; = helpers.model.gpt2_small_config()",
        ),
        ModelShape(
            name="Llama-3.2-1B",
            n_layer=16,
            d_model=2048,
            n_head=32,
            n_kv_head=8,
            d_ff=8192,
            vocab_size=128256,
            tie_weights=True,
            **_LLAMA,
            source="meta-llama/Llama-3.2-1B config.json; 1.24B parameters",
        ),
        ModelShape(
            name="Llama-3-8B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=8,
            d_ff=14336,
            vocab_size=128256,
            tie_weights=False,
            **_LLAMA,
            source="meta-llama/Meta-Llama-3-8B config.json; 8.03B parameters",
        ),
        ModelShape(
            name="Llama-2-7B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=32,
            d_ff=11008,
            vocab_size=32000,
            tie_weights=False,
            **_LLAMA,
            source="Touvron et al. 2023, meta-llama/Llama-2-7b-hf config.json; 6.74B parameters, no GQA",
        ),
        ModelShape(
            name="Qwen2.5-7B",
            n_layer=28,
            d_model=3584,
            n_head=28,
            n_kv_head=4,
            d_ff=18944,
            vocab_size=152064,
            tie_weights=False,
            **_LLAMA,
            source="Qwen/Qwen2.5-7B-Instruct config.json; 7.62B parameters (its qkv biases, 0.1M, left out)",
        ),
        ModelShape(
            name="LLaDA-8B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=32,
            d_ff=12288,
            vocab_size=126464,
            tie_weights=False,
            **_LLAMA,
            source="GSAI-ML/LLaDA-8B-Instruct config.json (Nie et al. 2025): 8.02B parameters, full MHA, no GQA",
        ),
    ]
}


def model_shape(model) -> ModelShape:
    """A ModelShape from a ModelShape, a helpers.model.ModelConfig or a name in MODEL_SHAPES."""
    if isinstance(model, ModelShape):
        return model
    if isinstance(model, ModelConfig):
        return shape_from_config(model)
    if isinstance(model, str) and model in MODEL_SHAPES:
        return MODEL_SHAPES[model]
    raise ValueError(f"model must be a ModelShape, a ModelConfig or one of {sorted(MODEL_SHAPES)}, got {model!r}")


def kv_bytes_per_token(model, bytes_per_kv: float = 4) -> float:
    """KV-cache bytes one position adds: 2 (K and V) x layers x kv_heads x head_dim x bytes."""
    shape = model_shape(model)
    return 2.0 * shape.n_layer * shape.n_kv_head * shape.head_dim * _check_positive(bytes_per_kv, "bytes_per_kv")


# ----------------------------------------------------------------------------- cost of a pass


@dataclass(frozen=True)
class StepCost:
    """Bytes moved and FLOPs done by one forward pass (see the module docstring for what counts)."""

    weight_bytes: float  # parameters read: ModelShape.params_read(B x T) x bytes_per_param
    kv_bytes: float  # the KV cache read by attention: B x S x kv_bytes_per_token
    weight_flops: float  # 2 x matmul params x B x T
    attention_flops: float  # 4 x layers x B x T x (S + T) x n_head x head_dim
    batch: int = 1  # B: rows
    tokens: int = 1  # T: new positions per row in this pass
    context: int = 0  # S: positions per row already in the KV cache

    @property
    def total_bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def flops(self) -> float:
        return self.weight_flops + self.attention_flops

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved. While the weights dominate both, about 2 x B x T / bytes_per_param:
        about B x T in bf16, B x T / 2 in fp32."""
        return self.flops / self.total_bytes


def forward_pass_cost(
    model,
    batch: int = 1,
    tokens: int = 1,
    context: int = 0,
    bytes_per_param: float = 4,
    bytes_per_kv: float | None = None,
) -> StepCost:
    """Cost of one pass over `tokens` new positions per row for `batch` rows, attending also to
    `context` cached positions. Without a cache (context = 0) this is a prefill, a training
    forward pass, or a diffusion step over a canvas of `tokens` positions: the weights are read
    once and the FLOPs grow with tokens, so the intensity grows about linearly with tokens.
    bytes_per_kv defaults to bytes_per_param."""
    shape = model_shape(model)
    batch = _check_int(batch, "batch", 1)
    tokens = _check_int(tokens, "tokens", 1)
    context = _check_int(context, "context", 0)
    bytes_per_param = _check_positive(bytes_per_param, "bytes_per_param")
    bytes_per_kv = bytes_per_param if bytes_per_kv is None else _check_positive(bytes_per_kv, "bytes_per_kv")
    positions = batch * tokens
    return StepCost(
        weight_bytes=shape.params_read(positions) * bytes_per_param,
        kv_bytes=batch * context * kv_bytes_per_token(shape, bytes_per_kv),
        weight_flops=2.0 * shape.matmul_params() * positions,
        attention_flops=4.0 * shape.n_layer * positions * (context + tokens) * shape.q_dim,
        batch=batch,
        tokens=tokens,
        context=context,
    )


def decode_step_cost(
    model, batch: int = 1, context: int = 0, bytes_per_param: float = 4, bytes_per_kv: float | None = None
) -> StepCost:
    """Cost of one autoregressive decode step: one new position per row, `context` positions
    already in the KV cache. Reads every weight to produce B tokens."""
    return forward_pass_cost(model, batch, 1, context, bytes_per_param, bytes_per_kv)


def predicted_time(cost: StepCost, bandwidth: float, peak_flops: float) -> float:
    """Roofline time in seconds, weight matmuls and attention each bounded by their own roof:
    max(weight_bytes / BW, weight_flops / F) + max(kv_bytes / BW, attention_flops / F)."""
    if not isinstance(cost, StepCost):
        raise ValueError(f"cost must be a StepCost (from decode_step_cost / forward_pass_cost), got {cost!r}")
    bandwidth = _check_positive(bandwidth, "bandwidth")
    peak_flops = _check_positive(peak_flops, "peak_flops")
    weights = max(cost.weight_bytes / bandwidth, cost.weight_flops / peak_flops)
    attention = max(cost.kv_bytes / bandwidth, cost.attention_flops / peak_flops)
    return weights + attention


def mbu(cost: StepCost, measured_seconds: float, peak_bandwidth: float) -> float:
    """Model bandwidth utilisation: (weight + KV bytes) / measured time / peak bandwidth (0..1)."""
    if not isinstance(cost, StepCost):
        raise ValueError(f"cost must be a StepCost (from decode_step_cost / forward_pass_cost), got {cost!r}")
    seconds = _check_positive(measured_seconds, "measured_seconds")
    return cost.total_bytes / seconds / _check_positive(peak_bandwidth, "peak_bandwidth")


# ----------------------------------------------------------------------------- ceiling and typical


def effective_roofs(
    hardware,
    dtype: str = "bf16",
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> tuple[float, float]:
    """(bytes/s, FLOP/s) that a projection on `hardware` uses: the datasheet peaks for the
    weight format's compute dtype, each times its efficiency (1.0 and 1.0: the ceiling)."""
    hw = get_hardware(hardware)
    compute_dtype = check_dtype(dtype)[2]
    bandwidth_efficiency = check_efficiency(bandwidth_efficiency, "bandwidth_efficiency")
    compute_efficiency = check_efficiency(compute_efficiency, "compute_efficiency")
    return hw.bandwidth * bandwidth_efficiency, hw.peak_flops(compute_dtype) * compute_efficiency


def efficiency_label(
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> str:
    """How a projected number was made: 'ceiling (100 % of datasheet)' or 'typical (60 % of
    bandwidth, 45 % of FLOP/s)'."""
    bw = check_efficiency(bandwidth_efficiency, "bandwidth_efficiency")
    c = check_efficiency(compute_efficiency, "compute_efficiency")
    if bw == 1 and c == 1:
        return "ceiling (100 % of datasheet)"
    kind = "typical" if (bw, c) == (TYPICAL_BANDWIDTH_EFFICIENCY, TYPICAL_COMPUTE_EFFICIENCY) else "assumed"
    return f"{kind} ({100 * bw:.0f} % of bandwidth, {100 * c:.0f} % of FLOP/s)"


# ----------------------------------------------------------------------------- does it fit?


def memory_needed(model, dtype: str = "bf16", *, batch: int = 1, cached_positions: int = 0) -> float:
    """Bytes a decoder holds on the device: every weight in `dtype` plus a KV cache of
    `cached_positions` per row (0 for a decoder without one). Activations are not counted."""
    shape = model_shape(model)
    weight_bytes, kv_bytes, _ = check_dtype(dtype)
    batch = _check_int(batch, "batch", 1)
    cached_positions = _check_int(cached_positions, "cached_positions", 0)
    return shape.num_params() * weight_bytes + batch * cached_positions * kv_bytes_per_token(shape, kv_bytes)


def check_fits(model, hardware: Hardware | str, dtype: str = "bf16", *, batch: int = 1, cached_positions: int = 0):
    """ValueError, saying by how much, if the weights and KV cache do not fit in the device's memory."""
    hw = get_hardware(hardware)
    need = memory_needed(model, dtype, batch=batch, cached_positions=cached_positions)
    if hw.memory_bytes is not None and need > hw.memory_bytes:
        raise ValueError(
            f"{model_shape(model).name} in {dtype} does not fit on {hw.device}: it needs {need / 1e9:.1f} GB "
            f"(weights + KV cache of {cached_positions} positions x batch {batch}), the device has {hw.memory_gb:g} GB"
        )
