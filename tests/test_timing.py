import pytest
import torch

from helpers.measure import machine
from helpers.measure.timing import (
    Measurement,
    benchmark,
    default_array_bytes,
    gemv_bandwidth,
    linear_bytes,
    linear_flops,
    llc_bytes,
    machine_summary,
    matmul_flops,
    stream_bandwidth,
    time_linear,
)


class FakeClock:
    """Returns 0, d1, d1, d1 + d2, ...: each timed run reads the clock twice (start, end)."""

    def __init__(self, durations):
        self.readings = []
        now = 0.0
        for d in durations:
            self.readings += [now, now + d]
            now += d
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.readings[self.calls - 1]


def test_benchmark_statistics_on_a_fake_clock():
    calls = []
    clock = FakeClock([4.0, 1.0, 3.0, 2.0, 100.0])  # one outlier: the median ignores it
    m = benchmark(lambda: calls.append(1), warmup=3, repeat=5, clock=clock)
    assert len(calls) == 3 + 5  # warm-up runs happen ...
    assert clock.calls == 2 * 5  # ... but are never timed
    assert m.unit == "s" and m.samples == [4.0, 1.0, 3.0, 2.0, 100.0]
    assert m.value == 3.0  # median
    assert m.spread == 2.0  # IQR: 75th (4.0) - 25th (2.0) percentile
    assert str(m) == "3.00 s (IQR 2.00 s)"


def test_benchmark_with_no_warmup_and_one_run():
    m = benchmark(lambda: None, warmup=0, repeat=1, clock=FakeClock([0.25]))
    assert (m.value, m.spread, m.samples) == (0.25, 0.0, [0.25])
    assert str(m) == "250 ms (IQR 0 ms)"


def test_benchmark_on_cpu_never_touches_cuda(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("CUDA called on a CPU measurement")

    monkeypatch.setattr(torch.cuda, "synchronize", forbidden)
    monkeypatch.setattr(torch.cuda, "Event", forbidden)
    m = benchmark(lambda: torch.ones(10).sum(), warmup=1, repeat=3, device="cpu")
    assert m.value > 0 and len(m.samples) == 3
    assert stream_bandwidth("copy", nbytes=2**16, device=torch.device("cpu"), repeat=2).value > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(fn=42), "fn must be callable"),
        (dict(warmup=-1), "warmup must be an int >= 0"),
        (dict(warmup=1.5), "warmup must be an int >= 0"),
        (dict(repeat=0), "repeat must be an int >= 1"),
        (dict(repeat=True), "repeat must be an int >= 1"),
        (dict(clock=3.0), "clock must be None or a callable"),
        (dict(device="tpu"), "device"),
        (dict(device="meta"), "device type must be cpu, cuda or mps"),
        pytest.param(
            dict(device="cuda"),
            "'cuda' is not available",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA"),
        ),
    ],
)
def test_benchmark_rejects_bad_arguments(kwargs, message):
    args = dict(fn=lambda: None, warmup=1, repeat=2) | kwargs
    fn = args.pop("fn")
    with pytest.raises(ValueError, match=message):
        benchmark(fn, **args)


def test_measurement_units_and_text():
    m = Measurement.from_samples([10.0, 12.0, 14.0], "GB/s")
    assert m.value == 12.0 and m.spread == 2.0
    assert m.si == 12e9
    assert str(m) == "12.0 GB/s (IQR 2.00 GB/s)"
    t = m.to("B/s")
    assert t.value == 12e9 and t.samples == [10e9, 12e9, 14e9]
    assert str(Measurement.from_samples([1.5e-5], "s")) == "15.0 us (IQR 0 us)"
    assert str(Measurement.from_samples([1234.5], "GFLOP/s")) == "1234 GFLOP/s (IQR 0 GFLOP/s)"
    with pytest.raises(ValueError, match="cannot convert GB/s"):
        m.to("s")
    with pytest.raises(ValueError, match="unit must be one of"):
        Measurement.from_samples([1.0], "furlongs")
    with pytest.raises(ValueError, match="at least one sample"):
        Measurement.from_samples([], "s")


def test_llc_parsing_from_a_fake_sysfs(tmp_path):
    def cache(cpu, index, level, kind, size, shared):
        d = tmp_path / f"cpu{cpu}" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        for name, value in dict(level=level, type=kind, size=size, shared_cpu_list=shared).items():
            (d / name).write_text(f"{value}\n")

    for cpu in range(4):  # 4 cores, private L2, two L3 slices each shared by 2 cores
        cache(cpu, 0, 1, "Instruction", "32K", str(cpu))
        cache(cpu, 1, 2, "Unified", "1024K", str(cpu))
        cache(cpu, 2, 3, "Unified", "16M", "0-1" if cpu < 2 else "2-3")
    assert machine._llc_from_sysfs(str(tmp_path)) == 2 * 16 * 2**20  # each shared slice once
    assert machine._llc_from_sysfs(str(tmp_path / "nothing")) is None
    assert machine._parse_size("32 MiB") == machine._parse_size("32768K") == 32 * 2**20
    with pytest.raises(ValueError, match="not a cache size"):
        machine._parse_size("big")


