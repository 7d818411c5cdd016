"""Timing a performance engineer would trust, and the numbers that place a machine on the roofline.

`benchmark(fn)` is the one timing loop everything else uses: warm-up runs first (caches, lazy
initialisation, kernel selection), then `repeat` timed runs, each bracketed by a device
synchronisation on CUDA/MPS (their kernels run asynchronously: without a sync you time the
launch, not the work). It reports the median and the interquartile range, never the mean,
because a single slow run (another process, a page fault) should not move the answer.

On top of it, three measurements of the device:
- `stream_bandwidth`: STREAM-style copy / triad, the memory bandwidth a streaming kernel sees;
- `gemv_bandwidth`: the bandwidth achieved by y = W x, the operation a decode step is made of;
- `matmul_flops`: the matmul throughput, the compute roof.

Rules every measurement here follows (McCalpin's STREAM; see REFERENCES "Measuring honestly"):
- arrays are filled with real values (torch.rand / fill); a fresh `torch.empty` may be backed
  by untouched zero pages, which read from cache and overstate bandwidth;
- each array is at least 4x the last-level cache, so the data really comes from memory;
- bytes are counted as the kernel's reads plus writes (copy 2x, triad 3x the array size);
- work runs with torch's current thread count (`torch.get_num_threads()`).
"""

from __future__ import annotations

import glob
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from helpers.device import describe
from helpers.model import decode_layout

FALLBACK_LLC_BYTES = 32 * 2**20  # when the cache size cannot be read: a typical desktop L3
CACHE_MULTIPLE = 4  # STREAM's rule: every array at least 4x the last-level cache
CUDA_ARRAY_BYTES = 2**30  # 1 GiB per array on CUDA: far beyond any GPU's L2 (H100: 50 MB)
MPS_ARRAY_BYTES = 2**29  # 512 MiB per array on Apple GPUs (system-level cache up to ~100 MB)
DEFAULT_GEMV_COLS = 4096  # columns of W in gemv_bandwidth (the input width d)
DEFAULT_MATMUL_N = {"cpu": 1024, "mps": 4096, "cuda": 8192}  # n for the n x n x n matmul
DEFAULT_MATMUL_DTYPE = {"cpu": torch.float32, "mps": torch.float16, "cuda": torch.bfloat16}

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


# ----------------------------------------------------------------------------- results


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
        values = [float(s) for s in samples]
        if not values:
            raise ValueError("a Measurement needs at least one sample")
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
        p25, p50, p75 = np.percentile(values, [25, 50, 75])
        return cls(value=float(p50), unit=unit, spread=float(p75 - p25), samples=values)

    @property
    def si(self) -> float:
        """The value in the base unit: seconds, bytes/s or FLOP/s."""
        return self.value * UNITS[self.unit][1]

    def to(self, unit: str) -> Measurement:
        """The same measurement in another unit of the same kind, e.g. m.to("TFLOP/s")."""
        if unit not in UNITS or UNITS[unit][0] != UNITS[self.unit][0]:
            same = sorted(u for u, (base, _) in UNITS.items() if base == UNITS[self.unit][0])
            raise ValueError(f"cannot convert {self.unit} to {unit!r}; allowed: {same}")
        k = UNITS[self.unit][1] / UNITS[unit][1]
        return Measurement(self.value * k, unit, self.spread * k, [s * k for s in self.samples])

    def __str__(self) -> str:
        shown = self
        if self.unit == "s" and self.value < 1:  # 0.0123 s reads better as 12.3 ms
            shown = self.to("ms" if self.value >= 1e-3 else "us")
        return f"{_fmt(shown.value)} {shown.unit} (IQR {_fmt(shown.spread)})"


# ----------------------------------------------------------------------------- timing


def _as_device(device) -> torch.device:
    """None -> cpu; a string or torch.device of type cpu, cuda or mps -> torch.device."""
    if device is None:
        return torch.device("cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(
            f"device must be None, 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {device!r}"
        ) from err
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device type must be cpu, cuda or mps, got {device.type!r}")
    is_available = {"cuda": torch.cuda.is_available, "mps": torch.backends.mps.is_available}.get(device.type)
    if is_available is not None and not is_available():  # asked only of the type requested
        raise ValueError(
            f"device {device.type!r} is not available on this machine; helpers.device.pick_device() finds one"
        )
    return device


