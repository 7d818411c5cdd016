"""What the GPU's driver says about it, from `nvidia-smi` (no Python dependency needed).

- `nvidia_smi`: driver version, clocks, power and temperature, recorded with every GPU result;
- `gpu_snapshot`: the state a timing depends on, taken before and after each stage of a run:
  clocks, power, temperature, the performance state and the reasons the driver is holding the
  clocks down right now (power cap, thermal slowdown, idle, ...). A stage timed while its
  snapshot says "SwPowerCap" or "HwThermalSlowdown" measured a slowed GPU.

Every function returns {} where nvidia-smi is missing or fails: a machine without an NVIDIA
driver is not an error.
"""

from __future__ import annotations

import subprocess

from helpers.common.validation import check_int

SUMMARY_FIELDS = (
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "power.draw",
    "power.limit",
    "temperature.gpu",
)
SNAPSHOT_FIELDS = (
    "timestamp",
    "pstate",
    "clocks.sm",
    "clocks.mem",
    "power.draw",
    "temperature.gpu",
    "utilization.gpu",
    "memory.used",
)
TEXT_FIELDS = ("driver_version", "timestamp", "pstate", "clocks_event_reasons.active", "clocks_throttle_reasons.active")
# the field's name since driver 535; older drivers know only the second, newer ones still accept it
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
REASONS = {  # the bits of that bitmask, as nvidia-smi -q names them
    0x1: "GpuIdle",
    0x2: "ApplicationsClocksSetting",
    0x4: "SwPowerCap",
    0x8: "HwSlowdown",
    0x10: "SyncBoost",
    0x20: "SwThermalSlowdown",
    0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown",
    0x100: "DisplayClockSetting",
}


def query(fields, index: int = 0, run=subprocess.run) -> dict:
    """{field with "_" for ".": value} for GPU `index`: numbers as floats, "[N/A]" as None;
    {} if nvidia-smi is missing, fails or answers with another number of values."""
    index = check_int(index, "index", 0)
    args = ["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    try:
        out = run(args, capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.strip().splitlines()[0].split(",")] if out.strip() else []
    if len(values) != len(fields):
        return {}
    info = {}
    for field, value in zip(fields, values, strict=True):
        key = field.replace(".", "_")
        if field in TEXT_FIELDS:
            info[key] = value
            continue
        try:
            info[key] = float(value)
        except ValueError:  # "[N/A]" on GPUs that do not report it
            info[key] = None
    return info


def nvidia_smi(index: int = 0, run=subprocess.run) -> dict:
    """Driver version, clocks (MHz), power (W) and temperature of GPU `index`."""
    return query(SUMMARY_FIELDS, index, run)


def throttle_reasons(mask: str | None) -> list[str]:
    """The names of the bits set in nvidia-smi's active-reasons mask ("0x0000000000000004" ->
    ["SwPowerCap"]); [] for none or an unreadable mask."""
    try:
        bits = int(mask, 16)
    except (TypeError, ValueError):
        return []
    names = [name for bit, name in REASONS.items() if bits & bit]
    rest = bits & ~sum(REASONS)
    return names + ([f"0x{rest:x}"] if rest else [])


def gpu_snapshot(index: int = 0, run=subprocess.run) -> dict:
    """Clocks, power, temperature, performance state, utilisation, memory used and the active
    throttle reasons (decoded into names) of GPU `index`, now."""
    for reason in REASON_FIELDS:  # a driver that does not know a field rejects the whole query
        info = query((*SNAPSHOT_FIELDS, reason), index, run)
        if info:
            mask = info.pop(reason.replace(".", "_"))
            return {**info, "throttle_mask": mask, "throttle_reasons": throttle_reasons(mask)}
    return query(SNAPSHOT_FIELDS, index, run)
