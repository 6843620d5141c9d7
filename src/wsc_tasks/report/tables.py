"""Tables of estimates, written as Markdown, CSV and LaTeX with fixed formatting.

Markdown and LaTeX are rendered here, not by a table library, so that the committed report is the
same bytes whatever version of pandas or tabulate a reader has installed.

A table is a list of rows; a cell is text, a number, or a ``stats.Estimate``. An estimate is shown
as ``0.617 [0.556, 0.677]`` (value and 95% interval) or, as a difference, ``+0.011``,
with its p-value (one significant digit, thesis style) in the next column. The p of an accuracy
against chance is two-sided and says on which side of chance the value lies (``.007 (below)``),
so a model far below chance never reads like one far above it; a difference's side is its sign.
The CSV file has every number in its own column at full precision (rounded to 6 places, so reruns
are byte-identical), with the chance level each p was computed against.

A text cell and a column header are data (a model's label, a task's name, lm-eval's arguments):
each format escapes them (``markup``), so a label such as ``**x**`` or ``<img …>`` is shown as
written; a title or a note is this package's Markdown, into which user text enters marked
(``markup.name``). Links go only to relative paths inside the output folder or to ``https:``.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from wsc_tasks import markup
from wsc_tasks.metrics.stats import Estimate, format_p


@dataclass(frozen=True)
class Interval:
    """An estimate shown with its interval; p (against chance) in a column after it if given."""

    estimate: Estimate
    show_p: bool = False


@dataclass(frozen=True)
class Delta:
    """A difference shown signed, with its p against 0 in the next column."""

    estimate: Estimate


@dataclass(frozen=True)
class RankSet:
    """A confidence set for a rank, ``[low, high]`` (both ends inclusive): one cell in Markdown
    and HTML (sorted by its lower end ascending, its upper end descending), two in CSV."""

    low: int
    high: int

    def text(self) -> str:
        return f"[{self.low}, {self.high}]"


@dataclass(frozen=True)
class Links:
    """Named relative links (a model's results file, samples, log): Markdown links in Markdown
    and HTML, the bare paths in CSV, the names in LaTeX."""

    items: tuple[tuple[str, str], ...]  # (name, relative path)

    def __post_init__(self) -> None:
        for _, href in self.items:
            markup.check_href(href)  # a relative path inside the output folder, or https:

    def markdown(self) -> str:
        return " · ".join(f"[{name}]({_quote(href)})" for name, href in self.items) or "–"


def _quote(href: str) -> str:
    """A link target as Markdown and HTML can carry it: spaces, parentheses and quotes
    percent-encoded (an ``https:`` address keeps its ``:``)."""
    return quote(href, safe="/:#?=&%~+,;@") if href.lower().startswith("https://") else quote(href)


LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")  # a Markdown link in a cell's text


Cell = str | int | float | Interval | Delta | RankSet | Links | None


@dataclass
class Table:
    name: str  # file stem
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    note: str = ""


def _number(value: float | None, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def display(table: Table) -> tuple[list[str], list[list[str]]]:
    """Headers and text cells for Markdown, HTML and LaTeX: a header and a text cell as user text
    (``markup.name``), the rest (numbers, intervals, links) this package's."""
    headers: list[str] = []
    widest = _widest(table)  # once: per row it made a table of N rows cost N²
    for column, cell in zip(table.columns, widest, strict=True):
        headers.append(markup.name(column))
        if isinstance(cell, Delta) or (isinstance(cell, Interval) and cell.show_p):
            headers.append(markup.name(f"p ({column})"))
    rows = []
    for row in table.rows:
        out: list[str] = []
        for cell, example in zip(row, widest, strict=True):
            out += _show(cell, example)
        rows.append(out)
    return headers, rows


def _widest(table: Table) -> list[Cell]:
    """Per column, a cell that says how wide it is (an estimate with p if any row has one)."""
    out: list[Cell] = []
    for i in range(len(table.columns)):
        cells = [row[i] for row in table.rows]
        pick: Cell = None
        for cell in cells:
            if isinstance(cell, Delta) or (isinstance(cell, Interval) and cell.show_p):
                pick = cell
                break
            if pick is None and cell is not None:
                pick = cell
        out.append(pick)
    return out


def _show(cell: Cell, example: Cell) -> list[str]:
    wide = isinstance(example, Delta) or (isinstance(example, Interval) and example.show_p)
    if isinstance(cell, Interval):
        e = cell.estimate
        text = f"{_number(e.value)} [{_number(e.low)}, {_number(e.high)}]"
        return [text, signed_p(e) if cell.show_p else "–"] if wide else [text]
    if isinstance(cell, Delta):
        return [_number(cell.estimate.value, signed=True), format_p(cell.estimate.p)]
    if isinstance(cell, Links):
        return [cell.markdown(), "–"] if wide else [cell.markdown()]
    if isinstance(cell, RankSet):
        return [cell.text(), "–"] if wide else [cell.text()]
    if isinstance(cell, float):
        text = _number(cell)
    elif isinstance(cell, str):
        text = markup.name(cell)
    else:
        text = "–" if cell is None else str(cell)
    return [text, "–"] if wide else [text]


def side(estimate: Estimate) -> str:
    """``above`` or ``below`` its null (chance), or '' on it or without one."""
    null, value = estimate.null, estimate.value
    if null is None or math.isnan(value) or value == null:
        return ""
    return "above" if value > null else "below"


def signed_p(estimate: Estimate) -> str:
    """The two-sided p with the side of the null the value lies on: ``< .001 (below)``."""
    text, where = format_p(estimate.p), side(estimate)
    return f"{text} ({where})" if where and text != "–" else text


def numeric(table: Table) -> pd.DataFrame:
    """Every number in its own column, for CSV."""
    records = []
    for row in table.rows:
        record: dict[str, Any] = {}
        for column, cell in zip(table.columns, row, strict=True):
            if isinstance(cell, Interval | Delta):
                e = cell.estimate
                record[column] = e.value
                record[f"{column} low"] = e.low
                record[f"{column} high"] = e.high
                shown = isinstance(cell, Delta) or cell.show_p  # an interval's p, if asked for
                if e.p is not None and shown:
                    record[f"{column} p"] = e.p
                if isinstance(cell, Interval) and shown and e.null is not None:
                    record[f"{column} chance"] = e.null
            elif isinstance(cell, Links):
                record[column] = " ".join(href for _, href in cell.items)
            elif isinstance(cell, RankSet):
                record[f"{column} low"] = cell.low
                record[f"{column} high"] = cell.high
            else:
                record[column] = cell
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    return frame.round(6)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Every CSV file this package writes: each text cell (and column name) quoted, and one a
    spreadsheet would run as a formula neutralised (``markup.spreadsheet``); numbers (numeric
    columns, and numbers among the text of a mixed one) written as numbers, unquoted, a minus
    sign and all, so that a reader's ``float()`` and a spreadsheet's sums keep working."""

    def cell(value: Any) -> Any:
        return markup.spreadsheet(value) if isinstance(value, str) else value

    safe = frame.rename(columns=lambda column: cell(str(column)))
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(cell).astype(object)
    safe.to_csv(path, index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)


def write(table: Table, folder: Path) -> dict[str, Path]:
    """``<name>.md``, ``.csv`` and ``.tex`` under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {kind: folder / f"{table.name}.{kind}" for kind in ("md", "csv", "tex")}
    paths["md"].write_text(markdown(table), encoding="utf-8")
    write_csv(numeric(table), paths["csv"])
    paths["tex"].write_text(latex(table), encoding="utf-8")
    return paths


def markdown_grid(headers: list[str], rows: list[list[str]]) -> str:
    """A pipe table: one line per row, no padding (column widths would depend on how wide a
    renderer thinks characters such as the combining tilde of ``C̃`` are). User text, marked
    (``display``), is escaped; ``|`` is escaped everywhere."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(markup.markdown(c).replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join("---" for _ in headers) + "|"
    return "\n".join([line(headers), rule, *map(line, rows)])


def markdown(table: Table) -> str:
    note = f"\n\n{markup.markdown(table.note)}" if table.note else ""
    title = markup.markdown(table.title)
    return f"**{title}**\n\n{markdown_grid(*display(table))}{note}\n"


_LATEX_SPECIAL = {c: f"\\{c}" for c in "&%$#_{}"} | {
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
}


def _latex_text(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def latex_escape(text: str) -> str:
    """LaTeX-safe text; a Markdown link keeps its name only; user text (``markup.name``) is
    escaped as it is, hidden characters as their escapes (``\\n``: a blank line would end the
    table's paragraph)."""
    return markup.render(text, lambda body: _latex_text(LINK.sub(r"\1", body)), _latex_text)


def latex(table: Table) -> str:
    """A booktabs ``table`` environment with caption and label ``tab:<name>``."""
    headers, rows = display(table)
    body = [" & ".join(map(latex_escape, cells)) + r" \\" for cells in rows]
    return "\n".join([
        r"\begin{table}",
        rf"\caption{{{latex_escape(table.title)}}}",
        rf"\label{{tab:{table.name}}}",
        rf"\begin{{tabular}}{{{'l' * len(headers)}}}",
        r"\toprule",
        " & ".join(map(latex_escape, headers)) + r" \\",
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
        "",
    ])  # fmt: skip