def _synchronizer(device: torch.device) -> Callable[[], None]:
    """A function that waits for all queued work on `device`; a no-op on the CPU.
    CUDA is touched only when the device is CUDA."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def _check_int(value, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _time_with_clock(fn, repeat: int, sync, clock) -> list[float]:
    samples = []
    for _ in range(repeat):
        sync()  # nothing queued before the run may be billed to it
        start = clock()
        fn()
        sync()  # wait until the run's own work has finished
        samples.append(clock() - start)
    return samples


def _time_with_cuda_events(fn, repeat: int, device: torch.device) -> list[float]:
    """GPU-side timestamps: they measure the kernels, not the Python that launched them."""
    samples = []
    with torch.cuda.device(device):
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)  # elapsed_time is in ms
    return samples


def benchmark(fn: Callable[[], object], *, warmup: int = 2, repeat: int = 10, device=None, clock=None) -> Measurement:
    """Time `fn()`: `warmup` untimed runs, then `repeat` timed runs; median and IQR in seconds.

    device: where fn's work runs (None = cpu). On CUDA/MPS every timed run is bracketed by a
        synchronisation; on CUDA (with no clock given) the time comes from CUDA events.
    clock: a callable returning seconds (default time.perf_counter); inject a fake one to test.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    _check_int(warmup, "warmup", 0)
    _check_int(repeat, "repeat", 1)
    if clock is not None and not callable(clock):
        raise ValueError(f"clock must be None or a callable returning seconds, got {type(clock).__name__}")
    device = _as_device(device)
    sync = _synchronizer(device)
    for _ in range(warmup):
        fn()
    sync()
    if device.type == "cuda" and clock is None:
        samples = _time_with_cuda_events(fn, repeat, device)
    else:
        samples = _time_with_clock(fn, repeat, sync, clock or time.perf_counter)
    return Measurement.from_samples(samples, "s")


def _rates(seconds: Measurement, amount: float, scale: float, unit: str) -> Measurement:
    """Turn per-run times into per-run rates (amount / time / scale); median and IQR of those."""
    return Measurement.from_samples([amount / t / scale for t in seconds.samples], unit)


# ----------------------------------------------------------------------------- cache sizes


def _parse_size(text: str) -> int:
    """'32768K', '1M', '32 MiB', '512 KiB' -> bytes."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not m:
        raise ValueError(f"not a cache size: {text!r}")
    return int(float(m.group(1)) * 1024 ** " KMG".index(m.group(2).upper() or " "))


def _llc_from_sysfs(root: str = "/sys/devices/system/cpu") -> int | None:
    """Sum of the distinct highest-level data caches over all CPUs (each counted once even
    though several cores share it), from Linux's sysfs. None if nothing is readable."""
    caches = {}  # (level, shared_cpu_list) -> size
    for index in glob.glob(os.path.join(root, "cpu[0-9]*", "cache", "index[0-9]*")):
        try:
            with open(os.path.join(index, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "size")) as f:
                size = _parse_size(f.read())
            with open(os.path.join(index, "shared_cpu_list")) as f:
                shared = f.read().strip()
        except (OSError, ValueError):
            continue
        caches[level, shared] = size
    if not caches:
        return None
    top = max(level for level, _ in caches)
    return sum(size for (level, _), size in caches.items() if level == top)


