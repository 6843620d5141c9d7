"""One self-contained HTML page per report or leaderboard: nothing is fetched when it is viewed.

Tables are sortable (click a header; numbers sort as numbers, ``–`` last; a rank's confidence set
``[low, high]`` by its lower end going up, by its upper end going down) and filterable (a text
box above each); figures are the report's SVG files, inlined; the examples of ``examples`` are
laid out per task and model. Plain string building with ``html.escape``: the page has a dozen
element kinds, a template engine would be more code.

User text (a model's label, a task's name, a note, a cell) is HTML-escaped and never read as
Markdown: only this package's own text is (``markup``); a link goes only to a relative path
inside the output folder or to ``https:``. The page's Content-Security-Policy allows its own
script (by its SHA-256) and style, inline SVG and nothing fetched: a script that came from a name
would not run even if it reached the page.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Sequence
from pathlib import Path

from wsc_tasks import markup
from wsc_tasks.report.examples import CATEGORIES, ProblemView, TaskExamples, fmt
from wsc_tasks.report.figures import NARROW, inline_svg
from wsc_tasks.report.symbols import describe
from wsc_tasks.report.tables import LINK, Table, display

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1500px; padding: 0 1em;
  color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .4em 0 1.2em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[data-dir=asc]::after { content: " \\25B2"; }
table.sortable th[data-dir=desc]::after { content: " \\25BC"; }
tbody tr:nth-child(even) { background: #fafafa; }
.caption { font-weight: bold; margin-top: 1em; }
input.filter { margin: .2em 0; padding: 2px 4px; width: 20em; }
svg.figure { width: 100%; height: auto; display: block; margin: .5em 0 1.5em; }
details { margin: .3em 0; } summary { cursor: pointer; font-weight: bold; }
.right { background: #d9f2d9; } .wrong { background: #f8d7d7; }
.side { display: flex; gap: 1em; } .side > div { flex: 1; min-width: 0; overflow-x: auto; }
td.score { white-space: nowrap; } .side td.text { min-width: 11em; }
table.examples { width: 100%; } table.examples td.text { min-width: 18em; }
table.examples tbody { border-top: 3px solid #999; }
.muted { color: #666; } code { background: #f3f3f3; padding: 0 2px; }
/* -- report: findings, notes, contents, tooltips, narrow screens (begin) -- */
.scroll { max-width: 100%; overflow-x: auto; }
.scroll > table { margin-top: 0; }
nav.toc { margin: .6em 0 1em; line-height: 1.8; }
.notes { background: #fff4d6; border: 1px solid #e0c060; padding: .2em 1em; margin: 1em 0; }
.notes h3 { margin: .4em 0; font-size: 1.05em; }
th abbr { text-decoration: underline dotted; cursor: help; }
h2, p, li { overflow-wrap: anywhere; }
table.sortable td { white-space: nowrap; }
table.sortable td.long { white-space: normal; overflow-wrap: anywhere; min-width: 16em; }
table.sortable tbody tr { background: #fff; }
table.sortable tbody tr:nth-child(even) { background: #fafafa; }
.scroll table.sortable tr > :first-child { position: sticky; left: 0; background: inherit; }
.scroll table.sortable thead tr { background: #f3f3f3; }
@media (max-width: 700px) {
  body { font-size: 14px; padding: 0 .5em; }
  input.filter { width: 100%; box-sizing: border-box; }
  .side { flex-direction: column; }
  table.examples td.text, .side td.text { min-width: 8em; }
}
details.columns { display: inline-block; margin: 0 0 .3em 1em; font-size: 13px; }
details.columns label { display: inline-block; margin-right: .8em; white-space: nowrap; }
h2 + ul.findings, ul.findings { padding-left: 1.2em; } ul.findings li { margin: .25em 0; }
h1 + h2 { margin-top: .8em; } /* the findings: on the first screen */
/* -- report: findings, notes, contents, tooltips, narrow screens (end) -- */
nav.toc ol { margin: .3em 0; padding-left: 1.6em; } nav.toc li { margin: .1em 0; }
figure { margin: 1em 0 1.5em; } figure figcaption { font-weight: bold; margin-bottom: .3em; }
.scroll.figure svg.figure { margin: 0; }
.scroll.figure.narrow { display: none; }
details.table { margin: .6em 0 1em; } details.table > summary { margin: 0 0 .3em; }
"""

