"""lm-eval's own code for a model, run on this package's requests with a few of its parts changed,
and nothing of the model object or its class changed.

A view is an instance of a subclass of the model's class made for one call, whose attribute
dictionary *is* the model's: lm-eval's methods (any release's) run on it as on the model
(``super()``, ``isinstance`` and every attribute read or written as on the model itself), except
for the attributes the subclass overrides. The model, its class and every other task's requests
are untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _constant(value: Any) -> Callable[[Any], Any]:
    def get(self: Any) -> Any:
        return value

    return get


def view(lm: object, **overrides: Any) -> Any:
    """``lm`` with ``overrides``: a function is a method of the view (its first argument is the
    view, so it can call the class's own method through ``type(lm)``); any other value is a
    read-only attribute that shadows the model's own."""
    namespace = {
        name: value if callable(value) else property(_constant(value))
        for name, value in overrides.items()
    }
    cls = type(f"{type(lm).__name__}View", (type(lm),), namespace)
    seen: Any = object.__new__(cls)
    seen.__dict__ = lm.__dict__  # the model's own state, read and written as by the model
    return seen
