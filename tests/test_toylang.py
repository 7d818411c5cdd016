import numpy as np
import pytest

from helpers.toylang import LANG


@pytest.fixture(scope="module")
def support():
    return LANG.support()


def test_vocabulary_and_specials():
    assert 40 <= len(LANG.vocab) - 3 <= 150
    assert LANG.vocab[LANG.eos_id] == "<eos>" and LANG.vocab[LANG.mask_id] == "<mask>"
    assert len(set(LANG.vocab)) == len(LANG.vocab)
    text = "alice flew from new york to san diego ."
    assert LANG.decode(LANG.encode(text)) == text


def test_support_is_normalised_and_finite(support):
    tokens, probs = support
    assert 1e3 <= len(probs) <= 1e6
    assert tokens.shape == (len(probs), LANG.width) and LANG.width <= 17
    assert probs.dtype == np.float64 and abs(probs.sum() - 1) < 1e-12
    assert (probs > 0).all()
    assert (tokens[:, -1] == LANG.eos_id).all()  # every row ends in padding
    assert len({tuple(r) for r in tokens.tolist()}) == len(probs)  # no sentence twice


def test_prob_matches_support_and_rejects_non_sentences(support):
    tokens, probs = support
    for r in (0, 1234, len(probs) - 1):
        assert LANG.prob(tokens[r]) == probs[r]
        assert LANG.prob(tokens[r][: LANG.sentence_lengths[r]]) == probs[r]  # without padding
    assert LANG.prob(LANG.encode("alice flew from new diego to san york .")) == 0.0
    assert LANG.prob(LANG.encode("the cat near the dogs sleep .")) == 0.0  # agreement with "dogs"
    assert LANG.prob(LANG.encode("the cat near the dogs sleeps .")) > 0.0
    assert LANG.prob(LANG.encode("does the cat sleep .")) == 0.0  # a question ends with "?"
    assert not LANG.is_valid([LANG.eos_id, LANG.stoi["the"]])


@pytest.mark.parametrize("order_name", ["left_to_right", "right_to_left", "random"])
def test_chain_rule_in_any_order(support, order_name):
    tokens, probs = support
    order = {
        "left_to_right": list(range(LANG.width)),
        "right_to_left": list(range(LANG.width))[::-1],
        "random": list(np.random.default_rng(0).permutation(LANG.width)),
    }[order_name]
    conds = LANG.order_conditionals(order)
    assert np.abs(np.log(conds).sum(axis=1) - np.log(probs)).max() < 1e-12


def test_order_conditionals_agree_with_brute_force(support):
    tokens, _ = support
    order = [5, 0, 11, 3, 1, 2, 4, 6, 7, 8, 9, 10]
    conds = LANG.order_conditionals(order)
    for r in (7, 40_000, 99_999):
        for k in (0, 1, 4, 9):
            visible = {p: int(tokens[r, p]) for p in order[:k]}
            expected = LANG.conditional(order[k], visible)[tokens[r, order[k]]]
            assert conds[r, k] == pytest.approx(expected, rel=1e-12)


def test_conditional_matches_brute_force_and_is_normalised(support):
    tokens, probs = support
    visible = {0: LANG.stoi["alice"], 7: LANG.stoi["diego"]}
    dist = LANG.conditional(6, visible)
    assert abs(dist.sum() - 1) < 1e-12
    keep = (tokens[:, 0] == visible[0]) & (tokens[:, 7] == visible[7])
    brute = {}
    for row, p in zip(tokens[keep], probs[keep], strict=True):
        brute[row[6]] = brute.get(row[6], 0) + p
    total = sum(brute.values())
    for tok, p in brute.items():
        assert dist[tok] == pytest.approx(p / total, rel=1e-12)
    assert set(np.nonzero(dist)[0]) == {LANG.stoi["san"]}  # "diego" forces "san"


def test_next_token_probs_is_the_left_to_right_conditional():
    prefix = LANG.encode("does the")
    dist = LANG.next_token_probs(prefix)
    assert abs(dist.sum() - 1) < 1e-12
    assert dist[LANG.stoi["cats"]] == 0 and dist[LANG.stoi["cat"]] > 0  # "does" wants a singular noun
    assert np.array_equal(dist, LANG.conditional(2, {0: prefix[0], 1: prefix[1]}))
    finished = LANG.encode("the cat sleeps .")
    assert LANG.next_token_probs(finished)[LANG.eos_id] == 1.0
    first = LANG.next_token_probs([])
    assert first[LANG.eos_id] == 0 and abs(first.sum() - 1) < 1e-12


