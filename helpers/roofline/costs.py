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

The model shapes these costs are computed from (ModelShape, MODEL_SHAPES, model_shape,
kv_bytes_per_token) are in helpers.roofline.shapes and re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.common.validation import check_fraction, check_int, check_positive
from helpers.roofline.hardware import Hardware, get_hardware
from helpers.roofline.shapes import MODEL_SHAPES, ModelShape, kv_bytes_per_token, model_shape, shape_from_config  # noqa: F401

# What published stacks reach, as fractions of the datasheet (data/published_decoding.csv; notebook 05 shows
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


def check_dtype(dtype: str) -> tuple[float, float, str]:
    """(bytes per weight, bytes per KV value, compute dtype) of a weight format in DTYPES."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def check_efficiency(value, name: str) -> float:
    """A fraction of the datasheet peak in (0, 1]."""
    return check_fraction(value, name)


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
    batch = check_int(batch, "batch", 1)
    tokens = check_int(tokens, "tokens", 1)
    context = check_int(context, "context", 0)
    bytes_per_param = check_positive(bytes_per_param, "bytes_per_param")
    bytes_per_kv = bytes_per_param if bytes_per_kv is None else check_positive(bytes_per_kv, "bytes_per_kv")
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
    bandwidth = check_positive(bandwidth, "bandwidth")
    peak_flops = check_positive(peak_flops, "peak_flops")
    weights = max(cost.weight_bytes / bandwidth, cost.weight_flops / peak_flops)
    attention = max(cost.kv_bytes / bandwidth, cost.attention_flops / peak_flops)
    return weights + attention


def mbu(cost: StepCost, measured_seconds: float, peak_bandwidth: float) -> float:
    """Model bandwidth utilisation: (weight + KV bytes) / measured time / peak bandwidth (0..1)."""
    if not isinstance(cost, StepCost):
        raise ValueError(f"cost must be a StepCost (from decode_step_cost / forward_pass_cost), got {cost!r}")
    seconds = check_positive(measured_seconds, "measured_seconds")
    return cost.total_bytes / seconds / check_positive(peak_bandwidth, "peak_bandwidth")


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
    batch = check_int(batch, "batch", 1)
    cached_positions = check_int(cached_positions, "cached_positions", 0)
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
