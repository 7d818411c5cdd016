import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers.model import ModelConfig, Transformer, gpt2_small_config  # noqa: E402
from helpers.roofline import (  # noqa: E402
    MODEL_SHAPES,
    Hardware,
    ModelShape,
    StepCost,
    ar_latency,
    ar_pass_costs,
    attainable,
    decode_step_cost,
    dllm_latency,
    dllm_pass_costs,
    forward_pass_cost,
    get_hardware,
    kv_bytes_per_token,
    load_hardware_table,
    mbu,
    model_shape,
    plot_roofline,
    predicted_time,
    ridge_point,
)

H100_BW, H100_BF16 = 3350e9, 989e12


def tiny_shape(**kw):
    """2 layers, d 8, 2 heads (head_dim 4), MLP 16, vocab 10, tied, no biases: easy to count by hand."""
    args = dict(name="tiny", n_layer=2, d_model=8, n_head=2, n_kv_head=2, d_ff=16, vocab_size=10)
    return ModelShape(**(args | kw))


# ----------------------------------------------------------------------------- the roofline


def test_ridge_point_of_h100_is_about_295():
    assert ridge_point(H100_BF16, H100_BW) == pytest.approx(295.2, abs=0.1)
    assert get_hardware("NVIDIA H100 SXM").ridge_point() == pytest.approx(295.2, abs=0.1)


def test_attainable_below_at_and_above_the_ridge():
    peak, bw = 100.0, 10.0  # ridge at 10 FLOP/B
    assert attainable(1.0, peak, bw) == 10.0  # memory-bound: bandwidth x intensity
    assert attainable(10.0, peak, bw) == 100.0  # at the ridge both roofs agree
    assert attainable(1000.0, peak, bw) == 100.0  # compute-bound: flat
    grid = attainable(np.array([[0.0, 5.0], [10.0, 20.0]]), peak, bw)
    assert grid.shape == (2, 2) and grid.tolist() == [[0.0, 50.0], [100.0, 100.0]]
    assert attainable([2, 4], peak, bw).tolist() == [20.0, 40.0]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: attainable(-1.0, 1.0, 1.0), "intensity must be finite and >= 0"),
        (lambda: attainable([1.0, np.nan], 1.0, 1.0), "intensity must be finite and >= 0"),
        (lambda: attainable(1.0, 0.0, 1.0), "peak_flops must be a positive"),
        (lambda: attainable(1.0, 1.0, "fast"), "bandwidth must be a positive number"),
        (lambda: ridge_point(1.0, -3.0), "bandwidth must be a positive"),
        (lambda: ridge_point(True, 1.0), "peak_flops must be a positive number"),
    ],
)
def test_roofline_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_plot_roofline_draws_roofs_ridge_and_points():
    fig, ax = plt.subplots()
    plot_roofline(ax, 100e9, 10e9, points=[(0.5, 4e9, "gemv"), (50.0, 80e9)], label="this CPU")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roof = ax.lines[0]
    assert roof.get_label() == "this CPU"
    assert list(roof.get_xdata())[1] == 10.0 and list(roof.get_ydata())[1] == 100e9  # the corner is the ridge
    assert len(ax.lines) == 1 + 1 + 2  # roof, ridge marker, two points
    assert any(t.get_text() == "gemv" for t in ax.texts)
    with pytest.raises(ValueError, match="each point must be"):
        plot_roofline(ax, 100e9, 10e9, points=[(1.0,)])
    with pytest.raises(ValueError, match="intensity_range must be"):
        plot_roofline(ax, 100e9, 10e9, intensity_range=(10.0, 1.0))
    plt.close(fig)


# ----------------------------------------------------------------------------- model shapes


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(bias=False), dict(tie_weights=False), dict(bias=False, tie_weights=False, mlp_ratio=2)],
)
def test_parameter_count_matches_the_course_model(kw):
    config = ModelConfig(vocab_size=50, max_len=32, d_model=16, n_layer=2, n_head=4, **kw)
    assert model_shape(config).num_params() == Transformer(config).num_params()


@pytest.mark.parametrize(
    "name, params",
    [
        ("gpt2-small", 124_439_808),
        ("Llama-3.2-1B", 1_235_814_400),
        ("Llama-3-8B", 8_030_261_248),
        ("Llama-2-7B", 6_738_415_616),
    ],
)
def test_parameter_counts_of_real_models(name, params):
    assert MODEL_SHAPES[name].num_params() == params
    assert MODEL_SHAPES[name].source


def test_gpt2_small_config_and_named_shape_agree():
    assert model_shape(gpt2_small_config()).num_params() == MODEL_SHAPES["gpt2-small"].num_params()


