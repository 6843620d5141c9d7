"""``wsc-tasks report``: the thesis's tables and figures for whatever tasks and models were run.

Input: lm-eval output folders run with ``--log_samples`` (one per model). Output under ``--out``:
``tables/*.md|csv|tex``, ``figures/*.png|svg`` and ``report.md`` embedding them. Every interval is
a 95% percentile interval of a bootstrap over documents (schemas), every p a Monte Carlo p of
(k + 1)/(R + 1) (thesis §3.8), with one seed, so a rerun on the same folders writes the same bytes.
A section whose tasks are missing is skipped with a note saying which task it needs.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wsc_tasks.data import catalog
from wsc_tasks.metrics import ratios, registry, stats
from wsc_tasks.metrics.accuracy import SchemaOutcome, restrict
from wsc_tasks.paths import KEEP_PATHS
from wsc_tasks.reporting import examples, figures, html_report
from wsc_tasks.reporting.figures import Bar
from wsc_tasks.reporting.progress import progress
from wsc_tasks.reporting.runs import (
    Run,
    RunError,
    TaskRun,
    load_run,
    parse_folder_argument,
    try_pair_documents,
)
from wsc_tasks.reporting.tables import Delta, Interval, Table, markdown, write

log = logging.getLogger(f"lm_eval.{__name__}")

METHOD_TASKS = ("wsc266", "wsc273_schemas", "wsc266_inverted")
# from the catalog's roles: a new perturbation of WSC266 is a new row of the perturbations table
PERTURBATIONS = tuple(catalog.datasets(catalog.PERTURBATION, of="wsc266"))
SCHEMA_TRANSFORMATIONS = {  # matched by schema, not problem by problem
    name
    for name in catalog.datasets(catalog.PERTURBATION)
    if not catalog.role_of(name).problem_level
}
COMPARE_TASKS = ("wsc266", "wsc273_schemas", "winogrande_twins")
_CONSISTENCY = registry.select(value=registry.PAIR, kind="consistency")
PROBLEM_CONSISTENCY = tuple(m.name for m in _CONSISTENCY if m.level == "problem")
SCHEMA_CONSISTENCY = tuple(m.name for m in _CONSISTENCY if m.level == "schema")
SYMBOLS = {m.name: m.symbol for m in _CONSISTENCY}
ACCURACIES = {"a": ratios.PROBLEM_ACCURACY, "A": ratios.SCHEMA_ACCURACY}


@dataclass
class Section:
    title: str
    text: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (stem, caption)
    skipped: str = ""


CHANCE = {"a": 0.5, "A": 0.25}  # chance lines of the accuracy panels
# the columns of the scoring-method tables: a and A, on all problems and on equal-length answers
METHOD_COLUMNS = (("acc", False), ("acc", True), ("schema_acc", False), ("schema_acc", True))


class Reporter:
    """Builds the sections from loaded runs; all bootstraps share ``iters`` and ``seed``."""

    def __init__(
        self, runs: Sequence[Run], out: Path, iters: int, seed: int, quiet: bool = False
    ) -> None:
        self.runs, self.out, self.iters, self.seed = list(runs), out, iters, seed
        self.quiet = quiet  # no progress bars (they are off anyway when stderr is not a terminal)
        self._dry, self._count, self._bar = False, 0, None
        self.styles = figures.palette([run.label for run in self.runs])  # one colour per model

    # -- estimates -------------------------------------------------------------------------------
    def estimate(self, values: Sequence[Any], form: Callable, null: float | None = None):
        return self._bootstrap(stats.bootstrap, values, form, null=null)

    def interval(self, values: Sequence[Any] | None, form: Callable, p: bool = False):
        if not values:
            return None
        null = _chance(values, form) if p else None
        return Interval(self.estimate(values, form, null), show_p=p)

    def paired(self, first: Sequence[Any], second: Sequence[Any], form: Callable) -> Delta | None:
        if not first:
            return None
        return Delta(self._bootstrap(stats.paired_difference, first, second, form))

    def unpaired(self, first: Sequence[Any], second: Sequence[Any], form: Callable):
        if not first or not second:
            return None
        return Delta(self._bootstrap(stats.unpaired_difference, first, second, form))

    def _bootstrap(self, function: Callable, *args: Any, **kwargs: Any) -> stats.Estimate:
        """Every bootstrap of the report: only counted in the dry run that sizes the progress
        bar, else computed with the report's ``iters`` and ``seed``."""
        if self._dry:
            self._count += 1
            nan = float("nan")
            return stats.Estimate(nan, nan, nan, nan, None, None, 0, 0)
        found = function(*args, iters=self.iters, seed=self.seed, **kwargs)
        if self._bar is not None:
            self._bar.update()
        return found

    def compare(self, first: TaskRun, second: TaskRun, metric: str, equal: bool = False):
        """first − second: paired on the schemas both share when they share them all."""
        a, b = outcomes(first, metric, equal), outcomes(second, metric, equal)
        if a is None or b is None:
            return None
        form = first.forms[metric]
        uids_a = [d.get("schema_uid") for d in first.docs]
        uids_b = [d.get("schema_uid") for d in second.docs]
        if sorted(uids_a, key=str) == sorted(uids_b, key=str) and len(set(uids_a)) == len(uids_a):
            a_sorted, b_sorted = stats.align(
                dict(zip(uids_a, a, strict=True)), dict(zip(uids_b, b, strict=True))
            )
            return self.paired(a_sorted, b_sorted, form)
        return self.unpaired(a, b, form)

    def tasks(self, name: str) -> list[tuple[Run, TaskRun]]:
        return [(run, run.tasks[name]) for run in self.runs if name in run.tasks]

    # -- sections --------------------------------------------------------------------------------
    def overview(self) -> Section:
        table = Table(
            "overview",
            "Headline accuracy of every task, with p against chance",
            ["model", "task", "documents", "a", "A"],
        )
        bars = []
        for run in self.runs:
            for name, task in run.tasks.items():
                a, big_a = outcomes(task, "acc"), outcomes(task, "schema_acc")
                if a is None:
                    continue
                cells = [self.interval(a, ACCURACIES["a"], True)]
                cells.append(self.interval(big_a, ACCURACIES["A"], True))
                table.rows.append([run.label, name, len(a), *cells])
                for panel, cell in zip(("a", "A"), cells, strict=True):
                    if cell is not None:
                        bars.append(Bar(panel, name, run.label, cell.estimate))
        section = Section("Accuracy of every task", tables=[table])
        if bars:
            self._figure(
                section,
                "overview",
                bars,
                "Headline accuracy by task",
                "Headline accuracy of every task (95% intervals)",
            )
        section.text = (
            "a: problem accuracy, A: schema accuracy (every problem of a schema right), under each "
            "task's headline scoring method. p: against chance (a = 0.5; A = the mean of 2^-size "
            "over schemas, 0.25 for pairs)."
        )
        return section

    def methods(self) -> Section:
        section = Section("Accuracy by scoring method (thesis Tables 4.3, 4.7, 4.11; Figure 4.1)")
        for name in METHOD_TASKS:
            found = [(r, t) for r, t in self.tasks(name) if len(t.methods()) > 1]
            if not found:
                continue
            table = Table(
                f"methods_{name}",
                f"Accuracy of scoring methods on {name}, any-length and equal-length answers",
                ["model", "method", "a", "a (equal length)", "A", "A (equal length)"],
            )
            diff = Table(
                f"method_differences_{name}",
                f"Headline method minus each other method on {name} (paired), with p",
                ["model", "headline − method", "Δa", "Δa (equal)", "ΔA", "ΔA (equal)"],
            )
            bars = []
            for run, task in found:
                methods = task.methods()
                for method in methods:
                    cells = []
                    for metric, equal in METHOD_COLUMNS:
                        values = outcomes(task, f"{metric}_{method}", equal)
                        cells.append(self.interval(values, _form(metric)))
                    table.rows.append([run.label, method, *cells])
                    for panel, cell in (("a", cells[0]), ("A", cells[2])):
                        if cell is not None:
                            bars.append(Bar(panel, method, run.label, cell.estimate))
                head = methods[0]
                for method in methods[1:]:
                    cells = []
                    for metric, equal in METHOD_COLUMNS:
                        a = outcomes(task, f"{metric}_{head}", equal)
                        b = outcomes(task, f"{metric}_{method}", equal)
                        cells.append(self.paired(a, b, _form(metric)) if a and b else None)
                    diff.rows.append([run.label, f"{head} − {method}", *cells])
            section.tables += [table, diff]
            self._figure(
                section,
                f"methods_{name}",
                bars,
                f"Accuracy of scoring methods on {name}",
                f"Scoring methods on {name} (95% intervals)",
            )
        if not section.tables:
            section.skipped = f"needs one of {', '.join(METHOD_TASKS)} run with several methods"
        section.text = (
            "Equal length: only problems whose two answers have the same number of tokens "
            "(thesis §3.7.4); a schema counts if all its problems do."
        )
        return section

    def perturbations(self) -> Section:
        section = Section("Accuracy on perturbations of WSC266 (thesis Table 4.16, Figure 4.5)")
        table = Table(
            "perturbations",
            "Accuracy on perturbations of WSC266; Δ = perturbation − the original schemas it "
            "was made from (paired), with p",
            ["model", "dataset", "a", "Δa", "A", "ΔA"],
        )
        bars = []
        for run in self.runs:
            original = run.tasks.get("wsc266")
            rows = []
            for name in PERTURBATIONS:
                pair = self._perturbation_pair(run, original, name)
                if pair is None:
                    continue
                cells: list[Any] = []
                for metric, (before, after) in pair.items():
                    form = ACCURACIES[metric]
                    cells += [self.interval(after, form), self.paired(after, before, form)]
                rows.append([run.label, name.removeprefix("wsc266_"), *cells])
                for panel, cell in (("a", cells[0]), ("A", cells[2])):
                    bars.append(Bar(panel, name.removeprefix("wsc266_"), run.label, cell.estimate))
            if rows and original is not None and outcomes(original, "acc"):
                head = [
                    self.interval(outcomes(original, m), _form(m)) for m in ("acc", "schema_acc")
                ]
                table.rows.append([run.label, "original", head[0], None, head[1], None])
                bars.append(Bar("a", "original", run.label, head[0].estimate))
                bars.append(Bar("A", "original", run.label, head[1].estimate))
            table.rows += rows
        if not table.rows:
            section.skipped = (
                "needs wsc266 with a perturbation task (wsc266_switched, …) or a "
                "*_consistency task of one"
            )
            return section
        section.tables.append(table)
        bars.sort(key=lambda b: ("original", *PERTURBATIONS).index(_long(b.x)))
        self._figure(
            section,
            "perturbations",
            bars,
            "Accuracy on perturbations of WSC266",
            "Accuracy on perturbations of WSC266 (95% intervals)",
        )
        return section

    def _perturbation_pair(self, run: Run, original: TaskRun | None, name: str):
        """{metric: (original-side values, perturbed-side values)} on matched schemas."""
        consistency = run.tasks.get(f"{name}_consistency")
        if consistency is not None and consistency.values:
            items = next(iter(consistency.values.values()))
            if items and isinstance(items[0], dict) and "before" in items[0]:
                return {
                    "a": ([i["before"] for i in items], [i["after"] for i in items]),
                    "A": ([i["before"] for i in items], [i["after"] for i in items]),
                }
        perturbed = run.tasks.get(name)
        if original is None or perturbed is None or "acc" not in perturbed.forms:
            return None
        if "acc" not in original.forms:
            return None
        matched = try_pair_documents(original, perturbed, "acc", name not in SCHEMA_TRANSFORMATIONS)
        if matched is None:
            return None
        return {"a": matched, "A": matched}

    def consistency(self) -> Section:
        section = Section("Consistency (thesis Tables 4.6, 4.20, 4.24; Figure 4.6)")
        problem = Table(
            "consistency_problems",
            "Problem consistency metrics (problem transformations)",
            ["model", "task", *[SYMBOLS[m] for m in PROBLEM_CONSISTENCY]],
        )
        schema = Table(
            "consistency_schemas",
            "Schema consistency metrics",
            ["model", "task", *[SYMBOLS[m] for m in SCHEMA_CONSISTENCY]],
        )
        bars = []
        for run in self.runs:
            for task in run.tasks.values():
                changes = _consistency_changes(task)
                for suffix, label in changes:
                    row_p = [task.values.get(m + suffix) for m in PROBLEM_CONSISTENCY]
                    row_s = [task.values.get(m + suffix) for m in SCHEMA_CONSISTENCY]
                    p_cells = [
                        self.interval(v, task.forms[m + suffix])
                        if v and m + suffix in task.forms
                        else None
                        for m, v in zip(PROBLEM_CONSISTENCY, row_p, strict=True)
                    ]
                    s_cells = [
                        self.interval(v, task.forms[m + suffix])
                        if v and m + suffix in task.forms
                        else None
                        for m, v in zip(SCHEMA_CONSISTENCY, row_s, strict=True)
                    ]
                    if any(p_cells):
                        problem.rows.append([run.label, label, *p_cells])
                    if any(s_cells):
                        schema.rows.append([run.label, label, *s_cells])
                    for metric in ("schema_consistency", "consistent_schema_acc"):
                        cell = s_cells[SCHEMA_CONSISTENCY.index(metric)]
                        if cell is not None:
                            bars.append(Bar(SYMBOLS[metric], label, run.label, cell.estimate))
        section.tables = [t for t in (problem, schema) if t.rows]
        if not section.tables:
            section.skipped = "needs a *_consistency task, or several scoring methods"
            return section
        self._figure(
            section,
            "consistency",
            bars,
            "Schema consistency C and consistent schema accuracy C_a",
            "Consistency (95% intervals)",
            chance=None,
            ylabel="share",
        )
        section.text = (
            "Rows named `a → b` are the scoring-method change from method a to method b on the "
            "same task (thesis Table 4.6); the others are the consistency tasks: a schema "
            "against its perturbation (Table 4.20). A schema transformation (inversion) has only "
            "the schema metrics C̃, C, C_a, C_p, Ĉ_p."
        )
        return section

    def associativity(self) -> Section:
        section = Section("Associativity (thesis Tables 4.25–4.28; Figure 4.7)")
        tables = {
            "subsets": Table(
                "associativity_subsets",
                "Accuracy on the associative and non-associative subsets of WSC266, before and "
                "after the no-candidates perturbation; p against chance; assoc. − non-assoc. "
                "(independent schemas)",
                ["model", "problems", "metric", "non-assoc.", "assoc.", "assoc. − non-assoc."],
            ),
            "effect": Table(
                "associativity_effect",
                "Effect of the no-candidates perturbation (paired), per subset",
                ["model", "metric", "subset", "original", "no-cands", "no-cands − original"],
            ),
            "relative": Table(
                "associativity_relative",
                "Relative loss (r − r_B)/r and gain (r − r_B)/(1 − r_B) (eqs. 4.1, 4.2)",
                ["model", "metric", "subset", "r − r_B", "(r − r_B)/r", "(r − r_B)/(1 − r_B)"],
            ),
            "adjusted": Table(
                "associativity_adjusted",
                "WSC266 accuracy adjusted for association (Table 4.28)",
                ["model", "metric", "r", "r − r_B", "(r − r_B)/(1 − r_B)"],
            ),
        }
        bars = []
        for run in self.runs:
            items = _associativity_items(run)
            if not items:
                continue
            subsets = {
                name: [i for i in items if i["subset"] == name]
                for name in ("nonassociative", "associative")
            }
            for side, side_name in (("before", "original"), ("after", "no-cands")):
                for metric, form in ACCURACIES.items():
                    non = [i[side] for i in subsets["nonassociative"]]
                    assoc = [i[side] for i in subsets["associative"]]
                    cells = [self.interval(non, form, True), self.interval(assoc, form, True)]
                    tables["subsets"].rows.append(
                        [run.label, side_name, metric, *cells, self.unpaired(assoc, non, form)]
                    )
                    for label, cell in zip(("non-assoc.", "assoc."), cells, strict=True):
                        if cell is not None:
                            bars.append(
                                Bar(metric, f"{label} {side_name}", run.label, cell.estimate)
                            )
            for metric, form in ACCURACIES.items():
                for subset in ("nonassociative", "associative", "all"):
                    chosen = items if subset == "all" else subsets[subset]
                    before = [i["before"] for i in chosen]
                    after = [i["after"] for i in chosen]
                    if not before:
                        continue
                    r, r_b = form(before), form(after)
                    loss = self.paired(before, after, form)
                    if subset == "all":
                        tables["adjusted"].rows.append(
                            [run.label, metric, r, loss, _safe(r - r_b, 1 - r_b)]
                        )
                        continue
                    tables["effect"].rows.append(
                        [
                            run.label,
                            metric,
                            subset,
                            self.interval(before, form),
                            self.interval(after, form),
                            self.paired(after, before, form),
                        ]
                    )
                    tables["relative"].rows.append(
                        [
                            run.label,
                            metric,
                            subset,
                            loss,
                            _safe(r - r_b, r),
                            _safe(r - r_b, 1 - r_b),
                        ]
                    )
        section.tables = [t for t in tables.values() if t.rows]
        if not section.tables:
            section.skipped = (
                "needs wsc266_associativity, or wsc266_associative and wsc266_nonassociative "
                "with their *_nocands tasks"
            )
            return section
        self._figure(
            section,
            "associativity",
            bars,
            "Associative and non-associative subsets of WSC266",
            "Associativity (95% intervals)",
        )
        return section

    def reid(self) -> Section:
        section = Section("Reid250 and its dyads (thesis Tables 4.33, 4.38; Figures 4.9, 4.12)")
        names = sorted({n for run in self.runs for n in run.tasks if n.startswith("reid250")})
        table = Table(
            "reid250",
            "Accuracy on Reid250 tasks, p against chance; Δ against WSC266 (independent "
            "schemas) and against reid250 (paired when the schemas are the same)",
            [
                "model",
                "task",
                "a",
                "A",
                "Δa vs wsc266",
                "ΔA vs wsc266",
                "Δa vs reid250",
                "ΔA vs reid250",
            ],
        )
        bars = []
        for run in self.runs:
            base, wsc = run.tasks.get("reid250"), run.tasks.get("wsc266")
            for name in names:
                task = run.tasks.get(name)
                if task is None or outcomes(task, "acc") is None:
                    continue
                cells = [
                    self.interval(outcomes(task, "acc"), ACCURACIES["a"], True),
                    self.interval(outcomes(task, "schema_acc"), ACCURACIES["A"], True),
                ]
                for other in (wsc, base):
                    for metric in ("acc", "schema_acc"):
                        usable = other is not None and other is not task
                        cells.append(self.compare(task, other, metric) if usable else None)
                table.rows.append([run.label, name, *cells])
                for panel, cell in zip(("a", "A"), cells[:2], strict=True):
                    if cell is not None:
                        bars.append(Bar(panel, name, run.label, cell.estimate))
        if not table.rows:
            section.skipped = "needs a reid250* task"
            return section
        section.tables.append(table)
        self._figure(
            section, "reid250", bars, "Accuracy on Reid250 tasks", "Reid250 tasks (95% intervals)"
        )
        section.text = (
            "Dyads are treated as independent schemas (thesis §3.8.3); schema accuracy follows "
            "each task's grouping."
        )
        return section

    def models(self) -> Section:
        section = Section("Model comparisons (thesis Tables 4.15, 4.32; Figures 4.4, 4.9)")
        if len(self.runs) < 2:
            section.skipped = "needs two or more models (give several folders)"
            return section
        names = [n for n in COMPARE_TASKS if len(self.tasks(n)) > 1]
        names += sorted({n for r in self.runs for n in r.tasks if n.startswith("reid250")})
        table = Table(
            "models",
            "Differences between models on the same schemas (paired), with p",
            ["task", "models", "Δa", "Δa (equal)", "ΔA", "ΔA (equal)"],
        )
        bars = []
        for name in names:
            found = self.tasks(name)
            for i, (run_a, task_a) in enumerate(found):
                for metric, panel in (("acc", "a"), ("schema_acc", "A")):
                    cell = self.interval(outcomes(task_a, metric), _form(metric))
                    if cell is not None:
                        bars.append(Bar(panel, name, run_a.label, cell.estimate))
                for run_b, task_b in found[i + 1 :]:
                    cells = [
                        self.compare(task_b, task_a, metric, equal)
                        for metric in ("acc", "schema_acc")
                        for equal in (False, True)
                    ]
                    table.rows.append([name, f"{run_b.label} − {run_a.label}", *cells])
        if not table.rows:
            section.skipped = f"needs a task run by two models ({', '.join(COMPARE_TASKS)})"
            return section
        section.tables.append(table)
        self._figure(
            section, "models", bars, "Accuracy by model", "Accuracy by model (95% intervals)"
        )
        return section

    def _figure(
        self,
        section: Section,
        stem: str,
        bars: list[Bar],
        title: str,
        caption: str,
        chance: dict[str, float] | None = CHANCE,
        ylabel: str = "accuracy",
    ) -> None:
        """Draw ``figures/<stem>.png|svg`` and list it in the section under ``caption``."""
        if self._dry:
            return
        path = self.out / "figures" / stem
        figures.forest(bars, title, path, chance=chance, xlabel=ylabel, styles=self.styles)
        section.figures.append((stem, caption))

    # -- output ----------------------------------------------------------------------------------
    def build(self) -> list[Section]:
        builders = [
            self.overview,
            self.methods,
            self.perturbations,
            self.consistency,
            self.associativity,
            self.reid,
            self.models,
        ]
        # a dry run without bootstraps counts them, so the bar can estimate the time left
        self._dry, self._count = True, 0
        logging.disable(logging.WARNING)  # its warnings come again in the real run
        try:
            for builder in builders:
                builder()
        finally:
            self._dry = False
            logging.disable(logging.NOTSET)
        with progress(self._count, "report: bootstraps", "bootstrap", self.quiet) as self._bar:
            sections = [builder() for builder in builders]
        self._bar = None
        return sections

    def examples(self) -> list[examples.TaskExamples]:
        """The examples section's content: every task with schema samples, every model."""
        pairs = [(run, name) for name in sorted({n for r in self.runs for n in r.tasks})
                 for run in self.runs if name in run.tasks]  # fmt: skip
        found = []
        with progress(len(pairs), "report: examples", "task", self.quiet) as bar:
            for run, name in pairs:
                item = examples.task_examples(run.tasks[name], run.label)
                if item is not None:
                    found.append(item)
                bar.update()
        return found

    def write(self) -> Path:
        sections = self.build()
        intro = (
            "Made by `wsc-tasks report` from lm-eval `--log_samples` outputs. Intervals: 95% "
            f"percentile intervals of a bootstrap over schemas (lm-eval documents), R = "
            f"{self.iters}, seed {self.seed}; p: Monte Carlo (k + 1)/(R + 1) (thesis §3.8), one "
            "significant digit. Differences between conditions on the same schemas are paired."
        )
        lines = [
            "# Winograd-schema evaluation report",
            "",
            intro,
            "",
            "The same report as one page, with sortable and filterable tables, the figures and "
            "examples of the schemas behind the numbers: [`report.html`](report.html).",
            "",
            "| model | lm-eval model | model_args | tasks |",
            "|---|---|---|---:|",
        ]
        for run in self.runs:
            args = run.model_args.replace("|", "\\|")
            lines.append(f"| {run.label} | {run.model} | `{args}` | {len(run.tasks)} |")
        notes = [note for run in self.runs for note in run.notes()]
        lines += ["", *(f"**Note:** {note}." for note in notes)] if notes else []
        for section in sections:
            lines += ["", f"## {section.title}", ""]
            if section.skipped:
                lines.append(f"Skipped: {section.skipped}.")
                continue
            if section.text:
                lines += [section.text, ""]
            for table in section.tables:
                write(table, self.out / "tables")
                lines += [markdown(table), ""]
            for stem, caption in section.figures:
                lines += [f"![{caption}](figures/{stem}.png)", ""]
        path = self.out / "report.md"
        path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
        self.write_html(intro, sections)
        return path

    def write_html(self, intro: str, sections: Sequence[Section]) -> Path:
        """``report.html``: report.md's sections as one self-contained page, plus examples."""
        runs = Table("runs", "Models", ["model", "lm-eval model", "model_args", "tasks"])
        runs.rows = [[r.label, r.model, r.model_args, len(r.tasks)] for r in self.runs]
        titles = [s.title for s in sections] + ["Examples"]
        toc = "".join(f'<li><a href="#s{i}">{html_report.esc(t)}</a></li>' for i, t in
                      enumerate(titles))  # fmt: skip
        body = [
            "<h1>Winograd-schema evaluation report</h1>",
            f"<p>{html_report.inline(intro)}</p>",
            html_report.table_html(runs),
            f"<ul>{toc}</ul>",
        ]
        for i, section in enumerate(sections):
            body.append(f'<h2 id="s{i}">{html_report.esc(section.title)}</h2>')
            if section.skipped:
                body.append(f"<p>Skipped: {html_report.inline(section.skipped)}.</p>")
                continue
            if section.text:
                body.append(f"<p>{html_report.inline(section.text)}</p>")
            body += [html_report.table_html(table) for table in section.tables]
            for stem, caption in section.figures:
                svg = self.out / "figures" / f"{stem}.svg"
                body.append(html_report.figure_html(svg, caption))
        body.append(f'<h2 id="s{len(sections)}">Examples</h2>')
        body.append(html_report.examples_html(self.examples()))
        path = self.out / "report.html"
        text = html_report.page("Winograd-schema evaluation report", "\n".join(body))
        path.write_text(text, encoding="utf-8")
        return path


