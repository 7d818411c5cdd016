"""Stage 6 of helpers.bench, for GPUs: launch overhead, the weight layout, the matmul roof by size.

- `count_ops`: the PyTorch operations one call dispatches, views apart. Eager PyTorch launches at
  least one GPU kernel per compute operation, each costing the host a few microseconds, so this
  count times the launch cost is a floor under an eager step's time, however few bytes it reads.
- `choose_layout`: the model's own GEMVs timed with the weights stored row-major and in the
  course's decode layout; the faster is kept (row-major unless decode wins by more than 5 %).
- `eager_and_graph`: the decode step of three shapes, each eagerly and replayed as one CUDA
  graph: the tiny course model and GPT-2 small (both launch-bound: the graph removes most of
  their time) and `gpu_wide_config` (1.8B parameters; long enough that the memory traffic,
  not the launches, sets the step's time).
- `matmul_sweep`: the bf16 matmul rate for n = 1024 ... 16384: where the compute roof is reached.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from helpers.bench.decode import DECODE_CONTEXT, DecodeStep, decode_step, model_gemv_bandwidth
from helpers.bench.roofs import Roofs
from helpers.common.validation import check_int
from helpers.decoding.model import LAYOUTS, ModelConfig, Transformer, gpt2_small_config, gpu_wide_config, pad_vocab
from helpers.measure import gpu
from helpers.measure.machine import device_memory_bytes
from helpers.measure.measurement import Measurement
from helpers.measure.timing import matmul_flops
from helpers.roofline.fixtures import layout_of, model_device_dtype, prefilled_cache, random_model, tiny_config
from helpers.roofline.shapes import shape_from_config

LAYOUT_MARGIN = 0.05  # the decode layout replaces row-major only if its GEMVs are > 5 % faster
MATMUL_SWEEP = (1024, 2048, 4096, 8192, 16384)  # n of the bf16 n x n x n matmuls in matmul_sweep
TINY_CONTEXT = 128  # cached positions of the tiny shape's step (its max_len is 257)
MEMORY_MULTIPLE = 3  # a shape is timed only if the device holds 3x its weights (model + twin + work)


# ----------------------------------------------------------------------------- counting operations


@dataclass
class OpCount:
    """PyTorch (aten) operations one call dispatched."""

    total: int  # every operation
    compute: int  # those that are not views: each launches at least one kernel on a GPU
    by_name: dict  # {operation name: count}


class _Counter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func.overloadpacket.__name__), func.is_view] += 1
        return func(*args, **(kwargs or {}))


def count_ops(fn) -> OpCount:
    """Run fn() once and count the aten operations it dispatches (PyTorch's __torch_dispatch__),
    split into views (no work, no kernel) and compute operations (at least one kernel each)."""
    if not callable(fn):
        raise ValueError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    with _Counter() as counter:
        fn()
    by_name = Counter()
    for (name, _), n in counter.ops.items():
        by_name[name] += n
    compute = sum(n for (_, is_view), n in counter.ops.items() if not is_view)
    return OpCount(total=sum(counter.ops.values()), compute=compute, by_name=dict(by_name.most_common()))


def count_step_ops(model: Transformer, context: int = 512) -> OpCount:
    """The operations of one KV-cached decode step of `model` with `context` cached positions."""
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError(f"model must be a causal helpers.decoding.model.Transformer, got {type(model).__name__}")
    with torch.inference_mode():
        cache, token = prefilled_cache(model, check_int(context, "context", 0), 1, 0)
        return count_ops(lambda: model(token, cache=cache, last_only=True))


# ----------------------------------------------------------------------------- the layout, measured


@dataclass
class LayoutChoice:
    chosen: str  # helpers.decoding.model.LAYOUTS
    gemv: dict  # {layout: Measurement in GB/s of the model's GEMVs}


def choose_layout(model: Transformer, *, repeat: int = 10) -> LayoutChoice:
    """Time the model's own GEMVs (as a CUDA graph on CUDA) in each layout and leave the model in
    the faster: row-major, unless the decode layout is more than LAYOUT_MARGIN faster."""
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.decoding.model.Transformer, got {type(model).__name__}")
    graph = gpu.runtime(model_device_dtype(model)[0]) is not None  # CUDA: time the kernels, not the launches
    gemv = {}
    for layout in LAYOUTS:
        model.set_layout_(layout)
        gemv[layout] = model_gemv_bandwidth(model, repeat=repeat, graph=graph)
    chosen = "decode" if gemv["decode"].si > (1 + LAYOUT_MARGIN) * gemv["row-major"].si else "row-major"
    model.set_layout_(chosen)
    return LayoutChoice(chosen, gemv)


# ----------------------------------------------------------------------------- three shapes, eager and graph


def gpu_shapes() -> dict[str, tuple[ModelConfig, int]]:
    """{name: (config, context)} of the three shapes stage 6 times; vocabularies padded to 64."""
    return {
        "tiny (0.8M)": (tiny_config(256), TINY_CONTEXT),
        "GPT-2 small (124M)": (pad_vocab(gpt2_small_config()), DECODE_CONTEXT),
        "wide (1.8B)": (gpu_wide_config(), DECODE_CONTEXT),
    }


@dataclass
class ShapeRun:
    """One shape's decode step on a GPU, eager and graph, with its layout choice and op count."""

    step: DecodeStep
    layout: LayoutChoice
    ops: OpCount
    params: int  # parameters of the model, tied weights once


def time_shape(model: Transformer, name: str, context: int, *, roofs: Roofs, repeat: int = 20) -> ShapeRun:
    """Choose the model's layout by measurement (off the CPU), then time its decode step: eager
    and, on CUDA, as a CUDA graph (decode_step); count the step's operations."""
    device = model_device_dtype(model)[0]
    on_cpu = device.type == "cpu" and gpu.runtime(device) is None  # the CPU keeps its rule (see 04)
    layout = LayoutChoice(layout_of(model), {}) if on_cpu else choose_layout(model)
    step = decode_step(model, roofs=roofs, context=context, repeat=repeat, shape=name)
    return ShapeRun(step, layout, count_step_ops(model, context), model.num_params())


def weight_bytes(config: ModelConfig, bytes_per_param: int = 2) -> int:
    """Bytes of a model's parameters (tied weights once) in a 2-byte format: what it needs in memory."""
    return bytes_per_param * shape_from_config(config).num_params()


def eager_and_graph(device, names, *, roofs: Roofs, repeat: int = 20, progress=None) -> list[ShapeRun]:
    """time_shape for each of the gpu_shapes() in `names`, with random weights built on the device.
    A shape whose weights need more than 1/MEMORY_MULTIPLE of the device's memory is left out."""
    shapes = gpu_shapes()
    memory = device_memory_bytes(device)
    runs = []
    for name in names:
        config, context = shapes[name]
        if memory and MEMORY_MULTIPLE * weight_bytes(config) > memory:
            continue
        if progress is not None:
            progress(f"  {name}: built on the device; layout chosen by measurement; eager and graph ...")
        runs.append(time_shape(random_model(config, device), name, context, roofs=roofs, repeat=repeat))
    return runs


def matmul_sweep(device, sizes=MATMUL_SWEEP, *, repeat: int = 10) -> list[tuple[int, Measurement]]:
    """(n, GFLOP/s) of the n x n x n matmul in the device's matmul dtype, for each n in `sizes`."""
    return [(n, matmul_flops(check_int(n, "n", 1), device=device, repeat=repeat)) for n in sizes]
