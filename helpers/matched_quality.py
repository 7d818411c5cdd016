"""Speed at matched quality: how many tokens per pass a sampler may commit before quality drops.

A diffusion sampler is only faster than AR by the passes it skips, and skipping passes costs
quality (notebook 03). So the number that joins quality to latency is **tokens per pass at a
fixed quality**: the exact, toy-language version of the dLLM leaderboard's "accuracy under
parallelism". Every sampler of helpers.diffusion is run on the shipped diffusion model at
temperature 1 over a grid of settings (K passes, or a confidence threshold tau), and each
document is scored exactly:

- valid: the grammar accepts it (helpers.toylang);
- passes: forward passes that committed at least one of its tokens (threshold decoding adapts);
- surprisal: -log2 P(document) under the exact language, for valid documents. A sampler that
  draws from P has mean surprisal equal to the exact entropy, 47.79 bits per 33-position
  document; a sampler that prefers likely documents (mode-seeking: less diverse) has a lower
  one. KL(Q || P) itself is out of reach: Q(x) of a diffusion sampler is a sum over every
  order in which the positions could have been filled.

Generating the grid takes minutes, so it is shipped: `python -m helpers.matched_quality --out
data/matched_quality.json` writes it (every document, scored), deterministically: chunk c of
every setting is sampled with torch.Generator().manual_seed(c), the same seeds for every setting
(common random numbers: differences between settings are not drowned by sampling noise).
`sweep_run` reproduces any chunk, and notebook 03 checks one against the file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from helpers.toylang import LANG
from helpers.validation import check_int, check_path

MATCHED_QUALITY_JSON = Path(__file__).resolve().parent.parent / "data" / "matched_quality.json"
LENGTH = 32  # positions to fill: the course canvas is <bos> + 32
CHUNK = 128  # documents per seeded chunk
BUDGETS = (8, 12, 16, 20, 24, 28, 32)  # K for the fixed-budget strategies: 4 to 1 tokens per pass
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)  # tau for the threshold strategy
STRATEGIES = {  # name -> keyword arguments of helpers.diffusion.sample, and the grid it is run on
    "confidence": ({}, BUDGETS),
    "random": ({"strategy": "random"}, BUDGETS),
    "confidence, blocks of 8": ({"block_length": 8}, BUDGETS),
    "confidence + remasking 0.25": ({"remask": 0.25}, BUDGETS),
    "threshold (Fast-dLLM)": ({}, THRESHOLDS),
}


@dataclass
class Run:
    """One sampler setting, every document scored."""

    strategy: str  # a key of STRATEGIES, or "AR"
    setting: float  # K passes, or the threshold tau
    valid: np.ndarray  # (n,) bool
    passes: np.ndarray  # (n,) int: passes that committed a token of this document
    surprisal: np.ndarray  # (n,) float: -log2 P(document), NaN where invalid
    tokens: int = LENGTH  # positions each document fills

    @property
    def n(self) -> int:
        return len(self.valid)

    @property
    def tokens_per_pass(self) -> float:
        """Positions filled per pass, over all documents: tokens / mean passes."""
        return self.tokens / float(np.mean(self.passes))

    @property
    def validity(self) -> float:
        return float(np.mean(self.valid))

    @property
    def validity_se(self) -> float:
        """Binomial standard error, at least that of one success or failure in n (never 0)."""
        p = min(max(self.validity, 1 / self.n), 1 - 1 / self.n)
        return math.sqrt(p * (1 - p) / self.n)

    def surprisal_gap(self, entropy_bits: float) -> tuple[float, float]:
        """(mean surprisal of valid documents - exact entropy, its standard error), bits per document."""
        s = self.surprisal[~np.isnan(self.surprisal)]
        if len(s) < 2:
            return float("nan"), float("nan")
        return float(s.mean() - entropy_bits), float(s.std(ddof=1) / math.sqrt(len(s)))


@dataclass
class Sweep:
    """Every setting of every strategy, plus the AR model's point (one token per pass)."""

    runs: dict[str, list[Run]]  # strategy -> runs ordered by setting
    ar: Run
    entropy_bits: float  # exact entropy of a document, bits
    meta: dict = field(default_factory=dict)  # command, versions, seeds


# ----------------------------------------------------------------------------- sampling and scoring