def test_sampling_frequencies_match_probabilities():
    n = 20_000
    samples = LANG.sample(n, seed=0)
    assert all(LANG.is_valid(s) for s in samples[:500])
    counts = {}
    for s in samples:
        counts[s[0]] = counts.get(s[0], 0) + 1
    first = LANG.next_token_probs([])
    for tok, c in counts.items():  # every first word within 5 standard errors
        p = first[tok]
        assert abs(c / n - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert LANG.sample(5, seed=1) == LANG.sample(5, seed=1)


def test_entropy():
    _, probs = LANG.support()
    h = LANG.entropy_bits()
    assert h == pytest.approx(-(probs * np.log2(probs)).sum())
    assert 0 < h < np.log2(len(probs))
    assert LANG.entropy_rate_bits() == pytest.approx(h / LANG.mean_sentence_tokens())


def test_documents_are_valid_and_well_formed():
    docs = LANG.sample_documents(300, 64, seed=0)
    assert docs.shape == (300, 64) and docs.dtype == np.int64
    assert (docs[:, 0] == LANG.bos_id).all()
    assert all(LANG.document_is_valid(d) for d in docs)
    assert np.array_equal(docs, LANG.sample_documents(300, 64, seed=0))
    room = (docs == LANG.eos_id).sum(axis=1)
    assert room.max() < LANG.max_sentence_tokens  # padding only when the next sentence can't fit


def test_document_validity_rejects_broken_documents():
    good = LANG.sample_documents(1, 64, seed=3)[0]
    assert LANG.document_is_valid(good)
    no_bos = good.copy()
    no_bos[0] = LANG.eos_id
    cut = good.copy()
    cut[-1 - (cut == LANG.eos_id).sum()] = LANG.stoi["the"]  # final "." or "?" replaced: cut off
    early_stop = np.full(64, LANG.eos_id)
    early_stop[0] = LANG.bos_id
    early_stop[1:5] = LANG.encode("the cat sleeps .")  # stops with room for more sentences
    city = np.array([LANG.bos_id] + LANG.encode("bob flew from new diego to los angeles .") + [LANG.eos_id] * 55)
    for bad in (no_bos, cut, early_stop, city):
        assert not LANG.document_is_valid(bad)


def test_document_probability_and_entropy_by_brute_force():
    """On a canvas short enough to enumerate, the DP entropy equals the sum over all documents."""
    length = 9  # bos + 8: one sentence, or two of four words each
    tokens, probs = LANG.support()
    fits = LANG.sentence_lengths <= length - 1
    sentences = [tuple(t[:n]) for t, n in zip(tokens[fits].tolist(), LANG.sentence_lengths[fits], strict=True)]
    documents = [()] + [(s,) for s in sentences]
    documents += [(a, b) for a in sentences for b in sentences if len(a) + len(b) <= length - 1]
    total, entropy = 0.0, 0.0
    for sents in documents:
        words = [w for s in sents for w in s]
        p = LANG.document_prob([LANG.bos_id, *words] + [LANG.eos_id] * (length - 1 - len(words)))
        total += p
        entropy -= p * np.log2(p) if p > 0 else 0.0
    assert total == pytest.approx(1.0, abs=1e-12)
    assert LANG.document_entropy_bits(length) == pytest.approx(entropy, rel=1e-10)


def test_document_entropy_against_monte_carlo():
    docs = LANG.sample_documents(4000, 32, seed=1)
    logp = np.log2([LANG.document_prob(d) for d in docs])
    exact = LANG.document_entropy_bits(32)
    assert abs(-logp.mean() - exact) < 5 * logp.std() / np.sqrt(len(docs))


def test_document_marginals_match_samples():
    marg = LANG.document_marginals(24)
    assert np.allclose(marg.sum(axis=1), 1.0)
    docs = LANG.sample_documents(20_000, 24, seed=2)
    empirical = np.stack([np.bincount(docs[:, i], minlength=len(LANG.vocab)) for i in range(24)]) / len(docs)
    assert np.abs(empirical - marg).max() < 0.015


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: LANG.encode("the zebra sleeps ."), "unknown word 'zebra'"),
        (lambda: LANG.encode(["the"]), "expects a str"),
        (lambda: LANG.decode([0, 999]), "out of range"),
        (lambda: LANG.prob([-1]), "out of range"),
        (lambda: LANG.next_token_probs(LANG.encode("the cat the")), "probability 0"),
        (lambda: LANG.next_token_probs([999]), "out of range"),
        (lambda: LANG.conditional(LANG.width, {}), "position 12 out of range"),
        (lambda: LANG.conditional(0, {40: 3}), "visible position 40 out of range"),
        (lambda: LANG.conditional(2, {0: LANG.stoi["."]}), "probability 0"),
        (lambda: LANG.order_conditionals([0, 1, 2]), "permutation"),
        (lambda: LANG.sample(-1), "non-negative"),
        (lambda: LANG.sample_documents(2, 1), "length must be an int >= 2"),
        (lambda: LANG.document_entropy_bits(0), "length must be an int >= 2"),
    ],
)
def test_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_document_next_token_probs_follow_the_chain_rule():
    for doc in LANG.sample_documents(20, 32, seed=4):
        log_p = sum(np.log(LANG.document_next_token_probs(doc[:t], 32)[doc[t]]) for t in range(1, 32))
        assert log_p == pytest.approx(np.log(LANG.document_prob(doc)), abs=1e-9)
    first = LANG.document_next_token_probs([LANG.bos_id], 32)
    assert first[LANG.eos_id] == 0 and np.allclose(first, LANG.next_token_probs([]))
    near_end = LANG.document_next_token_probs([LANG.bos_id] + LANG.encode("the cat sleeps .") * 6, 32)
    assert near_end[LANG.eos_id] > 0  # with 7 positions left a long sentence cannot fit
    with pytest.raises(ValueError, match="probability 0"):
        LANG.document_next_token_probs([LANG.bos_id] + LANG.encode("the cat the"), 32)


