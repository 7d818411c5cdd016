"""Argument checks shared by the helpers: each raises a ValueError that names the argument,
what it got, and what is allowed. bool is never accepted as a number (True is an int in Python)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch

NUMBER = (int, float, np.integer, np.floating)


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (numpy ints too, never a bool) in [minimum, maximum]; returned as a Python int."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an int{_range(minimum, maximum)}, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an int{_range(minimum, maximum)}, got {value!r}")
    return int(value)


def check_number(value, name: str, minimum: float | None = None, *, strict: bool = False) -> float:
    """A finite real number (never a bool or NaN), >= minimum (> minimum when strict)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, NUMBER) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number{_bound(minimum, strict)}, got {value!r}")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise ValueError(f"{name} must be a finite number{_bound(minimum, strict)}, got {value!r}")
    return float(value)


def check_positive(value, name: str) -> float:
    """A finite number > 0."""
    return check_number(value, name, 0, strict=True)


def check_fraction(value, name: str, *, allow_zero: bool = False, allow_one: bool = True) -> float:
    """A finite number in (0, 1] by default; the ends as allowed."""
    low, high = ("[" if allow_zero else "("), ("]" if allow_one else ")")
    ok = not isinstance(value, bool | np.bool_) and isinstance(value, NUMBER) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0) and (value <= 1 if allow_one else value < 1)
    if not ok:
        raise ValueError(f"{name} must be a number in {low}0, 1{high}, got {value!r}")
    return float(value)


def check_float_dtype(dtype, name: str = "dtype") -> torch.dtype:
    """A floating-point torch.dtype such as torch.float32."""
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"{name} must be a floating torch.dtype such as torch.float32, got {dtype!r}")
    return dtype


def check_generator(generator) -> torch.Generator | None:
    """None or a torch.Generator (the seed of every draw a sampler makes)."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be None or a torch.Generator, got {type(generator).__name__}")
    return generator


def _range(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    return f" <= {maximum}" if maximum is not None else ""


def _bound(minimum, strict: bool) -> str:
    return "" if minimum is None else f" {'>' if strict else '>='} {minimum}"


def check_path(path, default, name: str = "path") -> Path:
    """A file path: None (then `default`), a str or an os.PathLike such as pathlib.Path."""
    if path is None:
        return Path(default)
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"{name} must be None, a str or a pathlib.Path, got {path!r}")
    return Path(path)
