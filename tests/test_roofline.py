import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.roofline.attainable import attainable, plot_roofline, ridge_point  # noqa: E402
from helpers.roofline.hardware import get_hardware  # noqa: E402

H100_BW, H100_BF16 = 3350e9, 989e12


# ----------------------------------------------------------------------------- the roofline


def test_ridge_point_of_h100_is_about_295():
    assert ridge_point(H100_BF16, H100_BW) == pytest.approx(295.2, abs=0.1)
    assert get_hardware("NVIDIA H100 SXM").ridge_point() == pytest.approx(295.2, abs=0.1)


def test_attainable_below_at_and_above_the_ridge():
    peak, bw = 100.0, 10.0  # ridge at 10 FLOP/B
    assert attainable(1.0, peak, bw) == 10.0  # memory-bound: bandwidth x intensity
    assert attainable(10.0, peak, bw) == 100.0  # at the ridge both roofs agree
    assert attainable(1000.0, peak, bw) == 100.0  # compute-bound: flat
    grid = attainable(np.array([[0.0, 5.0], [10.0, 20.0]]), peak, bw)
    assert grid.shape == (2, 2) and grid.tolist() == [[0.0, 50.0], [100.0, 100.0]]
    assert attainable([2, 4], peak, bw).tolist() == [20.0, 40.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: attainable(-1.0, 1.0, 1.0), "intensity must be finite and >= 0"),
        (lambda: attainable([1.0, np.nan], 1.0, 1.0), "intensity must be finite and >= 0"),
        (lambda: attainable(1.0, 0.0, 1.0), "peak_flops must be a finite number > 0"),
        (lambda: attainable(1.0, 1.0, "fast"), "bandwidth must be a finite number > 0"),
        (lambda: ridge_point(1.0, -3.0), "bandwidth must be a finite number > 0"),
        (lambda: ridge_point(True, 1.0), "peak_flops must be a finite number > 0"),
    ],
)
def test_roofline_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_roofline_draws_roofs_ridge_and_points():
    fig, ax = plt.subplots()
    plot_roofline(ax, 100e9, 10e9, points=[(0.5, 4e9, "gemv"), (50.0, 80e9)], label="this CPU")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roof = ax.lines[0]
    assert roof.get_label() == "this CPU"
    assert list(roof.get_xdata())[1] == 10.0 and list(roof.get_ydata())[1] == 100e9  # the corner is the ridge
    assert len(ax.lines) == 1 + 1 + 2  # roof, ridge marker, two points
    assert any(t.get_text() == "gemv" for t in ax.texts)
    with pytest.raises(ValueError, match="each point must be"):
        plot_roofline(ax, 100e9, 10e9, points=[(1.0,)])
    with pytest.raises(ValueError, match="intensity_range must be"):
        plot_roofline(ax, 100e9, 10e9, intensity_range=(10.0, 1.0))
    plt.close(fig)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: attainable("x", 1.0, 1.0), r"intensity must be a number or an array of numbers .*, got 'x'"),
        (lambda: attainable(True, 1.0, 1.0), "intensity must be finite and >= 0"),
        (lambda: attainable(1.0, float("nan"), 1.0), "peak_flops must be a finite number > 0, got nan"),
        (lambda: ridge_point(1.0, "2"), "bandwidth must be a finite number > 0, got '2'"),
    ],
)
def test_more_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_roofline_default_colours_are_the_course_colours():
    from matplotlib.colors import to_hex

    from helpers.common.plotting import ACCENT_COLOR, TRUTH_COLOR

    fig, ax = plt.subplots()
    plot_roofline(ax, 100e9, 10e9, points=[(0.5, 4e9)])
    assert to_hex(ax.lines[0].get_color()) == to_hex(TRUTH_COLOR) and to_hex(ax.lines[-1].get_color()) == ACCENT_COLOR
    plt.close(fig)


# ----------------------------------------------------------------------------- a pass in decode steps


def test_a_pass_costs_about_one_step_up_to_the_crossover_then_w_over_w_star():
    from helpers.decoding.model import gpt2_small_config
    from helpers.roofline.attainable import pass_in_steps

    widths = [1, 64, 256, 1024, 2048]
    ratios = pass_in_steps(gpt2_small_config(), widths, H100_BW, H100_BF16, bytes_per_param=2, context=512)
    assert ratios[0] < 1 and ratios[1] == pytest.approx(ratios[0], rel=0.01)  # flat, under a step: no KV cache read
    assert ratios[2] < 1.0  # still left of W* = 295
    w_star = H100_BF16 * 2 / (2 * H100_BW)
    assert ratios[3] == pytest.approx(1024 / w_star * ratios[0], rel=0.2)  # compute-bound: about W / W* steps
    assert ratios[4] / ratios[3] == pytest.approx(2, rel=0.25)  # (attention's W^2 adds a little)
    with pytest.raises(ValueError, match="each width must be an int >= 1"):
        pass_in_steps(gpt2_small_config(), [0], H100_BW, H100_BF16)
    with pytest.raises(ValueError, match="widths must hold at least one width"):
        pass_in_steps(gpt2_small_config(), [], H100_BW, H100_BF16)
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0"):
        pass_in_steps(gpt2_small_config(), [1], -1.0, H100_BF16)


def test_the_ridge_is_labelled_in_flop_per_byte():
    fig, ax = plt.subplots()
    plot_roofline(ax, 100e9, 10e9)
    assert any(t.get_text() == "ridge 10 FLOP/byte" for t in ax.texts)  # "B" is the batch in notebook 04
    plt.close(fig)


def test_the_crossover_check_reports_this_machines_w_star(capsys):
    from helpers.exercises import check_crossover_width

    def crossover_width(peak_flops, bandwidth, bytes_per_weight):  # a learner's own, correct function
        return peak_flops * bytes_per_weight / (2 * bandwidth)

    assert check_crossover_width(crossover_width, peak_flops=168e9, bandwidth=15.8e9)
    out = capsys.readouterr().out
    assert out.startswith("✓ crossover_width: ") and "W* = 21 positions" in out
    assert "peak x bytes per weight" not in out  # the report gives numbers, not the formula
