import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib import pyplot as plt

from helpers.decoding.model import gpt2_small_config, gpu_wide_config, pad_vocab
from helpers.projection.calibration import calibration_table, typical_fit
from helpers.projection.latency import ar_latency, dllm_latency
from helpers.views import gpu_speed, pass_ratio
from helpers.views import gpus as views

H100 = "NVIDIA H100 SXM"


@pytest.fixture(scope="module")
def rows():
    return calibration_table()


def test_the_launch_table_bounds_mbu_by_both_floors():
    steps = {"GPT-2 small": (pad_vocab(gpt2_small_config()), 176), "wide 1.8B": (gpu_wide_config(), 120)}
    table = views.launch_table(steps, "NVIDIA H200", launch_s=(5e-6, 10e-6), kernel_s=(1e-6, 3e-6))
    gpt2, wide = table.splitlines()[-2:]
    # 0.055 ms of memory against 176 x 5-10 us of launches and 176 x 1-3 us of kernel time
    assert "0.055 ms" in gpt2 and "0.88-1.76 ms" in gpt2 and "3-6 %" in gpt2
    assert "0.18-0.53 ms" in gpt2 and "11-32 %" in gpt2 and "1.5 MB" in gpt2
    assert "64-100 %" in wide and wide.rstrip().endswith(" 100 %") and "30.8 MB" in wide
    summary = views.launch_summary(steps, "NVIDIA H200", launch_s=(5e-6, 10e-6), kernel_s=(1e-6, 3e-6))
    assert summary.count("\n") == 4  # a title, then two lines per shape
    assert "GPT-2 small: 0.27 GB in 176 kernels, memory time 0.055 ms" in summary
    assert "eager, launches 0.88-1.76 ms: MBU at most 3-6 %;" in summary
    assert "one CUDA graph, kernels 0.18-0.53 ms: MBU at most 11-32 %" in summary
    assert summary.splitlines()[-1].endswith("MBU at most 100 %")
    with pytest.raises(ValueError, match="launch_s must be a \\(low, high\\) pair"):
        views.launch_table(steps, launch_s=5e-6)
    with pytest.raises(ValueError, match="low <= high"):
        views.launch_summary(steps, kernel_s=(3e-6, 1e-6))
    with pytest.raises(ValueError, match="low <= high"):
        views.launch_table(steps, kernel_s=(3e-6, 1e-6))
    with pytest.raises(ValueError, match="must be \\(ModelConfig, kernels per step\\)"):
        views.launch_table({"GPT-2 small": 176})
    with pytest.raises(ValueError, match="shapes must be a non-empty dict"):
        views.launch_table({})


def test_the_calibration_views_show_every_row_and_its_setting(rows):
    text = views.calibration_text(rows)
    assert text.count("\n") == len(rows) + 2
    assert "gpt-fast int4" in text and "Fast-dLLM, dual cache" in text and "cannot be projected" in text
    settings = views.settings_text(rows)
    assert settings.count("\n") == len(rows) - 1 and "prompt 1200, 1024 tokens, 7.31 tokens/pass" in settings
    same = views.same_setting_text(rows)
    assert "= 5.0x" in same and "= 2.7x" in same and "= 6.9x" in same and "30 %" in same
    # what the same-setting comparison assumes, and which published numbers come from one source
    assert "assumed, not published: the H100 variant (SXM), the prompt length, HF generate's batch (1)" in same
    assert "published, one source" in same and "published, two sources" in same
    with pytest.raises(ValueError, match="rows must be a non-empty list of CalibrationRow"):
        views.calibration_text([])
    with pytest.raises(ValueError, match="one 'd3LLM' row on NVIDIA H100 SXM, found 0"):
        views.same_setting_text(rows[:5])


