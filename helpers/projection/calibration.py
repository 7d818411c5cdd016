"""Published decoding speeds, next to what the course's cost model projects for the same setting.

data/published_decoding.csv holds one row per published measurement: AR decoders (gpt-fast,
SGLang, Hugging Face generate) and masked-diffusion decoders (LLaDA's sampler, Fast-dLLM, d3LLM),
with the device, model, dtype, batch, prompt and generated lengths, the passes of a diffusion
decoder (as tokens per pass), the measured value and its unit, the source, and a note naming
everything that had to be assumed. `calibration_table` projects each row twice, at the ceiling
(100 % of the datasheet) and at the course's typical efficiency, and reports how much of each
projection the published system reached. Rows of closed systems (model size unknown) are kept
and say so; they are never guessed. `typical_fit` names the rows the typical efficiencies are
fitted on: those rows cannot test the typical projection, only the others can.

data/published_parallelism.csv (`load_parallelism`) is the other half of the comparison: accuracy
against tokens per forward pass on GSM8K for an AR model and LLaDA-based samplers, from the d3LLM
"accuracy under parallelism" leaderboard.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

from helpers.common.validation import check_path
from helpers.projection.latency import ar_latency, dllm_latency_at
from helpers.roofline.costs import CEILING, MODEL_SHAPES, TYPICAL
from helpers.roofline.hardware import load_hardware_table

PUBLISHED_CSV = Path(__file__).resolve().parents[2] / "data" / "published_decoding.csv"
PARALLELISM_CSV = PUBLISHED_CSV.with_name("published_parallelism.csv")  # accuracy against tokens per pass
UNITS = ("tok/s", "s/generation")


@dataclass(frozen=True)
class Published:
    """One row of data/published_decoding.csv."""

    system: str
    kind: str  # "AR" or "dLLM"
    device: str  # a device in data/hardware.csv, or what the source says
    model: str  # a name in helpers.roofline.costs.MODEL_SHAPES, or "unknown"
    dtype: str
    batch: int | None
    prompt_tokens: int | None
    generated_tokens: int | None
    tokens_per_pass: float | None  # dLLM: generated tokens / forward passes
    cache: str | None  # dLLM: None, "prefix" or "dual"
    block_length: int | None
    measured: float
    unit: str  # "tok/s" or "s/generation"
    source: str
    note: str

    @property
    def projectable(self) -> bool:
        return self.model in MODEL_SHAPES and self.device in load_hardware_table()

    def project(self, bandwidth_efficiency: float, compute_efficiency: float) -> float:
        """The cost model's value for this row's setting, in the row's unit."""
        if not self.projectable:
            raise ValueError(f"{self.system}: cannot be projected ({self.note})")
        effs = dict(bandwidth_efficiency=bandwidth_efficiency, compute_efficiency=compute_efficiency)
        n, shape = self.generated_tokens, MODEL_SHAPES[self.model]
        if self.kind == "AR":
            seconds = ar_latency(
                n, shape, self.device, prompt=self.prompt_tokens, batch=self.batch, dtype=self.dtype, **effs
            )
        else:
            seconds = dllm_latency_at(
                n, self.tokens_per_pass, shape, self.device, prompt=self.prompt_tokens, cache=self.cache,
                block_length=self.block_length, batch=self.batch, dtype=self.dtype, **effs,
            )  # fmt: skip
        return self.batch * n / seconds if self.unit == "tok/s" else seconds

    def reached(self, projected: float) -> float:
        """Measured speed / projected speed: 1 means the projection was exact, 0.5 half as fast."""
        return self.measured / projected if self.unit == "tok/s" else projected / self.measured


def _number(text: str, kind=float):
    return kind(text) if text.strip() else None


