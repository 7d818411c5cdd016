"""Quality on every axis the exact language allows: validity, document length, diversity.

Validity alone can be bought by writing short, likely documents. Because the toy language's
distribution P is known exactly, the documents of any sampler Q can be scored on three axes, each
against an exact answer:

- **validity**: the share of documents the grammar accepts;
- **length**: sentences per document (and padding), against the exact distribution of the count;
- **diversity within sentences**: the surprisal gap, mean -log2 P(s) of the sentences written
  minus the exact sentence entropy H(S). A sampler of P has gap 0 on the first sentence (which
  always fits on the canvas); by Gibbs' inequality a negative gap g bounds the entropy of what the
  sampler writes, H(Q(s1)) <= E_Q[-log2 P(s1)] = H(S) + g: it has lost at least -g bits.

The per-document gap of notebook 03 (mean -log2 P(x) minus the document entropy) splits exactly
into a length part, a within-sentence part and the padding's part (`decompose`). Length and gap
are measured on valid documents, like the surprisal. Where Q(x) itself is known (every AR
sampler: a product of its conditionals) `kl_to_truth` estimates KL(Q | valid || P).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from helpers.language.toylang import LANG


@dataclass
class DocumentScores:
    """Every document of a sample (n of them) scored exactly; NaN where a document is invalid."""

    valid: np.ndarray  # (n,) bool
    sentences: np.ndarray  # (n,) int: sentences written (0 where invalid)
    padding: np.ndarray  # (n,) int: <eos> positions after the last sentence
    sentence_bits: np.ndarray  # (n, S) float: -log2 P(s) of sentence 1, 2, ...; NaN past the last
    stop_bits: np.ndarray  # (n,) float: -log2 P(the next sentence would not fit): the padding's term

    @property
    def document_bits(self) -> np.ndarray:
        """-log2 P(document) (n,): the sentences' bits plus the stop term; NaN where invalid."""
        return np.nansum(self.sentence_bits, axis=1) + self.stop_bits


def score_documents(docs) -> DocumentScores:
    """Score documents (n, L) of token ids exactly, all at once: the same answers as
    LANG.split_document and LANG.document_prob, one document at a time (tests pin this)."""
    docs = np.asarray(docs.detach().cpu() if hasattr(docs, "detach") else docs)
    if docs.ndim != 2 or docs.shape[1] < 2 or (docs.size and docs.dtype.kind not in "iu"):
        raise ValueError(f"docs must be int token ids of shape (n, L >= 2), got {docs.dtype} {docs.shape}")
    n, length = docs.shape
    body = docs[:, 1:]  # (n, L - 1) the positions after <bos>
    ends = np.isin(body, LANG.terminal_ids)  # (n, L - 1) where a sentence ends
    rows, cols = np.nonzero(ends)  # every sentence, row by row, left to right
    first = np.r_[True, rows[1:] != rows[:-1]] if len(rows) else np.zeros(0, bool)
    starts = np.where(first, 0, np.r_[0, cols[:-1] + 1])  # (G,) where each sentence starts
    lengths = cols - starts + 1  # (G,)
    width = LANG.width
    offsets = np.arange(width - 1)
    take = offsets[None, :] < np.minimum(lengths, width - 1)[:, None]  # (G, width - 1)
    grid = np.full((len(rows), width), LANG.eos_id, dtype=np.int64)  # eos-padded rows, as LANG's table
    cells = np.minimum(starts[:, None] + offsets[None, :], length - 2)
    grid[:, :-1] = np.where(take, body[rows[:, None], cells], LANG.eos_id)
    keys = LANG._row_keys(grid)
    table_keys, probs = LANG._table_keys, LANG.support()[1]
    at = np.searchsorted(table_keys, keys).clip(max=len(table_keys) - 1)
    found = table_keys[at] == keys  # (G,) a sentence of the language (one longer than a row lost its terminal)
    bits = np.where(found, -np.log2(probs[at]), np.nan)  # (G,)

    n_sentences = np.bincount(rows, minlength=n)  # (n,)
    last_end = np.full(n, -1)
    np.maximum.at(last_end, rows, cols)
    padding = (length - 2) - last_end  # positions after the last sentence
    after = np.arange(length - 1)[None, :] > last_end[:, None]
    tail_is_padding = np.all(~after | (body == LANG.eos_id), axis=1)
    all_found = np.bincount(rows, weights=~found, minlength=n) == 0
    stop_p = _p_too_long(padding)
    valid = (docs[:, 0] == LANG.bos_id) & tail_is_padding & all_found & (n_sentences > 0) & (stop_p > 0)

    index = np.arange(len(rows)) - np.r_[0, np.cumsum(n_sentences)][rows]  # sentence number in its row
    sentence_bits = np.full((n, max(1, int(n_sentences.max(initial=0)))), np.nan)
    sentence_bits[rows, index] = bits
    sentence_bits[~valid] = np.nan
    with np.errstate(divide="ignore"):
        stop_bits = np.where(valid, -np.log2(np.where(stop_p > 0, stop_p, 1.0)), np.nan)
    return DocumentScores(valid, np.where(valid, n_sentences, 0), np.where(valid, padding, 0), sentence_bits, stop_bits)


