"""What this package does about lm-eval behaviours its results must not inherit (a registry).

Each module holds one entry, ``FIX`` (``base.Fix``): the behaviour, the remedy, the upstream
report, the lm-eval releases checked, and its check ``still_needed`` (lm-eval's own code on a
small case, True while lm-eval still behaves so; ``tests/test_lm_eval_fixes.py`` runs every one).
``FIXES`` lists them, found here as the package is imported (a new entry is a new module).

Only one entry changes lm-eval's code (``kind == "patch"``): ``request_types``, which gives
lm-eval's ``LM`` a method for each request type of this package, applied by ``apply()`` when the
tasks load. It adds names lm-eval does not define and replaces nothing, so every other task runs
as without this package. The others are ``avoided``: this package's own code keeps them away
from its requests and results, and lm-eval is left as it is.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from collections.abc import Sequence
from importlib import metadata

from wsc_tasks.lm_eval_fixes.base import AVOIDED, PATCH, Fix
from wsc_tasks.lm_eval_fixes.request_types import serve_request_types

FIXES: tuple[Fix, ...] = tuple(
    importlib.import_module(f"{__name__}.{m.name}").FIX
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if m.name != "base"
)

__all__ = ["AVOIDED", "FIXES", "PATCH", "Fix", "apply", "installed_lm_eval", "version_warnings"]


def _version(text: str) -> tuple[int, ...]:
    """``0.4.9.2`` → (0, 4, 9, 2); a pre-release or local suffix is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:4])


def installed_lm_eval() -> str:
    return metadata.version("lm_eval")


def version_warnings(installed: str, among: Sequence[Fix] = FIXES) -> list[str]:
    """One line per entry (of ``among``) whose checked lm-eval releases do not hold
    ``installed``."""
    found = _version(installed)
    lines = []
    for fix in among:
        low, below = fix.lm_eval
        if not _version(low) <= found < _version(below):
            lines.append(
                f"wsc_tasks: lm-eval {installed} is outside the releases >={low},<{below} that "
                f"{fix.name} (wsc_tasks/lm_eval_fixes/{fix.name}.py) was checked on; run "
                "tests/test_lm_eval_fixes.py to see whether it still holds"
            )
    return lines


def apply() -> bool:
    """The one patch (``request_types``), once per process; True if applied now."""
    return serve_request_types()


for _line in version_warnings(installed_lm_eval()):
    warnings.warn(_line, stacklevel=2)