# -- helpers ---------------------------------------------------------------------------------------
def outcomes(task: TaskRun, metric: str, equal: bool = False) -> list[SchemaOutcome] | None:
    """Per-document outcomes of ``metric`` (restricted to equal-length answers if asked)."""
    values = task.values.get(metric)
    if not values or metric not in task.forms:
        return None
    if not equal:
        return values
    flags = task.values.get("share_equal_len")
    if not flags:
        return None
    return [restrict(v, f["correct"]) for v, f in zip(values, flags, strict=True)]


def _form(metric: str) -> ratios.Form:
    """The ratio form of record ``metric`` (``acc``, ``schema_acc``)."""
    found = registry.METRICS[metric].form
    assert found is not None, metric
    return found


def _chance(values: Sequence[Any], form: Callable) -> float | None:
    if form is ratios.PROBLEM_ACCURACY:
        return 0.5
    if form is ratios.SCHEMA_ACCURACY:
        return stats.chance_schema_accuracy(values)
    return None


def _long(short: str) -> str:
    return short if short == "original" else f"wsc266_{short}"


def _safe(num: float, den: float) -> float:
    return num / den if den else float("nan")


def _consistency_changes(task: TaskRun) -> list[tuple[str, str]]:
    """(metric-name suffix, row label): '' for a consistency task, '_a_to_b' for method pairs."""
    if "consistency" in task.forms or "schema_consistency" in task.forms:
        return [("", task.task)]
    if task.task not in METHOD_TASKS:
        return []
    out = []
    for name in task.forms:
        if name.startswith("schema_consistency_") and "_to_" in name:
            suffix = name[len("schema_consistency") :]
            if suffix.startswith(("_weak_", "_strict_")):
                continue
            first, second = suffix[1:].split("_to_", 1)
            out.append((suffix, f"{task.task}: {first} → {second}"))
    return sorted(set(out))


