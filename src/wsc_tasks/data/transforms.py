"""Problem transformations that build the control baselines of Elazar et al. 2021 (§5).

*no-cands* removes both candidate mentions from the text; *part-sent* keeps only the part of the
sentence that holds the blank, cut at the discourse markers and punctuation of their footnote 9.
Both work on any single-blank problem in canonical form. A problem they cannot transform returns a
reason instead, and a schema is kept only when all its problems are transformed, so that schema
metrics stay defined; the caller logs what was dropped and why. ``wsc_tasks.data.audit`` checks the
result: no candidate word left, no word deleted outside a mention, no cut inside an abbreviation.

The no-cands mention rule, decided with closed word lists only (no tagger, no data download): a
mention is every occurrence of the candidate's head phrase ("suitcase" for "the suitcase"), with
its possessive 's, and, when the candidate is given with a determiner (WSC style), the determiner
in front of that occurrence and at most two open-class words between them ("the brown
suitcase", "a pin"). A preposition, pronoun, conjunction or auxiliary between them means the
words belong to another phrase ("the lock with the key"): then only the head goes. A bare
candidate (Winogrande's "cake", a name) is removed as a word and the text's determiner stays, as
in Elazar's files. A problem is dropped, with a reason, rather than broken: when a candidate word
modifies a following noun ("the mouse hole"), when a mention lies in the words the twins differ in
("full of coffee" ~ "full of ink"), or when a candidate word is left in another form or use.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.data.words import (
    DETERMINERS,
    GENITIVE,
    POSSESSIVE,
    WORD,
    is_modifier,
    looks_like_noun,
    split_candidate,
    tokens,
)
from wsc_tasks.data.words import content_words as content_words  # re-exported
from wsc_tasks.data.words import leaked_words as leaked_words  # re-exported
from wsc_tasks.data.words import word_forms as word_forms  # re-exported

_SENTINEL = "\x00"  # stands for the blank while the text is edited
_PUNCT_AFTER = ".,;:!?"

_MAX_MODIFIERS = 2

# Elazar et al. 2021 fn. 9: 'so', 'but', 'and', 'because', 'although', 'though', 'due', 'since',
# ':', ';', ',', '?'. Sentence ends ('.', '!') also bound the part (their published files do).
PART_SENTWORDS = ("so", "but", "and", "because", "although", "though", "due", "since")
PART_SENT_PUNCT = (":", ";", ",", "?")
_MARKER = re.compile(
    r"\b(?:" + "|".join(PART_SENTWORDS) + r")\b|[" + re.escape("".join(PART_SENT_PUNCT)) + r"]"
    r"|[.!](?=\s)"
)
# A period after these ends no sentence (nor after a single capital, an initial: "J. Smith").
ABBREVIATIONS = (
    "Dr", "Mr", "Mrs", "Ms", "St", "Prof", "Jr", "Sr", "Mt", "Capt", "Gen", "Col", "Lt", "Sgt",
    "Rev", "Hon", "vs", "e.g", "i.e", "approx",
)  # fmt: skip
ABBREVIATION_END = re.compile(
    r"(?<![\w.])(?:" + "|".join(re.escape(a) for a in ABBREVIATIONS) + r"|[A-HJ-Z])$"
)

Transform = Callable[[Problem, Sequence[Problem]], "Problem | str"]


def _join(problem: Problem) -> str:
    return _SENTINEL.join(problem.segments)


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" (?=[" + re.escape(_PUNCT_AFTER) + r"])", "", text)
    text = re.sub(r"^[" + re.escape(_PUNCT_AFTER) + r"]+ ?", "", text)
    return text


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _mentions(text: str, candidate: str) -> list[tuple[int, int]] | str:
    """Character spans of every mention of ``candidate`` in ``text``, or why there is none.

    A mention is the candidate's head phrase (whole words, any case, with a possessive ``'s``)
    and, for a candidate given with a determiner, the determiner in front of that occurrence
    with at most two open-class modifiers between them ("the brown suitcase", "an oak tree",
    "a pin" for "the pin"); a preposition, another noun phrase's head, a pronoun or a verb is
    never part of it because the left edge must be a determiner reached through modifiers only.
    A bare candidate (Winogrande's "cake") is the word itself: the text's determiner stays, as
    in Elazar's files. A genitive candidate ("Tina's drawing") must occur whole.
    """
    determiner, head = split_candidate(candidate)
    pattern, full = _phrase(head.split()), _phrase([determiner, *head.split()])
    if GENITIVE.fullmatch(determiner or "-") and not full.search(text):
        return "candidate not found in text"
    spans = [m.span() for m in full.finditer(text)] if determiner else []
    for m in pattern.finditer(text):
        start, end = m.span()
        if determiner:
            after = WORD.match(text, len(text) - len(text[end:].lstrip()))
            if (
                after is not None
                and not head.lower().endswith("s")
                and not m.group().lower().endswith("s")
                and looks_like_noun(after.group())
            ):
                return "a candidate word modifies another noun (compound)"
            start = _left_edge(text, start)
        spans.append((start, end))
    return spans or "candidate not found in text"


def _phrase(words: Sequence[str]) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w'’]){body}{POSSESSIVE}(?!\w)", re.IGNORECASE)


def _left_edge(text: str, start: int) -> int:
    """Start of the mention whose head starts at ``start``: its determiner and modifiers, if
    the words before the head are modifiers led by a determiner; else the head alone."""
    before = tokens(text[:start])
    modifiers = 0
    for token in reversed(before):
        word = token.group()
        if word.lower() in DETERMINERS or word.isdigit():
            return token.start()
        if not is_modifier(word) or modifiers == _MAX_MODIFIERS:
            break
        modifiers += 1
    return start


def _key_spans(problem: Problem, twins: Sequence[Problem]) -> list[tuple[int, int]]:
    """Character spans of the words this problem's text differs in from its twins (the key),
    except where they differ only in candidates or the blank (WSC273 #173/#174: minnow ~ shark;
    Winogrande's "The _ car … the red car" ~ "The blue car … the _ car")."""
    text = _join(problem)
    mine = tokens(text)
    candidates = {_SENTINEL, *(w for (c,) in problem.options for w in content_words(c))}
    spans = []
    for twin in twins:
        theirs = tokens(_join(twin))
        twin_candidates = {_SENTINEL, *(w for (c,) in twin.options for w in content_words(c))}
        matcher = difflib.SequenceMatcher(
            a=[t.group().lower() for t in mine],
            b=[t.group().lower() for t in theirs],
            autojunk=False,
        )
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal" or i1 == i2:
                continue
            ours = {t.group().lower() for t in mine[i1:i2]}
            other = {t.group().lower() for t in theirs[j1:j2]}
            if ours <= candidates and other <= twin_candidates:
                continue
            spans.append((mine[i1].start(), mine[i2 - 1].end()))
    return spans


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def no_cands(problem: Problem, twins: Sequence[Problem] = ()) -> Problem | str:
    """Remove every mention of both candidates (``_mentions``); ``twins`` are the other problems
    of its schema, whose differing words are the key. A reason if that cannot be done cleanly:
    a candidate not found, a candidate word used as a modifier of another noun ("the mouse
    hole"), a mention inside the words the twins differ in (WSC273 #195, "full of coffee" ~
    "full of ink"), or a candidate word left in another form ("orange" for "oranges")."""
    if problem.n_blanks != 1:
        return "two blanks"
    text = _join(problem)
    spans: list[tuple[int, int]] = []
    for (candidate,) in problem.options:
        found = _mentions(text, candidate)
        if isinstance(found, str):
            return found
        spans += found
    key = _key_spans(problem, twins)
    if any(s < ke and ks < e for s, e in spans for ks, ke in key):
        return "a candidate is mentioned in the words the twins differ in"
    for start, end in reversed(_merge(spans)):
        text = text[:start] + " " + text[end:]
    if leaked_words(text, (c for (c,) in problem.options)):
        return "a candidate word is left in another form or use"
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


def part_sent_cuts(text: str, end: int) -> list[int]:
    """Offsets in ``text[:end]`` just after a part-sent marker: a marker word, or punctuation
    that is not inside a number ("20,000", "4:30") nor the period of an abbreviation or
    initial ("Dr. Adams")."""
    cuts = []
    for m in _MARKER.finditer(text, 0, end):
        mark = m.group()
        if mark in ".,:" and m.start() > 0 and text[m.start() - 1].isdigit():
            if m.end() < len(text) and text[m.end()].isdigit():
                continue
        if mark == "." and ABBREVIATION_END.search(text, 0, m.start()):
            continue
        cuts.append(m.end())
    return cuts


def part_sent(problem: Problem, twins: Sequence[Problem] = ()) -> Problem | str:
    """Keep the part of the sentence after the last marker before the blank (Elazar §5)."""
    if problem.n_blanks != 1:
        return "two blanks"
    text = _join(problem)
    cuts = part_sent_cuts(text, text.index(_SENTINEL))
    if not cuts:
        return "no marker before the blank"
    part = _tidy(text[cuts[-1] :])
    if not part.startswith(_SENTINEL):
        part = _capitalize(part)
    before, after = part.split(_SENTINEL)
    return problem.with_text(_respace(before, after), "~partsent")


def _whole_word(candidate: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(candidate)}(?!\w)")


def switch_candidates(problem: Problem, twins: Sequence[Problem] = ()) -> Problem | str:
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
    kept: list[Schema] = []
    dropped: Counter[str] = Counter()
    for schema in schemas:
        results = [
            transform(p, [q for q in schema.problems if q is not p]) for p in schema.problems
        ]
        reasons = [r for r in results if isinstance(r, str)]
        if reasons:
            dropped[reasons[0]] += 1
            continue
        kept.append(
            Schema(
                uid=schema.uid,
                problems=tuple(r for r in results if not isinstance(r, str)),  # all: no reason
                kind=schema.kind,
                number=schema.number,
                groups=schema.groups,
            )
        )
    return kept, dropped
