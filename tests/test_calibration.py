import math

import pytest

from helpers.projection.calibration import (
    CEILING,
    TYPICAL,
    calibration_table,
    load_parallelism,
    load_published,
    typical_fit,
)
from helpers.roofline.costs import MODEL_SHAPES, TYPICAL_BANDWIDTH_EFFICIENCY, TYPICAL_COMPUTE_EFFICIENCY
from helpers.roofline.hardware import load_hardware_table


@pytest.fixture(scope="module")
def table():
    return calibration_table()


def test_the_table_has_ar_and_dllm_rows_with_sources(table):
    kinds = [row.published.kind for row in table]
    assert len(table) >= 6 and kinds.count("AR") >= 3 and kinds.count("dLLM") >= 3
    for row in table:
        p = row.published
        assert p.source and p.note and p.measured > 0
        if p.projectable:
            assert p.device in load_hardware_table() and p.model in MODEL_SHAPES
            assert p.batch >= 1 and p.prompt_tokens >= 1 and p.generated_tokens >= 1


def test_closed_systems_are_listed_never_guessed(table):
    closed = [row for row in table if not row.published.projectable]
    assert {row.published.system for row in closed} >= {"Mercury Coder Mini", "Mercury Coder Small", "Gemini Diffusion"}
    for row in closed:
        assert row.ceiling is None and row.typical is None
        assert "cannot be projected" in row.published.note and "unknown" in row.published.note
        with pytest.raises(ValueError, match="cannot be projected"):
            row.published.project(**TYPICAL)


def test_typical_ar_projection_is_within_30_percent_or_the_note_says_why(table):
    for row in table:
        if row.published.kind != "AR":
            continue
        within = abs(row.reached_typical - 1) <= 0.30
        assert within or "outside +-30 %" in row.published.note, row.published.system
        assert not (within and "outside +-30 %" in row.published.note), row.published.system
    assert sum(abs(r.reached_typical - 1) <= 0.30 for r in table if r.published.kind == "AR") >= 6


def test_the_typical_efficiencies_are_what_the_table_says(table):
    # bandwidth: geometric mean of what the tuned bf16 AR stacks reach of the datasheet
    tuned = [
        r.reached_ceiling
        for r in table
        if r.published.kind == "AR" and r.published.dtype == "bf16" and "outside" not in r.published.note
    ]
    geo_mean = math.exp(sum(math.log(x) for x in tuned) / len(tuned))
    assert pytest.approx(geo_mean, abs=0.02) == TYPICAL_BANDWIDTH_EFFICIENCY
    # compute: LLaDA's uncached passes over a long canvas
    uncached = [
        r.reached_ceiling
        for r in table
        if r.published.projectable and r.published.kind == "dLLM" and r.published.cache is None
    ]
    assert uncached and all(x == pytest.approx(TYPICAL_COMPUTE_EFFICIENCY, abs=0.02) for x in uncached)


def test_typical_fit_names_the_rows_it_is_fitted_on(table):
    fit = typical_fit(table)
    assert fit.bandwidth_rows == (1, 4, 5, 6, 7, 8)  # gpt-fast bf16 and SGLang; not int8, int4, HF generate
    assert fit.compute_rows == (10, 11)  # LLaDA's sampler and Fast-dLLM without a cache
    assert round(fit.bandwidth, 2) == TYPICAL_BANDWIDTH_EFFICIENCY - 0.01  # 59 %, rounded to 60 %
    assert fit.compute == pytest.approx(TYPICAL_COMPUTE_EFFICIENCY, abs=0.01)
    assert all(table[i - 1].published.kind == "AR" for i in fit.bandwidth_rows)
    with pytest.raises(ValueError, match="table must be a non-empty list of CalibrationRow"):
        typical_fit([])
    with pytest.raises(ValueError, match="tuned bf16 AR rows and uncached diffusion rows"):
        typical_fit(table[:3])


def test_the_ceiling_reproduces_gpt_fast_accounting(table):
    row = next(r for r in table if r.published.system == "gpt-fast, bf16" and r.published.model == "Llama-2-7B")
    # 13.21 GB per token at 2039 GB/s, and the 5-token prefill: about 154 tok/s at the ceiling
    assert row.ceiling == pytest.approx(153.7, abs=0.1)
    assert row.published.project(**CEILING) == row.ceiling
    assert row.reached_ceiling == pytest.approx(0.683, abs=0.001)  # gpt-fast's 1397 / 2039 GB/s


def test_time_rows_compare_speeds_the_same_way(table):
    row = next(r for r in table if r.published.unit == "s/generation")
    assert row.reached_typical == pytest.approx(row.typical / row.published.measured)


def test_a_broken_table_is_rejected(tmp_path):
    path = tmp_path / "p.csv"
    header = (
        "system,kind,device,model,dtype,batch,prompt_tokens,generated_tokens,tokens_per_pass,"
        "cache,block_length,measured,unit,source,note\n"
    )
    path.write_text(header + "x,AR,d,m,bf16,1,1,1,,,,1,ms,src,n\n")
    with pytest.raises(ValueError, match="unit in"):
        load_published(path)
    with pytest.raises(ValueError, match="not found"):
        load_published(tmp_path / "missing.csv")


def test_published_accuracy_under_parallelism():
    points = load_parallelism()
    assert [p.kind for p in points].count("AR") == 1 and len(points) >= 5
    assert all(p.task == "GSM8K-CoT" and p.source for p in points)
    assert max(p.tokens_per_pass for p in points) == 9.11  # d3LLM-LLaDA
    assert all(p.tokens_per_pass == 1.0 for p in points if p.kind == "AR")


@pytest.mark.parametrize("load", [calibration_table, load_published, load_parallelism])
def test_a_path_that_is_not_a_path_names_what_is_allowed(load):
    with pytest.raises(ValueError, match="path must be None, a str or a pathlib.Path, got 3"):
        load(3)
