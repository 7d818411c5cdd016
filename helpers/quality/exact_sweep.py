"""Notebook 03's sampler sweep again, on the exact denoiser: what any model of the language could do.

helpers.quality.matched_quality runs every sampler on the trained diffusion model. Here the same samplers,
with the same settings and the same seeds, run on helpers.diffusion.exact_denoiser.ExactDenoiser, the
language's exact conditionals. What these documents get wrong is the sampler's fault alone; the
difference from the trained model's documents, at the same setting, is the model's.

The grid is helpers.quality.matched_quality.SAMPLERS, plus K = 4 (8 tokens per pass) for the orders
that notebook 03 follows furthest, and random order's price in bits (meta["lost_bits"]: the
fixed-order KL averaged over orders, helpers.quality.error_sources.order_averaged_kl, on 4096 documents,
with the one-pass estimate's calibration over 100 more samples in meta["one_pass_calibration"]).
Only each document's scores are kept (valid, sentences, padding, the bits of its first sentence
and of the rest, its passes), not the documents: everything helpers.quality.scores and helpers.quality.matching
compute from a document they compute from these.

`python -m helpers.quality.exact_sweep` writes data/exact_sweep.json deterministically, with a progress
bar, in about 30 minutes on two cores (meta["build_seconds"] says how long it took).
"""

from __future__ import annotations

import argparse
import base64
import bz2
import json
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from helpers.common.validation import check_int, check_path
from helpers.diffusion.unmasking import RULES
from helpers.quality.matched_quality import BUDGETS, CHUNK, LENGTH, SAMPLERS, Run, Sweep, _concat, sweep_meta, sweep_run
from helpers.quality.scores import DocumentScores, _p_too_long

EXACT_SWEEP_JSON = Path(__file__).resolve().parents[2] / "data" / "exact_sweep.json"
FURTHER = (4,)  # K added for the samplers that are a ranking rule alone, followed to 8 tokens per pass
LOST_BITS_RATES = (1, 2, 4, 8, 32)  # tokens per pass at which random order's lost bits are computed
LOST_BITS_DOCS = 4096  # documents (one random order each) behind each of them


def _ranks_alone(kwargs: dict, grid: tuple) -> bool:
    """Whether a sampler is a ranking rule of RULES alone, run on the budgets of passes (no blocks,
    threshold or re-masking): those are followed to 8 tokens per pass."""
    return set(kwargs) <= {"rule"} and RULES[kwargs.get("rule", "confidence")].score is not None and grid == BUDGETS


# The same samplers on the exact denoiser. One more entry of SAMPLERS costs about 1.5 minutes of this
# build (margin order, measured on two cores), but the file is rebuilt whole (about 30 minutes) and
# notebooks 03, 05 and 06 re-executed.
EXACT_SAMPLERS = {
    name: (kwargs, (FURTHER + grid) if _ranks_alone(kwargs, grid) else grid)
    for name, (kwargs, grid) in SAMPLERS.items()
}
_FIELDS = {"valid": np.uint8, "sentences": np.uint8, "padding": np.uint8, "passes": np.uint8,
           "first_bits": np.float32, "rest_bits": np.float32}  # fmt: skip


def _pack(array: np.ndarray, dtype) -> str:
    return base64.b64encode(bz2.compress(np.ascontiguousarray(array, dtype=dtype).tobytes(), 9)).decode()


def _unpack(text: str, dtype) -> np.ndarray:
    return np.frombuffer(bz2.decompress(base64.b64decode(text)), dtype=dtype)


def compact(run: Run) -> dict:
    """One run as JSON: its per-document scores, each field packed (bz2 + base64)."""
    s = run.scores
    bits = np.nan_to_num(s.sentence_bits)
    fields = {"valid": s.valid, "sentences": s.sentences, "padding": s.padding, "passes": run.passes,
              "first_bits": bits[:, 0], "rest_bits": bits[:, 1:].sum(axis=1)}  # fmt: skip
    packed = {name: _pack(fields[name], dtype) for name, dtype in _FIELDS.items()}
    # the shipped files' key for the sampler's name is "strategy", the name it had when they were built
    return {"strategy": run.sampler, "setting": run.setting, "n": run.n, **packed}


