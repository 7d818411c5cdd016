"""Notebook 04, the roofline: the reference solutions of its exercises."""

from __future__ import annotations


def predicted_step_seconds(weight_bytes: float, kv_bytes: float, bandwidth: float) -> float:
    """A memory-bound decode step: every byte it must read, divided by bytes per second."""
    return (weight_bytes + kv_bytes) / bandwidth


def crossover_width(peak_flops: float, bandwidth: float, bytes_per_weight: float) -> float:
    """Positions W per pass at which reading the weights once takes as long as the arithmetic:
    W * 2 FLOPs per weight / peak = bytes_per_weight / bandwidth."""
    return peak_flops * bytes_per_weight / (2 * bandwidth)
