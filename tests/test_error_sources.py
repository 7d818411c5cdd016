"""The three sources of error and the shipped sweep on the exact denoiser."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib import pyplot as plt

from helpers.error_sources import (
    MEASURE_LABELS,
    curve,
    one_pass_bits,
    parallel_commit_bits,
    three_way_split,
    truth,
    value,
    value_at,
)
from helpers.exact_denoiser import ExactDenoiser
from helpers.exact_sweep import EXACT_STRATEGIES, compact, exact_run, expand, load_exact_sweep
from helpers.matched_quality import load_sweep
from helpers.matching import MEASURES, target_from, tokens_per_pass_at
from helpers.quality import exact_documents
from helpers.views import sources


@pytest.fixture(scope="module")
def sweeps():
    return load_exact_sweep(), load_sweep()


def test_the_shipped_exact_sweep_covers_every_setting(sweeps):
    exact, _ = sweeps
    assert set(exact.runs) == set(EXACT_STRATEGIES)
    for name, runs in exact.runs.items():
        assert [r.setting for r in runs] == list(EXACT_STRATEGIES[name][1])
        assert all(r.n == 1024 and r.docs is None for r in runs)
    assert exact.meta["documents_per_setting"] == 1024 and exact.meta["command"] == "python -m helpers.exact_sweep"
    assert set(exact.meta["commit_bits"]) == {"exact", "trained"}
    with pytest.raises(ValueError, match="rebuild it with: python -m helpers.exact_sweep"):
        load_exact_sweep("/nonexistent.json")


def test_a_chunk_of_the_exact_sweep_is_sampled_again_the_same(sweeps):
    shipped = next(r for r in sweeps[0].runs["confidence"] if r.setting == 8)
    live = exact_run("confidence", 8, chunk=1)
    rows = slice(128, 256)
    assert np.array_equal(live.valid, shipped.valid[rows]) and np.array_equal(live.passes, shipped.passes[rows])
    assert np.array_equal(live.scores.sentences, shipped.scores.sentences[rows])
    bits = np.nansum(live.scores.sentence_bits, axis=1)
    same = np.isclose(bits, np.nansum(shipped.scores.sentence_bits[rows], axis=1), atol=1e-4)  # float32
    # A CPU with other vector kernels (AVX-512 against AVX2) rounds the exact conditionals' float32
    # sums differently, and a draw that falls within that rounding of a boundary picks the next
    # token: seen once in these 128 documents on an AMD EPYC, a sentence of equal count. More
    # than one such document is a change in the sampler, not in the rounding.
    assert (~same).sum() <= 1, np.flatnonzero(~same)


def test_compact_scores_measure_what_the_documents_measure():
    run = exact_run("random", 16, chunk=2, n_docs=64)
    back = expand(compact(run))
    a, b = run.quality, back.quality
    for field in ("validity", "sentences", "sentence_gap", "first_sentence_gap", "document_gap"):
        assert np.allclose(getattr(a, field), getattr(b, field), atol=1e-5), field
    assert back.subset(np.arange(10)).n == 10 and back.subset(np.arange(10)).docs is None
    one = back.scores.sentences < 2
    assert np.isnan(back.scores.sentence_bits[one, 1]).all()  # no second column where there is one sentence


def test_random_order_at_one_token_per_pass_is_exact_in_the_shipped_sweep(sweeps):
    q, exact = next(r for r in sweeps[0].runs["random"] if r.setting == 32).quality, exact_documents(33)
    assert q.validity[0] == 1.0
    assert abs(q.sentences[0] - exact.mean_sentences) < 3 * q.sentences[1]
    assert abs(q.sentence_gap[0] - truth("diversity")) < 3 * q.sentence_gap[1]


def test_the_three_sources_add_up_to_the_trained_model_s_shortfall(sweeps):
    exact, trained = sweeps
    for sampler in ("random", "confidence", "threshold (Fast-dLLM)"):
        for rate in (1.0, 2.0):
            for m in MEASURES:
                s = three_way_split(exact, trained, sampler, rate, m)
                mine = value_at(curve(trained, sampler), rate, m)[0]
                assert s.total == pytest.approx(mine - truth(m), abs=1e-12)
                assert all(part[1] > 0 for part in (s.model, s.factorization, s.selection))
    assert three_way_split(exact, trained, "random", 1.0, "validity").factorization[0] == 0.0  # 100 % valid
    assert three_way_split(exact, trained, "random", 2.0, "validity").selection[0] == 0.0  # random against itself


def test_the_length_bias_survives_the_exact_denoiser(sweeps):
    """Confidence order writes about a sentence fewer with a perfect model; entropy order, which
    chooses its positions before drawing, writes the language's length."""
    exact, trained = sweeps
    split = three_way_split(exact, trained, "confidence", 1.0, "length")
    assert split.selection[0] < -0.8 and abs(split.selection[0]) > 10 * split.selection[1]
    assert abs(split.model[0]) < 0.1
    entropy = value_at(curve(exact, "entropy"), 1.0, "length")
    assert abs(entropy[0] - truth("length")) < 3 * entropy[1]


