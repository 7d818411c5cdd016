import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace

import pytest
from matplotlib import pyplot as plt

from helpers.costs import decode_step_cost
from helpers.measurement import Measurement
from helpers.views import roofline as views

ROOFS = SimpleNamespace(peak_flops=150e9, bandwidth=20e9, stream_bandwidth=33e9)


def test_the_roofline_figures_draw_what_they_are_given():
    fig, ax = plt.subplots()
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    points = views.roof_points({"decode": cost}, 989e12, 3350e9)
    assert points["decode"][0] == pytest.approx(cost.intensity)
    views.draw_two_roofs(ax, ROOFS, 989e12, 3350e9, points)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("GEMV bandwidth" in label for label in labels)  # the CPU roof names its bandwidth
    rows = [(b, 1e-3 * (1 + b / 16), b / 2, 2 * b * 4096**2 / (1e-3 * (1 + b / 16))) for b in (1, 4, 16, 256)]
    fig = views.draw_batch_sweep(rows, ROOFS, 4096, 4096)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 2
    passes = [SimpleNamespace(width=w, ratio=max(1, w / 8), predicted_ratio=max(0.9, w / 16)) for w in (1, 2, 4, 64)]
    fig, ax = plt.subplots()
    views.draw_width_sweep(ax, passes, 16.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "W* = 16" in legend[-1] and "one AR decode step" in legend  # the line at 1 is named
    plt.close("all")
    with pytest.raises(ValueError, match="rows must hold at least one"):
        views.draw_batch_sweep([], ROOFS, 4096, 4096)
    with pytest.raises(ValueError, match="points must map labels"):
        views.draw_two_roofs(ax, ROOFS, 1, 1, [(1, 1)])


def test_the_prediction_table_sets_three_bandwidths_beside_the_measurement():
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    step = SimpleNamespace(
        measured=Measurement.from_samples([0.02, 0.02, 0.02], "s"),
        gemv=Measurement.from_samples([18.0, 18.0], "GB/s"),
        predicted_s=0.021,
        predicted_generic_s=0.018,
        cost=cost,
        achieved_bandwidth=17e9,
        vs_gemv=0.94,
        mbu=0.5,
    )
    table = views.prediction_table(step, ROOFS)
    assert "+5.0 %" in table and "-10.0 %" in table and table.count("\n") == 8 and "20.0 ms" in table
