"""The whole helpers.bench run, stage by stage, as one JSON-ready dict that survives a failure.

Each stage runs in isolation: one that raises is recorded under "errors" (its stage, the
exception, the traceback) and the others still run; a stage that needs a failed one (the width
sweep needs the decode step it is compared with) is recorded as skipped, with the reason.
After every stage, `on_stage` receives the dict as it stands (the command line rewrites its JSON
file then), so a run cut short still leaves every stage it finished.

On a GPU, about a second of large matmuls runs before the first timed stage (clocks ramp up
from idle, cuBLAS loads, the L2 flush buffer is allocated), and an nvidia-smi snapshot (clocks,
power, temperature, throttle reasons) is taken at the start and after each stage.
"""

from __future__ import annotations

import gc
import time
import traceback
from dataclasses import dataclass, field

import torch

from helpers.bench import graphs
from helpers.bench.decode import DECODE_CONTEXT, EAGER_CONTAINS
from helpers.bench.graphs import eager_and_graph, matmul_sweep, time_shape
from helpers.bench.precision import time_formats
from helpers.bench.roofs import FULL, QUICK, BenchSettings, measure_machine
from helpers.bench.rows import as_json
from helpers.bench.tiny import TINY_STEPS, tiny_models_n256
from helpers.bench.widths import width_sweep
from helpers.common.device import as_device
from helpers.common.validation import check_int
from helpers.decoding.model import ModelConfig, gpt2_small_config, pad_vocab
from helpers.measure import gpu
from helpers.measure.machine import machine_summary
from helpers.roofline.fixtures import TINY_TOKENS, bidirectional_twin, random_model

GPU_SHAPES_BESIDE = ("tiny (0.8M)", "wide (1.8B)")  # stage 6's shapes besides stage 2's GPT-2 small
TIMING = {
    "headline": "fields without _eager use a CUDA-graph replay where one was timed (timed_as says which)",
    "eager": EAGER_CONTAINS,
    "roofs": "one kernel per call (STREAM, GEMV, matmul): launch cost is negligible at their sizes",
    "gpu_times": "helpers.measure.gpu.do_bench: CUDA events, many calls per sample, L2 flushed before each sample",
}


@dataclass
class Run:
    """What the stages share: the arguments, and each finished stage's measurement."""

    device: torch.device
    settings: BenchSettings
    config: ModelConfig
    shape: str
    context: int
    n_tokens: int
    steps: int
    custom_shape: bool
    done: dict = field(default_factory=dict)  # stage name -> its measurement

    @property
    def on_gpu(self) -> bool:
        return self.device.type != "cpu" or gpu.runtime(self.device) is not None


# ----------------------------------------------------------------------------- the stages


def _roofs(run: Run) -> dict:
    run.done["roofs"] = roofs = measure_machine(run.device, settings=run.settings)
    return {"roofs": as_json(roofs)}


def _decode(run: Run) -> dict:
    model = random_model(run.config, run.device)
    main = time_shape(model, run.shape, run.context, roofs=run.done["roofs"], repeat=run.settings.decode_repeat)
    run.done["decode"], run.done["model"] = main, model  # the width sweep builds its twin from this model
    ops = {"shape": run.shape, "total": main.ops.total, "compute": main.ops.compute}
    return {"decode": as_json(main.step), "ops_per_step": ops, "cuda_graphs": main.step.graphed is not None}


def _width_sweep(run: Run) -> dict:
    twin = bidirectional_twin(run.done.pop("model"))
    widths = [w for w in run.settings.widths if w <= run.config.max_len]
    step = run.done["decode"].step
    sweep = width_sweep(twin, widths, roofs=run.done["roofs"], step=step, warmup=1, repeat=run.settings.width_repeat)
    return {"width_sweep": [as_json(p) for p in sweep]}


def _tiny(run: Run) -> dict:
    tiny = tiny_models_n256(
        roofs=run.done["roofs"], n_tokens=run.n_tokens, steps=run.steps, device=run.device,
        repeat=run.settings.tiny_repeat,
    )  # fmt: skip
    return {"tiny": as_json(tiny)}


