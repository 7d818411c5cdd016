"""Checks for notebook 01: a chain-rule sampler and a chain-rule probability, against the toy
language's exact distribution."""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from helpers.exercises.report import Failed, TooManyCalls, call, run_check
from helpers.exercises.second_language import Reweighted, reads_global_lang, second_language_probs
from helpers.language.toylang import LANG

N_DRAWS = 4000  # sentences drawn from the learner's sampler
NOISE_REPLICAS = 40  # exact samplers of the same size, for the expected TV
CALLS_PER_SENTENCE = 4 * (LANG.width + 1)  # a loop that asks more often than this does not stop
REPLAYED = 20  # draws typed again from the same seed: every random draw must come from rng
KINDS = {"statement": None, "question": ("do", "does"), "travel": ("alice", "bob", "carol", "dave")}
# The hints say what is wrong and name the concept; none spells out the sampling loop.
SAMPLE_HINT = (
    "lang.next_token_probs(prefix) takes the list of token ids typed so far and returns a (V,) array of "
    "probabilities; rng is a numpy Generator"
)
INVALID_HINT = "some token was impossible after the tokens typed before it: a sentence is typed by the chain rule"
SAME_HINT = "your sampler chooses each token instead of drawing it at random"
TOO_FAR_HINT = "some tokens come out more often, others less often, than their probabilities say"
# A second language, LANG's sentences with other probabilities (helpers.exercises.second_language): a
# function that reads the notebook's global LANG instead of the `lang` it is given gets LANG's numbers there.
SECOND_DRAWS = 1000  # from the second language: a sampler of LANG lands 10 noise sd off (the limit is 4)
SECOND_SENTENCES = 100  # sentences scored under it
SECOND = "a second language with LANG's sentences and other probabilities"
GLOBAL_LANG_HINT = (
    "use the `lang` you are given, not the notebook's global LANG: the check hands your function a language "
    "whose probabilities differ from LANG's"
)
OTHER_LANG_HINT = (
    "take every probability from the `lang` your function is given: the check also hands it a language whose "
    "probabilities differ from LANG's"
)


class ChainRuleOnly:
    """The toy language as these exercises may use it: next_token_probs (budgeted per call of the
    learner's function), eos_id, vocab, encode and decode. Its shortcuts (prob, sample, ...) are hidden."""

    def __init__(self, lang=LANG):
        self._lang = lang
        self.vocab, self.eos_id, self.bos_id, self.mask_id = lang.vocab, lang.eos_id, lang.bos_id, lang.mask_id
        self.encode, self.decode = lang.encode, lang.decode
        self.calls_left = CALLS_PER_SENTENCE

    def next_token_probs(self, prefix) -> np.ndarray:
        self.calls_left -= 1
        if self.calls_left < 0:
            raise TooManyCalls(
                f"lang.next_token_probs was called more than {CALLS_PER_SENTENCE} times for one sentence",
                "stop as soon as you draw lang.eos_id; every sentence of the language is at most 11 words",
            )
        return self._lang.next_token_probs(prefix)

    def __getattr__(self, name: str):
        raise AttributeError(f"lang.{name} is hidden in this exercise: use lang.next_token_probs and lang.eos_id")


def _second_hint(fn) -> str:
    return GLOBAL_LANG_HINT if reads_global_lang(fn) else OTHER_LANG_HINT


def as_ids(value, case: str) -> list[int]:
    try:
        ids = [int(t) for t in value]
    except (TypeError, ValueError):
        raise Failed(
            f"returned {type(value).__name__} {value!r:.60}, not a list of token ids ({case})",
            "return the words as a list of ints, e.g. [3, 4, 5, 6] for 'the cat sleeps .'",
        ) from None
    if any(not 0 <= t < len(LANG.vocab) for t in ids):
        raise Failed(f"returned ids outside 0 .. {len(LANG.vocab) - 1} ({case})", "return token ids of LANG.vocab")
    return ids


@cache
def _support_index() -> tuple[dict[tuple[int, ...], int], np.ndarray]:
    """Row of every sentence in the support, and the kind of each row (0 statement, 1 question, 2 travel)."""
    tokens, _ = LANG.support()
    index = {
        tuple(int(t) for t in row[:n]): i for i, (row, n) in enumerate(zip(tokens, LANG.sentence_lengths, strict=True))
    }
    kind = np.zeros(len(tokens), dtype=int)
    for k, words in enumerate(KINDS.values()):
        if words is not None:
            kind[np.isin(tokens[:, 0], LANG.encode(" ".join(words)))] = k
    return index, kind


