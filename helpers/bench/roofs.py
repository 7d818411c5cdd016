"""Stage 1 of helpers.bench: the roofs of one device, measured.

STREAM copy and triad bandwidth, the bandwidth a large GEMV (y = W x) reaches, and the throughput
of a large matmul (the compute roof). The ridge point is peak FLOP/s / GEMV bandwidth: a decode
step is made of GEMVs, so that is the memory roof it can actually reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.common.device import as_device
from helpers.common.validation import check_int, check_number
from helpers.measure.machine import MEMORY_FRACTION, default_array_bytes, device_memory_bytes, machine_summary
from helpers.measure.measurement import Measurement
from helpers.measure.timing import (
    DEFAULT_GEMV_COLS,
    DEFAULT_MATMUL_DTYPE,
    DEFAULT_MATMUL_N,
    gemv_bandwidth,
    matmul_flops,
    stream_bandwidth,
)
from helpers.roofline.fixtures import model_dtype

CPU_MATMUL_N = 2048  # the CPU's compute roof from a 2048^3 matmul: steadier than helpers.measure.timing's 1024


@dataclass(frozen=True)
class BenchSettings:
    """How hard to measure. QUICK finishes in under a minute on a 2-core CPU; FULL is steadier."""

    warmup: int = 2  # untimed runs before each measurement
    repeat: int = 10  # timed runs of each roof measurement (median reported)
    array_scale: int = 2  # bandwidth arrays = array_scale x default_array_bytes (>= 4x the LLC)
    matmul_n: int | None = None  # n of the n x n matmul; None: CPU_MATMUL_N on the CPU, else helpers.measure.timing's
    decode_repeat: int = 20  # timed decode steps
    width_repeat: int = 3  # timed passes per width in the width sweep
    widths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    tiny_repeat: int = 3  # timed end-to-end generations of N tokens, per decoder
    format_rounds: int = 5  # rounds of the fp32 / bf16 / int8 decode step, timed in turn (CPU)
    warm_up_s: float = 1.0  # seconds of large matmuls before the first timed stage (clocks up from idle)
    array_bytes: int | None = None  # bytes per bandwidth array; None: array_scale x default_array_bytes

    def __post_init__(self):
        check_int(self.warmup, "BenchSettings.warmup", 0)
        check_number(self.warm_up_s, "BenchSettings.warm_up_s", 0)
        if self.array_bytes is not None:
            check_int(self.array_bytes, "BenchSettings.array_bytes", 2**10)
        for name in ("repeat", "array_scale", "decode_repeat", "width_repeat", "tiny_repeat", "format_rounds"):
            check_int(getattr(self, name), f"BenchSettings.{name}", 1)
        if self.matmul_n is not None:
            check_int(self.matmul_n, "BenchSettings.matmul_n", 1)
        if not isinstance(self.widths, tuple) or not self.widths:
            raise ValueError(f"BenchSettings.widths must be a non-empty tuple of ints >= 1, got {self.widths!r}")
        for w in self.widths:
            check_int(w, "each of BenchSettings.widths", 1)


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
    warm_up_s=0.5,
)
# only to check that every stage runs end to end (tests, `reference --quick`): its numbers mean nothing
SMOKE = BenchSettings(
    warmup=0,
    repeat=2,
    array_bytes=8 * 2**20,
    matmul_n=256,
    decode_repeat=2,
    width_repeat=1,
    tiny_repeat=1,
    widths=(1, 4, 16),
    format_rounds=1,
    warm_up_s=0.05,
)


@dataclass
class Roofs:
    """The measured roofs of one device. Bandwidths in GB/s, matmul in GFLOP/s (medians + IQR)."""

    device: str  # helpers.measure.machine.describe(...)
    threads: int  # torch.get_num_threads() during the measurement
    array_bytes: int  # bytes per array in the bandwidth measurements
    copy: Measurement  # STREAM copy, GB/s
    triad: Measurement  # STREAM triad, GB/s
    gemv: Measurement  # y = W x at batch 1 in gemv_dtype, GB/s: the roof a decode step can reach
    matmul: Measurement  # n x n matmul in matmul_dtype, GFLOP/s: the compute roof
    gemv_dtype: str
    matmul_dtype: str
    matmul_n: int = 0  # n of the n x n x n matmul

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


def check_roofs(roofs) -> Roofs:
    if not isinstance(roofs, Roofs):
        raise ValueError(f"roofs must be the Roofs that measure_machine returns, got {type(roofs).__name__}")
    return roofs


def measure_machine(device=None, *, settings: BenchSettings = FULL) -> Roofs:
    """Measure STREAM copy/triad, GEMV bandwidth (in the device's model dtype) and matmul peak.

    device: None (the CPU), "cpu", "cuda" or "mps". Arrays are settings.array_scale times
    helpers.measure.machine.default_array_bytes (itself >= 4x the last-level cache)."""
    device = as_device(device)
    if not isinstance(settings, BenchSettings):
        raise ValueError(f"settings must be a BenchSettings (FULL, QUICK or your own), got {settings!r}")
    nbytes = settings.array_bytes or settings.array_scale * default_array_bytes(device)
    memory = device_memory_bytes(device)
    if memory:  # never more than 1/16 of the device's memory per array, on every device
        nbytes = min(nbytes, memory // MEMORY_FRACTION)
    dtype = model_dtype(device)
    runs = dict(device=device, warmup=settings.warmup, repeat=settings.repeat)
    copy = stream_bandwidth("copy", nbytes=nbytes, **runs)
    triad = stream_bandwidth("triad", nbytes=nbytes, **runs)
    n_rows = max(1, nbytes // (DEFAULT_GEMV_COLS * dtype.itemsize))  # W as large as one STREAM array
    gemv = gemv_bandwidth(n_rows, DEFAULT_GEMV_COLS, dtype=dtype, **runs)
    matmul_n = settings.matmul_n or (CPU_MATMUL_N if device.type == "cpu" else DEFAULT_MATMUL_N[device.type])
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
        matmul_n=matmul_n,
    )