SCRIPT = """
function cellKey(row, i, ascending) {
  const text = row.cells[i] ? row.cells[i].textContent.trim() : "";
  const set = /^\\[(\\d+), (\\d+)\\]$/.exec(text);
  if (set) return Number(ascending ? set[1] : set[2]);
  const number = parseFloat(text.replace(/^[<>]\\s*/, "").replace("\\u2212", "-"));
  return isNaN(number) ? text : number;
}
function compareKeys(x, y) {
  if (typeof x === "number" && typeof y === "number") return x - y;
  if (typeof x === "number") return -1;
  if (typeof y === "number") return 1;
  return x.localeCompare(y);
}
document.querySelectorAll("table.sortable").forEach(function (table) {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach(function (head, i) {
    head.addEventListener("click", function () {
      const ascending = head.dataset.dir !== "asc";
      heads.forEach(function (h) { delete h.dataset.dir; });
      head.dataset.dir = ascending ? "asc" : "desc";
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort(function (a, b) {
        const order = compareKeys(cellKey(a, i, ascending), cellKey(b, i, ascending));
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
document.querySelectorAll("details.columns input").forEach(function (box) {
  box.addEventListener("change", function () {
    const table = document.getElementById(box.dataset.table);
    const i = Number(box.dataset.column);
    Array.from(table.rows).forEach(function (row) {
      if (row.cells[i]) row.cells[i].hidden = !box.checked;
    });
  });
});
document.querySelectorAll("input.filter").forEach(function (box) {
  box.addEventListener("input", function () {
    const query = box.value.toLowerCase();
    const table = document.getElementById(box.dataset.table);
    Array.from(table.tBodies[0].rows).forEach(function (row) {
      row.hidden = query !== "" && !row.textContent.toLowerCase().includes(query);
    });
  });
});
"""


def esc(text: object) -> str:
    """Text as HTML shows it: escaped, hidden characters (a newline, a right-to-left override)
    written as their escapes (``markup.visible``)."""
    return html.escape(markup.visible(text), quote=True)


def _anchor(match: re.Match[str]) -> str:
    href = html.unescape(match[2])
    if not markup.safe_href(href):
        return match[0]  # shown as the text it is, not followed
    return f'<a href="{esc(href)}">{match[1]}</a>'


def links(escaped: str) -> str:
    """Markdown links ``[name](relative path or https: address)`` of escaped text as anchors;
    a link to anything else stays text."""
    return LINK.sub(_anchor, escaped)


def _markdown_html(text: str) -> str:
    coded = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=True))
    bold = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", coded)
    return links(re.sub(r"(?<![*\w])\*([^*\s][^*]*?)\*(?![*\w])", r"<em>\1</em>", bold))


def inline(text: str) -> str:
    """This package's Markdown (`code` spans, **bold**, *emphasis*, links: the prose's only
    markup) as HTML; user text in it (``markup.name``, ``markup.code``) escaped, never read as
    Markdown."""
    return markup.render(text, _markdown_html, esc, lambda shown: f"<code>{esc(shown)}</code>")


def prose(text: str, item: str = "") -> str:
    """Markdown paragraphs (blank-line separated) and ``- `` lists as HTML; ``item``: the class
    of the lists' items (``conclusion``: a model's, on the report's first screen)."""
    out = []
    kind = f' class="{esc(item)}"' if item else ""
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        if all(line.startswith("- ") for line in lines):
            items = "".join(f"<li{kind}>{inline(line[2:])}</li>" for line in lines)
            out.append(f'<ul class="findings">{items}</ul>' if item else f"<ul>{items}</ul>")
        else:
            out.append(f"<p>{inline(' '.join(lines))}</p>")
    return "\n".join(out)


def notes_html(notes: Sequence[str]) -> str:
    """The notes a reader must see before the tables, in a box of their own. A note is text (it
    names models, tasks and files), not Markdown."""
    items = "".join(f"<li><b>Note:</b> {esc(note)}.</li>" for note in notes)
    return f'<div class="notes"><h3>Notes</h3><ul>{items}</ul></div>'


def header_html(header: str) -> str:
    """A column header; a symbol's meaning as its tooltip (``symbols.describe``)."""
    meaning = describe(markup.plain(header))
    shown = inline(header)
    if meaning is None:
        return f"<th>{shown}</th>"
    return f'<th><abbr title="{esc(meaning)}">{shown}</abbr></th>'


LONG = 40  # characters: a cell longer than this (model arguments, a glossary entry) may wrap


