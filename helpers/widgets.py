"""Interactive widgets of the course, and the drawing functions they share with static figures.

Every widget is built by a function here, so a test can drive it headless (setting
`slider.value` fires its observers synchronously). Each widget redraws with the same
function the notebook uses for the static figure drawn in the cell before it, so the static
picture and the interactive one always agree. Later notebooks add their widgets here.

Notebook 01: `typewriter_widget` steps through ancestral sampling of one sentence of the toy
language and shows the exact next-token distribution at every step.
Notebook 02: `model_typewriter_widget` does the same for a document typed by the AR model, with
the model's next-token probabilities beside the exact ones.
Notebook 03: `side_by_side_widget` shows the AR document and the diffusion canvas after the same
number of passes.
Notebook 04: `latency_explorer_widget` draws the latency of N tokens, AR vs masked diffusion, on a
device from data/hardware.csv, as helpers.latency projects it (typical efficiency, ceiling dotted).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
import torch
from IPython.display import display
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from helpers.costs import DTYPES, MODEL_SHAPES, model_shape
from helpers.hardware import get_hardware, load_hardware_table
from helpers.latency import EXPLORER_BLOCK, LatencyCurves, latency_curves
from helpers.model import Transformer
from helpers.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR, use_course_style
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


def stepper_widget(make_trace, draw, seed: int, step: int, last_step, label: str = "step") -> widgets.VBox:
    """A slider over the steps of a trace and a seed box that makes a new trace.

    make_trace(seed) -> trace; draw(figure, trace, step) draws one step on a fresh Figure;
    last_step(trace) -> the slider's maximum. The returned VBox exposes `.step_slider`,
    `.seed_box`, `.output` (where the figure is shown), `.figure` (the latest one), `.trace` and
    `.error` (None unless a redraw failed: the callback shows the message instead of raising)."""
    use_course_style()
    trace = make_trace(seed)
    step = _check_int(label, step, 0)
    if step > last_step(trace):
        raise ValueError(f"{label} must be in 0 .. {last_step(trace)} for seed {seed}, got {step}")

    step_slider = widgets.IntSlider(value=step, min=0, max=last_step(trace), description=label)
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=1_000_000, description="seed")
    output = widgets.Output()
    box = widgets.VBox([widgets.HBox([step_slider, seed_box]), output])
    box.step_slider, box.seed_box, box.output = step_slider, seed_box, output
    box.trace, box.figure, box.error = trace, None, None

    def redraw(_change=None) -> None:
        try:  # a callback must never raise into the frontend: show the problem instead
            # A Figure without pyplot: nothing accumulates in pyplot's registry across redraws.
            fig = Figure(layout="constrained")
            draw(fig, box.trace, step_slider.value)
            box.figure, box.error = fig, None
        except Exception as err:
            fig, box.error = None, f"could not draw {label} {step_slider.value}: {err}"
        with output:
            output.clear_output(wait=True)
            display(fig if fig is not None else box.error)

    def new_trace(change) -> None:
        box.trace = make_trace(int(change["new"]))
        last = last_step(box.trace)
        step_slider.unobserve(redraw, names="value")  # one redraw below, not one per changed bound
        step_slider.value = min(step_slider.value, last)
        step_slider.max = last
        step_slider.observe(redraw, names="value")
        redraw()

    step_slider.observe(redraw, names="value")
    seed_box.observe(new_trace, names="value")
    redraw()
    return box


def typewriter_widget(seed: int = 0, step: int = 0, top: int = 10, lang: ToyLanguage = LANG) -> widgets.VBox:
    """A step slider and a seed box over `draw_typewriter_step` (see `stepper_widget`)."""
    top = _check_int("top", top, 1)
    return stepper_widget(
        make_trace=lambda s: typewriter_trace(s, lang),
        draw=lambda fig, trace, k: draw_typewriter_step(fig.add_subplot(), trace, k, top=top, lang=lang),
        seed=seed,
        step=step,
        last_step=lambda trace: len(trace) - 1,
    )


# ---------------------------------------------------------------------------- model typewriter (02)


@torch.no_grad()
def model_typewriter_trace(model: Transformer, seed: int = 0, temperature: float = 1.0) -> list[TypewriterStep]:
    """One document typed by a causal model (KV cache, float64 sampling, seeded), keeping the
    model's next-token distribution at every step. `prefix` excludes the leading <bos>."""
    if not isinstance(model, Transformer) or not model.config.causal:
        raise ValueError("model_typewriter_trace needs a causal helpers.model.Transformer")
    seed = _check_int("seed", seed, 0)
    if not isinstance(temperature, int | float) or temperature <= 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
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
    if not 0 <= step < len(trace):
        raise ValueError(f"step must be in 0 .. {len(trace) - 1}, got {step}")
    now = trace[step]
    length = len(trace) + 1  # <bos> + one position per step
    try:
        truth = lang.document_next_token_probs([lang.bos_id, *now.prefix], length)
    except ValueError:  # an earlier token already broke the document: no exact distribution exists
        truth = None
    shown = _shown_tokens(now.probs, now.token, top)
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
    top = _check_int("top", top, 1)
    return stepper_widget(
        make_trace=lambda s: model_typewriter_trace(model, s),
        draw=lambda fig, trace, k: draw_model_step(fig.add_subplot(), trace, k, top=top),
        seed=seed,
        step=step,
        last_step=lambda trace: len(trace) - 1,
    )