def _p_too_long(room: np.ndarray) -> np.ndarray:
    """P(len(s) > room) for every entry of room: the chance that a document stops there."""
    tail = _tail_mass()
    return tail[np.clip(room, 0, len(tail) - 1)]


@cache
def _tail_mass() -> np.ndarray:
    mass, _ = LANG._length_stats
    return np.r_[mass[::-1].cumsum()[::-1][1:], 0.0]  # tail[r] = P(len > r)


# ----------------------------------------------------------------------------- what the language itself does


@dataclass(frozen=True)
class ExactDocuments:
    """Exact statistics of the language's documents of a given canvas length (bos included)."""

    sentence_counts: np.ndarray  # P(number of sentences = k), k = 0, 1, ...
    mean_sentences: float  # E[number of sentences]
    mean_padding: float  # E[padding positions]
    sentence_bits: float  # E[sum over the sentences of -log2 P(s)]
    stop_bits: float  # E[-log2 P(stop)]: the padding's share of the entropy
    sentence_entropy: float  # H(S), bits: the first sentence's expected surprisal

    @property
    def pooled_sentence_bits(self) -> float:
        """Mean -log2 P(s) over every sentence written (later ones must fit: slightly shorter)."""
        return self.sentence_bits / self.mean_sentences

    @property
    def entropy(self) -> float:
        """H(document) = E[sentence bits] + E[stop bits], the same as LANG.document_entropy_bits."""
        return self.sentence_bits + self.stop_bits


@cache
def exact_documents(length: int = 33) -> ExactDocuments:
    """Dynamic programme over the room r left on the canvas: with r left, a sentence of length
    l <= r is written with probability P(len = l), or the document stops with P(len > r)."""
    if isinstance(length, bool) or not isinstance(length, int) or length < 2:
        raise ValueError(f"length must be an int >= 2 (bos + positions), got {length!r}")
    mass, neg_entropy = LANG._length_stats
    rooms = length - 1
    counts = np.zeros((rooms + 1, rooms + 2))  # counts[r, k] = P(k more sentences | room r)
    bits, stop, pad = np.zeros(rooms + 1), np.zeros(rooms + 1), np.zeros(rooms + 1)
    for r in range(rooms + 1):
        q = float(_p_too_long(np.array(r)))
        counts[r, 0], stop[r], pad[r] = q, (-q * math.log2(q) if q > 0 else 0.0), q * r
        for n in range(1, min(r, len(mass) - 1) + 1):
            counts[r, 1:] += mass[n] * counts[r - n, :-1]
            bits[r] += neg_entropy[n] + mass[n] * bits[r - n]
            stop[r] += mass[n] * stop[r - n]
            pad[r] += mass[n] * pad[r - n]
    dist = counts[rooms]
    k = np.arange(len(dist))
    return ExactDocuments(dist, float(k @ dist), float(pad[rooms]), float(bits[rooms]), float(stop[rooms]),
                          LANG.entropy_bits())  # fmt: skip


# ----------------------------------------------------------------------------- the measures


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    if len(x) < 2:
        return float("nan"), float("nan")
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def pooled_sentence_gap(scores: DocumentScores) -> tuple[float, float]:
    """(mean -log2 P(s) over every sentence of the valid documents, minus H(S); its standard error).
    The sentences of one document are not independent, so the error treats documents as the unit:
    the ratio estimator sum(bits) / sum(count) with its delta-method variance."""
    v = scores.valid
    bits, count = np.nansum(scores.sentence_bits[v], axis=1), scores.sentences[v].astype(float)
    if v.sum() < 2:
        return float("nan"), float("nan")
    mean = bits.sum() / count.sum()
    residual = bits - mean * count
    se = math.sqrt((residual**2).sum() * len(count) / (len(count) - 1)) / count.sum()
    return float(mean - LANG.entropy_bits()), se


