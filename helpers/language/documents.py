"""Documents of the toy language: fixed-length canvases of whole sentences, with exact probabilities.

A *document* is a canvas of fixed length: `<bos>`, then independent sentences drawn one after
another while they fit, then `<eos>` padding. Precisely: with r positions left, draw a sentence
s; if len(s) <= r write it and repeat, otherwise stop and pad. So
P(document) = prod_i P(s_i) * P(len(s) > r_final).

`DocumentMixin` holds these methods; helpers.language.toylang.ToyLanguage inherits them, so they are
called as LANG.sample_documents(...), LANG.document_prob(...) and so on.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from helpers.common.validation import check_int


class DocumentMixin:
    """The document half of ToyLanguage. It uses the sentence table (`_table`, `sentence_lengths`),
    the id checks (`_check_ids`, `_check_seed`) and the sentence probabilities (`prob`, `is_valid`)."""

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
        """A canvas length: an int >= 2 (bos + at least one position)."""
        return check_int(length, "document length", minimum=2)

    def sample_documents(self, n: int, length: int, seed: int | None = None) -> np.ndarray:
        """(n, length) int64: `<bos>`, whole sentences while they fit, then `<eos>` padding."""
        length = self._check_length(length)
        n = check_int(n, "n (the number of documents)", minimum=0)
        tokens, probs = self._table
        lengths = self.sentence_lengths
        rng = np.random.default_rng(self._check_seed(seed))
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
        from marginals[i] (L, V), is valid. This is what one parallel pass of a masked-diffusion
        sampler produces. `marginals` is required (it has no default: the canvas length L comes
        from it); for the true marginals pass LANG.document_marginals(L). Dynamic programme over
        where each sentence starts: f(p) = P(positions p.. form a valid rest)."""
        if marginals is None:
            raise ValueError("pass marginals (L, V), e.g. LANG.document_marginals(33)")
        if hasattr(marginals, "detach"):  # a torch tensor, on any device
            marginals = marginals.detach().cpu().numpy()
        marg = np.asarray(marginals)
        if marg.dtype.kind not in "iuf":
            raise ValueError(f"marginals must be an array of real numbers (L, V), got dtype {marg.dtype}")
        marg = marg.astype(np.float64)
        if marg.ndim != 2 or marg.shape[1] != len(self.vocab) or marg.shape[0] < 2:
            raise ValueError(f"marginals must have shape (L >= 2, {len(self.vocab)}), got {marg.shape}")
        if not np.isfinite(marg).all() or (marg < 0).any():
            raise ValueError("marginals must be finite and >= 0 (each row a distribution over the vocabulary)")
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
