"""The whole helpers.bench run as one JSON-ready dict, the table it prints, and its command line.

Each JSON section is a dataclass whose fields are the JSON keys (rounded, in plain units), built
from a measurement by its `of` method and turned into a dict by dataclasses.asdict: the
measurements themselves know nothing about JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import asdict, dataclass

import torch

from helpers.bench.graphs import ShapeRun, eager_and_graph, matmul_sweep, time_shape
from helpers.bench.passes import (
    DECODE_CONTEXT,
    TINY_STEPS,
    DecoderRun,
    DecodeStep,
    TinyRun,
    WidthPoint,
    tiny_models_n256,
    width_sweep,
)
from helpers.bench.roofs import FULL, QUICK, BenchSettings, Roofs, measure_machine
from helpers.device import as_device, pick_device
from helpers.fixtures import TINY_TOKENS, bidirectional_twin, random_model
from helpers.machine import machine_summary
from helpers.measurement import Measurement
from helpers.model import ModelConfig, gpt2_small_config, pad_vocab
from helpers.precision import FormatStep, time_formats
from helpers.validation import check_int

GPU_SHAPES_BESIDE = ("tiny (0.8M)", "wide (1.8B)")  # stage 6's shapes besides stage 2's GPT-2 small

# ----------------------------------------------------------------------------- the JSON sections


def _ms(seconds: float, digits: int) -> float:
    return round(1e3 * seconds, digits)


@dataclass(frozen=True)
class RoofsJSON:
    device: str
    threads: int
    array_mib: float
    copy_gb_s: float
    copy_iqr_gb_s: float
    triad_gb_s: float
    triad_iqr_gb_s: float
    gemv_gb_s: float
    gemv_iqr_gb_s: float
    gemv_dtype: str
    matmul_gflop_s: float
    matmul_iqr_gflop_s: float
    matmul_dtype: str
    ridge_flop_per_byte: float
    ridge_bandwidth: str  # which bandwidth the ridge uses: "gemv"
    ridge_stream_flop_per_byte: float
    matmul_n: int

    @classmethod
    def of(cls, r: Roofs) -> RoofsJSON:
        return cls(
            r.device, r.threads, round(r.array_bytes / 2**20, 1),
            round(r.copy.value, 2), round(r.copy.spread, 2), round(r.triad.value, 2), round(r.triad.spread, 2),
            round(r.gemv.value, 2), round(r.gemv.spread, 2), r.gemv_dtype,
            round(r.matmul.value, 1), round(r.matmul.spread, 1), r.matmul_dtype,
            round(r.ridge, 2), "gemv", round(r.ridge_stream, 2), r.matmul_n,
        )  # fmt: skip


def _opt_ms(m: Measurement | None, digits: int = 4) -> float | None:
    return None if m is None else _ms(m.value, digits)


def _opt_round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


@dataclass(frozen=True)
class DecodeJSON:
    shape: str
    dtype: str
    batch: int
    context: int
    vocab_size: int
    layout: str  # how the weights were stored (helpers.model.LAYOUTS)
    measured_ms: float  # eager: the call helpers.ar.generate makes
    measured_iqr_ms: float
    graph_ms: float | None  # replayed as one CUDA graph; None off CUDA
    graph_iqr_ms: float | None
    graph_exact: bool | None  # the graph's logits equal the eager step's, bit for bit
    launch_overhead_ms: float | None  # eager - graph
    gemv_model_gb_s: float  # the model's own GEMVs, eager
    gemv_model_graph_gb_s: float | None  # the same, replayed as one CUDA graph (what predictions use)
    predicted_ms: float
    error_pct: float  # prediction vs the fastest step (graph on CUDA)
    predicted_generic_ms: float
    error_generic_pct: float
    bytes_per_step: int
    flops_per_step: int
    achieved_gb_s: float  # eager
    mbu_vs_stream: float  # eager step, against measured STREAM
    datasheet_device: str | None  # row of data/hardware.csv matched to the GPU's name
    datasheet_gb_s: float | None
    mbu_vs_datasheet_eager: float | None
    mbu_vs_datasheet_graph: float | None
    vs_gemv: float

    @classmethod
    def of(cls, d: DecodeStep) -> DecodeJSON:
        sheet = d.datasheet
        return cls(
            d.shape, d.dtype, d.batch, d.context, d.vocab_size, d.layout,
            _ms(d.measured.value, 4), _ms(d.measured.spread, 4),
            _opt_ms(d.graphed), None if d.graphed is None else _ms(d.graphed.spread, 4), d.graph_exact,
            None if d.launch_overhead_s is None else _ms(d.launch_overhead_s, 4),
            round(d.gemv.value, 2), None if d.gemv_graphed is None else round(d.gemv_graphed.value, 2),
            _ms(d.predicted_s, 4), round(100 * d.error, 1), _ms(d.predicted_generic_s, 4),
            round(100 * d.error_generic, 1), int(d.cost.total_bytes), int(d.cost.flops),
            round(d.achieved_bandwidth / 1e9, 2), round(d.mbu, 3),
            None if sheet is None else sheet.device, None if sheet is None else sheet.bandwidth_gb_s,
            _opt_round(d.mbu_datasheet(graphed=False), 3),
            _opt_round(d.mbu_datasheet() if d.graphed is not None else None, 3),
            round(d.vs_gemv, 3),
        )  # fmt: skip


@dataclass(frozen=True)
class ShapeJSON:
    decode: DecodeJSON
    params: int
    layout_gemv_gb_s: dict  # {layout: GB/s of the model's GEMVs}: the measurement behind decode.layout
    ops_per_step: int  # aten operations one step dispatches
    compute_ops_per_step: int  # of those, not views: each launches at least one GPU kernel

    @classmethod
    def of(cls, run: ShapeRun) -> ShapeJSON:
        gemv = {name: round(m.value, 2) for name, m in run.layout.gemv.items()}
        return cls(DecodeJSON.of(run.step), run.params, gemv, run.ops.total, run.ops.compute)


@dataclass(frozen=True)
class WidthJSON:
    width: int
    measured_ms: float
    predicted_ms: float
    ratio: float
    predicted_ratio: float
    intensity: float

    @classmethod
    def of(cls, p: WidthPoint) -> WidthJSON:
        return cls(
            p.width, _ms(p.measured.value, 3), _ms(p.predicted_s, 3),
            round(p.ratio, 2), round(p.predicted_ratio, 2), round(p.intensity, 2),
        )  # fmt: skip


@dataclass(frozen=True)
class DecoderJSON:
    decoder: str
    measured_ms: float
    measured_iqr_ms: float
    passes: int
    ms_per_pass: float
    predicted_ms: float

    @classmethod
    def of(cls, run: DecoderRun) -> DecoderJSON:
        return cls(
            run.decoder, _ms(run.measured.value, 2), _ms(run.measured.spread, 2),
            run.passes, _ms(run.per_pass_s, 3), _ms(run.predicted_s, 3),
        )  # fmt: skip


@dataclass(frozen=True)
class TinyJSON:
    note: str
    n_tokens: int
    steps: int
    params: int
    ar: DecoderJSON
    dllm: DecoderJSON
    dllm_speedup: float  # AR wall time / dLLM wall time

    @classmethod
    def of(cls, t: TinyRun) -> TinyJSON:
        speedup = round(t.ar.measured.si / t.dllm.measured.si, 2)
        return cls(t.note, t.n_tokens, t.steps, t.params, DecoderJSON.of(t.ar), DecoderJSON.of(t.dllm), speedup)


@dataclass(frozen=True)
class FormatJSON:
    format: str
    measured_ms: float | None  # None: the format could not run here (see note)
    measured_iqr_ms: float | None
    gemvs_ms: float | None
    bytes_per_step: int
    achieved_gb_s: float | None
    note: str

    @classmethod
    def of(cls, f: FormatStep) -> FormatJSON:
        timed = f.measured is not None
        return cls(
            f.fmt,
            _ms(f.measured.value, 3) if timed else None,
            _ms(f.measured.spread, 3) if timed else None,
            None if f.gemvs is None else _ms(f.gemvs.value, 3),
            int(f.cost.total_bytes),
            round(f.bandwidth / 1e9, 2) if timed else None,
            f.note,
        )


def as_json(result) -> dict:
    """A measurement of this package (Roofs, DecodeStep, WidthPoint, DecoderRun, TinyRun, ShapeRun
    or helpers.precision.FormatStep) as the dict helpers.bench's JSON holds for it."""
    for kind, row in (
        (Roofs, RoofsJSON), (DecodeStep, DecodeJSON), (WidthPoint, WidthJSON),
        (DecoderRun, DecoderJSON), (TinyRun, TinyJSON), (FormatStep, FormatJSON), (ShapeRun, ShapeJSON),
    ):  # fmt: skip
        if isinstance(result, kind):
            return asdict(row.of(result))
    raise ValueError(f"result must be a measurement of helpers.bench or helpers.precision, got {type(result).__name__}")


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
    """Every stage, as one JSON-ready dict. `progress`: an optional callable that receives
    a line of text before each stage (the command line prints them to stderr).
    decode_config: the shape timed in stages 2 and 3 (default GPT-2 small; its vocabulary padded
    to a multiple of 64 on a GPU).

    On a GPU (CUDA or MPS) the weight layout is chosen by measurement, and stage 6 adds the tiny
    and the 1.8B wide shapes beside GPT-2 small (eager and, on CUDA, as a CUDA graph) and a matmul
    sweep. On MPS stage 4 is left out: the diffusion sampler works in float64, which MPS lacks."""
    device = as_device(device)
    if not isinstance(quick, bool):
        raise ValueError(f"quick must be True or False, got {quick!r}")
    if settings is not None and not isinstance(settings, BenchSettings):
        raise ValueError(f"settings must be None or a BenchSettings (FULL, QUICK or your own), got {settings!r}")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be None or a callable taking a line of text, got {progress!r}")
    settings = settings or (QUICK if quick else FULL)
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
    gpu = device.type != "cpu"
    if gpu and decode_config is None:
        config = pad_vocab(config)  # aligned rows for the GPU's kernels (helpers.model.pad_vocab)
    shape = "GPT-2 small (124M)" if decode_config is None else "custom"

    _log(progress, "measuring the roofs: STREAM copy and triad, GEMV, matmul ...")
    roofs = measure_machine(device, settings=settings)
    _log(progress, f"timing a decode step ({shape}, {context} cached positions) ...")
    model = random_model(config, device)
    main_run = time_shape(model, shape, context, roofs=roofs, repeat=settings.decode_repeat)
    step = main_run.step
    _log(progress, "timing diffusion passes over W positions ...")
    twin = bidirectional_twin(model)
    del model
    widths = [w for w in settings.widths if w <= config.max_len]
    sweep = width_sweep(twin, widths, roofs=roofs, step=step, warmup=1, repeat=settings.width_repeat)
    del twin
    tiny = None
    if device.type != "mps":
        _log(progress, f"generating N = {n_tokens} tokens with the tiny models (AR, dLLM K = {steps}) ...")
        tiny = tiny_models_n256(roofs=roofs, n_tokens=n_tokens, steps=steps, device=device, repeat=settings.tiny_repeat)
    formats, shapes, matmuls = [], [], []
    if not gpu:  # the weight formats are timed on the CPU, where the course's models run in fp32
        _log(progress, f"timing the decode step ({shape}) with weights in fp32, bf16 and int8 ...")
        formats = time_formats(random_model(config), context=context, rounds=settings.format_rounds)
    else:
        _log(progress, "three shapes, eager and as a CUDA graph; the matmul roof by size ...")
        others = eager_and_graph(
            device, GPU_SHAPES_BESIDE, roofs=roofs, repeat=settings.decode_repeat, progress=progress
        )
        shapes = [others[0], main_run, *others[1:]] if decode_config is None else [main_run, *others]
        matmuls = matmul_sweep(device, repeat=settings.repeat)
    command = "python -m helpers.bench" + (" --quick" if quick else "") + f" --device {device.type}"
    return {
        "command": command + " --json",
        "machine": machine_summary(device),
        "settings": {"quick": quick, "warmup": settings.warmup, "repeat": settings.repeat},
        "cuda_graphs": step.graphed is not None,  # were the decode steps also replayed as CUDA graphs?
        "roofs": as_json(roofs),
        "decode": as_json(step),
        "width_sweep": [as_json(p) for p in sweep],
        "tiny": None if tiny is None else as_json(tiny),
        "formats": [as_json(f) for f in formats],
        "ops_per_step": {"shape": shape, "total": main_run.ops.total, "compute": main_run.ops.compute},
        "graphs": [as_json(r) for r in shapes],
        "matmul_sweep": [{"n": n, "gflop_s": round(m.value, 1), "iqr_gflop_s": round(m.spread, 1)} for n, m in matmuls],
    }


