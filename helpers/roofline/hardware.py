"""The hardware table: vendor peak numbers for the devices the course projects onto.

data/hardware.csv has one row per device: peak memory bandwidth (GB/s), dense bf16 and fp32
TFLOPS (no sparsity; empty where the vendor publishes none), memory capacity (GB, the largest
configuration for Apple's unified memory) and the source. Every projection in the course reads
its device from here; `Hardware.bandwidth` and `Hardware.peak_flops()` convert to SI units.
These are datasheet ceilings: what real code reaches is a fraction of them (helpers.roofline.costs,
"efficiency").
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.common.validation import check_path

HARDWARE_CSV = Path(__file__).resolve().parents[2] / "data" / "hardware.csv"
PEAK_DTYPES = ("bf16", "fp32")  # the peaks the table lists


@dataclass(frozen=True)
class Hardware:
    """One row of data/hardware.csv: vendor peak numbers (dense, no sparsity)."""

    device: str
    bandwidth_gb_s: float  # peak memory bandwidth, GB/s (1e9 bytes/s)
    bf16_tflops_dense: float | None = None  # dense BF16 tensor TFLOPS; None if not published
    fp32_tflops: float | None = None  # FP32 TFLOPS (non-tensor); None if not published
    memory_gb: float | None = None  # device memory, GB as the vendor prints it; None if not applicable
    source: str = ""

    def __post_init__(self):
        for name in ("bandwidth_gb_s", "bf16_tflops_dense", "fp32_tflops", "memory_gb"):
            value = getattr(self, name)
            if value is None and name != "bandwidth_gb_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"Hardware.{name} must be a positive number, got {value!r}")

    @property
    def bandwidth(self) -> float:
        """Peak bandwidth in bytes/s."""
        return self.bandwidth_gb_s * 1e9

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s for dtype 'bf16' or 'fp32'; ValueError if the vendor publishes none."""
        if dtype not in PEAK_DTYPES:
            raise ValueError(f"dtype must be one of {PEAK_DTYPES}, got {dtype!r}")
        tflops = self.bf16_tflops_dense if dtype == "bf16" else self.fp32_tflops
        if tflops is None:
            raise ValueError(
                f"no published {dtype} peak for {self.device}; use dataclasses.replace(hw, ...) to supply one"
            )
        return tflops * 1e12

    def ridge_point(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s / bandwidth: FLOP per byte where the bandwidth roof meets the compute roof."""
        return self.peak_flops(dtype) / self.bandwidth

    @property
    def memory_bytes(self) -> float | None:
        return None if self.memory_gb is None else self.memory_gb * 1e9


def _optional_float(text: str) -> float | None:
    return float(text) if text.strip() else None


def load_hardware_table(path: str | Path | None = None) -> dict[str, Hardware]:
    """data/hardware.csv as {device name: Hardware}, in file order."""
    path = check_path(path, HARDWARE_CSV)
    if not path.is_file():
        raise ValueError(f"hardware table not found at {path}")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    table = {}
    for row in rows:
        hw = Hardware(
            device=row["device"],
            bandwidth_gb_s=float(row["bandwidth_gb_s"]),
            bf16_tflops_dense=_optional_float(row["bf16_tflops_dense"]),
            fp32_tflops=_optional_float(row["fp32_tflops"]),
            memory_gb=_optional_float(row.get("memory_gb") or ""),
            source=row["source"],
        )
        table[hw.device] = hw
    return table


def get_hardware(hardware) -> Hardware:
    """A Hardware from a Hardware or a device name in data/hardware.csv."""
    if isinstance(hardware, Hardware):
        return hardware
    table = load_hardware_table()
    if isinstance(hardware, str) and hardware in table:
        return table[hardware]
    raise ValueError(f"hardware must be a Hardware or one of {list(table)}, got {hardware!r}")


# how torch.cuda.get_device_name spells each row's GPU; the first match wins, so the exceptions
# (H100 NVL, H200 NVL, A100 PCIe: other bandwidths or peaks than the listed models) come first
DEVICE_NAME_PATTERNS = (
    (r"H100 NVL|H200 NVL|A100.*PCI", None),
    (r"\bH200\b", "NVIDIA H200"),
    (r"\bH100\b.*PCIe", "NVIDIA H100 PCIe"),
    (r"\bH100\b.*(SXM|HBM3)", "NVIDIA H100 SXM"),
    (r"\bA100\b.*SXM.*80GB", "NVIDIA A100 80GB SXM"),
    (r"\bA100\b.*SXM.*40GB", "NVIDIA A100 40GB SXM"),
    (r"\bB200\b", "NVIDIA B200 (HGX)"),
    (r"\bL40S\b", "NVIDIA L40S"),
    (r"\bL4\b", "NVIDIA L4"),
    (r"RTX 4090\b(?! ?D)", "NVIDIA RTX 4090"),
    (r"RTX 3090\b(?! ?Ti)", "NVIDIA RTX 3090"),
    (r"\bMI300X\b", "AMD MI300X"),
)


def match_hardware(device_name: str) -> Hardware | None:
    """The row of data/hardware.csv for a GPU as torch.cuda.get_device_name names it
    ("NVIDIA H100 80GB HBM3" -> "NVIDIA H100 SXM"), or None when the table has no row for exactly
    that model (its datasheet numbers would then be another GPU's)."""
    if not isinstance(device_name, str):
        raise ValueError(f"device_name must be a str (torch.cuda.get_device_name), got {device_name!r}")
    for pattern, row in DEVICE_NAME_PATTERNS:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return None if row is None else load_hardware_table()[row]
    return None
