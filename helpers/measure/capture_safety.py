"""Is a function safe to record as a CUDA graph? Checked on any machine, GPU or not.

A CUDA graph records the kernels a call launches and replays them later without Python. Two
things break that, and both are easy to write by accident:

- a **host sync**: the host waits for the GPU to read a value back (`.item()`, `.tolist()`,
  `float(t)`, `if t:`, `.numpy()`). Inside a capture it raises; outside one it stalls the host,
  so the host can no longer queue work ahead of the GPU and an eager timing then measures syncs
  as well as launches;
- a **tensor made from Python data** (`torch.tensor([...])`, `torch.as_tensor(list)`): on a GPU
  that is a host-to-device copy of memory the graph does not own. A replay would read whatever
  the copy left behind at capture time, not the new Python value.

PyTorch lets us see both without a GPU: every operation passes through `__torch_dispatch__`,
where a read-back to the host appears as `aten._local_scalar_dense` (as `aten.item` or
`aten.is_nonzero` under inference mode, which does not decompose them) and a tensor built from
Python data as `aten.lift_fresh`. `Tensor.tolist` and `Tensor.numpy` read memory directly,
without an operation, so the check wraps them while it runs.

    with capture_check() as found:
        step()
    found  # [] when step could be captured

`check_capture_safe(fn)` runs fn once so and raises a ValueError naming what it found.
"""

from __future__ import annotations

import contextlib
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# item(), bool(t), float(t), int(t), torch.equal: a value back to the host (the last three are how
# inference mode dispatches them; outside it they decompose into _local_scalar_dense)
HOST_SYNC = ("aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.equal")
FROM_PYTHON = ("aten.lift_fresh", "aten.lift_fresh_copy")  # torch.tensor / as_tensor of Python data
READ_BACKS = ("tolist", "numpy")  # Tensor methods that read memory without dispatching an operation


def _where() -> str:
    """The innermost frame outside PyTorch and this module: the line that did it."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = frame.filename.replace("\\", "/")
        if "/torch/" not in path and not path.endswith("capture_safety.py"):
            return f"{frame.filename}:{frame.lineno} ({frame.line})"
    return "?"


class _Watch(TorchDispatchMode):
    def __init__(self, found: list[str]):
        super().__init__()
        self.found = found

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name in HOST_SYNC:
            self.found.append(f"host sync ({name}: .item(), bool(), float() or torch.equal) at {_where()}")
        elif name in FROM_PYTHON:
            self.found.append(f"tensor made from Python data ({name}: torch.tensor or as_tensor) at {_where()}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def capture_check():
    """Within the block, record every host sync and every tensor made from Python data, as
    readable lines in the list it yields. The block's work runs as usual."""
    found: list[str] = []
    originals = {name: getattr(torch.Tensor, name) for name in READ_BACKS}

    def watched(name):
        def read_back(self, *args, **kwargs):
            found.append(f"host sync (Tensor.{name}) at {_where()}")
            return originals[name](self, *args, **kwargs)

        return read_back

    for name in READ_BACKS:
        setattr(torch.Tensor, name, watched(name))
    try:
        with _Watch(found):
            yield found
    finally:
        for name, method in originals.items():
            setattr(torch.Tensor, name, method)


def check_capture_safe(fn, what: str = "fn"):
    """Run fn() once under capture_check and return its result; raise a ValueError that lists
    every host sync and Python-made tensor it found (a CUDA graph could not hold them)."""
    if not callable(fn):
        raise ValueError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    with capture_check() as found:
        result = fn()
    if found:
        lines = "\n  ".join(dict.fromkeys(found))  # each place once, in order
        raise ValueError(f"{what} cannot be captured as a CUDA graph:\n  {lines}")
    return result
