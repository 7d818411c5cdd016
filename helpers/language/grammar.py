"""The grammar of the toy language: its words and weights, and every sentence it derives.

There are three kinds of sentence, and each hides a dependency that parallel decoding can break:

    statement   the small cat near the dogs sleeps .      verb agrees with "cat", not "dogs"
    question    do some girls behind the bird chase the cat ?
                                                          "do" fixes the plural noun, the bare
                                                          verb and the final "?" far away
    travel      alice flew from new york to san diego .   city names are two words whose
                                                          halves must match: no "new diego"

`sentence_phrases(Grammar())` lists every sentence with its exact probability;
helpers.language.toylang.ToyLanguage turns that list into token ids and exact distributions.
"""

from __future__ import annotations

import itertools

Phrases = list[tuple[tuple[str, ...], float]]  # a distribution over word sequences


def _words(weights: dict) -> Phrases:
    """A choice between words (str keys) or fixed word sequences (tuple keys)."""
    total = sum(weights.values())
    return [((w,) if isinstance(w, str) else w, p / total) for w, p in weights.items()]


def _then(*parts: Phrases) -> Phrases:
    """Concatenate independent parts: the cartesian product, probabilities multiplied."""
    out: Phrases = [((), 1.0)]
    for part in parts:
        out = [(a + b, pa * pb) for (a, pa), (b, pb) in itertools.product(out, part)]
    return out


def _one_of(*options: tuple[float, Phrases]) -> Phrases:
    total = sum(w for w, _ in options)
    return [(ph, w / total * p) for w, opt in options for ph, p in opt]


def _maybe(prob: float, part: Phrases) -> Phrases:
    return _one_of((1 - prob, [((), 1.0)]), (prob, part))


class Grammar:
    """Words and weights of the default language (weights are relative within each dict)."""

    nouns = {"cat": "cats", "dog": "dogs", "bird": "birds", "girl": "girls", "teacher": "teachers"}
    noun_weights = {"cat": 0.30, "dog": 0.25, "bird": 0.20, "girl": 0.15, "teacher": 0.10}
    adjectives = {"small": 0.40, "big": 0.35, "old": 0.25}
    p_adjective = 0.3
    det_singular = {"the": 0.75, "a": 0.25}
    det_plural = {"the": 0.75, "some": 0.25}
    prepositions = {"near": 0.6, "behind": 0.4}
    p_prep_phrase = 0.35  # the phrase whose noun tempts the verb into the wrong number
    intransitive = {"sleeps": ("sleep", 0.40), "runs": ("run", 0.35), "sings": ("sing", 0.25)}
    transitive = {"sees": ("see", 0.40), "likes": ("like", 0.35), "chases": ("chase", 0.25)}
    p_transitive = 0.5
    p_plural = 0.4
    names = {"alice": 0.3, "bob": 0.3, "carol": 0.2, "dave": 0.2}
    cities = {
        ("new", "york"): 0.20,
        ("new", "orleans"): 0.10,
        ("los", "angeles"): 0.15,
        ("las", "vegas"): 0.10,
        ("san", "diego"): 0.15,
        ("san", "francisco"): 0.15,
        ("san", "jose"): 0.15,
    }
    sentence_kinds = {"statement": 0.5, "question": 0.2, "travel": 0.3}


def sentence_phrases(g: Grammar) -> Phrases:
    """Every sentence of grammar `g` as (words, exact probability), one entry per derivation."""
    plural_noun = {g.nouns[n]: w for n, w in g.noun_weights.items()}

    def noun(plural: bool) -> Phrases:
        return _words(plural_noun if plural else g.noun_weights)

    def any_noun() -> Phrases:
        return _one_of((1 - g.p_plural, noun(False)), (g.p_plural, noun(True)))

    def subject(plural: bool) -> Phrases:
        det = _words(g.det_plural if plural else g.det_singular)
        return _then(det, _maybe(g.p_adjective, _words(g.adjectives)), noun(plural))

    prep_phrase = _maybe(g.p_prep_phrase, _then(_words(g.prepositions), _words({"the": 1}), any_noun()))

    def verb_phrase(form: str) -> Phrases:  # form: "singular", "plural" (= bare)
        def pick(table):
            return _words({(v if form == "singular" else bare): w for v, (bare, w) in table.items()})

        obj = _then(_words({"the": 1}), any_noun())
        return _one_of(
            (1 - g.p_transitive, pick(g.intransitive)),
            (g.p_transitive, _then(pick(g.transitive), obj)),
        )

    def statement(plural: bool) -> Phrases:
        form = "plural" if plural else "singular"
        return _then(subject(plural), prep_phrase, verb_phrase(form), _words({".": 1}))

    def question(plural: bool) -> Phrases:
        aux = _words({"do" if plural else "does": 1})
        return _then(aux, subject(plural), prep_phrase, verb_phrase("plural"), _words({"?": 1}))

    def number_split(make) -> Phrases:
        return _one_of((1 - g.p_plural, make(False)), (g.p_plural, make(True)))

    city = _words(g.cities)
    travel = _then(_words(g.names), _words({("flew", "from"): 1}), city, _words({"to": 1}), city, _words({".": 1}))
    kinds = {"statement": number_split(statement), "question": number_split(question), "travel": travel}
    return _one_of(*((g.sentence_kinds[k], kinds[k]) for k in g.sentence_kinds))
