"""Parsers from each published file format into canonical problems and schemas.

Every malformed row raises ``ParseError`` naming the file and line: a silently skipped problem would
change every figure computed from the dataset.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from wsc_tasks.data.problems import Problem, Schema, SchemaKind
from wsc_tasks.data.sources import portable_name

BLANK = "*target*"
BLANK2 = "*target2*"
FILLER_SEP = "¶"

# w/  1/ a/  1/   1/   1: text&option A&option B&0
_MALER_LINE = re.compile(
    r"^(?P<kind>[wst])/\s*(?P<schema>\d+)/\s*(?P<letter>[a-d])/\s*(?P<orig_schema>\d+)/"
    r"\s*(?P<problem>\d+)/\s*(?P<orig_problem>\d+): (?P<body>.*)$"
)
MALER_MODES = ("by answer", "by key", "by value")


class ParseError(ValueError):
    """A row of a dataset file does not have the documented format."""


UTF8_BOM = b"\xef\xbb\xbf"


def read_text(path: Path) -> str:
    """A data file's text, one rule for every format: UTF-8, with or without a byte-order mark
    (dropped); another encoding, or an empty file, is an error naming the file (and the byte)."""
    raw = path.read_bytes()
    data = raw.removeprefix(UTF8_BOM)
    if not data.strip():
        raise ParseError(f"{path}: empty file: no problems in it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        offset = error.start + len(raw) - len(data)
        line = raw.count(b"\n", 0, offset) + 1
        utf16 = raw[:2] in (b"\xff\xfe", b"\xfe\xff")
        what = "UTF-16 text (its byte-order mark)" if utf16 else "not UTF-8"
        raise ParseError(
            f"{path}:{line}: {what}: byte 0x{raw[offset]:02x} at offset {offset}; save the "
            "file as UTF-8"
        ) from None


@dataclass(frozen=True)
class MalerFile:
    header: dict[str, str]
    mode: str
    schemas: tuple[Schema, ...]


def _split_blanks(text: str, where: str) -> tuple[str, ...]:
    n1, n2 = text.count(BLANK), text.count(BLANK2)
    if n1 != 1 or n2 > 1:
        raise ParseError(
            f"{where}: expected one {BLANK} (and at most one {BLANK2}), found {n1} and {n2}"
        )
    before, rest = text.split(BLANK)
    if n2 == 0:
        return (before, rest)
    if BLANK2 in before:
        raise ParseError(f"{where}: {BLANK2} comes before {BLANK}")
    middle, after = rest.split(BLANK2)
    return (before, middle, after)


def parse_maler(path: str | Path) -> MalerFile:
    """Read a file of the thesis's text format (all ``maler/`` data files)."""
    path = Path(path)
    name = portable_name(path)
    lines = read_text(path).splitlines()
    if len(lines) < 3:
        raise ParseError(f"{path}: expected a header line, a mode line and problems")
    header = {}
    for item in lines[0].split(";"):
        key, sep, value = item.partition(":")
        if not sep:
            raise ParseError(f"{path}:1: header item {item.strip()!r} is not 'key: value'")
        header[key.strip()] = value.strip()
    mode = lines[1].strip()
    if mode not in MALER_MODES:
        raise ParseError(f"{path}:2: mode line {mode!r} is not one of {MALER_MODES}")

    by_schema: dict[tuple[SchemaKind, int], list[tuple[str, int, Problem]]] = defaultdict(list)
    for lineno, line in enumerate(lines[2:], start=3):
        where = f"{path}:{lineno}"
        source = f"{name}:{lineno}"
        if not line.strip():
            raise ParseError(f"{where}: empty line inside the problem list")
        match = _MALER_LINE.match(line)
        if not match:
            raise ParseError(
                f"{where}: not 'type/schema/letter/orig schema/problem/orig problem: "
                f"text&option&option&label': {line[:80]!r}"
            )
        fields = match.group("body").split("&")
        if len(fields) != 4:
            raise ParseError(
                f"{where}: expected text&option&option&label, got {len(fields)} fields"
            )
        text, opt_a, opt_b, label = fields
        if label not in ("0", "1"):
            raise ParseError(f"{where}: label must be 0 or 1, got {label!r}")
        segments = _split_blanks(text, where)
        options = tuple(tuple(o.split(FILLER_SEP)) for o in (opt_a, opt_b))
        try:
            problem = Problem(
                uid=f"{match['kind']}{int(match['schema'])}{match['letter']}",
                segments=segments,
                options=options,
                label=int(label),
                number=int(match["orig_problem"]),
                source=source,
            )
        except ValueError as error:
            raise ParseError(str(error)) from error
        kind = cast(SchemaKind, match["kind"])  # w, s or t: the pattern admits no other
        by_schema[kind, int(match["schema"])].append(
            (match["letter"], int(match["orig_schema"]), problem)
        )

    schemas = []
    for (kind, number), rows in by_schema.items():
        letters = [letter for letter, _, _ in rows]
        expected = [chr(ord("a") + i) for i in range(len(rows))]
        where = rows[0][2].source
        if letters != expected:
            raise ParseError(
                f"{where}: schema {kind}{number} has problems {letters}, not {expected}"
            )
        originals = {orig for _, orig, _ in rows}
        if len(originals) != 1:
            raise ParseError(f"{where}: schema {kind}{number} mixes original schemas {originals}")
        schemas.append(
            Schema(
                uid=f"{kind}{number}",
                problems=tuple(p for _, _, p in rows),
                kind=kind,
                number=originals.pop(),
            )
        )
    return MalerFile(header=header, mode=mode, schemas=tuple(schemas))


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    rows = []
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ParseError(f"{path}:{lineno}: invalid JSON ({error.msg})") from error
        if not isinstance(row, dict):
            raise ParseError(f"{path}:{lineno}: expected a JSON object")
        rows.append((lineno, row))
    return rows


