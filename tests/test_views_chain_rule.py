"""The figures of notebook 01 draw what they are given and refuse arguments they cannot show."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers.views.chain_rule import draw_exact_vs_sampled, draw_joint_vs_product

JOINT = np.array([[0.2, 0.0], [0.0, 0.3]])  # (2, 2) two allowed pairs
PRODUCT = np.array([[0.1, 0.15], [0.1, 0.15]])  # (2, 2)


@pytest.fixture
def two_axes():
    fig, axes = plt.subplots(1, 2)
    yield axes
    plt.close(fig)


def test_exact_vs_sampled_draws_a_band_a_tick_and_a_dot_per_sentence():
    fig, ax = plt.subplots()
    exact, sampled, se = [0.3, 0.2, 0.1], [0.28, 0.21, 0.1], [0.01, 0.02, 0.01]
    draw_exact_vs_sampled(ax, ["a", "b", "c"], exact, sampled, se, 5000)
    bands = ax.patches
    assert len(bands) == 3  # one band per sentence, no bars that could hide the dots
    assert np.allclose([b.get_x() for b in bands], np.subtract(exact, se))
    assert np.allclose([b.get_width() for b in bands], np.multiply(2, se))
    ticks, inside, outside = ax.lines  # 0.28 is two standard errors from 0.3: outside; the others inside
    assert np.allclose(ticks.get_xdata(), exact)
    assert np.allclose(inside.get_xdata(), [0.2 + 0.01, 0.1]) and np.allclose(inside.get_ydata(), [1, 2])
    assert np.allclose(outside.get_xdata(), [0.28]) and np.allclose(outside.get_ydata(), [0])
    assert inside.get_markerfacecolor() != outside.get_markerfacecolor()  # filled inside, hollow outside
    assert inside.get_markeredgecolor() == outside.get_markeredgecolor()
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the first (most likely) sentence on top
    low, high = ax.get_xlim()
    assert low <= 0.09 and high >= 0.31  # every band and dot inside the axes
    assert "3 most likely" in ax.get_title(loc="left") and "5,000 samples" in ax.get_title(loc="left")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "exact P(x) ± one standard error" in legend
    assert "frequency in 5,000 samples, inside its band" in legend
    assert "frequency in 5,000 samples, outside its band" in legend
    plt.close(fig)


def test_exact_vs_sampled_keys_only_the_dots_it_draws():
    fig, ax = plt.subplots()
    draw_exact_vs_sampled(ax, ["a", "b"], [0.3, 0.2], [0.3, 0.2], [0.01, 0.01], 5000)  # every dot inside
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(ax.lines) == 2 and not any("outside" in entry for entry in legend)
    plt.close(fig)


def test_exact_vs_sampled_wraps_long_labels():
    fig, ax = plt.subplots()
    long = "alice flew from new york to san francisco ."
    draw_exact_vs_sampled(ax, [long], [0.003], [0.002], [0.0007], 5000)
    (label,) = [t.get_text() for t in ax.get_yticklabels()]
    assert "\n" in label and label.replace("\n", " ") == long
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": []}, "labels is empty"),
        ({"exact": [0.3, 0.2]}, "exact has shape"),
        ({"sampled": [0.3, -0.1, 0.1]}, "sampled must hold probabilities"),
        ({"std_err": [0.01, np.nan, 0.01]}, "std_err must hold probabilities"),
        ({"n_samples": 0}, "n_samples must be a positive integer"),
        ({"n_samples": 2.5}, "n_samples must be a positive integer"),
    ],
)
def test_exact_vs_sampled_names_the_bad_argument(kwargs, message):
    args = {
        "labels": ["a", "b", "c"],
        "exact": [0.3, 0.2, 0.1],
        "sampled": [0.3, 0.2, 0.1],
        "std_err": [0.01, 0.01, 0.01],
        "n_samples": 100,
    }
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=message):
        draw_exact_vs_sampled(ax, **{**args, **kwargs})
    plt.close(fig)


def test_joint_vs_product_outlines_the_allowed_pairs_and_labels_every_cell(two_axes):
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"])
    for ax in two_axes:
        assert len(ax.patches) == 2  # the two non-zero cells of the joint
        assert len(ax.texts) == 4
    assert "valid mass 0.5000" in two_axes[0].get_title()
    assert "valid mass 0.2500" in two_axes[1].get_title()  # 0.1 + 0.15 on the allowed cells
    assert [t.get_text() for t in two_axes[0].texts] == ["0.2000", "0", "0", "0.3000"]  # an empty cell: "0"
    assert [t.get_text() for t in two_axes[1].texts] == ["0.1000", "0.1500", "0.1000", "0.1500"]


def test_joint_vs_product_labels_add_up_to_the_titles_valid_mass(two_axes):
    # four decimals: cells of 0.0225 and 0.0675 (notebook 01's cities) would round away 0.002 at three
    joint = np.array([[0.2, 0.1, 0.0], [0.0, 0.0, 0.15], [0.15, 0.15, 0.15]])
    product = np.array([[0.06, 0.03, 0.0675], [0.0225, 0.0225, 0.0225], [0.0675, 0.0675, 0.0675]])
    draw_joint_vs_product(two_axes, joint, product, ["a", "b", "c"], ["x", "y", "z"])
    labels = np.array([float(t.get_text()) for t in two_axes[1].texts]).reshape(3, 3)
    shown = labels[joint > 0].sum()
    assert f"valid mass {shown:.4f}" in two_axes[1].get_title()
    assert f"valid mass {product[joint > 0].sum():.4f}" in two_axes[1].get_title()


def test_joint_vs_product_outlines_stay_apart_and_inside_the_frame(two_axes):
    draw_joint_vs_product(two_axes, np.array([[0.5, 0.5]]), np.array([[0.25, 0.25]]), ["san"], ["diego", "jose"])
    for ax in two_axes:
        left, right = sorted(ax.patches, key=lambda box: box.get_x())
        assert left.get_x() + left.get_width() < right.get_x()  # two neighbours: two boxes, not one line
        x_lo, x_hi = sorted(ax.get_xlim())
        y_lo, y_hi = sorted(ax.get_ylim())
        for box in (left, right):
            assert x_lo < box.get_x() and box.get_x() + box.get_width() < x_hi
            assert y_lo < box.get_y() and box.get_y() + box.get_height() < y_hi


def test_joint_vs_product_shares_one_colour_scale_and_one_colour_bar(two_axes):
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"])
    (left,), (right,) = two_axes[0].images, two_axes[1].images
    assert left.get_cmap().name == right.get_cmap().name
    assert left.get_clim() == right.get_clim() and left.get_clim()[0] == 0
    assert left.get_clim()[1] >= JOINT.max()  # no cell beyond the scale
    colour_bars = [ax for ax in two_axes[0].figure.axes if ax not in two_axes]
    assert len(colour_bars) == 1 and colour_bars[0].get_ylabel() == "probability"


@pytest.mark.parametrize(
    ("joint", "product", "rows", "cols", "message"),
    [
        (JOINT, PRODUCT[:, :1], ["new", "san"], ["york", "diego"], "product has shape"),
        (JOINT, PRODUCT, ["new"], ["york", "diego"], "joint has shape"),
        (JOINT * 5, PRODUCT, ["new", "san"], ["york", "diego"], "joint must hold probabilities"),
        (JOINT, PRODUCT, [], ["york"], "at least one token"),
    ],
)
def test_joint_vs_product_names_the_bad_argument(two_axes, joint, product, rows, cols, message):
    with pytest.raises(ValueError, match=message):
        draw_joint_vs_product(two_axes, joint, product, rows, cols)


def test_joint_vs_product_needs_two_panels():
    fig, ax = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="two panels"):
        draw_joint_vs_product(ax, JOINT, PRODUCT, ["new", "san"], ["york", "diego"])
    plt.close(fig)


def test_joint_vs_product_can_label_only_the_allowed_pairs(two_axes):
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"], label="allowed")
    assert [t.get_text() for t in two_axes[0].texts] == ["0.2000", "0.3000"]  # the two outlined cells only
    assert [t.get_text() for t in two_axes[1].texts] == ["0.1000", "0.1500"]
    assert "valid mass 0.2500" in two_axes[1].get_title()  # the shading shows the rest; the title still sums it


def test_joint_vs_product_can_label_every_non_empty_cell(two_axes):
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"], label="nonzero")
    assert [t.get_text() for t in two_axes[0].texts] == ["0.2000", "0.3000"]  # the empty cells stay blank
    assert [t.get_text() for t in two_axes[1].texts] == ["0.1000", "0.1500", "0.1000", "0.1500"]  # the largest too


def test_joint_vs_product_says_what_both_panels_are_given(two_axes):
    figure = two_axes[0].figure
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"])
    assert figure._suptitle is None  # nothing given: no title over the two
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"], given="the visible words")
    assert figure._suptitle.get_text() == "Every probability given the visible words"


def test_joint_vs_product_has_a_key_for_the_outlines(two_axes):
    draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"], label="allowed")
    (entry,) = two_axes[1].get_legend().get_texts()  # one key, over the right panel
    assert entry.get_text() == "outlined: a whole city"
    (handle,) = two_axes[1].get_legend().legend_handles
    assert handle.get_edgecolor() == two_axes[1].patches[0].get_edgecolor()  # drawn like the outlines
    assert len(two_axes[1].patches) == 2  # the key adds no outline to the panel


def test_joint_vs_product_refuses_an_unknown_label(two_axes):
    with pytest.raises(ValueError, match="label must be 'all'"):
        draw_joint_vs_product(two_axes, JOINT, PRODUCT, ["new", "san"], ["york", "diego"], label="some")
