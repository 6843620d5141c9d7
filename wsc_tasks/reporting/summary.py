"""A short Markdown summary of an lm-eval results file: one row per wsc_tasks task or group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wsc_tasks.metrics import registry
from wsc_tasks.paths import hide_model_paths, portable
from wsc_tasks.reporting.runs import read_results, results_files

COLUMNS = tuple(m.name for m in registry.REGISTRY if "schemas" in m.summary)
TOKEN_COLUMNS = ("acc_equal_len", "schema_acc_equal_len", "share_equal_len", "share_blank_at_end")


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
    results: dict[str, dict[str, Any]] = data["results"]
    groups = set(data.get("groups", {}))
    lines = [
        "| task | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for name, row in results.items():
        if not any(f"{c},none" in row for c in COLUMNS):
            continue
        label = f"**{name}** (group: unweighted mean of its tasks)" if name in groups else name
        cells = [_cell(row.get(f"{c},none")) for c in COLUMNS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += _method_table(results, groups)
    lines += _consistency_tables(results)
    lines += _plausibility_table(results)
    config = data.get("config", {})
    model = config.get("model_args") or config.get("model")
    head = [
        f"Results of `{Path(results_file).name}`",
        "",
        f"- model: `{config.get('model')}` with `{_portable(model, keep_paths)}`",
        f"- lm-eval {data.get('lm_eval_version', '?')}, "
        f"batch size {config.get('batch_size')}, device {config.get('device')}",
        "",
    ]
    return "\n".join(head + lines) + "\n"


def _portable(model_args: Any, keep_paths: bool = False) -> str:
    """Model arguments without this machine's site-packages prefix (nor model paths)."""
    text = portable(json.dumps(model_args) if isinstance(model_args, dict) else str(model_args))
    return text if keep_paths else hide_model_paths(text)


def _method_table(results: dict[str, dict[str, Any]], groups: set[str]) -> list[str]:
    """acc / schema_acc of every scoring method, and the equal-length figures, per task."""
    tasks = [
        name
        for name, row in results.items()
        if name not in groups and any(f"{c},none" in row for c in COLUMNS)
    ]
    methods = sorted(
        {
            key[len("acc_") : -len(",none")]
            for name in tasks
            for key in results[name]
            if key.startswith("acc_")
            and key.endswith(",none")
            and "equal_len" not in key
            and "_stderr" not in key
            and f"schema_{key}" in results[name]  # a method has both; categories have no schema
        }
    )
    lines: list[str] = []
    if methods:
        rows = {
            name: [
                f"{_cell(results[name].get(f'acc_{m},none'))} / "
                f"{_cell(results[name].get(f'schema_acc_{m},none'))}"
                for m in methods
            ]
            for name in tasks
        }
        title = "Accuracy by scoring method (`acc_<method>` / `schema_acc_<method>`):"
        lines += _table(title, methods, rows)
    if any(f"{TOKEN_COLUMNS[0]},none" in results[name] for name in tasks):
        rows = {
            name: [_cell(results[name].get(f"{c},none")) for c in TOKEN_COLUMNS] for name in tasks
        }
        title = "Headline method on problems with equal-length answers, and token facts:"
        lines += _table(title, list(TOKEN_COLUMNS), rows)
    return lines


def _table(title: str, columns: list[str], rows: dict[str, list[str]]) -> list[str]:
    lines = [
        "",
        title,
        "",
        "| task | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    return lines + [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()]


_PAIR_COLUMNS = [m for m in registry.REGISTRY if "pairs" in m.summary]
CONSISTENCY_COLUMNS = tuple(  # the count, the accuracies, then the consistency metrics
    m.name for kind in ("count", "accuracy", "consistency") for m in _PAIR_COLUMNS if m.kind == kind
)
METHOD_CONSISTENCY = tuple(m.name for m in registry.REGISTRY if "methods" in m.summary)
ASSOCIATIVITY_QUANTITIES = ("original", "nocands", "adjusted", "rel_loss", "rel_gain")


def _consistency_tables(results: dict[str, dict[str, Any]]) -> list[str]:
    """Consistency tasks, associativity, and consistency between scoring methods."""
    lines: list[str] = []
    pairs = {
        n: r for n, r in results.items() if "consistency,none" in r or n.endswith("_consistency")
    }
    if pairs:
        rows = {
            n: [_cell(r.get(f"{c},none")) for c in CONSISTENCY_COLUMNS] for n, r in pairs.items()
        }
        title = (
            "Consistency between original and perturbed schemas (headline method; blank: "
            "not defined for a schema transformation):"
        )
        lines += _table(title, list(CONSISTENCY_COLUMNS), rows)
    for name, row in results.items():
        if "acc_associative_original,none" not in row:
            continue
        rows = {
            f"{metric} {scope}": [
                _cell(row.get(f"{metric}_{scope}_{q},none")) for q in ASSOCIATIVITY_QUANTITIES
            ]
            for metric in ("acc", "schema_acc")
            for scope in ("associative", "nonassociative", "wsc266")
        }
        title = (
            f"Associativity (`{name}`): r, r_B after no-cands, r − r_B, "
            "relative loss, relative gain:"
        )
        lines += _table(title, list(ASSOCIATIVITY_QUANTITIES), rows)
    method_pairs = sorted(
        {
            key[len("consistency_") : -len(",none")]
            for row in results.values()
            for key in row
            if key.startswith("consistency_")
            and "_to_" in key
            and key.endswith(",none")
            and "_stderr" not in key
        }
    )
    if method_pairs:
        columns = [f"{m}_{p}" for p in method_pairs for m in METHOD_CONSISTENCY]
        rows = {
            n: [_cell(r.get(f"{c},none")) for c in columns]
            for n, r in results.items()
            if any(f"{c},none" in r for c in columns)
        }
        lines += _table("Consistency between scoring methods (first → second):", columns, rows)
    return lines


PLAUSIBILITY_COLUMNS = tuple(m.name for m in registry.REGISTRY if "reasons" in m.summary)


def _plausibility_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """WinoWhy-style tasks: reasons scored for plausibility."""
    rows = {
        name: [_cell(row.get(f"{c},none")) for c in PLAUSIBILITY_COLUMNS]
        for name, row in results.items()
        if "roc_auc,none" in row
    }
    if not rows:
        return []
    title = "Plausibility of reasons (WinoWhy; headline score, mean log-likelihood per token):"
    return _table(title, list(PLAUSIBILITY_COLUMNS), rows)
