"""How an exercise check reports: one line that starts with ✓ and gives a measured number, or
with ✗, naming the property that failed, and a hint on the next line. Never a traceback: an
exception raised by the learner's code is reported as one line too.

Two things a passing check still tells apart: the reference itself under the exercise's name
(after Run All), and a learner's function that calls the course's own implementation of the
exercise (COURSE_FUNCTIONS) instead of doing the work."""

from __future__ import annotations

import copy
import functools
import importlib
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch

NOT_ATTEMPTED = "not attempted yet: the notebook continues with the reference implementation"
REFERENCE_NOTE = "a later cell imports the reference under this name: run your own cell again, then this check"
COURSE_NOTE = (
    "the check measured {dotted}, the course's own implementation, which your function calls: write {name} "
    "without it, then run this check again"
)
CHANGED_HINT = (
    "the caller still needs {name} as it was: compute in new tensors or arrays (out of place: no -=, no out=, "
    "no method with a trailing underscore)"
)
# The course's own implementations of each exercise's idea, beside helpers.solutions.<name> (added
# below): a learner's function that calls one passes the check on the course's code, not on its own.
# A name of a class's method is patched on the class. crossover_width has none: the ridge point
# (peak / bandwidth) is a low-level quantity, and the exercise is what W* makes of it.
COURSE_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "sample_sentence": ("helpers.language.toylang.ToyLanguage.sample",),
    "sentence_log2prob": (
        "helpers.language.toylang.ToyLanguage.prob",
        "helpers.language.toylang.ToyLanguage.all_next_token_probs",
    ),
    "attend_with_cache": ("helpers.exercises.ar_decoding.causal_attention",),
    "top_p_filter": ("helpers.decoding.ar.top_p_filter", "helpers.decoding.ar.filter_logits"),
    "tokens_per_step": ("helpers.diffusion.unmasking.even_split",),
    "commit_most_confident": (
        "helpers.diffusion.unmasking.top_counts",
        "helpers.diffusion.unmasking.commit_top_scores",
    ),
    "predicted_step_seconds": ("helpers.roofline.costs.predicted_time",),
    "crossover_width": (),
    "verify_draft": ("helpers.speculative.rule.verify",),
    "acceptance_rate": ("helpers.speculative.acceptance.overlap",),
}


class NotAttempted(Exception):
    """The learner's function still raises NotImplementedError: the stub is unfilled."""


class Failed(Exception):
    """A property the learner's function does not have, and a hint towards it."""

    def __init__(self, what: str, hint: str):
        super().__init__(what)
        self.what, self.hint = what, hint


class TooManyCalls(BaseException):  # noqa: N818 (BaseException: a learner's `except Exception` cannot swallow it)
    """Raised from inside the learner's code to stop a loop that does not end."""

    def __init__(self, what: str, hint: str):
        super().__init__(what)
        self.what, self.hint = what, hint


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    first = first if len(first) <= 160 else first[:157] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def call(fn: Callable, *args, case: str, hint: str, inputs: tuple[str, ...] = (), changed_hint: str = CHANGED_HINT):
    """Run the learner's `fn(*args)`; an exception becomes a one-line failure naming `case`.
    The first len(inputs) arguments, named by `inputs`, are handed over as copies and must come
    back unchanged: a function that writes into its caller's tensors breaks the caller's next use."""
    if len(inputs) > len(args):
        raise ValueError(f"inputs names {len(inputs)} arguments, but only {len(args)} are given")
    given = [_copy(a) for a in args[: len(inputs)]] + list(args[len(inputs) :])
    try:
        result = fn(*given)
    except NotImplementedError:
        raise NotAttempted from None
    except TooManyCalls as stop:
        raise Failed(f"{stop.what} ({case})", stop.hint) from None
    except Exception as error:  # the learner's bug, reported, not raised
        raise Failed(f"your function raised {one_line(error)} ({case})", hint) from None
    for input_name, before, after in zip(inputs, args, given, strict=False):
        if not _same(before, after):
            raise Failed(f"your function changed its input {input_name} ({case})", changed_hint.format(name=input_name))
    return result


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    return value.copy() if isinstance(value, np.ndarray) else copy.deepcopy(value)


def _same(before, after) -> bool:
    """Whether `after` still holds what `before` holds (NaN where NaN was)."""
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or before.shape != after.shape or before.dtype != after.dtype:
            return False
        return torch.equal(before, after) or bool(((before == after) | (before.isnan() & after.isnan())).all())
    if isinstance(before, np.ndarray):
        if not isinstance(after, np.ndarray) or before.shape != after.shape or before.dtype != after.dtype:
            return False
        return bool(np.array_equal(before, after, equal_nan=before.dtype.kind in "fc"))
    return before == after


def _reference(name: str):
    from helpers import solutions  # here, not at the top: the solutions import helpers that import this module

    return getattr(solutions, name, None)


def run_check(name: str, fn, body: Callable[[Callable], str]) -> bool:
    """Run a check's body on the learner's `fn`, print its one report, return whether it passed."""
    if not callable(fn):
        print(f"✗ {name}: the check needs the function itself, as in check_{name}({name}); got {fn!r}")
        return False
    reference = fn is _reference(name)  # before the course's functions are patched below
    try:
        with _course_calls(name, fn, watch=not reference) as used:
            detail = body(fn)
    except NotAttempted:
        print(f"{name}: {NOT_ATTEMPTED}")
        return False
    except Failed as failure:
        print(f"✗ {name}: {failure.what}\n  hint: {failure.hint}")
        return False
    if reference:  # after Run All, a later cell's import has given the reference this name
        print(f"✓ {name}, the reference from helpers.solutions, not yours: {detail}\n  note: {REFERENCE_NOTE}")
    elif used:
        note = COURSE_NOTE.format(dotted=used[0], name=name)
        print(f"✓ {name}, the course's function ({used[0]}), not yours: {detail}\n  note: {note}")
    else:
        print(f"✓ {name}: {detail}")
    return True


