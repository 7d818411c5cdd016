"""Interactive widgets of the course, and the drawing functions they share with static figures.

Every widget is built by a function, so a test can drive it headless (setting `slider.value`
fires its observers synchronously), and redraws with the same function the notebook uses for the
static figure next to it, so the static picture and the interactive one always agree. One module
per notebook; every name is re-exported here (`from helpers.widgets import typewriter_widget`):

typewriter        01  `typewriter_widget`: ancestral sampling of one sentence of the toy language,
                      with the exact next-token distribution at every step
model_typewriter  02  `model_typewriter_widget`: a document typed by the AR model, its next-token
                      probabilities beside the exact ones
side_by_side      03  `side_by_side_widget`: the AR document and the diffusion canvas after the same
                      number of passes
latency_explorer  04  `latency_explorer_widget`: the latency of N tokens, AR vs masked diffusion, on a
                      device from data/hardware.csv (helpers.projection.latency; typical solid, ceiling dotted)
stepper               `stepper_widget`: the step slider and seed box of 01 to 03
"""

from helpers.widgets.latency_explorer import (
    EXPLORER_CACHES,
    EXPLORER_DEFAULTS,
    draw_latency_explorer,
    latency_explorer_widget,
    readable_log_ticks,
)
from helpers.widgets.model_typewriter import draw_model_step, model_typewriter_trace, model_typewriter_widget
from helpers.widgets.side_by_side import (
    SideBySide,
    draw_side_by_side,
    draw_side_by_side_step,
    side_by_side_trace,
    side_by_side_widget,
)
from helpers.widgets.stepper import stepper_widget
from helpers.widgets.typewriter import TypewriterStep, draw_typewriter_step, typewriter_trace, typewriter_widget

__all__ = [
    "EXPLORER_CACHES", "EXPLORER_DEFAULTS", "SideBySide", "TypewriterStep",
    "draw_latency_explorer", "draw_model_step", "draw_side_by_side", "draw_side_by_side_step", "draw_typewriter_step",
    "latency_explorer_widget", "model_typewriter_trace", "model_typewriter_widget", "readable_log_ticks",
    "side_by_side_trace", "side_by_side_widget", "stepper_widget", "typewriter_trace", "typewriter_widget",
]  # fmt: skip
