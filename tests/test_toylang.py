import numpy as np
import pytest
import torch

from helpers.language.toylang import LANG, Grammar, ToyLanguage


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
        (lambda: LANG.sample(-1), r"n \(the number of sentences\) must be an int >= 0, got -1"),
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


def test_all_next_token_probs_is_every_next_token_distribution_at_once(support):
    tokens, _ = support
    longest = tokens[int(np.argmax(LANG.sentence_lengths))]  # no room left: one <eos> ends the row
    for sentence in [*LANG.sample(50, seed=5), list(longest[: LANG.max_sentence_tokens])]:
        row = [*sentence, *[LANG.eos_id] * (LANG.width - len(sentence))]
        looped = np.stack([LANG.next_token_probs(row[:k]) for k in range(LANG.width)])  # (W, V)
        assert np.allclose(LANG.all_next_token_probs(sentence), looped, rtol=0, atol=1e-12)
        assert np.allclose(LANG.all_next_token_probs(row), looped, rtol=0, atol=1e-12)  # padding given too


@pytest.mark.parametrize("text", ["the cat sleeps", "the small cat near the dogs sleep .", "the cat sleeps . ."])
def test_all_next_token_probs_of_a_non_sentence_raises(text):
    with pytest.raises(ValueError, match="not a sentence of the language"):
        LANG.all_next_token_probs(LANG.encode(text))


def test_the_counting_language_counts_one_pass_per_call():
    from helpers.language.toylang import CountingLanguage
    from helpers.solutions import sample_sentence

    sampling, known = CountingLanguage(LANG), CountingLanguage(LANG)
    sentence = sample_sentence(sampling, np.random.default_rng(7))  # one call per token, <eos> included
    assert sentence == sample_sentence(LANG, np.random.default_rng(7))  # the same draws as LANG itself
    assert sampling.passes == len(sentence) + 1 and sampling.eos_id == LANG.eos_id
    assert np.array_equal(known.all_next_token_probs(sentence), LANG.all_next_token_probs(sentence))
    assert known.passes == 1
    with pytest.raises(ValueError, match="must be a ToyLanguage"):
        CountingLanguage("LANG")


# ---------------------------------------------------------------- valid input of every kind still works


def test_ids_are_accepted_as_lists_tuples_arrays_and_tensors():
    words = LANG.encode("the cat sleeps .")
    for form in (words, tuple(words), np.array(words), np.array(words, dtype=np.uint8), torch.tensor(words)):
        assert LANG.decode(form) == "the cat sleeps ."
        assert LANG.prob(form) == LANG.prob(words) > 0
    assert LANG.decode([]) == "" and LANG.decode(np.array([])) == ""
    assert LANG.is_valid([np.int64(w) for w in words])


def test_the_module_split_keeps_the_public_names():
    from helpers.language import documents, grammar, toylang

    assert toylang.Grammar is grammar.Grammar and isinstance(LANG, ToyLanguage)
    assert isinstance(LANG, documents.DocumentMixin) and isinstance(LANG.grammar, Grammar)
    assert len(ToyLanguage(Grammar()).vocab) == len(LANG.vocab)


