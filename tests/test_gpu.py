"""The CUDA path, exercised without a GPU: a fake GPU stands in for helpers.measure.gpu.runtime.

The fake keeps the rules a real one enforces: an event's time can be read only after a
synchronisation has passed it, and a call right after an L2 flush is slower (it reads from memory)
than one that finds its data in L2. So these tests fail if the timing loop drops its
synchronisation or its flush, if decode_step stops capturing and replaying a graph, or if MBU
stops using the datasheet."""

from __future__ import annotations

import json
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import torch
from fake_gpu import COLD_S, WARM_S, FakeGpu, roofs

from helpers.bench import graphs as bench_graphs
from helpers.bench.decode import decode_step, model_gemv_bandwidth
from helpers.bench.rows import as_json
from helpers.bench.text import _decode_lines, _graph_lines, reference_summary
from helpers.decoding import model as model_module
from helpers.decoding.model import ModelConfig, Transformer, gpu_wide_config, pad_vocab
from helpers.measure import gpu, machine
from helpers.measure.measurement import Measurement, benchmark
from helpers.measure.timing import rotate_copies, time_linear
from helpers.roofline.fixtures import build_on_device, layout_of, random_model, tiny_config
from helpers.roofline.hardware import get_hardware, match_hardware
from helpers.roofline.shapes import shape_from_config

# ----------------------------------------------------------------------------- timing: do_bench