def _formats(run: Run) -> dict:
    formats = time_formats(random_model(run.config), context=run.context, rounds=run.settings.format_rounds)
    return {"formats": [as_json(f) for f in formats]}


def _graphs(run: Run) -> dict:
    others = eager_and_graph(run.device, GPU_SHAPES_BESIDE, roofs=run.done["roofs"], repeat=run.settings.decode_repeat)
    main = run.done.get("decode")
    shapes = others if main is None else [main, *others] if run.custom_shape else [others[0], main, *others[1:]]
    return {"graphs": [as_json(r) for r in shapes]}


def _matmul_sweep(run: Run) -> dict:
    sweep = matmul_sweep(run.device, graphs.MATMUL_SWEEP, repeat=run.settings.repeat)
    return {
        "matmul_sweep": [{"n": n, "gflop_s": round(m.value, 1), "iqr_gflop_s": round(m.spread, 1)} for n, m in sweep]
    }


def _gpu_only(run: Run) -> str | None:
    return None if run.on_gpu else "GPU only"


@dataclass(frozen=True)
class Stage:
    name: str  # the JSON key it fills (and the name in "stages" and "errors")
    what: str  # the progress line
    needs: tuple[str, ...]  # stages whose measurements it uses
    run: object  # Run -> {JSON key: value}
    skip: object = None  # Run -> None (run it) or the reason it does not apply here


STAGES = (
    Stage("roofs", "1. measuring the roofs: STREAM copy and triad, GEMV, matmul", (), _roofs),
    Stage("decode", "2. timing a decode step ({shape}, {context} cached positions)", ("roofs",), _decode),
    Stage("width_sweep", "3. timing diffusion passes over W positions", ("roofs", "decode"), _width_sweep),
    Stage(
        "tiny", "4. generating N = {n_tokens} tokens with the tiny models (AR, dLLM K = {steps})", ("roofs",), _tiny,
        lambda run: "MPS lacks float64, which the diffusion sampler uses" if run.device.type == "mps" else None,
    ),
    Stage(
        "formats", "5. timing the decode step ({shape}) with weights in fp32, bf16 and int8", (), _formats,
        lambda run: "timed on the CPU, where the course's models run in fp32" if run.on_gpu else None,
    ),
    Stage("graphs", "6. three shapes, eager and as a CUDA graph", ("roofs",), _graphs, _gpu_only),
    Stage("matmul_sweep", "7. the matmul roof by size", (), _matmul_sweep, _gpu_only),
)  # fmt: skip


# ----------------------------------------------------------------------------- the run


def snapshot(device) -> dict | None:
    """The GPU's clocks, power and throttle reasons now (nvidia-smi); None off CUDA."""
    cuda = gpu.runtime(device)
    return None if cuda is None else cuda.snapshot()


def warm_up(device, seconds: float) -> float:
    """About `seconds` of large matmuls before anything is timed; the seconds spent."""
    cuda = gpu.runtime(device)
    if cuda is not None:
        return cuda.warm_up(seconds)
    a = torch.randn(512, 512, device=device)  # (n, n)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ a  # (n, n)
    return time.perf_counter() - start


