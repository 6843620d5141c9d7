"""The one canonical form of Winograd-style problems and schemas that every dataset is parsed into.

A problem is a cloze: ``segments`` are the text around its blanks (one blank, or two in inverted
transposition schemas), each option holds one filler per blank, ``label`` indexes the right one.
A schema groups the problems that differ only by a key phrase; ``groups`` lists which problems are
scored together by schema metrics (thesis §3.7.6: WSC273's three-problem schema counts as {a,b} and
{b,c}; a one-problem schema counts for no schema metric).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Problem:
    uid: str
    segments: tuple[str, ...]
    options: tuple[tuple[str, ...], ...]
    label: int
    number: int | None = None  # problem number in the original dataset (WSC273 numbering, …)
    source: str = ""  # file:line it was read from

    def __post_init__(self) -> None:
        blanks = len(self.segments) - 1
        if blanks < 1:
            raise ValueError(f"{self.source or self.uid}: problem has no blank")
        if len(self.options) != 2:
            raise ValueError(f"{self.source or self.uid}: expected 2 options, got {self.options}")
        for option in self.options:
            if len(option) != blanks:
                raise ValueError(
                    f"{self.source or self.uid}: option {option} has {len(option)} fillers "
                    f"for {blanks} blank(s)"
                )
        if self.label not in (0, 1):
            raise ValueError(f"{self.source or self.uid}: label must be 0 or 1, got {self.label}")

    @property
    def n_blanks(self) -> int:
        return len(self.segments) - 1

    def fill(self, option: int) -> str:
        """The sentence with option ``option`` substituted for every blank."""
        fillers = self.options[option]
        parts = [self.segments[0]]
        for filler, segment in zip(fillers, self.segments[1:], strict=True):
            parts.extend((filler, segment))
        return "".join(parts)

    def with_text(self, segments: Sequence[str], uid_suffix: str = "") -> Problem:
        return Problem(
            uid=self.uid + uid_suffix,
            segments=tuple(segments),
            options=self.options,
            label=self.label,
            number=self.number,
            source=self.source,
        )

    def to_doc(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "segments": list(self.segments),
            "options": [list(o) for o in self.options],
            "label": self.label,
            "number": -1 if self.number is None else self.number,
            "source": self.source,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Problem:
        number = doc.get("number")
        return cls(
            uid=doc["uid"],
            segments=tuple(doc["segments"]),
            options=tuple(tuple(o) for o in doc["options"]),
            label=int(doc["label"]),
            number=None if number is None or number < 0 else int(number),
            source=doc.get("source", ""),
        )


def default_groups(n_problems: int) -> tuple[tuple[int, ...], ...]:
    """Schema-metric groups of a schema with ``n_problems`` problems (thesis §3.7.6)."""
    if n_problems == 1:
        return ()
    if n_problems == 3:
        return ((0, 1), (1, 2))
    return (tuple(range(n_problems)),)


# w: Winograd, s: substitution, t: transposition (the thesis's files), twin: Winogrande twins
SchemaKind = Literal["w", "s", "t", "twin"]


@dataclass(frozen=True)
class Schema:
    uid: str
    problems: tuple[Problem, ...]
    kind: SchemaKind = "w"
    number: int | None = None  # schema number in the original dataset
    groups: tuple[tuple[int, ...], ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.problems:
            raise ValueError(f"schema {self.uid} has no problems")
        if not self.groups:
            object.__setattr__(self, "groups", default_groups(len(self.problems)))
        for group in self.groups:
            if any(i < 0 or i >= len(self.problems) for i in group):
                raise ValueError(f"schema {self.uid}: group {group} out of range")

    def to_doc(self) -> dict[str, Any]:
        """A flat, Arrow-friendly dict: one lm-eval document per schema."""
        return {
            "schema_uid": self.uid,
            "kind": self.kind,
            "schema_number": -1 if self.number is None else self.number,
            "problems": [p.to_doc() for p in self.problems],
            "groups": [list(g) for g in self.groups],
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Schema:
        number = doc.get("schema_number")
        return cls(
            uid=doc["schema_uid"],
            problems=tuple(Problem.from_doc(p) for p in doc["problems"]),
            kind=doc.get("kind", "w"),
            number=None if number is None or number < 0 else int(number),
            groups=tuple(tuple(g) for g in doc["groups"]),
        )


def count(schemas: Sequence[Schema]) -> tuple[int, int]:
    """(problems, schema groups) — the denominators of problem and schema metrics."""
    return sum(len(s.problems) for s in schemas), sum(len(s.groups) for s in schemas)
