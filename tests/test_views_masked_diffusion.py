import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from matplotlib import pyplot as plt

from helpers.matched_quality import load_sweep
from helpers.matching import target_from
from helpers.quality import exact_documents
from helpers.views import editor
from helpers.views import sweep as views


@pytest.fixture(scope="module")
def sweep():
    return load_sweep()


def test_the_tables_show_every_strategy_and_the_reference(sweep):
    exact = exact_documents(33)
    validity = views.validity_table(sweep)
    assert "99.8 ± 0.1" in validity and "tau = 0.5 :  1.29 tokens per pass" in validity and validity.count("\n") > 15
    quality = views.quality_table(sweep, exact)
    assert all(views.short(n) in quality for n in views.MAIN) and "AR, T = 1" in quality and "3.96" in quality
    parts = views.decomposition_table(sweep)
    assert "-15.26" in parts and parts.count("\n") == len(views.MAIN) + 1
    matched = views.matched_table(sweep, target_from(sweep.ar))
    assert matched.count("never") >= 5 and "1.28 ± 0.02 [1.18, 1.29]" in matched
    assert "0.708" in views.first_word_table(sweep) and "KL" in views.entropy_bound_table(sweep)


def test_the_figures_draw_every_strategy(sweep):
    target = target_from(sweep.ar)
    fig, ax = plt.subplots()
    views.draw_validity(ax, sweep, target)
    assert len(ax.get_legend().get_texts()) == len(views.MAIN) + 1
    fig = views.draw_frontier(sweep, target, exact_documents(33))
    assert len(fig.axes) == 2
    fig = views.draw_eos_per_pass({"confidence": np.ones(32)}, 3.45)
    assert fig.axes[0].lines[0].get_ydata()[-1] == 32
    plt.close("all")
    with pytest.raises(ValueError, match="eos must map strategy names"):
        views.draw_eos_per_pass({"greedy": np.ones(3)}, 3.45)
    with pytest.raises(ValueError, match="sweep must be a helpers.matched_quality.Sweep"):
        views.validity_table("sweep")


def test_the_editor_tables_compare_at_equal_k_and_at_equal_passes(sweep):
    editors = [n for n in sweep.runs if n.startswith("MDLM + ")]
    table = editor.editor_table(sweep, "ancestral (MDLM)", editors)
    assert table.count("\n") == 8 and "+15.1 ± 2.2" in table
    assert "4.02:  +7.5 ± 1.3" in editor.equal_passes_table(sweep, ["MDLM + ReMDM-cap 0.4"])
    assert editor.interpolated_validity(sweep.runs["ancestral (MDLM)"], 99.0) is None
    assert "4.06" in editor.remaskings_table()
    with pytest.raises(ValueError, match="base and editors must be strategies"):
        editor.editor_table(sweep, "greedy", editors)


def test_a_repair_is_found_and_drawn():
    from helpers.checkpoints import load_pretrained
    from helpers.diffusion import sample

    settings = dict(strategy="ancestral", remask=0.4, remask_schedule="cap", temperature=1.0, batch_size=64)
    edited, trace = sample(
        load_pretrained("mdlm"), 32, 16, generator=torch.Generator().manual_seed(0), return_trace=True, **settings
    )
    row, pos, first, last = editor.find_repair(trace, edited)
    assert first < last and bool(trace[last]["committed"][row, pos])
    editor.draw_repair(trace, edited, lambda d: "doc")
    plt.close("all")
    with pytest.raises(ValueError, match="no revision in this trace repaired a city name"):
        editor.find_repair(trace[:1], edited)
