"""``wsc-tasks report``: the thesis's tables and figures for whatever tasks and models were run.

Input: lm-eval output folders run with ``--log_samples`` (one per model). Output under ``--out``:
``tables/*.md|csv|tex``, ``figures/*.png|svg`` and ``report.md`` embedding them. Every interval
and p follows ``metrics.stats``' rule (exact for schema accuracy and its paired differences, a
bootstrap over documents, schemas, otherwise), the bootstrap with one seed, so a rerun on the same
folders writes the same bytes.
A section whose tasks are missing is skipped with a note saying which task it needs (a section of
optional tasks none of the runs has, the questions', is left out: ``Section.absent``). The sections
are the modules of ``sections``; ``estimates`` runs their bootstraps, ``writing`` writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wsc_tasks.report import sections, writing
from wsc_tasks.report.estimates import Estimates
from wsc_tasks.runs.folders import Run


def build(
    runs: Sequence[Run], iters: int, seed: int, quiet: bool = False
) -> list[sections.Section]:
    """Every section, in order, with its bootstraps computed (one progress bar for them all)."""
    context = sections.Context(list(runs), Estimates(iters, seed))
    built = [build_section(context) for build_section in sections.builders()]
    context.estimates.compute(quiet)
    return built


def write(
    runs: Sequence[Run],
    out: Path,
    iters: int,
    seed: int,
    quiet: bool = False,
    built: list[sections.Section] | None = None,
) -> Path:
    """The report of ``runs`` under ``out`` (its sections ``built`` already, or built here); the
    path of ``report.md``."""
    built = build(runs, iters, seed, quiet) if built is None else built
    built = shown(built)
    writing.draw(built, runs, out)
    head = writing.intro(iters, seed)
    path = writing.write_markdown(runs, built, out, head)
    writing.write_html(runs, built, out, head, quiet)
    return path


def shown(built: Sequence[sections.Section]) -> list[sections.Section]:
    """The sections the files hold: all but those of optional tasks none of the runs has."""
    return [section for section in built if not section.absent]


def nothing_to_show(built: Sequence[sections.Section]) -> str | None:
    """Why a report of these sections would show no figure, in one sentence (the first reasons
    its sections were skipped); None when some section has a figure."""
    built = shown(built)
    if any(section.figures for section in built):
        return None
    reasons = list(dict.fromkeys(s.skipped for s in built if s.skipped))
    listed = "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")
    skipped = sum(1 for s in built if s.skipped)
    return f"no section of the report has a figure ({skipped} skipped: {listed or 'none'})"
