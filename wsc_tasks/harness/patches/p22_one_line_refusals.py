"""lm-eval patch 22, ``one_line_refusals``: what it changes and why, then the change."""

from __future__ import annotations

import os
import sys
from types import TracebackType

from wsc_tasks.harness.patches.base import TESTED, Patch

# lm-eval's CLI (``lm_eval.__main__.cli_evaluate`` and ``HarnessCLI.execute``) catches nothing, so
# a refusal of this package's tasks under plain ``lm_eval --include_path … --tasks …`` (a flag they
# cannot honour, a metadata key or value they do not take) ends in Python's traceback: 50 lines
# through lm-eval's loader for a one-line reason. Once this package's tasks load, an uncaught
# refusal of theirs (``REFUSALS``) is printed as its one line on stderr, as ``wsc-tasks`` prints
# it; every other exception, and any with ``WSC_TASKS_VERBOSE=1``, keeps the traceback. The
# hook wraps whatever ``sys.excepthook`` was (it only decides how to print; the exit status stays
# Python's 1). No upstream issue found; upstream, a task could raise a "configuration error" the
# CLI prints as one line.
VERBOSE_ENV = "WSC_TASKS_VERBOSE"


def _refusals() -> tuple[type[BaseException], ...]:
    from wsc_tasks.harness.flags import UnsupportedFlag
    from wsc_tasks.harness.metadata_keys import BadValue, UnknownKey
    from wsc_tasks.scoring.methods import ScoringError

    return (UnsupportedFlag, UnknownKey, BadValue, ScoringError)


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"lm_eval: error: {text} ({VERBOSE_ENV}=1 for the traceback)"


class OneLineRefusals:
    """A ``sys.excepthook``: this package's refusals as one line, the rest as before."""

    def __init__(self, previous: object) -> None:
        self.previous = previous

    def __call__(
        self, kind: type[BaseException], error: BaseException, trace: TracebackType | None
    ) -> None:
        verbose = os.environ.get(VERBOSE_ENV, "") not in ("", "0")
        if isinstance(error, _refusals()) and not verbose:
            print(one_line(error), file=sys.stderr)
            return
        previous = self.previous if callable(self.previous) else sys.__excepthook__
        previous(kind, error, trace)


def one_line_refusals() -> bool:
    """Section 22, once per process; True if the hook was installed now."""
    if isinstance(sys.excepthook, OneLineRefusals):
        return False
    sys.excepthook = OneLineRefusals(sys.excepthook)
    return True


def lm_evals_cli_catches_no_error() -> bool:
    """lm-eval's CLI lets every exception through to Python's traceback: neither its entry point
    nor the command it dispatches to handles one."""
    import inspect

    from lm_eval import __main__ as entry
    from lm_eval._cli import harness

    sources = [inspect.getsource(entry.cli_evaluate), inspect.getsource(harness)]
    return not any("except" in source or "excepthook" in source for source in sources)


PATCH = Patch(
    "one_line_refusals",
    "sys.excepthook under lm_eval's CLI",
    TESTED,
    still_needed=lm_evals_cli_catches_no_error,
)