def test_the_helpers_modules_stay_small():
    from pathlib import Path

    import helpers

    root = Path(helpers.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 40  # every module of the package, its subpackages included
    too_long = {str(p.relative_to(root)): n for p in modules if (n := len(p.read_text().splitlines())) > 350}
    assert not too_long, f"one idea per module of at most 350 lines: {too_long}"


# ---------------------------------------------------------------- bad input: a clear error naming what is allowed

IDS = r"ids must be a 1-D sequence of int token ids in \[0, 55\)"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: LANG.decode([1.7, 3.2]), IDS + r".*got an element 1\.7"),
        (lambda: LANG.decode(np.array([1.7, 3.2])), IDS + r".*dtype float64"),
        (lambda: LANG.decode(np.array([[3, 4], [5, 6]])), IDS + r" \(one sequence at a time\).*shape \(2, 2\)"),
        (lambda: LANG.decode(torch.zeros(2, 3, dtype=torch.long)), IDS + r".*shape \(2, 3\)"),
        (lambda: LANG.decode([[3, 4]]), IDS + r".*got an element \[3, 4\]"),
        (lambda: LANG.decode(None), IDS + r"; got NoneType"),
        (lambda: LANG.decode(5), IDS + r"; got int"),
        (lambda: LANG.decode("the cat"), IDS + r"; got str"),
        (lambda: LANG.decode([True, 3]), IDS + r".*got an element True"),
        (lambda: LANG.decode(np.array([True, False])), IDS + r".*dtype bool"),
        (lambda: LANG.decode([0, 55]), r"token id 55 out of range; ids must be in \[0, 55\)"),
        (lambda: LANG.encode(None), r"encode expects a str, got NoneType"),
        (lambda: LANG.encode(3), r"encode expects a str, got int"),
        (lambda: LANG.prob([3.0, 4.0]), IDS + r".*got an element 3\.0"),
        (lambda: LANG.prob(np.array([[3, 4]])), IDS + r".*shape \(1, 2\)"),
        (lambda: LANG.prob([float("nan")]), IDS + r".*got an element nan"),
        (lambda: LANG.is_valid([False]), IDS + r".*got an element False"),
        (lambda: LANG.is_valid(None), IDS),
        (lambda: LANG.next_token_probs([3.5]), IDS + r".*got an element 3\.5"),
        (lambda: LANG.next_token_probs(None), IDS),
        (lambda: LANG.conditional(1.5, {}), r"position must be an int in \[0, 11\], got 1\.5"),
        (lambda: LANG.conditional(True, {}), r"position must be an int in \[0, 11\], got True"),
        (lambda: LANG.conditional(float("nan"), {}), r"position must be an int in \[0, 11\], got nan"),
        (lambda: LANG.conditional(-1, {}), r"position -1 out of range; positions are 0 \.\. 11"),
        (lambda: LANG.conditional(2, {0.5: 3}), r"visible position must be an int in \[0, 11\], got 0\.5"),
        (lambda: LANG.conditional(2, {0: 3.7}), r"the token at visible position 0 must be .*got an element 3\.7"),
        (lambda: LANG.conditional(2, {0: True}), r"the token at visible position 0 must be .*got an element True"),
        (lambda: LANG.conditional(2, [(0, 3)]), r"visible must be a dict \{position: token id\}, got list"),
        (lambda: LANG.conditional(2, None), r"visible must be a dict"),
        (lambda: LANG.parallel_fill_validity({0: 99}), r"token id 99 out of range"),
        (lambda: LANG.parallel_fill_validity([1, 2]), r"visible must be a dict"),
        (lambda: LANG.order_conditionals([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), r"order entry must be an int"),
        (lambda: LANG.order_conditionals(np.arange(24).reshape(2, 12)), r"order must be a permutation of 0 \.\. 11"),
        (lambda: LANG.sample(2.0), r"n \(the number of sentences\) must be an int >= 0, got 2\.0"),
        (lambda: LANG.sample(True), r"n \(the number of sentences\) must be an int >= 0, got True"),
        (lambda: LANG.sample(2, seed=1.5), r"seed \(None, an int >= 0, or a list of them\) must be an int >= 0"),
        (lambda: LANG.sample(2, seed=-1), r"seed .* must be an int >= 0, got -1"),
        (lambda: LANG.sample_documents(2.5, 8), r"n \(the number of documents\) must be an int >= 0, got 2\.5"),
        (lambda: LANG.sample_documents(2, 8.0), r"document length must be an int >= 2, got 8\.0"),
        (lambda: LANG.sample_documents(2, True), r"document length must be an int >= 2, got True"),
        (lambda: LANG.sample_documents(2, 8, seed=[0, 1.5]), r"seed .* must be an int >= 0, got 1\.5"),
        (lambda: LANG.document_prob([1.0, 3.0]), IDS + r".*got an element 1\.0"),
        (lambda: LANG.document_prob(LANG.sample_documents(2, 8, seed=0)), IDS + r".*shape \(2, 8\)"),
        (lambda: LANG.document_prob(None), IDS),
        (lambda: LANG.document_is_valid([1, 99]), r"token id 99 out of range"),
        (lambda: LANG.document_next_token_probs([1], 8.5), r"document length must be an int >= 2, got 8\.5"),
        (lambda: LANG.document_next_token_probs([1.0], 8), IDS),
        (lambda: LANG.document_entropy_bits(True), r"document length must be an int >= 2, got True"),
        (lambda: LANG.document_marginals(3.0), r"document length must be an int >= 2, got 3\.0"),
        (lambda: LANG.document_parallel_fill_validity(None), r"pass marginals \(L, V\)"),
        (
            lambda: LANG.document_parallel_fill_validity(np.full((4, 55), np.nan)),
            r"marginals must be finite and >= 0",
        ),
        (lambda: LANG.document_parallel_fill_validity(-np.ones((4, 55))), r"marginals must be finite and >= 0"),
        (lambda: LANG.document_parallel_fill_validity(np.full((4, 55), "a")), r"array of real numbers"),
        (
            lambda: LANG.contains(np.zeros((3, 12)) + 0.5),
            r"rows must hold int token ids in \[0, 55\), got dtype float64",
        ),
        (lambda: LANG.contains(np.zeros((3, 12), dtype=bool)), r"rows must hold int token ids .* got dtype bool"),
        (lambda: LANG.contains(np.zeros(12, dtype=int)), r"rows must have shape \(N, 12\), got \(12,\)"),
        (lambda: LANG.contains(np.full((1, 12), 55)), r"token ids must be in \[0, 55\)"),
        (lambda: LANG.contains(None), r"rows must have shape \(N, 12\)"),
        (lambda: ToyLanguage(grammar="english"), r"grammar must be None or a helpers\.language\.Grammar"),
    ],
)
def test_every_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_contains_accepts_tensors_and_unsigned_rows():
    tokens, _ = LANG.support()
    rows = tokens[:5]
    assert LANG.contains(rows).all() and LANG.contains(rows.astype(np.uint8)).all()
    assert LANG.contains(torch.tensor(rows)).all()
