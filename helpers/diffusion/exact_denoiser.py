"""The perfect denoiser: the language's exact conditionals, wherever a diffusion model is used.

A trained model's mistakes and a sampler's mistakes show up together in its documents. To tell
them apart, run the same sampler on a "model" that makes none: for any canvas, the exact
distribution of every masked position given every visible one, under the document process of
helpers.language.documents (whole sentences while they fit, then <eos> padding).

How it is computed. The language's sentences form a finite weighted automaton: a trie of every
sentence, with prefixes that have the same continuations (same words, same probabilities)
merged. The default grammar's 111,076 sentences need 45 states and 212 arcs. A document is a
walk through it, from the root back to the root at every full stop, until the walk stops with
P(the next sentence does not fit) and pads. Forward-backward over the canvas positions sums
every walk that agrees with the visible tokens: alpha is the probability of the visible tokens
left of a position, beta of those right of it, and alpha * arc * beta the probability of each
token there. 33 positions x 213 arcs per canvas, so a pass costs milliseconds.

Canvases that no document fits. A parallel step can commit tokens that no document holds
together ("new diego"); the exact conditional is then undefined. The denoiser answers as a
model that trusts each visible token with probability 1 - eps would as eps -> 0: it conditions
on the documents that disagree with the fewest visible tokens. Where some document fits, those
are exactly the documents that fit, so nothing changes; samplers that never re-mask cannot
repair such a canvas anyway, and only ReMDM's re-masking can use the answer.

`ExactDenoiser()` plugs into helpers.diffusion.sampler.sample (and nelbo) wherever a Transformer does;
`SentenceDenoiser` is the same computation on one sentence row, to check against LANG.conditional.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import torch
import torch.nn as nn

from helpers.language.toylang import LANG, ToyLanguage

VIOLATION = 1e4  # nats a walk pays per visible token it disagrees with: exp(-1e4) is 0 in float64


@dataclass(frozen=True)
class Automaton:
    """A weighted automaton of a language's sentences: state 0 is the start of a sentence, and an
    arc src --tok--> dst has probability weight[a] = P(tok | the words so far). dst = -1 marks the
    arc that ends a sentence. Every sentence is exactly one walk, its probability the product."""

    n_states: int
    src: np.ndarray  # (A,) int
    tok: np.ndarray  # (A,) int
    dst: np.ndarray  # (A,) int, -1 where the sentence ends
    weight: np.ndarray  # (A,) float64


@cache
def sentence_automaton(lang: ToyLanguage = LANG) -> Automaton:
    """The smallest automaton of `lang`'s sentences (prefixes with equal continuation
    distributions merged), checked against every sentence's exact probability."""
    if not isinstance(lang, ToyLanguage):
        raise ValueError(f"lang must be a helpers.language.toylang.ToyLanguage, got {type(lang).__name__}")
    tokens, probs = lang.support()  # (S, W) sorted, every row's words then <eos>
    lengths = lang.sentence_lengths
    n_rows, width = tokens.shape
    # node[k][r]: the trie node of row r's first k words (rows sharing them are adjacent: sorted)
    new = np.zeros(n_rows, dtype=bool)
    new[0] = True
    node = [np.zeros(n_rows, dtype=np.int64)]
    for k in range(width):
        new[1:] |= tokens[1:, k] != tokens[:-1, k]
        node.append(np.cumsum(new) - 1)
    # Merge from the leaves up: nodes whose (word, probability, child's class) sets are equal
    # are one state. Class -1 is the end of a sentence; probabilities compared to 12 digits.
    classes: dict[tuple, int] = {}
    arcs: dict[tuple[int, int], tuple[float, int]] = {}  # (class, word) -> (weight, child's class)
    below = np.full(n_rows, -1)  # the class of each row's node one level deeper
    for k in range(width - 1, -1, -1):
        deeper = lengths > k  # rows with a word at position k
        if np.bincount(node[k][deeper], minlength=n_rows)[node[k][lengths == k]].any():
            raise ValueError("a sentence of this grammar is the start of another: no end-of-sentence arc")
        mass = np.bincount(node[k][deeper], weights=probs[deeper], minlength=n_rows)
        child_mass = np.bincount(node[k + 1][deeper], weights=probs[deeper], minlength=n_rows)
        reps = np.flatnonzero(deeper)[np.unique(node[k + 1][deeper], return_index=True)[1]]  # a row per child
        kids: dict[int, list] = {}
        for r in reps.tolist():
            n, c = node[k][r], node[k + 1][r]
            kids.setdefault(n, []).append((int(tokens[r, k]), child_mass[c] / mass[n], int(below[r])))
        level = np.full(n_rows, -1)  # node -> its class
        for n, arcs_out in kids.items():
            arcs_out.sort()
            signature = tuple((w, float(f"{p:.12g}"), child) for w, p, child in arcs_out)
            level[n] = classes.setdefault(signature, len(classes))
            for w, p, child in arcs_out:
                arcs.setdefault((level[n], w), (p, child))
        below = np.where(deeper, level[node[k]], -1)
    root = int(below[0])
    order = {root: 0, **{c: i + 1 for i, c in enumerate(c for c in range(len(classes)) if c != root)}}
    order[-1] = -1
    src, tok, dst, weight = (np.array(v) for v in zip(*[
        (order[c], w, order[child], p) for (c, w), (p, child) in arcs.items()
    ], strict=True))  # fmt: skip
    automaton = Automaton(len(classes), src, tok, dst, weight.astype(np.float64))
    _check_automaton(automaton, lang)
    return automaton


