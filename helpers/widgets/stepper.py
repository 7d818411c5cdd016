"""The widget notebooks 01 to 03 share: a slider over the steps of a trace, and a seed box."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from IPython.display import display
from matplotlib.figure import Figure

from helpers.common.plotting import use_course_style
from helpers.common.validation import check_int

MAX_SEED = 1_000_000  # the seed box's upper bound
STATIC_TEXT = "(an interactive widget: it runs in a live notebook; the figure above is its starting state)"


class LiveBox(widgets.VBox):
    """A VBox whose plain-text form, the one a static viewer shows (GitHub, nbviewer, a notebook
    opened without its kernel), says what it is instead of listing its children."""

    def __repr__(self) -> str:
        return STATIC_TEXT


def stepper_widget(make_trace, draw, seed: int, step: int, last_step, label: str = "step") -> widgets.VBox:
    """A slider over the steps of a trace and a seed box that makes a new trace.

    make_trace(seed) -> trace; draw(figure, trace, step) draws one step on a fresh Figure;
    last_step(trace) -> the slider's maximum. The returned VBox exposes `.step_slider`,
    `.seed_box`, `.output` (where the figure is shown), `.figure` (the latest one), `.trace` and
    `.error` (None unless a redraw failed: the callback shows the message instead of raising)."""
    for fn, name in ((make_trace, "make_trace"), (draw, "draw"), (last_step, "last_step")):
        if not callable(fn):
            raise ValueError(f"{name} must be callable, got {fn!r}")
    if not isinstance(label, str):
        raise ValueError(f"label must be a str, got {label!r}")
    seed = check_int(seed, "seed", 0, MAX_SEED)
    use_course_style()
    trace = make_trace(seed)
    step = check_int(step, label, 0)
    if step > last_step(trace):
        raise ValueError(f"{label} must be an int in 0 .. {last_step(trace)} for seed {seed}, got {step}")

    step_slider = widgets.IntSlider(value=step, min=0, max=last_step(trace), description=label)
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=MAX_SEED, description="seed")
    output = widgets.Output()
    box = LiveBox([widgets.HBox([step_slider, seed_box]), output])
    box.step_slider, box.seed_box, box.output = step_slider, seed_box, output
    box.trace, box.figure, box.error = trace, None, None

    def redraw(_change=None) -> None:
        try:  # a callback must never raise into the frontend: show the problem instead
            # A Figure without pyplot: nothing accumulates in pyplot's registry across redraws.
            fig = Figure(layout="constrained")
            draw(fig, box.trace, step_slider.value)
            box.figure, box.error = fig, None
        except Exception as err:
            fig, box.error = None, f"could not draw {label} {step_slider.value}: {err}"
        with output:
            output.clear_output(wait=True)
            display(fig if fig is not None else box.error)

    def new_trace(change) -> None:
        box.trace = make_trace(int(change["new"]))
        last = last_step(box.trace)
        step_slider.unobserve(redraw, names="value")  # one redraw below, not one per changed bound
        step_slider.value = min(step_slider.value, last)
        step_slider.max = last
        step_slider.observe(redraw, names="value")
        redraw()

    step_slider.observe(redraw, names="value")
    seed_box.observe(new_trace, names="value")
    redraw()
    return box


def check_step(step, n_steps: int, name: str = "step", what: str = "") -> int:
    """An int in 0 .. n_steps - 1; the ValueError names the range."""
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or not 0 <= step < n_steps:
        raise ValueError(f"{name} must be an int in 0 .. {n_steps - 1}{what}, got {step!r}")
    return int(step)
