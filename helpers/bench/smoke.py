"""The first two parts of the reference run (helpers.bench.reference), each its own process:

    python -m helpers.bench.smoke environment DIR        # DIR/environment.json
    python -m helpers.bench.smoke smoke DIR [--device D] [--quick]   # DIR/smoke.json

`environment`: what the numbers will have been measured on: Python, torch and its CUDA, cuDNN,
NumPy, every visible GPU's properties, `nvidia-smi -q` and a snapshot of clocks and throttle
reasons. `smoke`: the GPU path in miniature, each check on its own so that one failure does not
hide the others: the tiny decode step captured as a CUDA graph and its logits compared with the
eager step's, GPT-2 small's GEMVs captured and replayed, and one do_bench each of a copy and a
matmul. Both write their JSON after every check.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

from helpers.bench.decode import decode_step_fn, model_gemvs
from helpers.common.device import pick_device
from helpers.decoding.model import gpt2_small_config, pad_vocab
from helpers.measure import gpu
from helpers.measure.capture_safety import check_capture_safe
from helpers.measure.nvidia_smi import gpu_snapshot
from helpers.measure.timing import matmul_flops, stream_bandwidth
from helpers.roofline.fixtures import random_model, tiny_config

SMI_TEXT_LIMIT = 60_000  # characters of `nvidia-smi -q` kept: every section for one GPU


def _write(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def _command(args: list[str]) -> str:
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20)
        return (out.stdout + out.stderr)[:SMI_TEXT_LIMIT]
    except (OSError, subprocess.SubprocessError) as err:
        return f"{args[0]} unavailable: {type(err).__name__}: {err}"


def environment(folder: Path) -> dict:
    """Versions, GPUs and their driver's view of them, as DIR/environment.json."""
    env = {
        "python": sys.version,
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "numpy": np.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "devices": [],
    }
    for i in range(torch.cuda.device_count() if env["cuda_available"] else 0):
        p = torch.cuda.get_device_properties(i)
        env["devices"].append({
            "index": i, "name": p.name, "total_memory_gib": round(p.total_memory / 2**30, 2),
            "l2_mib": round(getattr(p, "L2_cache_size", 0) / 2**20, 1), "multiprocessors": p.multi_processor_count,
            "compute_capability": f"{p.major}.{p.minor}",
        })  # fmt: skip
    env["snapshot"] = gpu_snapshot(0)
    env["nvidia_smi_q"] = _command(["nvidia-smi", "-q"])
    _write(folder / "environment.json", env)
    return env


def _check(name: str, fn, result: dict, path: Path) -> None:
    start = time.perf_counter()
    try:
        entry = {"check": name, "status": "ok", **fn()}
    except Exception as err:  # noqa: BLE001 -- each check is reported on its own
        entry = {"check": name, "status": "failed", "exception": f"{type(err).__name__}: {err}",
                 "traceback": traceback.format_exc()}  # fmt: skip
    entry["seconds"] = round(time.perf_counter() - start, 2)
    result["checks"].append(entry)
    _write(path, result)
    print(f"  {name}: {entry['status']}" + (f" ({entry['exception']})" if entry["status"] == "failed" else ""))


def _captured_step(device, cuda) -> dict:
    model = random_model(tiny_config(64), device)
    with torch.inference_mode():
        step = decode_step_fn(model, 16)
        check_capture_safe(step, "the tiny decode step")
        eager = step().clone()  # (1, 1, V)
        if cuda is None:
            return {"graph": "not timed: no CUDA", "eager_logits_finite": bool(torch.isfinite(eager).all())}
        captured = cuda.capture(step)
        captured.replay()
        cuda.synchronize()
        diff = (captured.output.float() - eager.float()).abs().max()
        return {"graph_equals_eager": bool(torch.equal(captured.output, eager)), "max_abs_diff": float(diff)}


def _captured_gemvs(device, cuda, quick: bool) -> dict:
    config = tiny_config(64) if quick else pad_vocab(gpt2_small_config())
    model = random_model(config, device)
    with torch.inference_mode():
        run = model_gemvs(model)
        check_capture_safe(run, "the model's GEMVs")
        if cuda is None:
            run()
            return {"shape": "tiny" if quick else "GPT-2 small", "graph": "not timed: no CUDA"}
        captured = cuda.capture(run)
        seconds = gpu.do_bench(captured.replay, cuda, repeat=5)
        nbytes = sum(m.weight.numel() * m.weight.element_size() for m in model.modules() if hasattr(m, "in_features"))
        return {"shape": "GPT-2 small", "replay_ms": round(1e3 * sorted(seconds)[2], 4),
                "gb_s": round(nbytes / sorted(seconds)[2] / 1e9, 1)}  # fmt: skip


def smoke(folder: Path, device, quick: bool = False) -> dict:
    """The GPU path in miniature, check by check, as DIR/smoke.json."""
    device = pick_device(device)
    cuda = gpu.runtime(device)
    result = {"device": str(device), "quick": quick, "checks": []}
    path = folder / "smoke.json"
    if cuda is not None:
        _check("warm-up", lambda: {"seconds_of_matmuls": round(cuda.warm_up(0.5), 2)}, result, path)
    _check("tiny decode step: eager against graph", lambda: _captured_step(device, cuda), result, path)
    _check("GEMVs of every weight matrix: capture and replay", lambda: _captured_gemvs(device, cuda, quick),
           result, path)  # fmt: skip
    nbytes = 8 * 2**20 if quick else 256 * 2**20
    _check("do_bench: STREAM copy", lambda: {"gb_s": round(stream_bandwidth(
        "copy", nbytes=nbytes, device=device, repeat=3).value, 1)}, result, path)  # fmt: skip
    n = 256 if quick else 4096
    _check("do_bench: matmul", lambda: {"n": n, "gflop_s": round(matmul_flops(n, device=device, repeat=3).value, 1)},
           result, path)  # fmt: skip
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers.bench.smoke", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("part", choices=["environment", "smoke"])
    p.add_argument("folder")
    p.add_argument("--device", default=None, help="default: CUDA if present, else CPU")
    p.add_argument("--quick", action="store_true", help="small sizes: only checks that everything runs")
    args = p.parse_args(argv)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    if args.part == "environment":
        environment(folder)
        return 0
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    result = smoke(folder, device, args.quick)
    return 0 if all(c["status"] == "ok" for c in result["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
