import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib import pyplot as plt

from helpers.views.ar_decoder import draw_pass_counts, draw_time_per_token, print_pass_table

LENGTHS = [1, 2, 4, 8]
PASSES = [1, 2, 4, 8]
NAIVE = [1, 3, 10]  # counted for the first three lengths only


def test_the_pass_table_has_a_row_per_length_and_a_blank_where_naive_was_not_counted(capsys):
    print_pass_table(LENGTHS, PASSES, PASSES, NAIVE)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["N", "passes", "positions", "(cached)", "positions", "(naive)"]
    assert [line.split() for line in lines[1:]] == [["1", "1", "1", "1"], ["2", "2", "2", "3"],
                                                   ["4", "4", "4", "10"], ["8", "8", "8"]]  # fmt: skip


def test_the_pass_figure_draws_both_loops_and_names_where_naive_stopped():
    fig = draw_pass_counts(LENGTHS, PASSES, PASSES, NAIVE)
    left, right = fig.axes
    assert list(left.lines[0].get_xdata()) == LENGTHS
    assert "counted to N = 4" in left.get_legend().get_texts()[0].get_text()
    assert [list(line.get_ydata()) for line in right.lines] == [PASSES, NAIVE]
    plt.close(fig)


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
def test_the_pass_views_name_what_is_allowed(args, message):
    for view in (print_pass_table, draw_pass_counts):
        with pytest.raises(ValueError, match=message):
            view(*args)


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
