import math
from dataclasses import replace

import numpy as np
import pytest

from helpers.language.toylang import LANG
from helpers.quality.error_sources import curve
from helpers.quality.exact_sweep import load_exact_sweep
from helpers.quality.matched_quality import Run, load_sweep
from helpers.quality.matching import (
    MEASURES,
    crossing,
    failing,
    language_value,
    margins,
    target_from,
    tokens_per_pass_at,
)
from helpers.quality.scores import exact_documents, score_documents

TRUTH = LANG.sample_documents(12000, 33, seed=11)
SCORES = score_documents(TRUTH)
BITS = np.nansum(SCORES.sentence_bits, axis=1) / SCORES.sentences  # mean bits per sentence of each document


def run_of(docs, tokens_per_pass, setting=0.0, sampler="fake"):
    return Run(sampler, setting, docs, np.full(len(docs), round(32 / tokens_per_pass)))


def reference():
    return run_of(TRUTH[:1024], 1.0, sampler="AR")


def shorter():
    """Valid, as diverse as the truth sentence by sentence, but one sentence fewer per document."""
    return TRUTH[SCORES.sentences == 3][:1024]


def likelier(unlikelier=False):
    """Valid, the same number of sentences as the truth, but only each count's likelier half (or,
    with unlikelier=True, its less likely half)."""
    keep = []
    for k in np.unique(SCORES.sentences):
        rows = np.nonzero(SCORES.sentences == k)[0]
        half = BITS[rows] > np.median(BITS[rows]) if unlikelier else BITS[rows] < np.median(BITS[rows])
        keep += list(rows[half])
    return TRUTH[np.array(sorted(keep))[:1024]]


def broken(docs, fraction, seed=0):
    """The same documents with a `fraction` of them made invalid (a sentence ending cut)."""
    docs = docs.copy()
    rows = np.random.default_rng(seed).choice(len(docs), int(fraction * len(docs)), replace=False)
    docs[rows, 1] = LANG.stoi["."]
    return docs


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


def test_the_target_s_tolerances_come_from_the_reference_s_standard_errors():
    ref = reference()
    target = target_from(ref)
    q = ref.quality
    assert target.validity == 0.99
    assert target.length_tolerance == math.ceil(100 * 2 * math.sqrt(2) * q.sentences[1]) / 100
    assert target.gap_tolerance == math.ceil(100 * 2 * math.sqrt(2) * q.sentence_gap[1]) / 100
    assert target.validity_tolerance == math.ceil(1000 * 2 * math.sqrt(2) * q.validity[1]) / 1000
    assert 0.03 < target.length_tolerance < 0.1 and 0.05 < target.gap_tolerance < 0.2
    assert target.lowest_validity == pytest.approx(0.99 - target.validity_tolerance)
    assert str(target).startswith("validity >= 99 % - ")
    with pytest.raises(
        ValueError, match=r"validity \(the convention asked for, e.g. 0.99\) must be a number in \(0, 1\)"
    ):
        target_from(ref, validity=99)


def ar_like(n_sets=40, fraction=0.007, seed=0):
    """Samples drawn like the AR model: 1024 documents of the language each, a binomial share of
    them (0.7 % on average, as the AR model's 99.3 % valid) made invalid."""
    docs = LANG.sample_documents(n_sets * 1024, 33, seed=100 + seed)
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_sets):
        chunk = docs[k * 1024 : (k + 1) * 1024].copy()
        rows = rng.random(1024) < fraction
        chunk[rows, 1] = LANG.stoi["."]
        out.append(run_of(chunk, 1.0))
    return out


def test_a_setting_equal_to_the_reference_passes_each_measure_at_least_19_times_in_20():
    """The point of the tolerances: sampling error alone rarely fails a setting, on any measure."""
    reference_run, *others = ar_like()
    target = target_from(reference_run)
    fails = [failing(run, reference_run, target) for run in others]
    for m in MEASURES:
        assert sum(m in f for f in fails) <= 2, (m, fails)  # at most 2 of 39
    # with validity fixed at 99 % and no allowance for sampling error, a third of them would fail
    strict = replace(target, validity_tolerance=0.0)
    assert sum("validity" in failing(run, reference_run, strict) for run in others) >= 5