def score(docs: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(valid, surprisal in bits) of each row of docs (B, 1 + LENGTH); surprisal NaN where invalid."""
    probs = np.array([LANG.document_prob(d) for d in docs])
    surprisal = np.full(len(probs), np.nan)
    surprisal[probs > 0] = -np.log2(probs[probs > 0])
    return probs > 0, surprisal


def sweep_run(dllm, strategy: str, setting: float, chunk: int, n_docs: int = CHUNK) -> Run:
    """Chunk `chunk` of one setting: n_docs documents sampled with seed `chunk`, scored."""
    from helpers.diffusion import sample

    if not isinstance(strategy, str) or strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}")
    kwargs, grid = STRATEGIES[strategy]
    if setting not in grid:
        raise ValueError(f"setting for {strategy!r} must be one of {grid}, got {setting!r}")
    if strategy.startswith("threshold"):
        steps, kwargs = LENGTH, {**kwargs, "threshold": setting}
    else:
        steps = int(setting)
    chunk, n_docs = check_int(chunk, "chunk", 0), check_int(n_docs, "n_docs", 1)
    generator = torch.Generator().manual_seed(chunk)
    docs, trace = sample(
        dllm, LENGTH, steps, batch_size=n_docs, temperature=1.0, generator=generator, return_trace=True, **kwargs
    )
    passes = torch.stack([step["committed"].any(dim=1) for step in trace]).sum(dim=0)  # (n,)
    valid, surprisal = score(docs)
    return Run(strategy, setting, valid, passes.numpy(), surprisal)


def ar_run(ar_model, chunk: int, n_docs: int = CHUNK) -> Run:
    """n_docs documents from the AR model at temperature 1 (seed `chunk`): one token per pass."""
    from helpers.ar import generate

    generator = torch.Generator().manual_seed(chunk)
    docs = generate(ar_model, torch.full((n_docs, 1), LANG.bos_id), LENGTH, generator=generator)
    valid, surprisal = score(docs)
    return Run("AR", 1, valid, np.full(n_docs, LENGTH), surprisal)


def _concat(runs: list[Run]) -> Run:
    first = runs[0]
    return Run(
        first.strategy,
        first.setting,
        np.concatenate([r.valid for r in runs]),
        np.concatenate([r.passes for r in runs]),
        np.concatenate([r.surprisal for r in runs]),
    )


# ----------------------------------------------------------------------------- tokens per pass at a fixed validity


def crossing(points: list[tuple[float, float]], target: float) -> float | None:
    """The tokens per pass at which validity falls below `target`, reading the points (tokens per
    pass, validity) from the slowest setting up: linear interpolation between the last point at
    or above the target and the first below it. None if even the slowest point is below it;
    +inf if no point falls below (the target holds at every rate measured)."""
    points = sorted(points)
    if not points or points[0][1] < target:
        return None
    for (x0, v0), (x1, v1) in zip(points, points[1:], strict=False):
        if v1 < target:
            return x0 + (v0 - target) * (x1 - x0) / (v0 - v1)
    return math.inf


@dataclass
class AtQuality:
    """Tokens per pass a strategy allows at a validity target, with a bootstrap standard error."""

    strategy: str
    target: float
    tokens_per_pass: float | None  # None: not reached at any setting; inf: held at every setting
    se: float  # bootstrap standard error (documents resampled within each setting); NaN if undefined
    best_validity: float  # the highest validity of any setting (to say how far it is when not reached)
    bracket: tuple[float, float] | None = None  # the two measured rates the crossing lies between

    def __str__(self) -> str:
        if self.tokens_per_pass is None:
            return f"never (best {100 * self.best_validity:.1f} %)"
        if math.isinf(self.tokens_per_pass):
            return "held at every rate measured"
        return f"{self.tokens_per_pass:.3f} ± {self.se:.3f}"


def tokens_per_pass_at(runs: list[Run], target: float, *, boot: int = 200, seed: int = 0) -> AtQuality:
    """Where validity crosses `target` (e.g. 0.99) as tokens per pass grow, and its standard error
    from `boot` bootstrap resamples of the documents of every setting. The error covers sampling
    noise only, not the straight line drawn between the two measured rates around the crossing
    (`bracket`): where those are far apart, the bracket is the honest resolution."""
    runs = list(runs) if hasattr(runs, "__iter__") and not isinstance(runs, str) else [runs]
    if not all(isinstance(r, Run) for r in runs):
        raise ValueError(f"runs must be a list of Run (e.g. load_sweep().runs[strategy]), got {runs!r:.80}")
    if not runs:
        raise ValueError("runs must hold at least one Run")
    if not (isinstance(target, float) and 0 < target < 1):
        raise ValueError(f"target must be a validity in (0, 1), e.g. 0.99, got {target!r}")
    boot, seed = check_int(boot, "boot", 0), check_int(seed, "seed", 0)
    value = crossing([(r.tokens_per_pass, r.validity) for r in runs], target)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(boot):
        points = []
        for r in runs:
            pick = rng.integers(0, r.n, r.n)
            points.append((r.tokens / r.passes[pick].mean(), r.valid[pick].mean()))
        draws.append(crossing(points, target))
    finite = [d for d in draws if d is not None and math.isfinite(d)]
    se = float(np.std(finite, ddof=1)) if value is not None and math.isfinite(value) and len(finite) > 1 else math.nan
    bracket = None
    if value is not None and math.isfinite(value):
        rates = sorted(r.tokens_per_pass for r in runs)
        bracket = (max(x for x in rates if x <= value), min(x for x in rates if x >= value))
    return AtQuality(runs[0].strategy, target, value, se, max(r.validity for r in runs), bracket)


# ----------------------------------------------------------------------------- the shipped sweep


def _run_to_json(run: Run) -> dict:
    return {
        "strategy": run.strategy,
        "setting": run.setting,
        "valid": "".join("1" if v else "0" for v in run.valid),
        "passes": run.passes.astype(int).tolist(),
        "surprisal": [None if np.isnan(s) else round(float(s), 3) for s in run.surprisal],
    }


def _run_from_json(d: dict) -> Run:
    return Run(
        d["strategy"],
        d["setting"],
        np.array([c == "1" for c in d["valid"]]),
        np.array(d["passes"]),
        np.array([np.nan if s is None else s for s in d["surprisal"]], dtype=float),
    )


def load_sweep(path: str | Path | None = None) -> Sweep:
    """The shipped sweep (data/matched_quality.json)."""
    path = check_path(path, MATCHED_QUALITY_JSON)
    if not path.is_file():
        raise ValueError(f"{path.name} not found; rebuild it with: python -m helpers.matched_quality")
    data = json.loads(path.read_text())
    runs: dict[str, list[Run]] = {}
    for d in data["runs"]:
        runs.setdefault(d["strategy"], []).append(_run_from_json(d))
    return Sweep(runs, _run_from_json(data["ar"]), data["entropy_bits"], data["meta"])


def build_sweep(chunks: int = 8, progress=None) -> dict:
    """Run every setting of STRATEGIES for `chunks` chunks of CHUNK documents, and the AR model:
    the JSON-ready dict that load_sweep reads."""
    from helpers.checkpoints import load_pretrained

    dllm, ar_model = load_pretrained("mdlm"), load_pretrained("ar")
    runs = []
    for strategy, (_, grid) in STRATEGIES.items():
        for setting in grid:
            if progress:
                progress(f"{strategy}, setting {setting}")
            runs.append(_concat([sweep_run(dllm, strategy, setting, c) for c in range(chunks)]))
    ar = _concat([ar_run(ar_model, c) for c in range(chunks)])
    return {
        "meta": {
            "command": f"python -m helpers.matched_quality --chunks {chunks} --out data/matched_quality.json",
            "torch": torch.__version__,
            "documents_per_setting": chunks * CHUNK,
            "seeds": f"chunk c of every setting: torch.Generator().manual_seed(c), c = 0 .. {chunks - 1}",
            "temperature": 1.0,
        },
        "entropy_bits": LANG.document_entropy_bits(LENGTH + 1),
        "runs": [_run_to_json(r) for r in runs],
        "ar": _run_to_json(ar),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.matched_quality", description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=8, help=f"chunks of {CHUNK} documents per setting")
    parser.add_argument("--out", default=str(MATCHED_QUALITY_JSON), help="where to write the JSON")
    args = parser.parse_args(argv)
    result = build_sweep(args.chunks, progress=lambda s: print(s, file=sys.stderr))
    Path(args.out).write_text(json.dumps(result, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
