"""helpers.bench: structure of the results, the roofline arithmetic behind them, argument errors.

The real measurements take seconds to minutes; here the roofs are faked (or measured on tiny
arrays) and the models are tiny, so the whole file runs in a few seconds."""

import json
from dataclasses import asdict, replace

import pytest
import torch

from helpers.bench import (
    BenchSettings,
    Roofs,
    as_json,
    bidirectional_twin,
    cli,
    decode_step,
    format_report,
    measure_machine,
    model_gemv_bandwidth,
    prefilled_cache,
    random_model,
    roofs,
    run_bench,
    stages,
    tiny_config,
    tiny_models_n256,
    width_sweep,
)
from helpers.bench.cli import main
from helpers.decoding.model import ModelConfig
from helpers.language.toylang import LANG
from helpers.measure.timing import Measurement
from helpers.roofline.costs import decode_step_cost, forward_pass_cost, predicted_time
from helpers.train import model_config

SMALL = ModelConfig(vocab_size=50, max_len=40, d_model=16, n_layer=2, n_head=2)  # a decode shape that times fast
FAST = BenchSettings(
    warmup=0, repeat=2, decode_repeat=2, width_repeat=1, tiny_repeat=1, widths=(1, 4, 64), format_rounds=1
)


def fake_roofs(copy=10.0, triad=12.0, gemv=11.0, gflops=100.0) -> Roofs:
    gb = lambda v: Measurement(v, "GB/s", 0.1, [v])  # noqa: E731
    return Roofs(
        device="cpu (2 threads)",
        threads=2,
        array_bytes=2**20,
        copy=gb(copy),
        triad=gb(triad),
        gemv=gb(gemv),
        matmul=Measurement(gflops, "GFLOP/s", 1.0, [gflops]),
        gemv_dtype="float32",
        matmul_dtype="float32",
    )


@pytest.fixture
def faked_machine(monkeypatch):
    """measure_machine without the measurements: fixed roofs, no big arrays."""
    monkeypatch.setattr(stages, "measure_machine", lambda device=None, settings=None: fake_roofs())


def test_roofs_properties_and_dict():
    r = fake_roofs()
    assert r.bandwidth == 11e9 and r.stream_bandwidth == 12e9 and r.peak_flops == 100e9
    assert r.ridge == pytest.approx(100 / 11) and r.ridge_stream == pytest.approx(100 / 12)
    d = as_json(r)
    assert d["ridge_flop_per_byte"] == round(100 / 11, 2) and d["ridge_bandwidth"] == "gemv"
    assert {"copy_gb_s", "triad_gb_s", "gemv_gb_s", "matmul_gflop_s", "threads", "device"} <= set(d)


def test_measure_machine_on_small_arrays(monkeypatch):
    monkeypatch.setattr(roofs, "default_array_bytes", lambda device=None: 2**20)  # 1 MiB: only a smoke test
    r = measure_machine("cpu", settings=replace(FAST, matmul_n=64))
    assert r.array_bytes == 2 * 2**20 and r.threads == torch.get_num_threads()
    assert min(r.copy.value, r.triad.value, r.gemv.value, r.matmul.value) > 0
    assert r.gemv_dtype == "float32" and r.matmul_dtype == "float32"
    json.dumps(as_json(r))


def test_decode_step_is_the_cached_step_of_generate_and_its_prediction():
    roofs = fake_roofs()
    model = random_model(replace(SMALL, causal=True))
    calls = []
    model.register_forward_hook(lambda m, args, out: calls.append((tuple(args[0].shape), tuple(out.shape))))
    gemv = Measurement(9.0, "GB/s", 0.1, [9.0])  # the model's own GEMVs
    step = decode_step(model, roofs=roofs, context=10, warmup=1, repeat=3, gemv=gemv)
    assert calls[0][0] == (1, 10)  # one prefill pass over the context ...
    assert all(c == ((1, 1), (1, 1, SMALL.vocab_size)) for c in calls[1:])  # ... then one token, last_only
    assert len(calls) == 1 + 1 + 3
    cost = decode_step_cost(SMALL, context=10, bytes_per_param=4)
    assert step.cost == cost
    assert step.bandwidth == 9e9
    assert step.predicted_s == predicted_time(cost, 9e9, 100e9)
    assert step.predicted_generic_s == predicted_time(cost, 11e9, 100e9)  # with roofs.gemv
    assert step.achieved_bandwidth == pytest.approx(cost.total_bytes / step.measured.si)
    assert step.mbu == pytest.approx(step.achieved_bandwidth / 12e9)
    assert step.vs_gemv == pytest.approx(step.achieved_bandwidth / 9e9)
    assert step.error == pytest.approx(step.predicted_s / step.measured.si - 1)
    assert step.error_generic == pytest.approx(step.predicted_generic_s / step.measured.si - 1)
    d = as_json(step)
    assert d["context"] == 10 and d["dtype"] == "float32" and d["bytes_per_step"] == int(cost.total_bytes)
    assert d["gemv_model_gb_s_eager"] == 9.0


