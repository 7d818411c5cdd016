"""The sweep behind speed at matched quality: every sampler setting, every document, scored exactly.

A diffusion sampler is only faster than AR by the passes it skips, and skipping passes costs
quality (notebook 03). Every sampler of helpers.diffusion.sampler is run on the shipped diffusion model
at temperature 1 over a grid of settings (K passes, or a confidence threshold tau), and the AR
model at several temperatures and top-p values, 1024 documents a setting. The file keeps the
documents themselves (and, per document, the passes that committed one of its tokens; for AR,
log2 Q(x)), so helpers.quality.scores can score them on every axis: validity, length, diversity.
helpers.quality.matching then reads off tokens per pass at the AR model's quality.

Generating the grid takes 30 to 50 minutes on two cores, so it is shipped:
`python -m helpers.quality.matched_quality` writes data/matched_quality.json deterministically: chunk c
of every setting is sampled with torch.Generator().manual_seed(c), the same seeds for every
setting (common random numbers: differences between settings are not drowned by sampling noise).
`sweep_run` and `ar_run` reproduce any chunk, and notebook 03 checks one against the file.

The ReMDM settings (Wang et al. 2025, arXiv:2503.00307) use the eta of the authors' scripts
(kuleshov-group/remdm: scripts/remdm-cap.sh eta=0.008, scripts/remdm-rescale.sh eta=0.015, both
for 1024 sampling steps over 1024 tokens) and a larger eta of this course's choosing for each schedule (REMDM_ETAS).
"""

from __future__ import annotations

import argparse
import base64
import bz2
import json
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from helpers.common.validation import check_int, check_path
from helpers.language.toylang import LANG
from helpers.quality.scores import DocumentScores, Quality, measure, score_documents

MATCHED_QUALITY_JSON = Path(__file__).resolve().parents[2] / "data" / "matched_quality.json"
LENGTH = 32  # positions to fill: the course canvas is <bos> + 32
CHUNK = 128  # documents per seeded chunk
BUDGETS = (8, 12, 16, 20, 24, 28, 32)  # K for the fixed-budget samplers: 4 to 1 tokens per pass
ANCESTRAL_EXTRA = (48, 64, 128)  # MDLM skips steps that change nothing: K > 32 reaches fewer tokens per pass
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.7, 0.9)  # tau for the threshold samplers
REMDM_ETAS = {  # (schedule, eta) -> where eta comes from
    ("cap", 0.008): "ReMDM's scripts/remdm-cap.sh (1024 steps over 1024 tokens)",
    ("rescale", 0.015): "ReMDM's scripts/remdm-rescale.sh (1024 steps over 1024 tokens)",
    ("cap", 0.4): "this course: about as many re-maskings per token in 32 passes as the script's in 1024 steps",
    ("rescale", 0.5): "this course: about as many re-maskings per token in 32 passes as the script's in 1024 steps",
}
STRESS_TEST = "stress test: re-mask the 25 % least sure"  # the course's own schedule, not ReMDM's
# The samplers swept (an unmasking rule with its settings), name -> keyword arguments of
# helpers.diffusion.sampler.sample and the grid it is run on. One more
# entry on BUDGETS (7 settings x 1024 documents) costs about 2 minutes of this build and 1.5 of
# helpers.quality.exact_sweep's on two cores (margin order, measured), but both files are rebuilt whole:
# `python -m helpers.quality.matched_quality` (30 to 50 minutes) and `python -m helpers.quality.exact_sweep` (about 30),
# then notebooks 03, 05 and 06 re-executed, since every table that lists the rules, and "the best of"
# them, changes.
SAMPLERS = {
    "confidence": ({}, BUDGETS),
    "random": ({"rule": "random"}, BUDGETS),
    "confidence, blocks of 8": ({"block_length": 8}, BUDGETS),
    "threshold (Fast-dLLM)": ({}, THRESHOLDS),
    "ancestral (MDLM)": ({"rule": "ancestral"}, BUDGETS + ANCESTRAL_EXTRA),
    "entropy": ({"rule": "entropy"}, BUDGETS),  # the order depends on the distribution, not on the draw
    "margin": ({"rule": "margin"}, BUDGETS),  # top-1 minus top-2 probability: also ranked before the draw
    "threshold, entropy order": ({"rule": "entropy"}, THRESHOLDS),
    **{
        f"{base} + ReMDM-{schedule} {eta}": (extra | {"remask": eta, "remask_schedule": schedule}, BUDGETS)
        for base, extra in (("MDLM", {"rule": "ancestral"}), ("confidence", {}))
        for schedule, eta in REMDM_ETAS
    },
    STRESS_TEST: ({"remask": 0.25, "remask_schedule": "lowest-confidence"}, BUDGETS),
}
AR_SETTINGS = {  # name -> the keyword of helpers.decoding.ar.generate it varies, and its values
    "AR": ("temperature", (0.5, 0.7, 0.85, 1.0)),
    "AR, top-p": ("top_p", (0.9, 0.95)),  # at temperature 1
}


