"""How long generating N tokens takes, AR against masked diffusion, from the cost of each pass.

An AR decoder with a KV cache makes N sequential passes (`ar_pass_costs`); a masked-diffusion
decoder makes K (`dllm_pass_costs`), or N / (tokens per pass) when a rule such as Fast-dLLM's
confidence threshold decides how many tokens each pass commits (`dllm_latency_at`). A latency is
the sum of helpers.roofline.costs.predicted_time over the passes, on a device from data/hardware.csv,
with the datasheet peaks scaled by an efficiency: 1.0 and 1.0 is the ceiling, the default the
course's typical value (helpers.roofline.costs.TYPICAL_*). `latency_curves` is what notebook 05's
latency explorer draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from helpers.common.validation import check_int, check_positive
from helpers.roofline.costs import (
    CEILING,
    TYPICAL,
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    StepCost,
    check_dtype,
    check_fits,
    decode_step_cost,
    effective_roofs,
    efficiency_label,
    forward_pass_cost,
    predicted_time,
)

CACHES = (None, "prefix", "dual")  # LLaDA (no cache), Fast-dLLM prefix cache, Fast-dLLM dual cache

# ----------------------------------------------------------------------------- the passes


def ar_pass_costs(n_tokens: int, model, *, prompt: int = 1, batch: int = 1, dtype: str = "bf16") -> list[StepCost]:
    """The N sequential passes of KV-cached AR generation of N tokens after a prompt of P tokens
    (as helpers.decoding.ar.generate runs them): one prefill pass over the P prompt tokens, which yields
    the first new token, then N - 1 decode steps at contexts P, P + 1, ..., P + N - 2."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    prompt = check_int(prompt, "prompt", 1)
    weight_bytes, kv_bytes, _ = check_dtype(dtype)
    costs = [forward_pass_cost(model, batch, prompt, 0, weight_bytes, kv_bytes)]
    costs += [decode_step_cost(model, batch, prompt + i, weight_bytes, kv_bytes) for i in range(n_tokens - 1)]
    return costs