@cache
def _tv_noise(n: int, second: bool = False) -> tuple[float, float]:
    """Mean and standard deviation of the TV distance of an exact sampler's n draws, from LANG or
    from the second language."""
    probs = second_language_probs() if second else LANG.support()[1]
    tvs = [
        _tv(np.random.default_rng(1000 + r).choice(len(probs), size=n, p=probs), probs) for r in range(NOISE_REPLICAS)
    ]
    return float(np.mean(tvs)), float(np.std(tvs, ddof=1))


def _tv(rows: np.ndarray, probs: np.ndarray) -> float:
    """TV distance between the draws' frequencies (rows: support indices) and the exact probs."""
    return 0.5 * float(np.abs(np.bincount(rows, minlength=len(probs)) / len(rows) - probs).sum())


def _draws(fn, lang, rng, n: int, label: str = "") -> np.ndarray:
    """Type n sentences with fn(lang, rng); each must be a sentence of the language, without <eos>.
    Returns their support indices. label names the language in the cases (empty: LANG)."""
    index, _ = _support_index()
    rows = np.empty(n, dtype=int)
    for i in range(n):
        lang.calls_left = CALLS_PER_SENTENCE
        case = f"draw {i + 1}{label}"
        ids = as_ids(call(fn, lang, rng, case=case, hint=SAMPLE_HINT), case)
        if LANG.eos_id in ids:
            raise Failed(
                f"{case} contains <eos>: {LANG.decode(ids)!r}",
                "<eos> ends the sentence: stop when you draw it, and return only the words before it",
            )
        if tuple(ids) not in index:
            raise Failed(f"{case} is {LANG.decode(ids)!r}, which the language never produces", INVALID_HINT)
        rows[i] = index[tuple(ids)]
    return rows


def _sampler_report(fn) -> str:
    rows = _draws(fn, ChainRuleOnly(), np.random.default_rng(0), N_DRAWS)
    _, kind = _support_index()
    _same_seed_same_sentences(fn, rows[:REPLAYED])
    _, probs = LANG.support()
    if np.all(rows == rows[0]):
        raise Failed(f"all {N_DRAWS:,} draws are the same sentence, {LANG.decode(tokens_of(rows[0]))!r}", SAME_HINT)
    tv = _tv(rows, probs)
    mean, sd = _tv_noise(N_DRAWS)
    if tv > mean + 4 * sd:
        raise Failed(
            f"TV distance {tv:.3f} from the exact distribution; sampling noise alone gives {mean:.3f} ± {sd:.3f}",
            TOO_FAR_HINT,
        )
    shares = []
    for k, name in enumerate(KINDS):
        exact, measured = probs[kind == k].sum(), np.mean(kind[rows] == k)
        se = math.sqrt(exact * (1 - exact) / N_DRAWS)
        if abs(measured - exact) > 4 * se:
            raise Failed(f"{name}s are {measured:.3f} of your draws; exactly {exact:.3f} ± {se:.3f}", TOO_FAR_HINT)
        shares.append(f"{measured:.3f}")
    _second_language_draws(fn)
    return (
        f"{N_DRAWS:,} sentences, all valid, reproducible from the seed; "
        f"TV distance {tv:.3f} from the exact distribution (an exact sampler: {mean:.3f} ± {sd:.3f}); "
        "statements, questions, travel: "
        f"{', '.join(shares)} (exact 0.500, 0.200, 0.300)"
    )


def _second_language_draws(fn) -> None:
    """Draw from the second language: the sentences must follow its probabilities, not LANG's."""
    rows = _draws(fn, ChainRuleOnly(Reweighted()), np.random.default_rng(1), SECOND_DRAWS, f" from {SECOND}")
    tv = _tv(rows, second_language_probs())
    mean, sd = _tv_noise(SECOND_DRAWS, second=True)
    if tv > mean + 4 * sd:
        raise Failed(
            f"on {SECOND}, your {SECOND_DRAWS:,} draws are at TV distance {tv:.3f} from its exact distribution; "
            f"sampling noise alone gives {mean:.3f} ± {sd:.3f}",
            _second_hint(fn),
        )


def _same_seed_same_sentences(fn, rows: np.ndarray) -> None:
    """Type the first sentences again from a fresh rng of the same seed: they must come out the same."""
    lang, rng = ChainRuleOnly(), np.random.default_rng(0)
    for i, row in enumerate(rows):
        lang.calls_left = CALLS_PER_SENTENCE
        again = as_ids(call(fn, lang, rng, case=f"draw {i + 1} again", hint=SAMPLE_HINT), f"draw {i + 1} again")
        if again != tokens_of(row):
            raise Failed(
                f"the same seed typed other sentences: draw {i + 1} was {LANG.decode(tokens_of(row))!r}, "
                f"then {LANG.decode(again)!r}",
                "take every random draw from rng, the Generator passed in (not np.random or the random module): "
                "then a seed reproduces the sentences",
            )


