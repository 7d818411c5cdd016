"""Notebook 05's tables and figures: launch overhead, the calibration table, the pass-ratio claim
on every device, the matched-quality chart, the agent rounds and the reference runs.

Presentation only: every number is computed by the helpers the notebook names (helpers.costs,
helpers.latency, helpers.calibration, helpers.bench) from the arguments passed in; these functions
lay the numbers out."""

from __future__ import annotations

from helpers.calibration import CalibrationRow
from helpers.costs import (
    CEILING,
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    check_fits,
    decode_step_cost,
    efficiency_label,
)
from helpers.hardware import Hardware, get_hardware, load_hardware_table
from helpers.latency import ar_latency, dllm_latency
from helpers.model import ModelConfig
from helpers.validation import check_int, check_positive

PAIRS = {"1B": ("Llama-3.2-1B", "Llama-3.2-1B"), "8B": ("Llama-3-8B", "LLaDA-8B")}  # (AR model, dLLM model)
CACHE_DEVICES = ("NVIDIA A100 80GB SXM", "NVIDIA H100 SXM", "NVIDIA L4", "NVIDIA RTX 4090")


# ----------------------------------------------------------------------------- checks


def _range_s(value, name: str) -> tuple[float, float]:
    """A (low, high) pair of seconds, 0 < low <= high."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a (low, high) pair of seconds, got {value!r}")
    low, high = (check_positive(v, f"each end of {name} (seconds)") for v in value)
    if low > high:
        raise ValueError(f"{name} must be (low, high) with low <= high, got {value!r}")
    return low, high


def _rows(rows) -> list[CalibrationRow]:
    if not isinstance(rows, list | tuple) or not rows or not all(isinstance(r, CalibrationRow) for r in rows):
        raise ValueError(f"rows must be a non-empty list of CalibrationRow (calibration_table()), got {rows!r:.80}")
    return list(rows)


def _devices(devices) -> list[Hardware]:
    if isinstance(devices, str) or not isinstance(devices, list | tuple) or not devices:
        raise ValueError(f"devices must be a non-empty list of names in data/hardware.csv, got {devices!r}")
    return [get_hardware(d) for d in devices]


# ----------------------------------------------------------------------------- section 1: launches


def launch_table(
    shapes: dict,
    hardware="NVIDIA H200",
    *,
    context: int = 512,
    launch_s=(5e-6, 10e-6),
    kernel_s=(1e-6, 3e-6),
) -> str:
    """One decode step of each shape in bf16 on `hardware` at 100 % of its datasheet bandwidth:
    its bytes, its kernels, the memory time, and the highest MBU two floors allow. Eager: the host
    launches every kernel (`launch_s` each); the step takes at least max(memory, kernels x launch).
    One CUDA graph: the host cost is gone, but each kernel still occupies the device for at least
    `kernel_s`; the step takes at least max(memory, kernels x kernel time). Both are assumed ranges
    (low, high) in seconds; MBU at most = memory time / that floor.

    shapes: {name: (ModelConfig, kernels per step)}."""
    if not isinstance(shapes, dict) or not shapes:
        raise ValueError(f"shapes must be a non-empty dict {{name: (ModelConfig, kernels)}}, got {shapes!r:.80}")
    hw = get_hardware(hardware)
    context = check_int(context, "context", 0)
    launch, kernel = _range_s(launch_s, "launch_s"), _range_s(kernel_s, "kernel_s")
    lines = [
        f"projection: one decode step, bf16, {context} cached positions, {hw.device} at 100 % of "
        f"{hw.bandwidth_gb_s:.0f} GB/s",
        f"{'':49s}{'eager: host launches':^27s}   {'one CUDA graph: kernel floor':^28s}",
        f"{'shape':12s} {'bytes':>7s} {'kernels':>7s} {'per kernel':>10s} {'memory':>9s} {'launch time':>14s} "
        f"{'MBU at most':>11s}   {'kernel time':>14s} {'MBU at most':>12s}",
    ]
    for name, entry in shapes.items():
        if not isinstance(entry, tuple | list) or len(entry) != 2 or not isinstance(entry[0], ModelConfig):
            raise ValueError(f"shapes[{name!r}] must be (ModelConfig, kernels per step), got {entry!r:.80}")
        kernels = check_int(entry[1], f"the kernels of {name!r}", 1)
        memory = decode_step_cost(entry[0], context=context, bytes_per_param=2).total_bytes / hw.bandwidth

        def span(per_kernel, memory=memory, kernels=kernels):
            times = [kernels * t for t in per_kernel]
            mbu = [f"{100 * memory / max(memory, t):.0f}" for t in reversed(times)]  # fastest floor: highest MBU
            return f"{1e3 * times[0]:.2f}-{1e3 * times[1]:.2f} ms", ("-".join(dict.fromkeys(mbu))) + " %"

        (lt, lm), (kt, km) = span(launch), span(kernel)
        nbytes = decode_step_cost(entry[0], context=context, bytes_per_param=2).total_bytes
        lines.append(
            f"{name:12s} {nbytes / 1e9:4.2f} GB {kernels:7d} {nbytes / kernels / 1e6:7.1f} MB {1e3 * memory:6.3f} ms "
            f"{lt:>14s} {lm:>11s}   {kt:>14s} {km:>12s}"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- section 2: calibration


def short_system(published) -> str:
    """A calibration row's system in a few words: 'gpt-fast bf16', 'Fast-dLLM, dual cache', 'HF generate'."""
    name = published.system.split(",")[0].split(" (")[0]
    name = name.replace("Hugging Face transformers generate", "HF generate").replace(" reference sampler", " sampler")
    if published.kind == "AR":
        return f"{name} {published.dtype}"
    if name == "Fast-dLLM":
        return f"Fast-dLLM, {published.cache or 'no'} cache"
    return name