def test_decode_step_predicts_with_the_models_own_gemvs():
    model = random_model(replace(SMALL, causal=True))
    gemvs = model_gemv_bandwidth(model, warmup=0, repeat=2)
    assert gemvs.unit == "GB/s" and gemvs.value > 0 and len(gemvs.samples) == 2
    step = decode_step(model, roofs=fake_roofs(), context=3, warmup=0, repeat=1)
    assert step.gemv.unit == "GB/s" and step.bandwidth == step.gemv.si
    with pytest.raises(ValueError, match="Transformer"):
        model_gemv_bandwidth(SMALL)


def test_width_sweep_compares_bidirectional_passes_with_the_step():
    roofs = fake_roofs()
    model = random_model(SMALL)
    twin = bidirectional_twin(model)
    assert not twin.config.causal
    for a, b in zip(model.state_dict().values(), twin.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # the same weights
    step = decode_step(model, roofs=roofs, context=5, warmup=0, repeat=2)
    points = width_sweep(twin, [1, 8, 32], roofs=roofs, step=step, warmup=0, repeat=1)
    assert [p.width for p in points] == [1, 8, 32]
    for p in points:
        cost = forward_pass_cost(SMALL, tokens=p.width, bytes_per_param=4)
        assert p.predicted_s == predicted_time(cost, step.bandwidth, 100e9)  # the step's GEMV bandwidth
        assert p.ratio == pytest.approx(p.measured.si / step.measured.si)
        assert p.predicted_ratio == pytest.approx(p.predicted_s / step.predicted_s)
        assert p.intensity == pytest.approx(cost.intensity)
    assert points[-1].predicted_ratio > points[0].predicted_ratio  # more positions, more FLOPs


def test_tiny_config_is_the_course_shape_with_more_positions():
    trained = model_config("ar")
    assert replace(tiny_config(256), max_len=trained.max_len) == trained
    assert tiny_config(256).max_len == 257 and not tiny_config(8, causal=False).causal
    assert tiny_config().vocab_size == len(LANG.vocab)


def test_tiny_models_count_their_passes():
    run = tiny_models_n256(roofs=fake_roofs(), n_tokens=16, steps=4, warmup=0, repeat=1)
    assert (run.ar.passes, run.dllm.passes) == (16, 4)  # N passes for AR, K for the diffusion sampler
    assert run.ar.per_pass_s == pytest.approx(run.ar.measured.si / 16)
    assert run.params == random_model(tiny_config(16)).num_params()
    d = as_json(run)
    assert "33 positions" in d["note"] and "max_len 17" in d["note"]
    assert d["dllm_speedup_eager"] == round(run.ar.measured.si / run.dllm.measured.si, 2)


def test_run_bench_json_structure(faked_machine):
    lines = []
    result = run_bench(
        "cpu", decode_config=SMALL, context=8, n_tokens=16, steps=4, settings=FAST, progress=lines.append
    )
    assert len(lines) == 5
    assert set(result) == {
        "command", "machine", "settings", "roofs", "decode", "width_sweep", "tiny", "formats",
        "ops_per_step", "graphs", "matmul_sweep", "cuda_graphs", "timing", "gpu_start", "warm_up_s", "stages",
        "errors",
    }  # fmt: skip
    assert result["errors"] == [] and result["gpu_start"] is None  # no GPU, no nvidia-smi snapshot
    assert [s["stage"] for s in result["stages"]] == [s.name for s in stages.STAGES]
    assert [s["status"] for s in result["stages"]] == ["ok"] * 5 + ["skipped"] * 2  # graphs, matmuls: GPU only
    assert result["cuda_graphs"] is False
    assert result["graphs"] == [] and result["matmul_sweep"] == []  # GPU stages: not on the CPU
    assert result["ops_per_step"]["compute"] < result["ops_per_step"]["total"]
    assert result["decode"]["graph_ms"] is None and result["decode"]["datasheet_device"] is None
    assert [f["format"] for f in result["formats"]] == ["fp32", "bf16", "int8"]
    assert [f["bytes_per_step"] for f in result["formats"]][0] > result["formats"][1]["bytes_per_step"]
    assert json.loads(json.dumps(result)) == result  # plain JSON types only
    assert result["roofs"] == as_json(fake_roofs())
    assert [p["width"] for p in result["width_sweep"]] == [1, 4]  # 64 does not fit in max_len 40
    assert result["decode"]["context"] == 8 and result["decode"]["shape"] == "custom"
    assert result["tiny"]["ar"]["passes"] == 16 and result["tiny"]["dllm"]["passes"] == 4
    text = format_report(result)
    for needle in (
        "STREAM copy",
        "STREAM triad",
        "GEMV",
        "d_model",
        "matmul peak",
        "ridge point",
        "MBU",
        "K = 4",
        "bf16",
    ):
        assert needle in text


def test_run_bench_on_cpu_never_touches_cuda(faked_machine, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("CUDA called on a CPU run")

    for name in ("synchronize", "Event", "get_device_properties", "get_device_name"):
        monkeypatch.setattr(torch.cuda, name, forbidden)
    run_bench("cpu", decode_config=SMALL, context=4, n_tokens=8, steps=2, settings=FAST)


def test_main_prints_json_or_a_table(monkeypatch, capsys):
    result = {"fake": 1, "errors": []}
    seen = {}

    def fake_run(device, **kwargs):
        seen.update(kwargs, device=device)
        return result

    monkeypatch.setattr(cli, "run_bench", fake_run)
    monkeypatch.setattr(cli, "format_report", lambda r: "TABLE")
    assert main(["--device", "cpu", "--json", "--quick", "--steps", "16"]) == 0
    assert json.loads(capsys.readouterr().out) == result
    assert seen["quick"] is True and seen["steps"] == 16 and seen["device"] == torch.device("cpu")
    assert main(["--device", "cpu"]) == 0
    assert capsys.readouterr().out.strip() == "TABLE"


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: run_bench("cpu", steps=0), "steps must be an int >= 1"),
        (lambda: run_bench("cpu", steps=300), r"steps \(300\) must be <= n_tokens \(256\)"),
        (lambda: run_bench("cpu", context=1024), r"must fit in the decode model's max_len \(1024\)"),
        (lambda: run_bench("cpu", quick="yes"), "quick must be True or False"),
        (lambda: run_bench("tpu"), "device must be"),
        (lambda: run_bench(torch.device("mps")), "device type must be|not available|MPS lacks"),
        (lambda: measure_machine("cpu", settings="fast"), "settings must be a BenchSettings"),
        (lambda: decode_step(SMALL, roofs=None), "roofs must be the Roofs"),
        (lambda: decode_step(replace(SMALL, causal=False), roofs=fake_roofs()), "must be a causal"),
        (lambda: decode_step(SMALL, roofs=fake_roofs(), context=40), r"must fit in max_len \(40\)"),
        (lambda: decode_step(SMALL, roofs=fake_roofs(), batch=0), "batch must be an int >= 1"),
        (lambda: decode_step(SMALL, roofs=fake_roofs(), context=2, gemv=11.0), "gemv must be None or a Measurement"),
        (lambda: random_model(asdict(SMALL)), "config must be a helpers.decoding.model.ModelConfig"),
        (lambda: tiny_models_n256(roofs=fake_roofs(), n_tokens=8, steps=9), r"steps \(9\) must be <= n_tokens"),
        (lambda: tiny_config(0), "n_tokens must be an int >= 1"),
    ],
)
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_width_sweep_rejects_bad_widths():
    model = random_model(SMALL)
    step = decode_step(model, roofs=fake_roofs(), context=2, warmup=0, repeat=1)
    for widths, message in (([], "at least one width"), ([0], "each width must be"), ([41], "longer than")):
        with pytest.raises(ValueError, match=message):
            width_sweep(model, widths, roofs=fake_roofs(), step=step)


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--steps", "999"], ["--device", "tpu"], ["--context", "-1"]])
def test_main_rejects_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--device", "cpu", *argv] if "--device" not in argv else argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: BenchSettings(repeat=0), "BenchSettings.repeat must be an int >= 1, got 0"),
        (lambda: BenchSettings(warmup=True), "BenchSettings.warmup must be an int >= 0, got True"),
        (lambda: BenchSettings(widths=()), "BenchSettings.widths must be a non-empty tuple"),
        (lambda: random_model(SMALL, seed=True), "seed must be an int >= 0, got True"),
        (lambda: random_model(SMALL, device="tpu"), "device must be None, 'cpu', 'cuda', 'cuda:N', 'mps'"),
        (lambda: tiny_config(8, causal="yes"), "causal must be True or False"),
        (lambda: tiny_config(2.0), "n_tokens must be an int >= 1, got 2.0"),
        (lambda: bidirectional_twin(SMALL), "model must be a helpers.decoding.model.Transformer, got ModelConfig"),
        (lambda: prefilled_cache(random_model(SMALL), 40, 1, 0), r"must fit in max_len \(40\)"),
        (lambda: prefilled_cache(SMALL, 4, 1, 0), "model must be a causal helpers.decoding.model.Transformer"),
        (lambda: decode_step(SMALL, roofs=fake_roofs(), context=True), "context must be an int >= 0, got True"),
        (lambda: decode_step(SMALL, roofs=fake_roofs(), shape=3), "shape must be None or a str"),
        (lambda: tiny_models_n256(roofs=fake_roofs(), n_tokens=True), "n_tokens must be an int >= 1, got True"),
        (lambda: run_bench("cpu", steps=True), "steps must be an int >= 1, got True"),
        (lambda: run_bench("cpu", settings="fast"), "settings must be None or a BenchSettings"),
        (lambda: run_bench("cpu", decode_config=replace(SMALL, causal=False)), "decode_config must be causal"),
        (lambda: run_bench("cpu", progress=3), "progress must be None or a callable"),
        (lambda: as_json(3), "result must be a measurement of helpers.bench or helpers.bench.precision"),
    ],
)
def test_more_bad_arguments_name_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_width_sweep_rejects_widths_that_are_not_a_list():
    model = random_model(SMALL)
    step = decode_step(model, roofs=fake_roofs(), context=2, warmup=0, repeat=1)
    for widths in (4, "4"):
        with pytest.raises(ValueError, match="widths must be a list of ints >= 1"):
            width_sweep(model, widths, roofs=fake_roofs(), step=step)
    with pytest.raises(ValueError, match="each width must be an int >= 1, got True"):
        width_sweep(model, [True], roofs=fake_roofs(), step=step)


