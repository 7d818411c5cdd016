"""The exact denoiser against brute force: every document of a small grammar enumerated, and
LANG.conditional on sentences; then as a model of helpers.diffusion.sampler (sample, nelbo)."""

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from helpers.diffusion.exact_denoiser import (
    ExactDenoiser,
    SentenceDenoiser,
    _check_automaton,
    document_lattice,
    log_posteriors,
    sentence_automaton,
)
from helpers.diffusion.sampler import nelbo, sample
from helpers.language.grammar import Grammar
from helpers.language.toylang import LANG, ToyLanguage
from helpers.quality.scores import exact_documents, measure, score_documents


class SmallGrammar(Grammar):
    """17 sentences of 4 to 8 tokens, with the city pairs and number agreement kept."""

    nouns = {"cat": "cats", "dog": "dogs"}
    noun_weights = {"cat": 0.6, "dog": 0.4}
    adjectives = {"big": 1.0}
    p_adjective = 0.0
    det_singular = {"the": 1.0}
    det_plural = {"the": 1.0}
    p_prep_phrase = 0.0
    intransitive = {"sleeps": ("sleep", 1.0)}
    p_transitive = 0.0
    names = {"bob": 1.0}
    cities = {("new", "york"): 0.5, ("san", "diego"): 0.3, ("san", "jose"): 0.2}
    sentence_kinds = {"statement": 0.5, "question": 0.2, "travel": 0.3}


class SmallLanguage(ToyLanguage):
    def _sentence_phrases(self):  # the options weighted 0 above are left out, not kept at P = 0
        return [(phrase, p) for phrase, p in super()._sentence_phrases() if p > 0]


SMALL = SmallLanguage(SmallGrammar())
LENGTH = 11  # <bos> + 10 positions: up to three sentences


def all_documents(lang, length):
    """Every document of `length` positions with its probability, by recursion over the room."""
    tokens, probs = lang.support()
    sentences = [(row[:n].tolist(), p) for row, n, p in zip(tokens, lang.sentence_lengths, probs, strict=True)]
    out = []

    def fill(prefix, p):
        room = length - len(prefix)
        stop = lang._p_too_long(room)
        if stop > 0:
            out.append((prefix + [lang.eos_id] * room, p * stop))
        for words, q in sentences:
            if len(words) <= room:
                fill(prefix + words, p * q)

    fill([lang.bos_id], 1.0)
    return np.array([d for d, _ in out]), np.array([p for _, p in out])


DOCS, PROBS = all_documents(SMALL, LENGTH)


def brute_force(canvas, docs=DOCS, probs=PROBS, lang=SMALL):
    """P(token at each position | visible) by summing the documents that disagree with the fewest
    visible tokens (all of them where some document fits): (T, V)."""
    visible = canvas != lang.mask_id
    misses = ((docs != canvas) & visible).sum(axis=1)
    keep = misses == misses.min()
    out = np.zeros((len(canvas), len(lang.vocab)))
    for i in range(len(canvas)):
        np.add.at(out[i], docs[keep, i], probs[keep])
    return out / probs[keep].sum()


def canvases(rng, n, impossible=False):
    rows = DOCS[rng.choice(len(DOCS), n, p=PROBS)].copy()
    for row in rows:
        row[1:][rng.random(LENGTH - 1) < rng.uniform(0.2, 0.9)] = SMALL.mask_id
        if impossible:  # a second half of a city that no first half before it allows
            row[rng.integers(1, LENGTH)] = SMALL.stoi["jose"]
    return rows


def test_the_small_grammar_is_small_and_its_documents_sum_to_one():
    assert len(SMALL.support()[1]) == 17 and len(DOCS) == 81
    assert PROBS.sum() == pytest.approx(1.0, abs=1e-12)


