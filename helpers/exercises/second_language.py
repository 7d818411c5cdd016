"""The second language of notebook 01's checks: LANG's sentences with other probabilities. A
learner's function that reads the notebook's global LANG instead of the `lang` it is handed gets
LANG's numbers on it, and fails; reads_global_lang tells whether its code names LANG."""

from __future__ import annotations

import functools
import types
from functools import cache

import numpy as np

from helpers.language.toylang import LANG

SHARPEN = 2.0  # each next-token distribution of LANG, squared and renormalised over the same tokens


class Reweighted:
    """LANG with each next-token distribution raised to the power SHARPEN and renormalised over
    the tokens LANG allows: the same sentences, other probabilities. The exact probability of a
    sentence is the product of these factors (second_language_probs)."""

    def __init__(self, lang=LANG, power: float = SHARPEN):
        if not power > 0:
            raise ValueError(f"power must be > 0 (0 would make every allowed token equally likely), got {power!r}")
        self._lang, self.power = lang, power
        self.vocab, self.eos_id, self.bos_id, self.mask_id = lang.vocab, lang.eos_id, lang.bos_id, lang.mask_id
        self.encode, self.decode = lang.encode, lang.decode

    def next_token_probs(self, prefix) -> np.ndarray:
        weights = self._lang.next_token_probs(prefix) ** self.power  # 0 stays 0: the same allowed tokens
        return weights / weights.sum()


@cache
def second_language_probs() -> np.ndarray:
    """P of every sentence of LANG.support() under Reweighted(): the product of its reweighted
    next-token factors, all sentences at once. The support is sorted, so the sentences that share
    a prefix form one run of rows, and P(x_k | x_<k) is the run mass of x_<=k over that of x_<k."""
    tokens, probs = LANG.support()
    log_p = np.zeros(len(probs))
    run = np.zeros(len(probs), dtype=np.int64)  # the run of each row's prefix x_<k (k = 0: one run)
    starts = np.zeros(len(probs) - 1, dtype=bool)  # where a new run of x_<k begins
    for k in range(tokens.shape[1]):  # positions after <eos> hold <eos>, a factor 1 both ways
        starts |= tokens[1:, k] != tokens[:-1, k]
        longer = np.concatenate([[0], np.cumsum(starts)])  # the run of each row's prefix x_<=k
        factor = np.bincount(longer, weights=probs)[longer] / np.bincount(run, weights=probs)[run]  # P(x_k | x_<k)
        first = np.flatnonzero(np.concatenate([[True], starts]))  # one row per run of x_<=k: one per allowed x_k
        norm = np.bincount(run[first], weights=factor[first] ** SHARPEN)  # per run of x_<k: the sum to divide by
        log_p += SHARPEN * np.log(factor) - np.log(norm[run])
        run = longer
    return np.exp(log_p)


def reads_global_lang(fn) -> bool:
    """Whether fn's code reads the notebook's LANG (under that name or another, or one of its bound
    methods), in its own body, in the functions nested in it, or in functions of its module it calls."""
    while isinstance(fn, functools.partial | types.MethodType):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__func__
    seen, pending = set(), [fn]
    while pending:
        function = pending.pop()
        code = getattr(function, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        namespace = getattr(function, "__globals__", {})
        cells = [c.cell_contents for c in getattr(function, "__closure__", None) or () if _filled(c)]
        for name in _names(code):
            value = namespace.get(name)
            if name == "LANG" or _is_lang(value):
                return True
            if isinstance(value, types.FunctionType) and value.__globals__ is namespace:
                pending.append(value)  # a helper of the learner's, defined beside the function
        if any(_is_lang(value) for value in cells):
            return True
        pending += [value for value in cells if isinstance(value, types.FunctionType)]
    return False


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object reads, its nested code objects included."""
    names, pending = set(), [code]
    while pending:
        code = pending.pop()
        names |= set(code.co_names)
        pending += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def _is_lang(value) -> bool:
    return value is LANG or getattr(value, "__self__", None) is LANG


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True