def _cell(value: object) -> str:
    """A table cell: on one line (an interval, a name, links), or wrapping if it is long text."""
    text = str(value)
    shown = markup.render(text, lambda body: links(html.escape(body, quote=True)), esc)
    long = len(markup.plain(text, lambda body: LINK.sub(r"\1", body))) > LONG
    return f'<td class="long">{shown}</td>' if long else f"<td>{shown}</td>"


TOGGLE = 8  # columns: a table this wide gets a menu to hide and show its columns


def _toggle(ident: str, headers: Sequence[str]) -> str:
    """Checkboxes that hide and show each column but the first (the model: sticky)."""
    boxes = "".join(
        f'<label><input type="checkbox" checked data-table="{ident}" data-column="{i}"> '
        f"{inline(header)}</label>"
        for i, header in enumerate(headers)
        if i > 0
    )
    return f'<details class="columns"><summary>Columns</summary>{boxes}</details>\n'


FOLD = 12  # rows: a longer table is folded under its caption (a click opens it)


def table_html(table: Table, fold: bool = True) -> str:
    """A caption, a filter box and the sortable table, with the Markdown table's cell texts; a
    table of more than ``FOLD`` rows folded under its caption and row count, unless ``fold`` is
    False (a leaderboard's ranking: its top on the first screen)."""
    shown = display(table)
    if isinstance(shown, tuple):  # (headers, rows), as main's tables.display now returns
        headers, cells = shown
    else:  # a pandas DataFrame of texts
        headers, cells = list(shown.columns), shown.itertuples(index=False)
    ident = f"table-{table.name}"
    head = "".join(header_html(str(c)) for c in headers)
    rows = "".join("<tr>" + "".join(map(_cell, row)) + "</tr>\n" for row in cells)
    note = f"<p>{inline(table.note)}</p>" if table.note else ""
    toggle = _toggle(ident, [str(h) for h in headers]) if len(headers) >= TOGGLE else ""
    inner = (
        f'<input class="filter" type="search" placeholder="filter rows" data-table="{ident}">\n'
        f"{toggle}"
        f'<div class="scroll"><table class="sortable" id="{ident}"><thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{rows}</tbody></table></div>{note}\n"
    )
    if fold and len(table.rows) > FOLD:
        return (
            f'<details class="table"><summary class="caption">{inline(table.title)} '
            f'<span class="muted">({len(table.rows)} rows: click to show)</span></summary>\n'
            f"{inner}</details>\n"
        )
    return f'<p class="caption">{inline(table.title)}</p>\n{inner}'


def policy(script: str = SCRIPT) -> str:
    """The page's Content-Security-Policy: its own script only (by its SHA-256), inline styles
    (the figures' SVG has style attributes), nothing fetched, no form, no base URL."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy()}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}{narrow_rules(body)}</style>\n</head>\n"
        f"<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def figure_html(svg: Path, caption: str) -> str:
    """The figure inline, never shrunk below ``figures.READABLE`` of its size (its smallest text
    12 px); where the page is too narrow for that, its narrow layout (``figures.NARROW``: the
    panels stacked) takes its place, chosen by the width of the screen, not scaled down."""
    if not svg.is_file():
        return ""
    ident = f"f-{esc(svg.stem)}"
    wide = inline_svg(svg, svg.stem)
    narrow = svg.with_name(f"{svg.stem}{NARROW}.svg")
    swap, below = "", ""
    match = re.search(r'min-width: (\d+)px"', wide)
    if narrow.is_file() and match:
        # the page's side padding and a scroll bar: below this the wide layout would scroll
        below = f' data-narrow-below="{int(match[1]) + 48}"'
        swap = f'<div class="scroll figure narrow">{inline_svg(narrow, svg.stem + NARROW)}</div>'
    return (
        f'<figure id="{ident}"{below}><figcaption>{inline(caption)}</figcaption>'
        f'<div class="scroll figure wide">{wide}</div>{swap}</figure>'
    )


def narrow_rules(body: str) -> str:
    """The style that shows each figure's narrow layout in place of its wide one on a screen
    narrower than the figure's ``data-narrow-below`` (``figure_html``)."""
    return "".join(
        f"@media (max-width: {below}px) {{ #{ident} .wide {{ display: none; }} "
        f"#{ident} .narrow {{ display: block; }} }}\n"
        for ident, below in re.findall(r'<figure id="([^"]+)" data-narrow-below="(\d+)"', body)
    )


