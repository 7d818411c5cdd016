"""Notebook 06's tables and figures (helpers.views.speculative): the stored run laid out as the
notebook reads it, the time tables adding up, and each drafter drawn alike in every figure."""

import re

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib import pyplot as plt

from helpers.language.toylang import LANG
from helpers.quality.matched_quality import load_sweep
from helpers.quality.matching import margins, target_from
from helpers.speculative.cost import TimeSplit
from helpers.speculative.sweep import BROKEN, DRAFTERS, load
from helpers.views.speculative import (
    DRAFTER_STYLE,
    MODEL_DRAFTERS,
    alpha_check_text,
    draw_acceptance,
    draw_closing_picture,
    end_effect_text,
    matched_count_text,
    prediction_text,
    quality_text,
    time_lost_text,
    time_split_text,
    tolerances_text,
)
from helpers.views.sweep import MAIN, STYLE

SPLITS = {  # seconds per document: target passes, drafter passes, everything else; pass counts
    "AR model alone": TimeSplit(0.032, 0.0, 0.0032, 32, 0),  # 1 ms a step, 0.1 ms a token besides
    "small drafter, gamma 4": TimeSplit(0.0126, 0.0075, 0.0032, 7, 25),
}


def any_joint():
    vocab = len(LANG.vocab)
    return torch.full((vocab, vocab), 1 / vocab**2, dtype=torch.float64).numpy()  # any joint: TV is not asserted


# ------------------------------------------------------------------ section 5 and its Going deeper: the time tables
def test_the_time_table_adds_up_and_gives_the_speed_up():
    header, ar, spec = time_split_text(SPLITS, "AR model alone").splitlines()
    assert "everything else" in header and header.split()[-1] == "speed-up" and "passes only" not in header
    assert "32 x 1.00 ms" in ar and "3.2 ms" in ar and "35.2 ms" in ar and ar.endswith("1.00x")
    assert "7 x 1.80 ms" in spec and "25 x 0.30 ms" in spec and "3.2 ms" in spec and "23.3 ms" in spec
    assert spec.endswith("1.51x")  # 35.2 / 23.3 ms
    with pytest.raises(ValueError, match="reference must be one of the timed decoders"):
        time_split_text(SPLITS, "AR")


def test_the_time_lost_adds_up_to_the_total_and_names_the_largest_part():
    header, spec = time_lost_text(SPLITS, "AR model alone").splitlines()
    assert "dearer target passes" in header and "drafter passes" in header and "everything else" in header
    assert header.endswith("largest")
    numbers = [float(x) for x in re.findall(r"(-?\d+\.\d) ms", spec)]
    assert numbers == [7.7, 5.6, 7.5, 2.5, 23.3]  # 7 x 1.1 ms; 12.6 - 7; 7.5; 3.2 - 0.7; their sum
    assert spec.endswith("drafter passes")  # 7.5 ms, the largest of the three
    with pytest.raises(ValueError, match="reference must be one of the timed decoders"):
        time_lost_text(SPLITS, "AR")
    with pytest.raises(ValueError, match="must run the target at least once"):
        time_lost_text({"none": TimeSplit(0.0, 0.0, 0.001, 0, 0)}, "none")


# ------------------------------------------------------------------ section 3 and its Going deeper: predictions
def test_the_prediction_table_shows_the_model_drafters_at_gamma_4():
    lines = prediction_text(load()).splitlines()
    assert len(lines) == 3 + len(MODEL_DRAFTERS) and "tokens per target pass, gamma = 4" in lines[0]
    assert lines[1].split() == ["drafter", "1st", "draft", "formula", "chain", "measured"]  # one alpha: predicted
    assert not any(line.startswith("the language itself") for line in lines)
    small = next(line for line in lines if line.startswith("small AR drafter"))
    assert small.split()[-4:] == ["0.989", "4.89", "4.51", "4.51"]
    one_pass = next(line for line in lines if line.startswith("diffusion, one pass "))
    assert one_pass.split()[-3:] == ["4.75", "3.21", "3.21"]
    assert lines[-1].endswith("alpha of its 1st to 4th drafted token 0.97, 0.72, 0.57, 0.44")


def test_the_prediction_table_takes_any_gamma_and_drafter_and_refuses_others():
    lines = prediction_text(load(), gamma=8, drafters=DRAFTERS).splitlines()
    assert len(lines) == 3 + len(DRAFTERS) and "gamma = 8" in lines[0]
    assert next(line for line in lines if line.startswith("small AR drafter")).endswith("8.62       7.65       7.61")
    for wrong in ([], ["a drafter"], "small AR model", [BROKEN]):
        with pytest.raises(ValueError, match="drafters must be a non-empty list"):
            prediction_text(load(), drafters=wrong)