def parse_winogrande(path: str | Path) -> list[Problem]:
    """Read Winogrande-format jsonl (``sentence`` with one ``_``, ``option1/2``, ``answer``)."""
    path = Path(path)
    name = portable_name(path)
    problems = []
    for lineno, row in _read_jsonl(path):
        where = f"{path}:{lineno}"
        source = f"{name}:{lineno}"
        missing = {"qID", "sentence", "option1", "option2", "answer"} - row.keys()
        if missing:
            raise ParseError(f"{where}: missing field(s) {sorted(missing)}")
        sentence = row["sentence"]
        if sentence.count("_") != 1:
            raise ParseError(f"{where}: sentence must contain exactly one '_' blank: {sentence!r}")
        if str(row["answer"]) not in ("1", "2"):
            raise ParseError(f"{where}: answer must be '1' or '2', got {row['answer']!r}")
        problems.append(
            Problem(
                uid=str(row["qID"]),
                segments=tuple(sentence.split("_")),
                options=((row["option1"],), (row["option2"],)),
                label=int(row["answer"]) - 1,
                source=source,
            )
        )
    return problems


def twin_key(qid: str) -> str:
    """Winogrande twins share the qID up to its last '-'."""
    return qid.rsplit("-", 1)[0]


def group_twins(problems: list[Problem]) -> list[Schema]:
    """Group Winogrande problems by qID prefix, in file order; singletons: 1-problem schemas."""
    groups: dict[str, list[Problem]] = defaultdict(list)
    for problem in problems:
        groups[twin_key(problem.uid)].append(problem)
    schemas = []
    for key, members in groups.items():
        if len(members) > 2:
            raise ParseError(
                f"{members[0].source}: qID prefix {key!r} has {len(members)} problems, "
                "twins are pairs"
            )
        if len(members) == 2 and set(members[0].options) != set(members[1].options):
            raise ParseError(f"{members[1].source}: twins {key!r} have different options")
        schemas.append(Schema(uid=key, problems=tuple(members), kind="twin"))
    return schemas


