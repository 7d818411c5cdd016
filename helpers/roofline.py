"""The roofline model, and what it predicts for autoregressive and diffusion decoding.

Units: plain SI everywhere in this module (bytes, FLOPs, seconds, bytes/s, FLOP/s). Only the
hardware table keeps the vendors' GB/s and TFLOPS in its columns; `Hardware.bandwidth` and
`Hardware.peak_flops()` convert.

The roofline (Williams, Waterman & Patterson, CACM 2009): a kernel that does F FLOPs while
moving Q bytes has operational intensity I = F / Q and can run at most at
min(peak FLOP/s, bandwidth x I). Below the ridge point I* = peak / bandwidth it is
memory-bound; above it, compute-bound.

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
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.model import ModelConfig
from helpers.plotting import ACCENT_COLOR, TRUTH_COLOR

HARDWARE_CSV = Path(__file__).resolve().parent.parent / "data" / "hardware.csv"
DTYPE_BYTES = {"bf16": 2, "fp32": 4}  # dtype names the projections accept -> bytes per value


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


# ----------------------------------------------------------------------------- the roofline


def attainable(intensity, peak_flops: float, bandwidth: float):
    """Roofline: min(peak_flops, bandwidth x intensity) in FLOP/s. intensity in FLOP/byte,
    a number or an array (the answer has the same shape)."""
    peak_flops = _check_positive(peak_flops, "peak_flops")
    bandwidth = _check_positive(bandwidth, "bandwidth")
    values = np.asarray(intensity, dtype=float)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("intensity must be finite and >= 0 (FLOP per byte)")
    result = np.minimum(peak_flops, bandwidth * values)
    return float(result) if result.ndim == 0 else result


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Intensity (FLOP/byte) where the bandwidth roof meets the compute roof: peak / bandwidth."""
    return _check_positive(peak_flops, "peak_flops") / _check_positive(bandwidth, "bandwidth")


def _unpack_point(point):
    if not isinstance(point, tuple | list) or len(point) not in (2, 3):
        raise ValueError(f"each point must be (intensity, flops) or (intensity, flops, label), got {point!r}")
    intensity = _check_positive(point[0], "a point's intensity")
    flops = _check_positive(point[1], "a point's FLOP/s")
    return intensity, flops, (point[2] if len(point) == 3 else None)


