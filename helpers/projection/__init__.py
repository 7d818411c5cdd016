"""GPUs, projected: the latency of N tokens, AR and diffusion, from the cost of every pass
(latency), and published decoding speeds beside the projections of the same setting (calibration).

What the notebooks use is re-exported here."""

from helpers.projection.calibration import calibration_table, load_parallelism, typical_fit
from helpers.projection.latency import ar_latency, dllm_latency, dllm_latency_at

__all__ = ["ar_latency", "calibration_table", "dllm_latency", "dllm_latency_at", "load_parallelism", "typical_fit"]
