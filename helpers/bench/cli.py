"""`python -m helpers.bench`: the command line.

    python -m helpers.bench [--device cpu|cuda|mps] [--quick] [--json] [--steps K] [--context S]
                            [--out DIR [--name NAME]]

With --out, DIR/NAME.json is rewritten after every stage and DIR/NAME.log gets each progress
line, with the time, and each failed stage's traceback: a run that fails or is cut short still
leaves what it measured. The exit code is 1 when a stage failed (every file is written first).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from helpers.bench.decode import DECODE_CONTEXT
from helpers.bench.roofs import SMOKE
from helpers.bench.stages import run_bench
from helpers.bench.text import format_report
from helpers.bench.tiny import TINY_STEPS
from helpers.common.device import pick_device
from helpers.roofline.fixtures import tiny_config

SMOKE_SHAPE = dict(context=16, n_tokens=16, steps=4)  # --smoke: the course's tiny shape, a few tokens


class RunFiles:
    """DIR/NAME.json, rewritten whole after each stage (written to a temporary file, then renamed,
    so that it is never half written), and DIR/NAME.log, appended to."""

    def __init__(self, folder, name: str = "bench"):
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"name must be a file name without a folder, got {name!r}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.json, self.log_path = self.folder / f"{name}.json", self.folder / f"{name}.log"
        self.logged_errors = self.logged_stages = 0

    def log(self, line: str) -> None:
        with self.log_path.open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def write(self, result: dict) -> None:
        for error in result["errors"][self.logged_errors :]:
            self.log(f"stage {error['stage']} failed:\n{error['traceback']}")
        for stage in result["stages"][self.logged_stages :]:
            self.log(f"   {stage['stage']}: {stage['status']}, {stage['seconds']} s {stage.get('reason', '')}".rstrip())
        self.logged_errors, self.logged_stages = len(result["errors"]), len(result["stages"])
        tmp = self.json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, self.json)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m helpers.bench",
        description=importlib.import_module("helpers.bench").__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--device", choices=["cpu", "cuda", "mps"], default=None, help="default: CUDA if present, else CPU")
    p.add_argument("--quick", action="store_true", help="fewer repeats, smaller arrays (>= 4x the LLC)")
    p.add_argument("--smoke", action="store_true", help="every stage on tiny sizes, in seconds: numbers mean nothing")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--steps", type=int, default=TINY_STEPS, help="K, diffusion passes for N = 256 (1..256)")
    p.add_argument("--context", type=int, default=DECODE_CONTEXT, help="cached positions for the decode step")
    p.add_argument("--out", default=None, help="folder for NAME.json (rewritten after every stage) and NAME.log")
    p.add_argument("--name", default="bench", help="file name (no suffix) for --out; default bench")
    return p


def main(argv=None) -> int:
    """Run the bench; print the table (or --json); return the exit code (1: a stage failed)."""
    p = parser()
    args = p.parse_args(argv)
    try:
        device = pick_device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        files = None if args.out is None else RunFiles(args.out, args.name)
        kwargs = dict(quick=args.quick, steps=args.steps, context=args.context)
        if args.smoke:
            kwargs.update(SMOKE_SHAPE, settings=SMOKE, decode_config=tiny_config(64, causal=True))

        def progress(line: str) -> None:
            print(line, file=sys.stderr)
            if files is not None:
                files.log(line)

        if files is not None:
            files.log("+ python -m helpers.bench " + " ".join(sys.argv[1:] if argv is None else argv))
        result = run_bench(device, progress=progress, on_stage=None if files is None else files.write, **kwargs)
    except ValueError as err:
        p.error(str(err))
    if args.smoke:
        result["command"] = result["command"].replace(" --json", " --smoke --json")
        if files is not None:
            files.write(result)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 1 if result["errors"] else 0
