"""Notebook 01's typewriter: ancestral sampling of one sentence of the toy language, step by step,
with the exact next-token distribution at every step (`typewriter_widget`)."""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes

from helpers.common.plotting import AR_COLOR, TRUTH_COLOR
from helpers.common.validation import check_int
from helpers.language.toylang import LANG, ToyLanguage
from helpers.widgets.stepper import check_step, stepper_widget


@dataclass
class TypewriterStep:
    """One keystroke of the typewriter: what was typed before it, and what it chose."""

    prefix: list[int]  # tokens typed before this step (no bos)
    probs: np.ndarray  # (V,) exact P(next token | prefix)
    token: int  # the token sampled at this step


def check_trace(trace) -> list[TypewriterStep]:
    if not isinstance(trace, list) or not trace or not all(isinstance(s, TypewriterStep) for s in trace):
        raise ValueError("trace must be a non-empty list of TypewriterStep (from typewriter_trace or the model's)")
    return trace


def check_language(lang) -> ToyLanguage:
    if not isinstance(lang, ToyLanguage):
        raise ValueError(f"lang must be a helpers.language.toylang.ToyLanguage such as LANG, got {type(lang).__name__}")
    return lang


def typewriter_trace(seed: int = 0, lang: ToyLanguage = LANG) -> list[TypewriterStep]:
    """Sample one sentence by the chain rule, one token at a time, keeping every step.

    The random calls are those of the hand-written loop in notebook 01: one
    `rng.choice(V, p=probs)` per token with `rng = np.random.default_rng(seed)`, so the same
    seed types the same sentence. The last step types `<eos>`."""
    seed = check_int(seed, "seed", 0)
    lang = check_language(lang)
    rng = np.random.default_rng(seed)
    vocab_size = len(lang.vocab)
    steps: list[TypewriterStep] = []
    prefix: list[int] = []
    while True:
        probs = lang.next_token_probs(prefix)  # (V,)
        token = int(rng.choice(vocab_size, p=probs))
        steps.append(TypewriterStep(prefix=list(prefix), probs=probs, token=token))
        if token == lang.eos_id:
            return steps
        prefix.append(token)


def shown_tokens(probs: np.ndarray, token: int, top: int) -> np.ndarray:
    """Ids of the `top` most likely tokens with nonzero probability (ties in vocabulary order),
    always including the sampled one, most likely first."""
    ranked = np.argsort(-probs, kind="stable")
    shown = [int(t) for t in ranked[:top] if probs[t] > 0]
    if token not in shown:  # a rare pick: swap it in for the least likely token shown
        shown = shown[: top - 1] + [token]
    return np.array(shown)


def draw_typewriter_step(
    ax: Axes, trace: list[TypewriterStep], step: int, top: int = 10, lang: ToyLanguage = LANG
) -> None:
    """Bar chart of the next-token distribution at `step` (the sampled token in red), with the
    text typed so far and the sampled token [in brackets] as the title, and the chain-rule
    product of the probabilities chosen so far in the corner."""
    step = check_step(step, len(check_trace(trace)), what=" for this sentence")
    top = check_int(top, "top", 1)
    lang = check_language(lang)
    now = trace[step]
    shown = shown_tokens(now.probs, now.token, top)
    colors = [AR_COLOR if t == now.token else TRUTH_COLOR for t in shown]
    ax.bar(range(len(shown)), now.probs[shown], color=colors)
    ax.set_xticks(range(len(shown)), [lang.vocab[t] for t in shown], rotation=30, ha="right")
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("P(next token | typed so far)")
    ax.set_xlabel("next token: the most likely ones, the drawn one in red (same scale at every step)")
    picked = list(shown).index(now.token)
    ax.annotate(f"{now.probs[now.token]:.3f}", (picked, now.probs[now.token]), ha="center", va="bottom")

    nonzero = now.probs[now.probs > 0]
    entropy = max(0.0, float(-(nonzero * np.log2(nonzero)).sum()))  # a certain token: 0.00, not -0.00
    chosen = np.array([s.probs[s.token] for s in trace[: step + 1]])
    ax.text(
        0.99,
        0.97,
        f"{len(nonzero)} possible token{'s' if len(nonzero) > 1 else ''}, entropy {entropy:.2f} bits\n"
        f"P(text up to the red token) = product of the drawn tokens' probabilities, steps 0-{step} = "
        f"{chosen.prod():.2e}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=9,
    )
    typed = lang.decode(now.prefix) if now.prefix else "(nothing typed yet)"
    ax.set_title(f"step {step}:  {typed} [{lang.vocab[now.token]}]", loc="left")


def typewriter_widget(seed: int = 0, step: int = 0, top: int = 10, lang: ToyLanguage = LANG) -> widgets.VBox:
    """A step slider and a seed box over `draw_typewriter_step` (see `stepper_widget`)."""
    top = check_int(top, "top", 1)
    lang = check_language(lang)
    return stepper_widget(
        make_trace=lambda s: typewriter_trace(s, lang),
        draw=lambda fig, trace, k: draw_typewriter_step(fig.add_subplot(), trace, k, top=top, lang=lang),
        seed=seed,
        step=step,
        last_step=lambda trace: len(trace) - 1,
    )