# ----------------------------------------------------------------------------- the table and the command line


def format_report(result: dict) -> str:
    """The dict from run_bench as a readable table."""
    m, r, d = result["machine"], result["roofs"], result["decode"]
    lines = [
        f"helpers.bench on {m['device']}: {m['cpu']}, torch {m['torch']}"
        + (" (quick)" if result["settings"]["quick"] else ""),
        f"Roofs: medians of {result['settings']['repeat']} runs, arrays of {r['array_mib']} MiB "
        f"(last-level cache {m['llc_mib']} MiB)",
        f"  STREAM copy      {r['copy_gb_s']:9.2f} GB/s     (IQR {r['copy_iqr_gb_s']})",
        f"  STREAM triad     {r['triad_gb_s']:9.2f} GB/s     (IQR {r['triad_iqr_gb_s']})",
        f"  GEMV y = W x     {r['gemv_gb_s']:9.2f} GB/s     (IQR {r['gemv_iqr_gb_s']}; {r['gemv_dtype']}, batch 1, "
        "4096 columns)",
        f"  matmul peak      {r['matmul_gflop_s']:9.1f} GFLOP/s  (IQR {r['matmul_iqr_gflop_s']}; {r['matmul_dtype']}, "
        f"n = {r['matmul_n']})",
        f"  ridge point      {r['ridge_flop_per_byte']:9.2f} FLOP/B   = matmul peak / GEMV bandwidth "
        f"({r['ridge_stream_flop_per_byte']} with the STREAM bandwidth)",
        *_decode_lines(d, result.get("ops_per_step")),
        "One diffusion pass over W positions (bidirectional, same weights) in AR decode steps:",
        "      W   pass ms   measured ratio   roofline ratio   FLOP/B",
    ]
    for p in result["width_sweep"]:
        lines.append(
            f"  {p['width']:5d} {p['measured_ms']:9.2f} {p['ratio']:16.2f} {p['predicted_ratio']:17.2f} "
            f"{p['intensity']:8.2f}"
        )
    lines += _tiny_lines(result.get("tiny"))
    lines += _format_lines(result.get("formats"), d["shape"])
    lines += _graph_lines(result.get("graphs"), result.get("matmul_sweep"))
    return "\n".join(lines)


