"""Interactive widgets of the course, and the drawing functions they share with static figures.

Every widget is built by a function here, so a test can drive it headless (setting
`slider.value` fires its observers synchronously). Each widget redraws with the same
function the notebook uses for the static figure drawn in the cell before it, so the static
picture and the interactive one always agree. Later notebooks add their widgets here.

Notebook 01: `typewriter_widget` steps through ancestral sampling of one sentence of the toy
language and shows the exact next-token distribution at every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from IPython.display import display
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers.plotting import AR_COLOR, TRUTH_COLOR, use_course_style
from helpers.toylang import LANG, ToyLanguage

# ---------------------------------------------------------------------------- typewriter (01)


@dataclass
class TypewriterStep:
    """One keystroke of the typewriter: what was typed before it, and what it chose."""

    prefix: list[int]  # tokens typed before this step (no bos)
    probs: np.ndarray  # (V,) exact P(next token | prefix)
    token: int  # the token sampled at this step


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def typewriter_trace(seed: int = 0, lang: ToyLanguage = LANG) -> list[TypewriterStep]:
    """Sample one sentence by the chain rule, one token at a time, keeping every step.

    The random calls are those of the hand-written loop in notebook 01: one
    `rng.choice(V, p=probs)` per token with `rng = np.random.default_rng(seed)`, so the same
    seed types the same sentence. The last step types `<eos>`."""
    seed = _check_int("seed", seed, 0)
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


def _shown_tokens(probs: np.ndarray, token: int, top: int) -> np.ndarray:
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
    if not 0 <= step < len(trace):
        raise ValueError(f"step must be in 0 .. {len(trace) - 1} for this sentence, got {step}")
    top = _check_int("top", top, 1)
    now = trace[step]
    shown = _shown_tokens(now.probs, now.token, top)
    colors = [AR_COLOR if t == now.token else TRUTH_COLOR for t in shown]
    ax.bar(range(len(shown)), now.probs[shown], color=colors)
    ax.set_xticks(range(len(shown)), [lang.vocab[t] for t in shown], rotation=30, ha="right")
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("P(next token | typed so far)")
    picked = list(shown).index(now.token)
    ax.annotate(f"{now.probs[now.token]:.3f}", (picked, now.probs[now.token]), ha="center", va="bottom")

    nonzero = now.probs[now.probs > 0]
    entropy = float(-(nonzero * np.log2(nonzero)).sum())
    chosen = np.array([s.probs[s.token] for s in trace[: step + 1]])
    ax.text(
        0.99,
        0.97,
        f"{len(nonzero)} possible tokens, entropy {entropy:.2f} bits\n"
        f"P(text up to the red token) = product of the red bars so far = {chosen.prod():.2e}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=9,
    )
    typed = lang.decode(now.prefix) if now.prefix else "(nothing typed yet)"
    ax.set_title(f"step {step}:  {typed} [{lang.vocab[now.token]}]", loc="left")


def typewriter_widget(seed: int = 0, step: int = 0, top: int = 10, lang: ToyLanguage = LANG) -> widgets.VBox:
    """A step slider and a seed box over `draw_typewriter_step`.

    Returns the VBox; its controls are also attributes for tests and for driving it from code:
    `.step_slider`, `.seed_box`, `.output` (where the figure is drawn), `.figure` (the latest
    figure), `.trace` (the steps of the current sentence) and `.error` (None unless a redraw
    failed; the callback shows the message instead of raising)."""
    use_course_style()
    trace = typewriter_trace(seed, lang)
    step = _check_int("step", step, 0)
    if step >= len(trace):
        raise ValueError(f"step must be in 0 .. {len(trace) - 1} for the sentence of seed {seed}, got {step}")
    top = _check_int("top", top, 1)

    step_slider = widgets.IntSlider(value=step, min=0, max=len(trace) - 1, description="step", continuous_update=True)
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=1_000_000, description="seed")
    output = widgets.Output()
    box = widgets.VBox([widgets.HBox([step_slider, seed_box]), output])
    box.step_slider, box.seed_box, box.output = step_slider, seed_box, output
    box.trace, box.figure, box.error = trace, None, None

    def redraw(_change=None) -> None:
        try:  # a callback must never raise into the frontend: show the problem instead
            # A Figure without pyplot: nothing accumulates in pyplot's registry across redraws.
            fig = Figure(layout="constrained")
            draw_typewriter_step(fig.add_subplot(), box.trace, step_slider.value, top=top, lang=lang)
            box.figure, box.error = fig, None
        except Exception as err:
            fig, box.error = None, f"could not draw step {step_slider.value}: {err}"
        with output:
            output.clear_output(wait=True)
            display(fig if fig is not None else box.error)

    def new_sentence(change) -> None:
        box.trace = typewriter_trace(int(change["new"]), lang)
        last = len(box.trace) - 1
        step_slider.unobserve(redraw, names="value")  # one redraw below, not one per changed bound
        step_slider.value = min(step_slider.value, last)
        step_slider.max = last
        step_slider.observe(redraw, names="value")
        redraw()

    step_slider.observe(redraw, names="value")
    seed_box.observe(new_sentence, names="value")
    redraw()
    return box
