"""Notebook 05's tables and figures for section 1 and its "Going deeper" sections: launch overhead,
the typical efficiencies and what they are fitted on (a short summary for the core, the figure and
numbered table for Going deeper), and the one published head-to-head (section 2's pass-ratio claim
and the devices' datasheets are in views.pass_ratio, sections 3 and 4 and your GPU in views.gpu_speed).

Presentation only: every number is computed by the helpers the notebook names (helpers.roofline.costs,
helpers.projection.latency, helpers.projection.calibration, helpers.bench) from the arguments passed in; these functions
lay the numbers out."""

from __future__ import annotations

from matplotlib.figure import Figure

from helpers.common.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR, new_figure
from helpers.common.validation import check_int, check_positive
from helpers.decoding.model import ModelConfig
from helpers.projection.calibration import CalibrationRow, TypicalFit
from helpers.roofline.costs import (
    TYPICAL_BANDWIDTH_EFFICIENCY,
    TYPICAL_COMPUTE_EFFICIENCY,
    decode_step_cost,
    efficiency_label,
)
from helpers.roofline.hardware import get_hardware

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


# ----------------------------------------------------------------------------- Going deeper: launches


def _launch_floors(shapes: dict, hardware, context: int, launch_s, kernel_s):
    """(hardware row, [(name, bytes, kernels, memory s, launch span, kernel span)]) for launch_table
    and launch_summary; each span is ("low-high ms", "MBU range %") for one assumed cost per kernel."""
    if not isinstance(shapes, dict) or not shapes:
        raise ValueError(f"shapes must be a non-empty dict {{name: (ModelConfig, kernels)}}, got {shapes!r:.80}")
    hw = get_hardware(hardware)
    context = check_int(context, "context", 0)
    launch, kernel = _range_s(launch_s, "launch_s"), _range_s(kernel_s, "kernel_s")
    rows = []
    for name, entry in shapes.items():
        if not isinstance(entry, tuple | list) or len(entry) != 2 or not isinstance(entry[0], ModelConfig):
            raise ValueError(f"shapes[{name!r}] must be (ModelConfig, kernels per step), got {entry!r:.80}")
        kernels = check_int(entry[1], f"the kernels of {name!r}", 1)
        nbytes = decode_step_cost(entry[0], context=context, bytes_per_param=2).total_bytes
        memory = nbytes / hw.bandwidth

        def span(per_kernel, memory=memory, kernels=kernels):
            times = [kernels * t for t in per_kernel]
            mbu = [f"{100 * memory / max(memory, t):.0f}" for t in reversed(times)]  # fastest floor: highest MBU
            return f"{1e3 * times[0]:.2f}-{1e3 * times[1]:.2f} ms", ("-".join(dict.fromkeys(mbu))) + " %"

        rows.append((name, nbytes, kernels, memory, span(launch), span(kernel)))
    return hw, rows


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
    hw, rows = _launch_floors(shapes, hardware, context, launch_s, kernel_s)
    lines = [
        f"projection: one decode step, bf16, {context} cached positions, {hw.device} at 100 % of "
        f"{hw.bandwidth_gb_s:.0f} GB/s",
        f"{'':49s}{'eager: host launches':^27s}   {'one CUDA graph: kernel floor':^28s}",
        f"{'shape':12s} {'bytes':>7s} {'kernels':>7s} {'per kernel':>10s} {'memory':>9s} {'launch time':>14s} "
        f"{'MBU at most':>11s}   {'kernel time':>14s} {'MBU at most':>12s}",
    ]
    for name, nbytes, kernels, memory, (lt, lm), (kt, km) in rows:
        lines.append(
            f"{name:12s} {nbytes / 1e9:4.2f} GB {kernels:7d} {nbytes / kernels / 1e6:7.1f} MB {1e3 * memory:6.3f} ms "
            f"{lt:>14s} {lm:>11s}   {kt:>14s} {km:>12s}"
        )
    return "\n".join(lines)