def _associativity_items(run: Run) -> list[dict[str, Any]]:
    """(before, after, subset) per WSC266 schema: the associativity task's, or built from the
    subset tasks and their no-cands tasks."""
    task = run.tasks.get("wsc266_associativity")
    if task is not None and task.values:
        items = next(iter(task.values.values()))
        if items and isinstance(items[0], dict) and "subset" in items[0]:
            return items
    out = []
    for subset in ("associative", "nonassociative"):
        original = run.tasks.get(f"wsc266_{subset}")
        nocands = run.tasks.get(f"wsc266_{subset}_nocands")
        if original is None or nocands is None or "acc" not in original.forms:
            return []
        if "acc" not in nocands.forms:
            return []
        matched = try_pair_documents(original, nocands, "acc", True)
        if matched is None:
            return []
        out += [{"before": b, "after": a, "subset": subset} for b, a in zip(*matched, strict=True)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wsc-tasks report",
        description="Thesis-style tables (Markdown, CSV, LaTeX), figures (PNG, SVG) and a "
        "Markdown report (and the same as one HTML page) from lm-eval output folders run with "
        "--log_samples.",
    )
    parser.add_argument("folders", nargs="+", metavar="[LABEL=]DIR", help="one folder per model")
    parser.add_argument("--out", required=True, help="folder for report.md, tables/, figures/")
    parser.add_argument("--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R")
    parser.add_argument("--seed", type=int, default=stats.DEFAULT_SEED)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        KEEP_PATHS, action="store_true", help="local model paths as given (default: <last part>)"
    )
    args = parser.parse_args(argv)
    runs = []
    for text in args.folders:
        label, folder = parse_folder_argument(text)
        try:
            runs.append(load_run(folder, label, keep_paths=args.keep_paths))
        except RunError as error:
            parser.error(str(error))
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        parser.error(f"two folders have the same label ({labels}); use LABEL=DIR")
    path = Reporter(runs, Path(args.out), args.iters, args.seed, quiet=args.quiet).write()
    print(path)
    return 0
