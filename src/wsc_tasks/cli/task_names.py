"""Unknown ``--tasks`` names, found in about a second instead of after lm-eval's task index.

lm-eval's ``TaskManager`` parses every one of its ~14,000 task YAMLs (with their ``include:``
chains) before it can say ``Tasks not found`` (about 14 s of CPU, a minute on a loaded machine).
Every name it indexes is the value of a ``task:``, ``group:`` or ``tag:`` key written in some file
of its task folders (the file itself or one it includes, which may have any name), so a plain text
scan of those files for such keys gives a *superset* of its names in about a second. A name that
is not in the superset (and matches nothing in it as a glob) is certainly unknown to lm-eval: it is
refused at once with the closest names, before any model or dataset is loaded. A name in the
superset goes on to lm-eval, which decides as before. ``tests/test_task_names.py`` checks the
superset against lm-eval's own index, so the day lm-eval finds names elsewhere the test fails.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from pathlib import Path

# ``task: name``, ``"tag": "name"``, ``- task: name`` (a group's inline task), ``tag: [a, b]``,
# and a block list on the lines below (``tag:\n  - a\n  - b``)
_KEY = re.compile(
    rb"^[ \t-]*[\"']?(?:task|group|tag)[\"']?[ \t]*:[ \t]*"
    rb"(\[[^\]]*\]|[^\n#]*)((?:\n[ \t]*-[^\n]*)*)",
    re.M,
)
_WORD = re.compile(rb"[^\s\"',\[\]{}\-][^\s\"',\[\]{}]*")
_NOT_CONFIG = (".py", ".pyc", ".md", ".json", ".jsonl", ".tsv", ".csv", ".txt", ".sh", ".jpg")
_IGNORE_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git"}
_GLOB = re.compile(r"[*?\[]")
_NAME = re.compile(r"^[A-Za-z0-9][\w.+-]{2,}$")  # what a suggestion may look like


def names_in(folders: Iterable[Path]) -> set[str]:
    """Every word written as the value of a ``task``/``group``/``tag`` key in a file under
    ``folders`` (Python, Markdown and data files skipped): a superset of the names lm-eval
    indexes there."""
    found: set[str] = set()
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d not in _IGNORE_DIRS]
            for name in files:
                if name.endswith(_NOT_CONFIG):
                    continue
                try:
                    with open(os.path.join(root, name), "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                for match in _KEY.finditer(data):
                    for part in match.groups():
                        found.update(w.decode("utf-8", "replace") for w in _WORD.findall(part))
    return found


def lm_eval_tasks_folder() -> Path:
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def asked_tasks(argv: list[str]) -> list[str] | None:
    """The names ``--tasks``/``-t`` gives (space- or comma-separated, as lm-eval reads them);
    None when the flag is absent."""
    found: list[str] | None = None
    taking = False
    for arg in argv:
        if arg in ("--tasks", "-t"):
            found, taking = [] if found is None else found, True
        elif arg.startswith("--tasks="):
            found = (found or []) + [arg.split("=", 1)[1]]
            taking = False
        elif taking and not arg.startswith("-"):
            assert found is not None
            found.append(arg)
        else:
            taking = False
    if found is None:
        return None
    return [name.strip() for text in found for name in text.split(",") if name.strip()]


def needs_lm_eval(name: str) -> bool:
    """A spec lm-eval resolves without its index, or one this check cannot judge: a YAML file
    or glob of files, or an existing folder."""
    return name.endswith(".yaml") or Path(name).is_dir()


def unknown(names: Iterable[str], known: set[str]) -> list[str]:
    """The names that are neither in ``known`` nor, as a glob, match any of it."""
    missing = []
    for name in names:
        if name in known or needs_lm_eval(name):
            continue
        if _GLOB.search(name) and any(True for _ in _matching(name, known)):
            continue
        missing.append(name)
    return missing


def _matching(pattern: str, known: set[str]) -> Iterable[str]:
    import fnmatch

    return (n for n in known if fnmatch.fnmatchcase(n, pattern))


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` names like ``name`` (difflib's ratio ≥ 0.6), the closest first."""
    words = [c for c in candidates if _NAME.match(c)]
    return difflib.get_close_matches(name, words, n=n, cutoff=0.6)


def message(missing: list[str], ours: set[str], theirs: set[str]) -> str:
    """One line: each unknown name with the closest of ``ours`` (this package's and the user's
    ``--include_path``) and of ``theirs`` (lm-eval's), marked ``(lm-eval)``."""
    parts = []
    for name in missing:
        mine = closest(name, ours)
        other = [c for c in closest(name, theirs - ours) if c not in mine]
        near = [*mine, *(f"{c} (lm-eval)" for c in other)]
        parts.append(f"{name} (did you mean {', '.join(near)}?)" if near else name)
    return (
        f"wsc-tasks: --tasks: unknown task{'s' if len(missing) > 1 else ''} {'; '.join(parts)}; "
        "this package's tasks are listed in task_configs/README.md, lm-eval's by `lm-eval ls tasks`"
    )


def check(argv: list[str], our_folder: Path, user_folders: list[Path]) -> None:
    """Raise ``ValueError`` naming every unknown ``--tasks`` name and the closest known ones.

    This package's folder and the user's ``--include_path`` folders are scanned first; lm-eval's
    own folder only when a name is not found there."""
    asked = asked_tasks(argv)
    if not asked:
        return
    ours = names_in([our_folder, *user_folders])
    missing = unknown(asked, ours)
    if not missing:
        return
    theirs = names_in([lm_eval_tasks_folder()])
    missing = unknown(missing, theirs)
    if missing:
        raise ValueError(message(missing, ours, theirs))


# -- what this package's tasks send -------------------------------------------------------------
def output_types() -> dict[str, frozenset[str]]:
    """Every task and group of this package with the lm-eval output types its tasks send (a
    group: its members', through nested groups), as its YAMLs declare them (``tasks.configs``)."""
    from wsc_tasks.tasks.configs import configs

    every = configs()

    def of(name: str, path: tuple[str, ...] = ()) -> frozenset[str]:
        found = every.get(name)
        if found is None or name in path:
            return frozenset()
        if not found.group:
            return frozenset({str(found.config.get("output_type", "loglikelihood"))})
        members = [m for m in found.config.get("task", []) if isinstance(m, str)]
        return frozenset().union(*(of(m, (*path, name)) for m in members))

    return {name: of(name) for name in every}
