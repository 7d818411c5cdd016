import pytest
import torch

from helpers.bench import as_json, precision, random_model
from helpers.bench.precision import FORMATS, Int8Linear, model_in, ratios, step_cost, time_formats
from helpers.decoding.model import ModelConfig
from helpers.roofline.costs import decode_step_cost

SMALL = ModelConfig(vocab_size=64, max_len=24, d_model=32, n_layer=2, n_head=4)


@pytest.fixture(scope="module")
def fp32_model():
    return random_model(SMALL)


def test_int8_linear_is_a_per_row_symmetric_quantisation():
    torch.manual_seed(0)
    linear = torch.nn.Linear(16, 8)
    q = Int8Linear(linear)
    assert q.weight_int8.dtype == torch.int8 and q.weight_int8.shape == (8, 16)
    assert q.weight_int8.abs().amax(dim=1).tolist() == [127] * 8  # every row uses the full range
    x = torch.randn(3, 16)
    error = (q(x) - linear(x)).abs().max()
    assert error < 0.01 * linear(x).abs().max()


def test_the_three_formats_compute_the_same_step(fp32_model):
    idx = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = fp32_model(idx)
        for fmt in FORMATS:
            model = model_in(fp32_model, fmt)
            out = model(idx).float()
            assert torch.allclose(out, ref, atol=0.05), fmt
    assert model_in(fp32_model, "bf16").blocks[0].mlp.up.weight.is_contiguous()  # bf16: row-major
    assert model_in(fp32_model, "fp32") is fp32_model
    assert fp32_model.tok_emb.weight.dtype == torch.float32  # the copies leave the original alone


def test_bytes_per_step_of_each_format():
    fp32, bf16, int8 = (step_cost(SMALL, f, 8) for f in FORMATS)
    assert fp32.weight_bytes == 2 * bf16.weight_bytes == 4 * int8.weight_bytes
    assert fp32.kv_bytes == 2 * bf16.kv_bytes == 2 * int8.kv_bytes  # int8: bf16 activations and cache
    assert fp32.total_bytes == decode_step_cost(SMALL, context=8, bytes_per_param=4).total_bytes


def test_time_formats_alternates_and_compares_with_bytes(fp32_model, monkeypatch):
    order = []
    real = precision.benchmark

    def spy(fn, **kwargs):
        order.append(fn)
        return real(fn, **kwargs)

    monkeypatch.setattr(precision, "benchmark", spy)
    results = time_formats(fp32_model, context=8, rounds=2, repeat=2)
    assert [r.fmt for r in results] == list(FORMATS)
    assert all(len(r.measured.samples) == len(r.gemvs.samples) == 4 for r in results)  # 2 rounds x 2 runs
    assert len(order) == 12 and order[:6] == order[6:]  # fp32 step, GEMVs, bf16 ..., int8 ..., then again
    assert all(r.gemvs.si < r.measured.si for r in results)  # the weight matrices alone: part of the step
    r = ratios(results)
    assert r["fp32"] == (1.0, 1.0) and r["bf16"][1] == pytest.approx(0.5) and r["int8"][1] < 0.5
    assert as_json(results[0])["achieved_gb_s"] > 0


def test_without_the_int8_kernel_the_row_says_so(fp32_model, monkeypatch):
    monkeypatch.delattr(torch, "_weight_int8pack_mm", raising=False)
    results = time_formats(fp32_model, context=4, rounds=1, repeat=1)
    assert results[2].measured is None and "_weight_int8pack_mm" in results[2].note
    assert set(ratios(results)) == {"fp32", "bf16"}
    with pytest.raises(ValueError, match="cannot run here"):
        model_in(fp32_model, "int8")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m: model_in(m, "fp8"), "fmt must be one of"),
        (lambda m: time_formats(model_in(m, "bf16")), "causal fp32"),
        (lambda m: time_formats(m, context=24), r"must fit in max_len \(24\)"),
        (lambda m: time_formats(m, rounds=0), "rounds must be an int >= 1"),
        (lambda m: time_formats(m, context=-1), "context must be an int >= 0"),
    ],
)
def test_bad_arguments(fp32_model, call, message):
    with pytest.raises(ValueError, match=message):
        call(fp32_model)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ratios([]), "results must be the list of FormatStep"),
        (lambda: ratios("fp32"), "results must be the list of FormatStep"),
        (lambda: model_in(SMALL, "bf16"), "model must be a helpers.decoding.model.Transformer, got ModelConfig"),
        (lambda: step_cost(SMALL, ["fp32"], 8), "fmt must be one of"),
    ],
)
def test_bad_input_names_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()