def _llc_from_command(args: list[str], pattern: str) -> int | None:
    """Run lscpu / sysctl and parse the largest cache size it reports; None on any failure."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    sizes = []
    for match in re.finditer(pattern, out):
        try:
            sizes.append(_parse_size(match.group(1)))
        except ValueError:
            continue
    return max(sizes) if sizes and max(sizes) > 0 else None


@lru_cache(maxsize=1)
def llc_bytes() -> int:
    """Bytes of last-level CPU cache on this machine (all instances together).

    Linux sysfs first, then `lscpu`, then macOS `sysctl`; 32 MiB if none of them answers.
    """
    for probe in (
        _llc_from_sysfs,
        lambda: _llc_from_command(["lscpu"], r"L[234] cache:\s*([\d.]+\s*[KMG]?i?B?)"),
        lambda: _llc_from_command(["sysctl", "-n", "hw.l3cachesize", "hw.l2cachesize"], r"(\d+)"),
    ):
        size = probe()
        if size:
            return size
    return FALLBACK_LLC_BYTES


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def default_array_bytes(device=None) -> int:
    """Size of one array for a bandwidth measurement: at least 4x the last-level cache
    (1 GiB on CUDA, 512 MiB on MPS), but never more than 1/16 of the memory."""
    device = _as_device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or 0
        return int(min(max(CUDA_ARRAY_BYTES, CACHE_MULTIPLE * l2), props.total_memory // 16))
    wanted = MPS_ARRAY_BYTES if device.type == "mps" else CACHE_MULTIPLE * llc_bytes()
    memory = _memory_bytes()
    return int(min(wanted, memory // 16)) if memory else int(wanted)


# ----------------------------------------------------------------------------- measurements


def _check_dtype(dtype) -> None:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating torch.dtype such as torch.float32, got {dtype!r}")


def _filled(n: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A vector of n real values in [0, 1): every page written, nothing left to the OS's zero page."""
    return torch.rand(n, device=device, dtype=dtype)


def stream_bandwidth(
    kind: str = "copy",
    *,
    nbytes: int | None = None,
    device=None,
    dtype: torch.dtype = torch.float32,
    warmup: int = 2,
    repeat: int = 10,
) -> Measurement:
    """STREAM-style memory bandwidth in GB/s (1 GB = 1e9 bytes).

    kind "copy": a = b (a.copy_(b)), counted as 2 x nbytes per run (read b, write a);
    kind "triad": a = b + s*c (torch.add(b, c, alpha=s, out=a): no temporary), 3 x nbytes.
    nbytes: bytes per array (default: default_array_bytes(device), >= 4x the last-level cache).
    Like STREAM, the write-allocate read of `a` that a CPU may add is not counted.
    """
    if kind not in ("copy", "triad"):
        raise ValueError(f"kind must be 'copy' or 'triad', got {kind!r}")
    device = _as_device(device)
    _check_dtype(dtype)
    itemsize = dtype.itemsize
    if nbytes is None:
        nbytes = default_array_bytes(device)
    _check_int(nbytes, "nbytes", itemsize)
    n = nbytes // itemsize
    a, b = _filled(n, device, dtype), _filled(n, device, dtype)  # (n,) each
    if kind == "copy":
        seconds = benchmark(lambda: a.copy_(b), warmup=warmup, repeat=repeat, device=device)
        moved = 2 * n * itemsize
    else:
        c = _filled(n, device, dtype)  # (n,)
        seconds = benchmark(lambda: torch.add(b, c, alpha=3.0, out=a), warmup=warmup, repeat=repeat, device=device)
        moved = 3 * n * itemsize
    return _rates(seconds, moved, 1e9, "GB/s")


def linear_bytes(n_rows: int, n_cols: int, batch: int = 1, bytes_per_value: float = 4) -> float:
    """Bytes y = W x must move: W (n_rows x n_cols) + x (batch x n_cols) + y (batch x n_rows)."""
    for value, name in ((n_rows, "n_rows"), (n_cols, "n_cols"), (batch, "batch")):
        _check_int(value, name, 1)
    if isinstance(bytes_per_value, bool) or not isinstance(bytes_per_value, int | float) or not bytes_per_value > 0:
        raise ValueError(
            f"bytes_per_value must be a positive number (4 for float32, 2 for bf16), got {bytes_per_value!r}"
        )
    return bytes_per_value * (n_rows * n_cols + batch * (n_cols + n_rows))


def linear_flops(n_rows: int, n_cols: int, batch: int = 1) -> float:
    """FLOPs of y = W x for `batch` input vectors: one multiply and one add per weight per vector."""
    for value, name in ((n_rows, "n_rows"), (n_cols, "n_cols"), (batch, "batch")):
        _check_int(value, name, 1)
    return 2.0 * n_rows * n_cols * batch


