"""A measured quantity, and the one timing loop every measurement of the course uses.

`benchmark(fn)` reports the median and the interquartile range of its samples as a `Measurement`,
never the mean, because a single slow run (another process, a page fault) should not move the
answer. How it samples depends on the device:
- CPU and MPS: `warmup` untimed runs, then `repeat` timed runs, each bracketed by a device
  synchronisation (MPS kernels run asynchronously: without a sync you time the launch, not the
  work) and timed with the host's clock;
- CUDA: helpers.measure.gpu.do_bench, a variant of Triton's do_bench: warm-up by time, many calls between
  one pair of CUDA events, the L2 cache cleared before every sample, one synchronisation at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from helpers.common.device import as_device
from helpers.common.validation import check_int
from helpers.measure import gpu

# unit -> (base unit, factor to the base unit): Measurement.si and Measurement.to use it
UNITS = {
    "s": ("s", 1.0),
    "ms": ("s", 1e-3),
    "us": ("s", 1e-6),
    "B/s": ("B/s", 1.0),
    "GB/s": ("B/s", 1e9),
    "FLOP/s": ("FLOP/s", 1.0),
    "GFLOP/s": ("FLOP/s", 1e9),
    "TFLOP/s": ("FLOP/s", 1e12),
}


def _fmt(x: float) -> str:
    """Three significant figures without scientific notation for everyday magnitudes."""
    if x == 0 or not np.isfinite(x):
        return f"{x:g}"
    digits = max(0, 2 - int(np.floor(np.log10(abs(x)))))
    return f"{x:.{digits}f}"


@dataclass
class Measurement:
    """A measured quantity: the median of `samples`, with their interquartile range as spread."""

    value: float  # median of the samples, in `unit`
    unit: str  # one of UNITS: "s", "GB/s", "GFLOP/s", ...
    spread: float  # interquartile range (75th - 25th percentile) of the samples, in `unit`
    samples: list[float] = field(default_factory=list, repr=False)  # one value per timed run

    @classmethod
    def from_samples(cls, samples, unit: str) -> Measurement:
        """Median and IQR of `samples` (finite numbers, at least one) in `unit` (one of UNITS)."""
        try:
            values = [float(s) for s in samples]
        except (TypeError, ValueError) as err:
            raise ValueError(f"samples must be an iterable of numbers, got {samples!r}") from err
        if not values:
            raise ValueError("a Measurement needs at least one sample")
        if not all(np.isfinite(values)):
            raise ValueError(f"samples must be finite numbers, got {values!r}")
        if not isinstance(unit, str) or unit not in UNITS:
            raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
        p25, p50, p75 = np.percentile(values, [25, 50, 75])
        return cls(value=float(p50), unit=unit, spread=float(p75 - p25), samples=values)

    @property
    def si(self) -> float:
        """The value in the base unit: seconds, bytes/s or FLOP/s."""
        return self.value * UNITS[self.unit][1]

    def to(self, unit: str) -> Measurement:
        """The same measurement in another unit of the same kind, e.g. m.to("TFLOP/s")."""
        if not isinstance(unit, str) or unit not in UNITS or UNITS[unit][0] != UNITS[self.unit][0]:
            same = sorted(u for u, (base, _) in UNITS.items() if base == UNITS[self.unit][0])
            raise ValueError(f"cannot convert {self.unit} to {unit!r}; allowed: {same}")
        k = UNITS[self.unit][1] / UNITS[unit][1]
        return Measurement(self.value * k, unit, self.spread * k, [s * k for s in self.samples])

    def __str__(self) -> str:
        shown = self
        if self.unit == "s" and self.value < 1:  # 0.0123 s reads better as 12.3 ms
            shown = self.to("ms" if self.value >= 1e-3 else "us")
        return f"{_fmt(shown.value)} {shown.unit} (IQR {_fmt(shown.spread)} {shown.unit})"


def rates(seconds: Measurement, amount: float, scale: float, unit: str) -> Measurement:
    """Per-run times turned into per-run rates (amount / time / scale); median and IQR of those."""
    return Measurement.from_samples([amount / t / scale for t in seconds.samples], unit)


# ----------------------------------------------------------------------------- the timing loop


def _synchronizer(device: torch.device) -> Callable[[], None]:
    """A function that waits for all queued work on `device`; a no-op on the CPU.
    CUDA is touched only when the device is CUDA."""
    cuda = gpu.runtime(device)
    if cuda is not None:
        return cuda.synchronize
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def _time_with_clock(fn, repeat: int, sync, clock) -> list[float]:
    samples = []
    for _ in range(repeat):
        sync()  # nothing queued before the run may be billed to it
        start = clock()
        fn()
        sync()  # wait until the run's own work has finished
        samples.append(clock() - start)
    return samples


def benchmark(
    fn: Callable[[], object],
    *,
    warmup: int = 2,
    repeat: int = 10,
    device=None,
    clock=None,
    calls: int | None = None,
    flush: bool = True,
) -> Measurement:
    """Time `fn()`; median and IQR in seconds per call.

    device: where fn's work runs (None = cpu).
    CPU / MPS: `warmup` untimed runs, then `repeat` runs, each between two synchronisations and
        timed with `clock` (default time.perf_counter; inject a fake one to test).
    CUDA (with no clock given): helpers.measure.gpu.do_bench: at least `warmup` calls and 25 ms of
        warm-up, `repeat` samples of `calls` calls each between two CUDA events (None: enough
        calls for 1 ms), the L2 cleared before each sample unless flush=False. The events time
        the GPU; when the host cannot launch work as fast as the GPU runs it, they time that.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    warmup = check_int(warmup, "warmup", 0)
    repeat = check_int(repeat, "repeat", 1)
    if clock is not None and not callable(clock):
        raise ValueError(f"clock must be None or a callable returning seconds, got {type(clock).__name__}")
    if not isinstance(flush, bool):
        raise ValueError(f"flush must be True or False, got {flush!r}")
    device = as_device(device)
    cuda = gpu.runtime(device)
    if cuda is not None and clock is None:
        samples = gpu.do_bench(fn, cuda, repeat=repeat, warmup=warmup, calls=calls, flush=flush)
        return Measurement.from_samples(samples, "s")
    sync = _synchronizer(device)
    for _ in range(warmup):
        fn()
    sync()
    samples = _time_with_clock(fn, repeat, sync, clock or time.perf_counter)
    return Measurement.from_samples(samples, "s")
