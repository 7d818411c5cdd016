"""What speculative decoding costs: measured on this machine's CPU, and projected on a GPU with the
course's cost model (helpers.roofline.costs).

time_split measures where a decoder's time goes: the forward passes of the target, those of the
drafter, and everything else (sampling, the rule, Python, cache bookkeeping outside the passes).

A round is gamma draft steps and one target pass over gamma + 1 positions; it writes
(1 - alpha^(gamma+1)) / (1 - alpha) tokens on average (helpers.speculative.acceptance.expected_tokens).
Both models first prefill the prompt, which yields the first token, as helpers.projection.latency.ar_latency
counts it. Every pass is priced by predicted_time at the chosen efficiencies: 1.0 and 1.0 is the
datasheet ceiling, the defaults the typical projection. alpha is an assumption here: it depends
on the drafter, the task and the temperature, and notebook 06 measures it only on the toy language.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from helpers.common.validation import check_int
from helpers.decoding.model import Transformer
from helpers.projection.latency import ar_latency
from helpers.roofline.costs import (
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    check_dtype,
    effective_roofs,
    forward_pass_cost,
    predicted_time,
)
from helpers.speculative.acceptance import expected_tokens


@dataclass
class TimeSplit:
    """Where one decoder's time per call goes, in seconds: medians over the timed calls of the time
    inside the target's forward passes, inside the drafter's, and of the rest. total is their sum."""

    target_forward: float
    draft_forward: float
    other: float  # outside every forward pass: sampling, the rule, Python, cache bookkeeping
    target_passes: float  # median forward passes per call
    draft_passes: float

    @property
    def total(self) -> float:
        return self.target_forward + self.draft_forward + self.other


class _ForwardClock:
    """Adds up the host time spent inside one model's forward calls while it is installed."""

    def __init__(self, model: Transformer):
        self.seconds, self.passes, self._start = 0.0, 0, 0.0
        self._handles = [model.register_forward_pre_hook(self._enter), model.register_forward_hook(self._leave)]

    def _enter(self, module, args):
        self._start = time.perf_counter()

    def _leave(self, module, args, output):
        self.seconds += time.perf_counter() - self._start
        self.passes += 1

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class _NoClock:
    """The clock of a drafter that is not a model: no time, no passes."""

    seconds, passes = 0.0, 0


def _check_decoders(decoders, target) -> None:
    """decoders: a non-empty dict name -> (run, drafter model or None), every model on the CPU."""
    if not isinstance(target, Transformer):
        raise ValueError(f"target must be a helpers.decoding.model.Transformer, got {type(target).__name__}")
    if not isinstance(decoders, dict) or not decoders:
        raise ValueError("decoders must be a non-empty dict: name -> (run, drafter model or None)")
    for name, entry in decoders.items():
        ok = isinstance(entry, tuple) and len(entry) == 2 and callable(entry[0])
        if not ok or not (entry[1] is None or isinstance(entry[1], Transformer)) or entry[1] is target:
            raise ValueError(
                f"decoders[{name!r}] must be (run, drafter) with run callable and drafter None or a "
                "helpers.decoding.model.Transformer other than the target"
            )
        for model in (target, entry[1]):
            device = None if model is None else next(model.parameters()).device
            if device is not None and device.type != "cpu":
                raise ValueError(f"time_split times work on the CPU only; {name!r} runs a model on {device}")


def _timed_call(run, target: Transformer, drafter: Transformer | None) -> tuple[float, ...]:
    """One call of run(): (target forward s, drafter forward s, total s, target passes, drafter passes)."""
    clocks = [_ForwardClock(target), _ForwardClock(drafter) if drafter is not None else _NoClock()]
    try:
        start = time.perf_counter()
        run()
        total = time.perf_counter() - start
    finally:
        for clock in clocks:
            if isinstance(clock, _ForwardClock):
                clock.remove()
    return clocks[0].seconds, clocks[1].seconds, total, clocks[0].passes, clocks[1].passes


def time_split(
    decoders: dict[str, tuple[Callable[[], object], Transformer | None]],
    target: Transformer,
    *,
    warmup: int = 2,
    repeat: int = 15,
) -> dict[str, TimeSplit]:
    """Time each decoder and split its time: decoders maps a name to (run, drafter model or None),
    run() decoding one document with `target` (and the drafter). After `warmup` untimed calls each,
    `repeat` timed calls per decoder, taken in turn (a change in the machine's load falls on every
    decoder alike). The host clock times the CPU's work only: the models must be on the CPU, where a
    forward pass returns when its work is done (on a GPU it returns after launching its kernels)."""
    _check_decoders(decoders, target)
    warmup = check_int(warmup, "warmup", 0)
    repeat = check_int(repeat, "repeat", 1)
    for run, _ in decoders.values():
        for _ in range(warmup):
            run()
    samples = {name: [] for name in decoders}  # name -> one _timed_call tuple per timed call
    for _ in range(repeat):
        for name, (run, drafter) in decoders.items():
            samples[name].append(_timed_call(run, target, drafter))
    splits = {}
    for name, rows in samples.items():
        table = np.array(rows)  # (repeat, 5)
        table[:, 2] -= table[:, 0] + table[:, 1]  # the total, less the forward passes: everything else
        splits[name] = TimeSplit(*np.median(table, axis=0).tolist())
    return splits


def speculative_latency(
    n_tokens: int,
    target,
    draft,
    hardware,
    *,
    gamma: int,
    alpha: float,
    prompt: int = 1,
    dtype: str = "bf16",
    bandwidth_efficiency: float = TYPICAL_BANDWIDTH_EFFICIENCY,
    compute_efficiency: float = TYPICAL_COMPUTE_EFFICIENCY,
) -> float:
    """Projected seconds for N tokens: both prefills, then (N - 1) / expected_tokens rounds, each
    gamma draft steps and one target pass over gamma + 1 positions at the mean context prompt + N/2."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    gamma = check_int(gamma, "gamma (tokens drafted per round)", 1)
    prompt = check_int(prompt, "prompt", 1)
    bytes_per_param = check_dtype(dtype)[0]
    bandwidth, peak = effective_roofs(hardware, dtype, bandwidth_efficiency, compute_efficiency)
    context = prompt + n_tokens // 2

    def seconds(model, tokens: int, context: int) -> float:
        cost = forward_pass_cost(model, tokens=tokens, context=context, bytes_per_param=bytes_per_param)
        return predicted_time(cost, bandwidth, peak)

    prefill = seconds(target, prompt, 0) + seconds(draft, prompt, 0)
    per_round = seconds(target, gamma + 1, context) + gamma * seconds(draft, 1, context)
    return prefill + (n_tokens - 1) / expected_tokens(alpha, gamma) * per_round


def projected_speedup(n_tokens: int, target, draft, hardware, *, gamma: int, alpha: float, **kwargs) -> float:
    """AR latency over speculative latency, both with the same settings (prompt, dtype, efficiencies:
    the keywords helpers.projection.latency.ar_latency and speculative_latency share)."""
    ar = ar_latency(n_tokens, target, hardware, **kwargs)
    return ar / speculative_latency(n_tokens, target, draft, hardware, gamma=gamma, alpha=alpha, **kwargs)