def load_published(path: str | Path | None = None) -> list[Published]:
    """data/published_decoding.csv as a list of Published rows, in file order."""
    path = check_path(path, PUBLISHED_CSV)
    if not path.is_file():
        raise ValueError(f"published measurements not found at {path}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    published = []
    for row in rows:
        if row["kind"] not in ("AR", "dLLM") or row["unit"] not in UNITS:
            raise ValueError(f"{path.name}: row {row['system']!r} needs kind AR or dLLM and a unit in {UNITS}")
        published.append(
            Published(
                system=row["system"],
                kind=row["kind"],
                device=row["device"],
                model=row["model"],
                dtype=row["dtype"],
                batch=_number(row["batch"], int),
                prompt_tokens=_number(row["prompt_tokens"], int),
                generated_tokens=_number(row["generated_tokens"], int),
                tokens_per_pass=_number(row["tokens_per_pass"]),
                cache=row["cache"] or None,
                block_length=_number(row["block_length"], int),
                measured=float(row["measured"]),
                unit=row["unit"],
                source=row["source"],
                note=row["note"],
            )
        )
    return published


@dataclass(frozen=True)
class CalibrationRow:
    """A published row with its projections (None where it cannot be projected)."""

    published: Published
    ceiling: float | None  # projected at 100 % of the datasheet, in the row's unit
    typical: float | None  # projected at the course's typical efficiency
    reached_ceiling: float | None  # measured speed / ceiling speed
    reached_typical: float | None  # measured speed / typical speed


def calibration_table(path: str | Path | None = None) -> list[CalibrationRow]:
    """Every published row next to the ceiling and typical projections of its setting."""
    table = []
    for row in load_published(path):
        if not row.projectable:
            table.append(CalibrationRow(row, None, None, None, None))
            continue
        ceiling, typical = row.project(**CEILING), row.project(**TYPICAL)
        table.append(CalibrationRow(row, ceiling, typical, row.reached(ceiling), row.reached(typical)))
    return table


@dataclass(frozen=True)
class TypicalFit:
    """Where the typical efficiencies (helpers.roofline.costs.TYPICAL_*) come from: the rows of
    calibration_table they are fitted on (numbered from 1, in table order) and the geometric mean
    of what those rows reach of their ceiling projection."""

    bandwidth_rows: tuple[int, ...]  # tuned batch-1 AR stacks in bf16: bandwidth-bound decode steps
    bandwidth: float  # geometric mean of their reached_ceiling
    compute_rows: tuple[int, ...]  # diffusion decoders whose every pass runs the whole canvas: compute-bound
    compute: float  # geometric mean of their reached_ceiling


def _geometric_mean(values) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def typical_fit(table: list[CalibrationRow] | None = None) -> TypicalFit:
    """The rows the typical efficiencies are fitted on, and the fitted values. Bandwidth: AR rows in
    bf16 whose note does not put them 'outside +-30 %' (gpt-fast and SGLang; not eager Hugging Face
    generate, not int8 or int4). Compute: projectable diffusion rows without a cache.
    table: calibration_table() (the default) or a list of its rows."""
    table = calibration_table() if table is None else table
    if not isinstance(table, list | tuple) or not table or not all(isinstance(r, CalibrationRow) for r in table):
        raise ValueError(f"table must be a non-empty list of CalibrationRow (calibration_table()), got {table!r:.80}")

    def numbers(keep) -> tuple[int, ...]:
        return tuple(i for i, r in enumerate(table, 1) if r.published.projectable and keep(r.published))

    bandwidth = numbers(lambda p: p.kind == "AR" and p.dtype == "bf16" and "outside" not in p.note)
    compute = numbers(lambda p: p.kind == "dLLM" and p.cache is None)
    if not bandwidth or not compute:
        raise ValueError("table must hold tuned bf16 AR rows and uncached diffusion rows to fit on")
    return TypicalFit(
        bandwidth_rows=bandwidth,
        bandwidth=_geometric_mean([table[i - 1].reached_ceiling for i in bandwidth]),
        compute_rows=compute,
        compute=_geometric_mean([table[i - 1].reached_ceiling for i in compute]),
    )


@dataclass(frozen=True)
class ParallelismPoint:
    """One row of data/published_parallelism.csv: a decoder's accuracy at its tokens per pass."""

    system: str
    kind: str  # "AR" or "dLLM"
    tokens_per_pass: float
    accuracy_pct: float
    task: str
    source: str


def load_parallelism(path: str | Path | None = None) -> list[ParallelismPoint]:
    """data/published_parallelism.csv as a list of ParallelismPoint, in file order."""
    path = check_path(path, PARALLELISM_CSV)
    if not path.is_file():
        raise ValueError(f"published accuracy-under-parallelism points not found at {path}")
    with open(path, newline="") as f:
        return [
            ParallelismPoint(
                r["system"], r["kind"], float(r["tokens_per_pass"]), float(r["accuracy_pct"]), r["task"], r["source"]
            )
            for r in csv.DictReader(f)
        ]
