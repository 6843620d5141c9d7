"""Writers from canonical schemas back to the published file formats.

``format_maler`` is the inverse of ``parsers.parse_maler``: it writes the thesis's text format
byte for byte (fixed-width number columns, no newline after the last row), so generated datasets
can be compared line by line with the published ones and shared in the same form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wsc_tasks.data.parsers import BLANK, BLANK2, FILLER_SEP
from wsc_tasks.data.problems import Problem, Schema

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _text(problem: Problem) -> str:
    blanks = (BLANK, BLANK2)
    if problem.n_blanks > len(blanks):
        raise ValueError(f"{problem.source or problem.uid}: the format holds at most two blanks")
    parts = [problem.segments[0]]
    for blank, segment in zip(blanks, problem.segments[1:], strict=False):
        parts.extend((blank, segment))
    return "".join(parts)


def _check(value: str, where: str, reserved: str = "&\n") -> str:
    if any(c in value for c in reserved):
        raise ValueError(f"{where}: {value!r} contains a character the format reserves")
    return value


def maler_lines(header: Mapping[str, str], mode: str, schemas: Sequence[Schema]) -> list[str]:
    """The lines of a maler file: header, mode, then one row per problem.

    Columns: kind / schema number in the file (1…) / letter / original schema number
    (``Schema.number``) / problem number in the file (1…) / original problem number
    (``Problem.number``).
    """
    lines = ["; ".join(f"{key}: {value}" for key, value in header.items()), mode]
    problem_number = 0
    for schema_number, schema in enumerate(schemas, start=1):
        if schema.kind not in ("w", "s", "t"):
            raise ValueError(f"schema {schema.uid}: kind {schema.kind!r} has no maler letter")
        for letter, problem in zip(_LETTERS, schema.problems, strict=False):
            problem_number += 1
            where = problem.source or problem.uid
            options = [
                FILLER_SEP.join(_check(f, where, "&\n" + FILLER_SEP) for f in option)
                for option in problem.options
            ]
            original = schema.number if schema.number is not None else schema_number
            number = problem.number if problem.number is not None else problem_number
            body = "&".join([_check(_text(problem), where), *options, str(problem.label)])
            lines.append(
                f"{schema.kind}/{schema_number:>3}/ {letter}/{original:>3}/"
                f"{problem_number:>4}/{number:>4}: {body}"
            )
    return lines


def format_maler(header: Mapping[str, str], mode: str, schemas: Sequence[Schema]) -> str:
    """The whole file, as the thesis's files are written (no final newline)."""
    return "\n".join(maler_lines(header, mode, schemas))
