import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace

import pytest
from matplotlib import pyplot as plt

from helpers.measure.measurement import Measurement
from helpers.roofline.costs import decode_step_cost
from helpers.roofline.hardware import get_hardware
from helpers.views import roofline as views

ROOFS = SimpleNamespace(peak_flops=150e9, bandwidth=20e9, stream_bandwidth=33e9)


def test_the_roofline_figures_draw_what_they_are_given():
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    h100 = get_hardware("NVIDIA H100 SXM")
    points = views.roof_points({"decode": cost}, h100.peak_flops("bf16"), h100.bandwidth)
    assert points["decode"][0] == pytest.approx(cost.intensity)
    rows = [(b, 1e-3 * (1 + b / 16), b / 2, 2 * b * 4096**2 / (1e-3 * (1 + b / 16))) for b in (1, 4, 16, 256)]
    fig = views.draw_batch_sweep(rows, ROOFS, 4096, 4096)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 3  # measured, the roofline, and the ridge's batch
    left = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"the ridge, at B = {views.ridge_batch(ROOFS, 4096, 4096):.1f}" in left
    fig = views.draw_batch_sweep(rows, ROOFS, 4096, 4096, gpu=h100, gpu_points=points)
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any("measured roofs" in label for label in labels) and any("H100 SXM, bf16" in label for label in labels)
    assert any(t.get_text() == "decode" for t in fig.axes[1].texts)  # the GPU's points are named
    passes = [SimpleNamespace(width=w, ratio=max(1, w / 8), predicted_ratio=max(0.9, w / 16)) for w in (1, 2, 4, 64)]
    fig, ax = plt.subplots()
    views.draw_width_sweep(ax, passes, 16.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "this CPU's W* = 16" in legend and "one AR decode step" in legend  # the line at 1 is named
    fig, ax = plt.subplots()
    gpu = {"label": "H100, projected", "widths": [1, 300, 1024], "ratios": [0.93, 1.0, 3.5], "crossover": 295.2}
    views.draw_width_sweep(ax, passes, 16.0, gpu)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "H100, projected" in legend and "its W* = 295" in legend
    assert 1024 in ax.get_xticks()  # the projection's widest point gets a tick
    plt.close("all")
    with pytest.raises(ValueError, match="rows must hold at least one"):
        views.draw_batch_sweep([], ROOFS, 4096, 4096)
    with pytest.raises(ValueError, match="gpu must be None or a Hardware row"):
        views.draw_batch_sweep(rows, ROOFS, 4096, 4096, gpu="H100")
    with pytest.raises(ValueError, match="gpu_points must map labels"):
        views.draw_batch_sweep(rows, ROOFS, 4096, 4096, gpu=h100, gpu_points=[(1, 1)])
    with pytest.raises(ValueError, match="gpu must be None or a dict with the keys"):
        views.draw_width_sweep(ax, passes, 16.0, {"widths": [1]})
    with pytest.raises(ValueError, match="equally long"):
        views.draw_width_sweep(ax, passes, 16.0, {**gpu, "ratios": [1.0]})
    plt.close("all")


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
    step.bandwidth = step.gemv.si
    table = views.prediction_table(step, ROOFS)
    assert "+5.0 %" in table and "-10.0 %" in table and table.count("\n") == 8 and "20.0 ms" in table
    assert "vs measured" in table  # the sign of the last column is named: predicted / measured - 1
    assert "MBU:      50 % of the STREAM bandwidth" in table and "the faster of copy and triad" in table
    summary = views.step_summary(step)  # the core's two labelled lines: MBU stays in the table, under Going deeper
    predicted, measured = summary.split("\n")
    assert predicted == "predicted, its bytes at its own GEMVs' 18.0 GB/s: 21.0 ms"
    assert measured == "measured in section 1: 20.0 ms (the prediction is 5 % above it)"
    assert "MBU" not in summary
    step.predicted_s = 0.017
    assert summary != views.step_summary(step) and "(the prediction is 15 % below it)" in views.step_summary(step)


def test_the_roofline_panel_names_a_few_batches_on_leader_lines_and_may_add_a_gpu():
    rows = [(b, 1e-3 * (1 + b / 16), b / 2, 2 * b * 4096**2 / (1e-3 * (1 + b / 16))) for b in (1, 2, 4, 16, 4096)]
    fig, ax = plt.subplots()
    views.draw_roofline_panel(ax, rows, ROOFS)
    named = {t.get_text(): t for t in ax.texts if t.get_text().startswith("B = ")}
    assert set(named) == {"B = 1", "B = 16", "B = 4096"}  # B = 2 and 4 stay unnamed: their labels would crowd
    for label in named.values():  # centred under its own point, joined to it by a line: never read as a neighbour's
        assert label.get_horizontalalignment() == "center" and label.arrow_patch is not None
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("H100" in entry for entry in legend)
    h100 = get_hardware("NVIDIA H100 SXM")
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    fig, ax = plt.subplots()
    views.draw_roofline_panel(ax, rows, ROOFS, gpu=h100, gpu_points=views.roof_points({"decode": cost}, 1e15, 3e12))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("H100 SXM, bf16" in entry for entry in legend) and any(t.get_text() == "decode" for t in ax.texts)
    with pytest.raises(ValueError, match="rows must hold at least one"):
        views.draw_roofline_panel(ax, [], ROOFS)
    plt.close("all")


def test_the_step_sits_on_this_machines_roofline_with_both_regions_named():
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    roofs = SimpleNamespace(peak_flops=150e9, bandwidth=20e9, ridge=7.5)
    fig, ax = plt.subplots()
    views.draw_step_on_roofline(ax, roofs, cost, 1.0)
    texts = [t.get_text() for t in ax.texts]
    assert "memory-bound" in texts and "compute-bound" in texts and "section 1's decode step" in texts
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["this CPU, float32 (measured roofs)"]
    point = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(point) == 1 and point[0].get_ydata()[0] == pytest.approx(cost.flops)  # FLOPs in one second
    with pytest.raises(ValueError, match="measured_s must be the step's time"):
        views.draw_step_on_roofline(ax, roofs, cost, 0.0)
    plt.close("all")


def test_the_ridge_as_a_batch_and_the_batch_summary():
    # the ridge's batch: the weights' bytes at the memory roof take as long as B vectors' FLOPs at the compute roof
    ridge_b = views.ridge_batch(ROOFS, 4096, 4096)
    weights_s, vector_bytes = 4 * 4096**2 / ROOFS.bandwidth, 4 * 8192
    assert weights_s + ridge_b * vector_bytes / ROOFS.bandwidth == pytest.approx(
        ridge_b * 2 * 4096**2 / ROOFS.peak_flops
    )
    assert ridge_b == pytest.approx(2 * ROOFS.peak_flops / ROOFS.bandwidth, rel=0.01)  # about twice the ridge point
    slow = SimpleNamespace(peak_flops=1e20, bandwidth=20e9)  # FLOPs take no time: only bytes count
    assert views.ridge_batch(slow, 4096, 4096) == float("inf")  # never compute-bound
    rows = [(b, 1e-3 * {1: 1, 2: 2.1, 16: 4.4}.get(b, b), b / 2, 1.0) for b in (1, 2, 4, 16)]
    lines = views.batch_summary(rows, ROOFS, 4096, 4096).split("\n")
    assert lines == [
        "B =  2 costs 2.1x B = 1's time (the roofline says 1.0x)",
        "B = 16 costs 4.4x B = 1's time (16 calls with B = 1: 16x)",
    ]
    with pytest.raises(ValueError, match=r"missing \[16\]"):
        views.batch_summary(rows[:3], ROOFS, 4096, 4096)


def test_a_disturbed_step_is_flagged_where_the_step_is_read():
    steady = Measurement.from_samples([0.030, 0.031, 0.032, 0.033, 0.034], "s")  # IQR 2 ms of a 32 ms median
    assert views.disturbance(steady) == ""
    assert views.step_line(steady) == f"one decode step: {steady}"  # one line, no flag
    busy = Measurement.from_samples([0.10, 0.30, 0.40, 0.60, 0.70], "s")  # IQR 300 ms of a 400 ms median
    flag = "this run looks disturbed (IQR 75 % of the median): rerun from section 1 on a quiet machine"
    assert views.disturbance(busy) == flag
    assert views.step_line(busy).split("\n") == [f"one decode step: {busy}", flag]
    edge = Measurement(value=0.04, unit="s", spread=0.01)  # exactly a quarter: still steady
    assert views.disturbance(edge) == "" and views.DISTURBED_IQR == 0.25
    assert views.disturbance(Measurement(value=0.04, unit="s", spread=0.0101)) != ""
    cost = decode_step_cost("Llama-3-8B", context=512, bytes_per_param=2)
    step = SimpleNamespace(measured=steady, predicted_s=0.030, bandwidth=18e9, cost=cost)
    assert views.step_summary(step).count("\n") == 1  # steady: the two labelled lines only
    step.measured = busy
    assert views.step_summary(step).split("\n")[-1] == flag  # section 4's lines carry the flag
    with pytest.raises(ValueError, match="positive measurement"):
        views.disturbance(Measurement(value=0.0, unit="s", spread=0.0))


def test_section_1s_prediction_is_the_weights_at_the_given_bandwidth():
    cost = SimpleNamespace(weight_bytes=494.6e6, kv_bytes=37.7e6)  # GPT-2 small, float32
    assert views.hand_prediction(cost, 20e9) == "predicted (495 MB of weights at 20 GB/s): 24.7 ms"
    with pytest.raises(ValueError, match="bytes per second"):
        views.hand_prediction(cost, 0.0)