def test_the_automaton_reproduces_every_sentence_and_merges_the_default_grammar():
    a = sentence_automaton(LANG)
    assert (a.n_states, len(a.src)) == (44, 212)  # 111,076 sentences
    small = sentence_automaton(SMALL)
    assert small.n_states <= 20
    off = small.weight.copy()
    off[0] *= 1.001
    with pytest.raises(RuntimeError, match="does not reproduce the sentence probabilities"):
        _check_automaton(replace(small, weight=off), SMALL)


def test_the_document_posteriors_agree_with_enumeration_to_1e_12():
    rng = np.random.default_rng(0)
    rows = canvases(rng, 60)
    rows[0, 1:] = SMALL.mask_id  # nothing visible: the document marginals
    got = ExactDenoiser(SMALL)(torch.from_numpy(rows)).exp().numpy()  # (B, T, V)
    for canvas, mine in zip(rows, got, strict=True):
        assert np.abs(mine - brute_force(canvas)).max() < 1e-12
    assert np.abs(got[0] - SMALL.document_marginals(LENGTH)).max() < 1e-12


def test_impossible_canvases_condition_on_the_nearest_documents():
    rows = canvases(np.random.default_rng(1), 40, impossible=True)
    fits = [(((r != DOCS) & (r != SMALL.mask_id)).sum(axis=1) == 0).any() for r in rows]
    assert 10 < fits.count(False) < 40  # most of them fit no document
    got = ExactDenoiser(SMALL)(torch.from_numpy(rows)).exp().numpy()
    for canvas, mine in zip(rows, got, strict=True):
        hidden = canvas == SMALL.mask_id  # a visible position keeps its token, even one no document has
        assert np.abs(mine[hidden] - brute_force(canvas)[hidden]).max() < 1e-12
        assert np.allclose(mine.sum(axis=1), 1.0)


def test_one_wrong_segmentation_weight_is_caught():
    """The check has teeth: a stop probability off by 1 % at one position breaks the 1e-12 agreement."""
    lattice = document_lattice(LENGTH, SMALL)
    wrong = lattice.log_weight.clone()
    wrong[4, -2] += math.log(1.01)  # the arc from the start of a sentence to the padding, at position 5
    rows = canvases(np.random.default_rng(2), 40)
    errors = []
    for lat in (lattice, replace(lattice, log_weight=wrong)):
        got = log_posteriors(torch.from_numpy(rows[:, 1:]), lat, len(SMALL.vocab), SMALL.mask_id).exp().numpy()
        errors.append(max(np.abs(g - brute_force(r)[1:]).max() for g, r in zip(got, rows, strict=True)))
    assert errors[0] < 1e-12 < 1e-4 < errors[1]


def test_the_sentence_posteriors_agree_with_lang_conditional():
    rng = np.random.default_rng(3)
    tokens, probs = LANG.support()
    rows = tokens[rng.choice(len(probs), 30, p=probs)].copy()
    for row in rows:
        row[rng.random(LANG.width) < rng.uniform(0.3, 0.9)] = LANG.mask_id
    got = SentenceDenoiser()(torch.from_numpy(rows)).exp().numpy()  # (B, W, V)
    for row, mine in zip(rows, got, strict=True):
        visible = {i: int(t) for i, t in enumerate(row) if t != LANG.mask_id}
        for i in np.flatnonzero(row == LANG.mask_id):
            assert np.abs(mine[i] - LANG.conditional(int(i), visible)).max() < 1e-12


def test_the_document_posteriors_agree_with_the_exact_next_token_and_marginals():
    doc = LANG.sample_documents(1, 33, seed=4)[0]
    rows = np.full((6, 33), LANG.mask_id)
    rows[:, 0] = LANG.bos_id
    for r, k in enumerate((1, 2, 6, 11, 19, 30)):
        rows[r, :k] = doc[:k]
    got = ExactDenoiser()(torch.from_numpy(rows)).exp().numpy()
    for r, k in enumerate((1, 2, 6, 11, 19, 30)):
        assert np.abs(got[r, k] - LANG.document_next_token_probs(doc[:k].tolist(), 33)).max() < 1e-12
    assert np.abs(got[0] - LANG.document_marginals(33)).max() < 1e-12


