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


def _whole_word(candidate: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(candidate)}(?!\w)")


def switch_candidates(problem: Problem) -> Problem | str:
    """Exchange the two candidate mentions in the text and in the options (thesis §3.4.2).

    The options are exchanged too, so the label keeps its index while the answer flips to the
    other candidate, as in the thesis's ``wsc266_switched.txt``. Only safe when each candidate
    occurs exactly once, as a whole word with the options' spelling (case-sensitive), and the two
    mentions do not overlap; otherwise a reason is returned.
    """
    if problem.n_blanks != 1:
        return "two blanks"
    (first,), (second,) = problem.options
    if first == second:
        return "identical candidates"
    text = _join(problem)
    spans = []
    for candidate in (first, second):
        found = [m.span() for m in _whole_word(candidate).finditer(text)]
        if not found:
            return "a candidate does not occur as a whole word"
        if len(found) > 1:
            return "a candidate occurs more than once"
        spans.append(found[0])
    (a0, a1), (b0, b1) = spans
    if a0 < b1 and b0 < a1:
        return "the candidate mentions overlap"
    swapped = text
    for (start, end), replacement in sorted(zip(spans, (second, first), strict=True), reverse=True):
        swapped = swapped[:start] + replacement + swapped[end:]
    segments = swapped.split(_SENTINEL)
    return Problem(
        uid=problem.uid + "~switched",
        segments=tuple(segments),
        options=(problem.options[1], problem.options[0]),
        label=problem.label,
        number=problem.number,
        source=problem.source,
    )


TRANSFORMS: dict[str, Transform] = {
    "nocands": no_cands,
    "partsent": part_sent,
    "switched": switch_candidates,
}


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
