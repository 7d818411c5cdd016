import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib import pyplot as plt

from helpers.decoding.model import ModelConfig, Transformer
from helpers.diffusion.sampler import sample
from helpers.language.toylang import LANG
from helpers.views.canvas_figure import draw_canvas_history


def trace_of_an_editor():
    torch.manual_seed(0)
    model = Transformer(
        ModelConfig(vocab_size=len(LANG.vocab), max_len=17, d_model=16, n_layer=1, n_head=2, causal=False)
    )
    generator = torch.Generator().manual_seed(0)
    _, trace = sample(model, 16, 8, rule="ancestral", remask=0.5, temperature=1.0, batch_size=2,
                      generator=generator, return_trace=True)  # fmt: skip
    return trace


def test_the_history_draws_a_box_per_position_and_pass_and_marks_the_edits():
    trace = trace_of_an_editor()
    fig, ax = plt.subplots()
    draw_canvas_history(ax, trace, 1, range(1, 9), range(0, 4))
    boxes = [p for p in ax.patches if p.get_fill()]
    assert len(boxes) == 8 * 4
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pass 1", "pass 2", "pass 3", "pass 4"]
    revised = sum(int(trace[p]["revised"][1, 1:9].sum()) for p in range(4))
    red = sum(1 for p in boxes if p.get_alpha() == 0.85)
    assert red == revised
    plt.close(fig)


@pytest.mark.parametrize(
    "args, message",
    [
        (([], 0, range(1, 3), range(0, 1)), "trace must be the non-empty list"),
        ((None, 0, range(1, 3), range(0, 1)), "trace must be the non-empty list"),
        (("trace", 5, range(1, 3), range(0, 1)), r"row must be an int in \[0, 1\]"),
        (("trace", 0, range(1, 40), range(0, 1)), "positions must be a non-empty range inside 0 .. 16"),
        (("trace", 0, [1, 2], range(0, 1)), "positions must be a non-empty range"),
        (("trace", 0, range(1, 3), range(0, 99)), "passes must be a non-empty range inside"),
    ],
)
def test_the_history_names_what_is_allowed(args, message):
    trace = trace_of_an_editor()
    args = tuple(trace if a == "trace" else a for a in args)
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=message):
        draw_canvas_history(ax, *args)
    plt.close(fig)
