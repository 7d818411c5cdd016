import dataclasses

import pytest

from helpers.projection.latency import (
    ar_latency,
    ar_pass_costs,
    dllm_latency,
    dllm_latency_at,
    dllm_pass_costs,
    dllm_steps,
    explorer_lengths,
    latency_curves,
)
from helpers.roofline.costs import (
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    ModelShape,
    effective_roofs,
    kv_bytes_per_token,
    predicted_time,
)
from helpers.roofline.hardware import Hardware, get_hardware

H100_BW, H100_BF16 = 3350e9, 989e12
CEILING = dict(bandwidth_efficiency=1.0, compute_efficiency=1.0)


def tiny_shape(**kw):
    """2 layers, d 8, 2 heads (head_dim 4), MLP 16, vocab 10, tied, no biases: easy to count by hand."""
    args = dict(name="tiny", n_layer=2, d_model=8, n_head=2, n_kv_head=2, d_ff=16, vocab_size=10)
    return ModelShape(**(args | kw))


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
    assert ar_latency(n, shape, hw, prompt=prompt, **CEILING) == pytest.approx((n * weights + kv_reads) / 1e9, rel=1e-6)
    assert ar_latency(200, "Llama-2-7B", "NVIDIA H100 SXM") > 200 / 253.5  # at least N weight reads


def test_dllm_without_cache_is_k_passes_over_the_canvas():
    costs = dllm_pass_costs(64, 8, "LLaDA-8B", prompt=16)
    assert len(costs) == 8 and all((c.tokens, c.context) == (80, 0) for c in costs)
    one = predicted_time(costs[0], H100_BW, H100_BF16)
    assert dllm_latency(64, 8, "LLaDA-8B", "NVIDIA H100 SXM", prompt=16, **CEILING) == pytest.approx(8 * one)
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


# ----------------------------------------------------------------------------- ceiling and typical

# Projections of the cost model before efficiencies existed (helpers/roofline/attainable.py at commit 67ec588),
# computed with that code: at 100 % of the datasheet every projection must stay exactly what it was.
BEFORE_EFFICIENCIES = [
    ("ar", (1000, "Llama-3-8B", "NVIDIA H100 SXM"), {}, 4.500097910977882),
    ("ar", (1000, "Llama-3.2-1B", "NVIDIA RTX 3090"), {"batch": 64}, 3.7597824087477005),
    ("ar", (500, "Llama-3-8B", "NVIDIA H100 SXM"), {"prompt": 1000}, 2.275888364701117),
    ("ar", (200, "Llama-2-7B", "NVIDIA A100 80GB SXM"), {"prompt": 5, "dtype": "fp32"}, 2.6030313558482616),
    ("dllm", (1000, 32, "Llama-3-8B", "NVIDIA H100 SXM"), {}, 0.5026039996440853),
    ("dllm", (1000, 256, "LLaDA-8B", "NVIDIA L4"), {"prompt": 16}, 33.3767942823733),
    (
        "dllm",
        (1024, 64, "Llama-3-8B", "NVIDIA A100 80GB SXM"),
        {"block_length": 32, "cache": "dual"},
        1.870357123920188,
    ),
    (
        "dllm",
        (1024, 256, "LLaDA-8B", "AMD MI300X"),
        {"block_length": 32, "cache": "prefix", "prompt": 100},
        1.9078434683368848,
    ),
    (
        "dllm",
        (500, 160, "Llama-3-8B", "NVIDIA H100 SXM"),
        {"prompt": 1000, "block_length": 50, "cache": "dual", "batch": 4},
        1.664481840377401,
    ),
]


@pytest.mark.parametrize("kind, args, kwargs, before", BEFORE_EFFICIENCIES)
def test_at_the_ceiling_every_projection_is_unchanged(kind, args, kwargs, before):
    project = ar_latency if kind == "ar" else dllm_latency
    assert project(*args, **kwargs, **CEILING) == pytest.approx(before, rel=1e-9)
    typical = project(*args, **kwargs)  # the default is the typical efficiency: slower than the ceiling
    assert before < typical <= before / min(TYPICAL_BANDWIDTH_EFFICIENCY, TYPICAL_COMPUTE_EFFICIENCY) * (1 + 1e-12)


