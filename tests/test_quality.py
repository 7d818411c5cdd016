import math

import numpy as np
import pytest
import torch

from helpers.language.toylang import LANG
from helpers.quality.scores import (
    DocumentScores,
    decompose,
    exact_documents,
    kl_to_truth,
    measure,
    pooled_sentence_gap,
    score_documents,
)

H_S = LANG.entropy_bits()


def corrupted(n=3000, seed=0):
    """True documents, a third of them with one token replaced, plus random and edge cases."""
    rng = np.random.default_rng(seed)
    docs = LANG.sample_documents(n, 33, seed=seed)
    bad = docs.copy()
    rows = np.arange(0, n, 3)
    bad[rows, rng.integers(1, 33, len(rows))] = rng.integers(0, len(LANG.vocab), len(rows))
    noise = rng.integers(0, len(LANG.vocab), (300, 33))
    noise[:, 0] = LANG.bos_id
    edge = np.full((4, 33), LANG.eos_id)
    edge[:, 0] = LANG.bos_id  # all padding: nothing fits? no, everything fits: invalid
    edge[1, 0] = LANG.stoi["the"]  # no <bos>
    edge[2, 1:5] = LANG.encode("the cat sleeps .")  # a valid sentence, then more padding than any stop allows
    edge[3, 1:] = LANG.mask_id
    return np.concatenate([docs, bad, noise, edge])


def test_scores_are_the_exact_probabilities_one_document_at_a_time_gives():
    docs = corrupted()
    scores = score_documents(docs)
    probs = np.array([LANG.document_prob(d) for d in docs])
    assert scores.valid.tolist() == (probs > 0).tolist()
    assert 2500 < scores.valid.sum() < len(docs) - 500  # both kinds are there
    assert np.allclose(scores.document_bits[scores.valid], -np.log2(probs[probs > 0]), rtol=0, atol=1e-9)
    assert np.isnan(scores.document_bits[~scores.valid]).all()
    for i in np.nonzero(scores.valid)[0][:400]:
        sentences, room = LANG.split_document(docs[i])
        assert scores.sentences[i] == len(sentences) and scores.padding[i] == room
        bits = [-math.log2(LANG.prob(s)) for s in sentences]
        assert (
            np.allclose(scores.sentence_bits[i, : len(bits)], bits)
            and np.isnan(scores.sentence_bits[i, len(bits) :]).all()
        )
    assert torch.equal(torch.from_numpy(score_documents(torch.from_numpy(docs)).valid), torch.from_numpy(scores.valid))
    with pytest.raises(ValueError, match=r"docs must be int token ids of shape \(n, L >= 2\)"):
        score_documents(np.zeros((3, 33)))


@pytest.mark.parametrize("length", [2, 5, 13, 33, 65])
def test_exact_documents_agree_with_the_language(length):
    exact = exact_documents(length)
    assert exact.entropy == pytest.approx(LANG.document_entropy_bits(length), abs=1e-9)
    assert exact.sentence_counts.sum() == pytest.approx(1.0)
    assert exact.sentence_entropy == H_S


def test_exact_length_statistics_match_sampled_documents():
    exact = exact_documents(33)
    scores = score_documents(LANG.sample_documents(20000, 33, seed=7))
    counts = np.bincount(scores.sentences, minlength=len(exact.sentence_counts)) / 20000
    se = np.sqrt(exact.sentence_counts * (1 - exact.sentence_counts) / 20000)
    assert (np.abs(counts - exact.sentence_counts) <= 4 * se + 1e-4).all()
    assert scores.padding.mean() == pytest.approx(exact.mean_padding, abs=4 * scores.padding.std() / math.sqrt(20000))
    pooled = np.nansum(scores.sentence_bits) / scores.sentences.sum()
    assert pooled == pytest.approx(exact.pooled_sentence_bits, abs=0.06)
    assert exact.pooled_sentence_bits - H_S == pytest.approx(-0.0747, abs=1e-4)  # later sentences must fit