def test_document_parallel_fill_validity_matches_sampling():
    length = 9
    marg = LANG.document_marginals(length)
    predicted = LANG.document_parallel_fill_validity(marg)
    rng = np.random.default_rng(0)
    n = 100_000
    docs = np.stack([rng.choice(len(LANG.vocab), size=n, p=m / m.sum()) for m in marg], axis=1)
    unique, inverse = np.unique(docs, axis=0, return_inverse=True)
    valid = np.array([LANG.document_is_valid(d) for d in unique])[inverse.ravel()]
    assert abs(valid.mean() - predicted) < 5 * np.sqrt(predicted * (1 - predicted) / n)
    one_doc = LANG.sample_documents(1, 33, seed=0)[0]
    assert LANG.document_parallel_fill_validity(np.eye(len(LANG.vocab))[one_doc]) == 1.0
    with pytest.raises(ValueError, match="marginals must have shape"):
        LANG.document_parallel_fill_validity(np.ones((4, 3)))


def test_parallel_fill_of_city_names():
    words = LANG.encode("alice flew from new york to san diego .")
    visible = {i: t for i, t in enumerate(words) if i not in (3, 4, 6, 7)} | {9: 0, 10: 0, 11: 0}
    first = LANG.conditional(3, visible)
    second = LANG.conditional(4, visible)
    one_city = sum(first[LANG.stoi[a]] * second[LANG.stoi[b]] for a, b in LANG.grammar.cities)
    assert LANG.parallel_fill_validity(visible) == pytest.approx(one_city**2, rel=1e-12)
    assert 0.2 < one_city < 0.5  # each city comes out whole only a third of the time
    assert LANG.parallel_fill_validity() == pytest.approx(1.2878e-05, rel=1e-3)


def test_next_token_probs_by_binary_search_equals_the_brute_force():
    for sentence in LANG.sample(200, seed=3):
        for k in range(len(sentence) + 1):
            fast = LANG.next_token_probs(sentence[:k])
            brute = LANG.conditional(k, dict(enumerate(sentence[:k])))
            assert np.array_equal(fast, brute)


def test_next_token_probs_of_a_short_prefix_is_a_fresh_copy():
    probs = LANG.next_token_probs([])
    probs[:] = 0.0  # a caller that writes into its result must not change the next answer
    assert LANG.next_token_probs([]).sum() == pytest.approx(1.0)


@pytest.mark.parametrize("prefix", ["sleeps", "the the", "the cat sleeps . the"])
def test_next_token_probs_of_an_impossible_prefix_raises(prefix):
    with pytest.raises(ValueError, match="probability 0"):
        LANG.next_token_probs(LANG.encode(prefix))
