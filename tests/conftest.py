"""Fixtures shared by the tests of the CUDA path: a fake GPU in place of helpers.gpu.runtime."""

import pytest
from fake_gpu import FakeGpu

from helpers import gpu


@pytest.fixture
def fake(monkeypatch):
    """helpers.gpu.runtime answers with one FakeGpu for every device: the CUDA branches run on CPU tensors."""
    fake_gpu = FakeGpu()
    monkeypatch.setattr(gpu, "runtime", lambda device: fake_gpu)
    return fake_gpu


@pytest.fixture
def virtual(monkeypatch):
    """A FakeGpu whose clock runs only on its fake kernels: timings are exact, whatever the host does."""
    fake_gpu = FakeGpu(host_clock=False)
    monkeypatch.setattr(gpu, "runtime", lambda device: fake_gpu)
    return fake_gpu