# ---------------------------------------------------------------------------- side by side (03)


@dataclass
class SideBySide:
    """Both decoders on the same budget: the AR document and the diffusion canvas after every pass."""

    ar_tokens: list[int]  # the AR document after all passes (no bos), one token per pass
    ar_probs: list[float]  # probability of each typed token when it was typed
    canvases: list[np.ndarray]  # diffusion canvas (no bos) after pass 0 (all masks), 1, ..., K
    confidences: list[np.ndarray]  # confidence of each filled position after each pass (NaN = masked)


@torch.no_grad()
def side_by_side_trace(ar_model: Transformer, dllm: Transformer, steps: int = 8, seed: int = 0) -> SideBySide:
    """Sample one document with each model at temperature 1: the AR model token by token, the
    diffusion model in `steps` passes with the confidence strategy."""
    from helpers.diffusion import sample

    typed = model_typewriter_trace(ar_model, seed)
    length = dllm.config.max_len - 1
    generator = torch.Generator().manual_seed(seed)
    _, trace = sample(dllm, length, steps, temperature=1.0, generator=generator, return_trace=True)
    canvases = [np.full(length, LANG.mask_id)] + [t["canvas"][0, 1:].numpy() for t in trace]
    confidences = [np.full(length, np.nan)] + [t["confidence"][0, 1:].numpy() for t in trace]
    return SideBySide(
        ar_tokens=[s.token for s in typed],
        ar_probs=[float(s.probs[s.token]) for s in typed],
        canvases=canvases,
        confidences=confidences,
    )