def test_the_fit_text_and_figure_separate_fitted_rows_from_checks(rows):
    fit = typical_fit(rows)
    text = views.fit_text(rows, fit)
    assert "typical bandwidth 60 % ≈ geometric mean 59 % of rows 1, 4, 5, 6, 7, 8" in text
    assert "these rows reach 76-115 % of their typical projection" in text  # in-sample: only their spread
    assert "2 gpt-fast int8 85 %" in text and "13 Fast-dLLM, dual cache 80 %" in text and "14 d3LLM-LLaDA 30 %" in text
    assert "10 LLaDA sampler" not in text.split("not fitted")[1]  # a fitted row is never listed as a check
    summary = views.fit_summary(rows, fit)  # the core's version: no row numbers, five lines
    assert summary.count("\n") == 4 and "rows 1" not in summary and "row" not in summary.split("fitted rows")[1]
    assert "typical bandwidth: 60 % of the datasheet, fitted on 6 tuned bf16 AR decoders" in summary
    # the FLOP/s share names where it was fitted: on any other GPU it is an assumption
    assert (
        "typical FLOP/s:    45 % of the datasheet, fitted on 2 uncached LLaDA-8B decoders, on the A100 only" in summary
    )
    assert "(below 100 %: slower than projected)" in summary  # which way the percentages point, in words
    assert "  the 8 fitted rows: 76-115 %" in summary
    last = summary.splitlines()[-1]
    assert last == "  cached LLaDA-8B decoders, not fitted: Fast-dLLM 74-80 %, d3LLM 30 %"
    with pytest.raises(ValueError, match="cached diffusion rows outside the fit"):
        views.fit_summary([r for r in rows if not r.published.cache], fit)
    fig = views.draw_calibration(rows, fit)
    ax = fig.axes[0]
    dots = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata()) == 1]
    assert len(dots) == 14  # every projectable row, none of the closed systems
    filled = [line for line in dots if line.get_markerfacecolor() != "white"]
    assert len(filled) == len(fit.bandwidth_rows) + len(fit.compute_rows)
    plt.close("all")
    with pytest.raises(ValueError, match="fit must be a helpers.projection.calibration.TypicalFit"):
        views.fit_text(rows, None)


def test_the_claim_figure_and_summary_agree_with_the_latency_model():
    points, left_out = pass_ratio.claim_points(1000, steps=(32, 256))
    h100 = next(p for p in points if p["device"] == H100)
    ratio = ar_latency(1000, "Llama-3-8B", H100) / dllm_latency(1000, 32, "LLaDA-8B", H100)
    assert h100["ratio"][32] == pytest.approx(ratio) and round(h100["ridge"]) == 221
    assert [p["ridge"] for p in points] == sorted(p["ridge"] for p in points)
    assert len(left_out) == 1 and left_out[0].startswith("Google TPU v5e")
    summary = pass_ratio.claim_summary(points, left_out)
    assert "1.7x (NVIDIA RTX 3090) to 12.7x (Google TPU v6e) faster, about 0.97 of min(N, I*_eff) / K" in summary
    line = pass_ratio.claim_range(pass_ratio.claim_points(1000, steps=(32,))[0])  # the core's one line
    assert line == (
        "13 devices, K = 32, typical: the dLLM is 1.7 to 12.7 times faster than AR, each time about 0.97 of its bound"
    )
    assert "\n" not in line
    assert "K = 256: the dLLM is slower than AR on 9 of 13 devices" in summary
    fig = pass_ratio.draw_claim(points)
    assert len(fig.axes[0].get_xticklabels()) == len(points)
    plt.close("all")
    # the core's figure: one K, each square drawn over its bound, the x axis said to be no ranking by speed
    one, _ = pass_ratio.claim_points(1000, steps=(32,))
    assert "K = 256" not in pass_ratio.claim_summary(one, left_out)
    ax = pass_ratio.draw_claim(one).axes[0]
    bars, squares = (next(x for x in ax.lines if x.get_marker() == m) for m in ("_", "s"))
    assert bars.get_markersize() > 2 * squares.get_markersize() and bars.get_zorder() < squares.get_zorder()
    assert list(bars.get_xdata()) == list(squares.get_xdata())  # each bar centred on its square
    assert "not of speed" in ax.get_xlabel() and min(t.get_fontsize() for t in ax.get_xticklabels()) >= 8
    plt.close("all")
    ridge = pass_ratio.ridge_text(1000, 32, H100)
    assert "1034 FLOP/B" in ridge and "ridge point 295 FLOP/B" in ridge and "effective ridge 221 FLOP/B" in ridge
    assert ridge.endswith("min(1000, 221) / 32 = 6.9")
    with pytest.raises(ValueError, match="steps must be an int"):
        pass_ratio.ridge_text(1000, 0, H100)
    with pytest.raises(ValueError, match="pair must be one of"):
        pass_ratio.claim_points(pair="70B")
    with pytest.raises(ValueError, match="points must be the non-empty list"):
        pass_ratio.claim_summary([], [])
    with pytest.raises(ValueError, match="points must be the non-empty list"):
        pass_ratio.claim_range([])