# ------------------------------------------------------------------ the course's functions, called
def course_functions(name: str) -> dict[int, tuple[Callable, str]]:
    """id -> (function, dotted name) of the course's implementations of exercise `name`."""
    if name not in COURSE_FUNCTIONS:
        raise ValueError(f"no exercise named {name!r}; one of {', '.join(COURSE_FUNCTIONS)}")
    found = {}
    for dotted in (*COURSE_FUNCTIONS[name], f"helpers.solutions.{name}"):
        owner, attribute = _owner(dotted)
        function = vars(owner)[attribute] if isinstance(owner, type) else getattr(owner, attribute)
        found.setdefault(id(function), (function, dotted))  # one object under two names: the first
    return found


def _owner(dotted: str):
    """The module or class that holds the last part of a dotted name, and that part."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part)
        return owner, parts[-1]
    raise ValueError(f"{dotted!r} names no function of the course")


def _unwrapped(fn):
    while isinstance(fn, functools.partial | types.MethodType):
        fn = fn.func if isinstance(fn, functools.partial) else fn.__func__
    return fn


def _in_the_course(frame) -> bool:
    """Whether the code running in `frame` is the course's (a helpers module), not the learner's."""
    return frame.f_globals.get("__name__", "").split(".")[0] == "helpers"


def _recording(function: Callable, dotted: str, calls: list[str]) -> Callable:
    @functools.wraps(function)
    def shim(*args, **kwargs):
        if not _in_the_course(sys._getframe(1)):  # the course may use its own functions; the learner may not
            calls.append(dotted)
        return function(*args, **kwargs)

    return shim


@contextmanager
def _course_calls(name: str, fn, watch: bool = True) -> Iterator[list[str]]:
    """While the block runs, record every call that the learner's code makes into one of the
    course's implementations of exercise `name` (their dotted names, in order). The functions are
    replaced by recording shims wherever the learner's code can reach them: in the course's
    modules and classes, in fn's globals and closure, in fn's defaults; all restored after."""
    calls: list[str] = []
    if not watch:
        yield calls
        return
    targets = course_functions(name)
    if id(_unwrapped(fn)) in targets:  # fn is the course's function itself
        calls.append(targets[id(_unwrapped(fn))][1])
    shims = {key: _recording(function, dotted, calls) for key, (function, dotted) in targets.items()}
    undo: list[Callable[[], None]] = []
    try:
        for dotted in (*COURSE_FUNCTIONS[name], f"helpers.solutions.{name}"):
            owner, attribute = _owner(dotted)
            if isinstance(owner, type):
                undo.append(_patch_namespace(owner, vars(owner), shims, only=attribute))
        for module_name, module in list(sys.modules.items()):
            if module_name.split(".")[0] == "helpers" and module is not None:
                undo.append(_patch_namespace(module, vars(module), shims))
        undo += _patch_learners_code(_unwrapped(fn), shims)
        yield calls
    finally:
        for restore in reversed(undo):
            restore()


def _shim_for(value, shims: dict[int, Callable]):
    """The shim that stands in for `value` (a course function, or a method of it bound to an object), or None."""
    if id(value) in shims:
        return shims[id(value)]
    if isinstance(value, types.MethodType) and id(value.__func__) in shims:
        return types.MethodType(shims[id(value.__func__)], value.__self__)
    return None


def _patch_namespace(owner, namespace, shims: dict[int, Callable], only: str | None = None) -> Callable:
    """Put shims in place of the course functions bound in `namespace`: the attributes of `owner`
    (a module or a class), or, with owner None, a function's globals. Returns what undoes it."""
    replaced = {}
    for key, value in list(namespace.items()):
        shim = _shim_for(value, shims) if only in (None, key) else None
        if shim is not None:
            replaced[key] = (value, shim)
            _set(owner, namespace, key, shim)

    def restore():
        for key, (value, shim) in replaced.items():
            if namespace.get(key) is shim:  # unless the learner's code has bound the name anew
                _set(owner, namespace, key, value)

    return restore


def _set(owner, namespace, key: str, value) -> None:
    if owner is None:
        namespace[key] = value
    else:
        setattr(owner, key, value)  # a class's namespace is read-only: set through the class


def _patch_learners_code(fn, shims: dict[int, Callable]) -> list[Callable]:
    """Shims into what fn's own code reads: its globals, the cells of its closure, its defaults."""
    undo = []
    if isinstance(getattr(fn, "__globals__", None), dict):
        undo.append(_patch_namespace(None, fn.__globals__, shims))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            shim = _shim_for(cell.cell_contents, shims)
        except ValueError:  # an empty cell
            continue
        if shim is not None:
            value = cell.cell_contents
            cell.cell_contents = shim
            undo.append(lambda cell=cell, value=value: setattr(cell, "cell_contents", value))
    if getattr(fn, "__defaults__", None):
        defaults = fn.__defaults__
        fn.__defaults__ = tuple(_shim_for(d, shims) or d for d in defaults)
        undo.append(lambda: setattr(fn, "__defaults__", defaults))
    return undo
