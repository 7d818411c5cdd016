"""A toy English whose probability distribution is known exactly.

Real text has no known distribution, so no model of it can be checked against the truth.
This language is small enough to enumerate: every sentence it can produce, with its exact
probability, fits in one array. From that array we get exact next-token distributions, exact
conditionals given any set of visible positions, and the exact entropy: the floor under the
loss of every model in the course.

The grammar has three kinds of sentence, and each hides a dependency that parallel decoding
can break:

    statement   the small cat near the dogs sleeps .      verb agrees with "cat", not "dogs"
    question    do some girls behind the bird chase the cat ?
                                                          "do" fixes the plural noun, the bare
                                                          verb and the final "?" far away
    travel      alice flew from new york to san diego .   city names are two words whose
                                                          halves must match: no "new diego"

A *document* is a canvas of fixed length: `<bos>`, then independent sentences drawn one after
another while they fit, then `<eos>` padding. Precisely: with r positions left, draw a sentence
s; if len(s) <= r write it and repeat, otherwise stop and pad. So
P(document) = prod_i P(s_i) * P(len(s) > r_final).
"""

from __future__ import annotations

import itertools
from functools import cached_property

import numpy as np

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


class ToyLanguage:
    """The exact distribution over sentences and documents of a finite grammar.

    Sentences are handled as fixed-width rows of `width` token ids: the words, then `<eos>`
    padding (at least one). Positions in `conditional` and `next_token_probs` index that row.
    """

    EOS, BOS, MASK = "<eos>", "<bos>", "<mask>"
    TERMINALS = (".", "?")

    def __init__(self, grammar: Grammar | None = None):
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

    # ------------------------------------------------------------------ grammar
    def _sentence_phrases(self) -> Phrases:
        g = self.grammar
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

    def _check_ids(self, ids) -> list[int]:
        ids = [int(i) for i in np.asarray(ids).reshape(-1)]
        bad = [i for i in ids if not 0 <= i < len(self.vocab)]
        if bad:
            raise ValueError(f"token id {bad[0]} out of range; ids must be in [0, {len(self.vocab)})")
        return ids

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
        if not 0 <= position < self.width:
            raise ValueError(f"position {position} out of range; positions are 0 .. {self.width - 1}")
        tokens, probs = self._table
        keep = np.ones(len(probs), dtype=bool)
        for pos, tok in visible.items():
            if not 0 <= int(pos) < self.width:
                raise ValueError(f"visible position {pos} out of range; positions are 0 .. {self.width - 1}")
            self._check_ids([tok])
            keep &= tokens[:, int(pos)] == int(tok)
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

    def order_conditionals(self, order) -> np.ndarray:
        """For every support sentence, the exact conditional of each token given the tokens
        before it in `order` (a permutation of the positions): (S, width), column k holds
        P(x[order[k]] | x[order[:k]]). Vectorised: sort by the permuted columns, and each
        conditional is a ratio of the masses of two prefix groups."""
        order = [int(i) for i in order]
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
        rows = np.asarray(rows)
        if rows.ndim != 2 or rows.shape[1] != self.width:
            raise ValueError(f"rows must have shape (N, {self.width}), got {rows.shape}")
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
        visible = dict(visible or {})
        hidden = [p for p in range(self.width) if p not in visible]
        tokens, probs = self._table
        marg = np.stack([self.conditional(p, visible) for p in hidden])  # (P, V)
        keep = np.ones(len(probs), dtype=bool)
        for pos, tok in visible.items():
            keep &= tokens[:, int(pos)] == int(tok)
        completions = tokens[keep][:, hidden]  # (S', P): each valid completion once
        return float(np.prod(marg[np.arange(len(hidden)), completions], axis=1).sum())

    def sample(self, n: int, seed: int | None = None) -> list[list[int]]:
        """n sentences (ids without padding) drawn from the exact distribution."""
        if not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        tokens, probs = self._table
        rows = np.random.default_rng(seed).choice(len(probs), size=n, p=probs)
        return [list(tokens[r, : self.sentence_lengths[r]]) for r in rows.tolist()]

    def entropy_bits(self) -> float:
        """Entropy of one sentence, in bits."""
        p = self._table[1]
        return float(-(p * np.log2(p)).sum())

    def mean_sentence_tokens(self) -> float:
        return float((self._table[1] * self.sentence_lengths).sum())

    def entropy_rate_bits(self) -> float:
        """Bits per word token of a stream of sentences (punctuation counts as a token)."""
        return self.entropy_bits() / self.mean_sentence_tokens()

    # ------------------------------------------------------------------ documents
    @cached_property
    def _length_stats(self) -> tuple[np.ndarray, np.ndarray]:
        """mass[l] = P(len = l) and neg_entropy[l] = sum over sentences of length l of -P log2 P."""
        p = self._table[1]
        n = self.max_sentence_tokens + 1
        mass = np.bincount(self.sentence_lengths, weights=p, minlength=n)
        ent = np.bincount(self.sentence_lengths, weights=-p * np.log2(p), minlength=n)
        return mass, ent

    def _p_too_long(self, room: int) -> float:
        """P(len(s) > room): the probability that the document stops with `room` positions left."""
        mass, _ = self._length_stats
        return float(mass[room + 1 :].sum()) if room < len(mass) else 0.0

    def _check_length(self, length) -> int:
        if not isinstance(length, int | np.integer) or length < 2:
            raise ValueError(f"document length must be an int >= 2 (bos + at least one position), got {length!r}")
        return int(length)

    def sample_documents(self, n: int, length: int, seed: int | None = None) -> np.ndarray:
        """(n, length) int64: `<bos>`, whole sentences while they fit, then `<eos>` padding."""
        length = self._check_length(length)
        if not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        tokens, probs = self._table
        lengths = self.sentence_lengths
        rng = np.random.default_rng(seed)
        docs = np.full((n, length), self.eos_id, dtype=np.int64)
        docs[:, 0] = self.bos_id
        pos = np.ones(n, dtype=np.int64)
        active = np.arange(n)
        cols = np.arange(self.max_sentence_tokens)
        while active.size:
            pick = rng.choice(len(probs), size=active.size, p=probs)
            fits = lengths[pick] <= length - pos[active]
            active, pick = active[fits], pick[fits]
            rows, offs = np.nonzero(cols[None, :] < lengths[pick][:, None])
            docs[active[rows], pos[active][rows] + offs] = tokens[pick[rows], offs]
            pos[active] += lengths[pick]
        return docs

    def split_document(self, ids) -> tuple[list[list[int]], int] | None:
        """The sentences of a document and the number of padding positions, or None if it is
        not well formed (no bos, a sentence cut off, a word after the padding starts)."""
        ids = self._check_ids(ids)
        if not ids or ids[0] != self.bos_id:
            return None
        sentences, pos = [], 1
        while pos < len(ids) and ids[pos] != self.eos_id:
            ends = [j for j in range(pos, len(ids)) if ids[j] in self.terminal_ids]
            if not ends:
                return None
            sentences.append(ids[pos : ends[0] + 1])
            pos = ends[0] + 1
        if any(i != self.eos_id for i in ids[pos:]):
            return None
        return sentences, len(ids) - pos

    def document_prob(self, ids) -> float:
        """Exact probability of a document under the generating process."""
        parts = self.split_document(ids)
        if parts is None:
            return 0.0
        sentences, room = parts
        p = self._p_too_long(room)
        for s in sentences:
            p *= self.prob(s)
        return p

    def document_is_valid(self, ids) -> bool:
        return self.document_prob(ids) > 0.0

    def document_next_token_probs(self, prefix, length: int) -> np.ndarray:
        """Exact next-token distribution (V,) after a document prefix (starting with <bos>) on a
        canvas of `length`: the current sentence must still fit in the room it started with, and
        between sentences the document may stop (<eos>) only if no sentence could fit."""
        length = self._check_length(length)
        prefix = self._check_ids(prefix)
        if not prefix or prefix[0] != self.bos_id or len(prefix) >= length:
            raise ValueError(f"prefix must start with <bos> and be shorter than length ({length})")
        start = 1  # where the current sentence began
        for t in range(1, len(prefix)):
            if prefix[t] in self.terminal_ids:
                start = t + 1
        done = self.split_document(prefix[:start])  # the complete sentences before the current one
        partial, room = prefix[start:], length - start
        if done is None or any(not self.is_valid(s) for s in done[0]) or len(partial) >= self.width:
            raise ValueError(f"prefix {self.decode(prefix)!r} has probability 0 under the language")
        if partial and partial[0] == self.eos_id:  # padding has begun: it continues to the end
            if any(i != self.eos_id for i in partial) or self._p_too_long(room) == 0:
                raise ValueError(f"prefix {self.decode(prefix)!r} has probability 0 under the language")
            return np.eye(len(self.vocab))[self.eos_id]
        tokens, probs = self._table
        keep = self.sentence_lengths <= room
        for k, tok in enumerate(partial):
            keep &= tokens[:, k] == tok
        dist = np.bincount(tokens[keep, len(partial)], weights=probs[keep], minlength=len(self.vocab))
        if not partial:
            dist[self.eos_id] = self._p_too_long(room)  # the next sentence does not fit: stop
        if dist.sum() == 0:
            raise ValueError(f"prefix {self.decode(prefix)!r} has probability 0 under the language")
        return dist / dist.sum()

    def document_parallel_fill_validity(self, marginals=None) -> float:
        """Exact probability that a document whose positions are drawn independently, position i
        from marginals[i] (L, V), is valid; default: the true marginals of a document of length
        L. This is what one parallel pass of a masked-diffusion sampler produces. Dynamic
        programme over where each sentence starts: f(p) = P(positions p.. form a valid rest)."""
        if marginals is None:
            raise ValueError("pass marginals (L, V), e.g. LANG.document_marginals(33)")
        marg = np.asarray(marginals, dtype=np.float64)
        if marg.ndim != 2 or marg.shape[1] != len(self.vocab) or marg.shape[0] < 2:
            raise ValueError(f"marginals must have shape (L >= 2, {len(self.vocab)}), got {marg.shape}")
        length = marg.shape[0]
        tokens, _ = self._table
        lengths = self.sentence_lengths
        eos_rest = np.append(np.cumprod(marg[::-1, self.eos_id])[::-1], 1.0)  # P(all eos from p on)
        f = np.zeros(length + 1)
        f[length] = 1.0
        cols = np.arange(self.max_sentence_tokens)
        for p in range(length - 1, 0, -1):
            room = length - p
            fits = lengths <= room
            window = marg[np.minimum(p + cols, length - 1)]  # (n_max, V) rows past the end are unused
            per_token = window[cols, tokens[fits][:, : self.max_sentence_tokens]]  # (S', n_max)
            per_token = np.where(cols[None, :] < lengths[fits][:, None], per_token, 1.0)
            f[p] = (per_token.prod(axis=1) * f[p + lengths[fits]]).sum()
            if self._p_too_long(room) > 0:
                f[p] += eos_rest[p]
        return float(marg[0, self.bos_id] * f[1])

    def document_entropy_bits(self, length: int) -> float:
        """Exact entropy (bits) of a document of `length` positions (bos included), by a
        dynamic programme over the room r left on the canvas:
        H(r) = sum_l [h_l + P(len = l) H(r - l)] + H_stop(r)."""
        length = self._check_length(length)
        mass, ent = self._length_stats
        h = np.zeros(length)
        for room in range(length):
            q = self._p_too_long(room)
            h[room] = -q * np.log2(q) if q > 0 else 0.0
            for n in range(1, min(room, len(mass) - 1) + 1):
                h[room] += ent[n] + mass[n] * h[room - n]
        return float(h[length - 1])

    def document_marginals(self, length: int) -> np.ndarray:
        """Exact marginal distribution of every position of a document: (length, V)."""
        length = self._check_length(length)
        tokens, probs = self._table
        lengths = self.sentence_lengths
        n_max, vocab = self.max_sentence_tokens, len(self.vocab)
        # by_len[l, k, v] = P(len = l and token k = v)
        by_len = np.zeros((n_max + 1, n_max, vocab))
        for k in range(n_max):
            np.add.at(by_len, (lengths, k, tokens[:, k]), probs)
        mass, _ = self._length_stats
        start = np.zeros(length + 1)  # P(a sentence is drawn at position p)
        start[1] = 1.0
        marg = np.zeros((length, vocab))
        marg[0, self.bos_id] = 1.0
        for p in range(1, length):
            room = length - p
            for n in range(1, min(room, n_max) + 1):
                start[p + n] += start[p] * mass[n]
                marg[p : p + n] += start[p] * by_len[n, :n]
            marg[p:, self.eos_id] += start[p] * self._p_too_long(room)
        return marg


LANG = ToyLanguage()
