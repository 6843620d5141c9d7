"""The report's files from its built sections: figures, tables, ``report.md`` and ``report.html``.

Everything here runs after the bootstraps (``estimates``), so it only lays out what the sections
hold: ``figures/<stem>.png|svg`` (and ``<stem>_narrow.svg``, a phone's layout),
``tables/<name>.md|csv|tex``, the Markdown report embedding them, and the same as one
self-contained HTML page with the schemas behind the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from wsc_tasks import markup
from wsc_tasks.claims import wording
from wsc_tasks.paths import CHANCE_MODEL
from wsc_tasks.progress import progress
from wsc_tasks.report import examples, figures, html_page
from wsc_tasks.report.sections import Section
from wsc_tasks.report.tables import markdown, write
from wsc_tasks.runs.folders import Run

TITLE = "Winograd-schema evaluation report"


def intro(iters: int, seed: int) -> str:
    return (
        "Made by `wsc-tasks report` from lm-eval `--log_samples` outputs. Intervals: 95%, "
        f"{wording.how_intervals()}; bootstrap: R = {iters}, seed {seed}; p: "
        f"{wording.which_p()} Differences between conditions on the same schemas are paired. "
        "Every symbol is defined in the glossary at the end."
    )


def text(section: Section) -> str:
    """The section's text (a function of no arguments is called: its estimates are computed)."""
    return section.text() if callable(section.text) else section.text


def draw(sections: Sequence[Section], runs: Sequence[Run], out: Path) -> None:
    """Every figure of every section, each model in its own colour and marker; each also in its
    narrow layout (``figures.NARROW``), which the HTML page shows on a phone."""
    names = {r.label: f"{r.label} (chance model)" for r in runs if r.model == CHANCE_MODEL}
    styles = {
        label: replace(style, hollow=label in names)
        for label, style in figures.palette([run.label for run in runs]).items()
    }
    for section in sections:
        for figure in section.figures:
            path = out / "figures" / figure.stem
            for narrow in (False, True):  # the page's, and a phone's (its panels stacked)
                figures.forest(
                    figure.bars,
                    figure.title,
                    path,
                    chance=figure.chance,
                    xlabel=figure.xlabel,
                    styles=styles,
                    names=names,
                    narrow=narrow,
                )


def write_markdown(runs: Sequence[Run], sections: Sequence[Section], out: Path, head: str) -> Path:
    """``report.md``, writing each section's tables under ``tables/`` on the way."""
    lines = [
        f"# {TITLE}",
        "",
        head,
        "",
        "The same report as one page, with sortable and filterable tables, the figures and "
        "examples of the schemas behind the numbers: [`report.html`](report.html).",
    ]
    for section in sections:
        lines += ["", f"## {section.title}", ""]
        if section.skipped:
            lines += [f"Skipped: {markup.markdown(section.skipped)}.", ""]
        elif text(section):
            lines += [markup.markdown(text(section)), ""]
        if section.notes:
            notes = [f"- **Note:** {markup.escape_markdown(note)}." for note in section.notes]
            lines += ["### Notes", "", *notes, ""]
        if section.skipped:
            continue
        for table in section.tables:
            write(table, out / "tables")
            lines += [markdown(table), ""]
        for figure in section.figures:
            lines += [f"![{figure.caption}](figures/{figure.stem}.png)", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def contents(sections: Sequence[Section], examples_shown: bool) -> str:
    """The contents: each section with something to show (and its figures) a link; the sections
    skipped for want of their tasks counted, not listed (each says where it stands which tasks it
    needs)."""
    entries = []
    for i, section in enumerate(sections):
        if section.skipped:
            continue
        marks = [
            f'<a href="#f-{figure.stem}" title="{html_page.esc(figure.caption)}">'
            f"{'figure' if len(section.figures) == 1 else f'figure {n}'}</a>"
            for n, figure in enumerate(section.figures, 1)
        ]
        more = f" · {' · '.join(marks)}" if marks else ""
        name = html_page.esc(section.title.split(" (thesis")[0])
        entries.append(f'<li><a href="#s{i}">{name}</a>{more}</li>')
    if examples_shown:
        entries.append(f'<li><a href="#s{len(sections)}">Examples</a></li>')
    skipped = sum(1 for section in sections if section.skipped)
    left = (
        f'<p class="muted">Not listed: {skipped} section{"s" if skipped > 1 else ""} with '
        "nothing to show for the tasks run (each says, in its place, which tasks it needs).</p>"
        if skipped
        else ""
    )
    return f'<nav class="toc"><b>Contents</b><ol>{"".join(entries)}</ol>{left}</nav>'


def section_html(section: Section, out: Path, rest: str | None = None) -> list[str]:
    """A section's notes, figures (the headline figure first), text (``rest`` in its place where
    the page opened with the section's lead) and tables; a skipped section says why."""
    body = []
    if section.notes and rest is None:
        body.append(html_page.notes_html(section.notes))
    if section.skipped:
        return [*body, f"<p>Skipped: {html_page.inline(section.skipped)}.</p>"]
    for figure in section.figures:
        svg = out / "figures" / f"{figure.stem}.svg"
        body.append(html_page.figure_html(svg, figure.caption))
    shown = text(section) if rest is None else rest
    if shown:
        body.append(html_page.prose(shown))
    return body + [html_page.table_html(table) for table in section.tables]


def write_html(
    runs: Sequence[Run], sections: Sequence[Section], out: Path, head: str, quiet: bool = False
) -> Path:
    """``report.html``: report.md's sections as one self-contained page, plus examples. The page
    opens with each model's conclusion (the first section's ``lead``: the first screen answers,
    at 1,400 and at 400 px), then its notes, the method paragraph and the contents; in each
    section its notes, its figures, its text, then its tables, those longer than
    ``html_page.FOLD`` rows folded (a click opens them)."""
    found = all_examples(runs, quiet)
    toc = contents(sections, bool(found))
    body = [f"<h1>{TITLE}</h1>"]
    first = sections[0] if sections else None
    if first is not None and first.lead is not None and not first.skipped:
        conclusion, rest = first.lead()
        body.append(f'<h2 id="s0">{html_page.esc(first.title)}</h2>')
        body.append(html_page.prose(conclusion, item="conclusion"))
        if first.notes:
            body.append(html_page.notes_html(first.notes))
        body += [f"<p>{html_page.inline(head)}</p>", toc, *section_html(first, out, rest)]
        later = list(enumerate(sections))[1:]
    else:
        body += [f"<p>{html_page.inline(head)}</p>", toc]
        later = list(enumerate(sections))
    for i, section in later:
        body.append(f'<h2 id="s{i}">{html_page.esc(section.title)}</h2>')
        body += section_html(section, out)
    body.append(f'<h2 id="s{len(sections)}">Examples</h2>')
    body.append(html_page.examples_html(found))
    path = out / "report.html"
    path.write_text(html_page.page(TITLE, "\n".join(body)), encoding="utf-8")
    return path


def all_examples(runs: Sequence[Run], quiet: bool = False) -> list[examples.TaskExamples]:
    """The examples section's content: every task with schema samples, every model."""
    pairs = [
        (run, name)
        for name in sorted({n for r in runs for n in r.tasks})
        for run in runs
        if name in run.tasks
    ]
    found = []
    with progress(len(pairs), "report: examples", "task", quiet) as bar:
        for run, name in pairs:
            item = examples.task_examples(run.tasks[name], run.label)
            if item is not None:
                found.append(item)
            bar.update()
    return found