def test_a_setting_that_matches_validity_but_not_length_is_rejected():
    ref = reference()
    target = target_from(ref)
    runs = [run_of(shorter(), 1.0, 32)]
    assert runs[0].validity == 1.0 and runs[0].quality.sentences[0] == 3.0
    assert str(tokens_per_pass_at(runs, ref, target, ("validity",), boot=0)) == "every rate measured"
    full = tokens_per_pass_at(runs, ref, target, boot=0)
    # three-sentence documents hold longer, rarer sentences: the gap is far above the reference's
    # too, and every measure it fails is named
    assert runs[0].quality.sentence_gap[0] > ref.quality.sentence_gap[0] + target.gap_tolerance
    assert full.tokens_per_pass is None and full.limited_by == ("length", "diversity")
    assert str(full) == "never (length, diversity)"
    both = tokens_per_pass_at([run_of(broken(shorter(), 0.2), 1.0, 32)], ref, target, boot=0)
    assert both.limited_by == MEASURES and str(both) == "never (validity, length, diversity)"


def test_a_setting_that_matches_validity_and_length_but_not_the_gap_is_rejected():
    ref = reference()
    target = target_from(ref)
    runs = [run_of(likelier(), 1.0, 32)]
    q = runs[0].quality
    ref_q = ref.quality
    assert abs(q.sentences[0] - ref_q.sentences[0]) < target.length_tolerance  # the length matches
    assert q.sentence_gap[0] < ref_q.sentence_gap[0] - target.gap_tolerance  # mode-seeking
    assert tokens_per_pass_at(runs, ref, target, ("validity", "length"), boot=0).tokens_per_pass == math.inf
    full = tokens_per_pass_at(runs, ref, target, boot=0)
    assert full.tokens_per_pass is None and full.limited_by == ("diversity",)
    # the gap is two-sided around the language: far less likely sentences than the language's (a
    # higher gap) do not match either
    unlikely = [run_of(likelier(unlikelier=True), 1.0, 32)]
    assert unlikely[0].quality.sentence_gap[0] > language_value("diversity") + 0.5
    assert failing(unlikely[0], ref, target) == ("diversity",)
    assert tokens_per_pass_at(unlikely, ref, target, boot=0).limited_by == ("diversity",)


def test_a_setting_closer_to_the_language_than_the_ar_model_is_never_penalised():
    """The reference is the language; the AR model is the bar. Against a mode-seeking, short bar,
    the language itself matches on every measure, and a setting as far from the language as the
    bar, on the other side, matches too; one further out does not."""
    short_and_likely = np.concatenate([shorter()[:300], likelier()[:724]])  # fewer sentences, likelier ones
    bar = run_of(short_and_likely, 1.0, sampler="AR")
    target = target_from(bar)
    bar_q = bar.quality
    assert bar_q.sentences[0] < language_value("length") - 3 * target.length_tolerance
    assert bar_q.sentence_gap[0] < language_value("diversity") - 3 * target.gap_tolerance
    assert failing(run_of(TRUTH[2048:3072], 1.0), bar, target) == ()  # the language passes
    low, high = target.allowed("length", bar_q.sentences[0])
    assert low == pytest.approx(bar_q.sentences[0] - target.length_tolerance)  # the bar, less the tolerance
    assert high - language_value("length") == pytest.approx(language_value("length") - low)  # around the language
    g_low, g_high = target.allowed("diversity", bar_q.sentence_gap[0])
    assert g_low < bar_q.sentence_gap[0] < language_value("diversity") < g_high
    assert target.allowed("validity", 0.5) == (target.lowest_validity, 1.0)
    with pytest.raises(ValueError, match="measure must be one of"):
        target.allowed("speed", 0.0)
    with pytest.raises(ValueError, match="measure must be one of"):
        language_value("speed")
    exact = exact_documents(33)
    assert language_value("length") == exact.mean_sentences and language_value("validity") == 1.0


@pytest.fixture(scope="module")
def sweeps():
    return load_exact_sweep(), load_sweep()


