"""A short Markdown summary of an lm-eval results file: one row per wsc_tasks task or group."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from wsc_tasks.lm_eval_types import groups_of
from wsc_tasks.markup import code_span, escape_markdown
from wsc_tasks.metrics import associativity, registry
from wsc_tasks.metrics.registry import ACC, BLANK_AT_END, EQUAL_LEN, SCHEMA_ACC, Key, TaskKind
from wsc_tasks.paths import hide_model_paths, portable
from wsc_tasks.runs.folders import (
    RunError,
    TaskRun,
    read_results,
    read_task,
    results_files,
    samples_file,
)

COLUMNS = tuple(Key(m.name) for m in registry.in_summary("schemas"))
TOKEN_COLUMNS = (
    *(Key(record, subset=EQUAL_LEN) for record in (ACC, SCHEMA_ACC, "share")),
    Key("share", subset=BLANK_AT_END),
)


def newest_results(path: str | Path) -> Path:
    """The newest ``results_*.json`` at or below ``path`` (lm-eval nests them by model name;
    ``--output_path X.json`` writes ``X_<date>.json``)."""
    path = Path(path)
    if path.is_file():
        return path
    found = results_files(path)
    if not found:
        raise FileNotFoundError(f"no lm-eval results_*.json under {path}; run with --output_path")
    return found[-1]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def markdown(results_file: str | Path, keep_paths: bool = False) -> str:
    """The summary; an absolute model path reads ``<last component>`` unless ``keep_paths``."""
    data = read_results(Path(results_file))
    results = {name: registry.reported(row) for name, row in data["results"].items()}
    groups = groups_of(data)
    unfilled = _fill_from_samples(Path(results_file), data, results, groups)
    lines = [
        "| task | " + " | ".join(c.name for c in COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for name, row in results.items():
        if not any(c in row for c in COLUMNS):
            continue
        shown = _text(name)  # a task's name, from the results file: text, not Markdown
        label = f"**{shown}** (group: unweighted mean of its tasks)" if name in groups else shown
        cells = [_cell(row.get(c)) for c in COLUMNS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if unfilled:
        lines += ["", unfilled]
    lines += _method_table(results, groups)
    # what each task's documents are; a group row averages tasks of several kinds, so has none
    kinds = {n: None if n in groups else registry.task_kind(row) for n, row in results.items()}
    lines += _consistency_tables(results, kinds)
    lines += _plausibility_table(results, kinds)
    config = data.get("config", {})
    model = config.get("model_args") or config.get("model")
    head = [
        f"Results of {code_span(Path(results_file).name)}",
        "",
        f"- model: {code_span(config.get('model'))} with {code_span(_portable(model, keep_paths))}",
        f"- lm-eval {data.get('lm_eval_version', '?')}, "
        f"batch size {config.get('batch_size')}, device {config.get('device')}",
        "",
    ]
    return "\n".join(head + lines) + "\n"


def _fill_from_samples(
    path: Path, data: dict[str, Any], results: dict[str, Row], groups: Collection[str]
) -> str:
    """Columns lm-eval did not aggregate (half_solved, anti_solved of a run without ``metrics:
    all``) computed from each task's samples file, in place; a line on what stays empty, if any."""
    empty: list[tuple[str, Key]] = []
    for name, row in results.items():
        wanted = [c for c in COLUMNS if c not in row and c.metric.form is not None]
        if name in groups or not wanted or not any(c in row for c in COLUMNS):
            continue
        samples = samples_file(path, name)
        try:
            task = read_task(name, dict(data["results"][name]), samples) if samples else None
        except RunError:
            task = None
        found = registry.reported(task.row) if task is not None else {}
        outcomes = _headline_outcomes(task) if task is not None else None
        for column in wanted:
            if column in found:
                row[column] = found[column]
            elif outcomes and (form := column.metric.form) is not None:
                row[column] = form(outcomes)  # not logged: the same per-document outcomes as acc's
        empty += [(name, c) for c in wanted if c not in row]
    if not empty:
        return ""
    names = ", ".join(c.name for c in COLUMNS if c in {column for _, column in empty})
    tasks = len({name for name, _ in empty})
    return (
        f"Empty cells: {names} were not aggregated by lm-eval (a run without `metrics: all`) and "
        f"{tasks} task(s) have no readable samples file to compute them from "
        "(run with --log_samples)."
    )


def _headline_outcomes(task: TaskRun) -> list[Any] | None:
    """The per-document outcomes of the headline method (those of an unvaried accuracy record)."""
    for key in registry.parse_all(task.values).values():
        if not key.variant and key.metric.value == registry.OUTCOME and key.metric.form:
            return task.values[key.name]
    return None


def _portable(model_args: Any, keep_paths: bool = False) -> str:
    """Model arguments without this machine's site-packages prefix (nor model paths)."""
    text = portable(json.dumps(model_args) if isinstance(model_args, dict) else str(model_args))
    return text if keep_paths else hide_model_paths(text)


Row = dict[Key, Any]