def test_the_alpha_check_sets_the_prediction_beside_the_measurement_and_its_standard_error():
    lines = alpha_check_text(load()).splitlines()
    assert lines[0].split()[1:4] == ["predicted", "measured", "±"] and "1st draft" in lines[0]
    assert [line.split("  ")[0] for line in lines[1:]] == [DRAFTER_STYLE[n][0] for n in DRAFTERS]
    small = next(line for line in lines if line.startswith("small AR drafter"))
    assert small.split()[-3:] == ["0.989", "0.991", "0.0015"]  # 3700-odd first drafts: sqrt(a (1 - a) / n)
    with pytest.raises(ValueError, match="drafters must be a non-empty list"):
        alpha_check_text(load(), drafters=[BROKEN])


def test_the_end_effect_table_keeps_every_drafter():
    lines = end_effect_text(load(), gamma=8).splitlines()
    assert [line.split("  ")[0] for line in lines[3:]] == [DRAFTER_STYLE[n][0] for n in DRAFTERS]
    one_pass = next(line for line in lines if line.startswith("diffusion, one"))
    assert one_pass.split()[-4:] == ["8.12", "7.24", "3.38", "3.45"]


def test_the_acceptance_figure_draws_each_drafter_alike_in_both_panels():
    fig, axes = plt.subplots(1, 2, layout="constrained")
    draw_acceptance(axes, load())
    left, right = axes
    keys = {h.get_label(): h for h in left.get_legend().legend_handles}
    assert keys["markers: measured"].get_linestyle() == "None"
    assert keys["solid: the chain"].get_linestyle() == "-"
    formula = keys["dotted: the formula\n(one line for both diffusion drafters)"]  # their dotted lines coincide
    assert formula.get_linestyle() == ":"
    assert "given every draft before it was kept" in right.get_ylabel(), "alpha_i is conditional on the drafts before"
    assert right.get_legend() is None and len(fig.legends) == 1, "one legend names the drafters of both panels"
    named = {h.get_label(): h for h in fig.legends[0].legend_handles}
    assert list(named) == [DRAFTER_STYLE[n][0] for n in MODEL_DRAFTERS]  # the language is not in the core figure
    for name in MODEL_DRAFTERS:
        label, color, marker = DRAFTER_STYLE[name]
        measured = [line for line in left.lines if line.get_marker() == marker and line.get_linestyle() == "None"]
        assert len(measured) == 1 and measured[0].get_color() == color  # the same marker and colour on the left
        assert named[label].get_marker() == marker and named[label].get_linestyle() == "-"
        assert measured[0].get_markerfacecolor() == named[label].get_markerfacecolor()  # hollow but the small one
    assert named["diffusion, left to right"].get_markerfacecolor() == "none"
    assert not right.child_axes, "no inset: the drafters near alpha = 1 are read from the table"
    assert len(left.lines) == 3 * len(MODEL_DRAFTERS)  # per drafter: the formula, the chain, the measurement
    plt.close(fig)


def test_drafters_with_the_same_formula_share_its_dotted_line_in_each_ones_colour():
    data = load()
    fig, axes = plt.subplots(1, 2)
    draw_acceptance(axes, data)
    formula = data["predicted"][MODEL_DRAFTERS[1]]["formula"]  # the two diffusion drafters share their alpha
    assert formula == data["predicted"][MODEL_DRAFTERS[2]]["formula"]
    shared = [line for line in axes[0].lines if list(line.get_ydata()) == list(formula)]
    assert sorted(line.get_color() for line in shared) == sorted(DRAFTER_STYLE[n][1] for n in MODEL_DRAFTERS[1:])
    offsets = [line._unscaled_dash_pattern[0] for line in shared]  # (offset, (on, off)): dots interleaved
    gaps = {line._unscaled_dash_pattern[1] for line in shared}
    assert len(set(offsets)) == 2 and len(gaps) == 1, "each colour's dots between the other's, not one over the other"
    own = [
        line
        for line in axes[0].lines
        if list(line.get_ydata()) == list(data["predicted"][MODEL_DRAFTERS[0]]["formula"])
    ]
    assert len(own) == 1 and own[0]._unscaled_dash_pattern[1] == (1.0, 1.0)  # alone: plain dots
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)
    draw_acceptance(axes, data, drafters=MODEL_DRAFTERS[:2])  # no two share a formula: the key says nothing more
    assert [t.get_text() for t in axes[0].get_legend().get_texts()][-1] == "dotted: the formula"
    plt.close(fig)


def test_the_drafters_differ_in_colour_from_each_other_and_from_notebook_03s_samplers():
    drafters = [color for _, color, _ in DRAFTER_STYLE.values()]
    assert len(set(drafters)) == 4
    samplers = {color for _, color, _ in STYLE.values()}
    assert DRAFTER_STYLE["diffusion, left to right"][1] not in samplers  # not the amber of the random sampler


