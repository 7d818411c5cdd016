"""The JSON of helpers.bench: one dataclass per section, whose fields are the JSON keys (rounded,
in plain units), built from a measurement by its `of` method and turned into a dict by
dataclasses.asdict. The measurements themselves know nothing about JSON.

Naming: a field computed from an eager time (one kernel launch per operation) ends in `_eager`;
the fields without it use the fastest time this stack has, a CUDA-graph replay where there is
one (`timed_as` says which). On the CPU both are the eager time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from helpers.bench.decode import EAGER_CONTAINS, DecodeStep
from helpers.bench.graphs import ShapeRun
from helpers.bench.precision import FormatStep
from helpers.bench.roofs import Roofs
from helpers.bench.tiny import DecoderRun, TinyRun
from helpers.bench.widths import WidthPoint
from helpers.measure.measurement import Measurement


def _ms(seconds: float, digits: int) -> float:
    return round(1e3 * seconds, digits)


def _opt_ms(m: Measurement | None, digits: int = 4) -> float | None:
    return None if m is None else _ms(m.value, digits)


def _opt_round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


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


@dataclass(frozen=True)
class DecodeJSON:
    shape: str
    dtype: str
    batch: int
    context: int
    vocab_size: int
    layout: str  # how the weights were stored (helpers.decoding.model.LAYOUTS)
    timed_as: str  # "cuda graph" or "eager": the time behind the fields without _eager
    measured_ms_eager: float  # the call helpers.decoding.ar.generate makes, launched op by op
    measured_iqr_ms_eager: float
    eager_contains: str  # what the eager time includes
    graph_ms: float | None  # replayed as one CUDA graph; None off CUDA
    graph_iqr_ms: float | None
    graph_exact: bool | None  # the graph's logits equal the eager step's, bit for bit
    launch_overhead_ms: float | None  # eager - graph
    gemv_model_gb_s_eager: float  # the model's own GEMVs, launched one by one
    gemv_model_graph_gb_s: float | None  # the same, replayed as one CUDA graph (what predictions use)
    predicted_ms: float
    error_pct: float  # prediction vs the fastest step (graph on CUDA)
    predicted_generic_ms: float
    error_generic_pct: float
    bytes_per_step: int
    flops_per_step: int
    achieved_gb_s: float  # bytes / fastest time
    achieved_gb_s_eager: float
    mbu_vs_stream: float  # fastest step, against measured STREAM
    mbu_vs_stream_eager: float
    datasheet_device: str | None  # row of data/hardware.csv matched to the GPU's name
    datasheet_gb_s: float | None
    mbu_vs_datasheet_eager: float | None
    mbu_vs_datasheet_graph: float | None
    vs_gemv: float  # achieved / the model's GEMVs' bandwidth, fastest against fastest
    vs_gemv_eager: float

    @classmethod
    def of(cls, d: DecodeStep) -> DecodeJSON:
        sheet = d.datasheet
        return cls(
            d.shape, d.dtype, d.batch, d.context, d.vocab_size, d.layout, d.timed_as,
            _ms(d.measured.value, 4), _ms(d.measured.spread, 4), EAGER_CONTAINS,
            _opt_ms(d.graphed), None if d.graphed is None else _ms(d.graphed.spread, 4), d.graph_exact,
            None if d.launch_overhead_s is None else _ms(d.launch_overhead_s, 4),
            round(d.gemv.value, 2), None if d.gemv_graphed is None else round(d.gemv_graphed.value, 2),
            _ms(d.predicted_s, 4), round(100 * d.error, 1), _ms(d.predicted_generic_s, 4),
            round(100 * d.error_generic, 1), int(d.cost.total_bytes), int(d.cost.flops),
            round(d.achieved_bandwidth / 1e9, 2), round(d.achieved_bandwidth_eager / 1e9, 2),
            round(d.mbu, 3), round(d.mbu_eager, 3),
            None if sheet is None else sheet.device, None if sheet is None else sheet.bandwidth_gb_s,
            _opt_round(d.mbu_datasheet(graphed=False), 3),
            _opt_round(d.mbu_datasheet() if d.graphed is not None else None, 3),
            round(d.vs_gemv, 3), round(d.vs_gemv_eager, 3),
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
    timed_as: str  # "cuda graph" or "eager": the time behind measured_ms and ratio
    measured_ms: float
    measured_ms_eager: float | None  # the pass launched op by op, where a graph was timed too
    predicted_ms: float
    ratio: float  # the pass in decode steps, timed the same way
    ratio_eager: float | None
    predicted_ratio: float
    intensity: float

    @classmethod
    def of(cls, p: WidthPoint) -> WidthJSON:
        return cls(
            p.width, p.timed_as, _ms(p.measured.value, 3), _opt_ms(p.eager, 3), _ms(p.predicted_s, 3),
            round(p.ratio, 2), _opt_round(p.ratio_eager, 2), round(p.predicted_ratio, 2), round(p.intensity, 2),
        )  # fmt: skip


@dataclass(frozen=True)
class DecoderJSON:
    decoder: str
    measured_ms_eager: float
    measured_iqr_ms_eager: float
    passes: int
    ms_per_pass_eager: float
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
    dllm_speedup_eager: float  # AR wall time / dLLM wall time, both as the course's loops run them

    @classmethod
    def of(cls, t: TinyRun) -> TinyJSON:
        speedup = round(t.ar.measured.si / t.dllm.measured.si, 2)
        return cls(t.note, t.n_tokens, t.steps, t.params, DecoderJSON.of(t.ar), DecoderJSON.of(t.dllm), speedup)


@dataclass(frozen=True)
class FormatJSON:
    format: str
    measured_ms: float | None  # None: the format could not run here (see note); CPU only, eager
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


ROWS = (
    (Roofs, RoofsJSON), (DecodeStep, DecodeJSON), (WidthPoint, WidthJSON), (DecoderRun, DecoderJSON),
    (TinyRun, TinyJSON), (FormatStep, FormatJSON), (ShapeRun, ShapeJSON),
)  # fmt: skip


def as_json(result) -> dict:
    """A measurement of this package (Roofs, DecodeStep, WidthPoint, DecoderRun, TinyRun, ShapeRun
    or helpers.bench.precision.FormatStep) as the dict helpers.bench's JSON holds for it."""
    for kind, row in ROWS:
        if isinstance(result, kind):
            return asdict(row.of(result))
    raise ValueError(
        f"result must be a measurement of helpers.bench or helpers.bench.precision, got {type(result).__name__}"
    )