def test_value_at_interpolates_between_settings(sweeps):
    runs = curve(sweeps[0], "random")
    at_two = next(r for r in runs if r.setting == 16)
    assert value_at(runs, 2.0, "validity") == value(at_two, "validity")
    low, high = (value(next(r for r in runs if r.setting == k), "validity")[0] for k in (16, 12))
    assert min(low, high) < value_at(runs, 2.3, "validity")[0] < max(low, high)
    assert all(math.isnan(v) for v in value_at(runs, 0.5, "validity"))
    threshold = curve(sweeps[0], "threshold (Fast-dLLM)")
    assert threshold[0].strategy == "confidence" and threshold[0].setting == 32  # tau -> 1
    with pytest.raises(ValueError, match="sampler must be one of"):
        curve(sweeps[0], "greedy")
    with pytest.raises(ValueError, match="measure must be one of"):
        truth("speed")
    with pytest.raises(ValueError, match="rate \\(tokens per pass\\) must be a finite number > 0"):
        value_at(runs, -1.0, "validity")
    assert set(MEASURE_LABELS) == set(MEASURES)


def test_random_order_loses_nothing_at_one_token_per_pass_and_the_exact_amount_at_one_pass():
    d = ExactDenoiser()
    zero, se = parallel_commit_bits(d, 32, n_docs=64)
    assert abs(zero) < 1e-9 and se < 1e-9  # the chain rule, document by document
    one_pass, se = parallel_commit_bits(d, 1, n_docs=2048, seed=3)
    assert abs(one_pass - one_pass_bits()) < 4 * se and 89 < one_pass_bits() < 92
    two, _ = parallel_commit_bits(d, 16, n_docs=64)
    assert 0.5 < two < 4
    with pytest.raises(ValueError, match="steps must be an int in \\[1, 32\\]"):
        parallel_commit_bits(d, 0)


def test_the_shipped_bits_grow_with_the_rate_and_the_model_adds_to_them(sweeps):
    bits = sweeps[0].meta["commit_bits"]
    exact = [bits["exact"][k][0] for k in ("1", "2", "4", "8", "32")]
    trained = [bits["trained"][k][0] for k in ("1", "2", "4", "8", "32")]
    assert exact[0] < 1e-9 and all(a < b for a, b in zip(exact, exact[1:], strict=False))
    assert all(t > e for t, e in zip(trained, exact, strict=True))
    assert abs(exact[-1] - one_pass_bits()) < 3 * bits["exact"]["32"][1]


def test_the_views_show_the_split_and_the_limit(sweeps):
    exact, trained = sweeps
    target = target_from(trained.ar)
    table = sources.split_table(exact, trained)
    assert table.count("\n") == 4 + 8 and "random          1    83.0   -17.0       0       0" in table
    summary = sources.split_summary(exact, trained)
    assert "-52.1" in summary and "(-0.2)" in summary and "+31.2" in summary  # the numbers section 5.2 reads
    last = summary.splitlines()[5].split()  # confidence order at 2 tokens per pass: trained, model, fact., sel.
    assert last[-4:] == ["72.5", "-6.6", "-52.1", "+31.2"]  # the three add up to trained - 100
    assert "-0.93 at 1, -1.00 at 2 tok/pass" in summary
    assert "-20.3" in table  # entropy order's selection at two tokens per pass: the full table only
    limit = sources.limit_table(exact, trained, trained.ar, target)
    assert "threshold, entropy" in limit and "1.09 ± 0.03, settings 1.08-1.16" in limit
    assert "never (length, diversity)" in limit
    short = sources.limit_summary(exact, trained, trained.ar, target)
    assert "threshold in entropy order: 1.09 (settings 1.08 and 1.16)" in short
    assert "trained model, never with any of the 7 samplers" in short and "alone: 1.32" in short
    headline = sources.limit_headline(exact, trained, trained.ar, target).splitlines()  # section 5.3 in the core
    assert headline[2].startswith("random order") and "1.01 ± 0.00 (matches in 55 % of resamples)" in headline[2]
    assert headline[3].startswith("confidence order") and headline[3].count("never (length, diversity)") == 2
    assert "1.09 ± 0.03 (matches in 56 % of resamples)" in headline[4]
    assert headline[4].endswith("never; validity alone: 1.32 ± 0.01") and len(headline) == 5
    best = max(tokens_per_pass_at(curve(exact, name), trained.ar, target).tokens_per_pass or 0 for name in exact.runs)
    assert 1.0 < best < 1.2  # the language's own limit at the AR model's quality
    assert "0.00 ±  0.00" in sources.commit_bits_table(exact.meta["commit_bits"])
    fig = sources.draw_three_sources(exact, trained, trained.ar, target)
    assert len(fig.axes) == 3 and len(fig.legends) == 1
    arrows = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert arrows == ["AR target: 98.2 %", "", "model", "", "factorization", "", "selection"]  # the red line named
    plt.close(fig)
    core = sources.draw_three_sources(exact, trained, trained.ar, target, samplers=sources.CORE_SAMPLERS)
    curves = [line for line in core.axes[0].lines if line.get_marker() == "o"]  # measured settings, not guides
    assert len(curves) == 2 * len(sources.CORE_SAMPLERS)  # each order on both models
    plt.close(core)
    two = sources.draw_three_sources(exact, trained, trained.ar, target, measures=("validity", "length"))
    assert len(two.axes) == 2
    plt.close(two)
    with pytest.raises(ValueError, match="must include 'validity' and 'length'"):
        sources.draw_three_sources(exact, trained, trained.ar, target, measures=("length", "validity"))
    with pytest.raises(ValueError, match="must include 'random' and 'confidence'"):
        sources.draw_three_sources(exact, trained, trained.ar, target, samplers=("confidence", "entropy"))