def test_hand_counted_tiny_shape():
    shape = tiny_shape()
    # per layer: q, k, v, o 4 x 8 x 8 = 256; MLP 2 x 8 x 16 = 256; two RMS-style norms 16
    # + tied embedding / head 10 x 8 = 80, final norm 8
    assert shape.matmul_params() == 2 * 512 + 80
    assert shape.num_params() == 2 * (512 + 16) + 80 + 8
    gqa = tiny_shape(n_kv_head=1)  # k and v shrink to 8 x 4 each
    assert gqa.matmul_params() == 2 * (8 * 8 + 2 * 8 * 4 + 8 * 8 + 256) + 80


def test_kv_bytes_per_token():
    assert kv_bytes_per_token(tiny_shape(), 4) == 2 * 2 * 2 * 4 * 4
    assert kv_bytes_per_token("Llama-2-7B", 2) == 2 * 32 * 32 * 128 * 2 == 512 * 1024  # 0.5 MiB per token
    assert kv_bytes_per_token("Llama-3-8B", 2) == 2 * 32 * 8 * 128 * 2  # GQA: 4x smaller
    assert kv_bytes_per_token(gpt2_small_config(), 4) == 2 * 12 * 768 * 4


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: model_shape("GPT-5"), "model must be a ModelShape"),
        (lambda: tiny_shape(n_kv_head=3), "must be a multiple of n_kv_head"),
        (lambda: tiny_shape(d_model=9), "must be divisible by n_head"),
        (lambda: tiny_shape(n_layer=0), "n_layer must be an int >= 1"),
        (lambda: kv_bytes_per_token(tiny_shape(), 0), "bytes_per_kv must be a positive"),
    ],
)
def test_shapes_reject_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- step costs


def test_llama2_7b_bf16_decode_ceiling_on_h100():
    shape = MODEL_SHAPES["Llama-2-7B"]
    model_size = shape.num_params() * 2  # every parameter in bf16
    assert model_size / 1e9 == pytest.approx(13.48, abs=0.01)
    assert H100_BW / model_size == pytest.approx(248.6, abs=0.1)  # tokens/s if every byte is read per token
    # a step reads one row of the untied input embedding, not all 32000: 13.21 GB
    cost = decode_step_cost(shape, batch=1, context=0, bytes_per_param=2)
    assert cost.weight_bytes == (shape.num_params() - 32000 * 4096 + 4096) * 2
    assert cost.weight_bytes / 1e9 == pytest.approx(13.21, abs=0.01)
    assert 1 / predicted_time(cost, H100_BW, H100_BF16) == pytest.approx(253.5, abs=0.1)
    # gpt-fast's accounting: 146.7 tok/s on an H100 is the 1938 GB/s it reports
    assert cost.weight_bytes * 146.7 / 1e9 == pytest.approx(1938, abs=1)


def test_params_read_counts_only_the_rows_of_lookup_tables():
    tied = tiny_shape()
    assert tied.lookup_params() == 0 and tied.params_read(5) == tied.num_params()
    untied = tiny_shape(tie_weights=False, max_positions=6)  # + 80 embedding, + 48 positions
    assert untied.num_params() == tied.num_params() + 80 + 48
    assert untied.lookup_params() == 80 + 48
    assert untied.params_read(1) == tied.num_params() + 8 + 8  # one token row, one position row
    assert untied.params_read(7) == tied.num_params() + 7 * 8 + 6 * 8  # at most the whole table
    with pytest.raises(ValueError, match="positions must be an int >= 1"):
        untied.params_read(0)


def test_decode_step_cost_by_hand():
    shape = tiny_shape()
    cost = decode_step_cost(shape, batch=3, context=5, bytes_per_param=4)
    assert cost.weight_bytes == shape.num_params() * 4  # tied, no positional table: every parameter
    assert cost.kv_bytes == 3 * 5 * kv_bytes_per_token(shape, 4)
    assert cost.weight_flops == 2 * shape.matmul_params() * 3
    assert cost.attention_flops == 4 * 2 * 3 * (5 + 1) * 8  # layers x B x keys (S + 1) x d_model
    assert cost.total_bytes == cost.weight_bytes + cost.kv_bytes
    assert cost.intensity == cost.flops / cost.total_bytes
    fp16_kv = decode_step_cost(shape, batch=3, context=5, bytes_per_param=4, bytes_per_kv=2)
    assert fp16_kv.kv_bytes == cost.kv_bytes / 2 and fp16_kv.weight_bytes == cost.weight_bytes