@dataclass(frozen=True)
class Quality:
    """One sampler setting on every axis; (value, standard error) pairs; bits unless named."""

    n: int  # documents
    validity: tuple[float, float]
    sentences: tuple[float, float]  # sentences per valid document
    padding: float  # mean padding positions per valid document
    length_tv: float  # total variation between the sentence-count histogram and the exact one
    sentence_gap: tuple[float, float]  # every sentence: mean -log2 P(s) - H(S), bits per sentence
    first_sentence_gap: tuple[float, float]  # the first sentence only: the entropy bound's gap
    document_gap: tuple[float, float]  # mean -log2 P(x) - H(document), bits per document
    kl: tuple[float, float] | None = None  # KL(Q | valid || P), bits per document, where Q is known

    @property
    def first_sentence_entropy_bound(self) -> float:
        """H(Q(s1) | valid) <= H(S) + first-sentence gap (Gibbs' inequality), bits."""
        return LANG.entropy_bits() + self.first_sentence_gap[0]


def measure(scores: DocumentScores, length: int = 33, log2_q: np.ndarray | None = None) -> Quality:
    """Every measure of one sample. log2_q (n,): log2 Q(x) of each document, where known."""
    v, exact = scores.valid, exact_documents(length)
    n = len(v)
    p = min(max(float(v.mean()), 1 / n), 1 - 1 / n)  # never a standard error of 0
    counts = np.bincount(scores.sentences[v], minlength=len(exact.sentence_counts))[: len(exact.sentence_counts)]
    tv = 0.5 * float(np.abs(counts / max(1, v.sum()) - exact.sentence_counts).sum())
    kl = None if log2_q is None else kl_to_truth(log2_q, -scores.document_bits, v)
    return Quality(
        n=n,
        validity=(float(v.mean()), math.sqrt(p * (1 - p) / n)),
        sentences=_mean_se(scores.sentences[v].astype(float)),
        padding=float(scores.padding[v].mean()) if v.any() else float("nan"),
        length_tv=tv,
        sentence_gap=pooled_sentence_gap(scores),
        first_sentence_gap=_mean_se(scores.sentence_bits[v, 0] - LANG.entropy_bits()),
        document_gap=_mean_se(scores.document_bits[v] - exact.entropy),
        kl=kl,
    )


def decompose(scores: DocumentScores, length: int = 33) -> dict[str, float]:
    """The per-document gap of the valid documents, split exactly into three parts (bits):
    length: (n_Q - n_P) * m_P, sentences written more or fewer, each worth the language's mean;
    within: n_Q * (m_Q - m_P), the sentences' own surprisal against the language's;
    padding: the stop term's mean against the language's. They add up to the document gap."""
    v, exact = scores.valid, exact_documents(length)
    n_q = float(scores.sentences[v].mean())
    m_q = float(np.nansum(scores.sentence_bits[v]) / scores.sentences[v].sum())
    m_p, n_p = exact.pooled_sentence_bits, exact.mean_sentences
    return {
        "length": (n_q - n_p) * m_p,
        "within": n_q * (m_q - m_p),
        "padding": float(scores.stop_bits[v].mean()) - exact.stop_bits,
        "total": float(scores.document_bits[v].mean()) - exact.entropy,
    }


def kl_to_truth(log2_q, log2_p, valid) -> tuple[float, float]:
    """KL(Q | valid || P) in bits, estimated from documents drawn from Q, with its standard error.
    Q | valid is Q restricted to valid documents, renormalised by v = Q(valid) (on invalid ones
    P = 0 and KL(Q || P) itself is infinite), so KL = E_Q[log2 Q - log2 P | valid] - log2 v: the
    mean over the valid documents is unbiased; log2 of the measured v adds an O(1/n) bias."""
    log2_q, log2_p, valid = (np.asarray(a) for a in (log2_q, log2_p, valid))
    if not (log2_q.shape == log2_p.shape == valid.shape) or log2_q.ndim != 1:
        raise ValueError(f"log2_q, log2_p and valid must be 1-D of one length, got {log2_q.shape}, {valid.shape}")
    if valid.sum() < 2:
        return float("nan"), float("nan")
    v = float(valid.mean())
    mean, se = _mean_se(log2_q[valid] - log2_p[valid])
    se_log_v = math.sqrt(v * (1 - v) / len(valid)) / (v * math.log(2))
    return mean - math.log2(v), math.hypot(se, se_log_v)
