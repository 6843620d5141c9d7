"""The package's folders follow the pipeline, and no module imports its way back up it.

Every import of a ``wsc_tasks`` module counts, including those inside functions: an import moved
into a function to dodge a cycle still makes the two modules depend on each other.
"""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import wsc_tasks

ROOT = Path(wsc_tasks.__file__).parent  # the package as installed
REPO = Path(__file__).resolve().parents[1]  # the checkout: benchmarks/, results/

# What each stage may import besides itself and the shared top-level modules: the pipeline
# data → scoring (requests) → metrics → serving (answers) → lm_eval_fixes → models → tasks →
# runs (read back) → claims → report → leaderboard → sweep → cli, left to right.
MAY_IMPORT = {
    "data": set(),
    "scoring": {"data"},
    "metrics": {"data", "scoring"},
    "serving": {"data", "scoring"},
    "lm_eval_fixes": {"data", "scoring", "metrics", "serving"},
    "models": {"data", "scoring", "serving"},
    "tasks": {"data", "scoring", "metrics", "serving", "lm_eval_fixes"},
    "task_configs": {"tasks"},  # the YAMLs' classes (wsc_task_classes.py), for lm-eval
    "runs": {"data", "scoring", "metrics"},
    "claims": {"data", "scoring", "metrics"},
    "report": {"data", "scoring", "metrics", "runs", "claims"},
    "leaderboard": {"data", "scoring", "metrics", "runs", "claims", "report"},
    "sweep": {"data", "scoring", "metrics", "tasks", "runs", "claims", "report", "leaderboard"},
    "cli": {
        "data",
        "scoring",
        "metrics",
        "serving",
        "models",
        "tasks",
        "runs",
        "claims",
        "report",
        "leaderboard",
        "sweep",
    },
}
# Shared by every stage: paths, the garbage collector's pauses, a model's fingerprint, lm-eval's
# types, progress bars, the escaping of Markdown and HTML, and what a process keeps from one model
# to the next.
SHARED = {"paths", "garbage_collection", "fingerprint", "lm_eval_types", "progress", "markup",
          "kept"}  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(["wsc_tasks", *parts])] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The wsc_tasks modules that ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([base] if base else [])
                )
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "wsc_tasks":
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_sits_in_a_pipeline_stage():
    loose = sorted(
        m
        for m in _modules()
        if m != "wsc_tasks" and _stage(m) not in MAY_IMPORT and _stage(m) not in SHARED | {"task"}
    )
    assert loose == [], f"modules outside the pipeline's folders: {loose}"


def test_no_stage_imports_a_later_one():
    wrong = []
    for module, targets in _graph().items():
        stage = _stage(module)
        if stage not in MAY_IMPORT:
            continue
        for target in targets:
            other = _stage(target)
            if other != stage and other not in SHARED and other not in MAY_IMPORT[stage]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_import_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(trail[trail.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_every_module_imports_alone_in_a_fresh_interpreter():
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    names = sorted(_modules())
    done = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_yaml_class_paths_stay_importable():
    """User YAMLs written against the flat layout name wsc_tasks.task.SchemaTask."""
    task = importlib.import_module("wsc_tasks.task")
    harness = importlib.import_module("wsc_tasks.tasks.schema_tasks")
    assert task.SchemaTask is harness.SchemaTask


def test_results_hold_outputs_only():
    """Scripts that maintain the committed outputs live in tools/, not among the outputs."""
    results = REPO / "results"
    scripts = sorted(str(p.relative_to(results)) for p in results.rglob("*.py"))
    assert scripts == [], f"move to tools/: {scripts}"


BENCHMARKS = REPO / "benchmarks"


def _top_level_imports(path: Path) -> set[str]:
    """The absolute module names a file imports, anywhere in it."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
    return out


def test_benchmarks_import_the_package_and_the_package_no_benchmark():
    """benchmarks/ (the developer benchmarks, not installed) sits after every stage: it may import
    any wsc_tasks module, and nothing in wsc_tasks imports it (a wheel has no benchmarks/)."""
    wrong = [
        f"{name} imports {target}"
        for name, path in _modules().items()
        for target in _top_level_imports(path)
        if target == "benchmarks" or target.startswith("benchmarks.")
    ]
    assert wrong == []
    modules = _modules()
    missing = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        for target in _top_level_imports(path):
            if target.split(".")[0] != "wsc_tasks":
                continue
            known = target
            while known and known not in modules:
                known = known.rpartition(".")[0]
            if known in ("", "wsc_tasks") and target != "wsc_tasks":
                missing.append(f"benchmarks/{path.name} imports {target}")
    assert missing == []
    import tomllib

    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert find["find"]["where"] == ["src"]  # benchmarks/ is not under it


def test_every_benchmark_module_imports_alone_in_a_fresh_interpreter():
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    names = sorted(
        "benchmarks" if p.stem == "__init__" else f"benchmarks.{p.stem}"
        for p in BENCHMARKS.glob("*.py")
        if p.stem != "__main__"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_repository_root_holds_only_what_the_readme_or_contributing_names():
    """A file at the root that no reader is told of (a stray database named ``--help`` once)
    fails here: each tracked entry of the root is named in README.md or CONTRIBUTING.md."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout (an sdist): its root is pyproject.toml's")
    entries = {line.split("/")[0] for line in tracked.stdout.splitlines()}
    docs = "\n".join((REPO / name).read_text(encoding="utf-8") for name in DOCS_NAMING_THE_ROOT)
    unnamed = sorted(
        name for name in entries
        if not any(f"{mark}{name}" in docs for mark in ("`", "](", "[", " "))
        and name not in DOCS_NAMING_THE_ROOT
    )  # fmt: skip
    assert unnamed == [], f"name them in README.md or CONTRIBUTING.md, or remove them: {unnamed}"


DOCS_NAMING_THE_ROOT = ("README.md", "CONTRIBUTING.md")
