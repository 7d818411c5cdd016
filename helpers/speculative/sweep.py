"""The sweep behind notebook 06: speculative decoding with every drafter, gamma = 1 .. 8.

For each drafter and gamma, SWEEP_DOCS documents are written by helpers.speculative.rule with the
shipped AR model as the target (temperature 1, the whole canvas of 32 positions, as the sweep of
helpers.quality.matched_quality writes them), and the counts are kept beside what helpers.speculative.acceptance
predicts. At QUALITY_GAMMA every drafter also writes QUALITY_DOCS documents, kept whole, so that
helpers.quality.scores can score them on every axis against the AR model's own documents; so does the
broken rule of transformers#32867 (a greedy draft scored with its softmax).

`python -m helpers.speculative.sweep` writes data/speculative.json deterministically (one thread,
document d of a setting sampled with torch.Generator().manual_seed(d)); `run_documents`
reproduces any part of it, and a test checks one against the file.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from helpers.common.validation import check_int, check_path
from helpers.decoding.checkpoints import DATA_DIR, load_checkpoint, load_pretrained
from helpers.decoding.model import Transformer
from helpers.language.toylang import LANG
from helpers.quality.matched_quality import LENGTH, Run, _pack, _unpack
from helpers.speculative.acceptance import (
    acceptance_table,
    chain_prediction,
    expected_tokens,
    mean_alpha,
    target_table,
    visited_documents,
)
from helpers.speculative.drafters import CausalDrafter, Drafter, LanguageDrafter, MaskedDiffusionDrafter
from helpers.speculative.rule import speculative_generate

SPECULATIVE_JSON = DATA_DIR / "speculative.json"
DRAFT_CHECKPOINT = DATA_DIR / "draft.pt"
DRAFTERS = ("small AR model", "the language (not a model)", "diffusion, one pass", "diffusion, left to right")
BROKEN = "small AR model, greedy, scored with its softmax (the bug)"
GAMMAS = tuple(range(1, 9))
SWEEP_DOCS = 256  # documents per (drafter, gamma)
QUALITY_GAMMA = 4
QUALITY_DOCS = 1024  # documents per drafter at QUALITY_GAMMA, as many as the AR model's own sample
PREDICTION_DOCS = 256  # documents of the language whose prefixes the predictions average over
PREDICTION_SEED = 20_000  # a seed nothing else uses


def load_small_drafter() -> Transformer:
    """The shipped small AR model (d_model 32, 1 layer), checked against data/manifest.json."""
    return load_checkpoint(DRAFT_CHECKPOINT)


def make_drafter(name: str, target=None) -> Drafter:
    """One of DRAFTERS or BROKEN, built from the shipped checkpoints."""
    if name == DRAFTERS[0]:
        return CausalDrafter(load_small_drafter())
    if name == BROKEN:
        return CausalDrafter(load_small_drafter(), greedy=True, softmax_as_q=True)
    if name == DRAFTERS[1]:
        return LanguageDrafter(LENGTH + 1)
    if name in DRAFTERS[2:]:
        return MaskedDiffusionDrafter(load_pretrained("mdlm"), parallel=name == DRAFTERS[2])
    if name == "a copy of the target":
        return CausalDrafter(copy.deepcopy(target if target is not None else load_pretrained("ar")))
    raise ValueError(f"drafter must be one of {(*DRAFTERS, BROKEN, 'a copy of the target')}, got {name!r}")


def run_documents(target, drafter: Drafter, gamma: int, n: int, first: int = 0) -> tuple[Run, dict]:
    """Documents first .. first + n - 1 of one setting (document d seeded with d): a Run (docs,
    target passes per document) and the summed counts."""
    gamma, n = check_int(gamma, "gamma", 1), check_int(n, "n", 1)
    prompt = torch.tensor([[LANG.bos_id]])
    docs, passes, totals = [], [], {}
    for d in range(first, first + n):
        out, counts = speculative_generate(
            target, drafter, prompt, LENGTH, gamma, generator=torch.Generator().manual_seed(d)
        )
        docs.append(out[0].numpy())
        passes.append(counts.target_passes)
        for key, value in vars(counts).items():
            totals[key] = totals.get(key, 0) + value
    return Run(f"speculative, {drafter.name}", gamma, np.stack(docs), np.array(passes)), totals


def predictions(target, drafter: Drafter) -> dict:
    """alpha and the predicted tokens per target pass for every gamma (helpers.speculative.acceptance)."""
    docs, _ = visited_documents(PREDICTION_DOCS, LENGTH + 1, seed=PREDICTION_SEED)
    ends = np.full(len(docs), LENGTH)  # the whole canvas is written: the last round writes position 32
    table = acceptance_table(drafter, target_table(target, docs), docs, max(GAMMAS))  # (n, 32, gamma)
    alpha = mean_alpha(table, ends)
    flat = np.full_like(table, alpha)
    return {
        "alpha": alpha,
        "alpha_by_index": [float(a) for a in table.mean(axis=(0, 1))],
        "formula": [expected_tokens(alpha, g) for g in GAMMAS],
        "chain, one alpha": [chain_prediction(flat[..., :g], ends, g) for g in GAMMAS],
        "chain": [chain_prediction(table[..., :g], ends, g) for g in GAMMAS],
    }


def build(progress=None) -> dict:
    """Every setting: the JSON-ready dict that load reads."""
    target, start = load_pretrained("ar"), time.perf_counter()
    sweep, quality, predicted = [], {}, {}
    for name in (*DRAFTERS, BROKEN):
        drafter = make_drafter(name)
        if name != BROKEN:
            predicted[name] = predictions(target, drafter)
        for gamma in GAMMAS if name != BROKEN else (QUALITY_GAMMA,):
            if progress:
                progress(f"{name}, gamma {gamma} ({time.perf_counter() - start:.0f} s)")
            n = QUALITY_DOCS if gamma == QUALITY_GAMMA else SWEEP_DOCS
            run, totals = run_documents(target, drafter, gamma, n)
            sweep.append({"drafter": name, "gamma": gamma, "n": n, **totals})
            if gamma == QUALITY_GAMMA:
                quality[name] = {"docs": _pack(run.docs), "passes": _pack(run.passes), "n": n}
    return {
        "format": 1,
        "meta": {
            "command": "python -m helpers.speculative.sweep",
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "build_seconds": round(time.perf_counter() - start),
            "target": "data/ar.pt at temperature 1, 32 positions after <bos>, no early stop",
            "seeds": "document d of every setting: torch.Generator().manual_seed(d)",
            "predictions": f"{PREDICTION_DOCS} documents of the language, seed {PREDICTION_SEED}",
        },
        "sweep": sweep,
        "predicted": predicted,
        "quality": quality,
    }


def load(path=None) -> dict:
    """data/speculative.json with its quality documents unpacked into Runs."""
    path = check_path(path, SPECULATIVE_JSON)
    if not path.is_file():
        raise ValueError(f"{path.name} not found; rebuild it with: python -m helpers.speculative.sweep")
    data = json.loads(path.read_text())
    data["quality"] = {
        name: Run(f"speculative, {name}", QUALITY_GAMMA, _unpack(d["docs"], (d["n"], LENGTH + 1)),
                  _unpack(d["passes"], (d["n"],)))
        for name, d in data["quality"].items()
    }  # fmt: skip
    return data


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.speculative.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(SPECULATIVE_JSON), help="where to write the JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = build(progress=lambda s: print(s, file=sys.stderr, flush=True))
    Path(args.out).write_text(json.dumps(result, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
