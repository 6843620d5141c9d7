"""Regenerate every committed output and fixture the tests compare, exactly as they compare them.

    python tests/regenerate.py            # rewrite them in place (then review ``git diff``)
    python tests/regenerate.py --check    # rewrite them in a copy, list what differs, exit 1 if any

What it writes, each with the command a test compares against (``OUTPUTS``):

- ``results/report/``: ``wsc-tasks report`` on the committed lm-eval folders of the sweep
  (``tests/test_report.py``, byte for byte but for the figures' pixels), and the findings it
  copies into ``results/README.md`` (``tests/test_results_prose.py``);
- ``results/leaderboard.md|csv|html``, ``leaderboard_ranks.png|svg``: ``wsc-tasks leaderboard
  results`` (no model runs);
- ``results/smollm2-135m/summary.md``: ``wsc-tasks summary`` of the main job;
- ``tests/fixtures/reference_metrics.json``: the chance model's every metric
  (``tests/test_reference_metrics.py``, with the same ``--metadata``);
- the blocks of the hand-written Markdown (``<!-- rule:NAME -->``, ``documents``): README.md's
  sentences about the decision rule and the findings, docs/methods.md's tables of methods and
  metrics, each task family's tables of tasks and groups (``tests/test_rule_prose.py``).

A change that moves a figure (a new metric, section, method or launcher column) is followed by
this command; the model runs behind ``results/`` are not repeated (``results/README.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "results"
# the sweep's runs in the report, in its order (results/README.md)
SWEEP = ["smollm2-135m", "smollm2-135m-partial", "smollm2-135m-smart2", "chance", "chance-seed2"]
SUMMARY = "smollm2-135m"
BINARY = (".png", ".svg")  # figures: their pixels depend on the installed font renderer


def report_argv(results: Path, out: Path) -> list[str]:
    """``wsc-tasks report`` as ``results/README.md`` writes it and ``test_report.py`` runs it."""
    return [
        "report",
        *(f"{name}={results / name / 'lm_eval'}" for name in SWEEP),
        "--out",
        str(out),
    ]


def _cli(argv: list[str]) -> None:
    from wsc_tasks.cli import main as cli

    saved = list(sys.argv)
    try:
        if cli(argv) != 0:
            raise SystemExit(f"wsc-tasks {' '.join(argv)} failed")
    finally:
        sys.argv = saved


def _report(root: Path) -> list[Path]:
    out = root / RESULTS / "report"
    shutil.rmtree(out, ignore_errors=True)  # a table no section writes any more goes too
    readme = root / RESULTS / "README.md"  # its findings block is the report's findings
    _cli([*report_argv(root / RESULTS, out), "--readme", str(readme)])
    return [out, readme]


def _leaderboard(root: Path) -> list[Path]:
    _cli(["leaderboard", str(root / RESULTS)])
    found = [root / RESULTS / f"leaderboard.{kind}" for kind in ("md", "csv", "html")]
    return found + [root / RESULTS / f"leaderboard_ranks.{kind}" for kind in ("png", "svg")]


def _summary(root: Path) -> list[Path]:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        _cli(["summary", str(root / RESULTS / SUMMARY / "lm_eval")])
    path = root / RESULTS / SUMMARY / "summary.md"
    path.write_text(text.getvalue(), encoding="utf-8")
    return [path]


def _fixture(root: Path) -> list[Path]:
    import reference_metrics

    path = root / reference_metrics.FIXTURE.relative_to(ROOT)
    reference_metrics.write(path)
    return [path]


def documents() -> dict[str, Callable[[str], str]]:
    """Every hand-written Markdown file with blocks the code writes (``<!-- rule:NAME -->``), and
    how its blocks are written: the README's rule and findings sentences, docs/methods.md's
    tables, each task family's tables of tasks and groups."""
    from wsc_tasks.report import readme_blocks as blocks
    from wsc_tasks.tasks import configs, task_tables

    def family(name: str) -> Callable[[str], str]:
        written = {"tasks": lambda: task_tables.table(name),
                   "groups": lambda: task_tables.groups(name),
                   "questions": lambda: task_tables.questions(name)}  # fmt: skip

        def fill(text: str) -> str:
            present = {k: w for k, w in written.items() if f"<!-- rule:{k} -->" in text}
            return blocks.fill(text, f"{name}/README.md", present, wrap=False)

        return fill

    def page(name: str, written: dict[str, Callable[[], str]], wrap: bool = True):
        return lambda text: blocks.fill(text, name, written, wrap=wrap)

    found: dict[str, Callable[[str], str]] = {
        "README.md": lambda text: page("README.md", {"headline": headline}, wrap=False)(
            page("README.md", blocks.BLOCKS)(text)
        ),
        "docs/methods.md": page("docs/methods.md", blocks.METHODS_BLOCKS, wrap=False),
        "docs/statistics.md": page("docs/statistics.md", blocks.STATISTICS_BLOCKS),
        "docs/reports.md": page("docs/reports.md", blocks.REPORTS_BLOCKS),
    }
    for name in configs.families():
        found[f"src/wsc_tasks/task_configs/{name}/README.md"] = family(name)

    def simulated() -> str:
        import levels

        return levels.table(levels.simulate())

    found["docs/validation.md"] = lambda text: blocks.fill(
        text, "docs/validation.md", {"levels": simulated}, wrap=False
    )
    return found


