"""Stages 2 to 4 of helpers.bench: the course's decoders' passes, measured next to the roofline.

2. `decode_step`: one cached decode step of the course's own decoder, exactly the call
   helpers.ar.generate makes (`model(token, cache=cache, last_only=True)`), with the cache
   prefilled to a realistic context, compared with helpers.costs' prediction from the bandwidth
   the model's own GEMVs reach (`model_gemv_bandwidth`), measured alongside; MBU.
3. `width_sweep`: one pass of a bidirectional (diffusion) model over W positions, as a multiple
   of one AR decode step: flat while the pass is memory-bound, rising once W passes the ridge.
4. `tiny_models_n256`: N new tokens end to end with the KV-cached AR decoder (N passes) and the
   masked-diffusion sampler (K passes), passes counted by helpers.model.count_passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers import gpu
from helpers.ar import generate
from helpers.bench.roofs import Roofs, check_roofs
from helpers.costs import StepCost, decode_step_cost, forward_pass_cost, mbu, predicted_time
from helpers.device import as_device
from helpers.diffusion import sample
from helpers.fixtures import (
    TINY_TOKENS,
    layout_of,
    model_device_dtype,
    model_dtype,
    prefilled_cache,
    random_model,
    tiny_config,
)
from helpers.hardware import Hardware, match_hardware
from helpers.latency import ar_pass_costs, dllm_pass_costs
from helpers.measurement import Measurement, benchmark
from helpers.model import ModelConfig, Transformer, count_passes, gpt2_small_config
from helpers.toylang import LANG
from helpers.validation import check_int

DECODE_CONTEXT = 512  # positions already in the KV cache when a decode step is timed (GPT-2 small: max 1024)
TINY_STEPS = 32  # K diffusion passes for the tiny models' N = TINY_TOKENS
TINY_NOTE = (
    "course tiny shape (d_model 128, 4 layers, 4 heads, vocab {vocab}) with random weights and "
    "max_len {max_len}: the shipped checkpoints have only 33 positions, too few for N = {n}"
)


def _dtype_name(dtype: torch.dtype) -> str:
    """helpers.costs' name for a dtype's size: 'fp32' for 4 bytes, 'bf16' for 2 (fp16 too)."""
    return {4: "fp32", 2: "bf16"}[dtype.itemsize]


def _check_transformer(model) -> Transformer:
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.model.Transformer, got {type(model).__name__}")
    return model


# ----------------------------------------------------------------------------- 2. the decode step


@dataclass
class DecodeStep:
    """One measured decode step next to its roofline prediction.

    The prediction uses the bandwidth that the model's own matrix-vector products reach
    (model_gemv_bandwidth: every weight matrix times one vector, back to back, nothing else), since
    a GEMV's bandwidth depends on its shape and layout; on CUDA, those GEMVs replayed as one CUDA
    graph, so that the prediction holds the kernels' bandwidth, not the launch rate. The prediction
    with the machine's single large GEMV (`roofs.gemv`) is kept for comparison.

    On CUDA the step is timed twice: eagerly (`measured`, the call helpers.ar.generate makes, one
    kernel launch per operation) and replayed as one CUDA graph (`graphed`): the difference is the
    cost of launching the kernels one by one."""

    shape: str  # what was timed, in words
    dtype: str
    batch: int
    context: int  # positions in the KV cache before the step
    measured: Measurement  # seconds per step, eager
    cost: StepCost  # bytes and FLOPs of the step (helpers.costs.decode_step_cost)
    gemv: Measurement  # GB/s of the model's own GEMVs back to back, eager, measured in the same call
    predicted_s: float  # helpers.costs.predicted_time(cost, self.bandwidth, matmul peak)
    predicted_generic_s: float  # the same with roofs.gemv (the machine's single large GEMV)
    stream_bandwidth: float  # bytes/s, the measured STREAM bandwidth
    graphed: Measurement | None = None  # seconds per step replayed as one CUDA graph; None off CUDA
    gemv_graphed: Measurement | None = None  # GB/s of the model's GEMVs replayed as one CUDA graph
    graph_exact: bool | None = None  # the graph's logits equal the eager step's, bit for bit
    datasheet: Hardware | None = None  # the GPU's row of data/hardware.csv; None: not listed / a CPU
    layout: str = "decode"  # how the weights were stored (helpers.model.LAYOUTS)
    vocab_size: int = 0  # the timed model's vocabulary (padded to a multiple of 64 on a GPU)

    @property
    def bandwidth(self) -> float:
        """Bytes/s the prediction used: the model's own GEMVs (replayed as a graph on CUDA)."""
        return (self.gemv_graphed or self.gemv).si

    @property
    def fastest(self) -> Measurement:
        """The step as fast as this stack runs it: the graph replay on CUDA, else the eager step."""
        return self.graphed or self.measured

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes the step must read / measured eager time, in bytes/s."""
        return self.cost.total_bytes / self.measured.si

    @property
    def error(self) -> float:
        """(predicted - measured) / measured, against the fastest step: -0.1 means the roofline
        predicts 10 % too fast."""
        return self.predicted_s / self.fastest.si - 1

    @property
    def error_generic(self) -> float:
        return self.predicted_generic_s / self.fastest.si - 1

    @property
    def mbu(self) -> float:
        """Model bandwidth utilisation of the eager step against the measured STREAM bandwidth."""
        return mbu(self.cost, self.measured.si, self.stream_bandwidth)

    def mbu_datasheet(self, graphed: bool = True) -> float | None:
        """MBU against the datasheet bandwidth of data/hardware.csv, how GPU decoders are compared
        (gpt-fast: 58 % on an H100): of the graph replay (graphed=True, where there is one) or of
        the eager step. None where the device has no datasheet row."""
        if self.datasheet is None:
            return None
        seconds = self.fastest.si if graphed else self.measured.si
        return mbu(self.cost, seconds, self.datasheet.bandwidth)

    @property
    def launch_overhead_s(self) -> float | None:
        """Eager step - graph replay: what launching the kernels one at a time costs. None off CUDA."""
        return None if self.graphed is None else self.measured.si - self.graphed.si

    @property
    def vs_gemv(self) -> float:
        """Achieved bandwidth as a fraction of the model's own GEMVs' (what the rest of the step costs)."""
        return self.achieved_bandwidth / self.gemv.si


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
    graph: bool | None = None,
) -> DecodeStep:
    """Time one KV-cached decode step, `model(token, cache=cache, last_only=True)`, the call
    helpers.ar.generate makes for every token after the first, with `context` positions already
    in the cache (reset to `context` before every run, so each run does the same work).

    model: a causal Transformer (timed as it is, on its device and dtype), a ModelConfig (random
    weights on `device` in model_dtype(device)) or None (GPT-2 small's shape).
    roofs: the measured roofs (measure_machine): matmul peak and STREAM bandwidth.
    gemv: GB/s to predict with; None measures the model's own GEMVs (model_gemv_bandwidth).
    graph: also time the step replayed as one CUDA graph (None: on CUDA, yes). The graph is a
    measurement tool: helpers.ar.generate stays eager."""
    check_roofs(roofs)
    if gemv is not None and (not isinstance(gemv, Measurement) or gemv.unit != "GB/s"):
        raise ValueError(f"gemv must be None or a Measurement in GB/s (from gemv_bandwidth), got {gemv!r}")
    if shape is not None and not isinstance(shape, str):
        raise ValueError(f"shape must be None or a str naming what is timed, got {shape!r}")
    if graph is not None and not isinstance(graph, bool):
        raise ValueError(f"graph must be None, True or False, got {graph!r}")
    if model is None or isinstance(model, ModelConfig):
        config = gpt2_small_config() if model is None else model
        shape = shape or ("GPT-2 small (124M)" if model is None else "custom")
        model = random_model(config, device, seed=seed)
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("model must be a causal helpers.model.Transformer, a ModelConfig or None")
    context = check_int(context, "context", 0)
    batch = check_int(batch, "batch", 1)
    if context + 1 > model.config.max_len:
        raise ValueError(f"context ({context}) + 1 new token must fit in max_len ({model.config.max_len})")
    device, dtype = model_device_dtype(model)
    cuda = gpu.runtime(device)
    if graph and cuda is None:
        raise ValueError(f"graph=True needs a CUDA device; this model is on {device.type}")
    graph = cuda is not None if graph is None else graph
    graphed = graph_exact = gemv_graphed = None
    with torch.inference_mode():
        cache, token = prefilled_cache(model, context, batch, seed)

        def step():
            cache.length = context  # every run appends at the same position
            return model(token, cache=cache, last_only=True)  # (B, 1, V)

        measured = benchmark(step, warmup=warmup, repeat=repeat, device=device)
        if graph:
            eager_logits = step().clone()  # (B, 1, V)
            captured = cuda.capture(step)  # the KV cache is preallocated: its address is static
            captured.replay()
            graph_exact = bool(torch.equal(captured.output, eager_logits))
            graphed = benchmark(captured.replay, warmup=warmup, repeat=repeat, device=device)
    if gemv is None:
        gemv = model_gemv_bandwidth(model)
        if graph:
            gemv_graphed = model_gemv_bandwidth(model, graph=True)
    cost = decode_step_cost(model.config, batch=batch, context=context, bytes_per_param=dtype.itemsize)
    bandwidth = (gemv_graphed or gemv).si
    return DecodeStep(
        shape=shape or "custom",
        dtype=str(dtype).removeprefix("torch."),
        batch=batch,
        context=context,
        measured=measured,
        cost=cost,
        gemv=gemv,
        predicted_s=predicted_time(cost, bandwidth, roofs.peak_flops),
        predicted_generic_s=predicted_time(cost, roofs.bandwidth, roofs.peak_flops),
        stream_bandwidth=roofs.stream_bandwidth,
        graphed=graphed,
        gemv_graphed=gemv_graphed,
        graph_exact=graph_exact,
        datasheet=None if cuda is None else match_hardware(cuda.name()),
        layout=layout_of(model),
        vocab_size=model.config.vocab_size,
    )


def model_gemvs(model: Transformer):
    """A function that multiplies one vector by every weight matrix of `model` (every layer with
    `in_features`: nn.Linear, or helpers.precision.Int8Linear), back to back in step order."""
    device, dtype = model_device_dtype(_check_transformer(model))
    layers = [m for m in model.modules() if hasattr(m, "in_features")]
    inputs = [torch.rand(1, m.in_features, device=device, dtype=dtype) for m in layers]  # (1, in) each

    def run():
        for layer, x in zip(layers, inputs, strict=True):
            layer(x)  # (1, out)

    return run


def model_gemv_bandwidth(
    model: Transformer, *, device=None, warmup: int = 2, repeat: int = 10, graph: bool = False
) -> Measurement:
    """GB/s reached by the model's own matrix-vector products: every nn.Linear of the model (the
    output head included) applied to one input vector, back to back in the order of a decode
    step, with nothing else in between. Weight bytes / time. This is the bandwidth a decode
    step's weight reads can reach here; the full step loses against it only what is not a weight
    matmul (attention, norms, Python). device: unused (the model's own device is timed).
    graph=True (CUDA only): the GEMVs replayed as one CUDA graph, so that launching 49 kernels one
    by one does not count: the bandwidth of the kernels themselves."""
    device, dtype = model_device_dtype(_check_transformer(model))
    if not isinstance(graph, bool):
        raise ValueError(f"graph must be True or False, got {graph!r}")
    cuda = gpu.runtime(device)
    if graph and cuda is None:
        raise ValueError(f"graph=True needs a CUDA device; this model is on {device.type}")
    nbytes = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)) * dtype.itemsize
    with torch.inference_mode():
        run = model_gemvs(model)
        if graph:
            run = cuda.capture(run).replay
        seconds = benchmark(run, warmup=warmup, repeat=repeat, device=device)
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
    _check_transformer(model)
    if not isinstance(roofs, Roofs) or not isinstance(step, DecodeStep):
        raise ValueError("roofs must come from measure_machine and step from decode_step")
    if isinstance(widths, str) or not hasattr(widths, "__iter__"):
        raise ValueError(f"widths must be a list of ints >= 1, got {widths!r}")
    widths = list(widths)
    if not widths:
        raise ValueError("widths must hold at least one width")
    for w in widths:
        check_int(w, "each width", 1)
        if w > model.config.max_len:
            raise ValueError(f"width {w} is longer than the model's max_len ({model.config.max_len})")
    device, dtype = model_device_dtype(model)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", 0))
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


@dataclass
class TinyRun:
    """Both decoders on the course's tiny shape, N tokens each."""

    note: str
    n_tokens: int
    steps: int
    params: int
    ar: DecoderRun
    dllm: DecoderRun


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
    check_roofs(roofs)
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    steps = check_int(steps, "steps", 1)
    if steps > n_tokens:
        raise ValueError(f"steps ({steps}) must be <= n_tokens ({n_tokens}): each pass commits at least one token")
    device = as_device(device)
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
