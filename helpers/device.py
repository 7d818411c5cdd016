"""Pick the fastest device this machine has: CUDA, then Apple's MPS, then the CPU."""

from __future__ import annotations

import torch


def pick_device(prefer: str | None = None) -> torch.device:
    """CUDA -> MPS -> CPU, or the device named by `prefer` ("cpu", "cuda", "mps") if available.
    Never touches CUDA on a machine without it."""
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if prefer is not None:
        if prefer not in available:
            raise ValueError(f"prefer must be one of {sorted(available)} or None, got {prefer!r}")
        if not available[prefer]:
            raise ValueError(
                f"device {prefer!r} is not available here; available: {[d for d, ok in available.items() if ok]}"
            )
        return torch.device(prefer)
    for name in ("cuda", "mps", "cpu"):
        if available[name]:
            return torch.device(name)
    return torch.device("cpu")


def describe(device: torch.device) -> str:
    """A readable name: the GPU model on CUDA, else the device type and CPU thread count."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "mps (Apple GPU)"
    return f"cpu ({torch.get_num_threads()} threads)"