def expand(d: dict) -> Run:
    """The run `compact` stored. Its scores hold two sentence columns: the first sentence's bits and
    the other sentences' together (NaN where there are none), which is all helpers.quality.scores sums."""
    f = {name: _unpack(d[name], dtype) for name, dtype in _FIELDS.items()}
    valid, sentences, padding = f["valid"].astype(bool), f["sentences"].astype(np.int64), f["padding"].astype(np.int64)
    bits = np.column_stack([f["first_bits"], f["rest_bits"]]).astype(np.float64)
    bits[~valid] = np.nan
    bits[sentences < 2, 1] = np.nan
    with np.errstate(divide="ignore"):
        stop = np.where(valid, -np.log2(np.where(valid, _p_too_long(padding), 1.0)), np.nan)
    scores = DocumentScores(valid, sentences, padding, bits, stop)
    return Run.from_scores(d["strategy"], d["setting"], scores, f["passes"].astype(np.int64))


def load_exact_sweep(path: str | Path | None = None) -> Sweep:
    """The shipped sweep on the exact denoiser (data/exact_sweep.json); no AR runs (the reference
    is the AR model of helpers.quality.matched_quality.load_sweep())."""
    path = check_path(path, EXACT_SWEEP_JSON)
    if not path.is_file():
        raise ValueError(f"{path.name} not found; rebuild it with: python -m helpers.quality.exact_sweep")
    data = json.loads(path.read_text())
    if data.get("format") != 2:
        raise ValueError(f"{path.name} is in an older format; rebuild it with: python -m helpers.quality.exact_sweep")
    runs: dict[str, list[Run]] = {}
    for d in data["runs"]:
        runs.setdefault(d["strategy"], []).append(expand(d))
    return Sweep(runs, {}, data["meta"])


def exact_run(sampler: str, setting: float, chunk: int, n_docs: int = CHUNK) -> Run:
    """Chunk `chunk` of one setting on the exact denoiser (seed `chunk`, as the shipped file)."""
    from helpers.diffusion.exact_denoiser import ExactDenoiser

    return sweep_run(ExactDenoiser(), sampler, setting, chunk, n_docs, table=EXACT_SAMPLERS)


def lost_bits(n_docs: int = LOST_BITS_DOCS, rates=LOST_BITS_RATES) -> dict:
    """Random order's bits per document lost to the chain rule at each rate (tokens per pass): the
    fixed-order KL averaged over orders (helpers.quality.error_sources.order_averaged_kl), for the exact
    denoiser and the trained model, each [mean, standard error] on the same n_docs documents and
    orders."""
    from helpers.decoding.checkpoints import load_pretrained
    from helpers.diffusion.exact_denoiser import ExactDenoiser
    from helpers.quality.error_sources import order_averaged_kl

    models = {"exact": ExactDenoiser(), "trained": load_pretrained("mdlm")}
    bits = {name: {str(k): list(order_averaged_kl(m, LENGTH // k, n_docs)) for k in rates}
            for name, m in models.items()}  # fmt: skip
    return {"n_docs": n_docs, **bits}


def build_exact_sweep(chunks: int = 8, progress: bool = True) -> dict:
    """Every setting of EXACT_SAMPLERS, `chunks` chunks of CHUNK documents each: the JSON-ready
    dict load_exact_sweep reads."""
    chunks = check_int(chunks, "chunks", 1)
    grid = [(name, setting) for name, (_, settings) in EXACT_SAMPLERS.items() for setting in settings]
    start, runs = time.perf_counter(), []
    for name, setting in tqdm(grid, desc="exact sweep", unit="setting", disable=not progress):
        runs.append(_concat([exact_run(name, setting, c) for c in range(chunks)]))
    from helpers.quality.error_sources import one_pass_calibration

    bits, calibration = lost_bits(), one_pass_calibration()
    return {
        "format": 2,
        "meta": {
            **sweep_meta("python -m helpers.quality.exact_sweep", chunks, start),
            "denoiser": "helpers.diffusion.exact_denoiser.ExactDenoiser: the language's exact conditionals",
            "temperature": "1 for every setting",
            "lost_bits": bits,
            "one_pass_calibration": calibration,
        },
        "runs": [compact(r) for r in runs],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.quality.exact_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=8, help=f"chunks of {CHUNK} documents per setting")
    parser.add_argument("--out", default=str(EXACT_SWEEP_JSON), help="where to write the JSON")
    args = parser.parse_args(argv)
    Path(args.out).write_text(json.dumps(build_exact_sweep(args.chunks), separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
