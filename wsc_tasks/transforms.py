"""Problem transformations that build the control baselines of Elazar et al. (seed 000, §5).

*no-cands* removes both candidate mentions from the text; *part-sent* keeps only the part of the
sentence that holds the blank, cut at the discourse markers and punctuation of their footnote 9.
Both work on any single-blank problem in canonical form. A problem they cannot transform returns a
reason instead, and a schema is kept only when all its problems are transformed, so that schema
metrics stay defined; the caller logs what was dropped and why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from .problems import Problem, Schema

_SENTINEL = "\x00"  # stands for the blank while the text is edited
_DETERMINERS = r"(?:the|a|an|his|her|my|their|its|our|your)"
_PUNCT_AFTER = ".,;:!?"

# Footnote 9 of seed 000: 'so', 'but', 'and', 'because', 'although', 'though', 'due', 'since',
# ':', ';', ',', '?'. Sentence ends ('.', '!') also bound the part (their published files do).
PART_SENT_WORDS = ("so", "but", "and", "because", "although", "though", "due", "since")
PART_SENT_PUNCT = (":", ";", ",", "?")
_MARKER = re.compile(
    r"\b(?:" + "|".join(PART_SENT_WORDS) + r")\b|[" + re.escape("".join(PART_SENT_PUNCT)) + r"]"
    r"|[.!](?=\s)"
)

Transform = Callable[[Problem], "Problem | str"]


def _join(problem: Problem) -> str:
    return _SENTINEL.join(problem.segments)


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" (?=[" + re.escape(_PUNCT_AFTER) + r"])", "", text)
    text = re.sub(r"^[" + re.escape(_PUNCT_AFTER) + r"]+ ?", "", text)
    return text


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _mention_patterns(candidate: str) -> list[re.Pattern[str]]:
    """The ways a candidate answer can appear in its sentence, most specific first.

    A candidate that is a full noun phrase ("The oak tree") also matches its head under another
    determiner ("an oak tree", "the brown suitcase"), removed with it; a bare candidate ("cake",
    Winogrande's style) matches only itself, so the text's own determiner stays, as in Elazar's.
    """
    bare = re.sub(r"(?:'s|’s|')$", "", candidate)
    variants = [candidate] if bare == candidate else [candidate, bare]
    head = re.sub(rf"^{_DETERMINERS}\s+", "", bare, flags=re.IGNORECASE)
    prefix = ""
    if head != bare:
        variants.append(head)
        # "the suitcase" also matches "the brown suitcase": up to two modifiers after the determiner
        modifier = rf"(?:(?!{_DETERMINERS}\b|and\b|or\b)\w[\w-]*\s+)"
        prefix = rf"(?:{_DETERMINERS}\s+{modifier}{{0,2}})?"
    return [
        re.compile(rf"(?<!\w){prefix}{re.escape(v)}(?:'s|’s)?(?!\w)", re.IGNORECASE)
        for v in variants
    ]


def no_cands(problem: Problem) -> Problem | str:
    """Remove every mention of both candidates; a reason string if one is not found."""
    if problem.n_blanks != 1:
        return "two blanks"
    text = _join(problem)
    for (candidate,) in problem.options:
        for pattern in _mention_patterns(candidate):
            if pattern.search(text):
                text = pattern.sub(" ", text)
                break
        else:
            return "candidate not found in text"
    text = _tidy(text)
    if not text.startswith(_SENTINEL):
        text = _capitalize(text)
    before, after = text.split(_SENTINEL)
    return problem.with_text(_respace(before, after), "~nocands")


def _respace(before: str, after: str) -> tuple[str, str]:
    if before and not before.endswith(" "):
        before += " "
    if after and not after.startswith(" ") and after[0] not in _PUNCT_AFTER + "'’":
        after = " " + after
    return before, after


def part_sent(problem: Problem) -> Problem | str:
    """Keep the part of the sentence after the last marker before the blank (Elazar §5)."""
    if problem.n_blanks != 1:
        return "two blanks"
    text = _join(problem)
    blank = text.index(_SENTINEL)
    cuts = [m.end() for m in _MARKER.finditer(text, 0, blank)]
    if not cuts:
        return "no marker before the blank"
    part = _tidy(text[cuts[-1] :])
    if not part.startswith(_SENTINEL):
        part = _capitalize(part)
    before, after = part.split(_SENTINEL)
    return problem.with_text(_respace(before, after), "~partsent")


TRANSFORMS: dict[str, Transform] = {"nocands": no_cands, "partsent": part_sent}


def transform_schemas(
    schemas: Sequence[Schema], transform: Transform
) -> tuple[list[Schema], Counter[str]]:
    """Apply ``transform`` to every problem; keep a schema only if all its problems transform.

    Returns the kept schemas and the count of dropped schemas by reason.
    """
    kept, dropped = [], Counter()
    for schema in schemas:
        results = [transform(p) for p in schema.problems]
        reasons = [r for r in results if isinstance(r, str)]
        if reasons:
            dropped[reasons[0]] += 1
            continue
        kept.append(
            Schema(
                uid=schema.uid,
                problems=tuple(results),  # type: ignore[arg-type]
                kind=schema.kind,
                number=schema.number,
                groups=schema.groups,
            )
        )
    return kept, dropped
