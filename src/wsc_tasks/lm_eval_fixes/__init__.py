"""What this package does about lm-eval behaviours its results must not inherit (a registry).

Each module holds one entry, ``FIX`` (``base.Fix``): the behaviour, the remedy, the upstream
report, the lm-eval releases checked, and its check ``still_needed`` (lm-eval's own code on a
small case, True while lm-eval still behaves so; ``tests/test_lm_eval_fixes.py`` runs every one).
``FIXES`` lists them, found here as the package is imported (a new entry is a new module).

Two entries change lm-eval's code (``kind == "patch"``), applied by ``apply()`` when the tasks
load: ``request_types`` gives lm-eval's ``LM`` a method for each request type of this package (it
adds names lm-eval does not define and replaces nothing); ``class_task_metadata``, on lm-eval
0.4.10 and 0.4.11 only, offers a ``TaskManager``'s metadata to this package's task classes while
it loads them (a context variable no other task reads). Every other task runs as without this
package. The other entries are ``avoided``: this package's own code keeps them away from its
requests and results, and lm-eval is left as it is.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings

from wsc_tasks.lm_eval_fixes.base import AVOIDED, PATCH, SUPPORTED, Fix, installed_lm_eval, within
from wsc_tasks.lm_eval_fixes.class_task_metadata import offer_metadata
from wsc_tasks.lm_eval_fixes.request_types import serve_request_types

FIXES: tuple[Fix, ...] = tuple(
    importlib.import_module(f"{__name__}.{m.name}").FIX
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if m.name != "base"
)

__all__ = ["AVOIDED", "FIXES", "PATCH", "SUPPORTED", "Fix", "applies", "apply",
           "installed_lm_eval", "version_warnings", "within"]  # fmt: skip


def version_warnings(installed: str) -> list[str]:
    """The warning for an lm-eval release outside those this package supports, if it is."""
    if within(installed, SUPPORTED):
        return []
    low, below = SUPPORTED
    return [
        f"wsc_tasks: lm-eval {installed} is outside the releases >={low},<{below} this package "
        "supports and checked every lm-eval behaviour it relies on against; run "
        "tests/test_lm_eval_fixes.py to see which still hold (wsc_tasks/lm_eval_fixes/)"
    ]


def applies(fix: Fix) -> bool:
    """Whether the installed lm-eval is among the releases ``fix`` is for."""
    return within(installed_lm_eval(), fix.lm_eval)


def apply() -> bool:
    """The patches (``request_types``; ``class_task_metadata`` on the releases that need it),
    once per process; True if any was applied now."""
    added = serve_request_types()
    return offer_metadata() or added


for _line in version_warnings(installed_lm_eval()):
    warnings.warn(_line, stacklevel=2)
