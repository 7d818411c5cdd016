"""The numbers that place a machine on the roofline: memory bandwidth and the compute roof.

Three measurements of the device, each timed with `helpers.measure.measurement.benchmark` (warm-up runs,
a device synchronisation around every timed run, median and IQR):
- `stream_bandwidth`: STREAM-style copy / triad, the memory bandwidth a streaming kernel sees;
- `gemv_bandwidth`: the bandwidth achieved by y = W x, the operation a decode step is made of;
- `matmul_flops`: the matmul throughput, the compute roof.

Rules every measurement here follows (J. D. McCalpin's STREAM benchmark, "Memory Bandwidth and
Machine Balance in Current High Performance Computers", IEEE TCCA Newsletter 1995; listed with
the course's other sources in the References section of notebook 04):
- arrays are filled with real values (torch.rand / fill); a fresh `torch.empty` may be backed
  by untouched zero pages, which read from cache and overstate bandwidth;
- each array is at least 4x the last-level cache, so the data really comes from memory
  (helpers.measure.machine.default_array_bytes);
- bytes are counted as the kernel's reads plus writes (copy 2x, triad 3x the array size);
- work runs with torch's current thread count (`torch.get_num_threads()`);
- on CUDA, `benchmark` clears the GPU's L2 before every sample and times many calls between two
  CUDA events (helpers.measure.gpu.do_bench), and `time_linear` cycles through copies of W that together
  fill 4x the L2, so that no call finds its matrix in L2.

The timing loop and `Measurement` live in helpers.measure.measurement, cache and memory sizes in
helpers.measure.machine; both are re-exported here, so `from helpers.measure.timing import benchmark` works.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

from helpers.common.device import as_device
from helpers.common.device import as_device as _as_device  # noqa: F401 (the old private name)
from helpers.common.validation import check_float_dtype, check_int, check_positive
from helpers.decoding.model import LAYOUTS, decode_layout, default_layout
from helpers.measure import gpu
from helpers.measure.machine import (  # noqa: F401 (re-exported: the machine a measurement runs on)
    CACHE_MULTIPLE,
    CUDA_ARRAY_BYTES,
    FALLBACK_LLC_BYTES,
    MPS_ARRAY_BYTES,
    default_array_bytes,
    llc_bytes,
    machine_summary,
    memory_bytes,
)
from helpers.measure.measurement import UNITS, Measurement, benchmark, rates  # noqa: F401 (re-exported)

DEFAULT_GEMV_COLS = 4096  # columns of W in gemv_bandwidth (the input width d)
DEFAULT_MATMUL_N = {"cpu": 1024, "mps": 4096, "cuda": 8192}  # n for the n x n x n matmul
DEFAULT_MATMUL_DTYPE = {"cpu": torch.float32, "mps": torch.float16, "cuda": torch.bfloat16}
KINDS = ("copy", "triad")  # the STREAM kernels stream_bandwidth runs
MAX_COPIES = 64  # time_linear on CUDA: at most this many copies of W in rotation


def _filled(n: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A vector of n real values in [0, 1): every page written, nothing left to the OS's zero page."""
    return torch.rand(n, device=device, dtype=dtype)


def _check_shape(n_rows, n_cols, batch) -> tuple[int, int, int]:
    return check_int(n_rows, "n_rows", 1), check_int(n_cols, "n_cols", 1), check_int(batch, "batch", 1)


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
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be 'copy' or 'triad', got {kind!r}")
    device = as_device(device)
    itemsize = check_float_dtype(dtype).itemsize
    if nbytes is None:
        nbytes = default_array_bytes(device)
    n = check_int(nbytes, "nbytes", itemsize) // itemsize
    a, b = _filled(n, device, dtype), _filled(n, device, dtype)  # (n,) each
    if kind == "copy":
        seconds = benchmark(lambda: a.copy_(b), warmup=warmup, repeat=repeat, device=device)
        moved = 2 * n * itemsize
    else:
        c = _filled(n, device, dtype)  # (n,)
        seconds = benchmark(lambda: torch.add(b, c, alpha=3.0, out=a), warmup=warmup, repeat=repeat, device=device)
        moved = 3 * n * itemsize
    return rates(seconds, moved, 1e9, "GB/s")


