"""Headless tests of the course widgets: set control values, check the figure follows."""

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere: no display needed

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex

from helpers.common.plotting import AR_COLOR, TRUTH_COLOR
from helpers.language.toylang import LANG
from helpers.widgets import draw_typewriter_step, typewriter_trace, typewriter_widget


def title(widget) -> str:
    return widget.figure.axes[0].get_title(loc="left")


def bar_labels(widget) -> list[str]:
    return [t.get_text() for t in widget.figure.axes[0].get_xticklabels()]


def bar_colors(widget) -> list[str]:
    return [to_hex(p.get_facecolor()) for p in widget.figure.axes[0].patches]


# ---------------------------------------------------------------------------- typewriter


def test_trace_is_ancestral_sampling_of_a_valid_sentence():
    for seed in range(5):
        trace = typewriter_trace(seed)
        sentence = trace[-1].prefix
        assert trace[-1].token == LANG.eos_id
        assert LANG.is_valid(sentence)
        assert [s.token for s in trace[:-1]] == sentence  # each step appends its token
        chosen = np.array([s.probs[s.token] for s in trace])
        assert chosen.prod() == pytest.approx(LANG.prob(sentence), rel=1e-12)  # the chain rule
        for s in trace:
            np.testing.assert_array_equal(s.probs, LANG.next_token_probs(s.prefix))


def test_trace_matches_the_hand_written_loop_of_notebook_01():
    rng = np.random.default_rng(2)
    prefix = []
    while (token := int(rng.choice(len(LANG.vocab), p=LANG.next_token_probs(prefix)))) != LANG.eos_id:
        prefix.append(token)
    assert typewriter_trace(2)[-1].prefix == prefix


def test_widget_default_draws_the_static_figure():
    w = typewriter_widget(seed=2, step=5)
    assert w.error is None and w.figure is not None
    trace = typewriter_trace(2)
    assert w.step_slider.max == len(trace) - 1 and w.step_slider.value == 5
    assert title(w) == f"step 5:  {LANG.decode(trace[5].prefix)} [{LANG.vocab[trace[5].token]}]"
    # the same drawing function on a fresh axes gives the same bars
    fig, ax = plt.subplots()
    draw_typewriter_step(ax, trace, 5)
    assert [t.get_text() for t in ax.get_xticklabels()] == bar_labels(w)
    plt.close(fig)


def test_slider_moves_the_figure_and_highlights_the_sampled_token():
    w = typewriter_widget(seed=2, step=5)
    seen = set()
    for step in range(w.step_slider.max + 1):
        w.step_slider.value = step
        assert w.error is None
        now = w.trace[step]
        assert title(w).startswith(f"step {step}:")
        labels, colors = bar_labels(w), bar_colors(w)
        assert 1 <= len(labels) <= 10
        picked = labels.index(LANG.vocab[now.token])
        assert colors[picked] == to_hex(AR_COLOR)
        assert all(c == to_hex(TRUTH_COLOR) for i, c in enumerate(colors) if i != picked)
        seen.add(title(w))
    assert len(seen) == w.step_slider.max + 1  # every step draws something different


def test_first_step_says_nothing_is_typed_and_shows_the_chain_rule_product():
    w = typewriter_widget(seed=2, step=0)
    first = w.trace[0]
    assert title(w) == f"step 0:  (nothing typed yet) [{LANG.vocab[first.token]}]"
    corner = w.figure.axes[0].texts[-1].get_text()
    assert f"= {first.probs[first.token]:.2e}" in corner
    w.step_slider.value = w.step_slider.max  # the last step: the product is P(sentence)
    corner = w.figure.axes[0].texts[-1].get_text()
    assert f"= {LANG.prob(w.trace[-1].prefix):.2e}" in corner


def test_seed_box_types_a_new_sentence_and_clamps_the_step():
    w = typewriter_widget(seed=0, step=0)
    long_max = w.step_slider.max
    w.step_slider.value = long_max
    w.seed_box.value = 11  # "the cats sing ." is shorter than seed 0's sentence
    short = typewriter_trace(11)
    assert w.error is None
    assert w.step_slider.max == len(short) - 1 < long_max
    assert w.step_slider.value == w.step_slider.max
    assert title(w) == f"step {w.step_slider.max}:  {LANG.decode(short[-1].prefix)} [<eos>]"
    assert bar_labels(w) == ["<eos>"]  # after "." the grammar leaves no choice


def test_sampled_token_outside_the_top_is_still_shown():
    trace = typewriter_trace(0)
    for step, s in enumerate(trace):
        rank = int((s.probs > s.probs[s.token]).sum())
        if rank >= 1:
            fig, ax = plt.subplots()
            draw_typewriter_step(ax, trace, step, top=1)
            assert [t.get_text() for t in ax.get_xticklabels()] == [LANG.vocab[s.token]]
            plt.close(fig)
            return
    pytest.fail("seed 0 never samples a token that is not the most likely")


