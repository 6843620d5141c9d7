"""lm-eval patch 16, ``print_counts_as_integers``: what it changes and why, then the change."""

from __future__ import annotations

import functools
import re

from wsc_tasks.harness.patches.base import (
    _MARK,
    _ORIGINALS,
    TESTED,
    Patch,
    _replace,
    original,
)
from wsc_tasks.metrics.registry import ACC


# lm-eval's printed table writes every value of the Value column with the column's precision, so a
# count of ours reads "266.0000" (and "± N/A", an error it does not have) beside the accuracies.
# The table lm-eval prints is rewritten, for the rows of this package's count metrics with a whole
# value: the number as an integer, right-aligned in its cell, no ± and no stderr. Only the text is
# changed; the results files keep lm-eval's values. No upstream issue found; upstream, a metric
# could carry its number format. ``wsc-tasks run`` replaces ``lm_eval.utils.make_table`` before
# lm-eval's CLI starts; a plain ``lm_eval`` run has taken the function into its command
# (``from lm_eval.utils import make_table``) before this package's tasks load, so there the
# function object it holds gets the wrapper's code (``print_counts_in_place``), its own code kept
# as a copy under the name ``_wsc_tasks_make_table`` of lm-eval's module.
def is_count_row(metric: str) -> bool:
    """A row of lm-eval's table whose metric is one of this package's counts."""
    from wsc_tasks.metrics import registry

    key = registry.Key.parse(metric)
    return key is not None and key.metric.kind == "count"


def integer_counts(table: str) -> str:
    """``table`` (lm-eval's Markdown) with the whole values of count rows written as integers."""
    lines = table.split("\n")
    for i, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) != 11 or not is_count_row(cells[5].strip()):
            continue
        value = cells[7].strip()
        if not re.fullmatch(r"\d+(\.0*)?", value):  # 80.0000, or 5 (an int count)
            continue
        cells[7] = value.split(".")[0].rjust(len(cells[7]))
        if cells[9].strip() == "N/A":
            cells[8], cells[9] = " " * len(cells[8]), " " * len(cells[9])
        lines[i] = "|".join(cells)
    return "\n".join(lines)


IN_PLACE = "_wsc_tasks_in_place"  # the mark of ``make_table`` rewritten in place


def print_counts_as_integers() -> bool:
    """Section 16, once per process; True if ``make_table`` was wrapped now."""
    from lm_eval import utils

    make_table_original = utils.make_table
    if getattr(make_table_original, IN_PLACE, False):  # rewritten already (a plain run's tasks)
        return False

    @functools.wraps(make_table_original)
    def make_table(*args: object, **kwargs: object) -> str:
        return integer_counts(make_table_original(*args, **kwargs))

    return _replace(utils, "make_table", make_table)


def _table_of_integer_counts(
    result_dict: dict, column: str = "results", sort_results: bool = False
) -> str:
    """The code ``make_table`` runs once rewritten in place: its own (the copy), then the counts
    (names resolved in lm-eval's module, where ``print_counts_in_place`` put them)."""
    table = _wsc_tasks_make_table(result_dict, column, sort_results)  # type: ignore[name-defined]  # noqa: F821, E501
    return str(_wsc_tasks_integer_counts(table))  # type: ignore[name-defined]  # noqa: F821


def print_counts_in_place() -> bool:
    """Section 16 for a plain ``lm_eval`` run: ``lm_eval.utils.make_table``, the function object
    lm-eval's CLI already holds, runs the wrapper's code; True if rewritten now (never when
    ``print_counts_as_integers`` replaced it first, nor twice)."""
    import types

    from lm_eval import utils

    function = utils.make_table
    if getattr(function, _MARK, False) or getattr(function, IN_PLACE, False):
        return False
    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    function.__globals__["_wsc_tasks_make_table"] = copy
    function.__globals__["_wsc_tasks_integer_counts"] = integer_counts
    _ORIGINALS[(id(utils), "make_table")] = copy  # ``original``: lm-eval's own code
    function.__code__ = _table_of_integer_counts.__code__
    setattr(function, IN_PLACE, True)
    return True


def lm_eval_prints_a_whole_count_with_the_columns_decimals() -> bool:
    """lm-eval's ``make_table`` prints a count of 266 beside an accuracy as ``266.0000 ± N/A``."""
    from lm_eval import utils

    values: dict[str, float | str] = {"acc,none": 0.61654, "acc_stderr,none": 0.02}
    values |= {"n_problems,none": 266, "n_problems_stderr,none": "N/A"}
    results = {
        "results": {"wsc266": values},
        "versions": {"wsc266": 1.0},
        "n-shot": {"wsc266": 0},
        "higher_is_better": {"wsc266": {ACC: True, "n_problems": None}},
    }
    table = original(utils, "make_table")(results)
    rows = [line.split("|") for line in table.splitlines()]
    [row] = [cells for cells in rows if len(cells) == 11 and cells[5].strip() == "n_problems"]
    return [cell.strip() for cell in row[7:10]] == ["266.0000", "±", "N/A"]


PATCH = Patch(
    "print_counts_as_integers",
    "lm_eval.utils.make_table",
    TESTED,
    still_needed=lm_eval_prints_a_whole_count_with_the_columns_decimals,
)
