import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib import pyplot as plt

from helpers.calibration import calibration_table
from helpers.latency import ar_latency, dllm_latency
from helpers.model import gpt2_small_config, gpu_wide_config, pad_vocab
from helpers.views import gpu_speed
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
    with pytest.raises(ValueError, match="launch_s must be a \\(low, high\\) pair"):
        views.launch_table(steps, launch_s=5e-6)
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


def test_the_device_tables_agree_with_the_latency_model():
    claim = views.claim_table(1000, steps=(32, 256))
    h100 = next(line for line in claim.splitlines() if line.startswith(H100) and " 8B " in line)
    ratio = ar_latency(1000, "Llama-3-8B", H100) / dllm_latency(1000, 32, "LLaDA-8B", H100)
    assert f"{ratio:5.2f}x" in h100 and h100.rstrip().endswith("6.9")
    assert "the device has 16 GB" in claim and "1.7x (NVIDIA RTX 3090, 1B) to 12.7x" in claim
    cache = views.cache_table(1024, steps=(64, 256), devices=[H100])
    assert cache.count("\n") == 3 and "2.67" in cache
    rtx = next(line for line in views.hardware_text().splitlines() if line.startswith("NVIDIA RTX 3090"))
    assert rtx.split()[3:] == ["936", "71", "76", "57", "24"]  # GB/s, TFLOP/s, ridge, effective ridge, GB
    with pytest.raises(ValueError, match="steps must be two pass counts K"):
        views.claim_table(1000, steps=(32,))
    with pytest.raises(ValueError, match="each K in steps must be an int"):
        views.cache_table(1024, steps=(2048,))
    with pytest.raises(ValueError, match="devices must be a non-empty list of names"):
        views.cache_table(devices="NVIDIA L4")


def test_the_budget_table_and_the_matched_quality_figure():
    def ar_seconds(n, **effs):
        return ar_latency(n, "Llama-3-8B", H100, **effs)

    def dllm_seconds(n, budget, **effs):
        return dllm_latency(n, 32, "LLaDA-8B", H100, prompt=1, **effs)

    table = gpu_speed.budget_table(ar_seconds, dllm_seconds, {"K = 32": "K = 32"}, n=1000, n_long=4096)
    assert "6.71x" in table and "8.95x" in table and "6.17x" in table
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
    with pytest.raises(ValueError, match="at most two budgets"):
        gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", [1.0, 2.0, 3.0])])
    with pytest.raises(ValueError, match="must be callables"):
        gpu_speed.budget_table(None, dllm_seconds, {"a": 1.0})
    with pytest.raises(ValueError, match="lengths must be an increasing list"):
        gpu_speed.draw_matched_quality(ar_seconds, dllm_seconds, [("a", [])], lengths=[64, 32])


def test_the_agents_table_and_the_reference_runs(tmp_path):
    table = gpu_speed.agents_table({"AR": 3.8, "dLLM": 2.14}, 10)
    assert "38.0s" in table and "21.4s" in table and table.startswith("projection, typical efficiency")
    with pytest.raises(ValueError, match="rounds must be an int >= 1"):
        gpu_speed.agents_table({"AR": 3.8}, 0)
    with pytest.raises(ValueError, match="the seconds of 'AR' must be a finite number > 0"):
        gpu_speed.agents_table({"AR": -1.0}, 10)
    none = gpu_speed.reference_text(tmp_path)
    assert "No reference measurements (data/bench_*.json) are shipped yet" in none
    assert "a projection from data/hardware.csv, a published measurement or an assumption" in none
    with pytest.raises(ValueError, match="folder must be an existing directory"):
        gpu_speed.reference_text(tmp_path / "missing")
