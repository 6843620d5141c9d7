"""The interface every launcher implements: submit models' runs, learn their state, cancel them.

A launcher only places runs; what a run does (``runner.run_one``) and what counts as finished
(the model's folder) are the same for all. Each launcher declares its settings once
(``Setting``): the command line gets a ``--flag`` for each, and the models file a section named
after the launcher with the same keys.
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import RunState as RunState  # re-exported: the launchers' states
from wsc_tasks.sweep.options import SweepOptions


class LauncherError(ValueError):
    """A launcher that cannot start: a bad setting, a missing scheduler; the message says why."""


def _boolean(text: str) -> bool:
    lowered = str(text).lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _lines(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else (str(value),)


# how a setting is given: --name value; flag (--name alone is true); lines (repeatable --name,
# a list)
SettingForm = Literal["value", "flag", "lines"]


@dataclass(frozen=True)
class Setting:
    """One launcher setting: ``--<name>`` on the command line, ``<name>:`` in its section."""

    name: str
    help: str
    parse: Callable[[Any], Any] = str
    default: Any = None
    kind: SettingForm = "value"
    command_line_only: bool = False  # e.g. --dry-run: not a property of a models file
    unset: str = ""  # what happens when it is not given and has no default (for the help)

    @property
    def shown_help(self) -> str:
        """The help with the default: the value, or what happens without one."""
        if self.kind != "value":
            return self.help
        if self.default is not None:
            return (
                f"{self.help} (default {self.default:g})"
                if isinstance(self.default, float)
                else f"{self.help} (default {self.default})"
            )
        return f"{self.help} (default: {self.unset})" if self.unset else self.help

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    def value(self, given: Any, where: str) -> Any:
        """``given`` as this setting's type, or a one-line error naming ``where`` and the fix."""
        try:
            if self.kind == "lines":
                return _lines(given)
            if self.kind == "flag":
                return given if isinstance(given, bool) else _boolean(given)
            return self.parse(given)
        except (TypeError, ValueError) as error:
            raise LauncherError(f"{where}: {error}") from None


def flag_setting(name: str, help: str, command_line_only: bool = False) -> Setting:
    return Setting(name, help, _boolean, False, "flag", command_line_only)


def positive_int(text: str | int) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"expected a positive whole number, got {text!r}")
    return value


def count(text: str | int) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"expected 0 or more, got {text!r}")
    return value


def fraction(text: str | int | float) -> float:
    value = float(text)
    if value < 0:
        raise ValueError(f"expected 0 or more, got {text!r}")
    return value


class Launcher(ABC):
    name: ClassVar[str]
    help: ClassVar[str]
    settings: ClassVar[tuple[Setting, ...]] = ()
    waits: bool = True  # False: submit and return; a later sweep on the folder collects
    dry_run: bool = False  # True: show what would be submitted, submit nothing
    poll_s: float = 1.0  # seconds between two looks at the runs' states
    settle_s: float = 0.0  # how long an ended run may take to show its result in its folder

    def __init__(self, values: Mapping[str, Any], options: SweepOptions) -> None:
        self.values = dict(values)
        self.options = options

    @classmethod
    def resolve(
        cls, section: Mapping[str, Any], where: str, given: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Settings from the models file's section (``where``: its file and line), then the
        command line's ``given`` on top, then the defaults."""
        known = {s.name: s for s in cls.settings if not s.command_line_only}
        values = {s.name: () if s.kind == "lines" else s.default for s in cls.settings}
        for key, value in section.items():
            setting = known.get(str(key).replace("_", "-"))
            if setting is None:
                close = difflib.get_close_matches(str(key), list(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise LauncherError(
                    f"{where}: {cls.name}: unknown setting {key!r} "
                    f"(settings: {', '.join(known) or 'none'}){hint}"
                )
            values[setting.name] = setting.value(value, f"{where}: {cls.name}: {key}")
        for setting in cls.settings:
            if setting.name in given:
                values[setting.name] = setting.value(given[setting.name], setting.flag)
        return values

    def setting(self, name: str) -> Any:
        """Setting ``name``'s value: as resolved, or, where a subclass leaves the setting out of
        its ``settings``, the default of the class up its line that declares it. So a variant of
        a launcher keeps, adds or drops settings without copying what reads them."""
        if name in self.values:
            return self.values[name]
        for cls in type(self).__mro__:
            for setting in getattr(cls, "settings", ()):
                if setting.name == name:
                    return () if setting.kind == "lines" else setting.default
        raise KeyError(f"launcher {self.name}: no setting {name!r}")

    @classmethod
    def unavailable(cls, values: Mapping[str, Any]) -> str | None:
        """What this machine lacks to run the launcher with ``values`` (a scheduler's commands, an
        optional package) and how to get it; None when nothing is missing."""
        return None

    def running_at_once(self) -> int | None:
        """How many models can run at once (None: no cap): bounds the Hub snapshots on disk."""
        return None

    def adopt(self, specs: Sequence[ModelSpec]) -> set[str]:
        """The models whose run an earlier sweep left queued or running (not submitted again)."""
        return set()

    @abstractmethod
    def submit(self, specs: Sequence[ModelSpec]) -> None:
        """Start (or queue) the runs of these models."""

    @abstractmethod
    def states(self) -> dict[str, RunState]:
        """Every submitted or adopted model's run."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop every run this sweep submitted or adopted (Ctrl-C)."""

    def close(self) -> None:  # noqa: B027 - most launchers hold nothing
        """Release what the launcher holds once the sweep is over."""


# every launcher by name, filled by ``register`` as the modules of this package are imported
LAUNCHERS: dict[str, type[Launcher]] = {}


L = TypeVar("L", bound=type[Launcher])


def register(cls: L) -> L:
    """Class decorator: make ``cls`` a launcher of ``wsc-tasks sweep --launcher <cls.name>``."""
    name = getattr(cls, "name", "")
    if not name or not getattr(cls, "help", ""):
        raise TypeError(f"launcher {cls.__qualname__}: give it a name and a help line")
    if LAUNCHERS.get(name, cls) is not cls:
        raise TypeError(f"two launchers are named {name!r}: {LAUNCHERS[name]} and {cls}")
    flags = [setting.name for setting in cls.settings]
    if len(set(flags)) != len(flags):
        raise TypeError(f"launcher {name}: a setting is declared twice: {flags}")
    LAUNCHERS[name] = cls
    return cls