def _draw_row(ax: Axes, words: list[str | None], shade: list[float], color_map, title: str, per_line: int = 16):
    """Positions as boxes, `per_line` to a line, each a word (None = still masked, drawn blank)
    on its colour: the darker, the more probable the token was when it was written."""
    lines = -(-len(words) // per_line)
    ax.set_xlim(0, per_line)
    ax.set_ylim(lines, 0)
    ax.axis("off")
    for i, (word, value) in enumerate(zip(words, shade, strict=True)):
        x, y = i % per_line, i // per_line
        face = "white" if word is None else color_map(value)
        ax.add_patch(Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, facecolor=face, edgecolor="#999999", linewidth=0.6))
        if word is not None:
            dark = value > 0.55
            ax.text(x + 0.5, y + 0.5, word, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_title(title, loc="left", fontsize=9)


def _shades(name: str):
    """A matplotlib colour map from light (p = 0; not white, which means 'masked') to dark (p = 1)."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    return ListedColormap(colormaps[name](np.linspace(0.15, 1.0, 256)))


def _word(token: int) -> str:
    return "eos" if token == LANG.eos_id else LANG.vocab[token]  # padding


def draw_side_by_side_step(fig: Figure, trace: SideBySide, passes: int) -> None:
    """The two decoders after `passes` forward passes each, 16 positions to a line (colour =
    probability of each token when it was written, keys on the right; white = not written yet)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    K = len(trace.canvases) - 1
    n = len(trace.ar_tokens)
    if not 0 <= passes <= n:
        raise ValueError(f"passes must be in 0 .. {n}, got {passes}")
    fig.set_size_inches(10, 3.9)  # one readable box per position
    reds, blues = _shades("Reds"), _shades("Blues")
    top, bottom = fig.subplots(2, 1)
    ar_words = [_word(t) if i < passes else None for i, t in enumerate(trace.ar_tokens)]
    ar_shade = [p if i < passes else 0.0 for i, p in enumerate(trace.ar_probs)]
    _draw_row(
        top,
        ar_words,
        ar_shade,
        reds,
        f"typewriter (AR): {passes} passes, {passes} of {n} positions written",
    )
    k = min(passes, K)
    canvas, conf = trace.canvases[k], np.nan_to_num(trace.confidences[k], nan=0.0)
    d_words = [None if t == LANG.mask_id else _word(t) for t in canvas]
    filled = int(np.sum(canvas != LANG.mask_id))
    done = " (finished)" if passes >= K else ""
    _draw_row(
        bottom,
        d_words,
        list(conf),
        blues,
        f"editor (masked diffusion, K = {K}): {k} passes{done}, {filled} of {n} positions written",
    )
    for ax, shades in ((top, reds), (bottom, blues)):  # colour keys
        key = ScalarMappable(Normalize(0, 1), shades)
        bar = fig.colorbar(key, ax=ax, fraction=0.03, pad=0.01, ticks=[0, 0.5, 1])
        bar.set_label("P(token) when\nwritten", fontsize=8)
        bar.ax.tick_params(labelsize=7)


def draw_side_by_side(ar_model: Transformer, dllm: Transformer, passes: int = 4, steps: int = 8, seed: int = 0):
    """The static figure (a pyplot figure) of `side_by_side_widget` at its default setting."""
    import matplotlib.pyplot as plt

    use_course_style()
    fig = plt.figure(layout="constrained")
    draw_side_by_side_step(fig, side_by_side_trace(ar_model, dllm, steps, seed), passes)
    return fig


def side_by_side_widget(
    ar_model: Transformer, dllm: Transformer, passes: int = 4, steps: int = 8, seed: int = 0
) -> widgets.VBox:
    """A pass slider (0 .. 32) over both decoders and a seed box (see `stepper_widget`)."""
    steps = _check_int("steps", steps, 1)
    return stepper_widget(
        make_trace=lambda s: side_by_side_trace(ar_model, dllm, steps, s),
        draw=lambda fig, trace, k: draw_side_by_side_step(fig, trace, k),
        seed=seed,
        step=passes,
        last_step=lambda trace: len(trace.ar_tokens),
        label="passes",
    )


# ---------------------------------------------------------------------------- latency explorer (04)
# Notebook 04: projected latency of generating N tokens, AR (N passes) vs masked diffusion (K passes),
# on a device from data/hardware.csv; the numbers come from helpers.latency.latency_curves.

EXPLORER_CACHES = {"none (LLaDA: full canvas every pass)": None, "dual cache, blocks of 32 (Fast-dLLM)": "dual"}
EXPLORER_DEFAULTS = dict(
    hardware="NVIDIA H100 SXM",
    model="Llama-3-8B",
    dllm_model="LLaDA-8B",  # the dLLM is projected with LLaDA-8B's own shape (full multi-head attention)
    dtype="bf16",
    batch=1,
    steps=32,
    n_max=4096,
    cache=None,
)


def _seconds_text(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def readable_log_ticks(axis) -> None:
    """Plain numbers (0.05, 0.1, 0.2, 0.5, 1, 2 ...) on a log axis instead of powers of ten."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(FormatStrFormatter(""))


def draw_latency_explorer(
    ax: Axes,
    hardware=EXPLORER_DEFAULTS["hardware"],
    model=EXPLORER_DEFAULTS["model"],
    *,
    dtype: str = "bf16",
    batch: int = 1,
    steps: int = 32,
    n_max: int = 4096,
    cache: str | None = None,
    dllm_model=EXPLORER_DEFAULTS["dllm_model"],
) -> LatencyCurves:
    """Latency vs N on log-log axes: AR (red) and dLLM (blue) at the course's typical efficiency
    (solid) and at the datasheet ceiling (dotted), and the dLLM as pass counting alone would have
    it (grey dash-dot): where the blue curve leaves the grey one, passes stopped being free.
    Returns the curves drawn."""
    curves = latency_curves(
        hardware, model, dtype=dtype, batch=batch, steps=steps, n_max=n_max, cache=cache, dllm_model=dllm_model
    )
    hw, name, dllm_name = get_hardware(hardware), model_shape(model).name, model_shape(dllm_model).name
    kind = "no cache" if cache is None else f"dual cache, blocks of {EXPLORER_BLOCK}"
    ax.plot(curves.n, curves.ar, "o-", color=AR_COLOR, label=f"AR ({name}), KV cache: N passes")
    ax.plot(curves.n, curves.dllm, "s-", color=DLLM_COLOR, label=f"dLLM ({dllm_name}), K = {steps} passes, {kind}")
    ax.plot(curves.n, curves.ar_ceiling, ":", color=AR_COLOR, lw=1.2)
    ax.plot(curves.n, curves.dllm_ceiling, ":", color=DLLM_COLOR, lw=1.2)
    ax.plot([], [], ":", color="black", label="dotted: ceiling (100 % of datasheet)")
    ax.plot(curves.n, curves.ideal, "-.", color=TRUTH_COLOR, lw=1, label="dLLM if a pass cost one typical AR step")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    readable_log_ticks(ax.yaxis)
    ax.set_xticks(curves.n, [str(k) for k in curves.n])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("tokens generated, N")
    ax.set_ylabel(f"projected latency (s)\nsolid: {curves.label}", fontsize=8)
    n, ar, dllm, passes = curves.n[-1], curves.ar[-1], curves.dllm[-1], curves.dllm_passes[-1]
    ceiling_ratio = curves.ar_ceiling[-1] / curves.dllm_ceiling[-1]
    ax.set_title(
        f"{dtype}, batch {batch} on {hw.device} (projection)\n"
        f"at N = {n}: AR {_seconds_text(ar)}, dLLM {_seconds_text(dllm)} typical; AR / dLLM = {ar / dllm:.1f}x "
        f"typical, {ceiling_ratio:.1f}x ceiling; N / K = {n / passes:.1f}x",
        loc="left",
        fontsize=9,
    )
    ax.legend(loc="upper left", fontsize=8)
    return curves


def latency_explorer_widget(
    hardware=EXPLORER_DEFAULTS["hardware"],
    model=EXPLORER_DEFAULTS["model"],
    *,
    dtype: str = "bf16",
    batch: int = 1,
    steps: int = 32,
    n_max: int = 4096,
    cache: str | None = None,
    dllm_model=EXPLORER_DEFAULTS["dllm_model"],
) -> widgets.VBox:
    """Controls over `draw_latency_explorer`: device, AR model, dLLM model, weight format, batch, K,
    largest N, cache.

    Returns the VBox; its controls are attributes for tests and for driving it from code:
    `.hardware_box`, `.model_box`, `.dllm_box`, `.dtype_box`, `.batch_slider`, `.steps_slider`, `.n_max_slider`,
    `.cache_box`, and `.output`, `.figure` (latest figure), `.curves` (latest LatencyCurves),
    `.error` (None unless a redraw failed, e.g. a device with no published peak for the dtype or a
    model that does not fit in its memory: the message is shown instead of raising)."""
    use_course_style()
    latency_curves(  # validates
        hardware, model, dtype=dtype, batch=batch, steps=steps, n_max=n_max, cache=cache, dllm_model=dllm_model
    )
    devices = list(load_hardware_table())
    caches = {v: k for k, v in EXPLORER_CACHES.items()}
    powers = lambda lo, hi: [2**k for k in range(lo, hi + 1)]  # noqa: E731
    batches, step_choices, lengths = powers(0, 9), powers(2, 10), powers(7, 14)
    for value, allowed, what in ((batch, batches, "batch"), (steps, step_choices, "steps"), (n_max, lengths, "n_max")):
        if value not in allowed:
            raise ValueError(f"{what} must be one of {allowed} in the explorer, got {value!r}")

    hardware_box = widgets.Dropdown(options=devices, value=get_hardware(hardware).device, description="device")
    model_box = widgets.Dropdown(options=list(MODEL_SHAPES), value=model_shape(model).name, description="model")
    dllm_box = widgets.Dropdown(options=list(MODEL_SHAPES), value=model_shape(dllm_model).name, description="dLLM")
    dtype_box = widgets.ToggleButtons(options=list(DTYPES), value=dtype, description="weights")
    batch_slider = widgets.SelectionSlider(options=batches, value=batch, description="batch")
    steps_slider = widgets.SelectionSlider(options=step_choices, value=steps, description="K passes")
    n_max_slider = widgets.SelectionSlider(options=lengths, value=n_max, description="largest N")
    cache_box = widgets.Dropdown(options=list(EXPLORER_CACHES), value=caches[cache], description="dLLM cache")
    output = widgets.Output()
    controls = [hardware_box, model_box, dllm_box, dtype_box, batch_slider, steps_slider, n_max_slider, cache_box]
    rows = [widgets.HBox(controls[:3]), dtype_box, widgets.HBox(controls[4:7]), cache_box]
    box = widgets.VBox([*rows, output])
    box.hardware_box, box.model_box, box.dllm_box = hardware_box, model_box, dllm_box
    box.dtype_box, box.cache_box = dtype_box, cache_box
    box.batch_slider, box.steps_slider, box.n_max_slider, box.output = batch_slider, steps_slider, n_max_slider, output
    box.figure, box.curves, box.error = None, None, None

    def redraw(_change=None) -> None:
        try:  # a callback must never raise into the frontend: show the problem instead
            fig = Figure(layout="constrained")
            curves = draw_latency_explorer(
                fig.add_subplot(),
                hardware_box.value,
                model_box.value,
                dtype=dtype_box.value,
                batch=batch_slider.value,
                steps=steps_slider.value,
                n_max=n_max_slider.value,
                cache=EXPLORER_CACHES[cache_box.value],
                dllm_model=dllm_box.value,
            )
            box.figure, box.curves, box.error = fig, curves, None
        except Exception as err:
            fig, box.error = None, f"cannot project this setting: {err}"
        with output:
            output.clear_output(wait=True)
            display(fig if fig is not None else box.error)

    for control in controls:
        control.observe(redraw, names="value")
    redraw()
    return box
