"""Fixtures shared by the tests: a fake GPU in place of helpers.measure.gpu.runtime, and one thread."""

import pytest
import torch
from fake_gpu import FakeGpu

from helpers.measure import gpu


@pytest.fixture
def fake(monkeypatch):
    """helpers.measure.gpu.runtime answers with one FakeGpu for every device: the CUDA branches run on CPU tensors."""
    fake_gpu = FakeGpu()
    monkeypatch.setattr(gpu, "runtime", lambda device: fake_gpu)
    return fake_gpu


@pytest.fixture
def virtual(monkeypatch):
    """A FakeGpu whose clock runs only on its fake kernels: timings are exact, whatever the host does."""
    fake_gpu = FakeGpu(host_clock=False)
    monkeypatch.setattr(gpu, "runtime", lambda device: fake_gpu)
    return fake_gpu


@pytest.fixture(scope="module")
def one_thread():
    """Nothing timed, tiny models: one thread for a module's tests, restored for the other files."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