def short_device(device: str) -> str:
    """'NVIDIA A100 80GB SXM' -> 'A100', 'NVIDIA B200 (HGX)' -> 'B200'; other names as they are."""
    words = str(device).split()
    return words[1] if len(words) > 1 and words[0] in ("NVIDIA", "AMD", "Google") else str(device)


def calibration_text(rows) -> str:
    """The published speeds next to their ceiling and typical projections, one numbered row each
    (settings_text gives each row's full setting)."""
    rows = _rows(rows)
    lines = [f"typical = {efficiency_label()}", ""]
    lines.append(
        f"{'#':>2} {'kind':4s} {'system':23s} {'model':12s} {'GPU':7s} {'published':>12s} {'ceiling':>12s} "
        f"{'typical':>12s} {'reached: of ceiling':>19s} {'of typical':>12s}"
    )
    for i, row in enumerate(rows, 1):
        p = row.published
        unit = "tok/s" if p.unit == "tok/s" else "s"
        model = p.model if p.model != "unknown" else "?"
        head = f"{i:>2} {p.kind:4s} {short_system(p):23s} {model:12s} {short_device(p.device):7s}"
        head += f" {p.measured:>6g} {unit:5s}"
        if row.ceiling is None:
            lines.append(f"{head}  {p.note}")
            continue
        lines.append(
            f"{head} {row.ceiling:6.1f} {unit:5s} {row.typical:6.1f} {unit:5s}"
            f"{100 * row.reached_ceiling:18.0f} % {100 * row.reached_typical:10.0f} %"
        )
    return "\n".join(lines)


def settings_text(rows) -> str:
    """The setting of every calibration row: model, device, dtype, batch, lengths, and for a
    diffusion decoder its tokens per pass and cache."""
    lines = []
    for i, row in enumerate(_rows(rows), 1):
        p = row.published
        if not p.projectable:
            lines.append(f"{i:>2} {p.system}: on {p.device}")
            continue
        setting = f"{p.model}, {p.device}, {p.dtype}, batch {p.batch}, prompt {p.prompt_tokens}, "
        setting += f"{p.generated_tokens} tokens"
        if p.kind == "dLLM":
            cache = f"{p.cache} cache, blocks of {p.block_length}" if p.cache else "no cache"
            setting += f", {p.tokens_per_pass:g} tokens/pass, {cache}"
        lines.append(f"{i:>2} {p.system}: {setting}")
    return "\n".join(lines)


