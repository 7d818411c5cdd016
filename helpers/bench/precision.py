"""Bandwidth-bound, shown by intervention: the same decode step with weights in fp32, bf16 and int8.

If a decode step's time is set by the bytes it reads, halving the bytes per weight should halve
the time, whatever happens to the arithmetic. `time_formats` times one KV-cached decode step of
the same model stored three ways, alternating between them so that a slow moment of the machine
hits all three alike, and puts the measured time ratios next to the byte ratios:

- fp32: 4 bytes per weight (the course's default on the CPU), in the course's decode layout;
- bf16: 2 bytes per weight, activations and KV cache in bf16 too;
- int8: weight-only quantisation, 1 byte per weight with one bf16 scale per output row;
  activations and KV cache in bf16. PyTorch's CPU kernel for it is torch._weight_int8pack_mm
  (a private op: where a build lacks it, the int8 row says so instead of being timed).

Whether a format is faster also depends on its kernel. A bf16 GEMV needs the CPU to widen bf16 to
fp32 (fast with AVX512-BF16 or AMX, slow without), an int8 GEMV must dequantise, and each kernel
has its own best weight layout: on the 2-core AMD EPYC (Zen 4) CI machine, oneDNN's bf16 GEMV
streamed 33 GB/s from row-major weights and 24 GB/s from input-major ones (fp32 the other way
round: 14 and 27), and _weight_int8pack_mm 38 GB/s with bf16 activations but 2.4 GB/s with fp32
ones. So bf16 and int8 keep PyTorch's row-major (out, in) weights and bf16 activations. When a
format is not faster, the bytes were not the bottleneck of its kernel.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn as nn

from helpers.common.validation import check_int
from helpers.decoding.model import ModelConfig, Transformer
from helpers.measure.measurement import Measurement, benchmark
from helpers.roofline.costs import StepCost, decode_step_cost

FORMATS = ("fp32", "bf16", "int8")


def has_int8_kernel() -> bool:
    """Whether this PyTorch build has the CPU weight-only int8 matmul."""
    return hasattr(torch, "_weight_int8pack_mm")


class Int8Linear(nn.Module):
    """y = x W^T + b with W stored as int8 (out, in) and one scale per output row:
    W ~ scale[:, None] * W_int8, scale = max |row| / 127 (symmetric, per channel)."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()  # (out, in)
        scale = w.abs().amax(dim=1).clamp_min(1e-12) / 127  # (out,)
        self.register_buffer("weight_int8", torch.round(w / scale[:, None]).to(torch.int8).contiguous())
        self.register_buffer("scale", scale.to(torch.bfloat16))  # the kernel's fast path: bf16 activations
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().to(torch.bfloat16).clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features)  # (B*T, in)
        y = torch._weight_int8pack_mm(flat.to(self.scale.dtype), self.weight_int8, self.scale)  # (B*T, out)
        y = y.view(*x.shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias


def int8_weight_only(model: Transformer) -> Transformer:
    """A bf16 copy of `model` (fp32) whose every nn.Linear, the output head included, is an
    Int8Linear: int8 weights, bf16 activations and KV cache."""
    if not has_int8_kernel():
        raise ValueError("this PyTorch build has no torch._weight_int8pack_mm: weight-only int8 cannot run here")
    if not isinstance(model, Transformer) or model.tok_emb.weight.dtype != torch.float32:
        raise ValueError("int8_weight_only needs an fp32 helpers.decoding.model.Transformer")
    quantised = copy.deepcopy(model)
    for module in list(quantised.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, Int8Linear(child))
    return quantised.to(torch.bfloat16)  # embeddings, norms and the KV cache; the int8 buffers keep their dtype


def model_in(model: Transformer, fmt: str) -> Transformer:
    """The same weights in another format: 'fp32' (itself), 'bf16' or 'int8' (weight-only)."""
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if not isinstance(model, Transformer):
        raise ValueError(f"model must be a helpers.decoding.model.Transformer, got {type(model).__name__}")
    if fmt == "fp32":
        return model
    if fmt == "bf16":
        return copy.deepcopy(model).to(torch.bfloat16).row_major_layout_()
    return int8_weight_only(model)


def step_cost(config: ModelConfig, fmt: str, context: int) -> StepCost:
    """Bytes and FLOPs of one decode step in a format (int8: 1-byte weights, bf16 KV cache)."""
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    weight_bytes, kv_bytes = {"fp32": (4, 4), "bf16": (2, 2), "int8": (1, 2)}[fmt]
    return decode_step_cost(config, context=context, bytes_per_param=weight_bytes, bytes_per_kv=kv_bytes)


@dataclass
class FormatStep:
    """One decode step in one weight format, timed alternately with the others."""

    fmt: str
    measured: Measurement | None  # seconds per step; None if the format cannot run here
    gemvs: Measurement | None  # seconds for the step's weight matrices alone, each times one vector
    cost: StepCost  # bytes and FLOPs of the step
    note: str = ""  # why it was not timed

    @property
    def bandwidth(self) -> float:
        """Bytes the step must read / its time (bytes/s)."""
        return self.cost.total_bytes / self.measured.si


def time_formats(model: Transformer, *, context: int = 512, rounds: int = 5, repeat: int = 3) -> list[FormatStep]:
    """Time one KV-cached decode step (the call helpers.decoding.ar.generate makes) of `model` (fp32, CPU)
    in every format of FORMATS, and the step's weight matrices alone (each times one vector, back
    to back): `rounds` rounds, each timing `repeat` runs of every format in turn; the median over
    all of a format's runs is reported."""
    from helpers.bench.decode import decode_step_fn, model_gemvs  # here: helpers.bench imports this module

    if not isinstance(model, Transformer) or not model.config.causal or model.tok_emb.weight.dtype != torch.float32:
        raise ValueError("model must be a causal fp32 helpers.decoding.model.Transformer")
    context, rounds, repeat = (
        check_int(context, "context", 0),
        check_int(rounds, "rounds", 1),
        check_int(repeat, "repeat", 1),
    )
    if context + 1 > model.config.max_len:
        raise ValueError(f"context ({context}) + 1 must fit in max_len ({model.config.max_len})")
    steps, notes = {}, {}
    with torch.inference_mode():
        for fmt in FORMATS:
            if fmt == "int8" and not has_int8_kernel():
                notes[fmt] = "no torch._weight_int8pack_mm in this PyTorch build"
                continue
            m = model_in(model, fmt)
            step = decode_step_fn(m, context)  # the step helpers.bench.decode_step times
            step()  # warm-up: first-call allocations and kernel selection
            steps[fmt] = (step, model_gemvs(m))
        samples = {fmt: ([], []) for fmt in steps}
        for _ in range(rounds):
            for fmt, fns in steps.items():
                for fn, out in zip(fns, samples[fmt], strict=True):
                    out += benchmark(fn, warmup=1, repeat=repeat).samples
    timed = {fmt: [Measurement.from_samples(x, "s") for x in samples[fmt]] for fmt in samples}
    return [
        FormatStep(fmt, *timed.get(fmt, (None, None)), step_cost(model.config, fmt, context), notes.get(fmt, ""))
        for fmt in FORMATS
    ]


def ratios(results: list[FormatStep], base: str = "fp32") -> dict[str, tuple[float, float]]:
    """{format: (time / base time, bytes / base bytes)} for every timed format."""
    results = list(results) if hasattr(results, "__iter__") and not isinstance(results, str) else []
    if not results or not all(isinstance(r, FormatStep) for r in results):
        raise ValueError("results must be the list of FormatStep that time_formats returns")
    by = {r.fmt: r for r in results if r.measured is not None}
    if not isinstance(base, str) or base not in by:
        raise ValueError(f"no timed {base} step to compare with")
    ref = by[base]
    return {f: (r.measured.si / ref.measured.si, r.cost.total_bytes / ref.cost.total_bytes) for f, r in by.items()}
