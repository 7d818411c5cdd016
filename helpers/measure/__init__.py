"""The machine, measured: honest timing with warm-up, medians and IQR (measurement); this
machine's bandwidth and FLOP/s (timing); its caches, memory and name (machine); CUDA events,
graphs and the L2 flush (gpu), nvidia-smi (nvidia_smi) and what a CUDA graph may capture
(capture_safety).

What the notebooks use is re-exported here."""

from helpers.measure.machine import describe, llc_bytes
from helpers.measure.measurement import benchmark
from helpers.measure.timing import linear_bytes, linear_flops, time_linear

__all__ = ["benchmark", "describe", "linear_bytes", "linear_flops", "llc_bytes", "time_linear"]
