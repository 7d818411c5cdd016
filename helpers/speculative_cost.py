"""Speculative decoding on a GPU, projected with the course's cost model (helpers.costs).

A round is gamma draft steps and one target pass over gamma + 1 positions; it writes
(1 - alpha^(gamma+1)) / (1 - alpha) tokens on average (helpers.acceptance.expected_tokens).
Both models first prefill the prompt, which yields the first token, as helpers.latency.ar_latency
counts it. Every pass is priced by predicted_time at the chosen efficiencies: 1.0 and 1.0 is the
datasheet ceiling, the defaults the typical projection. alpha is an assumption here: it depends
on the drafter, the task and the temperature, and notebook 06 measures it only on the toy language.
"""

from __future__ import annotations

from helpers.acceptance import expected_tokens
from helpers.costs import (
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    check_dtype,
    effective_roofs,
    forward_pass_cost,
    predicted_time,
)
from helpers.latency import ar_latency
from helpers.validation import check_int


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
    the keywords helpers.latency.ar_latency and speculative_latency share)."""
    ar = ar_latency(n_tokens, target, hardware, **kwargs)
    return ar / speculative_latency(n_tokens, target, draft, hardware, gamma=gamma, alpha=alpha, **kwargs)
