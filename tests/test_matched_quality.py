import math

import numpy as np
import pytest
import torch

from helpers.language.toylang import LANG
from helpers.quality.matched_quality import (
    AR_SETTINGS,
    LENGTH,
    REMDM_ETAS,
    SAMPLERS,
    Run,
    _pack,
    _run_from_json,
    _run_to_json,
    _unpack,
    ar_run,
    load_sweep,
    sweep_run,
)


@pytest.fixture(scope="module")
def sweep():
    return load_sweep()


def test_the_shipped_sweep_covers_every_sampler_and_ar_setting(sweep):
    assert set(sweep.runs) == set(SAMPLERS) and set(sweep.ar_runs) == set(AR_SETTINGS)
    for table, runs in ((SAMPLERS, sweep.runs), (AR_SETTINGS, sweep.ar_runs)):
        for name, settings in runs.items():
            assert [r.setting for r in settings] == list(table[name][1])
            assert all(r.n == sweep.meta["documents_per_setting"] == 1024 for r in settings)
    assert all(r.log2_q is not None for runs in sweep.ar_runs.values() for r in runs)
    assert all(r.log2_q is None for runs in sweep.runs.values() for r in runs)
    assert sweep.ar.tokens_per_pass == 1.0 and sweep.ar.validity > 0.97 and sweep.ar.setting == 1.0
    assert sweep.meta["remdm_eta_sources"]["cap 0.008"].startswith("ReMDM's scripts/remdm-cap.sh")
    assert len(REMDM_ETAS) == 4 and sum(name.count("ReMDM") for name in SAMPLERS) == 8
    with pytest.raises(ValueError, match="rebuild it with"):
        load_sweep("/nonexistent.json")


def test_the_shipped_sweep_is_reproducible(sweep):
    from helpers.decoding.checkpoints import load_pretrained

    shipped = sweep.runs["threshold (Fast-dLLM)"][0]  # tau = 0.05: almost everything in one pass
    chunk = sweep_run(load_pretrained("mdlm"), "threshold (Fast-dLLM)", 0.05, chunk=0)
    assert np.array_equal(chunk.docs, shipped.docs[: chunk.n]) and np.array_equal(
        chunk.passes, shipped.passes[: chunk.n]
    )
    shipped = next(r for r in sweep.ar_runs["AR, top-p"] if r.setting == 0.9)
    chunk = ar_run(load_pretrained("ar"), "AR, top-p", 0.9, chunk=1)
    assert np.array_equal(chunk.docs, shipped.docs[128:256])
    assert np.allclose(chunk.log2_q, shipped.log2_q[128:256], atol=1e-4)  # stored to 4 decimals


def test_ar_log2_q_is_the_model_s_probability_of_each_document(sweep):
    """At temperature 1, log2 Q(x) is minus the model's cross-entropy on the document, and over the
    valid documents KL(Q | valid || P) is positive and small (the AR model is close to the truth)."""
    run = sweep.ar
    kl, se = run.quality.kl
    assert 0 < kl < 1.0 and se < 0.2
    assert np.all(run.log2_q < 0)
    cold = next(r for r in sweep.ar_runs["AR"] if r.setting == 0.5)
    assert cold.quality.kl[0] > kl + 3 * math.hypot(se, cold.quality.kl[1])  # cooling moves Q away from P


def test_packing_round_trips():
    docs = torch.from_numpy(LANG.sample_documents(50, LENGTH + 1, seed=3)).numpy()
    assert np.array_equal(_unpack(_pack(docs), docs.shape), docs)
    run = Run("confidence", 8, docs, np.arange(50) % 9)
    back = _run_from_json(_run_to_json(run))
    assert np.array_equal(back.docs, run.docs) and np.array_equal(back.passes, run.passes) and back.log2_q is None
    run.log2_q = -np.linspace(40, 50, 50)
    assert np.allclose(_run_from_json(_run_to_json(run)).log2_q, run.log2_q, atol=5e-5)
    assert run.subset(np.array([3, 4])).n == 2 and run.subset(np.array([3])).log2_q[0] == run.log2_q[3]


def test_sweep_run_ar_run_and_load_sweep_name_what_is_allowed():
    with pytest.raises(ValueError, match="setting for 'confidence' must be one of"):
        sweep_run(None, "confidence", 7, chunk=0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        sweep_run(None, "greedy", 8, chunk=0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        sweep_run(None, ["confidence"], 8, 0)
    with pytest.raises(ValueError, match="sampler must be one of"):
        ar_run(None, "confidence", 8, 0)
    with pytest.raises(ValueError, match=r"setting for 'AR' must be one of \(0.5, 0.7, 0.85, 1.0\)"):
        ar_run(None, "AR", 0.3, 0)
    with pytest.raises(ValueError, match="path must be None, a str or a pathlib.Path"):
        load_sweep(3)
