"""The roofline: what a pass reads and computes (costs), the model shapes it is computed for
(shapes), the device table (hardware), the bound itself and its plot (attainable), and models with
random weights in the course's and GPT-2's shapes, for timing (fixtures).

What the notebooks use is re-exported here."""

from helpers.roofline.attainable import attainable, pass_in_steps
from helpers.roofline.costs import decode_step_cost, forward_pass_cost
from helpers.roofline.fixtures import prefilled_cache
from helpers.roofline.hardware import HARDWARE_CSV, get_hardware

__all__ = [
    "HARDWARE_CSV",
    "attainable",
    "decode_step_cost",
    "forward_pass_cost",
    "get_hardware",
    "pass_in_steps",
    "prefilled_cache",
]
