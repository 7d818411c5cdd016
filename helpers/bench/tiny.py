"""Stage 4 of helpers.bench: N new tokens end to end with the KV-cached AR decoder (N passes) and
the masked-diffusion sampler (K passes), passes counted by helpers.decoding.model.count_passes.

Both decoders run as the course wrote them, eagerly, with the host syncs their sampling loops
make; on a GPU these are launch-bound, which is what the times (JSON `*_eager`) show.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from helpers.bench.roofs import Roofs, check_roofs
from helpers.common.device import as_device
from helpers.common.validation import check_int
from helpers.decoding.ar import generate
from helpers.decoding.model import count_passes
from helpers.diffusion.sampler import sample
from helpers.language.toylang import LANG
from helpers.measure.measurement import Measurement, benchmark
from helpers.projection.latency import ar_pass_costs, dllm_pass_costs
from helpers.roofline.costs import StepCost, predicted_time
from helpers.roofline.fixtures import TINY_TOKENS, model_dtype, random_model, tiny_config

TINY_STEPS = 32  # K diffusion passes for the tiny models' N = TINY_TOKENS
TINY_NOTE = (
    "course tiny shape (d_model 128, 4 layers, 4 heads, vocab {vocab}) with random weights and "
    "max_len {max_len}: the shipped checkpoints have only 33 positions, too few for N = {n}"
)


def _dtype_name(dtype: torch.dtype) -> str:
    """helpers.roofline.costs' name for a dtype's size: 'fp32' for 4 bytes, 'bf16' for 2 (fp16 too)."""
    return {4: "fp32", 2: "bf16"}[dtype.itemsize]


@dataclass
class DecoderRun:
    """N tokens generated end to end by one decoder: wall time, counted passes, prediction."""

    decoder: str
    measured: Measurement  # seconds for all N tokens, eager
    passes: int  # forward passes, counted by helpers.decoding.model.count_passes
    predicted_s: float  # roofline: sum of predicted_time over the passes (helpers.roofline.costs)

    @property
    def per_pass_s(self) -> float:
        return self.measured.si / self.passes


@dataclass
class TinyRun:
    """Both decoders on the course's tiny shape, N tokens each."""

    note: str
    n_tokens: int
    steps: int
    params: int
    ar: DecoderRun
    dllm: DecoderRun


def _predicted_total(costs: list[StepCost], roofs: Roofs) -> float:
    return sum(predicted_time(c, roofs.bandwidth, roofs.peak_flops) for c in costs)


def tiny_models_n256(
    *,
    roofs: Roofs,
    n_tokens: int = TINY_TOKENS,
    steps: int = TINY_STEPS,
    device=None,
    warmup: int = 1,
    repeat: int = 3,
    seed: int = 0,
) -> TinyRun:
    """Generate N tokens after <bos> at batch 1, greedily, with random tiny models: the KV-cached
    AR decoder (helpers.decoding.ar.generate, N passes) and the masked-diffusion sampler (helpers.diffusion.sampler
    .sample, confidence order, K = steps passes over the whole canvas). Wall times are medians of
    `repeat` runs; passes are counted while the code runs."""
    check_roofs(roofs)
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    steps = check_int(steps, "steps", 1)
    if steps > n_tokens:
        raise ValueError(f"steps ({steps}) must be <= n_tokens ({n_tokens}): each pass commits at least one token")
    device = as_device(device)
    ar_model = random_model(tiny_config(n_tokens, causal=True), device, seed=seed)
    dllm_model = random_model(tiny_config(n_tokens, causal=False), device, seed=seed)
    prompt = torch.tensor([[LANG.bos_id]], device=device)  # (1, 1)
    dtype = _dtype_name(model_dtype(device))

    def run_ar():
        return generate(ar_model, prompt, n_tokens, temperature=0)

    def run_dllm():
        return sample(dllm_model, n_tokens, steps, temperature=0)

    with count_passes(ar_model) as ar_passes:
        run_ar()
    with count_passes(dllm_model) as dllm_passes:
        run_dllm()
    ar_time = benchmark(run_ar, warmup=warmup, repeat=repeat, device=device)
    dllm_time = benchmark(run_dllm, warmup=warmup, repeat=repeat, device=device)
    ar_costs = ar_pass_costs(n_tokens, ar_model.config, prompt=1, dtype=dtype)
    dllm_costs = dllm_pass_costs(n_tokens, steps, dllm_model.config, prompt=1, dtype=dtype)
    return TinyRun(
        note=TINY_NOTE.format(vocab=len(LANG.vocab), max_len=n_tokens + 1, n=n_tokens),
        n_tokens=n_tokens,
        steps=steps,
        params=ar_model.num_params(),
        ar=DecoderRun("AR, KV cache", ar_time, ar_passes.n, _predicted_total(ar_costs, roofs)),
        dllm=DecoderRun(f"dLLM, K = {steps}", dllm_time, dllm_passes.n, _predicted_total(dllm_costs, roofs)),
    )