def test_json_keys_are_the_documented_ones():
    """The keys data/bench_*.json and notebook 04 read, in their order (dataclasses.asdict of the report rows)."""
    assert list(as_json(fake_roofs())) == [
        "device", "threads", "array_mib", "copy_gb_s", "copy_iqr_gb_s", "triad_gb_s", "triad_iqr_gb_s",
        "gemv_gb_s", "gemv_iqr_gb_s", "gemv_dtype", "matmul_gflop_s", "matmul_iqr_gflop_s", "matmul_dtype",
        "ridge_flop_per_byte", "ridge_bandwidth", "ridge_stream_flop_per_byte", "matmul_n",
    ]  # fmt: skip
    run = tiny_models_n256(roofs=fake_roofs(), n_tokens=8, steps=2, warmup=0, repeat=1)
    d = as_json(run)
    assert list(d) == ["note", "n_tokens", "steps", "params", "ar", "dllm", "dllm_speedup_eager"]
    assert list(d["ar"]) == [
        "decoder", "measured_ms_eager", "measured_iqr_ms_eager", "passes", "ms_per_pass_eager", "predicted_ms",
    ]  # fmt: skip
    assert d["ar"]["measured_ms_eager"] == round(1e3 * run.ar.measured.value, 2)


def test_python_m_helpers_bench_help_runs():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "helpers.bench", "--help"], capture_output=True, text=True, check=True)
    assert "--quick" in out.stdout and "--json" in out.stdout and "measure_machine" in out.stdout