def normalise_space(text: str) -> str:
    """Exterior whitespace removed, interior runs of whitespace one space."""
    return " ".join(text.split())


@dataclass(frozen=True)
class WSC273Question:
    """One question of the raw WSC273 in ``winowhy.json``, its whitespace normalised."""

    number: int  # its WSC273 problem number: 1-based position in the file
    before: str  # the text before the pronoun
    pronoun: str
    after: str
    answers: tuple[str, str]
    correct: int  # index of the correct answer
    # WinoWhy's reasons as the file holds them (``wsc_tasks.data.winowhy`` reads them); None
    # when the question has none
    reasons: tuple[object, ...] | None


def read_wsc273_json(path: str | Path) -> list[WSC273Question]:
    """The questions of ``winowhy.json`` (WSC273 with WinoWhy's reasons), each checked for the
    fields both its readers need: the text around the pronoun, two answers, A or B correct."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ParseError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from error
    if not isinstance(rows, list):
        raise ParseError(f"{path}: expected a JSON list of questions")
    questions = []
    for index, row in enumerate(rows):
        where = f"{path}: question {index + 1}"
        try:
            text = row["text"]
            before, pron, after = (normalise_space(text[k]) for k in ("txt1", "pron", "txt2"))
            answers = tuple(normalise_space(a) for a in row["answers"])
            correct = row["correctAnswer"].strip().rstrip(".").upper()
            reasons = row.get("reasons")
            reasons = None if reasons is None else tuple(reasons)
        except (KeyError, TypeError, AttributeError) as error:
            raise ParseError(f"{where}: missing or malformed field ({error})") from error
        if len(answers) != 2 or correct not in ("A", "B"):
            raise ParseError(f"{where}: needs two answers and correctAnswer A or B")
        questions.append(
            WSC273Question(
                number=index + 1,
                before=before,
                pronoun=pron,
                after=after,
                answers=(answers[0], answers[1]),
                correct="AB".index(correct),
                reasons=reasons,
            )
        )
    return questions


def parse_wsc273_raw(path: str | Path) -> list[Schema]:
    """Read the raw WSC273 of ``winowhy.json`` into problems, preprocessed as thesis §3.2.

    Exterior and interior whitespace is normalised, the answers are lower-cased unless the pronoun
    starts a sentence, and made possessive when the pronoun is 'his' or 'her'.
    """
    name = portable_name(Path(path))
    problems = []
    for question in read_wsc273_json(path):
        before, pron, after = question.before, question.pronoun, question.after
        sentence_start = not before or before[-1] in ".!?"
        fixed = []
        for answer in question.answers:
            if not sentence_start and answer[:1].isupper() and answer.split()[0] in _ARTICLES_CAP:
                answer = answer[0].lower() + answer[1:]
            if sentence_start:
                answer = answer[0].upper() + answer[1:]
            if pron.lower() in ("his", "her") and not answer.endswith("'s"):
                answer = answer + "'s"
            fixed.append(answer)
        joiner = "" if after[:1] in ".,;:!?'" else " "
        segments = (before + " " if before else "", joiner + after)
        problems.append(
            Problem(
                uid=str(question.number),
                segments=segments,
                options=((fixed[0],), (fixed[1],)),
                label=question.correct,
                number=question.number,
                source=f"{name}: question {question.number}",
            )
        )
    # The XML marks no schemas: consecutive pairs, except the triple 253-255 (thesis §3.3.1).
    schemas: list[Schema] = []
    start = 0
    while start < len(problems):
        size = 3 if problems[start].number == 253 else 2
        schemas.append(_raw_schema(problems[start : start + size]))
        start += size
    return schemas


# Determiners the raw file capitalises wrongly mid-sentence (thesis §3.2 "make answers lowercase").
_ARTICLES_CAP = {"The", "A", "An", "His", "Her", "My", "Their", "Its", "Our", "Your"}


def _raw_schema(problems: list[Problem]) -> Schema:
    return Schema(uid=f"raw{problems[0].number}", problems=tuple(problems), kind="w")
