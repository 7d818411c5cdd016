import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib import pyplot as plt
from matplotlib.text import Text

from helpers.views.ar_decoder import draw_pass_counts, draw_time_per_token, draw_typed_step

LENGTHS = [1, 2, 4, 8]
PASSES = [1, 2, 4, 8]
NAIVE = [1, 3, 10]  # counted for the first three lengths only
NAIVE_PASSES = [1, 2, 4]


def test_the_pass_figure_draws_both_loops_and_names_where_naive_stopped():
    fig = draw_pass_counts(LENGTHS, PASSES, PASSES, NAIVE, NAIVE_PASSES)
    left, right = fig.axes
    assert [list(line.get_xdata()) for line in left.lines] == [LENGTHS, LENGTHS[:3]]
    assert [list(line.get_ydata()) for line in left.lines] == [PASSES, NAIVE_PASSES]
    assert "counted to N = 4" in left.get_legend().get_texts()[1].get_text()
    assert [list(line.get_ydata()) for line in right.lines] == [PASSES, NAIVE]
    plt.close(fig)


def test_the_pass_figure_names_no_stop_when_naive_was_counted_at_every_length():
    fig = draw_pass_counts(LENGTHS, PASSES, PASSES, [1, 3, 10, 36], [1, 2, 4, 8])
    left, right = fig.axes
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["KV cache", "naive loop"]
    cached_text, naive_text = (t.get_text() for t in right.get_legend().get_texts())
    assert cached_text.endswith("(slope 1)")
    assert naive_text.endswith("(slope about 2 at large N)")  # 1 + 2 + ... + N: below slope 2 at small N
    plt.close(fig)