def test_random_order_at_one_token_per_pass_is_exact():
    """The chain rule in a random order: every document valid, and the language's own length and
    within-sentence gap, within sampling noise (3 standard errors)."""
    docs = sample(ExactDenoiser(), 32, 32, rule="random", temperature=1.0, batch_size=384,
                  generator=torch.Generator().manual_seed(0))  # fmt: skip
    q, exact = measure(score_documents(docs)), exact_documents(33)
    assert q.validity[0] == 1.0
    assert abs(q.sentences[0] - exact.mean_sentences) < 3 * q.sentences[1]
    assert abs(q.sentence_gap[0] - (exact.pooled_sentence_bits - exact.sentence_entropy)) < 3 * q.sentence_gap[1]


def test_with_exact_conditionals_the_bound_is_tight():
    """The diffusion loss is an upper bound on -log p(x) because of Jensen's inequality over orders;
    with the exact conditionals every order gives P(x), so it is -log P(x) itself."""
    docs = torch.from_numpy(LANG.sample_documents(96, 33, seed=5))
    bound = nelbo(ExactDenoiser(), docs, draws=8, generator=torch.Generator().manual_seed(0), per_document=True)
    exact = torch.tensor([-math.log(LANG.document_prob(d)) / 32 for d in docs.numpy()], dtype=torch.float64)
    gap = bound - exact
    assert abs(gap.mean().item()) < 3 * gap.std().item() / math.sqrt(len(gap))


def test_samplers_take_the_exact_denoiser_and_name_what_is_allowed():
    d = ExactDenoiser()
    for kwargs in (dict(rule="ancestral", remask=0.4), dict(threshold=0.9), dict(block_length=8)):
        docs = sample(d, 32, 8, temperature=1.0, batch_size=4, generator=torch.Generator().manual_seed(1), **kwargs)
        assert docs.shape == (4, 33)
    with pytest.raises(
        ValueError, match="bidirectional helpers.decoding.model.Transformer or a helpers.diffusion.exact_denoiser"
    ):
        sample(object(), 32, 8)
    with pytest.raises(ValueError, match="lang must be a helpers.language.toylang.ToyLanguage"):
        ExactDenoiser("LANG")
    with pytest.raises(ValueError, match="canvas must be an int64 tensor"):
        d(torch.zeros(2, 33))
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 55\)"):
        d(torch.full((1, 33), 99))
    with pytest.raises(ValueError, match="rows must have 12 positions"):
        SentenceDenoiser()(torch.zeros(1, 13, dtype=torch.long))


def test_every_canvas_position_is_a_distribution():
    rows = torch.from_numpy(LANG.sample_documents(8, 33, seed=6))
    rows[:, 1:][torch.rand(8, 32, generator=torch.Generator().manual_seed(0)) < 0.6] = LANG.mask_id
    p = ExactDenoiser()(rows).exp()
    assert torch.allclose(p.sum(-1), torch.ones(8, 33, dtype=torch.float64))
    visible = rows != LANG.mask_id
    assert torch.equal(p.argmax(-1)[visible], rows[visible])  # a visible position keeps its token


def test_all_orders_of_a_tiny_document_give_its_probability():
    """The chain rule in every order, computed with the denoiser: the same P(x) each time."""
    doc = DOCS[np.argmax(PROBS)]
    d = ExactDenoiser(SMALL)
    for order in itertools.islice(itertools.permutations(range(1, LENGTH)), 0, 5000, 997):
        canvas = np.full(LENGTH, SMALL.mask_id)
        canvas[0] = SMALL.bos_id
        log_p = 0.0
        for i in order:
            log_p += d(torch.from_numpy(canvas[None]))[0, i, doc[i]].item()
            canvas[i] = doc[i]
        assert log_p == pytest.approx(math.log(PROBS.max()), abs=1e-12)
