"""Settings shared by the whole test session: the unit tests and the notebooks under nbval."""

import os


def pytest_configure(config):
    # pytest-xdist runs two workers on the CI machine's two cores (pyproject.toml's addopts): one
    # thread each, in the worker and in the notebook kernels it starts, so that neither waits for
    # a core the other holds.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch

        torch.set_num_threads(1)
