"""Measure this machine and the course's decoders on it: the numbers notebook 04 puts on the roofline.

    python -m helpers.bench                 # a few minutes; a readable table
    python -m helpers.bench --quick         # under a minute on a 2-core laptop
    python -m helpers.bench --json > data/bench_<name>.json   # a reference result notebook 04 shows
    python -m helpers.bench --device cuda   # a GPU, in bf16

What it measures, in this order (each step is one function here, and notebook 04 calls the same
functions, so the notebook and the command line cannot disagree):

1. `measure_machine`: the roofs. STREAM copy and triad bandwidth, the bandwidth a large GEMV
   (y = W x) reaches, and the throughput of a large matmul (the compute roof). The ridge point
   is peak FLOP/s / GEMV bandwidth: a decode step is made of GEMVs, so that is the memory roof it
   can actually reach.
2. `decode_step`: one cached decode step of the course's own decoder, exactly the call
   helpers.ar.generate makes (`model(token, cache=cache, last_only=True)`), at batch 1 with the
   cache prefilled to a realistic context; GPT-2 small's shape with random weights (fp32 on the
   CPU, bf16 on CUDA). Compared with the roofline prediction from helpers.costs, which uses
   the bandwidth of a GEMV with the model's own row length (d_model columns), measured alongside;
   MBU.
3. `width_sweep`: one pass of a bidirectional (diffusion) model over W positions, as a multiple of
   one AR decode step, for W = 1, 2, 4, ...: flat while the pass is memory-bound, rising once W
   passes the ridge point.
4. `tiny_models_n256`: the course's tiny model shape end to end: N = 256 new tokens with the
   KV-cached AR decoder (N passes) and with the masked-diffusion sampler in K passes, passes
   counted by helpers.model.count_passes as the code runs them.
5. `helpers.precision.time_formats` (CPU): the decode step of stage 2 with its weights in fp32,
   bf16 and weight-only int8, timed in turn: do fewer bytes per weight make the step faster?
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace

import torch

from helpers.ar import generate
from helpers.costs import StepCost, decode_step_cost, forward_pass_cost, mbu, predicted_time
from helpers.device import pick_device
from helpers.diffusion import sample
from helpers.latency import ar_pass_costs, dllm_pass_costs
from helpers.model import ModelConfig, Transformer, count_passes, gpt2_small_config
from helpers.precision import time_formats
from helpers.timing import (
    DEFAULT_GEMV_COLS,
    DEFAULT_MATMUL_DTYPE,
    Measurement,
    _as_device,
    _memory_bytes,
    benchmark,
    default_array_bytes,
    gemv_bandwidth,
    machine_summary,
    matmul_flops,
    stream_bandwidth,
)
from helpers.toylang import LANG

MODEL_DTYPES = {"cpu": torch.float32, "cuda": torch.bfloat16, "mps": torch.float16}  # what models run in
CPU_MATMUL_N = 2048  # the CPU's compute roof from a 2048^3 matmul: steadier than helpers.timing's 1024
DECODE_CONTEXT = 512  # positions already in the KV cache when a decode step is timed (GPT-2 small: max 1024)
TINY_TOKENS, TINY_STEPS = 256, 32  # N new tokens; K diffusion passes
TINY_NOTE = (
    "course tiny shape (d_model 128, 4 layers, 4 heads, vocab {vocab}) with random weights and "
    "max_len {max_len}: the shipped checkpoints have only 33 positions, too few for N = {n}"
)


@dataclass(frozen=True)
class BenchSettings:
    """How hard to measure. QUICK finishes in under a minute on a 2-core CPU; FULL is steadier."""

    warmup: int = 2  # untimed runs before each measurement
    repeat: int = 10  # timed runs of each roof measurement (median reported)
    array_scale: int = 2  # bandwidth arrays = array_scale x default_array_bytes (>= 4x the LLC)
    matmul_n: int | None = None  # n of the n x n matmul; None: CPU_MATMUL_N on the CPU, else helpers.timing's
    decode_repeat: int = 20  # timed decode steps
    width_repeat: int = 3  # timed passes per width in the width sweep
    widths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    tiny_repeat: int = 3  # timed end-to-end generations of N tokens, per decoder
    format_rounds: int = 5  # rounds of the fp32 / bf16 / int8 decode step, timed in turn (CPU)


FULL = BenchSettings()
QUICK = BenchSettings(
    warmup=1,
    repeat=5,
    array_scale=1,
    decode_repeat=10,
    width_repeat=2,
    tiny_repeat=2,
    widths=(1, 4, 16, 64, 256),
    format_rounds=3,
)


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def model_dtype(device) -> torch.dtype:
    """The dtype the course models are timed in: fp32 on the CPU, bf16 on CUDA, fp16 on MPS."""
    return MODEL_DTYPES[_as_device(device).type]


def _dtype_name(dtype: torch.dtype) -> str:
    """helpers.costs' name for a dtype's size: 'fp32' for 4 bytes, 'bf16' for 2 (fp16 too)."""
    return {4: "fp32", 2: "bf16"}[dtype.itemsize]


# ----------------------------------------------------------------------------- 1. the roofs


@dataclass
class Roofs:
    """The measured roofs of one device. Bandwidths in GB/s, matmul in GFLOP/s (medians + IQR)."""

    device: str  # helpers.device.describe(...)
    threads: int  # torch.get_num_threads() during the measurement
    array_bytes: int  # bytes per array in the bandwidth measurements
    copy: Measurement  # STREAM copy, GB/s
    triad: Measurement  # STREAM triad, GB/s
    gemv: Measurement  # y = W x at batch 1 in gemv_dtype, GB/s: the roof a decode step can reach
    matmul: Measurement  # n x n matmul in matmul_dtype, GFLOP/s: the compute roof
    gemv_dtype: str
    matmul_dtype: str

    @property
    def bandwidth(self) -> float:
        """Bytes/s the predictions use: the GEMV's, since a decode step is made of GEMVs."""
        return self.gemv.si

    @property
    def stream_bandwidth(self) -> float:
        """Bytes/s: the better of copy and triad, the machine's streaming bandwidth."""
        return max(self.copy.si, self.triad.si)

    @property
    def peak_flops(self) -> float:
        return self.matmul.si

    @property
    def ridge(self) -> float:
        """FLOP/byte where the GEMV bandwidth roof meets the matmul roof: peak / GEMV bandwidth."""
        return self.peak_flops / self.bandwidth

    @property
    def ridge_stream(self) -> float:
        """The same with the STREAM bandwidth: peak / max(copy, triad)."""
        return self.peak_flops / self.stream_bandwidth

    def as_dict(self) -> dict:
        return {
            "device": self.device,
            "threads": self.threads,
            "array_mib": round(self.array_bytes / 2**20, 1),
            "copy_gb_s": round(self.copy.value, 2),
            "copy_iqr_gb_s": round(self.copy.spread, 2),
            "triad_gb_s": round(self.triad.value, 2),
            "triad_iqr_gb_s": round(self.triad.spread, 2),
            "gemv_gb_s": round(self.gemv.value, 2),
            "gemv_iqr_gb_s": round(self.gemv.spread, 2),
            "gemv_dtype": self.gemv_dtype,
            "matmul_gflop_s": round(self.matmul.value, 1),
            "matmul_iqr_gflop_s": round(self.matmul.spread, 1),
            "matmul_dtype": self.matmul_dtype,
            "ridge_flop_per_byte": round(self.ridge, 2),
            "ridge_bandwidth": "gemv",
            "ridge_stream_flop_per_byte": round(self.ridge_stream, 2),
        }


