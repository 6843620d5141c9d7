"""What every lm-eval patch of this package shares: its record (``Patch``: the lm-eval versions it
is for, the upstream report), the replacement that keeps lm-eval's original (``_replace``,
``original``) and the test of a task being ours."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("lm_eval.wsc_tasks.harness.patches")

_MARK = "_wsc_tasks_patch"
_ORIGINALS: dict[tuple[int, str], Any] = {}


@dataclass(frozen=True)
class Patch:
    """What one section patches, for which lm-eval versions, and where upstream discusses it."""

    name: str
    target: str  # the lm-eval attribute replaced (or the logger filtered)
    lm_eval: tuple[str, str]  # (lowest version checked, first version not allowed)
    upstream: tuple[str, ...] = ()


# lm-eval 0.4.13 is the release every section was written and tested against (the newest on PyPI
# when written); pyproject allows < 0.5, which is where internals may move.
TESTED = ("0.4.13", "0.5")
GITHUB = "https://github.com/EleutherAI/lm-evaluation-harness"


def is_our_task(task: Any) -> bool:
    return type(task).__module__.startswith("wsc_tasks.")


def _replace(owner: Any, name: str, new: Callable[..., Any], mark: str = _MARK) -> bool:
    """Set ``owner.name = new`` unless already patched; keep the original for ``original``.

    A second section wrapping the same function passes its own ``mark`` (its wrapper copies the
    marks of what it wraps with ``functools.wraps``, so each section still applies once)."""
    current = getattr(owner, name)
    if getattr(current, mark, False):
        return False
    _ORIGINALS.setdefault((id(owner), name), current)
    setattr(new, mark, True)
    if getattr(current, "__doc__", None) and not getattr(new, "__doc__", None):
        new.__doc__ = current.__doc__
    setattr(owner, name, new)
    return True


def original(owner: Any, name: str) -> Any:
    """lm-eval's own ``owner.name``, as it was before this module patched it."""
    return _ORIGINALS.get((id(owner), name), getattr(owner, name))
