"""Stage 3 of helpers.bench: one pass of a bidirectional (diffusion) model over W positions, as a
multiple of one AR decode step: flat while the pass is memory-bound, rising once W passes the ridge.

On CUDA each width is captured once as a CUDA graph, on a fixed canvas, and the ratio compares
graph with graph (the step's `fastest`). Eagerly, a pass of about 200 operations costs the host a
millisecond or two of launches whatever W is, while GPT-2 small's pass over 512 positions needs
a fraction of that on an H200: an eager ratio stays near 1 because launches, not memory or
arithmetic, set both times. The eager pass is kept too (`eager`, JSON `*_eager`), to show that.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.bench.decode import DecodeStep, check_transformer
from helpers.bench.roofs import Roofs
from helpers.common.validation import check_int
from helpers.decoding.model import Transformer
from helpers.measure import gpu
from helpers.measure.measurement import Measurement, benchmark
from helpers.roofline.costs import forward_pass_cost, predicted_time
from helpers.roofline.fixtures import model_device_dtype


@dataclass
class WidthPoint:
    """One pass of a bidirectional model over `width` positions, against one AR decode step."""

    width: int
    measured: Measurement  # seconds per pass, as fast as this stack runs it: a CUDA graph on CUDA, else eager
    predicted_s: float  # roofline time of forward_pass_cost(tokens=width), with the step's bandwidth
    step_measured_s: float  # the AR decode step it is compared with, timed the same way (step.fastest)
    step_predicted_s: float  # that step's roofline time
    intensity: float  # FLOP/byte of the pass
    eager: Measurement | None = None  # the pass launched op by op, on CUDA (None: measured is already eager)
    step_eager_s: float | None = None  # the eager decode step, on CUDA

    @property
    def timed_as(self) -> str:
        return "eager" if self.eager is None else "cuda graph"

    @property
    def ratio(self) -> float:
        """Measured cost of the pass in AR decode steps (graph against graph on CUDA)."""
        return self.measured.si / self.step_measured_s

    @property
    def ratio_eager(self) -> float | None:
        """The same with both launched op by op (CUDA only; None elsewhere)."""
        return None if self.eager is None else self.eager.si / self.step_eager_s

    @property
    def predicted_ratio(self) -> float:
        return self.predicted_s / self.step_predicted_s


def _widths(widths, max_len: int) -> list[int]:
    if isinstance(widths, str) or not hasattr(widths, "__iter__"):
        raise ValueError(f"widths must be a list of ints >= 1, got {widths!r}")
    widths = list(widths)
    if not widths:
        raise ValueError("widths must hold at least one width")
    for w in widths:
        check_int(w, "each width", 1)
        if w > max_len:
            raise ValueError(f"width {w} is longer than the model's max_len ({max_len})")
    return widths


def width_sweep(
    model: Transformer,
    widths,
    *,
    roofs: Roofs,
    step: DecodeStep,
    warmup: int = 1,
    repeat: int = 3,
    seed: int = 0,
    graph: bool | None = None,
) -> list[WidthPoint]:
    """Time one pass of `model` (bidirectional: every position sees every other, no cache) over
    W positions for each W in `widths`, the pass a diffusion sampler makes over a canvas of W
    positions, and compare it with the measured AR decode `step` (from decode_step). Predictions
    use the step's GEMV bandwidth and the roofs' matmul peak.
    graph: capture each width's pass as a CUDA graph and time its replay (None: on CUDA, yes,
    if the step was graphed too, so that the ratio compares like with like)."""
    check_transformer(model)
    if not isinstance(roofs, Roofs) or not isinstance(step, DecodeStep):
        raise ValueError("roofs must come from measure_machine and step from decode_step")
    widths = _widths(widths, model.config.max_len)
    if graph is not None and not isinstance(graph, bool):
        raise ValueError(f"graph must be None, True or False, got {graph!r}")
    device, dtype = model_device_dtype(model)
    cuda = gpu.runtime(device)
    if graph and (cuda is None or step.graphed is None):
        raise ValueError("graph=True needs a CUDA device and a step timed as a CUDA graph (decode_step on CUDA)")
    graph = cuda is not None and step.graphed is not None if graph is None else graph
    gen = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    points = []
    for w in widths:
        canvas = torch.randint(0, model.config.vocab_size, (1, w), generator=gen).to(device)  # (1, W), fixed

        def one_pass(c=canvas):
            return model(c, check_ids=False)  # (1, W, V)

        with torch.inference_mode():
            eager = benchmark(one_pass, warmup=warmup, repeat=repeat, device=device)
            if graph:
                captured = cuda.capture(one_pass)  # held while its replays are timed
                measured = benchmark(captured.replay, warmup=warmup, repeat=repeat, device=device)
                del captured
        cost = forward_pass_cost(model.config, tokens=w, bytes_per_param=dtype.itemsize)
        points.append(
            WidthPoint(
                width=w,
                measured=measured if graph else eager,
                predicted_s=predicted_time(cost, step.bandwidth, roofs.peak_flops),
                step_measured_s=step.fastest.si,
                step_predicted_s=step.predicted_s,
                intensity=cost.intensity,
                eager=eager if graph else None,
                step_eager_s=step.measured.si if graph else None,
            )
        )
    return points