def _free_memory(device) -> None:
    gc.collect()
    if gpu.runtime(device) is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _run_stage(stage: Stage, run: Run, result: dict, progress) -> dict:
    """Run one stage in isolation; its entry for result["stages"]."""
    entry = {"stage": stage.name, "status": "ok", "seconds": 0.0}
    reason = stage.skip(run) if stage.skip else None
    missing = [need for need in stage.needs if need not in run.done]
    if reason is None and missing:
        reason = f"needs {', '.join(missing)}, which did not finish"
    if reason is not None:
        return {**entry, "status": "skipped", "reason": reason}
    if progress is not None:
        progress(stage.what.format(shape=run.shape, context=run.context, n_tokens=run.n_tokens, steps=run.steps))
    start = time.perf_counter()
    try:
        result.update(stage.run(run))
    except Exception as err:  # noqa: BLE001 -- any failure of one stage is recorded, never fatal to the others
        entry["status"] = "failed"
        result["errors"].append(
            {"stage": stage.name, "exception": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        )
        if progress is not None:
            progress(f"   stage {stage.name} failed: {type(err).__name__}: {err}")
        run.done.pop("model", None)
        _free_memory(run.device)
    entry["seconds"] = round(time.perf_counter() - start, 2)
    try:
        entry["gpu_after"] = snapshot(run.device)
    except Exception as err:  # noqa: BLE001 -- a snapshot must never end the run
        entry["gpu_after"] = {"error": f"{type(err).__name__}: {err}"}
    return entry


def _check_args(device, quick, settings, progress, on_stage, steps, n_tokens, context, decode_config):
    if not isinstance(quick, bool):
        raise ValueError(f"quick must be True or False, got {quick!r}")
    if settings is not None and not isinstance(settings, BenchSettings):
        raise ValueError(f"settings must be None or a BenchSettings (FULL, QUICK or your own), got {settings!r}")
    for name, fn in (("progress", progress), ("on_stage", on_stage)):
        if fn is not None and not callable(fn):
            raise ValueError(f"{name} must be None or a callable, got {fn!r}")
    steps = check_int(steps, "steps", 1)
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    context = check_int(context, "context", 0)
    if steps > n_tokens:
        raise ValueError(f"steps ({steps}) must be <= n_tokens ({n_tokens}): each pass commits at least one token")
    config = gpt2_small_config() if decode_config is None else decode_config
    if not isinstance(config, ModelConfig):
        raise ValueError(f"decode_config must be a ModelConfig or None, got {type(config).__name__}")
    if not config.causal:
        raise ValueError("decode_config must be causal: stage 2 times an AR decode step")
    if context + 1 > config.max_len:
        raise ValueError(f"context ({context}) + 1 must fit in the decode model's max_len ({config.max_len})")
    return steps, n_tokens, context, config


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
    on_stage=None,
) -> dict:
    """Every stage of STAGES, as one JSON-ready dict (a failed stage under "errors").
    progress: an optional callable that receives a line of text before each stage (the command
    line prints them to stderr); on_stage: one that receives the dict after each stage.
    decode_config: the shape timed in stages 2 and 3 (default GPT-2 small; its vocabulary padded
    to a multiple of 64 on a GPU).

    On a GPU (CUDA or MPS) the weight layout is chosen by measurement, and stage 6 adds the tiny
    and the 1.8B wide shapes beside GPT-2 small (eager and, on CUDA, as a CUDA graph), stage 7 a
    matmul sweep. On MPS stage 4 is left out: the diffusion sampler works in float64, which MPS lacks."""
    device = as_device(device)
    steps, n_tokens, context, config = _check_args(
        device, quick, settings, progress, on_stage, steps, n_tokens, context, decode_config
    )
    settings = settings or (QUICK if quick else FULL)
    run = Run(device, settings, config, "GPT-2 small (124M)" if decode_config is None else "custom", context,
              n_tokens, steps, decode_config is not None)  # fmt: skip
    if run.on_gpu and decode_config is None:
        run.config = pad_vocab(config)  # aligned rows for the GPU's kernels (helpers.decoding.model.pad_vocab)
    command = "python -m helpers.bench" + (" --quick" if quick else "") + f" --device {device.type}"
    result = {
        "command": command + " --json",
        "machine": machine_summary(device),
        "settings": {"quick": quick, "warmup": settings.warmup, "repeat": settings.repeat},
        "timing": TIMING,
        "gpu_start": snapshot(device),
        "warm_up_s": None,
        "cuda_graphs": False,  # were the decode steps also replayed as CUDA graphs?
        "roofs": None, "decode": None, "width_sweep": [], "tiny": None, "formats": [], "ops_per_step": None,
        "graphs": [], "matmul_sweep": [],
        "stages": [], "errors": [],
    }  # fmt: skip
    try:
        result["warm_up_s"] = round(warm_up(device, settings.warm_up_s), 2)
    except Exception as err:  # noqa: BLE001 -- the stages still run, on colder clocks; the error says so
        result["errors"].append(
            {"stage": "warm_up", "exception": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
        )
    for stage in STAGES:
        result["stages"].append(_run_stage(stage, run, result, progress))
        if on_stage is not None:
            on_stage(result)
    run.done.pop("model", None)
    return result