# the README's opening table: rows of the committed report's overview (its own formatting)
HEADLINE = [("smollm2-135m", "wsc266"), ("smollm2-135m-partial", "wsc266"), ("chance", "wsc266"),
            ("chance-seed2", "wsc266"), ("smollm2-135m", "wsc266_associative_nocands")]  # fmt: skip


def headline() -> str:
    """The README's opening table: the committed report's overview rows of ``HEADLINE`` (model,
    task, role, documents, a, p (a), A, p (A)), as the report wrote them."""
    path = ROOT / RESULTS / "report" / "tables" / "overview.md"
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8:
            rows[(cells[0], cells[1])] = cells
    header = ["| model | task | role | schemas | a | p (a) | A | p (A) |",
              "|---|---|---|---:|---|---|---|---|"]  # fmt: skip
    return "\n".join([*header, *("| " + " | ".join(rows[k]) + " |" for k in HEADLINE)])


def _readme(root: Path) -> list[Path]:
    made = []
    for name, fill in documents().items():
        path = root / name
        if not path.exists():  # --check works on a copy
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, path)
        path.write_text(fill(path.read_text(encoding="utf-8")), encoding="utf-8")
        made.append(path)
    return made


# name -> writer: given a root (the repository, or a copy), writes there and returns its paths
OUTPUTS: dict[str, Callable[[Path], list[Path]]] = {
    "report": _report,
    "leaderboard": _leaderboard,
    "summary": _summary,
    "fixtures": _fixture,
    "readme": _readme,
}


def _differences(made: Path, committed: Path) -> list[str]:
    """Files that differ, appear or disappear between ``made`` and ``committed`` (figures by
    name only)."""
    found = []
    if made.is_file() or committed.is_file():
        if made.is_file() and committed.is_file():
            same = made.suffix in BINARY or filecmp.cmp(made, committed, shallow=False)
            return [] if same else [str(committed)]
        return [str(committed)]  # written but not committed, or committed but no longer written
    names = {p.relative_to(made) for p in made.rglob("*") if p.is_file()}
    names |= {p.relative_to(committed) for p in committed.rglob("*") if p.is_file()}
    for name in sorted(names):
        found += _differences(made / name, committed / name)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write a copy; list what differs")
    parser.add_argument("only", nargs="*", help=f"some of {', '.join(OUTPUTS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only) - set(OUTPUTS))
    if unknown:
        parser.error(f"no output {unknown[0]!r}; the outputs: {', '.join(OUTPUTS)}")
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest  # noqa: F401  the data directory and offline settings, as in the tests

    chosen = args.only or list(OUTPUTS)
    if not args.check:
        for name in chosen:
            for path in OUTPUTS[name](ROOT):
                print(f"wrote {path.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp)
        shutil.copytree(ROOT / RESULTS, copy / RESULTS, ignore=shutil.ignore_patterns(".*"))
        differ = []
        for name in chosen:
            for path in OUTPUTS[name](copy):
                differ += _differences(path, ROOT / path.relative_to(copy))
    for path in differ:
        print(f"differs: {Path(path).relative_to(ROOT)}")
    print(f"{len(differ)} committed files differ from what the code writes")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
