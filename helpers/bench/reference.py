"""The prepared reference run for a lent GPU: one command, everything it measures in one folder.

    PYTHONPATH=. python3 -m helpers.bench.reference DIR            # a GPU: about 3 minutes on an H200
    PYTHONPATH=. python3 -m helpers.bench.reference DIR --quick    # a CPU: every part end to end, < 90 s

It runs from the repository root with nothing installed but torch and numpy, and does five
things, each in its own process under its own time limit, so that a crash, a hang or a CUDA
error in one part cannot take the others with it:

1. environment -> DIR/environment.json: Python, torch, CUDA, cuDNN, NumPy, the GPUs' properties,
   `nvidia-smi -q` and a snapshot of clocks, power and throttle reasons;
2. smoke -> DIR/smoke.json: the tiny decode step and GPT-2 small's GEMVs captured and replayed as
   CUDA graphs, graph and eager logits compared, one do_bench each of a copy and a matmul;
3. bench -> DIR/bench.json, DIR/bench.log: `python -m helpers.bench --out DIR`, every stage,
   its JSON rewritten after each stage;
4. repeat -> DIR/repeat.json, DIR/repeat.log: the same again, to see whether the numbers repeat;
5. closing: one more nvidia-smi snapshot, in DIR/reference.json with every part's exit code,
   time and the tail of its errors, and the repeat's numbers against the first run's.

Seven files in all. The exit code is 0 when every part succeeded. A part cut off by its time
limit still leaves what it wrote (the bench rewrites its JSON after every stage).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers.measure.nvidia_smi import gpu_snapshot

ROOT = Path(__file__).resolve().parents[2]  # the repository root: the parts run from there
# seconds each part may take: on a GPU (an H200 needs well under half of each), and with --quick on a CPU
LIMITS = {"environment": (60, 30), "smoke": (90, 40), "bench": (180, 60), "repeat": (180, 60)}
STDERR_TAIL = 3000  # characters of a part's stderr kept in reference.json
REPEATED = (  # (section, key) of the numbers compared between the two runs
    ("roofs", "copy_gb_s"), ("roofs", "gemv_gb_s"), ("roofs", "matmul_gflop_s"),
    ("decode", "measured_ms_eager"), ("decode", "graph_ms"), ("decode", "predicted_ms"),
)  # fmt: skip


def part_commands(folder: Path, device: str | None, quick: bool) -> dict[str, list[str]]:
    """{part: argv} of the four parts that run in their own process."""
    py = [sys.executable, "-m"]
    dev = [] if device is None else ["--device", device]
    bench = [*py, "helpers.bench", *dev, "--out", str(folder)] + (["--smoke"] if quick else [])
    return {
        "environment": [*py, "helpers.bench.smoke", "environment", str(folder)],
        "smoke": [*py, "helpers.bench.smoke", "smoke", str(folder), *dev] + (["--quick"] if quick else []),
        "bench": [*bench, "--name", "bench"],
        "repeat": [*bench, "--name", "repeat"],
    }


def run_part(name: str, argv: list[str], limit: float) -> dict:
    """Run one part from the repository root with PYTHONPATH set, under `limit` seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    entry = {"part": name, "argv": argv[1:], "limit_s": limit}
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit)
        entry.update(returncode=done.returncode, timed_out=False, stderr_tail=done.stderr[-STDERR_TAIL:])
        entry["stdout_tail"] = done.stdout[-STDERR_TAIL:]
    except subprocess.TimeoutExpired as err:
        tail = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else err.stderr or ""
        entry.update(returncode=None, timed_out=True, stderr_tail=tail[-STDERR_TAIL:])
    entry["seconds"] = round(time.perf_counter() - start, 1)
    return entry


def repeatability(folder: Path) -> list[dict]:
    """The repeat's numbers against the first run's: (section, key, first, repeat, ratio)."""
    try:
        first, again = (json.loads((folder / f"{n}.json").read_text()) for n in ("bench", "repeat"))
    except (OSError, ValueError):
        return []
    rows = []
    for section, key in REPEATED:
        a, b = (first.get(section) or {}).get(key), (again.get(section) or {}).get(key)
        ratio = None if not a or b is None else round(b / a, 3)
        rows.append({"section": section, "key": key, "first": a, "repeat": b, "ratio": ratio})
    return rows


def reference(folder, device: str | None = None, quick: bool = False, limits: dict | None = None) -> dict:
    """Run the five parts into `folder`; the summary written as folder/reference.json."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    limits = limits or {name: pair[1 if quick else 0] for name, pair in LIMITS.items()}
    summary = {
        "command": "PYTHONPATH=. python3 -m helpers.bench.reference DIR"
        + (f" --device {device}" if device else "") + (" --quick" if quick else ""),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "parts": [],
    }  # fmt: skip
    path = folder / "reference.json"
    for name, argv in part_commands(folder, device, quick).items():
        print(f"{name} (at most {limits[name]} s) ...", flush=True)
        entry = run_part(name, argv, limits[name])
        summary["parts"].append(entry)
        state = "timed out" if entry["timed_out"] else f"exit {entry['returncode']}"
        print(f"  {name}: {state} in {entry['seconds']} s", flush=True)
        if entry["returncode"] not in (0, None) or entry["timed_out"]:
            print(entry["stderr_tail"][-1500:], flush=True)
        path.write_text(json.dumps(summary, indent=2))
    try:  # the closing part: nothing in it may cost the summary
        summary["closing_snapshot"] = gpu_snapshot(0)
        summary["repeatability"] = repeatability(folder)
    except Exception as err:  # noqa: BLE001 -- recorded, and the summary is still written
        summary["closing_error"] = f"{type(err).__name__}: {err}"
        summary.setdefault("repeatability", [])
    summary["files"] = sorted(p.name for p in folder.iterdir())
    summary["ok"] = all(p["returncode"] == 0 for p in summary["parts"])
    path.write_text(json.dumps(summary, indent=2))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m helpers.bench.reference", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("folder", help="where the seven files go (made if missing)")
    p.add_argument("--device", default=None, choices=["cpu", "cuda"], help="default: CUDA if present, else CPU")
    p.add_argument("--quick", action="store_true", help="every part on tiny sizes (a CPU check of the plumbing)")
    args = p.parse_args(argv)
    summary = reference(args.folder, args.device, args.quick)
    for row in summary["repeatability"]:
        print(f"  repeat/first {row['section']}.{row['key']}: {row['ratio']}")
    print("reference run " + ("complete" if summary["ok"] else "INCOMPLETE") + f": {', '.join(summary['files'])}")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
