import pytest

from helpers.decoding.model import ModelConfig, Transformer, gpt2_small_config
from helpers.roofline.costs import (
    MODEL_SHAPES,
    ModelShape,
    StepCost,
    check_fits,
    decode_step_cost,
    effective_roofs,
    efficiency_label,
    forward_pass_cost,
    kv_bytes_per_token,
    mbu,
    model_shape,
    predicted_time,
)
from helpers.roofline.hardware import get_hardware, load_hardware_table

H100_BW, H100_BF16 = 3350e9, 989e12


def tiny_shape(**kw):
    """2 layers, d 8, 2 heads (head_dim 4), MLP 16, vocab 10, tied, no biases: easy to count by hand."""
    args = dict(name="tiny", n_layer=2, d_model=8, n_head=2, n_kv_head=2, d_ff=16, vocab_size=10)
    return ModelShape(**(args | kw))


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
        (lambda: kv_bytes_per_token(tiny_shape(), 0), "bytes_per_kv must be a finite number > 0"),
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
        (lambda: decode_step_cost(tiny_shape(), bytes_per_param=0), "bytes_per_param must be a finite number > 0"),
        (lambda: forward_pass_cost(tiny_shape(), tokens=0), "tokens must be an int >= 1"),
        (lambda: forward_pass_cost(tiny_shape(), tokens=2.0), "tokens must be an int >= 1"),
        (lambda: decode_step_cost("nope"), "model must be a ModelShape"),
        (lambda: predicted_time("cost", 1.0, 1.0), "cost must be a StepCost"),
        (lambda: predicted_time(decode_step_cost(tiny_shape()), 0.0, 1.0), "bandwidth must be a finite number > 0"),
        (lambda: mbu(decode_step_cost(tiny_shape()), 0.0, 1.0), "measured_seconds must be a finite number > 0"),
        (lambda: mbu(decode_step_cost(tiny_shape()), 1.0, -1.0), "peak_bandwidth must be a finite number > 0"),
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


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: model_shape(["Llama-3-8B"]), "model must be a ModelShape, a ModelConfig or one of"),
        (lambda: kv_bytes_per_token("Llama-3-8B", True), "bytes_per_kv must be a finite number > 0, got True"),
        (lambda: decode_step_cost("Llama-2-7B", bytes_per_param=float("nan")), "bytes_per_param must be a finite"),
        (lambda: decode_step_cost("Llama-2-7B", batch=True), "batch must be an int >= 1, got True"),
        (lambda: predicted_time(decode_step_cost("Llama-2-7B"), 1.0, "1"), "peak_flops must be a finite number > 0"),
        (lambda: effective_roofs("NVIDIA H100 SXM", compute_efficiency=1.5), r"compute_efficiency must be .* \(0, 1\]"),
        (lambda: effective_roofs("NVIDIA H100 SXM", dtype=["bf16"]), "dtype must be one of"),
        (lambda: efficiency_label(0.0), r"bandwidth_efficiency must be a number in \(0, 1\], got 0.0"),
        (lambda: check_fits("Llama-3-8B", "NVIDIA H100 SXM", cached_positions=-1), "cached_positions must be an int"),
        (lambda: get_hardware(["NVIDIA H100 SXM"]), "hardware must be a Hardware or one of"),
        (lambda: load_hardware_table(3), "path must be None, a str or a pathlib.Path, got 3"),
    ],
)
def test_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_cost_model_imports_neither_pyplot_nor_the_plots():
    import subprocess
    import sys

    code = (
        "import sys, helpers.roofline.costs, helpers.projection.latency, helpers.roofline.hardware, "
        "helpers.roofline.attainable, helpers.roofline.shapes; "
        "print('matplotlib.pyplot' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
