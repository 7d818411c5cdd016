"""What a CUDA graph may hold, checked without a GPU: the decode step and the GEMV set run as they
would be captured, under helpers.measure.capture_safety's TorchDispatchMode, and must neither sync the host
nor build tensors from Python data. A planted `.item()` (or `.tolist()`, or `torch.tensor`) is caught,
by the checker itself and by the fake GPU's capture, which checks as the real one does."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from fake_gpu import roofs

from helpers.bench.decode import decode_step, decode_step_fn, model_gemv_bandwidth, model_gemvs
from helpers.decoding.model import ModelConfig
from helpers.measure import gpu
from helpers.measure.capture_safety import capture_check, check_capture_safe
from helpers.roofline.fixtures import random_model, tiny_config

SMALL_GPT = ModelConfig(vocab_size=128, max_len=64, d_model=64, n_layer=2, n_head=4)  # GPT-2's layout, small


@pytest.fixture(params=["tiny", "gpt-shaped"])
def model(request):
    return random_model(tiny_config(32) if request.param == "tiny" else SMALL_GPT)


def test_the_decode_step_and_the_gemvs_are_capture_safe(model):
    with torch.inference_mode():
        step = decode_step_fn(model, context=8)
        with capture_check() as found:
            step()
            model_gemvs(model)()
    assert found == []


def test_the_checked_forward_would_sync_and_the_checker_says_where(model):
    """The token-id check reads two numbers back to the host: fine once per generate, not in a graph."""
    with torch.inference_mode():
        step = decode_step_fn(model, context=8)
        token = torch.zeros(1, 1, dtype=torch.long)
        with pytest.raises(ValueError, match=r"host sync \(Tensor.tolist\) at .*model.py"):
            check_capture_safe(lambda: model(token, check_ids=True), "the checked step")
        check_capture_safe(step)  # the step that is timed and captured skips it


@pytest.mark.parametrize(
    "plant, found",
    [
        (lambda x: x.sum().item(), "host sync"),
        (lambda x: bool(x.max() > 0), "host sync"),
        (lambda x: float(x[0, 0, 0]), "host sync"),
        (lambda x: x[0, 0, :2].tolist(), r"host sync \(Tensor.tolist\)"),
        (lambda x: x + torch.tensor([1.0]), "tensor made from Python data"),
    ],
)
def test_a_planted_sync_in_the_model_is_caught(model, monkeypatch, plant, found):
    real = model.ln_f.forward

    def planted(x):
        plant(x)
        return real(x)

    monkeypatch.setattr(model.ln_f, "forward", planted)
    with torch.inference_mode():
        step = decode_step_fn(model, context=8)
        with pytest.raises(ValueError, match=found):
            check_capture_safe(step, "the decode step")


def test_the_fake_gpu_refuses_to_capture_a_planted_item(fake, monkeypatch):
    """decode_step on the fake GPU captures as the real runtime does: the sync raises before any capture."""
    model = random_model(tiny_config(16))
    real = model.blocks[0].mlp.forward
    monkeypatch.setattr(model.blocks[0].mlp, "forward", lambda x: (x.sum().item(), real(x))[1])
    with pytest.raises(ValueError, match="cannot be captured as a CUDA graph"):
        decode_step(model, roofs=roofs(), context=8, warmup=1, repeat=2)
    assert fake.captures == 0


def test_the_real_capture_checks_before_it_captures(monkeypatch):
    """CudaRuntime.capture on CPU tensors, with the CUDA calls faked: a sync raises a ValueError
    in the first warm-up call, before torch.cuda.graph is ever entered."""
    entered = []

    class Stream:
        def __init__(self, device=None):
            pass

        def wait_stream(self, other):
            pass

    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: Stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: __import__("contextlib").nullcontext())
    monkeypatch.setattr(torch.cuda, "graph", lambda g: entered.append(g))
    x = torch.ones(3)
    with pytest.raises(ValueError, match="host sync"):
        gpu.CudaRuntime(torch.device("cpu")).capture(lambda: x.sum().item())
    assert entered == []


def test_check_capture_safe_returns_the_result_and_validates():
    assert check_capture_safe(lambda: torch.ones(2) * 2).tolist() == [2.0, 2.0]  # tolist outside the region: fine
    with pytest.raises(ValueError, match="fn must be callable"):
        check_capture_safe(3)
    with capture_check():
        pass
    assert torch.Tensor.tolist is torch._C.TensorBase.tolist  # the wrapped methods are restored


# ----------------------------------------------------------------------------- what a graph keeps alive


def test_the_gemv_graph_keeps_its_inputs_alive(fake, monkeypatch):
    """A graph replays on the buffers fn closes over. A capture that holds only a weak reference
    to fn, as a real CUDA graph holds none, sees fn die if the caller keeps only `.replay`."""

    def forgetful_capture(fn, warmup=gpu.GRAPH_WARMUP):
        fn()
        alive = weakref.ref(fn)

        def replay():
            gc.collect()
            assert alive() is not None, "the graph's inputs were freed while it still replays"
            fake.replays += 1

        return gpu.CapturedGraph(replay, None, fn)

    monkeypatch.setattr(fake, "capture", forgetful_capture)
    model_gemv_bandwidth(random_model(tiny_config(16)), graph=True, warmup=1, repeat=2)
    assert fake.replays > 2


def test_one_runtime_per_gpu_whatever_the_device_is_called(monkeypatch):
    monkeypatch.setattr(gpu, "_RUNTIMES", {})
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    first = gpu.runtime(torch.device("cuda"))
    assert first is gpu.runtime(torch.device("cuda:0")) and first.device == torch.device("cuda", 0)
    assert gpu.runtime(torch.device("cuda:1")) is not first and len(gpu._RUNTIMES) == 2
    assert gpu.runtime(torch.device("cpu")) is None


def test_the_real_warm_up_allocates_the_flush_buffer_first(monkeypatch):
    monkeypatch.setattr(gpu, "MIN_FLUSH_BYTES", 2**16)
    monkeypatch.setattr(gpu, "WARM_UP_N", 32)
    runtime = gpu.CudaRuntime(torch.device("cpu"))
    monkeypatch.setattr(runtime, "synchronize", lambda: None)
    monkeypatch.setattr(runtime, "l2_bytes", lambda: 2**10)
    assert runtime._flush_buffer is None
    assert runtime.warm_up(0.05) >= 0.05
    assert runtime._flush_buffer is not None  # allocated before any timed loop needs it


def test_model_rejects_a_bad_check_ids():
    with pytest.raises(ValueError, match="check_ids must be True or False"):
        random_model(tiny_config(8))(torch.zeros(1, 1, dtype=torch.long), check_ids="no")
