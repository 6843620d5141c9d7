"""Adversarial dyads (thesis §3.5.6): an adversarial dataset inside a boolean wrapper.

A *wrapper* such as ``It is [true ~ false] that SCHEMA.`` holds a ``SCHEMA`` slot and a truth pair
in brackets. Wrapping a two-problem adversarial schema with each truth value gives a *dyad*, which
each of three *modes of solution* (Table 3.5) turns into four cloze problems:

- by answer: fix a truth value and a key phrase, guess the answer;
- by key: fix a truth value and an answer, guess the key phrase (the wrapped inverted schema);
- by boolean: fix a key phrase and an answer, guess the truth value.

Which problems form one schema for schema metrics depends on the comparison (§3.5.6 end): a
schema fixes one of the two things that define a problem. By answer and by key, schemas fix a
truth value (3.78), the grouping of the thesis's by-answer and by-key results; by boolean, a
schema fixes a key phrase (3.79), and the by-answer figure it is compared with groups by key
phrase too (Table 4.38: by boolean − original). ``GROUPINGS`` names all six.

The schema sentence goes into the slot without its final period and, unless the slot starts the
wrapper, with its first word lower-cased, except proper nouns. A first word counts as a proper
noun when the dataset never writes it in lower case elsewhere and either writes it capitalised
after a lower-case word (``than Paris``) or it starts a multi-word name (``Hudson Bay``); this
reproduces every case of the published Reid250×2 (``Ocean water`` → ``ocean water``, ``The
Atlantic Ocean`` → ``the Atlantic Ocean``, ``October`` kept). ``keep_capital`` adds words.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from wsc_tasks.data.problems import Problem, Schema

SLOT = "SCHEMA"
DyadMode = Literal["by answer", "by key", "by boolean"]  # the modes of solution (Table 3.5)
MODES: tuple[DyadMode, ...] = ("by answer", "by key", "by boolean")
FILE_MODES = {"by answer": "by answer", "by key": "by key", "by boolean": "by value"}
TRUTH_PAIRS = {  # the thesis's examples (§3.5.6); any other pair can be written in the wrapper
    "true": ("true", "false"),
    "probable": ("probable", "improbable"),
    "plausible": ("plausible", "implausible"),
    "generally true": ("generally true", "not generally true"),
}

# Problem order in a dyad of schema (a, b), as the published files write it:
#   by answer:  (true, key a), (false, key a), (true, key b), (false, key b)
#   by key:     (true, answer 0), (true, answer 1), (false, answer 0), (false, answer 1)
#   by boolean: (key a, answer 0), (key a, answer 1), (key b, answer 0), (key b, answer 1)
# grouping name: (mode, what a schema fixes, schema-metric groups over those positions)
GROUPINGS: dict[str, tuple[DyadMode, str, tuple[tuple[int, ...], ...]]] = {
    "by_answer": ("by answer", "truth value", ((0, 2), (1, 3))),
    "by_answer_fix_key": ("by answer", "key phrase", ((0, 1), (2, 3))),
    "by_key": ("by key", "truth value", ((0, 1), (2, 3))),
    "by_key_fix_answer": ("by key", "answer", ((0, 2), (1, 3))),
    "by_boolean": ("by boolean", "key phrase", ((0, 1), (2, 3))),
    "by_boolean_fix_answer": ("by boolean", "answer", ((0, 2), (1, 3))),
}

BLANK = "*target*"
_BRACKET = re.compile(r"\[([^\[\]~]+)~([^\[\]~]+)\]")
_WORD = re.compile(r"[\w'’-]+")


class DyadError(ValueError):
    """A wrapper, a grouping or a schema that cannot make dyads."""


@dataclass(frozen=True)
class Wrapper:
    """A boolean wrapper: its thesis notation and its truth pair."""

    template: str  # as written, e.g. 'It is [true ~ false] that SCHEMA.'
    truth: tuple[str, str]  # (true value, false value)

    @property
    def header(self) -> dict[str, str]:
        return {"wrapper": f'"{self.template}"', "truth pair": "-".join(self.truth)}

    def around(self, value: str) -> tuple[str, str]:
        """The wrapper's text before and after the slot, with ``value`` for the truth pair."""
        before, after = _BRACKET.sub(lambda _: value, self.template).split(SLOT)
        return before, after