def _short(x: float) -> str:
    """Three significant figures, no exponent: 3350, 989, 80.5, 4.12."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _flops_text(flops: float) -> str:
    return f"{_short(flops / 1e12)} TFLOP/s" if flops >= 1e12 else f"{_short(flops / 1e9)} GFLOP/s"


def plot_roofline(
    ax,
    peak_flops: float,
    bandwidth: float,
    points=(),
    label: str | None = None,
    color: str = TRUTH_COLOR,
    point_color: str = ACCENT_COLOR,
    intensity_range: tuple[float, float] | None = None,
    equal_decades: bool = True,
):
    """Draw a roofline on log-log axes: the bandwidth roof (slope 1: a 45 degree line when both
    axes span the same decades), the flat compute roof, the ridge point, and measured points.

    points: (intensity FLOP/byte, achieved FLOP/s) or (intensity, FLOP/s, label) tuples.
    intensity_range: (lowest, highest) intensity on the x axis; default ridge / 100 to ridge x 100,
    widened to include every point. equal_decades: give a decade the same length on both axes,
    so the bandwidth roof is drawn at 45 degrees (turn off to fill a wide axes). Returns ax.
    """
    ridge = ridge_point(peak_flops, bandwidth)
    unpacked = [_unpack_point(p) for p in points]
    if intensity_range is None:
        xs = [ridge / 100, ridge * 100] + [i for i, _, _ in unpacked]
        intensity_range = (min(xs) / 2, max(xs) * 2)
    lo, hi = intensity_range
    if not (_check_positive(lo, "intensity_range[0]") < _check_positive(hi, "intensity_range[1]")):
        raise ValueError(f"intensity_range must be (low, high) with 0 < low < high, got {intensity_range!r}")
    if label is None:
        label = f"roof: {_short(bandwidth / 1e9)} GB/s, {_flops_text(peak_flops)}"
    corners_x = [lo, ridge, hi] if lo < ridge < hi else [lo, hi]
    ax.plot(corners_x, attainable(np.array(corners_x), peak_flops, bandwidth), color=color, lw=2, label=label)
    if lo < ridge < hi:
        ax.axvline(ridge, color=color, ls=":", lw=1)
        ax.annotate(f"ridge {_short(ridge)} FLOP/B", (ridge, peak_flops), xytext=(4, 5), textcoords="offset points")
    for intensity, flops, name in unpacked:
        ax.plot([intensity], [flops], "o", color=point_color)
        if name:
            ax.annotate(str(name), (intensity, flops), xytext=(5, 4), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    if equal_decades:  # one decade equally long on both axes: the bandwidth roof rises at 45 degrees
        ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("operational intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    return ax


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
            name="LLaDA-8B",
            n_layer=32,
            d_model=4096,
            n_head=32,
            n_kv_head=32,
            d_ff=12288,
            vocab_size=126464,
            tie_weights=False,
            **_LLAMA,
            source="Nie et al. 2025 (LLaDA), architecture table; approximate: 8.02B parameters, no GQA",
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


# ----------------------------------------------------------------------------- hardware


def _optional_float(text: str) -> float | None:
    return float(text) if text.strip() else None


@dataclass(frozen=True)
class Hardware:
    """One row of data/hardware.csv: vendor peak numbers (dense, no sparsity)."""

    device: str
    bandwidth_gb_s: float  # peak memory bandwidth, GB/s (1e9 bytes/s)
    bf16_tflops_dense: float | None = None  # dense BF16 tensor TFLOPS; None if not published
    fp32_tflops: float | None = None  # FP32 TFLOPS (non-tensor); None if not published
    source: str = ""

    @property
    def bandwidth(self) -> float:
        """Peak bandwidth in bytes/s."""
        return self.bandwidth_gb_s * 1e9

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s for dtype 'bf16' or 'fp32'; ValueError if the vendor publishes none."""
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype must be one of {sorted(DTYPE_BYTES)}, got {dtype!r}")
        tflops = self.bf16_tflops_dense if dtype == "bf16" else self.fp32_tflops
        if tflops is None:
            raise ValueError(
                f"no published {dtype} peak for {self.device}; use dataclasses.replace(hw, ...) to supply one"
            )
        return tflops * 1e12

    def ridge_point(self, dtype: str = "bf16") -> float:
        return ridge_point(self.peak_flops(dtype), self.bandwidth)