def test_the_device_tables_agree_with_the_latency_model():
    claim = pass_ratio.claim_table(1000, steps=(32, 256))
    h100 = next(line for line in claim.splitlines() if line.startswith(H100) and " 8B " in line)
    ratio = ar_latency(1000, "Llama-3-8B", H100) / dllm_latency(1000, 32, "LLaDA-8B", H100)
    assert f"{ratio:5.2f}x" in h100 and h100.rstrip().endswith("6.9")
    assert "the device has 16 GB" in claim and "1.7x (NVIDIA RTX 3090, 1B) to 12.7x" in claim
    cache = pass_ratio.cache_table(1024, steps=(64, 256), devices=[H100])
    assert cache.count("\n") == 3 and "2.67" in cache
    rtx = next(line for line in pass_ratio.hardware_text().splitlines() if line.startswith("NVIDIA RTX 3090"))
    assert rtx.split()[3:] == ["936", "71", "76", "57", "24"]  # GB/s, TFLOP/s, ridge, effective ridge, GB
    with pytest.raises(ValueError, match="steps must be two pass counts K"):
        pass_ratio.claim_table(1000, steps=(32,))
    with pytest.raises(ValueError, match="each K in steps must be an int"):
        pass_ratio.cache_table(1024, steps=(2048,))
    with pytest.raises(ValueError, match="devices must be a non-empty list of names"):
        pass_ratio.cache_table(devices="NVIDIA L4")


def test_the_toy_rates_read_notebook_03s_sweeps():
    from helpers.quality.exact_sweep import load_exact_sweep
    from helpers.quality.matched_quality import load_sweep

    sweep = load_sweep()
    rates = gpu_speed.toy_rates(sweep, load_exact_sweep())
    assert rates.matched <= rates.samplers == len(sweep.runs)
    assert 1.0 < rates.limit < rates.validity.tokens_per_pass  # validity alone asks less than all three measures
    assert 0.0 <= rates.best_valid_fast <= 1.0
    text = rates.text()
    assert text.count("\n") == 2 and f"at most {rates.limit:.2f} tokens per pass" in text
    assert "validity alone (at least 99 % of documents valid), trained model: " in text  # the rule, named
    core = rates.core_text()  # the core's two lines: no validity-alone rate
    assert core.count("\n") == 1 and f"up to {rates.limit:.2f} tokens per pass, with the exact conditionals" in core
    assert "validity alone" not in core and f"{100 * rates.best_valid_fast:.1f} % of documents valid" in core
    assert ("no trained sampler matches it" in core) == (rates.matched == 0)
    with pytest.raises(ValueError, match="must be the Sweeps of load_sweep"):
        gpu_speed.toy_rates(sweep, None)