def test_llc_and_default_sizes_follow_the_stream_rule():
    assert isinstance(llc_bytes(), int) and llc_bytes() > 0
    assert default_array_bytes("cpu") == min(4 * llc_bytes(), machine.memory_bytes() // 16)
    summary = machine_summary()
    assert summary["threads"] == torch.get_num_threads()
    assert {"device", "cpu", "threads", "llc_mib", "torch"} <= set(summary)


@pytest.mark.parametrize("kind", ["copy", "triad"])
def test_stream_bandwidth_smoke(kind):
    m = stream_bandwidth(kind, nbytes=2**20, warmup=1, repeat=3)
    assert m.unit == "GB/s" and m.value > 0 and m.spread >= 0 and len(m.samples) == 3


def test_gemv_and_matmul_smoke():
    g = gemv_bandwidth(256, 512, warmup=1, repeat=3)
    assert g.unit == "GB/s" and g.value > 0 and len(g.samples) == 3
    f = matmul_flops(64, warmup=1, repeat=3)
    assert f.unit == "GFLOP/s" and f.value > 0
    t = time_linear(64, 32, batch=4, warmup=0, repeat=2)
    assert t.unit == "s" and t.value > 0


def test_linear_bytes_and_flops():
    # bf16 W of 4096 x 4096 at batch B: intensity = 2 n^2 B / (2 (n^2 + 2 n B)) ~ B
    n = 4096
    for batch in (1, 8, 64):
        intensity = linear_flops(n, n, batch) / linear_bytes(n, n, batch, 2)
        assert intensity == pytest.approx(batch, rel=0.04)
    assert linear_bytes(3, 5, 2, 4) == 4 * (15 + 2 * 5 + 2 * 3)
    assert linear_flops(3, 5, 2) == 60


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: stream_bandwidth("scale"), "kind must be 'copy' or 'triad'"),
        (lambda: stream_bandwidth(nbytes=2), "nbytes must be an int >= 4"),
        (lambda: stream_bandwidth(nbytes=2**16, dtype=torch.int32), "dtype must be a floating"),
        (lambda: stream_bandwidth(nbytes=2**16, repeat=0), "repeat must be an int >= 1"),
        (lambda: gemv_bandwidth(0, 16), "n_rows must be an int >= 1"),
        (lambda: gemv_bandwidth(16, -1), "n_cols must be an int >= 1"),
        (lambda: gemv_bandwidth(16, 16, dtype="float32"), "dtype must be a floating"),
        (lambda: time_linear(16, 16, batch=0), "batch must be an int >= 1"),
        (lambda: matmul_flops(0), "n must be an int >= 1"),
        (lambda: linear_bytes(4, 4, 0), "batch must be an int >= 1"),
        (lambda: linear_bytes(4, 4, 1, 0), "bytes_per_value must be a finite number > 0"),
        (lambda: linear_flops(4.0, 4), "n_rows must be an int >= 1"),
        (lambda: matmul_flops(8, device="gpu"), "device"),
        (lambda: machine_summary(device=3.5), "device"),
    ],
)
def test_measurements_reject_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: benchmark(lambda: None, warmup=float("nan")), "warmup must be an int >= 0, got nan"),
        (lambda: benchmark(lambda: None, device=3.5), "device must be None, 'cpu', 'cuda', 'cuda:N', 'mps'"),
        (lambda: linear_bytes(4, 4, 1, float("nan")), "bytes_per_value must be a finite number > 0, got nan"),
        (lambda: linear_bytes(4, 4, 1, True), "bytes_per_value must be a finite number > 0, got True"),
        (lambda: matmul_flops(True), "n must be an int >= 1, got True"),
        (lambda: matmul_flops(8, dtype="float32"), "dtype must be a floating torch.dtype"),
        (lambda: stream_bandwidth(["copy"]), "kind must be 'copy' or 'triad'"),
        (lambda: stream_bandwidth(nbytes=2.0**16), "nbytes must be an int >= 4"),
        (lambda: default_array_bytes("tpu"), "device must be None"),
        (lambda: Measurement.from_samples([float("nan")], "s"), "samples must be finite numbers"),
        (lambda: Measurement.from_samples(["a"], "s"), "samples must be an iterable of numbers"),
        (lambda: Measurement.from_samples([1.0], ["s"]), "unit must be one of"),
    ],
)
def test_more_bad_arguments_name_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_describe_and_pick_device_name_what_is_allowed():
    from helpers.common.device import pick_device
    from helpers.measure.machine import describe

    assert describe("cpu") == describe(torch.device("cpu"))
    with pytest.raises(ValueError, match="device must be None, 'cpu'"):
        describe("tpu")
    with pytest.raises(ValueError, match=r"prefer must be one of \['cpu', 'cuda', 'mps'\] or None"):
        pick_device(["cpu"])