def _decode_lines(d: dict, ops: dict | None) -> list[str]:
    lines = [
        f"Decode step: {d['shape']}, random weights, {d['dtype']}, vocabulary {d['vocab_size']}, {d['layout']} "
        f"layout, batch {d['batch']}, {d['context']} positions in the KV cache",
        f"  measured         {d['measured_ms']:9.3f} ms/token (IQR {d['measured_iqr_ms']}; eager)",
    ]
    if d["graph_ms"] is not None:
        lines.append(
            f"  as a CUDA graph  {d['graph_ms']:9.3f} ms/token (IQR {d['graph_iqr_ms']}; launch overhead "
            f"{d['launch_overhead_ms']} ms; logits identical to eager: {d['graph_exact']})"
        )
    if ops:
        lines.append(f"  operations       {ops['total']:9d} per step, {ops['compute']} of them compute (not views)")
    lines += [
        f"  model's GEMVs    {d['gemv_model_gb_s']:9.2f} GB/s     (its weight matrices times one vector, back to back)",
        f"  predicted        {d['predicted_ms']:9.3f} ms/token (roofline with the model's GEMV bandwidth"
        + (f", {d['gemv_model_graph_gb_s']} GB/s as a graph" if d["gemv_model_graph_gb_s"] is not None else "")
        + f"; error {d['error_pct']:+.1f} %)",
        f"  predicted        {d['predicted_generic_ms']:9.3f} ms/token (with the single large GEMV above; "
        f"error {d['error_generic_pct']:+.1f} %)",
        f"  bytes per step   {d['bytes_per_step'] / 1e6:9.1f} MB -> {d['achieved_gb_s']} GB/s achieved = "
        f"{100 * d['vs_gemv']:.0f} % of the model's GEMVs; MBU {100 * d['mbu_vs_stream']:.0f} % of STREAM",
    ]
    if d["datasheet_device"] is not None:
        graph = d["mbu_vs_datasheet_graph"]
        lines.append(
            f"  MBU vs datasheet {100 * d['mbu_vs_datasheet_eager']:8.1f} % eager"
            + (f", {100 * graph:.1f} % as a graph" if graph is not None else "")
            + f" (of {d['datasheet_gb_s']:g} GB/s, {d['datasheet_device']} in data/hardware.csv)"
        )
    return lines