def test_the_pass_figure_writes_plain_numbers_on_its_log_axes():
    lengths = [2**i for i in range(8)]
    fig = draw_pass_counts(lengths, lengths, lengths, [n * (n + 1) // 2 for n in lengths], lengths)
    fig.canvas.draw()
    left, right = fig.axes
    labels = {axis: [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
              for axis in (left.xaxis, left.yaxis, right.xaxis, right.yaxis)}  # fmt: skip
    assert all(labels.values()) and not any("^" in text for texts in labels.values() for text in texts)
    assert {"1", "10", "100"} <= set(labels[left.xaxis]) and {"1", "10", "100", "1000"} <= set(labels[right.yaxis])
    plt.close(fig)


def test_the_naive_passes_lie_on_the_cached_ones_yet_stay_visible():
    """Equal counts must not hide one loop under the other: different markers, the naive one hollow."""
    fig = draw_pass_counts(LENGTHS, PASSES, PASSES, NAIVE, NAIVE_PASSES)
    cached, naive = fig.axes[0].lines
    assert cached.get_marker() != naive.get_marker() and cached.get_linestyle() != naive.get_linestyle()
    assert naive.get_markerfacecolor() == "none" and naive.get_markersize() > cached.get_markersize()
    plt.close(fig)


def test_no_legend_covers_a_point_of_the_pass_figure():
    lengths = [2**i for i in range(8)]
    fig = draw_pass_counts(lengths, lengths, lengths, [n * (n + 1) // 2 for n in lengths], lengths)
    fig.canvas.draw()
    for ax in fig.axes:
        box = ax.get_legend().get_window_extent()
        for line in ax.lines:
            for x, y in ax.transData.transform(line.get_xydata()):
                assert not box.contains(x, y), f"{ax.get_title()!r}: the legend covers ({x:.0f}, {y:.0f})"
    plt.close(fig)


@pytest.mark.parametrize(
    "passes_naive, message",
    [
        ([1, 2], r"passes_naive needs one entry per naive count \(3, as positions_naive\), got 2"),
        ([1, 2, -4], "every entry of passes_naive must be an int >= 0"),
        ([], "passes_naive must be a non-empty list of ints"),
    ],
)
def test_the_pass_figure_names_what_passes_naive_allows(passes_naive, message):
    with pytest.raises(ValueError, match=message):
        draw_pass_counts(LENGTHS, PASSES, PASSES, NAIVE, passes_naive)


def test_the_time_figure_draws_the_naive_loop_where_it_was_timed():
    fig = draw_time_per_token([16, 64, 256], [0.3, 0.3, 0.31], [0.4, 0.5])
    (ax,) = fig.axes
    assert [len(line.get_xdata()) for line in ax.lines] == [3, 2]
    low, high = ax.get_ylim()
    assert low < 0.3 and high > 0.5
    plt.close(fig)


@pytest.mark.parametrize(
    "args, message",
    [
        (([], PASSES, PASSES, NAIVE), "lengths must be a non-empty list of ints >= 1"),
        (([1, 4, 2, 8], PASSES, PASSES, NAIVE), "lengths must increase"),
        ((LENGTHS, PASSES[:3], PASSES, NAIVE), r"passes needs one entry per length \(4\), got 3"),
        ((LENGTHS, PASSES, [1, 2, -4, 8], NAIVE), "every entry of positions_cached must be an int >= 0"),
        ((LENGTHS, PASSES, PASSES, [1, 3, 10, 36, 136]), "positions_naive may cover at most the 4 lengths"),
        ((LENGTHS, [1.0, 2, 4, 8], PASSES, NAIVE), "every entry of passes must be an int"),
    ],
)
def test_the_pass_view_names_what_is_allowed(args, message):
    with pytest.raises(ValueError, match=message):
        draw_pass_counts(*args, NAIVE_PASSES)


@pytest.mark.parametrize(
    "args, message",
    [
        (([16, 64], [0.3], [0.4]), r"cached_ms needs one time per length \(2\), got 1"),
        (([16, 64], [0.3, 0.3], [0.4, 0.5, 0.6]), "naive_ms may cover at most the 2 lengths"),
        (([16, 64], [0.3, float("nan")], [0.4]), "every entry of cached_ms must be a finite time > 0 in ms"),
        (([16, 64], [0.3, 0.3], [0.0]), "every entry of naive_ms must be a finite time > 0 in ms"),
        (([16, 64], [0.3, 0.3], []), "naive_ms must be a non-empty list of times"),
    ],
)
def test_the_time_view_names_what_is_allowed(args, message):
    with pytest.raises(ValueError, match=message):
        draw_time_per_token(*args)


def _typed_trace():
    """A 32-step trace (the course's canvas) with known probabilities. After "the" the exact language
    forbids "the", "sleeps" and "."; the model gives the last two 2e-03. All four tokens are shown
    (top 4): five bars too short to see."""
    import numpy as np

    from helpers.language.toylang import LANG
    from helpers.widgets.typewriter import TypewriterStep

    the, cat, sleeps, stop = (LANG.stoi[w] for w in ("the", "cat", "sleeps", "."))
    probs = np.full(len(LANG.vocab), 1e-5)
    probs[[the, cat, sleeps, stop]] = [0.5, 0.4, 2e-3, 2e-3]
    probs /= probs.sum()
    steps = [TypewriterStep(prefix=[], probs=probs, token=the), TypewriterStep(prefix=[the], probs=probs, token=cat)]
    return steps + [TypewriterStep(prefix=[the, cat], probs=probs.copy(), token=cat) for _ in range(30)]


def test_the_typed_step_fits_its_y_axis_to_the_bars_and_marks_the_invisible_ones():
    fig, ax = plt.subplots()
    draw_typed_step(ax, _typed_trace(), step=1, top=4)
    tallest = max(bar.get_height() for bar in ax.patches)
    assert ax.get_ylim() == pytest.approx((0, 1.4 * tallest))  # not 0 .. 1.12: bars near 0.25 stay tall
    tiny = [bar for bar in ax.patches if bar.get_height() < 0.02 * tallest]
    marks = [text.get_text() for text in ax.texts]
    assert tiny and len(marks) == len(tiny)  # one label per bar too short to see
    assert sorted(marks) == ["0", "0", "0", "2e-03", "2e-03"]  # the exact zeros and the model's tiny values
    (title,) = [t for t in ax.get_children() if isinstance(t, Text) and t.get_text().startswith("step 1 of 31")]
    assert title.get_fontsize() == 11  # draw_model_step's 9 was too small to read
    assert "with model probability 0." in title.get_text() and " p = " not in title.get_text()  # p: top-p's
    plt.close(fig)


def test_the_typed_step_keeps_the_full_axis_when_a_bar_is_near_certain():
    import numpy as np

    trace = _typed_trace()
    trace[0].probs[:] = np.eye(len(trace[0].probs))[trace[0].token] * 0.999 + 0.001 / len(trace[0].probs)
    fig, ax = plt.subplots()
    draw_typed_step(ax, trace, step=0)
    assert ax.get_ylim()[1] == pytest.approx(1.12)
    plt.close(fig)