def time_linear(
    n_rows: int,
    n_cols: int,
    *,
    batch: int = 1,
    device=None,
    dtype: torch.dtype = torch.float32,
    warmup: int = 2,
    repeat: int = 10,
) -> Measurement:
    """Seconds per y = W x with W (n_rows, n_cols) and x (batch, n_cols), through F.linear,
    the same call an nn.Linear in the course model makes. batch = 1 is a GEMV. W is stored the way
    the course's models store their weights for decoding (helpers.model.decode_layout)."""
    for value, name in ((n_rows, "n_rows"), (n_cols, "n_cols"), (batch, "batch")):
        _check_int(value, name, 1)
    device = _as_device(device)
    _check_dtype(dtype)
    W = decode_layout(torch.rand(n_rows, n_cols, device=device, dtype=dtype))  # (n_rows, n_cols)
    x = torch.rand(batch, n_cols, device=device, dtype=dtype)  # (B, n_cols)
    return benchmark(lambda: F.linear(x, W), warmup=warmup, repeat=repeat, device=device)  # (B, n_rows)


def gemv_bandwidth(
    n_rows: int | None = None,
    n_cols: int | None = None,
    *,
    device=None,
    dtype: torch.dtype = torch.float32,
    warmup: int = 2,
    repeat: int = 10,
) -> Measurement:
    """Bandwidth in GB/s achieved by y = W x: linear_bytes(...) / time.

    Default shape: n_cols = 4096 and enough rows that W fills default_array_bytes(device)
    (>= 4x the last-level cache), so W streams from memory every run, as in a decode step.
    """
    device = _as_device(device)
    _check_dtype(dtype)
    itemsize = dtype.itemsize
    n_cols = DEFAULT_GEMV_COLS if n_cols is None else n_cols
    _check_int(n_cols, "n_cols", 1)
    if n_rows is None:
        n_rows = max(1, default_array_bytes(device) // (n_cols * itemsize))
    seconds = time_linear(n_rows, n_cols, device=device, dtype=dtype, warmup=warmup, repeat=repeat)
    return _rates(seconds, linear_bytes(n_rows, n_cols, 1, itemsize), 1e9, "GB/s")


def matmul_flops(
    n: int | None = None,
    *,
    device=None,
    dtype: torch.dtype | None = None,
    warmup: int = 2,
    repeat: int = 10,
) -> Measurement:
    """Matmul throughput in GFLOP/s: C = A @ B with n x n matrices, 2 n^3 FLOPs per run.

    Defaults per device type: cpu float32 n = 1024, cuda bfloat16 n = 8192, mps float16 n = 4096.
    A large square matmul is the most compute-dense kernel there is: its rate is the compute roof.
    """
    device = _as_device(device)
    n = DEFAULT_MATMUL_N[device.type] if n is None else n
    _check_int(n, "n", 1)
    dtype = DEFAULT_MATMUL_DTYPE[device.type] if dtype is None else dtype
    _check_dtype(dtype)
    A = torch.rand(n, n, device=device, dtype=dtype)  # (n, n)
    B = torch.rand(n, n, device=device, dtype=dtype)  # (n, n)
    C = torch.zeros(n, n, device=device, dtype=dtype)  # (n, n) written in place: no allocation per run
    seconds = benchmark(lambda: torch.mm(A, B, out=C), warmup=warmup, repeat=repeat, device=device)
    return _rates(seconds, 2.0 * n**3, 1e9, "GFLOP/s")


# ----------------------------------------------------------------------------- the machine


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_summary(device=None) -> dict:
    """What the measurements ran on: device, CPU model, torch threads, last-level cache, torch version."""
    device = _as_device(device)
    summary = {
        "device": describe(device),
        "cpu": _cpu_name(),
        "threads": torch.get_num_threads(),
        "llc_mib": round(llc_bytes() / 2**20, 1),
        "torch": torch.__version__,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        summary["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        summary["gpu_l2_mib"] = round((getattr(props, "L2_cache_size", 0) or 0) / 2**20, 1)
    return summary
