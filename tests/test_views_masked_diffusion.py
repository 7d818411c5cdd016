import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt
from matplotlib.text import Text

from helpers.quality.matched_quality import load_sweep
from helpers.quality.matching import target_from
from helpers.quality.scores import exact_documents
from helpers.views import editor
from helpers.views import sweep as views


@pytest.fixture(scope="module")
def sweep():
    return load_sweep()


def test_the_tables_show_every_sampler_and_the_reference(sweep):
    exact = exact_documents(33)
    validity = views.validity_table(sweep)
    assert "99.8 ± 0.1" in validity and "tau = 0.5 :  1.29 tokens per pass" in validity and validity.count("\n") > 15
    quality = views.quality_table(sweep, exact)
    assert all(views.short(n) in quality for n in views.MAIN) and "AR, T = 1" in quality and "3.96" in quality
    assert "slowest setting: confidence K = 32" in quality and "threshold tau = 0.9, MDLM K = 128" in quality
    parts = views.decomposition_table(sweep)
    assert "-15.26" in parts and parts.count("\n") == len(views.MAIN) + 1
    matched = views.matched_table(sweep, target_from(sweep.ar))
    assert matched.count("never") >= 5 and "1.32 ± 0.01, settings 1.29-1.43" in matched
    assert "never (validity, length)" in matched  # every measure a setting fails is named (MDLM)
    assert matched.splitlines()[0].startswith("the language:      100.0 % valid, 3.96 sentences")  # the reference
    assert "0.708" in views.first_word_table(sweep) and "KL" in views.entropy_bound_table(sweep)


def test_the_figures_draw_every_sampler(sweep):
    target = target_from(sweep.ar)
    fig, ax = plt.subplots()
    views.draw_validity(ax, sweep, target)
    assert len(ax.get_legend().get_texts()) == len(views.MAIN) + 1
    ar_line = [line for line in ax.lines if line.get_label().startswith("AR model")]
    assert len(ar_line) == 1 and set(ar_line[0].get_ydata()) == {100 * sweep.ar.validity}  # a line, not a marker
    assert "none does" in ax.get_title(loc="left")
    fig = views.draw_frontier(sweep, target, exact_documents(33))
    assert len(fig.axes) == 3  # every setting, then zooms on the confidence cluster and on the language
    renderer = fig.canvas.get_renderer()
    legends = [legend.get_window_extent(renderer) for legend in fig.legends]  # below the panels, over no point
    assert len(legends) == 2 and not legends[0].overlaps(legends[1])
    for panel in fig.axes:  # the tokens-per-pass labels overlap neither each other nor the legends
        boxes = [Text.get_window_extent(t, renderer) for t in panel.texts]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
        assert not any(legend.overlaps(panel.get_window_extent(renderer)) for legend in legends)
    cluster_labels = [(t.get_text(), t.get_color()) for t in fig.axes[1].texts]
    assert ("1.0", views.STYLE["confidence"][1]) in cluster_labels and ("1.1", "black") in cluster_labels
    assert len({ax.get_ylabel() for ax in fig.axes}) == 1  # one unit on every panel
    fig = views.draw_eos_per_pass({"confidence": np.ones(32)}, 3.45)
    assert fig.axes[0].lines[0].get_ydata()[-1] == 32
    plt.close("all")
    with pytest.raises(ValueError, match="eos must map sampler names"):
        views.draw_eos_per_pass({"greedy": np.ones(3)}, 3.45)
    with pytest.raises(ValueError, match="sweep must be a helpers.quality.matched_quality.Sweep"):
        views.validity_table("sweep")


def test_the_editor_tables_compare_at_equal_k_and_at_equal_passes(sweep):
    editors = [n for n in sweep.runs if n.startswith("MDLM + ")]
    table = editor.editor_table(sweep, "ancestral (MDLM)", editors)
    assert table.count("\n") == 8 and "+15.1 ± 2.2" in table
    same_passes = editor.equal_passes_table(sweep, ["MDLM + ReMDM-cap 0.4"])
    assert "tok/pass" in same_passes and "  8           4.02    +7.5 ± 1.3" in same_passes
    assert same_passes.splitlines()[-1].endswith("-")  # K = 32: faster than any MDLM setting measured
    assert editor.interpolated_validity(sweep.runs["ancestral (MDLM)"], 99.0) is None
    assert "4.06" in editor.remaskings_table()
    from helpers.quality.exact_sweep import load_exact_sweep

    summary = editor.editor_summary(sweep, load_exact_sweep()).splitlines()
    assert summary[-3].startswith("passes run of the K steps") and summary[-1].split()[-2:] == ["15.7", "30.4"]
    headline = editor.editor_headline(sweep).splitlines()  # section 6: the same K = 16 numbers, trained model only
    assert headline[1].split()[-2:] == ["20.7", "14.0"] and headline[2].split()[-2:] == ["35.8", "15.7"]
    assert headline[4].split()[-2:] == ["55.4", "16.0"] and len(headline) == 5
    with pytest.raises(ValueError, match="base and editors must be samplers"):
        editor.editor_table(sweep, "greedy", editors)
    with pytest.raises(ValueError, match="base and editors must be samplers"):
        editor.equal_passes_table(sweep, ["greedy"])


def test_a_label_with_no_room_is_left_out():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set(xlim=(0, 1), ylim=(0, 1))
    fig.canvas.draw()
    crowd = [(x, y, 6.0) for x in np.arange(0, 0.7, 0.04) for y in np.arange(0, 1.01, 0.04)]  # the left 70 %
    placed = views.place_labels(ax, [(0.9, 0.5, "free", "k"), (0.3, 0.52, "boxed in", "k")], crowd)
    assert [t.get_text() for t in placed] == ["free"]
    plt.close(fig)


def test_a_repair_is_found_and_drawn():
    from helpers.decoding.checkpoints import load_pretrained
    from helpers.diffusion.sampler import sample

    settings = dict(rule="ancestral", remask=0.4, remask_schedule="cap", temperature=1.0, batch_size=64)
    edited, trace = sample(
        load_pretrained("mdlm"), 32, 16, generator=torch.Generator().manual_seed(0), return_trace=True, **settings
    )
    row, pos, first, last = editor.find_repair(trace, edited)
    assert first < last and bool(trace[last]["committed"][row, pos])
    editor.draw_repair(trace, edited, lambda d: "doc")
    assert f"positions {pos - 8}-{pos + 2} around the repair" in plt.gca().get_title(loc="left")
    plt.close("all")
    with pytest.raises(ValueError, match="no revision in this trace repaired a city name"):
        editor.find_repair(trace[:1], edited)