def launch_summary(
    shapes: dict,
    hardware="NVIDIA H200",
    *,
    context: int = 512,
    launch_s=(5e-6, 10e-6),
    kernel_s=(1e-6, 3e-6),
) -> str:
    """launch_table in a few lines: per shape, its bytes, kernels and memory time on one line, then
    the floor and the highest MBU eager (host launches) and as one CUDA graph (kernel time)."""
    hw, rows = _launch_floors(shapes, hardware, context, launch_s, kernel_s)
    lines = [
        f"projection: one decode step in bf16, {context} cached positions, {hw.device} at 100 % of "
        f"{hw.bandwidth_gb_s:.0f} GB/s"
    ]
    for name, nbytes, kernels, memory, (lt, lm), (kt, km) in rows:
        lines.append(f"{name}: {nbytes / 1e9:.2f} GB in {kernels} kernels, memory time {1e3 * memory:.3f} ms")
        lines.append(f"  eager, launches {lt}: MBU at most {lm};  one CUDA graph, kernels {kt}: MBU at most {km}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- section 1: calibration


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


def _fit(fit) -> TypicalFit:
    if not isinstance(fit, TypicalFit):
        raise ValueError(
            f"fit must be a helpers.projection.calibration.TypicalFit (typical_fit()), got {type(fit).__name__}"
        )
    return fit


def _row_label(i: int, row: CalibrationRow) -> str:
    p = row.published
    return f"{i} {short_system(p)}, {p.model}, {short_device(p.device)}"


def fit_text(rows, fit) -> str:
    """Where the typical efficiencies come from, by the row numbers of calibration_text (the rows they
    are fitted on, with what those reach of their ceiling) and how the rows outside the fit compare
    with their typical projection (fit_summary: the same in five lines, without row numbers)."""
    rows, fit = _rows(rows), _fit(fit)
    fitted = set(fit.bandwidth_rows) | set(fit.compute_rows)

    def spread(numbers, attr) -> str:
        values = [100 * getattr(rows[i - 1], attr) for i in numbers]
        return f"{min(values):.0f}-{max(values):.0f} %"

    def listed(numbers) -> str:
        return ", ".join(f"{i} {short_system(rows[i - 1].published)} {100 * rows[i - 1].reached_typical:.0f} %"
                         for i in numbers)  # fmt: skip

    others = [i for i, r in enumerate(rows, 1) if r.typical is not None and i not in fitted]
    dllm = [i for i, r in enumerate(rows, 1) if r.typical is not None and r.published.kind == "dLLM"]
    ar = [i for i, r in enumerate(rows, 1) if r.typical is not None and r.published.kind == "AR"]
    return "\n".join(
        [
            f"fitted: typical bandwidth {100 * TYPICAL_BANDWIDTH_EFFICIENCY:.0f} % ≈ geometric mean "
            f"{100 * fit.bandwidth:.0f} % of rows {', '.join(map(str, fit.bandwidth_rows))}, tuned bf16 AR "
            f"({spread(fit.bandwidth_rows, 'reached_ceiling')} of the ceiling)",
            f"        typical FLOP/s {100 * TYPICAL_COMPUTE_EFFICIENCY:.0f} % ≈ rows "
            f"{', '.join(map(str, fit.compute_rows))}, uncached diffusion ({100 * fit.compute:.0f} % of the ceiling)",
            f"        these rows reach {spread(sorted(fitted), 'reached_typical')} of their typical projection",
            f"not fitted, published / typical: {listed([i for i in others if i in ar])}",
            f"        {listed([i for i in others if i in dllm])}",
        ]
    )


def fit_summary(rows, fit) -> str:
    """fit_text in five lines, without row numbers: each typical efficiency with the kind and number
    of rows it is fitted on (and, for the FLOP/s, the GPUs those rows ran on), then published speed
    over typical projection, read in words: the spread of the fitted rows, and what the cached
    diffusion decoders outside the fit reach, system by system."""
    rows, fit = _rows(rows), _fit(fit)
    fitted = sorted(set(fit.bandwidth_rows) | set(fit.compute_rows))
    reached = [100 * rows[i - 1].reached_typical for i in fitted]
    compute_gpus = sorted({short_device(rows[i - 1].published.device) for i in fit.compute_rows})
    cached = {}  # system -> what its rows reach of their typical projection, in %
    for i, row in enumerate(rows, 1):
        p = row.published
        if row.typical is not None and i not in fitted and p.kind == "dLLM" and p.cache:
            name = p.system.split(",")[0].removesuffix("-LLaDA")
            cached.setdefault(name, []).append(100 * row.reached_typical)
    if not cached:
        raise ValueError("rows must hold cached diffusion rows outside the fit, to test it")

    def span(values) -> str:
        low, high = f"{min(values):.0f}", f"{max(values):.0f}"
        return f"{low} %" if low == high else f"{low}-{high} %"

    return "\n".join(
        [
            f"typical bandwidth: {100 * TYPICAL_BANDWIDTH_EFFICIENCY:.0f} % of the datasheet, fitted on "
            f"{len(fit.bandwidth_rows)} tuned bf16 AR decoders",
            f"typical FLOP/s:    {100 * TYPICAL_COMPUTE_EFFICIENCY:.0f} % of the datasheet, fitted on "
            f"{len(fit.compute_rows)} uncached LLaDA-8B decoders, on the {' and '.join(compute_gpus)} only",
            "published speed / typical projection (below 100 %: slower than projected):",
            f"  the {len(fitted)} fitted rows: {span(reached)}",
            "  cached LLaDA-8B decoders, not fitted: " + ", ".join(f"{n} {span(v)}" for n, v in cached.items()),
        ]
    )


def draw_calibration(rows, fit) -> Figure:
    """Each projectable published row as a dot at its published speed / ceiling projection: AR red,
    diffusion blue, filled where the typical efficiencies are fitted on it, hollow where it is an
    out-of-fit check; the typical bandwidth and FLOP/s fractions as vertical lines."""
    rows, fit = _rows(rows), _fit(fit)
    fitted = set(fit.bandwidth_rows) | set(fit.compute_rows)
    shown = [(i, r) for i, r in enumerate(rows, 1) if r.ceiling is not None]
    fig, ax = new_figure(figsize=(8, 4.6))
    for y, (i, row) in enumerate(shown):
        color = AR_COLOR if row.published.kind == "AR" else DLLM_COLOR
        face = color if i in fitted else "white"
        ax.plot(100 * row.reached_ceiling, y, "o", ms=7, color=color, mfc=face, mew=1.5, zorder=3)
    for value, style, text, side in (
        (TYPICAL_BANDWIDTH_EFFICIENCY, "--", "typical bandwidth", "left"),
        (TYPICAL_COMPUTE_EFFICIENCY, ":", "typical FLOP/s", "right"),
    ):
        ax.axvline(100 * value, color=TRUTH_COLOR, ls=style, lw=1.2)
        ax.annotate(
            f" {text} {100 * value:.0f} % ",
            (100 * value, 1.0),
            xycoords=("data", "axes fraction"),
            ha=side,
            va="bottom",
            fontsize=8,
            color=TRUTH_COLOR,
        )  # fmt: skip (above the axes, beside its line)
    ax.set_yticks(range(len(shown)), [_row_label(i, r) for i, r in shown], fontsize=8)
    ax.set_ylim(len(shown) - 0.5, -0.5)  # row 1 on top, as in the table
    ax.set_xlim(0, 100)
    ax.set_xlabel("published speed / ceiling projection of the same setting (%)")
    marks = [
        ax.plot([], [], "o", color=AR_COLOR, ms=7, label="AR")[0],
        ax.plot([], [], "o", color=DLLM_COLOR, ms=7, label="diffusion (LLaDA-8B)")[0],
        ax.plot([], [], "o", color="black", ms=7, label="filled: typical is fitted on it")[0],
        ax.plot([], [], "o", color="black", mfc="white", ms=7, mew=1.5, label="hollow: not in the fit, a check")[0],
    ]
    ax.legend(handles=marks, loc="lower right", fontsize=8, frameon=True, framealpha=0.9)
    ax.set_title("published decoding speeds against their ceiling projection", loc="left", fontsize=10, pad=16)
    return fig


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