@pytest.mark.parametrize(
    "kwargs",
    [{"seed": -1}, {"seed": 1.5}, {"step": -1}, {"step": 99}, {"top": 0}, {"seed": True}],
)
def test_widget_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        typewriter_widget(**kwargs)


def test_draw_rejects_a_step_outside_the_sentence():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="step must be an int in 0 .. "):
        draw_typewriter_step(ax, typewriter_trace(0), 50)
    plt.close(fig)


# ---------------------------------------------------------------------------- model typewriter (02)


def tiny_model(causal: bool):
    import torch

    from helpers.decoding.model import ModelConfig, Transformer

    torch.manual_seed(0)
    config = ModelConfig(vocab_size=len(LANG.vocab), max_len=17, d_model=16, n_layer=1, n_head=2, causal=causal)
    return Transformer(config).eval()


def test_model_typewriter_trace_is_reproducible_and_complete():
    from helpers.widgets import model_typewriter_trace

    model = tiny_model(causal=True)
    a, b = model_typewriter_trace(model, seed=3), model_typewriter_trace(model, seed=3)
    assert len(a) == 16 and [s.token for s in a] == [s.token for s in b]
    assert all(abs(s.probs.sum() - 1) < 1e-9 for s in a)
    assert a[5].prefix == [s.token for s in a[:5]]
    with pytest.raises(ValueError, match="causal"):
        model_typewriter_trace(tiny_model(causal=False))


def test_model_typewriter_widget_follows_the_slider_and_seed():
    from helpers.widgets import model_typewriter_widget

    w = model_typewriter_widget(tiny_model(causal=True), seed=1, step=2)
    assert w.error is None and title(w).startswith("step 2 of 15")
    w.step_slider.value = 9
    assert w.error is None and title(w).startswith("step 9 of 15")
    before = [s.token for s in w.trace]
    w.seed_box.value = 2
    assert w.error is None and [s.token for s in w.trace] != before
    # an untrained model writes impossible text: the exact bars are left out, not an error
    assert "no exact distribution" in title(w) or len(w.figure.axes[0].patches) > 8


# ---------------------------------------------------------------------------- side by side (03)


def test_side_by_side_shows_both_decoders_after_the_same_passes():
    from helpers.widgets import side_by_side_trace, side_by_side_widget

    ar, dllm = tiny_model(causal=True), tiny_model(causal=False)
    trace = side_by_side_trace(ar, dllm, steps=4, seed=0)
    assert len(trace.canvases) == 5 and (trace.canvases[0] == LANG.mask_id).all()
    assert not (trace.canvases[-1] == LANG.mask_id).any()
    filled = [int((c != LANG.mask_id).sum()) for c in trace.canvases]
    assert filled == [0, 4, 8, 12, 16]
    w = side_by_side_widget(ar, dllm, passes=2, steps=4)
    titles = [ax.get_title(loc="left") for ax in w.figure.axes]
    assert titles[0].startswith("typewriter (AR): 2 passes") and "K = 4): 2 passes" in titles[1]
    w.step_slider.value = 16
    titles = [ax.get_title(loc="left") for ax in w.figure.axes]
    assert w.error is None and "16 of 16" in titles[0] and "(finished)" in titles[1]
    with pytest.raises(ValueError, match="passes must be an int in 0 .. 16"):
        side_by_side_widget(ar, dllm, passes=17, steps=4)


# ---------------------------------------------------------------------------- latency explorer (04)

from helpers.common.plotting import DLLM_COLOR  # noqa: E402
from helpers.roofline.hardware import get_hardware  # noqa: E402
from helpers.widgets import (  # noqa: E402
    EXPLORER_CACHES,
    EXPLORER_DEFAULTS,
    draw_latency_explorer,
    latency_explorer_widget,
    readable_log_ticks,
)


def line_data(figure) -> list[list[float]]:
    return [list(line.get_ydata()) for line in figure.axes[0].lines]


def test_explorer_rejects_values_its_sliders_do_not_offer():
    with pytest.raises(ValueError, match="steps must be one of"):
        latency_explorer_widget(steps=33)


def test_explorer_widget_default_draws_the_static_figure():
    w = latency_explorer_widget()
    assert w.error is None and w.figure is not None
    assert w.hardware_box.value == EXPLORER_DEFAULTS["hardware"] and w.model_box.value == EXPLORER_DEFAULTS["model"]
    fig, ax = plt.subplots()
    curves = draw_latency_explorer(ax)
    assert [list(line.get_ydata()) for line in ax.lines] == line_data(w.figure)
    drawn = [(to_hex(line.get_color()), line.get_linestyle(), len(line.get_ydata())) for line in ax.lines]
    n = len(curves.n)
    assert drawn[:4] == [  # typical solid, the ceiling dotted, in the decoders' colours
        (to_hex(AR_COLOR), "-", n),
        (to_hex(DLLM_COLOR), "-", n),
        (to_hex(AR_COLOR), ":", n),
        (to_hex(DLLM_COLOR), ":", n),
    ]
    drawn_data = [list(line.get_ydata()) for line in ax.lines[:4]]
    assert drawn_data == [list(curves.ar), list(curves.dllm), list(curves.ar_ceiling), list(curves.dllm_ceiling)]
    assert all(c < t for c, t in zip(curves.dllm_ceiling, curves.dllm, strict=True))  # the ceiling is faster
    assert ax.get_ylabel() == "projected latency (s)"
    assert "solid: typical (60 % of bandwidth, 45 % of FLOP/s)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "ceiling (100 % of datasheet)" in [t.get_text() for t in ax.get_legend().get_texts()][2]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert list(curves.n) == list(w.curves.n) and w.dllm_box.value == "LLaDA-8B"
    plt.close(fig)


