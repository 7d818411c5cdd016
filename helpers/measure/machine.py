"""What a measurement runs on: the last-level cache, the memory, the CPU's name.

Bandwidth must be measured on arrays that do not fit in any cache (McCalpin's STREAM rule: each
array at least 4x the last-level cache), so `default_array_bytes` sizes them from `llc_bytes`;
`machine_summary` records what the numbers were measured on.
"""

from __future__ import annotations

import glob
import os
import platform
import re
import subprocess
from functools import lru_cache

import torch

from helpers.common.device import as_device
from helpers.measure import gpu

FALLBACK_LLC_BYTES = 32 * 2**20  # when the cache size cannot be read: a typical desktop L3
CACHE_MULTIPLE = 4  # STREAM's rule: every array at least 4x the last-level cache
CUDA_ARRAY_BYTES = 2**30  # 1 GiB per array on CUDA: far beyond any GPU's L2 (H100: 50 MB)
MPS_ARRAY_BYTES = 2**29  # 512 MiB per array on Apple GPUs (system-level cache up to ~100 MB)
MEMORY_FRACTION = 16  # no array larger than 1/16 of the device's memory


# ----------------------------------------------------------------------------- cache sizes


def describe(device: torch.device) -> str:
    """A readable name: the GPU model on CUDA, else the device type and CPU thread count.
    device: a torch.device or anything `as_device` accepts."""
    device = as_device(device)
    cuda = gpu.runtime(device)
    if cuda is not None:
        return f"cuda ({cuda.name()})"
    if device.type == "mps":
        return "mps (Apple GPU)"
    threads = torch.get_num_threads()
    return f"cpu ({threads} thread{'s' if threads != 1 else ''})"


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


def memory_bytes() -> int | None:
    """Bytes of physical memory, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def device_memory_bytes(device=None) -> int | None:
    """Bytes of memory the device's arrays live in: the GPU's own memory on CUDA, the share of
    unified memory Metal recommends on MPS, physical memory on the CPU; None where unknown."""
    device = as_device(device)
    cuda = gpu.runtime(device)
    if cuda is not None:
        return int(cuda.properties().total_memory)
    if device.type == "mps":
        recommended = getattr(torch.mps, "recommended_max_memory", None)
        if recommended is not None:
            return int(recommended())
    return memory_bytes()


def default_array_bytes(device=None) -> int:
    """Size of one array for a bandwidth measurement: at least 4x the last-level cache (the L2 on
    CUDA, with 1 GiB as the floor; 512 MiB on MPS), but never more than 1/16 of the device's memory
    (device_memory_bytes), so that a triad's three arrays fit on an 8 GB laptop."""
    device = as_device(device)
    cuda = gpu.runtime(device)
    if cuda is not None:
        wanted = max(CUDA_ARRAY_BYTES, CACHE_MULTIPLE * cuda.l2_bytes())
    elif device.type == "mps":
        wanted = MPS_ARRAY_BYTES
    else:
        wanted = CACHE_MULTIPLE * llc_bytes()
    memory = device_memory_bytes(device)
    return int(min(wanted, memory // MEMORY_FRACTION)) if memory else int(wanted)


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
    """What the measurements ran on: device, CPU model, torch threads, last-level cache, torch version;
    on CUDA also the GPU's memory, L2, compute capability, CUDA and driver versions, the TF32
    setting, and its clocks, power and temperature (helpers.measure.gpu.CudaRuntime.summary)."""
    device = as_device(device)
    summary = {
        "device": describe(device),
        "cpu": _cpu_name(),
        "threads": torch.get_num_threads(),
        "llc_mib": round(llc_bytes() / 2**20, 1),
        "torch": torch.__version__,
    }
    cuda = gpu.runtime(device)
    if cuda is not None:
        summary.update(cuda.summary())
    elif device.type == "mps":
        summary["mps_memory_gib"] = round((device_memory_bytes(device) or 0) / 2**30, 1)
    return summary