def parse_wrapper(template: str, truth: str | Sequence[str] | None = None) -> Wrapper:
    """A wrapper from its thesis notation, e.g. ``That SCHEMA is [true ~ false].``; ``truth``
    (a pair, or a name in ``TRUTH_PAIRS``) replaces the pair written in the brackets."""
    template = template.strip()
    brackets = _BRACKET.findall(template)
    if template.count(SLOT) != 1 or len(brackets) != 1 or SLOT in "".join(brackets[0]):
        raise DyadError(
            f"wrapper {template!r}: needs one {SLOT} slot and, outside it, one truth pair in "
            "brackets, e.g. 'It is [true ~ false] that SCHEMA.'"
        )
    if isinstance(truth, str):
        if truth not in TRUTH_PAIRS:
            raise DyadError(f"truth pair {truth!r}: not one of {sorted(TRUTH_PAIRS)}")
        truth = TRUTH_PAIRS[truth]
    pair = tuple(v.strip() for v in (brackets[0] if truth is None else truth))
    if len(pair) != 2 or not all(pair) or pair[0] == pair[1]:
        raise DyadError(f"wrapper {template!r}: truth pair {pair} must be two different values")
    template = _BRACKET.sub(lambda _: f"[{pair[0]} ~ {pair[1]}]", template)
    return Wrapper(template, pair)


# -- capitalisation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Casing:
    """Which sentence-initial words keep their capital inside the wrapper (module docstring)."""

    lower: frozenset[str]  # words the dataset writes in lower case after a space
    names: frozenset[str]  # capitalised words written after a lower-case word

    def keeps_capital(self, word: str, next_word: str) -> bool:
        if word.lower() in self.lower or not word[:1].isupper():
            return False
        return word in self.names or next_word[:1].isupper()

    def lowers(self, sentence: str) -> bool:
        """Whether the sentence's first word is lower-cased inside a wrapper."""
        words = _WORD.findall(sentence)
        if not words or not sentence.startswith(words[0]):
            return False
        return words[0][:1].isupper() and not self.keeps_capital(words[0], "".join(words[1:2]))


def casing(schemas: Sequence[Schema], keep_capital: Collection[str] = ()) -> Casing:
    """Evidence for proper nouns from every filled sentence of the dataset."""
    lower, names = set(), set(keep_capital)
    for schema in schemas:
        for problem in schema.problems:
            for option in range(len(problem.options)):
                words = _WORD.findall(problem.fill(option))
                for previous, word in zip(words, words[1:], strict=False):
                    if word[:1].islower():
                        lower.add(word)
                    elif word[:1].isupper() and not previous[:1].isupper():
                        names.add(word)
    return Casing(frozenset(lower - {w.lower() for w in keep_capital}), frozenset(names))


# -- wrapping ---------------------------------------------------------------------------------


def _unpunctuated(text: str, where: str) -> str:
    if not text.endswith("."):
        raise DyadError(f"{where}: the schema sentence must end with a period to be wrapped")
    return text[:-1]


def _wrapped(wrapper: Wrapper, value: str, problem: Problem, cased: Casing) -> Problem:
    """``problem`` (its blanks kept) inside the wrapper with truth value ``value``: under the
    false value the other option is right."""
    where = problem.source or problem.uid
    before, after = wrapper.around(value)
    segments = [*problem.segments[:-1], _unpunctuated(problem.segments[-1], where)]
    options = problem.options
    if before and segments[0]:
        if cased.lowers(problem.fill(0)):
            segments[0] = segments[0][0].lower() + segments[0][1:]
    elif before:  # a blank starts the sentence: its fillers are decapitalised, option by option
        options = tuple(
            (o[0][0].lower() + o[0][1:], *o[1:]) if cased.lowers(problem.fill(i)) else o
            for i, o in enumerate(options)
        )
    segments[0] = before + segments[0]
    segments[-1] = segments[-1] + after
    label = problem.label if value == wrapper.truth[0] else 1 - problem.label
    return Problem(problem.uid, tuple(segments), options, label, problem.number, where)


def _boolean(wrapper: Wrapper, problem: Problem, answer: int, cased: Casing) -> Problem:
    """``problem`` filled with ``answer`` inside the wrapper, the truth value being the blank."""
    where = problem.source or problem.uid
    sentence = _unpunctuated(problem.fill(answer), where)
    before, after = wrapper.around(BLANK)
    if before.replace(BLANK, "") and cased.lowers(sentence):
        sentence = sentence[0].lower() + sentence[1:]
    text = before + sentence + after
    if text.count(BLANK) != 1:
        raise DyadError(f"{where}: {BLANK} inside the schema sentence")
    label = 0 if answer == problem.label else 1
    options = ((wrapper.truth[0],), (wrapper.truth[1],))
    return Problem(problem.uid, tuple(text.split(BLANK)), options, label, problem.number, where)


