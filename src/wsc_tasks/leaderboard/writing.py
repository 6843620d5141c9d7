"""The leaderboard written: ``leaderboard.md``, ``.html`` and ``.csv`` (one row per model), and
the lines a sweep prints at its end; every format says the same numbers and notes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

import wsc_tasks.leaderboard.tiers as tiers
from wsc_tasks import markup
from wsc_tasks.leaderboard.board import Leaderboard, build
from wsc_tasks.leaderboard.entries import COST, Entry
from wsc_tasks.leaderboard.layout import MARGINAL, RANK, SIMULTANEOUS
from wsc_tasks.report import figures, html_page
from wsc_tasks.report.sections import contamination as contamination_check
from wsc_tasks.report.tables import Table, markdown, numeric, write_csv

FIRST_SCREEN = 10  # findings and notes shown unfolded on the HTML page; the rest in a <details>
TOP = 3  # findings unfolded on a larger board's page: the ranking starts on its first screen


def _figure(board: Leaderboard) -> bool:
    """Whether the board draws its ranks figure (``tiers``): two ranked models or more."""
    return board.ranks is not None and len(board.ranked) > 1


def markdown_text(board: Leaderboard) -> str:
    lines = ["# Leaderboard", "", "## Findings", ""]
    lines += [markup.markdown(board.overview), ""] if board.overview else []
    lines += [
        f"- **{markup.escape_markdown(label)}**: {markup.markdown(said)}"
        for label, said in board.findings
    ]
    lines += ["", *(f"**Note:** {markup.escape_markdown(note)}." for note in board.notes)]
    lines += ["", board.intro, ""]
    for table in board.tables.shown():
        if table is board.tables.ranking and _figure(board):
            lines += [f"![Ranks with their 95% confidence sets, in tiers]({tiers.STEM}.svg)", ""]
        lines += [markdown(table)]
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            lines += [board.cost, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def html_text(board: Leaderboard, out: Path | None = None) -> str:
    """The page; with ``out``, the ranks figure written there (``tiers``) inlined above the
    ranking."""
    body = ["<h1>Leaderboard</h1>", "<h2>Findings</h2>"]
    body += [f"<p>{html_page.inline(board.overview)}</p>"] if board.overview else []
    items = [
        f"<li><b>{html_page.esc(label)}</b>: {html_page.inline(said)}</li>"
        for label, said in board.findings
    ]
    # a large board: its top models' findings on the first screen, above the ranking; the rest
    # folded
    top = len(items) if len(items) <= FIRST_SCREEN else TOP
    body += [f'<ul class="findings">{"".join(items[:top])}</ul>'] if items else []
    if len(items) > top:
        rest = "".join(items[top:])
        body.append(
            f"<details><summary>the findings of the other {len(items) - top} "
            f'models</summary><ul class="findings">{rest}</ul></details>'
        )
    if len(board.notes) > FIRST_SCREEN:
        body.append(
            f"<details><summary>{len(board.notes)} notes</summary>"
            f"{html_page.notes_html(board.notes)}</details>"
        )
    elif board.notes:
        body.append(html_page.notes_html(board.notes))
    if len(items) > FIRST_SCREEN:  # the ranking right after the findings on the first screen
        body.append(
            "<details><summary>how to read the tables</summary>"
            f"<p>{html_page.inline(board.intro)}</p></details>"
        )
    else:
        body += [f"<p>{html_page.inline(board.intro)}</p>"]
    for table in board.tables.shown():
        if table is board.tables.controls:
            body.append(controls_html(table, board.tables.controls_above))
            continue
        svg = out / f"{tiers.STEM}.svg" if out is not None else None
        if table is board.tables.ranking and _figure(board) and svg and svg.is_file():
            drawn = (
                '<figure><div class="scroll figure">'
                f"{figures.inline_svg(svg, tiers.STEM)}</div></figure>"
            )
            if len(board.ranked) > FIRST_SCREEN:  # a large board: the ranking on the first screen
                drawn = (
                    "<details><summary>the ranks with their 95% confidence sets, in tiers (a "
                    f"figure of the top {min(len(board.ranked), tiers.TOP)})</summary>"
                    f"{drawn}</details>"
                )
            body.append(drawn)
        body.append(html_page.table_html(table, fold=table is not board.tables.ranking))
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            body.append(f"<p>{html_page.inline(board.cost)}</p>")
    return html_page.page("Leaderboard", "\n".join(body))


def controls_html(table: Table, above: int) -> str:
    """The control table led by the ``above`` controls some model is above chance on (its first
    columns); the others folded below it (a click opens them), so that the controls that say
    something are on screen, not past the tenth column of a table 2,400 px wide."""
    if above == len(table.columns) - 1:
        return html_page.table_html(table)
    lead = Table(table.name, table.title, table.columns[: above + 1])
    lead.rows = [row[: above + 1] for row in table.rows]
    rest = Table(
        f"{table.name}_rest",
        "The other control baselines: no model above chance on them",
        [table.columns[0], *table.columns[above + 1 :]],
        [[row[0], *row[above + 1 :]] for row in table.rows],
    )
    shown = html_page.table_html(lead) if above else (
        f'<p class="caption">{html_page.inline(table.title)}</p>'
        "<p>No model is above chance on any control baseline.</p>"
    )  # fmt: skip
    folded = len(rest.columns) - 1
    return (
        f'{shown}<details class="table"><summary>{folded} control baseline'
        f"{'s' if folded > 1 else ''} no model is above chance on (click to show)</summary>\n"
        f"{html_page.table_html(rest, fold=False)}</details>\n"
    )


def contamination_columns(entries: Sequence[Entry]) -> pd.DataFrame:
    """The contamination figures as numbers, one row per model, for the CSV."""
    records = []
    for entry in entries:
        record: dict[str, object] = {"model": entry.label}
        for _, _, found, adjusted in contamination_check.rows(entry.run):
            d = found.dataset
            record |= {f"contamination p {d}": found.p, f"contamination Holm p {d}": adjusted,
                       f"contamination effect {d}": found.effect,
                       f"contamination effect {d} low": found.low,
                       f"contamination effect {d} high": found.high}  # fmt: skip
        records.append(record)
    return pd.DataFrame.from_records(records)


def csv_frame(board: Leaderboard) -> pd.DataFrame:
    """One row per model: every number of every table (the matrix aside), its findings sentence
    and notes; then the models without a result, with their status."""
    found = board.tables
    frame = pd.concat([numeric(found.ranking), numeric(found.chance_models)], ignore_index=True)
    if frame.empty:
        frame = pd.DataFrame(columns=["model", RANK])
    for table in (found.controls, found.consistency, found.models):
        if table.rows:
            extra = numeric(table).drop(columns=[COST], errors="ignore")
            frame = frame.merge(extra, on="model", how="left")
    if found.questions.rows:  # a model asked questions only has a row of its own
        frame = frame.merge(numeric(found.questions), on="model", how="outer", sort=False)
    checked = contamination_columns(board.entries)
    if len(checked.columns) > 1:
        frame = frame.merge(checked, on="model", how="left")
    if "Hub id" in frame:  # the id, not its link; the link (the whole commit in it) beside it
        hubs = {e.label: e.done.get("hub") or {} for e in board.entries}
        frame["Hub id"] = [hubs.get(str(m), {}).get("repo") for m in frame["model"]]
        at = list(frame.columns).index("Hub id") + 1
        frame.insert(at, "Hub page", [hubs.get(str(m), {}).get("url") for m in frame["model"]])
    said = {label: markup.plain(text) for label, text in board.findings}
    frame["finding"] = [said.get(str(m), "") for m in frame["model"]]
    notes = {e.label: "; ".join(e.run.notes()) for e in board.entries}
    frame["notes"] = [notes.get(str(m), "") for m in frame["model"]]
    frame["status"] = ""
    for name, why in board.problems:
        if name in set(frame["model"]):
            frame.loc[frame["model"] == name, "status"] = why.splitlines()[0]
        else:
            frame.loc[len(frame), ["model", "status"]] = [name, why.splitlines()[0]]
    frame = frame.drop(columns=[SIMULTANEOUS, MARGINAL], errors="ignore")  # blank: chance rows
    for column in (c for c in frame.columns if c.startswith((SIMULTANEOUS, MARGINAL))):
        frame[column] = frame[column].astype("Int64")  # whole ranks, blank for chance models
    frame[RANK] = frame[RANK].map(lambda r: "" if r in ("–", None) or pd.isna(r) else int(r))
    return frame


def save(board: Leaderboard, out: Path) -> list[Path]:
    """``<out>/leaderboard.md``, ``.csv`` and ``.html``, and the ranks figure (``tiers``) of a
    board of two ranked models or more."""
    md, csv, page = (out / f"leaderboard.{kind}" for kind in ("md", "csv", "html"))
    drawn = []
    if _figure(board):
        assert board.ranks is not None
        drawn = tiers.figure(board.ranked, board.ranks, out, board.task)
    md.write_text(markdown_text(board), encoding="utf-8")
    write_csv(csv_frame(board), csv)
    page.write_text(html_text(board, out), encoding="utf-8")
    return [md, csv, page, *drawn]


def write(names: Sequence[str], out: Path, task: str, iters: int, seed: int) -> list[Path]:
    """The leaderboard of the models of a sweep, written (``save``)."""
    return save(build(names, out, task, iters, seed), out)


def printed(board: Leaderboard) -> list[str]:
    """What a sweep prints at its end: the findings (of the first ``FIRST_SCREEN`` models of a
    large board) and the notes, as the leaderboard opens."""

    def shown(text: str) -> str:  # this package's backticks dropped, names as they are
        return markup.plain(text, lambda own: own.replace("`", ""))

    lines = [shown(board.overview)] if board.overview else []
    lines += [
        f"- {markup.visible(label)}: {shown(said)}" for label, said in board.findings[:FIRST_SCREEN]
    ]
    if len(board.findings) > FIRST_SCREEN:  # a large board: the rest in its files
        rest = len(board.findings) - FIRST_SCREEN
        lines.append(f"- and {rest} more models: their findings are in leaderboard.md, .html, .csv")
    lines += [f"Note: {markup.visible(note)}." for note in board.notes]
    return lines
