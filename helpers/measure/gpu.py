"""The GPU side of a measurement: CUDA events, CUDA graphs, the L2 cache, and what the GPU is.

Every CUDA call the course makes goes through one object, `runtime(device)`: a `CudaRuntime` for
a CUDA device, None for the CPU and MPS. Tests replace `helpers.measure.gpu.runtime` with a fake GPU, so
the rules below are checked on machines without one.

`do_bench` times GPU work with a variant of Triton's `triton.testing.do_bench`:
- warm-up by time (25 ms), not by count: a kernel of 10 us needs thousands of runs to warm up,
  one of 100 ms a single one;
- CUDA events (timestamps the GPU writes into its own queue of work), many calls (at least 1 ms
  of them) between one pair, and no synchronisation between samples, so the host queues work ahead
  of the GPU and the events time the GPU, not Python's launches (unless the host cannot keep up,
  and then that is the truth: the work is launch-bound);
- the L2 cache cleared before every sample by writing a buffer of 4x its size (at least 256 MB,
  as Triton): data left in L2 by the previous sample would be read at L2 speed, not memory's.
  Triton clears it before every call and times each call alone; here only a sample's first call
  is guaranteed cold, which matters only for work that reads less than the L2 holds (a model that
  small stays in L2 during a real generation too);
- one synchronisation at the end, before the events are read.

`CudaRuntime.capture` records `fn` as a CUDA graph (warm-up on a side stream, then capture, as
PyTorch's CUDA-graph documentation prescribes); `replay()` then launches all of its kernels with
one call. That removes the per-kernel launch cost, which is what gpt-fast's
`torch.compile(mode="reduce-overhead")` does for decoding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from helpers.common.validation import check_int, check_number
from helpers.measure.capture_safety import check_capture_safe
from helpers.measure.nvidia_smi import gpu_snapshot, nvidia_smi

CACHE_MULTIPLE = 4  # clear the L2 by writing CACHE_MULTIPLE x its size
MIN_FLUSH_BYTES = 256 * 2**20  # and at least 256 MiB, as Triton's do_bench
WARMUP_S = 0.025  # do_bench's warm-up: 25 ms of GPU time
ESTIMATE_CALLS = 5  # calls that estimate one call's time before the warm-up
MIN_SAMPLE_S = 1e-3  # each sample (one event pair) spans at least 1 ms of calls
MAX_CALLS = 10_000  # never more calls per sample or warm-up than this
GRAPH_WARMUP = 3  # eager runs on a side stream before a capture (cuBLAS workspaces, allocator)
WARM_UP_S = 1.0  # the global warm-up before the first timed stage: about 1 s of large matmuls
WARM_UP_N = 8192  # n of its bf16 n x n matmuls (about 1.1 TFLOP each)


@dataclass
class CapturedGraph:
    """A CUDA graph of one call of fn: `replay()` reruns all its kernels on the same buffers, and
    `output` is the tensor those kernels write (the one fn returned during the capture).

    `fn` is kept as long as the graph is: the graph reads the buffers fn closes over (inputs,
    weights, a KV cache), and if the last reference to them went, the allocator could hand their
    memory to something else while replays still read it. Keep the CapturedGraph, not only its
    `replay`."""

    replay: Callable[[], None]
    output: object
    fn: Callable[[], object] | None = None


class CudaRuntime:
    """The CUDA calls the course's GPU path makes, for one device."""

    def __init__(self, device: torch.device):
        self.device = device
        self._flush_buffer = None

    def name(self) -> str:
        return torch.cuda.get_device_name(self.device)

    def properties(self):
        """torch.cuda.get_device_properties: total_memory, L2_cache_size, major, minor, ..."""
        return torch.cuda.get_device_properties(self.device)

    def event(self):
        return torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def l2_bytes(self) -> int:
        return int(getattr(self.properties(), "L2_cache_size", 0) or 0)

    def flush_l2(self) -> None:
        """Write a buffer of max(4 x L2, 256 MiB) bytes: whatever was in L2 is evicted."""
        if self._flush_buffer is None:
            nbytes = max(CACHE_MULTIPLE * self.l2_bytes(), MIN_FLUSH_BYTES)
            self._flush_buffer = torch.empty(nbytes, dtype=torch.int8, device=self.device)
        self._flush_buffer.zero_()

    def capture(self, fn: Callable[[], object], warmup: int = GRAPH_WARMUP) -> CapturedGraph:
        """fn recorded as a CUDA graph. fn must have static shapes and no host synchronisation:
        the first warm-up call is checked for both (helpers.measure.capture_safety), so that a sync
        raises a ValueError before the capture begins, not a CUDA error inside it (a failed
        capture can leave the device unusable for everything after it)."""
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up off the default stream, as capture requires
            check_capture_safe(fn, "the function to capture")
            for _ in range(warmup - 1):
                fn()
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            output = fn()
        return CapturedGraph(graph.replay, output, fn)

    def warm_up(self, seconds: float = WARM_UP_S) -> float:
        """Large bf16 matmuls for about `seconds`, so that clocks have ramped up (an idle H200
        runs at a few hundred MHz) and cuBLAS is loaded before anything is timed; the L2 flush
        buffer is allocated here too, outside every timed loop. Returns the seconds spent."""
        seconds = check_number(seconds, "seconds", 0)
        self.flush_l2()
        a = torch.randn(WARM_UP_N, WARM_UP_N, device=self.device, dtype=torch.bfloat16)  # (n, n)
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(10):
                a @ a  # (n, n)
            self.synchronize()
        return time.perf_counter() - start

    def snapshot(self) -> dict:
        """Clocks, power, temperature and throttle reasons now (helpers.measure.nvidia_smi.gpu_snapshot)."""
        return gpu_snapshot(self.device.index or 0)

    def summary(self) -> dict:
        """What the GPU is and how it was set: name, memory, L2, versions, TF32, clocks, power."""
        props = self.properties()
        info = {
            "gpu": self.name(),
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "gpu_l2_mib": round(self.l2_bytes() / 2**20, 1),
            "compute_capability": f"{props.major}.{props.minor}",
            "multiprocessors": getattr(props, "multi_processor_count", None),
            "cuda": torch.version.cuda,
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
        }
        return {**info, **nvidia_smi(self.device.index or 0)}


