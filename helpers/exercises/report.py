"""How an exercise check reports: one line that starts with ✓ and gives a measured number, or
with ✗, naming the property that failed, and a hint on the next line. Never a traceback: an
exception raised by the learner's code is reported as one line too."""

from __future__ import annotations

from collections.abc import Callable

NOT_ATTEMPTED = "not attempted yet: the notebook continues with the reference implementation"
REFERENCE_NOTE = "a later cell imports the reference under this name: run your own cell again, then this check"


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


def call(fn: Callable, *args, case: str, hint: str):
    """Run the learner's `fn(*args)`; an exception becomes a one-line failure naming `case`."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise NotAttempted from None
    except TooManyCalls as stop:
        raise Failed(f"{stop.what} ({case})", stop.hint) from None
    except Exception as error:  # the learner's bug, reported, not raised
        raise Failed(f"your function raised {one_line(error)} ({case})", hint) from None


def _reference(name: str):
    from helpers import solutions  # here, not at the top: the solutions import helpers that import this module

    return getattr(solutions, name, None)


def run_check(name: str, fn, body: Callable[[Callable], str]) -> bool:
    """Run a check's body on the learner's `fn`, print its one report, return whether it passed."""
    if not callable(fn):
        print(f"✗ {name}: the check needs the function itself, as in check_{name}({name}); got {fn!r}")
        return False
    try:
        detail = body(fn)
    except NotAttempted:
        print(f"{name}: {NOT_ATTEMPTED}")
        return False
    except Failed as failure:
        print(f"✗ {name}: {failure.what}\n  hint: {failure.hint}")
        return False
    if fn is _reference(name):  # after Run All, a later cell's import has given the reference this name
        print(f"✓ {name}, the reference from helpers.solutions, not yours: {detail}\n  note: {REFERENCE_NOTE}")
    else:
        print(f"✓ {name}: {detail}")
    return True