def test_the_perfect_model_in_random_order_at_one_token_per_pass_matches(sweeps):
    """It draws from the language itself: it must match in at least 95 % of bootstrap resamples."""
    exact, trained = sweeps
    target = target_from(trained.ar)
    at = tokens_per_pass_at(curve(exact, "random"), trained.ar, target, boot=200)
    assert at.tokens_per_pass is not None and at.matched_share >= 0.95, at


def test_a_mode_seeking_or_too_cold_setting_still_fails_diversity(sweeps):
    _, trained = sweeps
    target = target_from(trained.ar)
    cold = next(r for r in trained.ar_runs["AR"] if r.setting == 0.5)
    assert "diversity" in failing(cold, trained.ar, target)
    confidence = next(r for r in trained.runs["confidence"] if r.setting == 32)  # mode-seeking by 1.8 bits
    assert "diversity" in failing(confidence, trained.ar, target)


def test_a_setting_drawn_like_the_ar_model_passes_each_measure_at_least_19_times_in_20(sweeps):
    """Two independent samples of the AR model's own documents (resampled with replacement), one as
    the bar, one as the setting: each measure fails at most 1 time in 20."""
    ar = sweeps[1].ar
    rng = np.random.default_rng(0)
    fails = {m: 0 for m in MEASURES}
    trials = 400
    for _ in range(trials):
        bar, setting = (ar.subset(rng.integers(0, ar.n, ar.n)) for _ in range(2))
        for m in failing(setting, bar, target_from(bar)):
            fails[m] += 1
    assert all(count <= trials / 20 for count in fails.values()), fails


def test_the_match_ends_where_the_first_measure_fails_with_a_bootstrap_error():
    ref = reference()
    target = target_from(ref)
    truth = TRUTH[1024:2048]
    runs = [run_of(truth, 1.0, 32), run_of(broken(truth, 0.04), 2.0, 16), run_of(shorter(), 4.0, 8)]
    validity_only = tokens_per_pass_at(runs, ref, target, ("validity",), boot=50)
    assert 1.0 < validity_only.tokens_per_pass < 2.0 and validity_only.limited_by == ("validity",)
    assert validity_only.bracket == (1.0, 2.0) and 0 < validity_only.se < 0.3
    low, high = validity_only.plausible
    assert low < validity_only.tokens_per_pass < high and high - low < 6 * validity_only.se
    assert validity_only.range_text == f"{validity_only.tokens_per_pass:.2f} ({low:.2f} to {high:.2f})"
    full = tokens_per_pass_at(runs, ref, target, MEASURES, boot=50)
    assert full.tokens_per_pass == validity_only.tokens_per_pass  # validity fails first, at 2 tokens per pass
    lengths = tokens_per_pass_at(runs, ref, target, ("length",), boot=0)
    assert 2.0 < lengths.tokens_per_pass < 4.0 and lengths.limited_by == ("length",)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(boot=-1), "boot must be an int >= 0, got -1"),
        (dict(seed=1.5), "seed must be an int >= 0, got 1.5"),
        (dict(measures=("speed",)), "measures must be a non-empty subset of"),
        (dict(measures=()), "measures must be a non-empty subset of"),
        (dict(target=0.99), "target must be a helpers.quality.matching.Target"),
        (dict(runs="abc"), "runs must be a non-empty list of Run"),
        (dict(runs=[]), "runs must be a non-empty list of Run"),
    ],
)
def test_tokens_per_pass_at_names_what_is_allowed(kwargs, message):
    ref = reference()
    args = dict(runs=[run_of(TRUTH[:256], 1.0)], reference=ref, target=target_from(ref)) | kwargs
    with pytest.raises(ValueError, match=message):
        tokens_per_pass_at(args.pop("runs"), args.pop("reference"), args.pop("target"), **args)


def test_margins_say_by_how_much_each_measure_holds():
    ref = reference()
    target = target_from(ref)
    m = margins(run_of(shorter(), 1.0), ref, target)
    assert m["validity"] == pytest.approx(0.01 + target.validity_tolerance) and m["length"] < -0.8
    assert set(m) == set(MEASURES) and failing(run_of(shorter(), 1.0), ref, target) == ("length", "diversity")
    assert all(v >= 0 for v in margins(ref, ref, target).values())  # the reference matches itself
    with pytest.raises(ValueError, match="target must be a helpers.quality.matching.Target"):
        margins(ref, ref, None)
