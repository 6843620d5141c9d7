"""The models file of a sweep: which models to run, and settings for the launcher that runs them.

YAML: a list of ``{name, model (default hf), model_args, metadata}``, or a mapping with that list
under ``models:`` and one section of settings per launcher (``slurm: {partition: gpu, …}``);
``model_args: default`` is the embedded SmolLM2-135M, and ``default,seed=1`` for ``wsc-chance``
gives the chance model SmolLM2's tokens. Text: one model a line, ``NAME MODEL MODEL_ARGS
[METADATA_JSON]``, or only a Hub id or path (``hf``, ``pretrained=``). Every error names the file
and line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks.markup import has_hidden, visible
from wsc_tasks.paths import with_default_model

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
KEYS = ("name", "model", "model_args", "metadata")


class ModelsFileError(ValueError):
    """A models file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    model: str = "hf"
    model_args: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    # set by the sweep, not the file: the Hub commit the run is pinned to (``sweep.hub.pin``)
    hub: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelsFile:
    """The models, and the launcher sections of a YAML file with the line each starts on."""

    path: Path
    specs: list[ModelSpec]
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    hub: dict[str, Any] | None = None  # a Hub query (``hub:``) whose models join ``specs``

    def where(self, section: str) -> str:
        """``FILE:LINE`` of a section, for error messages."""
        line = self.lines.get(section)
        return f"{self.path}:{line}" if line else str(self.path)


def _spec(entry: object, where: str) -> ModelSpec:
    """One model of a models file (a YAML entry, a mapping or a name; a line's fields)."""
    if isinstance(entry, str):
        entry = {"model_args": f"pretrained={entry}", "name": Path(entry).name}
    if not isinstance(entry, dict) or not entry.get("name"):
        raise ModelsFileError(f"{where}: a model needs at least a name (got {entry!r})")
    unknown = set(entry) - set(KEYS)
    if unknown:
        known = ", ".join(KEYS)
        raise ModelsFileError(f"{where}: unknown key(s) {sorted(unknown)} (keys: {known})")
    args = entry.get("model_args", "")
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ModelsFileError(f"{where}: metadata must be a mapping")
    spec = ModelSpec(str(entry["name"]), str(entry.get("model", "hf")), str(args), metadata)
    hidden = has_hidden(spec.name)
    if hidden:  # a newline would split a table row of the leaderboard, a line of its findings
        raise ModelsFileError(
            f"{where}: model name '{visible(spec.name)}' has a control character ({hidden}): "
            "write the name on one line, without tabs or direction marks"
        )
    if not NAME.match(spec.name):
        raise ModelsFileError(
            f"{where}: model name {spec.name!r} is used as a folder name: letters, digits, "
            "'.', '_', '-' only"
        )
    return spec


def _line(node: yaml.Node | None) -> int | None:
    return node.start_mark.line + 1 if node is not None else None


def _read_yaml(path: Path, text: str) -> ModelsFile:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark, context = error.problem_mark or error.context_mark, error.context_mark
        at = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        where = ""
        if error.context and context is not None and context is not mark:
            opened = f"line {context.line + 1}, column {context.column + 1}"
            where = f" ({error.context} at {opened})"
        raise ModelsFileError(f"{at}: not valid YAML: {error.problem or error}{where}") from None
    except yaml.YAMLError as error:
        raise ModelsFileError(f"{path}: not valid YAML: {error}") from None
    sections: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    items: list[yaml.Node] = []
    if isinstance(data, dict) and isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            lines[str(key.value)] = _line(key) or 1
            if key.value == "models" and isinstance(value, yaml.SequenceNode):
                items = value.value
        entries = data.get("models")
        for name, section in data.items():
            if name == "models":
                continue
            if not isinstance(section, dict):
                raise ModelsFileError(f"{path}:{lines[str(name)]}: {name}: expected a mapping")
            sections[str(name)] = section
    else:
        entries = data
        items = root.value if isinstance(root, yaml.SequenceNode) else []
    hub = sections.pop("hub", None)
    if entries is None and hub is not None:
        entries = []
    if not isinstance(entries, list):
        raise ModelsFileError(f"{path}: expected a list of models (or models: [...])")
    specs = []
    for i, entry in enumerate(entries):
        line = _line(items[i]) if i < len(items) else None
        specs.append(_spec(entry, f"{path}:{line}: model {i + 1}" if line else f"{path}: model"))
    return ModelsFile(path, specs, sections, lines, hub)


def _read_text(path: Path, text: str) -> ModelsFile:
    specs: list[ModelSpec] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split(None, 3)
        where = f"{path}:{number}"
        if len(fields) == 1:
            specs.append(_spec(fields[0], where))
            continue
        if len(fields) == 2:
            raise ModelsFileError(f"{where}: expected NAME MODEL MODEL_ARGS [METADATA_JSON]")
        entry: dict[str, object] = dict(zip(("name", "model", "model_args"), fields, strict=False))
        if len(fields) == 4:
            try:
                entry["metadata"] = json.loads(fields[3])
            except json.JSONDecodeError as error:
                raise ModelsFileError(f"{where}: metadata is not JSON ({error})") from error
        specs.append(_spec(entry, where))
    return ModelsFile(path, specs)


def read_models_file(path: str | Path) -> ModelsFile:
    """The models (and, in YAML, the launcher sections) of a models file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ModelsFileError(f"{path}: cannot be read ({error})") from None
    found = _read_yaml(path, text) if path.suffix in (".yaml", ".yml") else _read_text(path, text)
    names = [s.name for s in found.specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ModelsFileError(f"{path}: model name(s) {duplicates} appear more than once")
    if not found.specs and found.hub is None:
        raise ModelsFileError(f"{path}: no models")
    return found


def read_models(path: str | Path) -> list[ModelSpec]:
    """The models of a models file (see the module docstring)."""
    return read_models_file(path).specs


def resolved_args(spec: ModelSpec) -> str:
    """The model's arguments, ``default`` being the embedded model's (``with_default_model``)."""
    return with_default_model(spec.model_args)
