"""A GPU on paper, for the tests of the CUDA path (tests/test_gpu.py, tests/test_bench_run.py).

The fake keeps the rules a real one enforces: an event's time can be read only after a
synchronisation has passed it, a call right after an L2 flush is slower (it reads from memory)
than one that finds its data in L2, and a function to capture must not sync the host or build
tensors from Python data (helpers.measure.capture_safety, as helpers.measure.gpu.CudaRuntime.capture checks)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import torch

from helpers.bench.roofs import Roofs
from helpers.measure import gpu
from helpers.measure.capture_safety import check_capture_safe
from helpers.measure.measurement import Measurement

COLD_S, WARM_S = 3e-3, 1e-3  # a fake kernel's GPU time with its data in memory / in L2


class FakeEvent:
    def __init__(self, fake):
        self.fake, self.time, self.done = fake, None, False

    def record(self):
        self.time, self.done = self.fake.now(), False
        self.fake.pending.append(self)
        self.fake.log.append("record")

    def elapsed_time(self, end) -> float:
        if not (self.done and end.done):  # as CUDA: the GPU has not reached the event yet
            raise RuntimeError("event not completed: synchronize before reading it")
        return 1e3 * (end.time - self.time)


class FakeGpu:
    """A GPU on paper. Time is the virtual GPU time of fake kernels, plus the host's clock when
    host_clock is True (for real work on CPU tensors, which spends no virtual time)."""

    def __init__(self, name="NVIDIA H200", l2_bytes=50 * 2**20, total_memory=141 * 10**9, host_clock=True):
        self.gpu_name, self.l2, self.total_memory = name, l2_bytes, total_memory
        self.host_clock = host_clock
        self.virtual, self.log, self.pending = 0.0, [], []
        self.cold = True  # the next kernel reads from memory
        self.captures = self.replays = 0
        self.replays_of = []  # replays of each captured graph, in the order of capture
        self.snapshots = 0

    def now(self) -> float:
        return (time.perf_counter() if self.host_clock else 0.0) + self.virtual

    def kernel(self):
        """A fake kernel: COLD_S right after a flush, WARM_S when its data is still in L2."""
        self.log.append("call")
        self.virtual += COLD_S if self.cold else WARM_S
        self.cold = False

    def name(self):
        return self.gpu_name

    def properties(self):
        return SimpleNamespace(
            total_memory=self.total_memory, L2_cache_size=self.l2, major=9, minor=0, multi_processor_count=132
        )

    def event(self):
        return FakeEvent(self)

    def synchronize(self):
        for event in self.pending:
            event.done = True
        self.pending.clear()
        self.log.append("sync")

    def l2_bytes(self):
        return self.l2

    def flush_l2(self):
        self.log.append("flush")
        self.cold = True

    def capture(self, fn, warmup=gpu.GRAPH_WARMUP):
        check_capture_safe(fn, "the function to capture")  # as the real runtime: a sync raises here
        for _ in range(warmup - 1):
            fn()
        output = fn()
        self.captures += 1
        self.replays_of.append(0)
        index = len(self.replays_of) - 1

        def replay():
            self.replays += 1
            self.replays_of[index] += 1
            result = fn()
            if isinstance(output, torch.Tensor):
                output.copy_(result)

        return gpu.CapturedGraph(replay, output, fn)

    def warm_up(self, seconds=gpu.WARM_UP_S):
        self.log.append("warm_up")
        self.flush_l2()
        return seconds

    def snapshot(self):
        self.snapshots += 1
        return {"clocks_sm": 1980.0, "power_draw": 400.0, "throttle_reasons": [], "snapshot": self.snapshots}

    def summary(self):
        return {"gpu": self.gpu_name, "cuda": "12.8", "driver_version": "570.1", "tf32_matmul": False}


def roofs() -> Roofs:
    bw = Measurement(4000.0, "GB/s", 1.0, [4000.0])
    return Roofs("cuda (NVIDIA H200)", 16, 2**30, bw, bw, bw, Measurement(9e5, "GFLOP/s", 1.0, [9e5]), "bf16", "bf16")
