"""Notebook 05's latency explorer: the projected latency of N tokens, AR (N passes) against masked
diffusion (K passes), on a device from data/hardware.csv, as helpers.projection.latency.latency_curves
projects it: typical efficiency solid, the datasheet ceiling dotted (`latency_explorer_widget`;
`draw_latency_explorer` is its static figure)."""

from __future__ import annotations

import ipywidgets as widgets
from IPython.display import display
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from helpers.common.plotting import AR_COLOR, DLLM_COLOR, TRUTH_COLOR, use_course_style
from helpers.projection.latency import EXPLORER_BLOCK, LatencyCurves, latency_curves
from helpers.roofline.costs import DTYPES, MODEL_SHAPES, model_shape
from helpers.roofline.hardware import get_hardware, load_hardware_table
from helpers.widgets.stepper import LiveBox

EXPLORER_CACHES = {"none (LLaDA: full canvas every pass)": None, "dual cache, blocks of 32 (Fast-dLLM)": "dual"}
EXPLORER_DEFAULTS = dict(
    hardware="NVIDIA H100 SXM",
    model="Llama-3-8B",
    dllm_model="LLaDA-8B",  # the dLLM is projected with LLaDA-8B's own shape (full multi-head attention)
    dtype="bf16",
    batch=1,
    steps=32,
    n_max=4096,
    cache=None,
)


def _seconds_text(seconds: float) -> str:
    return f"{seconds * 1e3:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def readable_log_ticks(axis) -> None:
    """Plain numbers (0.05, 0.1, 0.2, 0.5, 1, 2 ...) on a log axis instead of powers of ten.
    axis: a matplotlib Axis, e.g. ax.yaxis."""
    if not all(hasattr(axis, m) for m in ("set_major_locator", "set_major_formatter", "set_minor_formatter")):
        raise ValueError(f"axis must be a matplotlib Axis such as ax.yaxis, got {type(axis).__name__}")
    from matplotlib.ticker import FormatStrFormatter, LogLocator

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(FormatStrFormatter(""))


def draw_latency_explorer(
    ax: Axes,
    hardware=EXPLORER_DEFAULTS["hardware"],
    model=EXPLORER_DEFAULTS["model"],
    *,
    dtype: str = "bf16",
    batch: int = 1,
    steps: int = 32,
    n_max: int = 4096,
    cache: str | None = None,
    dllm_model=EXPLORER_DEFAULTS["dllm_model"],
) -> LatencyCurves:
    """Latency vs N on log-log axes: AR (red, filled circles) and dLLM (blue, hollow squares) at the
    course's typical efficiency (solid) and at the datasheet ceiling (dotted), and the dLLM as pass
    counting alone would have it (grey dash-dot): where the blue curve leaves the grey one, passes
    stopped being free.
    Returns the curves drawn."""
    curves = latency_curves(
        hardware, model, dtype=dtype, batch=batch, steps=steps, n_max=n_max, cache=cache, dllm_model=dllm_model
    )
    hw, name, dllm_name = get_hardware(hardware), model_shape(model).name, model_shape(dllm_model).name
    kind = "no cache" if cache is None else f"dual cache, blocks of {EXPLORER_BLOCK}"
    # AR's filled circles on top of the dLLM's hollow squares: where the two meet, both stay visible
    ax.plot(curves.n, curves.ar, "o-", color=AR_COLOR, ms=5, zorder=4, label=f"AR ({name}), KV cache: N passes")
    ax.plot(curves.n, curves.dllm, "s-", color=DLLM_COLOR, ms=8, mfc="white", mew=1.5, zorder=3,
            label=f"dLLM ({dllm_name}), K = {steps} passes, {kind}")  # fmt: skip
    ax.plot(curves.n, curves.ar_ceiling, ":", color=AR_COLOR, lw=1.2)
    ax.plot(curves.n, curves.dllm_ceiling, ":", color=DLLM_COLOR, lw=1.2)
    ax.plot([], [], ":", color="black", label="dotted: ceiling (100 % of datasheet)")
    ax.plot(curves.n, curves.ideal, "-.", color=TRUTH_COLOR, lw=1, label="dLLM if a pass cost one typical AR step")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    readable_log_ticks(ax.yaxis)
    ax.set_xticks(curves.n, [str(k) for k in curves.n])
    ax.set_xticks([], minor=True)
    ax.set_xlabel("tokens generated, N")
    ax.set_ylabel("projected latency (s)")
    ax.plot([], [], "-", color="black", label=f"solid: {curves.label}")
    n, ar, dllm, passes = curves.n[-1], curves.ar[-1], curves.dllm[-1], curves.dllm_passes[-1]
    ceiling_ratio = curves.ar_ceiling[-1] / curves.dllm_ceiling[-1]
    ax.set_title(
        f"{dtype}, batch {batch} on {hw.device} (projection)\n"
        f"at N = {n}: AR {_seconds_text(ar)}, dLLM {_seconds_text(dllm)} typical; AR / dLLM = {ar / dllm:.1f}x "
        f"typical, {ceiling_ratio:.1f}x ceiling; N / K = {n / passes:.1f}x",
        loc="left",
        fontsize=9,
    )
    ax.legend(loc="upper left", fontsize=8)
    return curves