_SAME_SETTING_ASSUMPTIONS = {  # phrase in a row's note in data/published_decoding.csv: what it assumes
    "SXM assumed": "the H100 variant (SXM)",
    "prompt length assumed": "the prompt length",
    "batch size not stated": "HF generate's batch (1)",
}


def same_setting_text(rows) -> str:
    """d3LLM's published speed-up over its AR baseline beside the projection of the same setting
    (H100, 256 tokens, Qwen2.5-7B as the AR model): published against Hugging Face generate (one
    source) and against SGLang (two sources), projected at typical efficiency, with what is assumed."""
    rows = _rows(rows)

    def find(system, device="NVIDIA H100 SXM"):
        hits = [r for r in rows if r.published.system.startswith(system) and r.published.device == device]
        if len(hits) != 1:
            raise ValueError(f"rows must hold one {system!r} row on {device}, found {len(hits)}")
        return hits[0]

    d3, sglang, hf = find("d3LLM"), find("SGLang"), find("Hugging Face")
    p, ar_model = d3.published, sglang.published.model
    notes = " ".join(r.published.note for r in (d3, sglang, hf))
    assumed = [what for key, what in _SAME_SETTING_ASSUMPTIONS.items() if key in notes]
    return "\n".join(
        [
            f"same setting: H100, {p.generated_tokens} tokens, prompt {p.prompt_tokens}, LLaDA-8B at "
            f"{p.tokens_per_pass:g} tokens/pass against {ar_model} (AR)",
            f"  assumed, not published: {', '.join(assumed) or 'nothing'}",
            f"  published, one source (d3LLM's model card, both on a Hugging Face backend): d3LLM {p.measured:g} / "
            f"HF generate {hf.published.measured:g} tok/s = {p.measured / hf.published.measured:.1f}x",
            f"  published, two sources (model card; SGLang table of d3LLM's README): d3LLM {p.measured:g} / "
            f"SGLang {sglang.published.measured:g} tok/s = {p.measured / sglang.published.measured:.1f}x",
            f"  projected, typical: {d3.typical:.0f} / {sglang.typical:.0f} tok/s = {d3.typical / sglang.typical:.1f}x "
            f"(d3LLM reached {100 * d3.reached_typical:.0f} % of its projection, SGLang "
            f"{100 * sglang.reached_typical:.0f} %)",
        ]
    )


# ----------------------------------------------------------------------------- section 3: the claim


def hardware_text(devices=None) -> str:
    """Datasheet bandwidth, dense bf16 FLOP/s, ridge point, typical (effective) ridge and memory of
    every device with a published bf16 peak (devices: names; None: all of data/hardware.csv)."""
    table = list(load_hardware_table().values()) if devices is None else _devices(devices)
    eff = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY
    lines = [f"{'device':22s} {'GB/s':>6s} {'bf16 TFLOP/s':>13s} {'ridge FLOP/B':>13s} {'effective':>10s} {'GB':>5s}"]
    for hw in table:
        if hw.bf16_tflops_dense is None:
            continue
        ridge = hw.ridge_point()
        lines.append(
            f"{hw.device:22s} {hw.bandwidth_gb_s:6.0f} {hw.bf16_tflops_dense:13.0f} {ridge:13.0f} "
            f"{eff * ridge:10.0f} {hw.memory_gb:5g}"
        )
    return "\n".join(lines)