def test_decomposition_adds_up_exactly_and_is_zero_for_the_truth():
    for docs in (LANG.sample_documents(4000, 33, seed=2), corrupted(seed=5)):
        parts = decompose(score_documents(docs))
        assert parts["length"] + parts["within"] + parts["padding"] == pytest.approx(parts["total"], abs=1e-9)
    truth = decompose(score_documents(LANG.sample_documents(4000, 33, seed=2)))
    assert all(abs(v) < 0.5 for v in truth.values())


def test_gap_and_entropy_bound_on_a_tiny_enumerable_case():
    """First sentences drawn from Q = (1/2, 1/4, 1/4) over three sentences, written out in those
    proportions: the measured gap is exactly E_Q[-log2 P(s)] - H(S), and the bound H(S) + gap is
    at least H(Q) = 1.5 bits (Gibbs' inequality)."""
    sentences = [LANG.encode(s) for s in ("the cat sleeps .", "the dog runs .", "do the birds sing ?")]
    q = np.array([0.5, 0.25, 0.25])
    rest = LANG.encode("the teacher sees the girl . the cat chases the dog . the bird sings . the dog runs .")
    docs = []
    for s, copies in zip(sentences, (2, 1, 1), strict=True):
        row = [LANG.bos_id] + s + rest
        docs += [row + [LANG.eos_id] * (33 - len(row))] * copies
    quality = measure(score_documents(np.array(docs)))
    expected = sum(qi * -math.log2(LANG.prob(s)) for qi, s in zip(q, sentences, strict=True)) - H_S
    assert quality.first_sentence_gap[0] == pytest.approx(expected, abs=1e-12)
    assert quality.first_sentence_entropy_bound >= -(q * np.log2(q)).sum()
    assert quality.validity == (1.0, pytest.approx(math.sqrt(0.75 * 0.25 / 4)))  # never a standard error of 0


def test_pooled_sentence_gap_treats_documents_as_the_unit():
    scores = score_documents(LANG.sample_documents(3000, 33, seed=4))
    gap, se = pooled_sentence_gap(scores)
    bits, counts = np.nansum(scores.sentence_bits, axis=1), scores.sentences
    assert gap == pytest.approx(bits.sum() / counts.sum() - H_S)
    rng = np.random.default_rng(0)
    boot = [(bits[r].sum() / counts[r].sum()) for r in (rng.integers(0, 3000, 3000) for _ in range(400))]
    assert se == pytest.approx(np.std(boot), rel=0.15)


def test_kl_estimator_against_the_exact_kl_of_a_tiny_case():
    """Q over four outcomes, the last one invalid (P = 0): KL(Q | valid || P) exactly, and its
    estimate from draws of Q within a few standard errors."""
    q, p = np.array([0.5, 0.2, 0.2, 0.1]), np.array([0.25, 0.25, 0.5, 0.0])
    v = q[:3].sum()
    exact = float(((q[:3] / v) * np.log2((q[:3] / v) / p[:3])).sum())
    rng = np.random.default_rng(1)
    x = rng.choice(4, size=40000, p=q)
    log2_p = np.where(x < 3, np.log2(np.where(p[x] > 0, p[x], 1.0)), -np.inf)
    kl, se = kl_to_truth(np.log2(q[x]), log2_p, x < 3)
    assert abs(kl - exact) < 4 * se and 0 < se < 0.02
    with pytest.raises(ValueError, match="must be 1-D of one length"):
        kl_to_truth(np.zeros(3), np.zeros(4), np.ones(3, bool))


def test_quality_of_a_sample_of_the_truth_sits_on_every_target():
    q = measure(score_documents(LANG.sample_documents(4096, 33, seed=9)))
    exact = exact_documents(33)
    assert q.validity[0] == 1.0 and q.length_tv < 0.03
    assert abs(q.sentences[0] - exact.mean_sentences) < 4 * q.sentences[1]
    assert abs(q.sentence_gap[0] - (exact.pooled_sentence_bits - H_S)) < 4 * q.sentence_gap[1]
    assert abs(q.first_sentence_gap[0]) < 4 * q.first_sentence_gap[1]
    assert abs(q.document_gap[0]) < 4 * q.document_gap[1] and q.kl is None
    assert isinstance(score_documents(np.zeros((0, 33), dtype=np.int64)), DocumentScores)