def samples_of(log: list[str]) -> list[list[str]]:
    """The log between the warm-up and the final sync, cut into samples at each flush."""
    last_sync = len(log) - 1 - log[::-1].index("sync")
    body = log[log.index("flush") : last_sync]
    cuts = [i for i, entry in enumerate(body) if entry == "flush"] + [len(body)]
    return [body[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def test_each_sample_is_flush_then_calls_between_one_event_pair(virtual):
    seconds = benchmark(virtual.kernel, device="cpu", repeat=6, calls=4)
    samples = samples_of(virtual.log)
    assert len(samples) == 6
    assert all(s == ["flush", "record", "call", "call", "call", "call", "record"] for s in samples)
    assert virtual.log[-1] == "sync" and virtual.log.count("sync") == 3  # before, after the estimate, at the end
    # one cold call and three warm ones per sample, per call: exactly what the fake GPU spent
    assert seconds.value == pytest.approx((COLD_S + 3 * WARM_S) / 4, rel=1e-9)


def test_without_the_flush_the_fake_reads_from_l2_and_looks_faster(virtual):
    flushed = gpu.do_bench(virtual.kernel, virtual, repeat=5, calls=1)
    virtual.log.clear()
    unflushed = gpu.do_bench(virtual.kernel, virtual, repeat=5, calls=1, flush=False)
    assert "flush" not in virtual.log
    assert flushed == pytest.approx([COLD_S] * 5, rel=1e-9)  # every sample starts cold
    assert unflushed == pytest.approx([WARM_S] * 5, rel=1e-9)  # L2 speed: the error the flush prevents


def test_events_are_read_only_after_a_synchronisation():
    fake = FakeGpu()
    start, end = fake.event(), fake.event()
    start.record()
    end.record()
    with pytest.raises(RuntimeError, match="synchronize"):
        start.elapsed_time(end)  # the rule the fake enforces, as CUDA does
    fake.synchronize()
    assert start.elapsed_time(end) >= 0


def test_warm_up_is_by_time_and_calls_per_sample_fill_a_millisecond(virtual):
    def fast():
        virtual.log.append("call")
        virtual.virtual += 1e-5  # 10 us per call

    gpu.do_bench(fast, virtual, repeat=2)
    first_flush = virtual.log.index("flush")
    warm_calls = virtual.log[:first_flush].count("call") - gpu.ESTIMATE_CALLS
    assert warm_calls == pytest.approx(gpu.WARMUP_S / 1e-5, abs=1)  # 25 ms of calls, not a count
    assert samples_of(virtual.log)[0].count("call") == pytest.approx(gpu.MIN_SAMPLE_S / 1e-5, abs=1)


def test_benchmark_keeps_the_host_clock_path_when_a_clock_is_given(fake):
    ticks = iter(range(100))
    m = benchmark(fake.kernel, device="cpu", warmup=0, repeat=3, clock=lambda: next(ticks))
    assert m.samples == [1.0, 1.0, 1.0] and "flush" not in fake.log


def test_do_bench_rejects_bad_arguments(fake):
    for kwargs, message in (
        (dict(repeat=0), "repeat must be an int >= 1"),
        (dict(calls=0), "calls must be an int >= 1"),
        (dict(warmup_s=-1.0), "warmup_s must be a finite number >= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            gpu.do_bench(fake.kernel, fake, **kwargs)
    with pytest.raises(ValueError, match="fn must be callable"):
        gpu.do_bench(3, fake)
    with pytest.raises(ValueError, match="flush must be True or False"):
        benchmark(fake.kernel, flush="yes")


def test_time_linear_rotates_copies_that_fill_four_times_the_l2(virtual, monkeypatch):
    assert rotate_copies(2**26, "cpu") == 4  # 4 x 50 MiB in matrices of 64 MiB: 200 / 64, rounded up
    assert rotate_copies(2**20, "cpu") == 64  # 200 copies of 1 MiB would do; capped at MAX_COPIES
    seen = []
    real_linear = torch.nn.functional.linear

    def spy(x, w, *args):
        seen.append(w.data_ptr())
        virtual.virtual += 1e-5  # 10 us of fake GPU time per call: the sample sizes do not depend on the host
        return real_linear(x, w, *args)

    monkeypatch.setattr(torch.nn.functional, "linear", spy)
    time_linear(256, 256, warmup=0, repeat=2)  # 256 KiB in float32: 64 copies (the cap), used in turn
    distinct = list(dict.fromkeys(seen))
    assert len(distinct) == 64 and seen[:128] == distinct + distinct


def test_rotate_copies_is_one_off_cuda():
    assert rotate_copies(2**20, "cpu") == 1


# ----------------------------------------------------------------------------- graphs


@pytest.fixture
def tiny_model():
    return random_model(tiny_config(16))


def test_decode_step_captures_once_and_times_the_replays(fake, tiny_model):
    step = decode_step(tiny_model, roofs=roofs(), context=8, warmup=1, repeat=3)
    assert fake.captures == 2  # the decode step, and the model's GEMVs
    step_replays, gemv_replays = fake.replays_of
    assert step_replays > 3 and gemv_replays > 3  # both graphs' replays are what gets timed
    assert step.graphed is not None and step.gemv_graphed is not None
    assert step.graph_exact is True  # the graph's logits equal the eager step's
    assert step.bandwidth == step.gemv_graphed.si  # predictions use the kernels' bandwidth
    assert step.launch_overhead_s == pytest.approx(step.measured.si - step.graphed.si)
    d = as_json(step)
    assert d["graph_ms"] == round(1e3 * step.graphed.value, 4) and d["graph_exact"] is True


def test_graph_false_times_only_the_eager_step(fake, tiny_model):
    step = decode_step(tiny_model, roofs=roofs(), context=8, warmup=1, repeat=2, graph=False)
    assert fake.captures == 0 and step.graphed is None and step.gemv_graphed is None


def test_graphs_need_cuda(tiny_model):
    with pytest.raises(ValueError, match="graph=True needs a CUDA device"):
        decode_step(tiny_model, roofs=roofs(), context=8, graph=True)
    with pytest.raises(ValueError, match="graph=True needs a CUDA device"):
        model_gemv_bandwidth(tiny_model, graph=True)
    with pytest.raises(ValueError, match="graph must be None, True or False"):
        decode_step(tiny_model, roofs=roofs(), context=8, graph="yes")


def test_real_runtime_warms_up_on_a_side_stream_then_captures(monkeypatch):
    log = []

    class Stream:
        def __init__(self, device=None):
            self.name = "side"

        def wait_stream(self, other):
            log.append(f"{self.name} waits for {other.name}")

    main = SimpleNamespace(name="main", wait_stream=lambda other: log.append(f"main waits for {other.name}"))

    @contextmanager
    def on_stream(stream):
        log.append(f"enter {stream.name}")
        yield
        log.append(f"leave {stream.name}")

    class Graph:
        def replay(self):
            log.append("replay")

    @contextmanager
    def capturing(graph):
        log.append("capture begins")
        yield
        log.append("capture ends")

    for name, value in (
        ("Stream", Stream), ("current_stream", lambda device=None: main), ("stream", on_stream),
        ("CUDAGraph", Graph), ("graph", capturing),
    ):  # fmt: skip
        monkeypatch.setattr(torch.cuda, name, value)
    captured = gpu.CudaRuntime(torch.device("cpu")).capture(lambda: log.append("fn") or "out", warmup=2)
    captured.replay()
    assert log == [
        "side waits for main", "enter side", "fn", "fn", "leave side", "main waits for side",
        "capture begins", "fn", "capture ends", "replay",
    ]  # fmt: skip
    assert captured.output == "out"


def test_real_runtime_flushes_a_buffer_of_four_times_the_l2(monkeypatch):
    props = SimpleNamespace(total_memory=2**34, L2_cache_size=2**20)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(gpu, "MIN_FLUSH_BYTES", 2**16)
    runtime = gpu.CudaRuntime(torch.device("cpu"))
    runtime.flush_l2()
    buffer = runtime._flush_buffer
    assert buffer.numel() == 4 * 2**20 and bool((buffer == 0).all())
    buffer.fill_(1)
    runtime.flush_l2()  # the same buffer, written again
    assert runtime._flush_buffer is buffer and bool((buffer == 0).all())


def test_the_model_skips_its_id_check_while_a_graph_is_captured(monkeypatch, tiny_model):
    def no_sync(*args, **kwargs):
        raise AssertionError("a device-to-host copy during capture")

    ids = torch.tensor([[1, 2]])
    assert model_module._capturing(ids) is False  # CPU tensors: never capturing
    monkeypatch.setattr(model_module, "_capturing", lambda idx: True)
    monkeypatch.setattr(torch, "aminmax", no_sync)
    tiny_model(ids)  # no aminmax, no .tolist(): nothing that would break a capture


# ----------------------------------------------------------------------------- MBU against the datasheet


def test_mbu_uses_the_datasheet_of_the_matched_gpu(fake, tiny_model):
    step = decode_step(tiny_model, roofs=roofs(), context=8, warmup=1, repeat=3)
    assert step.datasheet == get_hardware("NVIDIA H200")
    assert step.mbu_datasheet() == pytest.approx(step.cost.total_bytes / step.graphed.si / 4800e9)
    assert step.mbu_datasheet(graphed=False) == pytest.approx(step.cost.total_bytes / step.measured.si / 4800e9)
    assert step.mbu == pytest.approx(step.cost.total_bytes / step.graphed.si / 4000e9)  # vs STREAM, the graph
    assert step.mbu_eager == pytest.approx(step.cost.total_bytes / step.measured.si / 4000e9)
    d = as_json(step)
    assert d["datasheet_device"] == "NVIDIA H200" and d["datasheet_gb_s"] == 4800
    assert d["mbu_vs_datasheet_graph"] == round(step.mbu_datasheet(), 3)
    assert "MBU vs datasheet" in "\n".join(_decode_lines(d, None))


def test_an_unlisted_gpu_has_no_datasheet_mbu(fake, tiny_model):
    fake.gpu_name = "Tesla T4"
    step = decode_step(tiny_model, roofs=roofs(), context=8, warmup=1, repeat=2)
    assert step.datasheet is None and step.mbu_datasheet() is None
    assert as_json(step)["mbu_vs_datasheet_graph"] is None


@pytest.mark.parametrize(
    "name, row",
    [
        ("NVIDIA H200", "NVIDIA H200"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB SXM"),
        ("NVIDIA GeForce RTX 4090", "NVIDIA RTX 4090"),
        ("NVIDIA GeForce RTX 3090", "NVIDIA RTX 3090"),
        ("NVIDIA L4", "NVIDIA L4"),
        ("NVIDIA L40S", "NVIDIA L40S"),
        ("AMD Instinct MI300X", "AMD MI300X"),
        ("NVIDIA H100 NVL", None),  # 3.9 TB/s: not the SXM's row
        ("NVIDIA H200 NVL", None),  # lower peak FLOP/s than the SXM's
        ("NVIDIA A100 80GB PCIe", None),  # 1935 GB/s: not the SXM's 2039
        ("NVIDIA GeForce RTX 3090 Ti", None),
        ("Tesla T4", None),
    ],
)
def test_match_hardware_names_the_exact_row_or_none(name, row):
    hw = match_hardware(name)
    assert (hw.device if hw else None) == row


# ----------------------------------------------------------------------------- the machine, sizes, JSON


def test_machine_summary_records_the_gpu_and_its_settings(fake):
    summary = machine.machine_summary("cpu")
    assert summary["device"] == "cuda (NVIDIA H200)"
    assert {"gpu", "cuda", "driver_version", "tf32_matmul"} <= set(summary)


def test_real_summary_reads_versions_tf32_and_nvidia_smi(monkeypatch):
    props = SimpleNamespace(
        total_memory=141 * 2**30, L2_cache_size=60 * 2**20, major=9, minor=0, multi_processor_count=132
    )
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: props)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA H200")
    monkeypatch.setattr(gpu, "nvidia_smi", lambda index: {"driver_version": "570.1", "power_draw": 120.0})
    summary = gpu.CudaRuntime(torch.device("cpu")).summary()
    assert summary["gpu"] == "NVIDIA H200" and summary["gpu_l2_mib"] == 60.0 and summary["compute_capability"] == "9.0"
    assert summary["tf32_matmul"] == torch.backends.cuda.matmul.allow_tf32
    assert summary["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    assert summary["driver_version"] == "570.1" and summary["power_draw"] == 120.0


def test_nvidia_smi_parses_its_csv_and_survives_its_absence():
    line = "570.86.15, 1980, 2619, 1980, 2619, 118.52, 700.00, [N/A]\n"
    info = gpu.nvidia_smi(0, run=lambda *a, **k: SimpleNamespace(stdout=line))
    assert info["driver_version"] == "570.86.15" and info["clocks_sm"] == 1980.0
    assert info["power_limit"] == 700.0 and info["temperature_gpu"] is None

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    assert gpu.nvidia_smi(0, run=missing) == {}
    assert gpu.nvidia_smi(0, run=lambda *a, **k: SimpleNamespace(stdout="1, 2\n")) == {}


def test_array_sizes_follow_the_l2_and_the_device_memory(fake, monkeypatch):
    assert machine.default_array_bytes("cpu") == 2**30  # max(1 GiB, 4 x 50 MiB), far below 141 GB / 16
    fake.l2, fake.total_memory = 512 * 2**20, 8 * 2**30
    assert machine.default_array_bytes("cpu") == 2**29  # 8 GiB / 16 caps the 2 GiB that 4 x L2 asks
    monkeypatch.setattr(gpu, "runtime", lambda device: None)
    monkeypatch.setattr(machine, "device_memory_bytes", lambda device: 8 * 2**30)
    monkeypatch.setattr(machine, "llc_bytes", lambda: 2**30)
    assert machine.default_array_bytes("cpu") == 2**29  # an 8 GB Mac: 512 MiB per array, not 4 GiB


# ----------------------------------------------------------------------------- shapes, layouts, building on a GPU


def test_the_wide_gpu_shape_is_about_1_8b_parameters_and_padded():
    config = gpu_wide_config()
    assert config.vocab_size % 64 == 0 and config.vocab_size == 50304
    params = shape_from_config(config).num_params()
    assert 1.80e9 < params < 1.84e9  # 3.6 GB in bf16
    assert pad_vocab(ModelConfig(vocab_size=50257)).vocab_size == 50304
    assert pad_vocab(ModelConfig(vocab_size=64)).vocab_size == 64
    with pytest.raises(ValueError, match="multiple must be an int >= 1"):
        pad_vocab(ModelConfig(), 0)


def test_build_on_device_initialises_without_a_host_copy():
    config = ModelConfig(vocab_size=64, max_len=16, d_model=32, n_layer=2, n_head=2)
    torch.manual_seed(0)
    model = build_on_device(config, "cpu", torch.bfloat16)
    assert model.tok_emb.weight.dtype == torch.bfloat16
    assert model.head.weight is model.tok_emb.weight  # still tied
    assert all(bool(torch.isfinite(p.float()).all()) for p in model.parameters())
    assert float(model.blocks[0].attn.qkv.weight.detach().float().std()) == pytest.approx(0.02, rel=0.2)
    assert bool((model.blocks[0].ln1.weight == 1).all()) and bool((model.blocks[0].ln1.bias == 0).all())
    allowed = model.blocks[1].attn.allowed
    assert torch.equal(allowed, torch.ones(16, 16, dtype=torch.bool).tril())
    reference = Transformer(config)  # the same shapes, built the usual way
    assert [p.shape for p in model.parameters()] == [p.shape for p in reference.parameters()]


def test_layouts_per_device(fake, monkeypatch):
    model = random_model(tiny_config(16))
    assert layout_of(model) == "decode"  # the CPU's rule
    assert layout_of(random_model(tiny_config(16), layout="row-major")) == "row-major"
    with pytest.raises(ValueError, match="layout must be None or one of"):
        random_model(tiny_config(16), layout="columns")
    rates = {"decode": 100.0, "row-major": 100.0}

    def fake_gemv(model, repeat, graph):
        return Measurement(rates[layout_of(model)], "GB/s", 0.0, [rates[layout_of(model)]])

    monkeypatch.setattr(bench_graphs, "model_gemv_bandwidth", fake_gemv)
    for decode_rate, chosen in ((104.0, "row-major"), (106.0, "decode"), (90.0, "row-major")):
        rates["decode"] = decode_rate
        choice = bench_graphs.choose_layout(model)
        assert choice.chosen == chosen and layout_of(model) == chosen  # row-major unless decode wins > 5 %


def test_count_ops_splits_views_from_compute():
    model = random_model(tiny_config(16))
    ops = bench_graphs.count_step_ops(model, context=8)
    assert ops.by_name["linear"] == 4 * 4 + 1  # qkv, proj, up, down per layer + the head
    assert ops.by_name["layer_norm"] == 2 * 4 + 1 and ops.compute < ops.total
    assert ops.compute == ops.total - sum(ops.by_name[v] for v in ("slice", "view", "transpose", "permute", "select",
                                                                    "unbind", "reshape", "resolve_conj", "resolve_neg")
                                          if v in ops.by_name)  # fmt: skip


def test_eager_and_graph_leaves_out_shapes_the_memory_cannot_hold(fake, monkeypatch):
    timed = []
    monkeypatch.setattr(bench_graphs, "time_shape", lambda model, name, context, **kw: timed.append(name) or name)
    monkeypatch.setattr(bench_graphs, "random_model", lambda config, device: config)
    monkeypatch.setattr(bench_graphs, "device_memory_bytes", lambda device: 8 * 10**9)
    assert bench_graphs.eager_and_graph("cpu", ["tiny (0.8M)", "wide (1.8B)"], roofs=roofs()) == ["tiny (0.8M)"]
    monkeypatch.setattr(bench_graphs, "device_memory_bytes", lambda device: 141 * 10**9)
    assert bench_graphs.eager_and_graph("cpu", ["wide (1.8B)"], roofs=roofs()) == ["wide (1.8B)"]
    assert 3.6e9 < bench_graphs.weight_bytes(gpu_wide_config()) < 3.7e9


def test_graph_report_lines(fake, tiny_model):
    run = bench_graphs.time_shape(tiny_model, "tiny", 8, roofs=roofs(), repeat=2)
    d = as_json(run)
    assert d["compute_ops_per_step"] == run.ops.compute and set(d["layout_gemv_gb_s"]) == {"decode", "row-major"}
    text = "\n".join(_graph_lines([d], [{"n": 1024, "gflop_s": 1.0, "iqr_gflop_s": 0.0}]))
    assert "against one CUDA graph" in text and "n = 1024" in text and "tiny" in text


def test_reference_summary_names_roofline_eager_graph_and_mbu(fake, tiny_model):
    run = bench_graphs.time_shape(tiny_model, "tiny", 8, roofs=roofs(), repeat=2)
    result = {
        "command": "python -m helpers.bench --device cuda --json",
        "machine": {"device": "cuda (NVIDIA H200)", "torch": "2.13.0", **fake.summary()},
        "roofs": as_json(roofs()),
        "decode": as_json(run.step),
        "graphs": [as_json(run)],
        "matmul_sweep": [],
    }
    text = reference_summary(json.loads(json.dumps(result)))
    for needle in ("NVIDIA H200", "driver 570.1", "TF32 matmuls False", "datasheet", "roofline", "eager", "graph"):
        assert needle in text
    sheet_ms = run.step.cost.total_bytes / 4800e9 * 1e3
    assert f"{sheet_ms:.4f}" in text  # bytes / the H200's datasheet bandwidth
    assert f"{100 * run.step.mbu_datasheet():4.0f}%" in text
    assert "bitwise" in text  # the fake graph's logits equal the eager step's