def _method_table(results: dict[str, Row], groups: Collection[str]) -> list[str]:
    """acc / schema_acc of every scoring method, and the equal-length figures, per task."""
    tasks = [n for n, row in results.items() if n not in groups and any(c in row for c in COLUMNS)]
    methods = sorted({m for name in tasks for m in registry.methods(results[name])})
    lines: list[str] = []
    if methods:
        rows = {
            name: [
                f"{_cell(results[name].get(Key(ACC, method=m)))} / "
                f"{_cell(results[name].get(Key(SCHEMA_ACC, method=m)))}"
                for m in methods
            ]
            for name in tasks
        }
        title = "Accuracy by scoring method (`acc_<method>` / `schema_acc_<method>`):"
        lines += _table(title, methods, rows)
    if any(TOKEN_COLUMNS[0] in results[name] for name in tasks):
        rows = {name: [_cell(results[name].get(c)) for c in TOKEN_COLUMNS] for name in tasks}
        title = "Headline method on problems with equal-length answers, and token facts:"
        lines += _table(title, [c.name for c in TOKEN_COLUMNS], rows)
    return lines


def _table(title: str, columns: list[str], rows: dict[str, list[str]]) -> list[str]:
    lines = [
        "",
        title,
        "",
        "| task | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    return lines + [
        f"| {_text(name)} | " + " | ".join(cells) + " |" for name, cells in rows.items()
    ]


def _text(name: str) -> str:
    """A task's name in a Markdown table: escaped (``markup``), its ``|`` too."""
    return escape_markdown(name).replace("|", "\\|")


_PAIR_COLUMNS = registry.in_summary("pairs")
CONSISTENCY_COLUMNS = tuple(  # the count, the accuracies, then the consistency metrics
    Key(m.name)
    for kind in ("count", "accuracy", "consistency")
    for m in _PAIR_COLUMNS
    if m.kind == kind
)
METHOD_CONSISTENCY = tuple(m.name for m in registry.in_summary("methods"))
ASSOCIATIVITY_QUANTITIES = associativity.QUANTITIES
ASSOCIATIVITY_ROWS = tuple(  # (accuracy, scope): the subsets, then all of WSC266
    (accuracy, scope)
    for accuracy in (ACC, SCHEMA_ACC)
    for scope in (*associativity.SUBSETS, associativity.ALL)
)


def _consistency_tables(results: dict[str, Row], kinds: dict[str, TaskKind | None]) -> list[str]:
    """Consistency tasks, associativity, and consistency between scoring methods."""
    lines: list[str] = []
    pairs = {n: r for n, r in results.items() if kinds[n] is TaskKind.CONSISTENCY}
    if pairs:
        rows = {n: [_cell(r.get(c)) for c in CONSISTENCY_COLUMNS] for n, r in pairs.items()}
        title = (
            "Consistency between original and perturbed schemas (headline method; blank: "
            "not defined for a schema transformation):"
        )
        lines += _table(title, [c.name for c in CONSISTENCY_COLUMNS], rows)
    for name, row in results.items():
        table = {
            f"{accuracy} {scope}": [
                Key(m.name)
                for quantity in ASSOCIATIVITY_QUANTITIES
                for m in registry.select(accuracy=accuracy, scope=scope, quantity=quantity)
            ]
            for accuracy, scope in ASSOCIATIVITY_ROWS
        }
        shown = [key for keys in table.values() for key in keys]
        if kinds[name] is not TaskKind.ASSOCIATIVITY or not all(k in row for k in shown):
            continue  # its headline metrics only: the adjusted accuracies
        rows = {label: [_cell(row.get(k)) for k in keys] for label, keys in table.items()}
        title = (
            f"Associativity ({code_span(name)}): r, r_B after no-cands, r − r_B, "
            "relative loss, relative gain:"
        )
        lines += _table(title, list(ASSOCIATIVITY_QUANTITIES), rows)
    method_pairs = sorted(
        {k for row in results.values() for k in row if k.record == "consistency" and k.pair},
        key=lambda k: k.name,
    )
    if method_pairs:
        columns = [Key(m, pair=k.pair) for k in method_pairs for m in METHOD_CONSISTENCY]
        rows = {
            n: [_cell(r.get(c)) for c in columns]
            for n, r in results.items()
            if any(c in r for c in columns)
        }
        title = "Consistency between scoring methods (first → second):"
        lines += _table(title, [c.name for c in columns], rows)
    return lines


PLAUSIBILITY_COLUMNS = tuple(Key(m.name) for m in registry.in_summary("reasons"))


def _plausibility_table(results: dict[str, Row], kinds: dict[str, TaskKind | None]) -> list[str]:
    """WinoWhy-style tasks: reasons scored for plausibility."""
    rows = {
        name: [_cell(row.get(c)) for c in PLAUSIBILITY_COLUMNS]
        for name, row in results.items()
        if kinds[name] is TaskKind.WINOWHY
    }
    if not rows:
        return []
    title = "Plausibility of reasons (WinoWhy; headline score, mean log-likelihood per token):"
    return _table(title, [c.name for c in PLAUSIBILITY_COLUMNS], rows)