def _tiny_lines(t: dict | None) -> list[str]:
    if t is None:
        return ["Tiny models end to end: not run on MPS (the diffusion sampler works in float64)"]
    lines = [
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
    return lines


def _format_lines(formats: list | None, shape: str) -> list[str]:
    if not formats:
        return []
    lines = [f"One decode step ({shape}) with its weights in three formats, timed in turn:"]
    lines += ["  format   measured ms   bytes/step   time vs fp32   bytes vs fp32"]
    base = formats[0]
    for f in formats:
        if f["measured_ms"] is None:
            lines.append(f"  {f['format']:6s}   not timed: {f['note']}")
            continue
        lines.append(
            f"  {f['format']:6s} {f['measured_ms']:13.2f} {f['bytes_per_step'] / 1e6:10.1f} MB "
            f"{f['measured_ms'] / base['measured_ms']:14.2f} {f['bytes_per_step'] / base['bytes_per_step']:15.2f}"
        )
    return lines


_EXACT = {True: "bitwise", False: "differs", None: "-"}  # graph_exact: are the graph's logits the eager step's?


def _graph_lines(graphs: list | None, matmuls: list | None) -> list[str]:
    lines = []
    if graphs:
        lines += [
            "Decode step by shape, batch 1: eager (a launch per operation) against one CUDA graph",
            "  shape               params  compute  datasheet  roofline     eager     graph   MBU of datasheet"
            "  graph =",
            "                               ops      ms (100%)  ms (GEMV)    ms        ms      eager   graph    eager",
        ]
        for g in graphs:
            d = g["decode"]
            sheet = "-" if d["datasheet_gb_s"] is None else f"{d['bytes_per_step'] / d['datasheet_gb_s'] / 1e6:.4f}"
            graph_ms = "-" if d["graph_ms"] is None else f"{d['graph_ms']:.4f}"
            mbu = "  ".join("    -" if x is None else f"{100 * x:4.0f}%" for x in (
                d["mbu_vs_datasheet_eager"], d["mbu_vs_datasheet_graph"]))  # fmt: skip
            lines.append(
                f"  {d['shape']:18s} {g['params'] / 1e6:7.1f}M {g['compute_ops_per_step']:6d} {sheet:>10s} "
                f"{d['predicted_ms']:10.4f} {d['measured_ms']:9.4f} {graph_ms:>9s}   {mbu}"
                f"  {_EXACT[d['graph_exact']]:>7s}"
            )
    if matmuls:
        lines.append("Matmul roof by size: " + ", ".join(f"n = {m['n']}: {m['gflop_s']:.0f} GFLOP/s" for m in matmuls))
    return lines


def reference_summary(result: dict) -> str:
    """A run_bench result (a data/bench_*.json) in a few lines: what it ran on and how it was set,
    the roofs, and for each shape its datasheet time (bytes / datasheet bandwidth), its roofline
    (with the model's own GEMV bandwidth), its eager and CUDA-graph times and their MBU."""
    m, r = result["machine"], result["roofs"]
    setup = f"{m['device']}, torch {m['torch']}"
    if "cuda" in m:
        setup += f", CUDA {m['cuda']}, driver {m.get('driver_version', '?')}, TF32 matmuls {m['tf32_matmul']}"
    lines = [
        f"{setup} ({result['command']})",
        f"  roofs: STREAM {max(r['copy_gb_s'], r['triad_gb_s']):.0f} GB/s, GEMV {r['gemv_gb_s']:.0f} GB/s "
        f"({r['gemv_dtype']}), matmul {r['matmul_gflop_s'] / 1e3:.1f} TFLOP/s "
        f"({r['matmul_dtype']}, n = {r['matmul_n']})",
    ]
    graphs = result.get("graphs") or []
    if not graphs:
        lines += _decode_lines(result["decode"], result.get("ops_per_step"))
    return "\n".join(lines + _graph_lines(graphs, result.get("matmul_sweep")))


def main(argv=None) -> None:
    """`python -m helpers.bench [--device cpu|cuda] [--quick] [--json] [--steps K] [--context S]`."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench",
        description=importlib.import_module("helpers.bench").__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--device", choices=["cpu", "cuda", "mps"], default=None, help="default: CUDA if present, else CPU"
    )
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