def test_explorer_controls_move_the_curves():
    w = latency_explorer_widget(n_max=512)
    before = w.curves
    w.steps_slider.value = 256
    assert w.error is None and list(w.curves.dllm_passes) == [32, 64, 128, 256, 256]  # K is capped at N
    assert w.curves.dllm[0] == before.dllm[0]  # N = 32: 32 passes either way
    assert w.curves.dllm[-1] > before.dllm[-1]  # more passes, more time
    w.model_box.value = "Llama-3.2-1B"
    assert w.curves.ar[-1] < before.ar[-1]  # a smaller model reads fewer bytes per step
    w.cache_box.value = [k for k, v in EXPLORER_CACHES.items() if v == "dual"][0]
    assert w.error is None
    w.batch_slider.value = 8
    w.n_max_slider.value = 1024
    assert w.curves.n[-1] == 1024 and "batch 8" in w.figure.axes[0].get_title(loc="left")


def test_explorer_shows_a_message_instead_of_raising():
    w = latency_explorer_widget(n_max=256)
    w.hardware_box.value = "Apple M2 Max"  # no published FLOP/s: cannot be projected
    assert w.error is not None and "no published bf16 peak" in w.error
    w.hardware_box.value = "NVIDIA L4"
    assert w.error is None and "NVIDIA L4" in w.figure.axes[0].get_title(loc="left")
    assert get_hardware("NVIDIA B200 (HGX)").fp32_tflops is None
    w.hardware_box.value = "NVIDIA B200 (HGX)"
    w.dtype_box.value = "fp32"
    assert w.error is not None and "fp32" in w.error
    w.dtype_box.value = "bf16"
    w.hardware_box.value = "Google TPU v5e"  # 16 GB: an 8B model in bf16 does not fit
    assert w.error is not None and "does not fit on Google TPU v5e" in w.error
    w.model_box.value = "Llama-3.2-1B"
    w.dllm_box.value = "Llama-3.2-1B"
    assert w.error is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: typewriter_trace(True), "seed must be an int >= 0, got True"),
        (lambda: typewriter_trace(0, lang="en"), "lang must be a helpers.language.toylang.ToyLanguage"),
        (lambda: typewriter_widget(seed=10**7), r"seed must be an int in \[0, 1000000\]"),
        (lambda: typewriter_widget(step=999), "step must be an int in 0 .. "),
        (lambda: draw_typewriter_step(plt.figure().add_subplot(), typewriter_trace(0), 1.5), "step must be an int in"),
        (lambda: draw_typewriter_step(plt.figure().add_subplot(), [], 0), "trace must be a non-empty list"),
        (lambda: latency_explorer_widget(batch=True), "batch must be an int >= 1, got True"),
        (lambda: latency_explorer_widget(cache="prefix"), "cache must be None or 'dual'"),
        (lambda: readable_log_ticks(3), "axis must be a matplotlib Axis such as ax.yaxis"),
    ],
)
def test_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()
    plt.close("all")


def test_model_widgets_name_what_is_allowed():
    import torch

    from helpers.decoding.model import ModelConfig, Transformer
    from helpers.widgets import draw_side_by_side_step, model_typewriter_trace, side_by_side_trace

    torch.manual_seed(0)
    ar = Transformer(ModelConfig(vocab_size=len(LANG.vocab), max_len=9, d_model=16, n_layer=1, n_head=2)).eval()
    with pytest.raises(ValueError, match="temperature must be a finite number > 0, got nan"):
        model_typewriter_trace(ar, temperature=float("nan"))
    with pytest.raises(ValueError, match="dllm must be a helpers.decoding.model.Transformer"):
        side_by_side_trace(ar, None)
    with pytest.raises(ValueError, match="trace must be the SideBySide"):
        draw_side_by_side_step(plt.figure(), None, 0)
    plt.close("all")


# ---------------------------------------------------------------------------- in a static viewer


def test_every_widget_reads_as_a_pointer_to_its_static_figure_without_a_kernel():
    """A static viewer shows a widget's text form: it must say what it is, not list its children."""
    from helpers.widgets import latency_explorer_widget
    from helpers.widgets.stepper import STATIC_TEXT

    for widget in (typewriter_widget(), latency_explorer_widget()):
        bundle = widget._repr_mimebundle_()
        assert bundle["text/plain"] == STATIC_TEXT and "VBox" not in bundle["text/plain"]
        assert "application/vnd.jupyter.widget-view+json" in bundle  # live where a kernel runs
    plt.close("all")
