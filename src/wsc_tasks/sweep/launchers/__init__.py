"""The launchers a sweep can use, by name: the one registry of them.

A launcher is a class decorated with ``@register`` in a module of this package; every module
here is imported below, so the decorator fills ``LAUNCHERS``. Its ``settings`` become its
command-line flags and the keys of its section in a models file, so adding one touches its own
module (and, at most, its own test; ``tests/test_launchers.py`` runs every registered launcher
through the same contract).
"""

from __future__ import annotations

import importlib
import pkgutil

from wsc_tasks.sweep.launchers.base import (
    LAUNCHERS,
    Launcher,
    LauncherError,
    RunState,
    Setting,
    register,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

DEFAULT = "local"

__all__ = ["DEFAULT", "LAUNCHERS", "Launcher", "LauncherError", "RunState", "Setting", "register"]
