"""The glossary: every symbol of the report with its meaning (``report.symbols``)."""

from __future__ import annotations

from wsc_tasks.claims import calibration
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.report.sections import Context, Section
from wsc_tasks.report.symbols import GLOSSARY
from wsc_tasks.report.tables import Table

ORDER = 90


def build(context: Context) -> Section:
    table = Table("glossary", "Symbols and terms", ["symbol", "meaning"])
    asked = any(t.kind is TaskKind.QUESTION for run in context.runs for t in run.tasks.values())
    # the symbols of the questions' answers only where some task was asked as questions
    hidden = set() if asked else {m.symbol for m in registry.select(value=registry.ANSWERS)}
    table.rows = [[symbol, meaning] for symbol, meaning in GLOSSARY.items() if symbol not in hidden]
    return Section(
        "Glossary: every symbol of this report",
        text="The metrics' symbols and descriptions are those of the metric registry "
        "(`wsc_tasks/metrics/registry.py`); in report.html each column header that is a symbol "
        "shows its meaning when pointed at. The findings' decision rule (Holm within each family "
        "of claims, two-sided p, the interval on the claimed side) is measured by simulation: "
        + calibration.sentence(calibration.table()),
        tables=[table],
    )