def _block_passes(prompt: int, n_tokens: int, steps: int, block_length: int, cache: str):
    """(tokens, context) of each pass of blockwise diffusion decoding with a Fast-dLLM-style cache."""
    if n_tokens % block_length:
        raise ValueError(f"n_tokens ({n_tokens}) must be a multiple of block_length ({block_length})")
    n_blocks = n_tokens // block_length
    if steps % n_blocks:
        raise ValueError(f"steps ({steps}) must be a multiple of the number of blocks ({n_blocks})")
    passes = []
    for b in range(n_blocks):
        first, rest = _block_pass_shapes(prompt, n_tokens, b * block_length, block_length, cache)
        passes += [first] + [rest] * (steps // n_blocks - 1)
    return passes


def _block_pass_shapes(prompt: int, n_tokens: int, start: int, size: int, cache: str):
    """(tokens, context) of the first pass of a block (full canvas: refreshes the cache) and of
    each later one: the block and everything after it ("prefix": attends to the cached prefix),
    or the block alone ("dual": attends to the cached prefix and suffix)."""
    canvas = prompt + n_tokens
    prefix = prompt + start  # committed positions before this block
    later = (canvas - prefix, prefix) if cache == "prefix" else (size, canvas - size)
    return (canvas, 0), later


def _check_cache(cache, block_length):
    if not (cache is None or isinstance(cache, str)) or cache not in CACHES:
        raise ValueError(f"cache must be None, 'prefix' or 'dual', got {cache!r}")
    if block_length is not None:
        block_length = check_int(block_length, "block_length", 1)
    if cache is not None and block_length is None:
        raise ValueError(f"cache={cache!r} decodes block by block: give block_length")
    return block_length


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
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    steps = check_int(steps, "steps", 1)
    prompt = check_int(prompt, "prompt", 0)
    weight_bytes, kv_bytes, _ = check_dtype(dtype)
    block_length = _check_cache(cache, block_length)
    if cache is None:
        passes = [(prompt + n_tokens, 0)] * steps
    else:
        passes = _block_passes(prompt, n_tokens, steps, block_length, cache)
    return [forward_pass_cost(model, batch, tokens, context, weight_bytes, kv_bytes) for tokens, context in passes]


# ----------------------------------------------------------------------------- latencies


def _seconds(costs: list[StepCost], hardware, dtype: str, bandwidth_efficiency, compute_efficiency) -> list[float]:
    bandwidth, peak = effective_roofs(hardware, dtype, bandwidth_efficiency, compute_efficiency)
    return [predicted_time(c, bandwidth, peak) for c in costs]


def ar_latency(
    n_tokens: int,
    model,
    hardware,
    *,
    prompt: int = 1,
    batch: int = 1,
    dtype: str = "bf16",
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> float:
    """Projected seconds to generate N tokens autoregressively: the sum of predicted_time over
    ar_pass_costs (one prefill, N - 1 decode steps with a growing KV cache), on `hardware`
    (a Hardware or a name in data/hardware.csv) with weights in `dtype` (helpers.roofline.costs.DTYPES).
    Efficiencies 1.0 and 1.0 give the datasheet ceiling; the defaults are the typical values."""
    costs = ar_pass_costs(n_tokens, model, prompt=prompt, batch=batch, dtype=dtype)
    return sum(_seconds(costs, hardware, dtype, bandwidth_efficiency, compute_efficiency))


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
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> float:
    """Projected seconds to generate N tokens with K masked-diffusion passes: the sum of
    predicted_time over dllm_pass_costs (see there for blocks and caches), efficiencies as in
    ar_latency."""
    costs = dllm_pass_costs(
        n_tokens, steps, model, prompt=prompt, block_length=block_length, cache=cache, batch=batch, dtype=dtype
    )
    return sum(_seconds(costs, hardware, dtype, bandwidth_efficiency, compute_efficiency))


def dllm_latency_at(
    n_tokens: int,
    tokens_per_pass: float,
    model,
    hardware,
    *,
    prompt: int = 0,
    block_length: int | None = None,
    cache: str | None = None,
    batch: int = 1,
    dtype: str = "bf16",
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> float:
    """Projected seconds for N tokens when each pass commits `tokens_per_pass` on average, as
    adaptive rules (Fast-dLLM's threshold) do: passes need not be a whole number.

    cache None: N / tokens_per_pass passes (at least 1) over the whole canvas. With a cache, in
    blocks of block_length (the last one may be shorter): a block of b tokens takes
    max(1, b / tokens_per_pass) passes, the first a full pass that refreshes the cache. Where
    the passes come out whole, this equals dllm_latency with that many steps."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    rate = check_positive(tokens_per_pass, "tokens_per_pass")
    prompt = check_int(prompt, "prompt", 0)
    weight_bytes, kv_bytes, _ = check_dtype(dtype)
    block_length = _check_cache(cache, block_length)
    if rate > n_tokens:
        raise ValueError(f"tokens_per_pass ({rate:g}) cannot exceed n_tokens ({n_tokens})")

    def seconds(tokens: int, context: int) -> float:
        cost = forward_pass_cost(model, batch, tokens, context, weight_bytes, kv_bytes)
        return _seconds([cost], hardware, dtype, bandwidth_efficiency, compute_efficiency)[0]

    if cache is None:
        return n_tokens / rate * seconds(prompt + n_tokens, 0)
    total = 0.0
    for start in range(0, n_tokens, block_length):
        size = min(block_length, n_tokens - start)
        first, later = _block_pass_shapes(prompt, n_tokens, start, size, cache)
        total += seconds(*first) + max(0.0, size / rate - 1) * seconds(*later)
    return total


# ----------------------------------------------------------------------------- the latency explorer (04)

EXPLORER_BLOCK = 32  # block length of the Fast-dLLM-style cached decoding the explorer offers


def explorer_lengths(n_max: int, block_length: int = EXPLORER_BLOCK) -> np.ndarray:
    """N = block_length, 2 x block_length, 4 x ... up to n_max: every N a whole number of blocks."""
    block_length = check_int(block_length, "block_length", 1)
    n_max = check_int(n_max, "n_max", block_length)
    return block_length * 2 ** np.arange(int(math.log2(n_max // block_length)) + 1)


def dllm_steps(n_tokens: int, steps: int, cache: str | None, block_length: int = EXPLORER_BLOCK) -> int:
    """Passes the explorer's diffusion decoder makes for N tokens when asked for K: at most one token
    per pass needs K <= N; with blocks, K is rounded to a whole number of passes per block, at least one.
    cache: None, "prefix" or "dual" (both cached kinds split K over blocks of block_length alike)."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    steps = min(check_int(steps, "steps", 1), n_tokens)
    block_length = check_int(block_length, "block_length", 1)
    if not (cache is None or isinstance(cache, str)) or cache not in CACHES:
        raise ValueError(f"cache must be None, 'prefix' or 'dual', got {cache!r}")
    if cache is None:
        return steps
    if n_tokens % block_length:
        raise ValueError(f"with a cache n_tokens must be a multiple of block_length ({block_length}), got {n_tokens}")
    n_blocks = n_tokens // block_length
    return n_blocks * max(1, round(steps / n_blocks))


@dataclass
class LatencyCurves:
    """Projected seconds to generate N tokens (after a one-token prompt), for each N in `n`."""

    n: np.ndarray  # output lengths N: 32, 64, 128, ... (powers of two up to n_max)
    ar: np.ndarray  # AR with a KV cache, typical efficiency (ar_latency)
    dllm: np.ndarray  # masked diffusion, typical efficiency (dllm_latency)
    ar_ceiling: np.ndarray  # the same at 100 % of the datasheet
    dllm_ceiling: np.ndarray
    dllm_passes: np.ndarray  # passes the diffusion decoder makes at each N
    ideal: np.ndarray  # typical AR latency x passes / N: what counting passes alone predicts for the dLLM
    label: str  # the typical efficiency, in words


def latency_curves(
    hardware="NVIDIA H100 SXM",
    model="Llama-3-8B",
    *,
    dtype: str = "bf16",
    batch: int = 1,
    steps: int = 32,
    n_max: int = 4096,
    cache: str | None = None,
    dllm_model=None,
) -> LatencyCurves:
    """AR and dLLM latency vs N, typical and ceiling (the numbers of ar_latency / dllm_latency).

    hardware: a helpers.roofline.hardware.Hardware or a device in data/hardware.csv; model: a ModelShape,
    a ModelConfig or a name in MODEL_SHAPES (the AR model; dllm_model defaults to the same);
    cache None (every pass over the whole canvas) or "dual" (Fast-dLLM blocks of EXPLORER_BLOCK
    tokens). ValueError if the setting does not fit in the device's memory at the largest N."""
    dllm_model = model if dllm_model is None else dllm_model
    batch = check_int(batch, "batch", 1)
    steps = check_int(steps, "steps", 1)
    if not (cache is None or isinstance(cache, str)) or cache not in (None, "dual"):
        raise ValueError(f"cache must be None or 'dual', got {cache!r}")
    n = explorer_lengths(n_max)
    check_fits(model, hardware, dtype, batch=batch, cached_positions=1 + int(n[-1]))
    check_fits(dllm_model, hardware, dtype, batch=batch, cached_positions=(1 + int(n[-1])) if cache else 0)
    costs = ar_pass_costs(int(n[-1]), model, batch=batch, dtype=dtype)  # the first N passes serve every N
    passes = np.array([dllm_steps(int(k), steps, cache) for k in n])
    curves = []  # (AR, dLLM) latencies, typical then ceiling
    for effs in (TYPICAL, CEILING):
        ar = np.cumsum(_seconds(costs, hardware, dtype, **effs))[n - 1]
        dllm = [
            dllm_latency(
                int(k), int(p), dllm_model, hardware, prompt=1, block_length=EXPLORER_BLOCK if cache else None,
                cache=cache, batch=batch, dtype=dtype, **effs,
            )
            for k, p in zip(n, passes, strict=True)
        ]  # fmt: skip
        curves.append((ar, np.array(dllm)))
    (ar, dllm), (ar_ceiling, dllm_ceiling) = curves
    return LatencyCurves(
        n=n,
        ar=ar,
        dllm=dllm,
        ar_ceiling=ar_ceiling,
        dllm_ceiling=dllm_ceiling,
        dllm_passes=passes,
        ideal=ar * passes / n,
        label=efficiency_label(),
    )
