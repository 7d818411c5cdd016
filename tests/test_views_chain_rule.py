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


def test_exact_vs_sampled_draws_one_pair_of_bars_per_sentence():
    fig, ax = plt.subplots()
    draw_exact_vs_sampled(ax, ["a", "b", "c"], [0.3, 0.2, 0.1], [0.28, 0.22, 0.1], [0.01, 0.01, 0.01], 5000)
    assert len(ax.patches) == 6
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert "3 most likely" in ax.get_title()
    assert "5,000 samples" in [t.get_text() for t in ax.get_legend().get_texts()][1]
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
    assert "valid mass 0.500" in two_axes[0].get_title()
    assert "valid mass 0.250" in two_axes[1].get_title()  # 0.1 + 0.15 on the allowed cells
    assert [t.get_text() for t in two_axes[0].texts] == ["0.200", "0", "0", "0.300"]


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
