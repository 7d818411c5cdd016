"""Devices: pick the fastest this machine has (CUDA, then Apple's MPS, then the CPU), and turn what
a caller passes as `device` into a torch.device (`as_device`). Naming a device, which asks the GPU,
is helpers.measure.machine's `describe`."""

from __future__ import annotations

import torch


def pick_device(prefer: str | None = None) -> torch.device:
    """CUDA -> MPS -> CPU, or the device named by `prefer` ("cpu", "cuda", "mps") if available.
    Never touches CUDA on a machine without it."""
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if prefer is not None:
        if not isinstance(prefer, str) or prefer not in available:
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


def as_device(device) -> torch.device:
    """None -> the CPU; a string or torch.device of type cpu, cuda or mps -> torch.device.
    ValueError for anything else, and for a device type this machine does not have (only the
    type asked for is probed: CUDA is never touched on a CPU request)."""
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
            f"device {device.type!r} is not available on this machine; helpers.common.device.pick_device() finds one"
        )
    return device