@dataclass
class Run:
    """One sampler setting: its documents, and what they cost in passes."""

    sampler: str  # a key of SAMPLERS or AR_SETTINGS
    setting: float  # K passes, the threshold tau, the temperature or top-p
    docs: np.ndarray | None  # (n, 1 + LENGTH) token ids; None where only the scores are kept
    passes: np.ndarray  # (n,) int: passes that committed at least one token of this document
    log2_q: np.ndarray | None = None  # (n,) log2 Q(x) under the sampler, where computable (AR)

    @classmethod
    def from_scores(cls, sampler: str, setting: float, scores: DocumentScores, passes: np.ndarray) -> Run:
        """A run kept as its documents' scores only (helpers.quality.exact_sweep stores no documents)."""
        run = cls(sampler, setting, None, passes)
        run.__dict__["scores"] = scores  # what the cached property would have computed
        return run

    @property
    def n(self) -> int:
        return len(self.passes)

    @property
    def tokens_per_pass(self) -> float:
        """Positions filled per pass, over all documents: tokens / mean passes."""
        return LENGTH / float(np.mean(self.passes))

    @cached_property
    def scores(self) -> DocumentScores:
        return score_documents(self.docs)

    @cached_property
    def quality(self) -> Quality:
        return measure(self.scores, LENGTH + 1, self.log2_q)

    @property
    def valid(self) -> np.ndarray:
        return self.scores.valid

    @property
    def validity(self) -> float:
        return self.quality.validity[0]

    @property
    def validity_se(self) -> float:
        """Binomial standard error, at least that of one success or failure in n (never 0)."""
        return self.quality.validity[1]

    def subset(self, rows: np.ndarray) -> Run:
        """The same setting with only the documents `rows` (e.g. a bootstrap resample)."""
        if self.docs is None:
            s = self.scores
            picked = DocumentScores(s.valid[rows], s.sentences[rows], s.padding[rows], s.sentence_bits[rows],
                                    s.stop_bits[rows])  # fmt: skip
            return Run.from_scores(self.sampler, self.setting, picked, self.passes[rows])
        log2_q = None if self.log2_q is None else self.log2_q[rows]
        return Run(self.sampler, self.setting, self.docs[rows], self.passes[rows], log2_q)


@dataclass
class Sweep:
    """Every setting of every diffusion sampler, and the AR model's settings (one token per pass)."""

    runs: dict[str, list[Run]]  # diffusion sampler -> runs ordered by setting
    ar_runs: dict[str, list[Run]]  # "AR" (by temperature), "AR, top-p"
    meta: dict = field(default_factory=dict)  # command, versions, seeds, build time

    @property
    def ar(self) -> Run:
        """The AR model at temperature 1: the quality every diffusion setting is matched against."""
        return next(r for r in self.ar_runs["AR"] if r.setting == 1.0)


# ----------------------------------------------------------------------------- sampling


def _check_setting(table: dict, sampler, setting, chunk, n_docs):
    """(the table's entry for `sampler`, chunk, n_docs), each checked."""
    if not isinstance(table, dict):
        raise ValueError(f"table must be a dict like SAMPLERS, got {type(table).__name__}")
    if not isinstance(sampler, str) or sampler not in table:
        raise ValueError(f"sampler must be one of {list(table)}, got {sampler!r}")
    entry = table[sampler]
    if setting not in entry[1]:
        raise ValueError(f"setting for {sampler!r} must be one of {entry[1]}, got {setting!r}")
    return entry, check_int(chunk, "chunk", 0), check_int(n_docs, "n_docs", 1)


def sweep_run(dllm, sampler: str, setting: float, chunk: int, n_docs: int = CHUNK, table=SAMPLERS) -> Run:
    """Chunk `chunk` of one diffusion setting of `table`: n_docs documents sampled with seed
    `chunk`. dllm: the shipped model, or helpers.diffusion.exact_denoiser.ExactDenoiser()."""
    from helpers.diffusion.sampler import sample

    (kwargs, _), chunk, n_docs = _check_setting(table, sampler, setting, chunk, n_docs)
    if sampler.startswith("threshold"):
        steps, kwargs = LENGTH, {**kwargs, "threshold": setting}
    else:
        steps = int(setting)
    generator = torch.Generator().manual_seed(chunk)
    docs, trace = sample(
        dllm, LENGTH, steps, batch_size=n_docs, temperature=1.0, generator=generator, return_trace=True, **kwargs
    )
    passes = torch.stack([step["committed"].any(dim=1) for step in trace]).sum(dim=0)  # (n,)
    return Run(sampler, setting, docs.numpy(), passes.numpy())