def measure_machine(device=None, *, settings: BenchSettings = FULL) -> Roofs:
    """Measure STREAM copy/triad, GEMV bandwidth (in the device's model dtype) and matmul peak.

    device: None (the CPU), "cpu", "cuda" or "mps". Arrays are settings.array_scale times
    helpers.timing.default_array_bytes (itself >= 4x the last-level cache)."""
    device = _as_device(device)
    if not isinstance(settings, BenchSettings):
        raise ValueError(f"settings must be a BenchSettings (FULL, QUICK or your own), got {settings!r}")
    nbytes = settings.array_scale * default_array_bytes(device)
    memory = _memory_bytes()
    if device.type == "cpu" and memory:  # never more than 1/16 of the memory per array
        nbytes = min(nbytes, memory // 16)
    dtype = model_dtype(device)
    runs = dict(device=device, warmup=settings.warmup, repeat=settings.repeat)
    copy = stream_bandwidth("copy", nbytes=nbytes, **runs)
    triad = stream_bandwidth("triad", nbytes=nbytes, **runs)
    n_rows = max(1, nbytes // (DEFAULT_GEMV_COLS * dtype.itemsize))  # W as large as one STREAM array
    gemv = gemv_bandwidth(n_rows, DEFAULT_GEMV_COLS, dtype=dtype, **runs)
    matmul_n = settings.matmul_n or (CPU_MATMUL_N if device.type == "cpu" else None)
    matmul = matmul_flops(matmul_n, **runs)
    matmul_dtype = DEFAULT_MATMUL_DTYPE[device.type]
    return Roofs(
        device=machine_summary(device)["device"],
        threads=torch.get_num_threads(),
        array_bytes=nbytes,
        copy=copy,
        triad=triad,
        gemv=gemv,
        matmul=matmul,
        gemv_dtype=str(dtype).removeprefix("torch."),
        matmul_dtype=str(matmul_dtype).removeprefix("torch."),
    )


# ----------------------------------------------------------------------------- 2. the decode step


def random_model(config: ModelConfig, device=None, *, seed: int = 0) -> Transformer:
    """A Transformer of `config` with random (GPT-2 style) weights on `device`, in model_dtype(device),
    in eval mode, in the weight layout every course model decodes with (decode_layout_). Timing does not
    depend on what the weights are, only on their shape, dtype and layout."""
    device = _as_device(device)
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a helpers.model.ModelConfig, got {type(config).__name__}")
    torch.manual_seed(_check_int(seed, "seed", 0))
    model = Transformer(config).to(device=device, dtype=model_dtype(device)).eval()
    return model.decode_layout_()  # the weight layout the course's models decode with


def _model_device_dtype(model: Transformer) -> tuple[torch.device, torch.dtype]:
    p = model.tok_emb.weight
    return p.device, p.dtype


@dataclass
class DecodeStep:
    """One measured decode step next to its roofline prediction.

    The prediction uses the bandwidth that the model's own matrix-vector products reach
    (model_gemv_bandwidth: every weight matrix times one vector, back to back, nothing else), since
    a GEMV's bandwidth depends on its shape and layout. The prediction with the machine's single
    large GEMV (`roofs.gemv`) is kept for comparison as `predicted_generic_s`."""

    shape: str  # what was timed, in words
    dtype: str
    batch: int
    context: int  # positions in the KV cache before the step
    measured: Measurement  # seconds per step
    cost: StepCost  # bytes and FLOPs of the step (helpers.costs.decode_step_cost)
    gemv: Measurement  # GB/s of the model's own GEMVs back to back, measured in the same call
    predicted_s: float  # helpers.costs.predicted_time(cost, that GEMV bandwidth, matmul peak)
    predicted_generic_s: float  # the same with roofs.gemv (the machine's single large GEMV)
    stream_bandwidth: float  # bytes/s, the measured STREAM bandwidth (MBU's denominator)

    @property
    def bandwidth(self) -> float:
        """Bytes/s the prediction used: the model's own GEMVs."""
        return self.gemv.si

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes the step must read / measured time, in bytes/s."""
        return self.cost.total_bytes / self.measured.si

    @property
    def error(self) -> float:
        """(predicted - measured) / measured: -0.1 means the roofline predicts 10 % too fast."""
        return self.predicted_s / self.measured.si - 1

    @property
    def error_generic(self) -> float:
        return self.predicted_generic_s / self.measured.si - 1

    @property
    def mbu(self) -> float:
        """Model bandwidth utilisation against the measured STREAM bandwidth (0..1)."""
        return mbu(self.cost, self.measured.si, self.stream_bandwidth)

    @property
    def vs_gemv(self) -> float:
        """Achieved bandwidth as a fraction of the model's own GEMVs' (what the rest of the step costs)."""
        return self.achieved_bandwidth / self.bandwidth

    def as_dict(self) -> dict:
        return {
            "shape": self.shape,
            "dtype": self.dtype,
            "batch": self.batch,
            "context": self.context,
            "measured_ms": round(1e3 * self.measured.value, 3),
            "measured_iqr_ms": round(1e3 * self.measured.spread, 3),
            "gemv_model_gb_s": round(self.gemv.value, 2),
            "predicted_ms": round(1e3 * self.predicted_s, 3),
            "error_pct": round(100 * self.error, 1),
            "predicted_generic_ms": round(1e3 * self.predicted_generic_s, 3),
            "error_generic_pct": round(100 * self.error_generic, 1),
            "bytes_per_step": int(self.cost.total_bytes),
            "flops_per_step": int(self.cost.flops),
            "achieved_gb_s": round(self.achieved_bandwidth / 1e9, 2),
            "mbu_vs_stream": round(self.mbu, 3),
            "vs_gemv": round(self.vs_gemv, 3),
        }


def prefilled_cache(model: Transformer, context: int, batch: int, seed: int):
    """A KV cache holding `context` positions of random tokens (one prefill pass), and the
    (batch, 1) token the timed steps feed."""
    device, _ = _model_device_dtype(model)
    gen = torch.Generator().manual_seed(seed)
    cache = model.new_cache(batch)
    if context:
        prompt = torch.randint(0, model.config.vocab_size, (batch, context), generator=gen).to(device)  # (B, S)
        model(prompt, cache=cache, last_only=True)
    token = torch.randint(0, model.config.vocab_size, (batch, 1), generator=gen).to(device)  # (B, 1)
    return cache, token


def decode_step(
    model: Transformer | ModelConfig | None = None,
    *,
    roofs: Roofs,
    context: int = DECODE_CONTEXT,
    batch: int = 1,
    device=None,
    warmup: int = 3,
    repeat: int = 20,
    seed: int = 0,
    shape: str | None = None,
    gemv: Measurement | None = None,
) -> DecodeStep:
    """Time one KV-cached decode step, `model(token, cache=cache, last_only=True)`, the call
    helpers.ar.generate makes for every token after the first, with `context` positions already
    in the cache (reset to `context` before every run, so each run does the same work).

    model: a causal Transformer (timed as it is, on its device and dtype), a ModelConfig (random
    weights on `device` in model_dtype(device)) or None (GPT-2 small's shape).
    roofs: the measured roofs (measure_machine): matmul peak and STREAM bandwidth.
    gemv: GB/s to predict with; None measures the model's own GEMVs (model_gemv_bandwidth)."""
    if not isinstance(roofs, Roofs):
        raise ValueError(f"roofs must be the Roofs that measure_machine returns, got {type(roofs).__name__}")
    if gemv is not None and (not isinstance(gemv, Measurement) or gemv.unit != "GB/s"):
        raise ValueError(f"gemv must be None or a Measurement in GB/s (from gemv_bandwidth), got {gemv!r}")
    if model is None or isinstance(model, ModelConfig):
        config = gpt2_small_config() if model is None else model
        shape = shape or ("GPT-2 small (124M)" if model is None else "custom")
        model = random_model(config, device, seed=seed)
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("model must be a causal helpers.model.Transformer, a ModelConfig or None")
    context = _check_int(context, "context", 0)
    batch = _check_int(batch, "batch", 1)
    if context + 1 > model.config.max_len:
        raise ValueError(f"context ({context}) + 1 new token must fit in max_len ({model.config.max_len})")
    device, dtype = _model_device_dtype(model)
    with torch.inference_mode():
        cache, token = prefilled_cache(model, context, batch, seed)

        def step():
            cache.length = context  # every run appends at the same position
            return model(token, cache=cache, last_only=True)  # (B, 1, V)

        measured = benchmark(step, warmup=warmup, repeat=repeat, device=device)
    if gemv is None:
        gemv = model_gemv_bandwidth(model, device=device)
    cost = decode_step_cost(model.config, batch=batch, context=context, bytes_per_param=dtype.itemsize)
    return DecodeStep(
        shape=shape or "custom",
        dtype=str(dtype).removeprefix("torch."),
        batch=batch,
        context=context,
        measured=measured,
        cost=cost,
        gemv=gemv,
        predicted_s=predicted_time(cost, gemv.si, roofs.peak_flops),
        predicted_generic_s=predicted_time(cost, roofs.bandwidth, roofs.peak_flops),
        stream_bandwidth=roofs.stream_bandwidth,
    )


def model_gemvs(model: Transformer):
    """A function that multiplies one vector by every weight matrix of `model` (every layer with
    `in_features`: nn.Linear, or helpers.precision.Int8Linear), back to back in step order."""
    device, dtype = _model_device_dtype(model)
    layers = [m for m in model.modules() if hasattr(m, "in_features")]
    inputs = [torch.rand(1, m.in_features, device=device, dtype=dtype) for m in layers]  # (1, in) each

    def run():
        for layer, x in zip(layers, inputs, strict=True):
            layer(x)  # (1, out)

    return run


def model_gemv_bandwidth(model: Transformer, *, device=None, warmup: int = 2, repeat: int = 10) -> Measurement:
    """GB/s reached by the model's own matrix-vector products: every nn.Linear of the model (the
    output head included) applied to one input vector, back to back in the order of a decode
    step, with nothing else in between. Weight bytes / time. This is the bandwidth a decode
    step's weight reads can reach here; the full step loses against it only what is not a weight
    matmul (attention, norms, Python)."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.model.Transformer, got {type(model).__name__}")
    device, dtype = _model_device_dtype(model)
    nbytes = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)) * dtype.itemsize
    with torch.inference_mode():
        seconds = benchmark(model_gemvs(model), warmup=warmup, repeat=repeat, device=device)
    return Measurement.from_samples([nbytes / t / 1e9 for t in seconds.samples], "GB/s")


# ----------------------------------------------------------------------------- 3. a pass over W positions


@dataclass
class WidthPoint:
    """One pass of a bidirectional model over `width` positions, against one AR decode step."""

    width: int
    measured: Measurement  # seconds per pass
    predicted_s: float  # roofline time of forward_pass_cost(tokens=width), with the step's bandwidth
    step_measured_s: float  # the measured AR decode step it is compared with
    step_predicted_s: float  # that step's roofline time
    intensity: float  # FLOP/byte of the pass

    @property
    def ratio(self) -> float:
        """Measured cost of the pass in AR decode steps."""
        return self.measured.si / self.step_measured_s

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_s / self.step_predicted_s

    def as_dict(self) -> dict:
        return {
            "width": self.width,
            "measured_ms": round(1e3 * self.measured.value, 3),
            "predicted_ms": round(1e3 * self.predicted_s, 3),
            "ratio": round(self.ratio, 2),
            "predicted_ratio": round(self.predicted_ratio, 2),
            "intensity": round(self.intensity, 2),
        }


def bidirectional_twin(model: Transformer) -> Transformer:
    """The same weights in a bidirectional (masked-diffusion) model: what a dLLM pass runs."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.model.Transformer, got {type(model).__name__}")
    device, dtype = _model_device_dtype(model)
    twin = Transformer(replace(model.config, causal=False)).to(device=device, dtype=dtype).eval()
    twin.load_state_dict(model.state_dict())
    return twin.decode_layout_()


def width_sweep(
    model: Transformer,
    widths,
    *,
    roofs: Roofs,
    step: DecodeStep,
    warmup: int = 1,
    repeat: int = 3,
    seed: int = 0,
) -> list[WidthPoint]:
    """Time one pass of `model` (bidirectional: every position sees every other, no cache) over
    W positions for each W in `widths`, the pass a diffusion sampler makes over a canvas of W
    positions, and compare it with the measured AR decode `step` (from decode_step). Predictions
    use the step's GEMV bandwidth and the roofs' matmul peak."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.model.Transformer, got {type(model).__name__}")
    if not isinstance(roofs, Roofs) or not isinstance(step, DecodeStep):
        raise ValueError("roofs must come from measure_machine and step from decode_step")
    widths = list(widths)
    if not widths:
        raise ValueError("widths must hold at least one width")
    for w in widths:
        _check_int(w, "each width", 1)
        if w > model.config.max_len:
            raise ValueError(f"width {w} is longer than the model's max_len ({model.config.max_len})")
    device, dtype = _model_device_dtype(model)
    gen = torch.Generator().manual_seed(seed)
    points = []
    for w in widths:
        canvas = torch.randint(0, model.config.vocab_size, (1, w), generator=gen).to(device)  # (1, W)
        with torch.inference_mode():
            measured = benchmark(lambda c=canvas: model(c), warmup=warmup, repeat=repeat, device=device)  # (1, W, V)
        cost = forward_pass_cost(model.config, tokens=w, bytes_per_param=dtype.itemsize)
        points.append(
            WidthPoint(
                width=w,
                measured=measured,
                predicted_s=predicted_time(cost, step.bandwidth, roofs.peak_flops),
                step_measured_s=step.measured.si,
                step_predicted_s=step.predicted_s,
                intensity=cost.intensity,
            )
        )
    return points


# ----------------------------------------------------------------------------- 4. the tiny models end to end


def tiny_config(n_tokens: int = TINY_TOKENS, causal: bool = True) -> ModelConfig:
    """The course's tiny model shape (helpers.train.model_config), long enough for <bos> + N tokens."""
    n_tokens = _check_int(n_tokens, "n_tokens", 1)
    return ModelConfig(vocab_size=len(LANG.vocab), max_len=n_tokens + 1, causal=causal)


@dataclass
class DecoderRun:
    """N tokens generated end to end by one decoder: wall time, counted passes, prediction."""

    decoder: str
    measured: Measurement  # seconds for all N tokens
    passes: int  # forward passes, counted by helpers.model.count_passes
    predicted_s: float  # roofline: sum of predicted_time over the passes (helpers.costs)

    @property
    def per_pass_s(self) -> float:
        return self.measured.si / self.passes

    def as_dict(self) -> dict:
        return {
            "decoder": self.decoder,
            "measured_ms": round(1e3 * self.measured.value, 2),
            "measured_iqr_ms": round(1e3 * self.measured.spread, 2),
            "passes": self.passes,
            "ms_per_pass": round(1e3 * self.per_pass_s, 3),
            "predicted_ms": round(1e3 * self.predicted_s, 3),
        }


@dataclass
class TinyRun:
    note: str
    n_tokens: int
    steps: int
    params: int
    ar: DecoderRun
    dllm: DecoderRun

    def as_dict(self) -> dict:
        return {
            "note": self.note,
            "n_tokens": self.n_tokens,
            "steps": self.steps,
            "params": self.params,
            "ar": self.ar.as_dict(),
            "dllm": self.dllm.as_dict(),
            "dllm_speedup": round(self.ar.measured.si / self.dllm.measured.si, 2),
        }


def _predicted_total(costs: list[StepCost], roofs: Roofs) -> float:
    return sum(predicted_time(c, roofs.bandwidth, roofs.peak_flops) for c in costs)


def tiny_models_n256(
    *,
    roofs: Roofs,
    n_tokens: int = TINY_TOKENS,
    steps: int = TINY_STEPS,
    device=None,
    warmup: int = 1,
    repeat: int = 3,
    seed: int = 0,
) -> TinyRun:
    """Generate N tokens after <bos> at batch 1, greedily, with random tiny models: the KV-cached
    AR decoder (helpers.ar.generate, N passes) and the masked-diffusion sampler (helpers.diffusion
    .sample, confidence order, K = steps passes over the whole canvas). Wall times are medians of
    `repeat` runs; passes are counted while the code runs."""
    if not isinstance(roofs, Roofs):
        raise ValueError(f"roofs must be the Roofs that measure_machine returns, got {type(roofs).__name__}")
    n_tokens = _check_int(n_tokens, "n_tokens", 1)
    steps = _check_int(steps, "steps", 1)
    if steps > n_tokens:
        raise ValueError(f"steps ({steps}) must be <= n_tokens ({n_tokens}): each pass commits at least one token")
    device = _as_device(device)
    ar_model = random_model(tiny_config(n_tokens, causal=True), device, seed=seed)
    dllm_model = random_model(tiny_config(n_tokens, causal=False), device, seed=seed)
    prompt = torch.tensor([[LANG.bos_id]], device=device)  # (1, 1)
    dtype = _dtype_name(model_dtype(device))

    def run_ar():
        return generate(ar_model, prompt, n_tokens, temperature=0)

    def run_dllm():
        return sample(dllm_model, n_tokens, steps, temperature=0)

    with count_passes(ar_model) as ar_passes:
        run_ar()
    with count_passes(dllm_model) as dllm_passes:
        run_dllm()
    ar_time = benchmark(run_ar, warmup=warmup, repeat=repeat, device=device)
    dllm_time = benchmark(run_dllm, warmup=warmup, repeat=repeat, device=device)
    ar_costs = ar_pass_costs(n_tokens, ar_model.config, prompt=1, dtype=dtype)
    dllm_costs = dllm_pass_costs(n_tokens, steps, dllm_model.config, prompt=1, dtype=dtype)
    return TinyRun(
        note=TINY_NOTE.format(vocab=len(LANG.vocab), max_len=n_tokens + 1, n=n_tokens),
        n_tokens=n_tokens,
        steps=steps,
        params=ar_model.num_params(),
        ar=DecoderRun("AR, KV cache", ar_time, ar_passes.n, _predicted_total(ar_costs, roofs)),
        dllm=DecoderRun(f"dLLM, K = {steps}", dllm_time, dllm_passes.n, _predicted_total(dllm_costs, roofs)),
    )


# ----------------------------------------------------------------------------- the whole run


def _log(progress, message: str) -> None:
    if progress is not None:
        progress(message)


def run_bench(
    device=None,
    *,
    quick: bool = False,
    steps: int = TINY_STEPS,
    context: int = DECODE_CONTEXT,
    n_tokens: int = TINY_TOKENS,
    decode_config: ModelConfig | None = None,
    settings: BenchSettings | None = None,
    progress=None,
) -> dict:
    """Everything above, as one JSON-ready dict. `progress`: an optional callable that receives
    a line of text before each stage (the command line prints them to stderr).
    decode_config: the shape timed in stages 2 and 3 (default GPT-2 small)."""
    device = _as_device(device)
    if device.type == "mps":
        raise ValueError("run_bench measures 'cpu' or 'cuda': the diffusion sampler works in float64, which MPS lacks")
    if not isinstance(quick, bool):
        raise ValueError(f"quick must be True or False, got {quick!r}")
    settings = settings or (QUICK if quick else FULL)
    steps = _check_int(steps, "steps", 1)
    n_tokens = _check_int(n_tokens, "n_tokens", 1)
    context = _check_int(context, "context", 0)
    if steps > n_tokens:
        raise ValueError(f"steps ({steps}) must be <= n_tokens ({n_tokens}): each pass commits at least one token")
    config = gpt2_small_config() if decode_config is None else decode_config
    if not isinstance(config, ModelConfig):
        raise ValueError(f"decode_config must be a ModelConfig or None, got {type(config).__name__}")
    if context + 1 > config.max_len:
        raise ValueError(f"context ({context}) + 1 must fit in the decode model's max_len ({config.max_len})")
    shape = "GPT-2 small (124M)" if decode_config is None else "custom"

    _log(progress, "measuring the roofs: STREAM copy and triad, GEMV, matmul ...")
    roofs = measure_machine(device, settings=settings)
    _log(progress, f"timing a decode step ({shape}, {context} cached positions) ...")
    model = random_model(config, device)
    step = decode_step(
        model, roofs=roofs, context=context, warmup=settings.warmup + 1, repeat=settings.decode_repeat, shape=shape
    )
    _log(progress, "timing diffusion passes over W positions ...")
    twin = bidirectional_twin(model)
    del model
    widths = [w for w in settings.widths if w <= config.max_len]
    sweep = width_sweep(twin, widths, roofs=roofs, step=step, warmup=1, repeat=settings.width_repeat)
    del twin
    _log(progress, f"generating N = {n_tokens} tokens with the tiny models (AR, dLLM K = {steps}) ...")
    tiny = tiny_models_n256(roofs=roofs, n_tokens=n_tokens, steps=steps, device=device, repeat=settings.tiny_repeat)
    formats = []
    if device.type == "cpu":  # the weight formats are timed on the CPU, where the course's models run in fp32
        _log(progress, f"timing the decode step ({shape}) with weights in fp32, bf16 and int8 ...")
        formats = time_formats(random_model(config), context=context, rounds=settings.format_rounds)
    command = "python -m helpers.bench" + (" --quick" if quick else "") + f" --device {device.type}"
    return {
        "command": command + " --json",
        "machine": machine_summary(device),
        "settings": {"quick": quick, "warmup": settings.warmup, "repeat": settings.repeat},
        "roofs": roofs.as_dict(),
        "decode": step.as_dict(),
        "width_sweep": [p.as_dict() for p in sweep],
        "tiny": tiny.as_dict(),
        "formats": [f.as_dict() for f in formats],
    }


def format_report(result: dict) -> str:
    """The dict from run_bench as a readable table."""
    m, r, d, t = result["machine"], result["roofs"], result["decode"], result["tiny"]
    lines = [
        f"helpers.bench on {m['device']}: {m['cpu']}, torch {m['torch']}"
        + (" (quick)" if result["settings"]["quick"] else ""),
        f"Roofs: medians of {result['settings']['repeat']} runs, arrays of {r['array_mib']} MiB "
        f"(last-level cache {m['llc_mib']} MiB)",
        f"  STREAM copy      {r['copy_gb_s']:9.2f} GB/s     (IQR {r['copy_iqr_gb_s']})",
        f"  STREAM triad     {r['triad_gb_s']:9.2f} GB/s     (IQR {r['triad_iqr_gb_s']})",
        f"  GEMV y = W x     {r['gemv_gb_s']:9.2f} GB/s     (IQR {r['gemv_iqr_gb_s']}; {r['gemv_dtype']}, batch 1, "
        "4096 columns)",
        f"  matmul peak      {r['matmul_gflop_s']:9.1f} GFLOP/s  (IQR {r['matmul_iqr_gflop_s']}; {r['matmul_dtype']})",
        f"  ridge point      {r['ridge_flop_per_byte']:9.2f} FLOP/B   = matmul peak / GEMV bandwidth "
        f"({r['ridge_stream_flop_per_byte']} with the STREAM bandwidth)",
        f"Decode step: {d['shape']}, random weights, {d['dtype']}, batch {d['batch']}, "
        f"{d['context']} positions in the KV cache",
        f"  measured         {d['measured_ms']:9.3f} ms/token (IQR {d['measured_iqr_ms']})",
        f"  model's GEMVs    {d['gemv_model_gb_s']:9.2f} GB/s     (its weight matrices times one vector, back to back)",
        f"  predicted        {d['predicted_ms']:9.3f} ms/token (roofline with that GEMV bandwidth; "
        f"error {d['error_pct']:+.1f} %)",
        f"  predicted        {d['predicted_generic_ms']:9.3f} ms/token (with the single large GEMV above; "
        f"error {d['error_generic_pct']:+.1f} %)",
        f"  bytes per step   {d['bytes_per_step'] / 1e6:9.1f} MB -> {d['achieved_gb_s']} GB/s achieved = "
        f"{100 * d['vs_gemv']:.0f} % of the model's GEMVs; MBU {100 * d['mbu_vs_stream']:.0f} % of STREAM",
        "One diffusion pass over W positions (bidirectional, same weights) in AR decode steps:",
        "      W   pass ms   measured ratio   roofline ratio   FLOP/B",
    ]
    for p in result["width_sweep"]:
        lines.append(
            f"  {p['width']:5d} {p['measured_ms']:9.2f} {p['ratio']:16.2f} {p['predicted_ratio']:17.2f} "
            f"{p['intensity']:8.2f}"
        )
    lines += [
        f"Tiny model, N = {t['n_tokens']} new tokens, greedy, batch 1 ({t['params']:,} parameters)",
        f"  note: {t['note']}",
        "  decoder          passes   measured ms   ms/pass   roofline ms",
    ]
    for run in (t["ar"], t["dllm"]):
        lines.append(
            f"  {run['decoder']:15s} {run['passes']:7d} {run['measured_ms']:13.2f} {run['ms_per_pass']:9.3f} "
            f"{run['predicted_ms']:13.3f}"
        )
    lines.append(f"  dLLM is {t['dllm_speedup']:.2f}x faster than AR here (< 1: slower)")
    if result.get("formats"):
        lines += [f"One decode step ({d['shape']}) with its weights in three formats, timed in turn:"]
        lines += ["  format   measured ms   bytes/step   time vs fp32   bytes vs fp32"]
        base = result["formats"][0]
        for f in result["formats"]:
            if f["measured_ms"] is None:
                lines.append(f"  {f['format']:6s}   not timed: {f['note']}")
                continue
            lines.append(
                f"  {f['format']:6s} {f['measured_ms']:13.2f} {f['bytes_per_step'] / 1e6:10.1f} MB "
                f"{f['measured_ms'] / base['measured_ms']:14.2f} {f['bytes_per_step'] / base['bytes_per_step']:15.2f}"
            )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: CUDA if present, else CPU")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller arrays (>= 4x the LLC)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--steps", type=int, default=TINY_STEPS, help="K, diffusion passes for N = 256 (1..256)")
    parser.add_argument("--context", type=int, default=DECODE_CONTEXT, help="cached positions for the decode step")
    args = parser.parse_args(argv)
    try:
        device = pick_device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        result = run_bench(
            device,
            quick=args.quick,
            steps=args.steps,
            context=args.context,
            progress=lambda s: print(s, file=sys.stderr),
        )
    except ValueError as err:
        parser.error(str(err))
    print(json.dumps(result, indent=2) if args.json else format_report(result))


if __name__ == "__main__":
    main()
