import math
from dataclasses import replace

import numpy as np
import pytest

from helpers.matched_quality import Run
from helpers.matching import MEASURES, crossing, failing, margins, target_from, tokens_per_pass_at
from helpers.quality import score_documents
from helpers.toylang import LANG

TRUTH = LANG.sample_documents(12000, 33, seed=11)
SCORES = score_documents(TRUTH)
BITS = np.nansum(SCORES.sentence_bits, axis=1) / SCORES.sentences  # mean bits per sentence of each document


def run_of(docs, tokens_per_pass, setting=0.0, strategy="fake"):
    return Run(strategy, setting, docs, np.full(len(docs), round(32 / tokens_per_pass)))


def reference():
    return run_of(TRUTH[:1024], 1.0, strategy="AR")


def shorter():
    """Valid, as diverse as the truth sentence by sentence, but one sentence fewer per document."""
    return TRUTH[SCORES.sentences == 3][:1024]


def likelier():
    """Valid, the same number of sentences as the truth, but only each count's likelier half."""
    keep = []
    for k in np.unique(SCORES.sentences):
        rows = np.nonzero(SCORES.sentences == k)[0]
        keep += list(rows[BITS[rows] < np.median(BITS[rows])])
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
    # the gap is two-sided: far more diverse than the reference (a higher gap) does not match either
    mode_seeking_reference = runs[0]
    diverse = [run_of(TRUTH[1024:2048], 1.0, 32)]
    assert failing(diverse[0], mode_seeking_reference, target) == ("diversity",)
    assert tokens_per_pass_at(diverse, mode_seeking_reference, target, boot=0).limited_by == ("diversity",)


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
        (dict(target=0.99), "target must be a helpers.matching.Target"),
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
    with pytest.raises(ValueError, match="target must be a helpers.matching.Target"):
        margins(ref, ref, None)
