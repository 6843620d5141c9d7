"""No module but the metric registry takes a metric name apart or tests a task name's spelling.

A metric's name is written by ``registry.Key.name`` and read by ``registry.Key.parse``; a task is
found by its catalog dataset and the kind of metrics it reports (``runs.folders.Run.task_on``).
This test reads every module of ``wsc_tasks`` and fails on a string operation that would recognise
a metric or task by a piece of its name: ``startswith``/``endswith``/``removeprefix``/``split``…
with an argument that looks like a piece of a metric or dataset name, ``"<piece>" in name``, and
slicing by ``len("<piece>")``. A piece is a literal that names or splits a record, a scoring
method, a variant or a catalog dataset (``"acc_"``, ``"_to_"``, ``"reid250"``, ``",none"``…).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import wsc_tasks
from wsc_tasks.data import catalog
from wsc_tasks.metrics import registry
from wsc_tasks.scoring import families

ROOT = Path(wsc_tasks.__file__).parent
# the metric registry: its index and names, its record type, its records
REGISTRY = {ROOT / "metrics" / m for m in ("registry.py", "record.py", "definitions.py")}
# (module, a piece of the offending line): why it may stay
ALLOWED = {
    ("data/dyad_specs.py", 'base.startswith("reid250x2")'): "the dataset registry names its own "
    "datasets: Reid250×2's files hold two problems per Reid250 problem",
}

STRING_METHODS = {
    "startswith", "endswith", "removeprefix", "removesuffix", "split", "rsplit", "partition",
    "rpartition", "find", "rfind", "index", "rindex", "count", "replace",
}  # fmt: skip
SEPARATORS = ("_to_", "_cat_", "_stderr", ",none")


def _vocabulary() -> tuple[set[str], set[str]]:
    """(whole names: records, methods, variants, datasets; words of the record names)."""
    names = set(registry.METRICS) | set(registry.SUBSETS)
    names |= {m for family in families.FAMILIES.values() for m in family.methods}
    names |= set(catalog.SPECS) | set(catalog.PAIR_SPECS)
    words = {w for record in registry.METRICS for w in record.split("_") if len(w) > 2}
    return names, words


NAMES, WORDS = _vocabulary()


def is_piece(text: str) -> bool:
    """A literal that names or splits metric or dataset names (see the module docstring): one
    with a separator, a name or a name's beginning, or an underscored word of a record name."""
    if any(s in text for s in SEPARATORS):
        return True
    stripped = text.strip("_,")
    if stripped in NAMES or any(stripped.startswith(f"{n}_") for n in NAMES):
        return True
    underscored = text != stripped and stripped
    return bool(underscored) and any(w in WORDS for w in re.split(r"[^A-Za-z0-9]+", stripped))


def is_fragment(text: str) -> bool:
    """A piece that is not a whole record or dataset name (``"acc_"``, ``"equal_len"``)."""
    return is_piece(text) and text not in set(registry.METRICS) | set(catalog.SPECS)


def _literals(node: ast.AST) -> list[str]:
    """The string constants in an expression (a literal, a tuple of them, an f-string…)."""
    return [
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def offences(path: Path) -> list[tuple[int, str]]:
    """(line, source) of every string operation of ``path`` on a piece of a metric name."""
    source = path.read_text(encoding="utf-8")
    found = []
    for node in ast.walk(ast.parse(source)):
        bad = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in STRING_METHODS:
                arguments = [*node.args, *(k.value for k in node.keywords)]
                bad = any(is_piece(t) for a in arguments for t in _literals(a))
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            left = node.left
            if isinstance(left, ast.JoinedStr):
                bad = any(is_piece(t) for t in _literals(left))
            elif isinstance(left, ast.Constant) and isinstance(left.value, str):
                bad = is_fragment(left.value)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            bounds = [b for b in (node.slice.lower, node.slice.upper) if b is not None]
            lengths = [
                b
                for bound in bounds
                for b in ast.walk(bound)
                if isinstance(b, ast.Call) and isinstance(b.func, ast.Name) and b.func.id == "len"
            ]
            bad = any(is_piece(t) for call in lengths for t in _literals(call))
        if bad:
            found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def test_no_module_outside_the_registry_takes_a_metric_name_apart():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path in REGISTRY:
            continue
        module = path.relative_to(ROOT).as_posix()
        for line, text in offences(path):
            if not any(module == m and piece in text for m, piece in ALLOWED):
                found.append(f"{module}:{line}: {text}")
    assert found == [], "ask wsc_tasks.metrics.registry (Key.parse, task_kind…) instead:\n" + (
        "\n".join(found)
    )


def test_every_allowance_is_still_needed():
    for module, piece in ALLOWED:
        assert any(piece in text for _, text in offences(ROOT / module)), (module, piece)


@pytest.mark.parametrize(
    "code",
    [
        'name.startswith("acc_")',
        'key.endswith(",none")',
        'name.removesuffix("_consistency")',
        'n.startswith("reid250")',
        'first, second = suffix.split("_to_", 1)',
        'suffix.startswith(("_weak_", "_strict_"))',
        '"_stderr" not in key',
        '"equal_len" in key',
        'f"schema_{n}" in names',
        'n[len("acc_") :]',
        'name.removeprefix("wsc266_")',
    ],
)
def test_the_scan_finds_what_the_readers_used_to_do(code, tmp_path):
    module = tmp_path / "reader.py"
    module.write_text(code + "\n", encoding="utf-8")
    assert len(offences(module)) == 1, code


@pytest.mark.parametrize(
    "code",
    [
        '"acc" in task.forms',  # an exact name: a dict lookup, not a piece of a name
        'text.startswith(" ")',
        'path.name.endswith(".yaml")',
        'str(key).rsplit("_", 1)',
        'path.name[len("results_") : -len(".json")]',
    ],
)
def test_the_scan_lets_other_string_operations_be(code, tmp_path):
    module = tmp_path / "other.py"
    module.write_text(code + "\n", encoding="utf-8")
    assert offences(module) == [], code


# modules that spell the accuracy records by hand, each with its count: ``ratios`` holds the forms
# the registry's records are made of (the registry imports it); ``foreign.pinned`` names the
# verdict field of lm-eval's samples and the Open LLM Leaderboard's details, another harness's
SPELT = {"metrics/ratios.py": 2, "runs/foreign/pinned.py": 1}


def _spelt(path: Path) -> int:
    """How many string constants of ``path`` are exactly an accuracy record's name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {registry.ACC, registry.SCHEMA_ACC}
    return sum(isinstance(n, ast.Constant) and n.value in names for n in ast.walk(tree))


def test_the_accuracy_records_are_named_through_the_registry():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if path not in REGISTRY and _spelt(path):
            found[module] = _spelt(path)
    assert {m: n for m, n in found.items() if SPELT.get(m, 0) < n} == {}, (
        "write registry.ACC / registry.SCHEMA_ACC (or a registry.Key) instead"
    )


def test_an_unknown_metric_name_raises_instead_of_skipping():
    from wsc_tasks.report.estimates import outcomes

    with pytest.raises(KeyError, match="no metric named 'shcema_acc'"):
        outcomes(None, "shcema_acc")  # type: ignore[arg-type]


def test_an_unknown_record_has_no_form():
    from wsc_tasks.report.estimates import form

    with pytest.raises(KeyError, match="no metric record 'half_slved'"):
        form("half_slved")