def linear_bytes(n_rows: int, n_cols: int, batch: int = 1, bytes_per_value: float = 4) -> float:
    """Bytes y = W x must move: W (n_rows x n_cols) + x (batch x n_cols) + y (batch x n_rows).
    bytes_per_value: 4 for float32, 2 for bf16 (any finite number > 0)."""
    n_rows, n_cols, batch = _check_shape(n_rows, n_cols, batch)
    bytes_per_value = check_positive(bytes_per_value, "bytes_per_value")
    return bytes_per_value * (n_rows * n_cols + batch * (n_cols + n_rows))


def linear_flops(n_rows: int, n_cols: int, batch: int = 1) -> float:
    """FLOPs of y = W x for `batch` input vectors: one multiply and one add per weight per vector."""
    n_rows, n_cols, batch = _check_shape(n_rows, n_cols, batch)
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
    layout: str | None = None,
) -> Measurement:
    """Seconds per y = W x with W (n_rows, n_cols) and x (batch, n_cols), through F.linear,
    the same call an nn.Linear in the course model makes. batch = 1 is a GEMV.

    layout: how W is stored, "decode" (helpers.decoding.model.decode_layout) or "row-major"; None: the
    device's default (helpers.decoding.model.default_layout). On CUDA each call multiplies the next of
    enough copies of W to fill 4x the L2 cache (rotate_copies), so a W smaller than the L2 is
    still read from memory, not from the L2 where the previous call left it."""
    n_rows, n_cols, batch = _check_shape(n_rows, n_cols, batch)
    device = as_device(device)
    itemsize = check_float_dtype(dtype).itemsize
    layout = default_layout(device) if layout is None else layout
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be None or one of {LAYOUTS}, got {layout!r}")
    store = decode_layout if layout == "decode" else torch.Tensor.contiguous
    copies = rotate_copies(n_rows * n_cols * itemsize, device)
    Ws = [store(torch.rand(n_rows, n_cols, device=device, dtype=dtype)) for _ in range(copies)]  # (n_rows, n_cols)
    x = torch.rand(batch, n_cols, device=device, dtype=dtype)  # (B, n_cols)
    turn = itertools.cycle(Ws)
    return benchmark(lambda: F.linear(x, next(turn)), warmup=warmup, repeat=repeat, device=device)  # (B, n_rows)


def rotate_copies(nbytes: int, device) -> int:
    """How many copies of an operand of `nbytes` to cycle through so that together they fill
    CACHE_MULTIPLE x the GPU's L2 (at most MAX_COPIES); 1 on the CPU and MPS."""
    cuda = gpu.runtime(as_device(device))
    if cuda is None:
        return 1
    return int(min(MAX_COPIES, max(1, -(-CACHE_MULTIPLE * cuda.l2_bytes() // max(1, nbytes)))))


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
    device = as_device(device)
    itemsize = check_float_dtype(dtype).itemsize
    n_cols = check_int(DEFAULT_GEMV_COLS if n_cols is None else n_cols, "n_cols", 1)
    if n_rows is None:
        n_rows = max(1, default_array_bytes(device) // (n_cols * itemsize))
    seconds = time_linear(n_rows, n_cols, device=device, dtype=dtype, warmup=warmup, repeat=repeat)
    return rates(seconds, linear_bytes(n_rows, n_cols, 1, itemsize), 1e9, "GB/s")


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
    device = as_device(device)
    n = check_int(DEFAULT_MATMUL_N[device.type] if n is None else n, "n", 1)
    dtype = check_float_dtype(DEFAULT_MATMUL_DTYPE[device.type] if dtype is None else dtype)
    A = torch.rand(n, n, device=device, dtype=dtype)  # (n, n)
    B = torch.rand(n, n, device=device, dtype=dtype)  # (n, n)
    C = torch.zeros(n, n, device=device, dtype=dtype)  # (n, n) written in place: no allocation per run
    seconds = benchmark(lambda: torch.mm(A, B, out=C), warmup=warmup, repeat=repeat, device=device)
    return rates(seconds, 2.0 * n**3, 1e9, "GFLOP/s")