@pytest.mark.parametrize("batch", [1, 8, 64, 256])
def test_bf16_decode_intensity_is_about_the_batch(batch):
    cost = decode_step_cost("Llama-2-7B", batch=batch, bytes_per_param=2)
    assert cost.intensity == pytest.approx(batch, rel=0.03)
    fp32 = decode_step_cost("Llama-2-7B", batch=batch, bytes_per_param=4)
    assert fp32.intensity == pytest.approx(batch / 2, rel=0.03)


def test_forward_pass_reads_weights_once_and_its_intensity_grows_with_tokens():
    one = forward_pass_cost("Llama-2-7B", tokens=1, bytes_per_param=2)
    many = forward_pass_cost("Llama-2-7B", tokens=128, bytes_per_param=2)
    assert many.weight_bytes == pytest.approx(one.weight_bytes, rel=1e-4) and many.kv_bytes == 0  # + 127 rows
    assert many.weight_flops == 128 * one.weight_flops
    assert many.attention_flops == 4 * 32 * 128 * 128 * 4096  # quadratic in the tokens
    assert many.intensity == pytest.approx(128, rel=0.05)
    # below the ridge point a pass over 128 positions costs the same as one over a single position
    assert predicted_time(many, H100_BW, H100_BF16) == pytest.approx(predicted_time(one, H100_BW, H100_BF16), rel=0.01)


def test_predicted_time_corners():
    memory_bound = StepCost(weight_bytes=100.0, kv_bytes=50.0, weight_flops=10.0, attention_flops=5.0)
    assert predicted_time(memory_bound, bandwidth=10.0, peak_flops=100.0) == 10.0 + 5.0
    compute_bound = StepCost(weight_bytes=1.0, kv_bytes=0.0, weight_flops=1000.0, attention_flops=300.0)
    assert predicted_time(compute_bound, bandwidth=10.0, peak_flops=100.0) == 10.0 + 3.0
    mixed = StepCost(weight_bytes=1.0, kv_bytes=100.0, weight_flops=1000.0, attention_flops=0.0)
    assert predicted_time(mixed, bandwidth=10.0, peak_flops=100.0) == 10.0 + 10.0  # JAX form: KV/BW + max(...)


def test_mbu():
    cost = StepCost(weight_bytes=0.8e9, kv_bytes=0.2e9, weight_flops=0.0, attention_flops=0.0)
    assert mbu(cost, 0.5, 4e9) == 0.5
    # gpt-fast, Llama-2-7B bf16 on an H100: 146.7 tok/s is 58 % of the bandwidth (Databricks: 55-60 %)
    assert mbu(decode_step_cost("Llama-2-7B", bytes_per_param=2), 1 / 146.7, H100_BW) == pytest.approx(0.579, abs=0.001)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: decode_step_cost(tiny_shape(), batch=0), "batch must be an int >= 1"),
        (lambda: decode_step_cost(tiny_shape(), context=-1), "context must be an int >= 0"),
        (lambda: decode_step_cost(tiny_shape(), bytes_per_param=0), "bytes_per_param must be a positive"),
        (lambda: forward_pass_cost(tiny_shape(), tokens=0), "tokens must be an int >= 1"),
        (lambda: forward_pass_cost(tiny_shape(), tokens=2.0), "tokens must be an int >= 1"),
        (lambda: decode_step_cost("nope"), "model must be a ModelShape"),
        (lambda: predicted_time("cost", 1.0, 1.0), "cost must be a StepCost"),
        (lambda: predicted_time(decode_step_cost(tiny_shape()), 0.0, 1.0), "bandwidth must be a positive"),
        (lambda: mbu(decode_step_cost(tiny_shape()), 0.0, 1.0), "measured_seconds must be a positive"),
        (lambda: mbu(decode_step_cost(tiny_shape()), 1.0, -1.0), "peak_bandwidth must be a positive"),
    ],
)
def test_costs_reject_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- hardware


def test_hardware_table():
    table = load_hardware_table()
    assert len(table) >= 20 and all(hw.source for hw in table.values())
    h100 = table["NVIDIA H100 SXM"]
    assert (h100.bandwidth, h100.peak_flops("bf16")) == (3350e9, 989e12)
    assert table["Google TPU v5p"].bandwidth_gb_s == 2765 and table["Google TPU v6e"].bf16_tflops_dense == 918
    apple = [hw for name, hw in table.items() if name.startswith("Apple")]
    assert len(apple) >= 5 and all(hw.bf16_tflops_dense is None for hw in apple)
    with pytest.raises(ValueError, match="no published bf16 peak for Apple M2 Max"):
        table["Apple M2 Max"].peak_flops("bf16")
    with pytest.raises(ValueError, match="dtype must be one of"):
        h100.peak_flops("int8")
    with pytest.raises(ValueError, match="hardware must be a Hardware or one of"):
        get_hardware("Cray-1")
    with pytest.raises(ValueError, match="hardware table not found"):
        load_hardware_table("/nonexistent/hardware.csv")


