"""Notebook 02's model typewriter: a document typed by the AR model, step by step, with the
model's next-token probabilities beside the exact ones of the document language
(`model_typewriter_widget`)."""

from __future__ import annotations

import textwrap

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.axes import Axes

from helpers.common.plotting import AR_COLOR, TRUTH_COLOR
from helpers.common.validation import check_int, check_positive
from helpers.decoding.model import Transformer
from helpers.language.toylang import LANG, ToyLanguage
from helpers.widgets.stepper import check_step, stepper_widget
from helpers.widgets.typewriter import TypewriterStep, check_language, check_trace, shown_tokens


@torch.no_grad()
def model_typewriter_trace(model: Transformer, seed: int = 0, temperature: float = 1.0) -> list[TypewriterStep]:
    """One document typed by a causal model (KV cache, float64 sampling, seeded), keeping the
    model's next-token distribution at every step. `prefix` excludes the leading <bos>."""
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("model_typewriter_trace needs a causal helpers.decoding.model.Transformer")
    seed = check_int(seed, "seed", 0)
    temperature = check_positive(temperature, "temperature")
    generator = torch.Generator().manual_seed(seed)
    cache = model.new_cache(1)
    step_input = torch.tensor([[LANG.bos_id]])
    typed: list[int] = []
    steps: list[TypewriterStep] = []
    for _ in range(model.config.max_len - 1):
        logits = model(step_input, cache=cache)[0, -1]  # (V,)
        probs = torch.softmax(logits.double() / temperature, dim=-1)  # (V,)
        token = int(torch.multinomial(probs, 1, generator=generator))
        steps.append(TypewriterStep(prefix=list(typed), probs=probs.numpy(), token=token))
        typed.append(token)
        step_input = torch.tensor([[token]])
    return steps


def draw_model_step(ax: Axes, trace: list[TypewriterStep], step: int, top: int = 8, lang: ToyLanguage = LANG) -> None:
    """The model's most likely next tokens (red, the sampled one outlined) beside the exact
    probabilities of the document language (grey), with the document typed so far."""
    step = check_step(step, len(check_trace(trace)))
    top = check_int(top, "top", 1)
    lang = check_language(lang)
    now = trace[step]
    length = len(trace) + 1  # <bos> + one position per step
    try:
        truth = lang.document_next_token_probs([lang.bos_id, *now.prefix], length)
    except ValueError:  # an earlier token already broke the document: no exact distribution exists
        truth = None
    shown = shown_tokens(now.probs, now.token, top)
    x = np.arange(len(shown))
    bars = ax.bar(x - 0.2, now.probs[shown], width=0.4, color=AR_COLOR, label="model")
    bars[list(shown).index(now.token)].set_edgecolor("black")
    bars[list(shown).index(now.token)].set_linewidth(2)
    if truth is not None:
        ax.bar(x + 0.2, truth[shown], width=0.4, color=TRUTH_COLOR, label="exact")
    ax.set_xticks(x, [lang.vocab[t] for t in shown], rotation=30, ha="right")
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("P(next token)")
    ax.legend(loc="upper right")
    note = "" if truth is not None else "   (the text so far is already impossible: no exact distribution)"
    typed = lang.decode(now.prefix).replace(" <eos>", "") or "(nothing typed yet)"
    wrapped = textwrap.fill(f"{typed} [{lang.vocab[now.token]}]", width=95)
    ax.set_title(
        f"step {step} of {len(trace) - 1}: sampled '{lang.vocab[now.token]}' "
        f"with p = {now.probs[now.token]:.3f}{note}\n{wrapped}",
        loc="left",
        fontsize=9,
    )


def model_typewriter_widget(model: Transformer, seed: int = 0, step: int = 0, top: int = 8) -> widgets.VBox:
    """Step through one document typed by `model` (see `stepper_widget`)."""
    top = check_int(top, "top", 1)
    return stepper_widget(
        make_trace=lambda s: model_typewriter_trace(model, s),
        draw=lambda fig, trace, k: draw_model_step(fig.add_subplot(), trace, k, top=top),
        seed=seed,
        step=step,
        last_step=lambda trace: len(trace) - 1,
    )