def test_efficiency_scales_the_roofs():
    bw, flops = effective_roofs("NVIDIA H100 SXM", "bf16", 0.5, 0.25)
    assert (bw, flops) == (0.5 * 3350e9, 0.25 * 989e12)
    assert effective_roofs("NVIDIA H100 SXM", "int8", 1.0, 1.0) == (3350e9, 989e12)  # int8 weights compute in bf16
    # memory-bound AR decoding scales with the bandwidth efficiency alone
    ceiling = ar_latency(100, "Llama-2-7B", "NVIDIA H100 SXM", **CEILING)
    half = ar_latency(100, "Llama-2-7B", "NVIDIA H100 SXM", bandwidth_efficiency=0.5, compute_efficiency=1.0)
    assert half == pytest.approx(2 * ceiling, rel=0.01)
    # a long uncached canvas is compute-bound: it scales with the compute efficiency alone
    ceiling = dllm_latency(1024, 64, "LLaDA-8B", "NVIDIA H100 SXM", **CEILING)
    half = dllm_latency(1024, 64, "LLaDA-8B", "NVIDIA H100 SXM", bandwidth_efficiency=1.0, compute_efficiency=0.5)
    assert half == pytest.approx(2 * ceiling, rel=1e-9)


@pytest.mark.parametrize("value", [0, -0.5, 1.01, float("nan"), True, "0.6"])
def test_efficiencies_must_be_fractions(value):
    with pytest.raises(ValueError, match="bandwidth_efficiency must be"):
        ar_latency(10, "Llama-2-7B", "NVIDIA H100 SXM", bandwidth_efficiency=value)
    with pytest.raises(ValueError, match="compute_efficiency must be"):
        dllm_latency(32, 4, "LLaDA-8B", "NVIDIA H100 SXM", compute_efficiency=value)


def test_weight_formats_read_fewer_bytes():
    bf16 = ar_latency(100, "Llama-2-7B", "NVIDIA H100 SXM", **CEILING)
    int8 = ar_latency(100, "Llama-2-7B", "NVIDIA H100 SXM", dtype="int8", **CEILING)
    int4 = ar_latency(100, "Llama-2-7B", "NVIDIA H100 SXM", dtype="int4", **CEILING)
    assert int8 == pytest.approx(bf16 / 2, rel=0.02)  # the KV cache stays bf16
    assert int4 == pytest.approx(bf16 * 0.625 / 2, rel=0.02)  # 4 bits + a bf16 scale and zero per 32 weights


# ----------------------------------------------------------------------------- tokens per pass


@pytest.mark.parametrize("cache, block", [(None, None), ("dual", 32), ("prefix", 32)])
def test_latency_at_a_rate_equals_whole_passes(cache, block):
    for steps in (32, 64, 256):
        whole = dllm_latency(1024, steps, "LLaDA-8B", "NVIDIA H100 SXM", prompt=7, block_length=block, cache=cache)
        rate = dllm_latency_at(
            1024, 1024 / steps, "LLaDA-8B", "NVIDIA H100 SXM", prompt=7, block_length=block, cache=cache
        )
        assert rate == pytest.approx(whole, rel=1e-12)


def test_latency_at_a_rate_interpolates_and_takes_a_short_last_block():
    at = lambda rate, n=1000: dllm_latency_at(n, rate, "LLaDA-8B", "NVIDIA H100 SXM", block_length=32, cache="dual")  # noqa: E731
    assert at(2.0) < at(1.5) < at(1.0)  # more tokens per pass, fewer passes
    assert at(32.0) == at(64.0)  # at least one pass per block: no faster than one full pass each
    assert at(1.0, 1000) > at(1.0, 992)  # 31 blocks of 32 and one of 8
    with pytest.raises(ValueError, match="tokens_per_pass must be a finite number > 0"):
        at(0)
    with pytest.raises(ValueError, match="cannot exceed n_tokens"):
        dllm_latency_at(10, 11, "LLaDA-8B", "NVIDIA H100 SXM")


# ----------------------------------------------------------------------------- the explorer's curves