# ----------------------------------------------------------------------------- projections


def test_ar_passes_one_per_token():
    costs = ar_pass_costs(5, "Llama-2-7B", prompt=10)
    assert len(costs) == 5  # prefill makes token 1, then four decode steps
    assert (costs[0].tokens, costs[0].context) == (10, 0)
    assert [c.context for c in costs[1:]] == [10, 11, 12, 13] and all(c.tokens == 1 for c in costs[1:])


def test_ar_latency_is_bytes_over_bandwidth_when_compute_is_free():
    shape = tiny_shape()
    hw = Hardware("ideal", bandwidth_gb_s=1.0, bf16_tflops_dense=1e9)  # near-infinite FLOP/s
    n, prompt = 4, 1
    weights = shape.num_params() * 2
    kv_reads = sum(prompt + i for i in range(n - 1)) * kv_bytes_per_token(shape, 2)
    assert ar_latency(n, shape, hw, prompt=prompt) == pytest.approx((n * weights + kv_reads) / 1e9, rel=1e-6)
    assert ar_latency(200, "Llama-2-7B", "NVIDIA H100 SXM") > 200 / 253.5  # at least N weight reads


def test_dllm_without_cache_is_k_passes_over_the_canvas():
    costs = dllm_pass_costs(64, 8, "LLaDA-8B", prompt=16)
    assert len(costs) == 8 and all((c.tokens, c.context) == (80, 0) for c in costs)
    one = predicted_time(costs[0], H100_BW, H100_BF16)
    assert dllm_latency(64, 8, "LLaDA-8B", "NVIDIA H100 SXM", prompt=16) == pytest.approx(8 * one)
    # flat in N while the canvas stays below the ridge point; AR grows linearly
    short, long = (dllm_latency(n, 8, "LLaDA-8B", "NVIDIA H100 SXM") for n in (16, 128))
    assert long == pytest.approx(short, rel=0.05)
    assert ar_latency(128, "LLaDA-8B", "NVIDIA H100 SXM") > 7 * ar_latency(16, "LLaDA-8B", "NVIDIA H100 SXM")


def test_dllm_block_caches():
    prefix = dllm_pass_costs(8, 4, tiny_shape(), prompt=2, block_length=4, cache="prefix")
    assert [(c.tokens, c.context) for c in prefix] == [(10, 0), (8, 2), (10, 0), (4, 6)]
    dual = dllm_pass_costs(8, 4, tiny_shape(), prompt=2, block_length=4, cache="dual")
    assert [(c.tokens, c.context) for c in dual] == [(10, 0), (4, 6), (10, 0), (4, 6)]
    # a long canvas is compute-bound without a cache; the dual cache makes most passes cheap
    uncached = dllm_latency(1024, 256, "LLaDA-8B", "NVIDIA H100 SXM")
    cached = dllm_latency(1024, 256, "LLaDA-8B", "NVIDIA H100 SXM", block_length=32, cache="dual")
    assert cached < uncached / 2


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ar_pass_costs(0, "Llama-2-7B"), "n_tokens must be an int >= 1"),
        (lambda: ar_pass_costs(4, "Llama-2-7B", prompt=0), "prompt must be an int >= 1"),
        (lambda: ar_latency(4, "Llama-2-7B", "NVIDIA H100 SXM", dtype="fp8"), "dtype must be one of"),
        (lambda: ar_latency(4, "Llama-2-7B", "Apple M2 Max"), "no published bf16 peak"),
        (lambda: dllm_pass_costs(8, 0, "LLaDA-8B"), "steps must be an int >= 1"),
        (lambda: dllm_pass_costs(8, 4, "LLaDA-8B", cache="full"), "cache must be None, 'prefix' or 'dual'"),
        (lambda: dllm_pass_costs(8, 4, "LLaDA-8B", cache="dual"), "give block_length"),
        (lambda: dllm_pass_costs(8, 4, "LLaDA-8B", block_length=3, cache="dual"), "multiple of block_length"),
        (lambda: dllm_pass_costs(8, 3, "LLaDA-8B", block_length=4, cache="dual"), "multiple of the number of blocks"),
        (lambda: dllm_latency(8, 4, "LLaDA-8B", "TPU v9"), "hardware must be a Hardware"),
    ],
)
def test_projections_reject_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_hardware_rows_can_be_completed_by_hand():
    m2 = dataclasses.replace(get_hardware("Apple M2 Max"), bf16_tflops_dense=27.0)
    assert ar_latency(8, "Llama-3.2-1B", m2) > 0
