"""Stage 2 of helpers.bench: one cached decode step of the course's own decoder, timed, next to
the roofline's prediction.

The step is exactly the call helpers.decoding.ar.generate makes for every token after the first,
`model(token, cache=cache, last_only=True, check_ids=False)`, with the cache prefilled to a
realistic context. Its prediction uses the bandwidth the model's own GEMVs reach
(`model_gemv_bandwidth`, measured alongside); MBU compares the step with STREAM and, on a GPU,
with the datasheet.

What each time contains:
- eager (`measured`, fields `*_eager`): one kernel launch per operation and Python's dispatch of
  each; no host sync (generate checks the token ids once, for the prompt, so the timed step does
  not read anything back), so the host can queue steps ahead of the GPU;
- CUDA graph (`graphed`): the same kernels replayed with one launch; what the GPU itself needs.
The headline numbers (error, achieved bandwidth, MBU) use the graph where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.bench.roofs import Roofs, check_roofs
from helpers.common.validation import check_int
from helpers.decoding.model import ModelConfig, Transformer, gpt2_small_config
from helpers.measure import gpu
from helpers.measure.measurement import Measurement, benchmark
from helpers.roofline.costs import StepCost, decode_step_cost, mbu, predicted_time
from helpers.roofline.fixtures import layout_of, model_device_dtype, prefilled_cache, random_model
from helpers.roofline.hardware import Hardware, match_hardware

DECODE_CONTEXT = 512  # positions already in the KV cache when a decode step is timed (GPT-2 small: max 1024)
EAGER_CONTAINS = "one kernel launch per operation and Python's dispatch; no host sync (ids checked once per generate)"


def check_transformer(model) -> Transformer:
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.decoding.model.Transformer, got {type(model).__name__}")
    return model


@dataclass
class DecodeStep:
    """One measured decode step next to its roofline prediction.

    The prediction uses the bandwidth that the model's own matrix-vector products reach
    (model_gemv_bandwidth: every weight matrix times one vector, back to back, nothing else), since
    a GEMV's bandwidth depends on its shape and layout; on CUDA, those GEMVs replayed as one CUDA
    graph, so that the prediction holds the kernels' bandwidth, not the launch rate. The prediction
    with the machine's single large GEMV (`roofs.gemv`) is kept for comparison.

    On CUDA the step is timed twice: eagerly (`measured`: one kernel launch per operation) and
    replayed as one CUDA graph (`graphed`): the difference is the cost of launching the kernels
    one by one. Properties named `*_eager` use the eager time; the others use `fastest`."""

    shape: str  # what was timed, in words
    dtype: str
    batch: int
    context: int  # positions in the KV cache before the step
    measured: Measurement  # seconds per step, eager (see EAGER_CONTAINS)
    cost: StepCost  # bytes and FLOPs of the step (helpers.roofline.costs.decode_step_cost)
    gemv: Measurement  # GB/s of the model's own GEMVs back to back, eager, measured in the same call
    predicted_s: float  # helpers.roofline.costs.predicted_time(cost, self.bandwidth, matmul peak)
    predicted_generic_s: float  # the same with roofs.gemv (the machine's single large GEMV)
    stream_bandwidth: float  # bytes/s, the measured STREAM bandwidth
    graphed: Measurement | None = None  # seconds per step replayed as one CUDA graph; None off CUDA
    gemv_graphed: Measurement | None = None  # GB/s of the model's GEMVs replayed as one CUDA graph
    graph_exact: bool | None = None  # the graph's logits equal the eager step's, bit for bit
    datasheet: Hardware | None = None  # the GPU's row of data/hardware.csv; None: not listed / a CPU
    layout: str = "decode"  # how the weights were stored (helpers.decoding.model.LAYOUTS)
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
    def timed_as(self) -> str:
        """Which time the headline numbers use: "cuda graph" or "eager"."""
        return "eager" if self.graphed is None else "cuda graph"

    @property
    def achieved_bandwidth(self) -> float:
        """Bytes the step must read / the fastest time, in bytes/s."""
        return self.cost.total_bytes / self.fastest.si

    @property
    def achieved_bandwidth_eager(self) -> float:
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
        """Model bandwidth utilisation of the fastest step against the measured STREAM bandwidth."""
        return mbu(self.cost, self.fastest.si, self.stream_bandwidth)

    @property
    def mbu_eager(self) -> float:
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
        """Achieved bandwidth as a fraction of what the model's own GEMVs reach (graph against
        graph on CUDA): what the rest of the step costs."""
        return self.achieved_bandwidth / self.bandwidth

    @property
    def vs_gemv_eager(self) -> float:
        return self.achieved_bandwidth_eager / self.gemv.si


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
    """Time one KV-cached decode step, the call helpers.decoding.ar.generate makes for every token after
    the first, with `context` positions already in the cache (reset to `context` before every
    run, so each run does the same work).

    model: a causal Transformer (timed as it is, on its device and dtype), a ModelConfig (random
    weights on `device` in model_dtype(device)) or None (GPT-2 small's shape).
    roofs: the measured roofs (measure_machine): matmul peak and STREAM bandwidth.
    gemv: GB/s to predict with; None measures the model's own GEMVs (model_gemv_bandwidth).
    graph: also time the step replayed as one CUDA graph (None: on CUDA, yes). The graph is a
    measurement tool: helpers.decoding.ar.generate stays eager."""
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
        raise ValueError("model must be a causal helpers.decoding.model.Transformer, a ModelConfig or None")
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
        step = decode_step_fn(model, context, batch, seed)
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


def decode_step_fn(model: Transformer, context: int, batch: int = 1, seed: int = 0):
    """The decode step decode_step times and captures, as a function of no arguments: the cache
    prefilled with `context` positions, reset to them before each call, one new token. Call it
    under torch.inference_mode()."""
    cache, token = prefilled_cache(model, context, batch, seed)

    def step():
        cache.length = context  # every run appends at the same position
        return model(token, cache=cache, last_only=True, check_ids=False)  # (B, 1, V)

    return step


def model_gemvs(model: Transformer):
    """A function that multiplies one vector by every weight matrix of `model` (every layer with
    `in_features`: nn.Linear, or helpers.bench.precision.Int8Linear), back to back in step order."""
    device, dtype = model_device_dtype(check_transformer(model))
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
    device, dtype = model_device_dtype(check_transformer(model))
    if not isinstance(graph, bool):
        raise ValueError(f"graph must be True or False, got {graph!r}")
    cuda = gpu.runtime(device)
    if graph and cuda is None:
        raise ValueError(f"graph=True needs a CUDA device; this model is on {device.type}")
    nbytes = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)) * dtype.itemsize
    with torch.inference_mode():
        run = model_gemvs(model)
        captured = cuda.capture(run) if graph else None  # held while timed: it keeps the inputs alive
        seconds = benchmark(captured.replay if graph else run, warmup=warmup, repeat=repeat, device=device)
    return Measurement.from_samples([nbytes / t / 1e9 for t in seconds.samples], "GB/s")