def test_explorer_lengths_and_steps():
    assert list(explorer_lengths(256)) == [32, 64, 128, 256]
    assert list(explorer_lengths(300)) == [32, 64, 128, 256]
    assert dllm_steps(64, 32, None) == 32 and dllm_steps(16, 32, None) == 16  # never more passes than tokens
    assert dllm_steps(1024, 256, "dual") == 256  # 32 blocks x 8 passes
    assert dllm_steps(1024, 16, "dual") == 32  # at least one pass per block
    assert dllm_steps(96, 7, "dual") == 6  # 3 blocks x round(7 / 3) = 2
    with pytest.raises(ValueError, match="multiple of block_length"):
        dllm_steps(16, 8, "dual")  # once a ZeroDivisionError


@pytest.mark.parametrize("cache", [None, "dual"])
def test_latency_curves_are_the_projections(cache):
    hw = "NVIDIA A100 80GB SXM"
    curves = latency_curves(hw, "Llama-3.2-1B", batch=2, steps=64, n_max=512, cache=cache, dllm_model="LLaDA-8B")
    assert list(curves.n) == [32, 64, 128, 256, 512]
    for i, n in enumerate(curves.n):
        n = int(n)
        k = dllm_steps(n, 64, cache)
        assert curves.dllm_passes[i] == k
        for effs, ar, dllm in ((dict(), curves.ar, curves.dllm), (CEILING, curves.ar_ceiling, curves.dllm_ceiling)):
            assert ar[i] == pytest.approx(ar_latency(n, "Llama-3.2-1B", hw, batch=2, **effs), rel=1e-12)
            expected = dllm_latency(
                n, k, "LLaDA-8B", hw, prompt=1, block_length=32 if cache else None, cache=cache, batch=2, **effs
            )
            assert dllm[i] == pytest.approx(expected, rel=1e-12)
        assert curves.ideal[i] == pytest.approx(curves.ar[i] * k / n)
    assert curves.label == "typical (60 % of bandwidth, 45 % of FLOP/s)"


def test_latency_curves_reject_bad_arguments():
    with pytest.raises(ValueError, match="no published bf16 peak"):
        latency_curves("Apple M2 Max")
    with pytest.raises(ValueError, match="cache must be None or 'dual'"):
        latency_curves(cache="prefix")
    with pytest.raises(ValueError, match="n_max must be an int >= 32"):
        latency_curves(n_max=16)
    with pytest.raises(ValueError, match="hardware must be"):
        latency_curves("NVIDIA H1000")
    with pytest.raises(ValueError, match="does not fit on Google TPU v5e: it needs 16.6 GB"):
        latency_curves("Google TPU v5e", "Llama-3-8B")
    with pytest.raises(ValueError, match="does not fit on NVIDIA H100 SXM"):
        latency_curves("NVIDIA H100 SXM", "Llama-3-8B", batch=512, n_max=4096)  # 512 KV caches of 4097 positions


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: dllm_steps(64, 8, "dual", 0), "block_length must be an int >= 1, got 0"),  # once a ZeroDivisionError
        (lambda: dllm_steps(64, 8, "bogus"), "cache must be None, 'prefix' or 'dual', got 'bogus'"),
        (lambda: dllm_steps(64, 8, ["dual"]), "cache must be None, 'prefix' or 'dual'"),
        (lambda: dllm_steps(64, True, None), "steps must be an int >= 1, got True"),
        (lambda: explorer_lengths(256, 0), "block_length must be an int >= 1"),
        (lambda: explorer_lengths(True), "n_max must be an int >= 32, got True"),
        (lambda: ar_latency(8, "Llama-3-8B", "NVIDIA H100 SXM", dtype=["bf16"]), "dtype must be one of"),
        (lambda: ar_latency(8, "Llama-3-8B", "NVIDIA H100 SXM", batch=1.0), "batch must be an int >= 1, got 1.0"),
        (
            lambda: ar_latency(8, "Llama-3-8B", "NVIDIA H100 SXM", bandwidth_efficiency=float("nan")),
            r"bandwidth_efficiency must be a number in \(0, 1\], got nan",
        ),
        (lambda: dllm_latency_at(8, float("nan"), "LLaDA-8B", "NVIDIA H100 SXM"), "tokens_per_pass must be a finite"),
        (lambda: dllm_latency_at(8, True, "LLaDA-8B", "NVIDIA H100 SXM"), "tokens_per_pass must be a finite"),
        (lambda: latency_curves(cache="prefix"), "cache must be None or 'dual', got 'prefix'"),
        (lambda: latency_curves(cache=["dual"]), "cache must be None or 'dual'"),
    ],
)
def test_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()