def pair_with_inverted(
    originals: Sequence[Schema], inverted: Sequence[Schema]
) -> list[tuple[Schema, Schema]]:
    """(original, inverted) schemas matched by original schema number; every original must have
    exactly one inversion of the same kind whose problems carry the same original numbers, and
    every inverted schema an original: anything else is an error naming the rows."""
    by_number: dict[int | None, Schema] = {}
    for schema in inverted:
        if schema.number in by_number:
            raise DyadError(
                f"{schema.problems[0].source}: inverted schema number {schema.number} occurs twice"
            )
        by_number[schema.number] = schema
    pairs = []
    for original in originals:
        where = original.problems[0].source or original.uid
        match = by_number.pop(original.number, None)
        if match is None:
            raise DyadError(f"{where}: original schema {original.number} has no inverted schema")
        numbers = [[p.number for p in s.problems] for s in (original, match)]
        if match.kind != original.kind or numbers[0] != numbers[1]:
            raise DyadError(
                f"{where}: original schema {original.uid} (problems {numbers[0]}) does not match "
                f"inverted schema {match.uid} at {match.problems[0].source} "
                f"(kind {match.kind}, problems {numbers[1]})"
            )
        pairs.append((original, match))
    if by_number:
        extra = sorted(s.problems[0].source or s.uid for s in by_number.values())
        raise DyadError(f"inverted schemas without an original: {extra}")
    return pairs


def dyad_problems(
    original: Schema,
    wrapper: Wrapper,
    mode: DyadMode,
    cased: Casing,
    inverted: Schema | None = None,
) -> tuple[Problem, ...]:
    """The four problems of one dyad in ``mode``, in the order of ``GROUPINGS``."""
    where = original.problems[0].source or original.uid
    if len(original.problems) != 2:
        raise DyadError(f"{where}: schema {original.uid} has {len(original.problems)} problems")
    if mode == "by answer":
        return tuple(
            _wrapped(wrapper, value, p, cased) for p in original.problems for value in wrapper.truth
        )
    if mode == "by key":
        if inverted is None:
            raise DyadError(f"{where}: solution by key needs the inverted schema")
        return tuple(
            _wrapped(wrapper, value, p, cased) for value in wrapper.truth for p in inverted.problems
        )
    if mode == "by boolean":
        return tuple(
            _boolean(wrapper, p, answer, cased) for p in original.problems for answer in (0, 1)
        )
    raise DyadError(f"unknown mode of solution {mode!r}; known: {', '.join(MODES)}")


def make_dyads(
    schemas: Sequence[Schema],
    wrapper: Wrapper,
    grouping: str,
    inverted: Sequence[Schema] | None = None,
    keep_capital: Collection[str] = (),
) -> list[Schema]:
    """The dyadic version of an adversarial dataset, one schema (document) per dyad.

    ``grouping`` is a key of ``GROUPINGS``; solution by key needs ``inverted``, the dataset's own
    inversion (inverting is an editorial act: which words make up a key phrase, e.g. "a plum" or
    "Mice, cats, and elephants", is not in the text). Problems are numbered 1… in order, as the
    published files number them.
    """
    if grouping not in GROUPINGS:
        raise DyadError(f"unknown dyad grouping {grouping!r}; known: {', '.join(GROUPINGS)}")
    mode, _, groups = GROUPINGS[grouping]
    pairs: Sequence[tuple[Schema, Schema | None]]
    if mode == "by key":
        if inverted is None:
            raise DyadError("solution by key needs the dataset's inverted schemas")
        pairs = pair_with_inverted(schemas, inverted)
    else:
        pairs = [(schema, None) for schema in schemas]
    cased = casing(schemas, keep_capital)
    dyads, number = [], 0
    for original, inverse in pairs:
        problems = []
        for letter, problem in zip(
            "abcd", dyad_problems(original, wrapper, mode, cased, inverse), strict=True
        ):
            number += 1
            uid = f"{original.uid}{letter}"
            problems.append(
                Problem(
                    uid, problem.segments, problem.options, problem.label, number, problem.source
                )
            )
        dyads.append(Schema(original.uid, tuple(problems), original.kind, original.number, groups))
    return dyads


def regroup(schemas: Sequence[Schema], grouping: str) -> list[Schema]:
    """Dyads read from a file (one four-problem schema each) with the groups of ``grouping``."""
    if grouping not in GROUPINGS:
        raise DyadError(f"unknown dyad grouping {grouping!r}; known: {', '.join(GROUPINGS)}")
    groups = GROUPINGS[grouping][2]
    out = []
    for schema in schemas:
        if len(schema.problems) != 4:
            raise DyadError(
                f"{schema.problems[0].source or schema.uid}: dyad {schema.uid} has "
                f"{len(schema.problems)} problems, not 4"
            )
        out.append(Schema(schema.uid, schema.problems, schema.kind, schema.number, groups))
    return out


def header(base: dict[str, str], wrapper: Wrapper) -> dict[str, str]:
    """The header line of a dyadic dataset, from its base dataset's."""
    out = dict(base)
    out["schema type"] = f"{base.get('schema type', 'adversarial')} dyad"
    out.update(wrapper.header)
    return out