_RUNTIMES: dict[torch.device, CudaRuntime] = {}  # one per GPU (cuda:N): its L2 flush buffer is allocated once


def runtime(device: torch.device) -> CudaRuntime | None:
    """The CUDA runtime of `device`, or None when it is not a CUDA device (CPU, MPS).
    torch.device("cuda") and torch.device("cuda:0") differ as keys though they name one GPU, so
    the runtime is keyed by the index: one runtime, one flush buffer per GPU."""
    if device.type != "cuda":
        return None
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    if device not in _RUNTIMES:
        _RUNTIMES[device] = CudaRuntime(device)
    return _RUNTIMES[device]


# ----------------------------------------------------------------------------- do_bench


def _calls_for(seconds: float, per_call: float) -> int:
    return int(min(MAX_CALLS, max(1, math.ceil(seconds / max(per_call, 1e-9)))))


def do_bench(
    fn: Callable[[], object],
    gpu: CudaRuntime,
    *,
    repeat: int = 10,
    warmup: int = 1,
    warmup_s: float = WARMUP_S,
    calls: int | None = None,
    flush: bool = True,
) -> list[float]:
    """Seconds per call of fn() on the GPU, one value per sample (helpers.measure.measurement.benchmark
    turns them into a median and IQR).

    1. estimate one call from ESTIMATE_CALLS calls between two events;
    2. warm up for warmup_s seconds of GPU time (at least `warmup` calls);
    3. each sample: clear the L2 (flush), record an event, make `calls` calls (None: enough for
       MIN_SAMPLE_S), record an event; no synchronisation between samples;
    4. synchronise once, then read every sample's time / calls.
    gpu: helpers.measure.gpu.runtime(device), or a fake with the same methods."""
    if not callable(fn):
        raise ValueError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    repeat = check_int(repeat, "repeat", 1)
    warmup = check_int(warmup, "warmup", 0)
    warmup_s = check_number(warmup_s, "warmup_s", 0)
    if calls is not None:
        calls = check_int(calls, "calls", 1)
    gpu.synchronize()
    start, end = gpu.event(), gpu.event()
    start.record()
    for _ in range(ESTIMATE_CALLS):
        fn()
    end.record()
    gpu.synchronize()
    per_call = start.elapsed_time(end) / 1e3 / ESTIMATE_CALLS  # elapsed_time is in ms
    for _ in range(max(warmup, _calls_for(warmup_s, per_call))):
        fn()
    calls = calls or _calls_for(MIN_SAMPLE_S, per_call)
    events = [(gpu.event(), gpu.event()) for _ in range(repeat)]
    for start, end in events:
        if flush:
            gpu.flush_l2()  # outside the event pair: its own time is not counted
        start.record()
        for _ in range(calls):
            fn()
        end.record()
    gpu.synchronize()  # an event's time can only be read once the GPU has passed it
    return [s.elapsed_time(e) / 1e3 / calls for s, e in events]