def load_hardware_table(path: str | Path | None = None) -> dict[str, Hardware]:
    """data/hardware.csv as {device name: Hardware}, in file order."""
    path = Path(HARDWARE_CSV if path is None else path)
    if not path.is_file():
        raise ValueError(f"hardware table not found at {path}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    table = {}
    for row in rows:
        hw = Hardware(
            device=row["device"],
            bandwidth_gb_s=float(row["bandwidth_gb_s"]),
            bf16_tflops_dense=_optional_float(row["bf16_tflops_dense"]),
            fp32_tflops=_optional_float(row["fp32_tflops"]),
            source=row["source"],
        )
        table[hw.device] = hw
    return table


def get_hardware(hardware) -> Hardware:
    """A Hardware from a Hardware or a device name in data/hardware.csv."""
    if isinstance(hardware, Hardware):
        return hardware
    table = load_hardware_table()
    if isinstance(hardware, str) and hardware in table:
        return table[hardware]
    raise ValueError(f"hardware must be a Hardware or one of {list(table)}, got {hardware!r}")


# ----------------------------------------------------------------------------- projections


def _check_dtype(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {sorted(DTYPE_BYTES)}, got {dtype!r}")
    return DTYPE_BYTES[dtype]


def ar_pass_costs(n_tokens: int, model, *, prompt: int = 1, batch: int = 1, dtype: str = "bf16") -> list[StepCost]:
    """The N sequential passes of KV-cached AR generation of N tokens after a prompt of P tokens
    (as helpers.ar.generate runs them): one prefill pass over the P prompt tokens, which yields
    the first new token, then N - 1 decode steps at contexts P, P + 1, ..., P + N - 2."""
    n_tokens = _check_int(n_tokens, "n_tokens", 1)
    prompt = _check_int(prompt, "prompt", 1)
    nbytes = _check_dtype(dtype)
    costs = [forward_pass_cost(model, batch, prompt, 0, nbytes)]
    costs += [decode_step_cost(model, batch, prompt + i, nbytes) for i in range(n_tokens - 1)]
    return costs


def _block_passes(prompt: int, n_tokens: int, steps: int, block_length: int, cache: str):
    """(tokens, context) of each pass of blockwise diffusion decoding with a Fast-dLLM-style cache."""
    if n_tokens % block_length:
        raise ValueError(f"n_tokens ({n_tokens}) must be a multiple of block_length ({block_length})")
    n_blocks = n_tokens // block_length
    if steps % n_blocks:
        raise ValueError(f"steps ({steps}) must be a multiple of the number of blocks ({n_blocks})")
    canvas = prompt + n_tokens
    passes = []
    for b in range(n_blocks):
        prefix = prompt + b * block_length  # committed positions before this block
        passes.append((canvas, 0))  # first step of the block: full pass, refreshes the cache
        if cache == "prefix":  # the block and everything after it, attending to the cached prefix
            passes += [(canvas - prefix, prefix)] * (steps // n_blocks - 1)
        else:  # "dual": the block alone, attending to cached prefix and suffix
            passes += [(block_length, canvas - block_length)] * (steps // n_blocks - 1)
    return passes


def dllm_pass_costs(
    n_tokens: int,
    steps: int,
    model,
    *,
    prompt: int = 0,
    block_length: int | None = None,
    cache: str | None = None,
    batch: int = 1,
    dtype: str = "bf16",
) -> list[StepCost]:
    """The K passes of masked-diffusion decoding of N tokens after a prompt of P tokens.

    cache None (LLaDA): every pass runs the whole canvas of P + N positions, no KV cache; blocks
    change the order tokens are committed in, not the cost, so block_length is not needed.
    cache "prefix" or "dual" (Fast-dLLM, Wu et al. 2025): the canvas is decoded block by block
    (block_length tokens, steps split evenly over blocks). The first step of each block is a
    full pass that refreshes the approximate KV cache; the others run over the current block and
    everything after it ("prefix": attends to the cached prefix) or over the current block only
    ("dual": attends to the cached prefix and suffix).
    """
    n_tokens = _check_int(n_tokens, "n_tokens", 1)
    steps = _check_int(steps, "steps", 1)
    prompt = _check_int(prompt, "prompt", 0)
    nbytes = _check_dtype(dtype)
    if cache not in (None, "prefix", "dual"):
        raise ValueError(f"cache must be None, 'prefix' or 'dual', got {cache!r}")
    if block_length is not None:
        block_length = _check_int(block_length, "block_length", 1)
    if cache is None:
        passes = [(prompt + n_tokens, 0)] * steps
    elif block_length is None:
        raise ValueError(f"cache={cache!r} decodes block by block: give block_length")
    else:
        passes = _block_passes(prompt, n_tokens, steps, block_length, cache)
    return [forward_pass_cost(model, batch, tokens, context, nbytes) for tokens, context in passes]


def _total_time(costs: list[StepCost], hardware, dtype: str) -> float:
    hw = get_hardware(hardware)
    peak = hw.peak_flops(dtype)
    return sum(predicted_time(c, hw.bandwidth, peak) for c in costs)


def ar_latency(n_tokens: int, model, hardware, *, prompt: int = 1, batch: int = 1, dtype: str = "bf16") -> float:
    """Predicted seconds to generate N tokens autoregressively: the sum of predicted_time over
    ar_pass_costs (one prefill, N - 1 decode steps with a growing KV cache), on `hardware`
    (a Hardware or a name in data/hardware.csv) with weights and KV cache in `dtype`."""
    return _total_time(ar_pass_costs(n_tokens, model, prompt=prompt, batch=batch, dtype=dtype), hardware, dtype)


def dllm_latency(
    n_tokens: int,
    steps: int,
    model,
    hardware,
    *,
    prompt: int = 0,
    block_length: int | None = None,
    cache: str | None = None,
    batch: int = 1,
    dtype: str = "bf16",
) -> float:
    """Predicted seconds to generate N tokens with K masked-diffusion passes: the sum of
    predicted_time over dllm_pass_costs (see there for blocks and caches)."""
    costs = dllm_pass_costs(
        n_tokens, steps, model, prompt=prompt, block_length=block_length, cache=cache, batch=batch, dtype=dtype
    )
    return _total_time(costs, hardware, dtype)