def tokens_of(row: int) -> list[int]:
    tokens, _ = LANG.support()
    return [int(t) for t in tokens[row, : LANG.sentence_lengths[row]]]


def check_sample_sentence(fn) -> bool:
    """Draw 4,000 sentences with `fn(lang, rng)` and compare them with the exact distribution."""
    return run_check("sample_sentence", fn, _sampler_report)


IMPOSSIBLE = (
    "the small cat near the dogs sleep .",  # agreement broken
    "alice flew from new diego to san york .",  # cities broken
    "the cat sleeps",  # a prefix of a sentence, not a sentence
    "the cat sleeps . .",  # a word after the end
    "",  # no words at all
)
# As above: what is wrong and the concept, never the loop or the formula that fixes it.
LOG_HINT = "that is not log2 of this sentence's chain-rule product, its final <eos> factor included"
RAISED_HINT = (
    "if it is lang.next_token_probs that refuses a prefix that no sentence starts with, or math.log2 that "
    "refuses 0: a factor of 0 already made the sentence impossible"
)


def _log2prob_report(fn) -> str:
    lang = ChainRuleOnly()
    sentences = [list(s) for s in LANG.sample(300, seed=7)] + [LANG.encode(t) if t else [] for t in IMPOSSIBLE]
    worst = 0.0
    for ids in sentences:
        lang.calls_left = CALLS_PER_SENTENCE
        text = LANG.decode(ids) or "(no words)"
        got = call(fn, lang, list(ids), case=f"on {text!r}", hint=RAISED_HINT)
        try:
            got = float(got)
        except (TypeError, ValueError):
            raise Failed(f"returned {type(got).__name__}, not a number (on {text!r})", "return a float") from None
        p = LANG.prob(ids)
        exact = math.log2(p) if p > 0 else -math.inf
        if exact == -math.inf:
            if got != -math.inf:
                hint = "a sentence with a factor of 0 has probability 0, and log2 0 is -inf"
                if text == "the cat sleeps":
                    hint = "a prefix of a sentence is not a sentence: the chain ends with the factor P(<eos> | words)"
                raise Failed(f"log2 P({text!r}) is -inf (probability 0); you returned {got:.4g}", hint)
            continue
        if abs(got - exact) <= 1e-9:
            worst = max(worst, abs(got - exact))
            continue
        if abs(got - exact * math.log(2)) <= 1e-9:
            hint = "that is the natural logarithm; bits are logarithms in base 2"
        elif got > 0 and abs(got - p) <= 1e-12:
            hint = "that is the probability itself: return its log2"
        else:
            hint = LOG_HINT
        raise Failed(f"log2 P({text!r}) = {exact:.6f}, you returned {got:.6f}", hint)
    _second_language_scores(fn)
    return (
        f"{len(sentences) - len(IMPOSSIBLE)} sentences within {max(worst, 1e-16):.0e} bits of log2 LANG.prob; "
        f"-inf for all {len(IMPOSSIBLE)} impossible ones (broken agreement and cities, an unfinished sentence, "
        "a word after the end, no words)"
    )


def _second_language_scores(fn) -> None:
    """Score sentences under the second language: the numbers must be its own, not LANG's."""
    lang, (index, _), probs = ChainRuleOnly(Reweighted()), _support_index(), second_language_probs()
    for ids in LANG.sample(SECOND_SENTENCES, seed=8):
        lang.calls_left = CALLS_PER_SENTENCE
        text = LANG.decode(ids)
        case = f"on {text!r}, in {SECOND}"
        got = call(fn, lang, list(ids), case=case, hint=RAISED_HINT)
        try:
            got = float(got)
        except (TypeError, ValueError):
            raise Failed(f"returned {type(got).__name__}, not a number ({case})", "return a float") from None
        exact = math.log2(probs[index[tuple(ids)]])
        if not abs(got - exact) <= 1e-9:
            raise Failed(f"log2 P({text!r}) = {exact:.6f} under {SECOND}; you returned {got:.6f}", _second_hint(fn))


def check_sentence_log2prob(fn) -> bool:
    """Compare `fn(lang, ids)` with log2 of the exact probability on 305 sentences, 5 of them impossible."""
    return run_check("sentence_log2prob", fn, _log2prob_report)