def test_the_budget_table_and_the_matched_quality_figure():
    def ar_seconds(n, **effs):
        return ar_latency(n, "Llama-3-8B", H100, **effs)

    def dllm_seconds(n, budget, **effs):
        return dllm_latency(n, 32, "LLaDA-8B", H100, prompt=1, **effs)

    table = gpu_speed.budget_table(ar_seconds, dllm_seconds, {"K = 32": "K = 32"}, n=1000, n_long=4096)
    assert "6.71x" in table and "8.95x" in table and "6.17x" in table
    summary = gpu_speed.budget_summary(ar_seconds, dllm_seconds, {"K = 32": "K = 32"}, n=1000)
    assert "AR takes 7.50 s" in summary.splitlines()[0]  # AR's seconds once, in the title
    assert summary.splitlines()[-1].split() == ["K", "=", "32", "1.12", "6.71x"]  # no ceiling, no N = 4096
    with pytest.raises(ValueError, match="budgets must be a non-empty dict"):
        gpu_speed.budget_summary(ar_seconds, dllm_seconds, {})
    fig = gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", ["K = 32"]), ("b", [])], lengths=[32, 64])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [
        "AR, Llama-3-8B, typical",
        "AR, ceiling (100 % of datasheet)",
        "dLLM, LLaDA-8B, typical",
        "dLLM, ceiling (100 % of datasheet)",
    ]
    colours = [h.get_color() for h in fig.legends[0].legend_handles]
    assert colours[0] == colours[1] and colours[2] == colours[3] and colours[0] != colours[2]
    assert any("no rate to plot" in t.get_text() for t in fig.axes[1].texts)
    assert [t.get_text() for t in fig.axes[0].texts] == ["K = 32"]
    plt.close("all")
    # rate labels sit inside their axes, not in the tick margin
    fig = gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", [2.77, 9.11])])
    fig.canvas.draw()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["2.77\ntokens/pass", "9.11\ntokens/pass"]
    box = ax.get_window_extent()
    for label in ax.texts:
        extent = label.get_window_extent()
        assert extent.x0 >= box.x0 and extent.x1 <= box.x1, f"{label.get_text()!r} leaves its axes"
    plt.close("all")
    assert gpu_speed.budget_label(2.77) == "2.77 tokens/pass"
    assert gpu_speed.budget_label(1.08845) == "1.09 tokens/pass"  # rounded as the tables print it
    # AR's filled circles sit on top of the dLLM's hollow squares: where they meet, both stay visible
    fig = gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", ["K = 32"])], lengths=[32, 64])
    ar_line, dllm_line = (next(x for x in fig.axes[0].lines if x.get_marker() == m) for m in ("o", "s"))
    assert ar_line.get_zorder() > dllm_line.get_zorder() and dllm_line.get_markerfacecolor() == "white"
    plt.close("all")
    with pytest.raises(ValueError, match="at most two budgets"):
        gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", [1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="must be callables"):
        gpu_speed.budget_table(None, dllm_seconds, {"a": 1.0})
    with pytest.raises(ValueError, match="lengths must be an increasing list"):
        gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", [])], lengths=[64, 32])


def test_the_agents_table_and_the_reference_runs(tmp_path):
    table = gpu_speed.agents_table({"AR": 3.8, "dLLM": 2.14}, 10)
    assert "38.0s" in table and "21.4s" in table and table.startswith("projection, typical efficiency")
    assert "3.80s" in table and "per round" in table and "10 rounds" in table
    lean = gpu_speed.agents_table({"AR": 3.8, "dLLM": 2.14}, 10, show_per_round=False)  # the core's: one column
    assert "38.0s" in lean and "3.80s" not in lean and "per round" not in lean
    with pytest.raises(ValueError, match="show_per_round must be True or False"):
        gpu_speed.agents_table({"AR": 3.8}, 10, show_per_round="no")
    with pytest.raises(ValueError, match="rounds must be an int >= 1"):
        gpu_speed.agents_table({"AR": 3.8}, 0)
    with pytest.raises(ValueError, match="the seconds of 'AR' must be a finite number > 0"):
        gpu_speed.agents_table({"AR": -1.0}, 10)
    none = gpu_speed.reference_text(tmp_path)
    assert "No reference measurements (data/bench_*.json) are shipped with the course" in none
    assert "copy" not in none and "README: Measuring a GPU" in none
    assert "a projection from data/hardware.csv, a published measurement or an assumption" in none
    with pytest.raises(ValueError, match="folder must be an existing directory"):
        gpu_speed.reference_text(tmp_path / "missing")
    here = gpu_speed.your_gpu_text(torch.device("cpu"), tmp_path)  # on the CPU: no measurement, no CUDA call
    assert here.startswith("No GPU here: nothing is measured") and none in here
    with pytest.raises(ValueError, match="device must be a torch.device"):
        gpu_speed.your_gpu_text("cuda", tmp_path)