# -- examples ----------------------------------------------------------------------------------
def _scores(pair: tuple[float, float] | None) -> str:
    return "–" if pair is None else f"{fmt(pair[0])} / {fmt(pair[1])}"


def _problem_rows(problems: Sequence[ProblemView]) -> str:
    out = []
    for p in problems:
        first = next(iter(p.chosen.values()), None)
        cells = [f"<td>{esc(p.uid)}</td>", f'<td class="text">{esc(p.text)}</td>']
        for i, option in enumerate(p.options):
            mark = " ✓" if i == p.label else ""
            kind = ("right" if i == p.label else "wrong") if i == first else ""
            cells.append(f'<td class="{kind}">{esc(option)}{mark}</td>')
        cells.append(f'<td class="score">{_scores(p.partial)}</td>')
        cells.append(f'<td class="score">{_scores(p.full)}</td>')
        if list(p.chosen) == ["headline"]:
            chosen = str(p.chosen["headline"] + 1)
        else:
            chosen = ", ".join(f"{m}: {c + 1}" for m, c in p.chosen.items())
        cells.append(f"<td>{esc(chosen)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out)


EXAMPLE_HEAD = (
    "<thead><tr><th>problem</th><th>text</th><th>option 1</th><th>option 2</th>"
    "<th>partial (1 / 2)</th><th>sentence (1 / 2)</th><th>chose</th></tr></thead>"
)


def _example_table(groups: Sequence[Sequence[ProblemView]]) -> str:
    bodies = "".join(f"<tbody>{_problem_rows(g)}</tbody>" for g in groups)
    return f'<div class="scroll"><table class="examples">{EXAMPLE_HEAD}{bodies}</table></div>'


def _model_examples(found: TaskExamples) -> str:
    parts = [f"<h4>{esc(found.model)}</h4>"]
    if found.counts:
        total = sum(found.counts.values())
        counts = ", ".join(f"{k} {v}" for k, v in found.counts.items())
        parts.append(f"<p>Schema groups ({total}): {esc(counts)}.</p>")
        for kind in CATEGORIES:
            groups = found.categories.get(kind) or []
            if groups:
                parts.append(
                    f"<p><b>{kind}</b> ({len(groups)} of {found.counts[kind]} shown)</p>"
                    + _example_table(groups)
                )
    if found.n_pairs:
        unit = "schemas whose number of solved problems changes" if found.schema_level else (
            "problems whose answer flips (right ↔ wrong)"
        )  # fmt: skip
        parts.append(
            f"<p><b>{found.n_flips}</b> {unit}, of {found.n_pairs} pairs; "
            f"{len(found.flips)} shown, original left, perturbed right.</p>"
        )
        for left, right in found.flips:
            parts.append(
                f'<div class="side"><div>{_example_table([left])}</div>'
                f"<div>{_example_table([right])}</div></div>"
            )
    if found.disagreements and found.disagreements[0][2]:
        top = "; ".join(f"{a} vs {b}: {n} of {of}" for a, b, n, of in found.disagreements[:5])
        parts.append(f"<p>Problems answered differently by two scoring methods: {esc(top)}.</p>")
        if found.disagreement_examples:
            a, b = found.disagreements[0][:2]
            parts.append(
                f"<p>Where {esc(a)} and {esc(b)} disagree "
                f"({len(found.disagreement_examples)} shown):</p>"
                + _example_table([[p] for p in found.disagreement_examples])
            )
    return "\n".join(parts)


EXAMPLES_TEXT = (
    "Per task and model, from the logged samples, in document order: schema groups the headline "
    "method solves (every problem right), half-solves and anti-solves (none right); for a "
    "consistency task, the problems whose answer flips under the perturbation; and the scoring "
    "methods that disagree most. Scores of option 1 / option 2: partial, the log-likelihood "
    "log P(text after the blank | text up to it); sentence, the log-likelihood of the whole "
    "sentence (when the run asked for it). ✓ marks the right option; the option the headline "
    "method (or the first method named under chose) picked is green when right, red when wrong."
)


def examples_html(found: Sequence[TaskExamples]) -> str:
    by_task: dict[str, list[TaskExamples]] = {}
    for item in found:
        by_task.setdefault(item.task, []).append(item)
    parts = [f"<p>{esc(EXAMPLES_TEXT)}</p>"]
    for task, items in by_task.items():
        inner = "\n".join(_model_examples(i) for i in items)
        parts.append(f"<details><summary>{esc(task)}</summary>\n{inner}\n</details>")
    return "\n".join(parts)
