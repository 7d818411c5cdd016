"""What every stage shares: argument checks (validation), one figure style (plotting), and
the device a tensor goes to (device).

What the notebooks use is re-exported here. The plotting names are looked up on first use, so that
the stages that import only validation never import pyplot."""

from helpers.common.device import pick_device

_PLOTTING = ("ACCENT_COLOR", "AR_COLOR", "DLLM_COLOR", "TRUTH_COLOR", "new_figure", "use_course_style")

__all__ = ["pick_device", *_PLOTTING]


def __getattr__(name: str):
    if name in _PLOTTING:
        from helpers.common import plotting

        return getattr(plotting, name)
    raise AttributeError(f"module 'helpers.common' has no attribute {name!r}")
