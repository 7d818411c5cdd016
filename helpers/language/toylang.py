"""A toy English whose probability distribution is known exactly.

Real text has no known distribution, so no model of it can be checked against the truth.
This language is small enough to enumerate: every sentence it can produce, with its exact
probability, fits in one array. From that array we get exact next-token distributions, exact
conditionals given any set of visible positions, and the exact entropy: the floor under the
loss of every model in the course.

The grammar (its words and weights, every sentence it derives) is in grammar, the documents the
models are trained on in documents; ToyLanguage joins them, and `from helpers.language import LANG`
is all a notebook needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

import numpy as np

from helpers.common.validation import check_int
from helpers.language.documents import DocumentMixin
from helpers.language.grammar import Grammar, Phrases, sentence_phrases

__all__ = ["LANG", "CountingLanguage", "Grammar", "ToyLanguage"]


class ToyLanguage(DocumentMixin):
    """The exact distribution over sentences and documents of a finite grammar.

    Sentences are handled as fixed-width rows of `width` token ids: the words, then `<eos>`
    padding (at least one). Positions in `conditional` and `next_token_probs` index that row.
    """

    EOS, BOS, MASK = "<eos>", "<bos>", "<mask>"
    TERMINALS = (".", "?")

    def __init__(self, grammar: Grammar | None = None):
        if grammar is not None and not isinstance(grammar, Grammar):
            raise ValueError(f"grammar must be None or a helpers.language.Grammar, got {type(grammar).__name__}")
        self.grammar = grammar or Grammar()
        phrases = self._sentence_phrases()
        words: list[str] = [self.EOS, self.BOS, self.MASK]
        for phrase, _ in phrases:
            words.extend(w for w in phrase if w not in words)
        self.vocab: list[str] = words
        self.stoi = {w: i for i, w in enumerate(words)}
        self.eos_id, self.bos_id, self.mask_id = 0, 1, 2
        self.terminal_ids = tuple(self.stoi[t] for t in self.TERMINALS)
        self.max_sentence_tokens = max(len(ph) for ph, _ in phrases)
        self.width = self.max_sentence_tokens + 1
        self._phrases = phrases

    def _sentence_phrases(self) -> Phrases:
        return sentence_phrases(self.grammar)

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str) -> list[int]:
        """Words separated by spaces -> ids. Unknown words raise ValueError."""
        if not isinstance(text, str):
            raise ValueError(f"encode expects a str, got {type(text).__name__}")
        ids = []
        for word in text.split():
            if word not in self.stoi:
                raise ValueError(f"unknown word {word!r}; allowed words are LANG.vocab ({len(self.vocab)} words)")
            ids.append(self.stoi[word])
        return ids

    def decode(self, ids) -> str:
        """Ids -> words separated by spaces (special tokens included, so encode(decode(x)) == x)."""
        return " ".join(self.vocab[i] for i in self._check_ids(ids))

    def _check_ids(self, ids, name: str = "ids") -> list[int]:
        """One sequence of token ids (a list, tuple, 1-D numpy array or 1-D torch tensor of ints,
        never bools or floats), each in [0, V); returned as a list of Python ints."""
        allowed = f"a 1-D sequence of int token ids in [0, {len(self.vocab)})"
        if hasattr(ids, "detach"):  # a torch tensor, on any device
            ids = ids.detach().cpu().numpy()
        if isinstance(ids, list | tuple):
            for i in ids:
                if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer):
                    raise ValueError(f"{name} must be {allowed} (one sequence at a time); got an element {i!r}")
            ids = [int(i) for i in ids]
        elif isinstance(ids, np.ndarray):
            if ids.ndim != 1 or (ids.dtype.kind not in "iu" and ids.size):
                raise ValueError(
                    f"{name} must be {allowed} (one sequence at a time); "
                    f"got an array of dtype {ids.dtype} and shape {ids.shape}"
                )
            ids = ids.tolist()
        else:
            raise ValueError(f"{name} must be {allowed}; got {type(ids).__name__}")
        bad = [i for i in ids if not 0 <= i < len(self.vocab)]
        if bad:
            raise ValueError(f"token id {bad[0]} out of range; ids must be in [0, {len(self.vocab)})")
        return ids

    def _check_position(self, position, name: str = "position") -> int:
        """A position of a sentence row: an int in [0, width)."""
        if isinstance(position, bool | np.bool_) or not isinstance(position, int | np.integer):
            raise ValueError(f"{name} must be an int in [0, {self.width - 1}], got {position!r}")
        if not 0 <= position < self.width:
            raise ValueError(f"{name} {position} out of range; positions are 0 .. {self.width - 1}")
        return int(position)

    def _check_visible(self, visible) -> dict[int, int]:
        """{position: token id} with int positions in [0, width) and ids in [0, V)."""
        if not isinstance(visible, Mapping):
            raise ValueError(f"visible must be a dict {{position: token id}}, got {type(visible).__name__}")
        checked = {}
        for pos, tok in visible.items():
            pos = self._check_position(pos, "visible position")
            checked[pos] = self._check_ids([tok], f"the token at visible position {pos}")[0]
        return checked

    @staticmethod
    def _check_seed(seed):
        """None, an int >= 0, a list/tuple of ints >= 0, or a numpy Generator / SeedSequence."""
        if seed is None or isinstance(seed, np.random.Generator | np.random.SeedSequence | np.random.BitGenerator):
            return seed
        for part in seed if isinstance(seed, list | tuple) and seed else [seed]:
            check_int(part, "seed (None, an int >= 0, or a list of them)", minimum=0)
        return seed

    # ------------------------------------------------------------------ sentences
    @cached_property
    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        rows = np.full((len(self._phrases), self.width), self.eos_id, dtype=np.int64)
        probs = np.empty(len(self._phrases))
        for r, (phrase, p) in enumerate(self._phrases):
            rows[r, : len(phrase)] = [self.stoi[w] for w in phrase]
            probs[r] = p
        order = np.lexsort(rows.T[::-1])  # lexicographic by position 0, 1, ...
        rows, probs = rows[order], probs[order]
        if np.any(np.all(rows[1:] == rows[:-1], axis=1)):
            raise RuntimeError("grammar is ambiguous: a sentence has two derivations")
        rows.setflags(write=False)
        probs.setflags(write=False)
        return rows, probs

    def support(self) -> tuple[np.ndarray, np.ndarray]:
        """Every sentence as a row of ids (S, width), eos-padded, sorted; and its exact P (S,)."""
        return self._table

    @cached_property
    def _index(self) -> dict[tuple[int, ...], float]:
        tokens, probs = self._table
        eos = self.eos_id
        return {tuple(t for t in row if t != eos): p for row, p in zip(tokens.tolist(), probs.tolist(), strict=True)}

    @cached_property
    def sentence_lengths(self) -> np.ndarray:
        """Number of words (punctuation included) of each support sentence (S,)."""
        return (self._table[0] != self.eos_id).sum(axis=1)

    def _strip(self, ids) -> tuple[int, ...] | None:
        """Words of a sentence given with or without eos padding; None if eos is followed by a word."""
        ids = self._check_ids(ids)
        n = ids.index(self.eos_id) if self.eos_id in ids else len(ids)
        if any(i != self.eos_id for i in ids[n:]):
            return None
        return tuple(ids[:n])

    def prob(self, ids) -> float:
        """Exact probability of one sentence (trailing eos padding allowed); 0.0 if not in the language."""
        words = self._strip(ids)
        return 0.0 if words is None else self._index.get(words, 0.0)

    def is_valid(self, ids) -> bool:
        return self.prob(ids) > 0.0

    def conditional(self, position: int, visible: dict[int, int]) -> np.ndarray:
        """Exact distribution (V,) of the token at `position` of a sentence row given the
        tokens at any set of visible positions, in any order. Brute force over the support."""
        position = self._check_position(position)
        visible = self._check_visible(visible)
        tokens, probs = self._table
        keep = np.ones(len(probs), dtype=bool)
        for pos, tok in visible.items():
            keep &= tokens[:, pos] == tok
        mass = probs[keep].sum()
        if mass == 0.0:
            shown = {p: self.vocab[t] for p, t in sorted(visible.items())}
            raise ValueError(f"the visible tokens {shown} have probability 0 under the language")
        return np.bincount(tokens[keep, position], weights=probs[keep], minlength=len(self.vocab)) / mass

    def next_token_probs(self, prefix) -> np.ndarray:
        """Exact next-token distribution (V,) after a sentence prefix (ids, no bos)."""
        prefix = self._check_ids(prefix)
        if len(prefix) >= self.width:  # past the row: only padding can follow a finished sentence
            if self._strip(prefix) is None or not self.is_valid(prefix):
                raise ValueError(f"prefix {self.decode(prefix)!r} has probability 0 under the language")
            return np.eye(len(self.vocab))[self.eos_id]
        if len(prefix) <= 2:  # short prefixes are shared by long runs of rows: remember them
            key = tuple(prefix)
            if key not in self._short_prefix_probs:
                self._short_prefix_probs[key] = self._run_probs(prefix)
            return self._short_prefix_probs[key].copy()
        return self._run_probs(prefix)

    def _run_probs(self, prefix: list[int]) -> np.ndarray:
        # The support is sorted, so the sentences that start with `prefix` form one run of rows:
        # two binary searches find it (the same answer as conditional(), far faster).
        padding = self.width - len(prefix)
        keys = self._table_keys
        first = np.searchsorted(keys, bytes(prefix) + b"\x00" * padding, side="left")
        end = np.searchsorted(keys, bytes(prefix) + b"\xff" * padding, side="right")
        if first == end:
            raise ValueError(f"prefix {self.decode(prefix)!r} has probability 0 under the language")
        tokens, probs = self._table
        run = slice(first, end)
        return np.bincount(tokens[run, len(prefix)], weights=probs[run], minlength=len(self.vocab)) / probs[run].sum()

    def all_next_token_probs(self, ids) -> np.ndarray:
        """Every next-token distribution of a known sentence at once (teacher forcing, exactly): (width, V),
        row k is next_token_probs(row[:k]) for the sentence's row (its words, then eos padding)."""
        words = self._strip(ids)
        if words is None or not self.is_valid(words):
            raise ValueError(f"{self.decode(ids)!r} is not a sentence of the language")
        tokens, probs = self._table
        (S, W), V = tokens.shape, len(self.vocab)
        row = np.array([*words, *[self.eos_id] * (W - len(words))])  # (W,) the full row
        same = tokens == row  # (S, W) does support sentence s agree with ours at position k?
        agrees_before = np.cumprod(np.hstack([np.ones((S, 1), bool), same[:, :-1]]), axis=1)  # (S, W) on x_<k
        weight = agrees_before * probs[:, None]  # (S, W) mass of the sentences that share the prefix x_<k
        flat = (np.arange(W) * V + tokens).ravel()  # (S*W,) index of (position k, token at k)
        table = np.bincount(flat, weights=weight.ravel(), minlength=W * V).reshape(W, V)  # (W, V)
        return table / weight.sum(axis=0)[:, None]

    def order_conditionals(self, order) -> np.ndarray:
        """For every support sentence, the exact conditional of each token given the tokens
        before it in `order` (a permutation of the positions): (S, width), column k holds
        P(x[order[k]] | x[order[:k]]). Vectorised: sort by the permuted columns, and each
        conditional is a ratio of the masses of two prefix groups."""
        if hasattr(order, "detach"):
            order = order.detach().cpu().numpy()
        if not isinstance(order, list | tuple | np.ndarray | range) or np.ndim(order) != 1:
            raise ValueError(f"order must be a permutation of 0 .. {self.width - 1} (a 1-D sequence of ints)")
        order = [self._check_position(i, "order entry") for i in order]
        if sorted(order) != list(range(self.width)):
            raise ValueError(f"order must be a permutation of 0 .. {self.width - 1}, got {order}")
        tokens, probs = self._table
        permuted = tokens[:, order]
        rank = np.lexsort(permuted.T[::-1])
        permuted, sorted_probs = permuted[rank], probs[rank]
        conds = np.empty(permuted.shape)
        prev_mass = np.ones(len(probs))
        new_group = np.zeros(len(probs), dtype=bool)
        new_group[0] = True
        for k in range(self.width):
            new_group[1:] |= permuted[1:, k] != permuted[:-1, k]
            group_id = np.cumsum(new_group) - 1
            mass = np.bincount(group_id, weights=sorted_probs)[group_id]  # P(x[order[:k+1]])
            conds[:, k] = mass / prev_mass
            prev_mass = mass
        out = np.empty_like(conds)
        out[rank] = conds
        return out

    def contains(self, rows) -> np.ndarray:
        """Vectorised is_valid for many eos-padded sentence rows (N, width) -> bool (N,)."""
        if hasattr(rows, "detach"):  # a torch tensor, on any device
            rows = rows.detach().cpu().numpy()
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ValueError(f"rows must have shape (N, {self.width}), got {rows.shape}")
        if rows.dtype.kind not in "iu":
            raise ValueError(f"rows must hold int token ids in [0, {len(self.vocab)}), got dtype {rows.dtype}")
        if rows.size and (rows.min() < 0 or rows.max() >= len(self.vocab)):
            raise ValueError(f"token ids must be in [0, {len(self.vocab)})")
        keys = self._row_keys(rows)
        table = self._sorted_keys
        at = np.searchsorted(table, keys).clip(max=len(table) - 1)
        return table[at] == keys

    def _row_keys(self, rows: np.ndarray) -> np.ndarray:
        """One bytes key per row (uint8 per token) so rows compare with a single sort."""
        return np.ascontiguousarray(rows.astype(np.uint8)).view(f"S{self.width}").ravel()

    @cached_property
    def _sorted_keys(self) -> np.ndarray:
        return np.sort(self._row_keys(self._table[0]))

    @cached_property
    def _short_prefix_probs(self) -> dict[tuple[int, ...], np.ndarray]:
        return {}

    @cached_property
    def _table_keys(self) -> np.ndarray:
        """The rows' keys in table order, which is already sorted (ids < 256 as bytes)."""
        return self._row_keys(self._table[0])

    def parallel_fill_validity(self, visible: dict[int, int] | None = None) -> float:
        """Exact probability that filling every hidden position at once, each independently
        from its own exact conditional given `visible` (default: nothing visible), gives a
        sentence of the language: the sum over every valid completion of the product of the
        per-position conditionals."""
        visible = self._check_visible({} if visible is None else visible)
        hidden = [p for p in range(self.width) if p not in visible]
        tokens, probs = self._table
        marg = np.stack([self.conditional(p, visible) for p in hidden])  # (P, V)
        keep = np.ones(len(probs), dtype=bool)
        for pos, tok in visible.items():
            keep &= tokens[:, pos] == tok
        completions = tokens[keep][:, hidden]  # (S', P): each valid completion once
        return float(np.prod(marg[np.arange(len(hidden)), completions], axis=1).sum())

    def sample(self, n: int, seed: int | None = None) -> list[list[int]]:
        """n sentences (ids without padding) drawn from the exact distribution."""
        n = check_int(n, "n (the number of sentences)", minimum=0)
        tokens, probs = self._table
        rows = np.random.default_rng(self._check_seed(seed)).choice(len(probs), size=n, p=probs)
        return [list(tokens[r, : self.sentence_lengths[r]]) for r in rows.tolist()]

    def entropy_bits(self) -> float:
        """Entropy of one sentence, in bits."""
        return self._entropy_bits

    @cached_property
    def _entropy_bits(self) -> float:  # a sum over every sentence: computed once, asked for often
        p = self._table[1]
        return float(-(p * np.log2(p)).sum())

    def mean_sentence_tokens(self) -> float:
        return float((self._table[1] * self.sentence_lengths).sum())

    def entropy_rate_bits(self) -> float:
        """Bits per word token of a stream of sentences (punctuation counts as a token)."""
        return self.entropy_bits() / self.mean_sentence_tokens()


class CountingLanguage:
    """A ToyLanguage as notebook 01's loops see it (eos_id, next_token_probs, all_next_token_probs),
    counting in `passes` their calls for next-token probabilities: a call is one pass of a model."""

    def __init__(self, lang: ToyLanguage):
        if not isinstance(lang, ToyLanguage):
            raise ValueError(f"lang must be a ToyLanguage, got {type(lang).__name__}")
        self._lang, self.eos_id, self.passes = lang, lang.eos_id, 0

    def next_token_probs(self, prefix) -> np.ndarray:
        self.passes += 1
        return self._lang.next_token_probs(prefix)

    def all_next_token_probs(self, ids) -> np.ndarray:
        self.passes += 1
        return self._lang.all_next_token_probs(ids)


LANG = ToyLanguage()
