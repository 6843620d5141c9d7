"""The leaderboard written: ``leaderboard.md``, ``.html`` and ``.csv`` (one row per model), and
the lines a sweep prints at its end; every format says the same numbers and notes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from wsc_tasks.reporting import html_report
from wsc_tasks.reporting.leaderboard.board import Leaderboard, build
from wsc_tasks.reporting.leaderboard.entries import COST, Entry
from wsc_tasks.reporting.sections import contamination as contamination_check
from wsc_tasks.reporting.tables import markdown, numeric


def markdown_text(board: Leaderboard) -> str:
    lines = ["# Leaderboard", "", "## Findings", ""]
    lines += [board.overview, ""] if board.overview else []
    lines += [f"- **{label}**: {said}" for label, said in board.findings]
    lines += ["", *(f"**Note:** {note}." for note in board.notes)]
    lines += ["", board.intro, ""]
    for table in board.tables.shown():
        lines += [markdown(table)]
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            lines += [board.cost, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def html_text(board: Leaderboard) -> str:
    body = ["<h1>Leaderboard</h1>", "<h2>Findings</h2>"]
    body += [f"<p>{html_report.inline(board.overview)}</p>"] if board.overview else []
    items = "".join(
        f"<li><b>{html_report.esc(label)}</b>: {html_report.inline(said)}</li>"
        for label, said in board.findings
    )
    body += [f'<ul class="findings">{items}</ul>'] if items else []
    body += [html_report.notes_html(board.notes)] if board.notes else []
    body += [f"<p>{html_report.inline(board.intro)}</p>"]
    for table in board.tables.shown():
        body.append(html_report.table_html(table))
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            body.append(f"<p>{html_report.inline(board.cost)}</p>")
    return html_report.page("Leaderboard", "\n".join(body))


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
        frame = pd.DataFrame(columns=["model", "rank"])
    for table in (found.controls, found.consistency, found.models):
        if table.rows:
            extra = numeric(table).drop(columns=[COST], errors="ignore")
            frame = frame.merge(extra, on="model", how="left")
    checked = contamination_columns(board.entries)
    if len(checked.columns) > 1:
        frame = frame.merge(checked, on="model", how="left")
    said = dict(board.findings)
    frame["finding"] = [said.get(str(m), "") for m in frame["model"]]
    notes = {e.label: "; ".join(e.run.notes()) for e in board.entries}
    frame["notes"] = [notes.get(str(m), "") for m in frame["model"]]
    frame["status"] = ""
    for name, why in board.problems:
        if name in set(frame["model"]):
            frame.loc[frame["model"] == name, "status"] = why.splitlines()[0]
        else:
            frame.loc[len(frame), ["model", "status"]] = [name, why.splitlines()[0]]
    frame["rank"] = frame["rank"].map(lambda r: "" if r in ("–", None) or pd.isna(r) else int(r))
    return frame


def save(board: Leaderboard, out: Path) -> list[Path]:
    """``<out>/leaderboard.md``, ``.csv`` and ``.html``."""
    md, csv, page = (out / f"leaderboard.{kind}" for kind in ("md", "csv", "html"))
    md.write_text(markdown_text(board), encoding="utf-8")
    csv_frame(board).to_csv(csv, index=False, lineterminator="\n")
    page.write_text(html_text(board), encoding="utf-8")
    return [md, csv, page]


def write(names: Sequence[str], out: Path, task: str, iters: int, seed: int) -> list[Path]:
    """The leaderboard of the models of a sweep, written (``save``)."""
    return save(build(names, out, task, iters, seed), out)


def printed(board: Leaderboard) -> list[str]:
    """What a sweep prints at its end: the findings and the notes, as the leaderboard opens."""
    lines = [board.overview] if board.overview else []
    lines += [f"- {label}: {said}" for label, said in board.findings]
    lines += [f"Note: {note}." for note in board.notes]
    return [line.replace("`", "") for line in lines]