def latency_explorer_widget(
    hardware=EXPLORER_DEFAULTS["hardware"],
    model=EXPLORER_DEFAULTS["model"],
    *,
    dtype: str = "bf16",
    batch: int = 1,
    steps: int = 32,
    n_max: int = 4096,
    cache: str | None = None,
    dllm_model=EXPLORER_DEFAULTS["dllm_model"],
) -> widgets.VBox:
    """Controls over `draw_latency_explorer`: device, AR model, dLLM model, weight format, batch, K,
    largest N, cache.

    Returns the VBox; its controls are attributes for tests and for driving it from code:
    `.hardware_box`, `.model_box`, `.dllm_box`, `.dtype_box`, `.batch_slider`, `.steps_slider`, `.n_max_slider`,
    `.cache_box`, and `.output`, `.figure` (latest figure), `.curves` (latest LatencyCurves),
    `.error` (None unless a redraw failed, e.g. a device with no published peak for the dtype or a
    model that does not fit in its memory: the message is shown instead of raising)."""
    use_course_style()
    latency_curves(  # validates
        hardware, model, dtype=dtype, batch=batch, steps=steps, n_max=n_max, cache=cache, dllm_model=dllm_model
    )
    devices = list(load_hardware_table())
    caches = {v: k for k, v in EXPLORER_CACHES.items()}
    powers = lambda lo, hi: [2**k for k in range(lo, hi + 1)]  # noqa: E731
    batches, step_choices, lengths = powers(0, 9), powers(2, 10), powers(7, 14)
    for value, allowed, what in ((batch, batches, "batch"), (steps, step_choices, "steps"), (n_max, lengths, "n_max")):
        if isinstance(value, bool) or value not in allowed:
            raise ValueError(f"{what} must be one of {allowed} in the explorer, got {value!r}")

    hardware_box = widgets.Dropdown(options=devices, value=get_hardware(hardware).device, description="device")
    model_box = widgets.Dropdown(options=list(MODEL_SHAPES), value=model_shape(model).name, description="model")
    dllm_box = widgets.Dropdown(options=list(MODEL_SHAPES), value=model_shape(dllm_model).name, description="dLLM")
    dtype_box = widgets.ToggleButtons(options=list(DTYPES), value=dtype, description="weights")
    batch_slider = widgets.SelectionSlider(options=batches, value=batch, description="batch")
    steps_slider = widgets.SelectionSlider(options=step_choices, value=steps, description="K passes")
    n_max_slider = widgets.SelectionSlider(options=lengths, value=n_max, description="largest N")
    cache_box = widgets.Dropdown(options=list(EXPLORER_CACHES), value=caches[cache], description="dLLM cache")
    output = widgets.Output()
    controls = [hardware_box, model_box, dllm_box, dtype_box, batch_slider, steps_slider, n_max_slider, cache_box]
    rows = [widgets.HBox(controls[:3]), dtype_box, widgets.HBox(controls[4:7]), cache_box]
    box = LiveBox([*rows, output])
    box.hardware_box, box.model_box, box.dllm_box = hardware_box, model_box, dllm_box
    box.dtype_box, box.cache_box = dtype_box, cache_box
    box.batch_slider, box.steps_slider, box.n_max_slider, box.output = batch_slider, steps_slider, n_max_slider, output
    box.figure, box.curves, box.error = None, None, None

    def redraw(_change=None) -> None:
        try:  # a callback must never raise into the frontend: show the problem instead
            fig = Figure(layout="constrained")
            curves = draw_latency_explorer(
                fig.add_subplot(),
                hardware_box.value,
                model_box.value,
                dtype=dtype_box.value,
                batch=batch_slider.value,
                steps=steps_slider.value,
                n_max=n_max_slider.value,
                cache=EXPLORER_CACHES[cache_box.value],
                dllm_model=dllm_box.value,
            )
            box.figure, box.curves, box.error = fig, curves, None
        except Exception as err:
            fig, box.error = None, f"cannot project this setting: {err}"
        with output:
            output.clear_output(wait=True)
            display(fig if fig is not None else box.error)

    for control in controls:
        control.observe(redraw, names="value")
    redraw()
    return box
