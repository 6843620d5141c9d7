"""The launchers a sweep can use, by name: the one registry of them.

A launcher is a class in a module of this package, listed below; its ``settings`` become its
command-line flags and the keys of its section in a models file, so adding one touches this
package (and its test) only.
"""

from __future__ import annotations

from wsc_tasks.sweep.launchers import local, ray_tasks, slurm
from wsc_tasks.sweep.launchers.base import Launcher, LauncherError, RunState, Setting

LAUNCHERS: dict[str, type[Launcher]] = {
    cls.name: cls for cls in (local.LocalLauncher, slurm.SlurmLauncher, ray_tasks.RayLauncher)
}
DEFAULT = "local"

__all__ = ["DEFAULT", "LAUNCHERS", "Launcher", "LauncherError", "RunState", "Setting"]