def _check_automaton(a: Automaton, lang: ToyLanguage) -> None:
    """Every sentence, walked through the automaton, must end at -1 with its exact probability."""
    step = np.full((a.n_states, len(lang.vocab)), -2)
    step[a.src, a.tok] = np.arange(len(a.src))
    tokens, probs = lang.support()
    state, log_p = np.zeros(len(probs), dtype=np.int64), np.zeros(len(probs))
    for k in range(tokens.shape[1]):
        live = (k < lang.sentence_lengths) & (state >= 0)
        arc = step[state[live], tokens[live, k]]
        if (arc < 0).any():
            raise RuntimeError("the merged automaton lost a sentence")
        log_p[live] += np.log(a.weight[arc])
        state[live] = a.dst[arc]
    if (state != -1).any() or np.abs(log_p - np.log(probs)).max() > 1e-12:
        raise RuntimeError("the merged automaton does not reproduce the sentence probabilities")


# ----------------------------------------------------------------------------- forward-backward


def _logsumexp_into(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """out[j, b] = log sum over a with index[a] == j of exp(values[a, b]); -inf where none.
    Arcs and states run down the rows, documents along them: every gather moves whole rows."""
    top = torch.full((size, values.size(1)), float("-inf"), dtype=values.dtype)
    top.scatter_reduce_(0, index[:, None].expand_as(values), values, "amax")
    top.nan_to_num_(neginf=0.0)  # a shift of 0 where nothing arrives
    total = torch.zeros_like(top).index_add_(0, index, torch.exp(values - top.index_select(0, index)))
    return total.log_().add_(top)


@dataclass(frozen=True)
class Lattice:
    """The walks of a canvas of n positions: arcs (src, tok, dst) with a log weight per position
    (n, A), the state the walk starts in and the states it may end in."""

    n_states: int
    src: torch.Tensor
    tok: torch.Tensor
    dst: torch.Tensor
    log_weight: torch.Tensor  # (n, A)
    start: int
    accept: tuple[int, ...]


def log_posteriors(canvas: torch.Tensor, lattice: Lattice, vocab_size: int, mask_id: int) -> torch.Tensor:
    """log P(token at each position | the visible tokens) (B, n, V), float64, for the canvas (B, n)
    of the lattice's n positions; <mask> marks the hidden ones. Visible positions get their own
    token (log 1 = 0, else -inf), as a model that copies what it sees."""
    B, n = canvas.shape
    masked = canvas == mask_id  # (B, n)
    Q, src, dst, tok = lattice.n_states, lattice.src, lattice.dst, lattice.tok
    weight = lattice.log_weight[:, :, None]  # (n, A, 1)

    def arc(i: int) -> torch.Tensor:  # (A, B) log weight of each arc at position i, given the canvas
        if masked[:, i].all():
            return weight[i]
        disagrees = ~masked[None, :, i] & (canvas[None, :, i] != tok[:, None])  # (A, B)
        return weight[i] - VIOLATION * disagrees

    alpha = [torch.full((Q, B), float("-inf"), dtype=torch.float64)]
    alpha[0][lattice.start] = 0.0
    for i in range(n):  # alpha[i + 1][q]: log P(visible tokens up to i, in state q after i)
        alpha.append(_logsumexp_into(alpha[i].index_select(0, src) + arc(i), dst, Q))
    beta = torch.full((Q, B), float("-inf"), dtype=torch.float64)
    beta[list(lattice.accept)] = 0.0
    out = torch.full((n, vocab_size, B), float("-inf"), dtype=torch.float64)
    for i in range(n - 1, -1, -1):  # beta: log P(visible tokens after i | state after i)
        ahead = beta.index_select(0, dst)  # (A, B)
        if masked[:, i].any():
            per_token = _logsumexp_into(alpha[i].index_select(0, src) + weight[i] + ahead, tok, vocab_size)
            out[i] = per_token - torch.logsumexp(per_token, dim=0, keepdim=True)  # (V, B)
        beta = _logsumexp_into(arc(i) + ahead, src, Q)
    out = out.permute(2, 0, 1).contiguous()  # (B, n, V)
    out[~masked] = float("-inf")
    out[~masked, canvas[~masked]] = 0.0  # a visible position holds its own token
    return out


@cache
def document_lattice(length: int, lang: ToyLanguage = LANG) -> Lattice:
    """The walks of a document's positions 1 .. length-1 (position 0 is <bos>): sentences from the
    root back to it, and at the root, with room r left, the stop to padding with P(len > r)."""
    a = sentence_automaton(lang)
    pad = a.n_states
    dst = np.where(a.dst < 0, 0, a.dst)  # a full stop returns to the root
    src, tok = np.r_[a.src, 0, pad], np.r_[a.tok, lang.eos_id, lang.eos_id]
    rooms = length - np.arange(1, length)  # room left at each position, itself included
    p_stop = np.array([lang._p_too_long(int(r)) for r in rooms])
    weight = np.column_stack([np.tile(a.weight, (length - 1, 1)), p_stop, np.ones(length - 1)])
    return _lattice(pad + 1, src, tok, np.r_[dst, pad, pad], weight, start=0, accept=(0, pad))


@cache
def sentence_lattice(lang: ToyLanguage = LANG) -> Lattice:
    """The walks of one sentence row (lang.width positions): a sentence, then <eos> padding."""
    a = sentence_automaton(lang)
    pad = a.n_states
    src, tok, dst = np.r_[a.src, pad], np.r_[a.tok, lang.eos_id], np.r_[np.where(a.dst < 0, pad, a.dst), pad]
    weight = np.tile(np.r_[a.weight, 1.0], (lang.width, 1))
    return _lattice(pad + 1, src, tok, dst, weight, start=0, accept=(pad,))


def _lattice(n_states, src, tok, dst, weight, start, accept) -> Lattice:
    with np.errstate(divide="ignore"):
        log_weight = torch.from_numpy(np.log(weight))
    as_long = (torch.from_numpy(np.asarray(x, dtype=np.int64)) for x in (src, tok, dst))
    return Lattice(n_states, *as_long, log_weight, start, accept)


# ----------------------------------------------------------------------------- the denoisers


@dataclass(frozen=True)
class DenoiserConfig:
    """What the samplers read of a model's config."""

    vocab_size: int
    max_len: int = 1024  # any canvas length works; this only bounds the samplers' checks
    causal: bool = False


class ExactDenoiser(nn.Module):
    """A "model" whose logits are the exact log conditionals of the language's documents:
    canvas (B, T) -> (B, T, V) float64, T the document length (<bos> included). Use it wherever
    helpers.diffusion.sampler takes a bidirectional Transformer: sample(ExactDenoiser(), 32, 32, ...)."""

    def __init__(self, lang: ToyLanguage = LANG):
        super().__init__()
        if not isinstance(lang, ToyLanguage):
            raise ValueError(f"lang must be a helpers.language.toylang.ToyLanguage, got {type(lang).__name__}")
        self.lang = lang
        self.config = DenoiserConfig(vocab_size=len(lang.vocab))
        sentence_automaton(lang)  # built (about a second) and checked now, not in the first pass

    def forward(self, canvas: torch.Tensor) -> torch.Tensor:
        canvas = _check_canvas(canvas, self.config.vocab_size, minimum=2)
        lang, (B, T) = self.lang, canvas.shape
        body = log_posteriors(canvas[:, 1:].cpu(), document_lattice(T, lang), len(lang.vocab), lang.mask_id)
        first = torch.full((B, 1, len(lang.vocab)), float("-inf"), dtype=torch.float64)
        first[:, 0, lang.bos_id] = 0.0  # position 0 always holds <bos>
        return torch.cat([first, body], dim=1).to(canvas.device)  # (B, T, V)


class SentenceDenoiser(nn.Module):
    """The same computation on sentence rows (B, lang.width), as LANG.conditional indexes them."""

    def __init__(self, lang: ToyLanguage = LANG):
        super().__init__()
        if not isinstance(lang, ToyLanguage):
            raise ValueError(f"lang must be a helpers.language.toylang.ToyLanguage, got {type(lang).__name__}")
        self.lang = lang

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        rows = _check_canvas(rows, len(self.lang.vocab), minimum=self.lang.width)
        if rows.size(1) != self.lang.width:
            raise ValueError(f"rows must have {self.lang.width} positions (lang.width), got {rows.size(1)}")
        return log_posteriors(rows.cpu(), sentence_lattice(self.lang), len(self.lang.vocab), self.lang.mask_id)


def _check_canvas(canvas, vocab_size: int, minimum: int) -> torch.Tensor:
    if not isinstance(canvas, torch.Tensor) or canvas.dtype != torch.long or canvas.dim() != 2:
        raise ValueError("canvas must be an int64 tensor of shape (B, T)")
    if canvas.size(1) < minimum:
        raise ValueError(f"canvas must have at least {minimum} positions, got {canvas.size(1)}")
    if canvas.numel() and (canvas.min() < 0 or canvas.max() >= vocab_size):
        raise ValueError(f"token ids must be in [0, {vocab_size})")
    return canvas
