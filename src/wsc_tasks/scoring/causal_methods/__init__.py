"""Causal scoring methods beyond the thesis's (``wsc_tasks.scoring.causal``), one module each.

A module here defines its ``causal.Formula`` (its requests, its value, its formula by hand) and
calls ``causal.register`` with its methods; every module is imported below, so the methods join
``causal.METHODS`` in the order of the modules' names, after the thesis's. The tests derive each
method's expected requests, forward passes and scores from it, so a new method touches its own
module only (and the outputs it adds to).
"""

from __future__ import annotations

import importlib
import pkgutil

from wsc_tasks.scoring.causal import METHODS

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["METHODS"]