def ar_run(ar_model, sampler: str, setting: float, chunk: int, n_docs: int = CHUNK) -> Run:
    """Chunk `chunk` of one AR setting (seed `chunk`): one token per pass, with log2 Q(x)."""
    from helpers.decoding.ar import generate, sampled_log2prob

    (keyword, _), chunk, n_docs = _check_setting(AR_SETTINGS, sampler, setting, chunk, n_docs)
    kwargs = {keyword: setting}
    prompt = torch.full((n_docs, 1), LANG.bos_id)
    docs = generate(ar_model, prompt, LENGTH, generator=torch.Generator().manual_seed(chunk), **kwargs)
    log2_q = sampled_log2prob(ar_model, docs, 1, **kwargs).numpy()
    return Run(sampler, setting, docs.numpy(), np.full(n_docs, LENGTH), log2_q)


def _concat(runs: list[Run]) -> Run:
    first, q = runs[0], [r.log2_q for r in runs]
    log2_q = None if q[0] is None else np.concatenate(q)
    docs = np.concatenate([r.docs for r in runs])
    return Run(first.sampler, first.setting, docs, np.concatenate([r.passes for r in runs]), log2_q)


# ----------------------------------------------------------------------------- the shipped file


def _pack(array: np.ndarray) -> str:
    return base64.b64encode(bz2.compress(np.ascontiguousarray(array, dtype=np.uint8).tobytes(), 9)).decode()


def _unpack(text: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(bz2.decompress(base64.b64decode(text)), dtype=np.uint8).reshape(shape).astype(np.int64)


def _run_to_json(run: Run) -> dict:
    # the shipped files' key for the sampler's name is "strategy", the name it had when they were built
    out = {"strategy": run.sampler, "setting": run.setting, "n": run.n}
    out |= {"docs": _pack(run.docs), "passes": _pack(run.passes)}
    if run.log2_q is not None:
        out["log2_q"] = [round(float(x), 4) for x in run.log2_q]
    return out


def _run_from_json(d: dict) -> Run:
    n = d["n"]
    log2_q = np.array(d["log2_q"]) if "log2_q" in d else None
    return Run(d["strategy"], d["setting"], _unpack(d["docs"], (n, LENGTH + 1)), _unpack(d["passes"], (n,)), log2_q)


def load_sweep(path: str | Path | None = None) -> Sweep:
    """The shipped sweep (data/matched_quality.json)."""
    path = check_path(path, MATCHED_QUALITY_JSON)
    if not path.is_file():
        raise ValueError(f"{path.name} not found; rebuild it with: python -m helpers.quality.matched_quality")
    data = json.loads(path.read_text())
    if data.get("format") != 2:
        raise ValueError(
            f"{path.name} is in an older format; rebuild it with: python -m helpers.quality.matched_quality"
        )
    runs: dict[str, list[Run]] = {}
    ar_runs: dict[str, list[Run]] = {}
    for d in data["runs"]:
        (ar_runs if d["strategy"] in AR_SETTINGS else runs).setdefault(d["strategy"], []).append(_run_from_json(d))
    return Sweep(runs, ar_runs, data["meta"])


def sweep_meta(command: str, chunks: int, start: float) -> dict:
    """What every shipped sweep records of how it was built (start: time.perf_counter() at the start)."""
    return {
        "command": command + (f" --chunks {chunks}" if chunks != 8 else ""),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "build_seconds": round(time.perf_counter() - start),
        "documents_per_setting": chunks * CHUNK,
        "seeds": f"chunk c of every setting: torch.Generator().manual_seed(c), c = 0 .. {chunks - 1}",
    }


def build_sweep(chunks: int = 8, progress=None) -> dict:
    """Run every setting of SAMPLERS and AR_SETTINGS for `chunks` chunks of CHUNK documents:
    the JSON-ready dict that load_sweep reads."""
    from helpers.decoding.checkpoints import load_pretrained

    dllm, ar_model = load_pretrained("mdlm"), load_pretrained("ar")
    start, runs = time.perf_counter(), []
    for table, run_chunk, model in ((AR_SETTINGS, ar_run, ar_model), (SAMPLERS, sweep_run, dllm)):
        for sampler, (_, grid) in table.items():
            for setting in grid:
                if progress:
                    progress(f"{sampler}, setting {setting} ({time.perf_counter() - start:.0f} s)")
                runs.append(_concat([run_chunk(model, sampler, setting, c) for c in range(chunks)]))
    return {
        "format": 2,
        "meta": {
            **sweep_meta("python -m helpers.quality.matched_quality", chunks, start),
            "temperature": "1 for every diffusion setting; AR as its setting says",
            "remdm_eta_sources": {f"{s} {eta}": why for (s, eta), why in REMDM_ETAS.items()},
        },
        "runs": [_run_to_json(r) for r in runs],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.quality.matched_quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--chunks", type=int, default=8, help=f"chunks of {CHUNK} documents per setting")
    parser.add_argument("--out", default=str(MATCHED_QUALITY_JSON), help="where to write the JSON")
    args = parser.parse_args(argv)
    result = build_sweep(args.chunks, progress=lambda s: print(s, file=sys.stderr, flush=True))
    Path(args.out).write_text(json.dumps(result, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