def claim_table(n: int = 1000, steps=(32, 256), devices=None, pairs=None) -> str:
    """AR (KV cache) against an uncached dLLM making K passes over the whole N-token canvas, on
    every device with a bf16 peak: AR's typical seconds and AR / dLLM latency ratios, typical
    (ceiling), next to the bound min(N, effective ridge) / K. A model that does not fit says so."""
    n = check_int(n, "n", 1)
    if isinstance(steps, str) or not isinstance(steps, tuple | list) or len(steps) != 2:
        raise ValueError(f"steps must be two pass counts K, e.g. (32, 256), got {steps!r}")
    steps = [check_int(k, "each K in steps", 1, n) for k in steps]
    pairs = PAIRS if pairs is None else pairs
    if not isinstance(pairs, dict) or not pairs:
        raise ValueError(f"pairs must be a dict {{label: (AR model, dLLM model)}}, got {pairs!r}")
    table = [hw for hw in load_hardware_table().values() if hw.bf16_tflops_dense is not None]
    table = table if devices is None else _devices(devices)
    eff = TYPICAL_COMPUTE_EFFICIENCY / TYPICAL_BANDWIDTH_EFFICIENCY
    k1, k2 = steps
    lines = [
        f"projection, N = {n}, no cache: AR / dLLM latency (above 1: the dLLM is faster), typical (ceiling); "
        f"pass ratio N / K = {n / k1:.1f} and {n / k2:.1f}",
        f"{'device':22s} {'pair':4s} {'AR (s)':>7s} {f'K = {k1}':>14s} {f'K = {k2}':>14s} "
        f"{f'min(N, I*_eff)/{k1}':>18s}",
    ]
    ratios = []
    for hw in table:
        for pair, (ar_model, dllm_model) in pairs.items():
            try:
                check_fits(ar_model, hw, cached_positions=n + 1)
            except ValueError as err:
                lines.append(f"{hw.device:22s} {pair:4s} {str(err).split(': ', 1)[-1]}")
                continue
            ar, ar_c = ar_latency(n, ar_model, hw), ar_latency(n, ar_model, hw, **CEILING)
            cells = []
            for k in steps:
                ratio = ar / dllm_latency(n, k, dllm_model, hw)
                cells.append(f"{ratio:5.2f}x ({ar_c / dllm_latency(n, k, dllm_model, hw, **CEILING):5.2f}x)")
                if k == k1:
                    ratios.append((ratio, hw.device, pair))
            bound = min(n, eff * hw.ridge_point()) / k1
            lines.append(f"{hw.device:22s} {pair:4s} {ar:7.2f} {cells[0]:>14s} {cells[1]:>14s} {bound:18.1f}")
    (lo, lo_dev, lo_pair), (hi, hi_dev, hi_pair) = min(ratios), max(ratios)
    lines.append(
        f"\nK = {k1}, typical: the dLLM is {lo:.1f}x ({lo_dev}, {lo_pair}) to {hi:.1f}x ({hi_dev}, {hi_pair}) faster; "
        f"pass ratio {n / k1:.1f}x"
    )
    return "\n".join(lines)


def cache_table(n: int = 1024, steps=(64, 256), devices=CACHE_DEVICES, block_length: int = 32) -> str:
    """Llama-3-8B (AR) against LLaDA-8B, N tokens, K passes: AR / dLLM latency without a cache and
    with Fast-dLLM's dual cache in blocks of `block_length`, typical."""
    n = check_int(n, "n", 1)
    block_length = check_int(block_length, "block_length", 1, n)
    if isinstance(steps, str) or not isinstance(steps, tuple | list) or not steps:
        raise ValueError(f"steps must be a list of pass counts K, e.g. (64, 256), got {steps!r}")
    steps = [check_int(k, "each K in steps", 1, n) for k in steps]
    lines = [
        f"projection: Llama-3-8B (AR) vs LLaDA-8B (dLLM), N = {n}, blocks of {block_length}, typical: "
        "AR / dLLM (above 1: dLLM faster)",
        f"{'device':22s} {'K':>4s} {'passes/block':>12s} {'no cache':>9s} {'dual cache':>11s} {'N / K':>6s}",
    ]
    for hw in _devices(devices):
        ar = ar_latency(n, "Llama-3-8B", hw)
        for k in steps:
            plain = dllm_latency(n, k, "LLaDA-8B", hw)
            dual = dllm_latency(n, k, "LLaDA-8B", hw, block_length=block_length, cache="dual")
            lines.append(
                f"{hw.device:22s} {k:4d} {k * block_length // n:12d} {ar / plain:9.2f} {ar / dual:11.2f} {n / k:6.1f}"
            )
    return "\n".join(lines)