# ------------------------------------------------------------------ sections 2 and 4: quality
def test_the_quality_table_shows_the_drafters_asked_for_with_units_and_tv_only_with_a_joint():
    data, sweep = load(), load_sweep()
    match = target_from(sweep.ar)
    lines = quality_text(data, sweep.ar, match).splitlines()
    assert len(lines) == 3 + len(MODEL_DRAFTERS) and all(line.endswith("all three") for line in lines[2:])
    assert lines[1].split() == ["the", "language", "(exact,", "the", "reference)", "100.0", "3.96", "-0.07"]
    assert "valid %" in lines[0] and "sentences/doc" in lines[0] and "gap, bits" in lines[0]
    assert "TV" not in lines[0] and not any(line.startswith("the language itself") for line in lines)
    every = quality_text(data, sweep.ar, match, any_joint(), drafters=DRAFTERS).splitlines()
    assert len(every) == 3 + len(DRAFTERS) and "TV(2 tok)" in every[0]
    assert all(line.endswith("all three") for line in every[2:])
    bug = quality_text(data, sweep.ar, match, any_joint(), drafters=[BROKEN]).splitlines()
    assert len(bug) == 4 and bug[-1].startswith("greedy draft, softmax as q (bug)") and bug[-1].endswith("all three")
    # the bug passes notebook 03's aggregate measures, its gap by a hair (notebook 06 says so): only
    # the first two tokens' TV, a finer test, catches it
    assert 0 < margins(data["quality"][BROKEN], sweep.ar, match)["diversity"] < 0.01
    for wrong in ([], "small AR model", ["a drafter"], 3):
        with pytest.raises(ValueError, match="drafters must be a non-empty list"):
            quality_text(data, sweep.ar, match, drafters=wrong)


def test_the_tolerances_say_what_matched_means_as_the_closing_pictures_titles_do():
    sweep = load_sweep()
    match = target_from(sweep.ar)
    text = tolerances_text(match, sweep.ar)
    assert text.startswith(f"matched: at least {100 * match.lowest_validity:.1f} % valid; sentences/doc and gap")
    assert "as close to the language as the AR model's, + 0.06 sentences and + 0.15 bits" in text
    low, high = match.allowed("length", sweep.ar.quality.sentences[0])
    assert f"{low:.2f} to {high:.2f} sentences" in text and "98.2 % valid" in text
    fig, axes = plt.subplots(1, 3, layout="constrained")
    draw_closing_picture(axes, load(), sweep, match)
    assert axes[1].get_title(loc="left") == f"length: {low:.2f} to {high:.2f} sentences"  # the band the text names
    plt.close(fig)


def test_the_closing_picture_keys_samplers_and_drafters_in_two_legends():
    data, sweep = load(), load_sweep()
    fig, axes = plt.subplots(1, 3, layout="constrained")
    draw_closing_picture(axes, data, sweep, target_from(sweep.ar))
    samplers, speculative = fig.legends
    assert [t.get_text() for t in samplers.get_texts()] == [f"{len(MAIN)} samplers, every setting"]  # one grey key
    assert "notebook 03" in samplers.get_title().get_text() and "trained model" in samplers.get_title().get_text()
    assert [t.get_text() for t in speculative.get_texts()] == [
        "AR alone",
        *(DRAFTER_STYLE[n][0] for n in MODEL_DRAFTERS),
    ]
    assert "gamma = 4" in speculative.get_title().get_text()
    assert all(t.get_fontsize() >= 9 for legend in fig.legends for t in legend.get_texts()), "legible keys"
    sizes = {h.get_markersize() for h in speculative.legend_handles[1:]}
    assert sizes == {9}, "the drafters' keys at one size, not nested as in the panels"
    for k, ax in enumerate(axes):  # each panel: the samplers' lines, the AR model's star, one marker per drafter,
        # and on length and diversity the language's own value, dotted (validity's 100 % lies off the log axis)
        assert len(ax.lines) == len(MAIN) + 1 + len(MODEL_DRAFTERS) + (k > 0)
        dot, diamond = (next(line for line in ax.lines if line.get_label() == DRAFTER_STYLE[n][0])
                        for n in (DRAFTERS[0], DRAFTERS[3]))  # fmt: skip
        assert dot.get_zorder() > diamond.get_zorder(), "the small drafter's dot is drawn over the diamond"
    validity = axes[0]  # read as valid %, like section 2's table, the most valid at the top
    assert "valid documents (%" in validity.get_ylabel() and validity.yaxis_inverted()
    assert "invalid\nshare (100 - valid) on a log scale" in validity.get_ylabel(), "the log axis says what it is"
    assert [t.get_text() for t in validity.get_yticklabels()] == ["99.9", "99", "90", "0"]
    plt.close(fig)
    with pytest.raises(ValueError, match="drafters must be a non-empty list"):
        draw_closing_picture(axes, data, sweep, target_from(sweep.ar), drafters=[BROKEN])


def test_the_matched_count_finds_every_drafter_inside_and_no_diffusion_setting():
    data, sweep = load(), load_sweep()
    text = matched_count_text(data, sweep, target_from(sweep.ar))
    settings = sum(len(sweep.runs[n]) for n in MAIN)
    assert text == (
        f"inside all three bands: speculative decoding, 3 of 3 drafters; "
        f"masked diffusion on the trained model, 0 of {settings} settings"
    )
    with pytest.raises(ValueError, match="drafters must be a non-empty list"):
        matched_count_text(data, sweep, target_from(sweep.ar), drafters=[BROKEN])
