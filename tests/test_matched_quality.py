import math

import numpy as np
import pytest
import torch

from helpers.matched_quality import (
    LENGTH,
    STRATEGIES,
    Run,
    crossing,
    load_sweep,
    score,
    sweep_run,
    tokens_per_pass_at,
)
from helpers.toylang import LANG


def fake_run(setting, validity, passes, n=400, seed=0):
    rng = np.random.default_rng(seed)
    valid = rng.random(n) < validity
    return Run("fake", setting, valid, np.full(n, passes), np.where(valid, 47.0, np.nan))


def test_crossing_interpolates_between_the_last_point_above_and_the_first_below():
    points = [(1.0, 1.0), (2.0, 0.98), (4.0, 0.5)]
    assert crossing(points, 0.99) == pytest.approx(1.5)  # halfway from 1.00 to 0.98
    assert crossing(points, 0.74) == pytest.approx(3.0)
    assert crossing(list(reversed(points)), 0.74) == pytest.approx(3.0)  # order does not matter
    assert crossing(points, 0.4) == math.inf  # held at every rate measured
    assert crossing([(1.0, 1.0), (2.0, 0.99), (3.0, 0.5)], 0.99) == pytest.approx(2.0)  # exactly at: still held
    assert crossing([(1.0, 0.8), (2.0, 0.5)], 0.9) is None  # never reached
    # a noisy bump after the first failure does not count: the first crossing from the slow end
    assert crossing([(1.0, 1.0), (2.0, 0.9), (3.0, 0.995)], 0.99) == pytest.approx(1.1)


def test_tokens_per_pass_at_a_target_has_a_bootstrap_error():
    runs = [fake_run(32, 1.0, 32), fake_run(16, 0.97, 16, seed=1), fake_run(8, 0.5, 8, seed=2)]
    at = tokens_per_pass_at(runs, 0.95)
    assert 2.0 < at.tokens_per_pass < 4.0 and 0 < at.se < 0.5
    assert at.best_validity == 1.0 and at.strategy == "fake"
    assert at.bracket == (2.0, 4.0)  # the crossing lies between the settings at 2 and 4 tokens per pass
    assert str(at) == f"{at.tokens_per_pass:.3f} ± {at.se:.3f}"
    never = tokens_per_pass_at([fake_run(32, 0.8, 32)], 0.99)
    assert never.tokens_per_pass is None and math.isnan(never.se) and never.best_validity < 0.99
    assert str(never).startswith("never (best") and never.bracket is None
    with pytest.raises(ValueError, match="target must be a validity"):
        tokens_per_pass_at(runs, 99)


def test_run_statistics():
    run = Run(
        "x", 8, np.array([True, True, False, True]), np.array([8, 8, 10, 6]), np.array([40.0, 42.0, np.nan, 44.0])
    )
    assert run.tokens_per_pass == LENGTH / 8 and run.validity == 0.75
    assert run.validity_se == pytest.approx(math.sqrt(0.75 * 0.25 / 4))
    gap, se = run.surprisal_gap(40.0)
    assert gap == pytest.approx(2.0) and se == pytest.approx(2 / math.sqrt(3))  # sample std 2 over 3 documents
    perfect = Run("x", 8, np.ones(50, bool), np.full(50, 8), np.full(50, 40.0))
    assert perfect.validity_se > 0  # never a zero error bar


def test_score_is_the_exact_probability():
    docs = torch.from_numpy(LANG.sample_documents(20, LENGTH + 1, seed=3))
    broken = docs[:2].clone()
    broken[:, 1:3] = LANG.stoi["the"]  # "the the ...": not a sentence
    valid, surprisal = score(torch.cat([docs, broken]))
    assert valid.tolist() == [True] * 20 + [False] * 2
    assert np.allclose(surprisal[:20], [-math.log2(LANG.document_prob(d)) for d in docs])
    assert np.isnan(surprisal[20:]).all()


def test_the_shipped_sweep_covers_every_strategy():
    sweep = load_sweep()
    assert set(sweep.runs) == set(STRATEGIES)
    for name, runs in sweep.runs.items():
        assert [r.setting for r in runs] == list(STRATEGIES[name][1])
        assert all(r.n == sweep.meta["documents_per_setting"] for r in runs)
    assert sweep.entropy_bits == pytest.approx(LANG.document_entropy_bits(LENGTH + 1))
    assert sweep.ar.tokens_per_pass == 1.0 and sweep.ar.validity > 0.97
    with pytest.raises(ValueError, match="rebuild it with"):
        load_sweep("/nonexistent.json")


def test_the_shipped_sweep_is_reproducible():
    from helpers.checkpoints import load_pretrained

    shipped = load_sweep().runs["threshold (Fast-dLLM)"][0]  # tau = 0.05: almost everything in one pass
    chunk = sweep_run(load_pretrained("mdlm"), "threshold (Fast-dLLM)", 0.05, chunk=0)
    assert chunk.valid.tolist() == shipped.valid[: chunk.n].tolist()
    assert chunk.passes.tolist() == shipped.passes[: chunk.n].tolist()
    with pytest.raises(ValueError, match="setting for 'confidence' must be one of"):
        sweep_run(None, "confidence", 7, chunk=0)
    with pytest.raises(ValueError, match="strategy must be one of"):
        sweep_run(None, "greedy", 8, chunk=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(boot=-1), "boot must be an int >= 0, got -1"),
        (dict(boot=True), "boot must be an int >= 0, got True"),
        (dict(seed=1.5), "seed must be an int >= 0, got 1.5"),
        (dict(target=float("nan")), r"target must be a validity in \(0, 1\)"),
        (dict(runs="abc"), "runs must be a list of Run"),
    ],
)
def test_tokens_per_pass_at_names_what_is_allowed(kwargs, message):
    args = dict(runs=load_sweep().runs["confidence"], target=0.99) | kwargs
    with pytest.raises(ValueError, match=message):
        tokens_per_pass_at(args.pop("runs"), args.pop("target"), **args)


def test_sweep_run_and_load_sweep_name_what_is_allowed():
    with pytest.raises(ValueError, match="strategy must be one of"):
        sweep_run(None, ["confidence"], 8, 0)
    with pytest.raises(ValueError, match="path must be None, a str or a pathlib.Path"):
        load_sweep(3)
