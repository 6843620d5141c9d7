"""Zero-shot formulation of twin schemas of Elazar et al. 2021 (§6.1).

The twins of a schema differ by one *special* (key) word: "… because it is too large / small".
The formulation fills the blank with each twin's correct candidate and blanks the special word
instead, so that the model chooses between the twins' two special words:

    The trophy doesn't fit into the brown suitcase because the trophy is too ___.  (large | small)

Both problems of a pair share the options (special word of the first twin, of the second), with
labels 0 and 1, so group scoring over the pair is the paper's "Group" column. Twins whose texts
differ in more than one word (a phrase, an insertion, two places) cannot be posed this way and
are discarded with a reason, as the paper does; a masked LM then sees one mask exactly when the
special word is one token. Elazar's further filter to special words of one token is specific to
their models and not applied; every task reports its equal-length subset (``acc_equal_len``).

A text that ends without final punctuation gets a period, as in Elazar's files, so that partial
scoring has a token after the blank ("… in the father's ___." from WSC273's unpunctuated 245).
Works on any single-blank schema in canonical form; a three-problem schema (WSC273's 253–255)
contributes each of its schema-metric groups as a candidate pair.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections import Counter
from collections.abc import Sequence

from wsc_tasks.data.problems import Problem, Schema, count

log = logging.getLogger(f"lm_eval.{__name__}")

_BLANK = "\x00"  # stands for the blank while the twins are compared
_ENDS = (".", "!", "?", '"', "'", "”", "’")  # a text ending otherwise gets a final period
_EDGES = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)  # punctuation before, the word, after

Pair = tuple[Problem, Problem]


def _edges(word: str) -> tuple[str, ...]:
    """Punctuation before, the word, punctuation after (``_EDGES`` matches every string)."""
    found = _EDGES.match(word)
    assert found is not None
    return found.groups()


def _split(problem: Problem) -> list[str]:
    """Words and the whitespace between them, alternately (even indexes are words)."""
    return re.split(r"(\s+)", _BLANK.join(problem.segments))


def _differing_word(first: list[str], second: list[str]) -> int | str:
    """Index (in the ``_split`` list) of the one word the twins differ by, or why there is none."""
    words_a, words_b = first[::2], second[::2]
    opcodes = [
        op
        for op in difflib.SequenceMatcher(a=words_a, b=words_b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not opcodes:
        return "twins have the same text"
    if len(opcodes) > 1:
        return "twins differ in more than one place"
    tag, a0, a1, b0, b1 = opcodes[0]
    if tag != "replace" or a1 - a0 != 1 or b1 - b0 != 1 or a0 != b0:
        return "special words differ by more than one word"
    return 2 * a0


def zero_shot_pair(first: Problem, second: Problem) -> Pair | str:
    """The zero-shot problems of two twins, or the reason they cannot be made."""
    if first.n_blanks != 1 or second.n_blanks != 1:
        return "two blanks"
    parts_a, parts_b = _split(first), _split(second)
    index = _differing_word(parts_a, parts_b)
    if isinstance(index, str):
        return index
    (lead_a, core_a, trail_a), (lead_b, core_b, trail_b) = (
        _edges(parts[index]) for parts in (parts_a, parts_b)
    )
    if _BLANK in parts_a[index] or _BLANK in parts_b[index]:
        return "the blank is inside the special word"
    if not core_a or not core_b or core_a == core_b:
        return "special words differ only in punctuation"
    options = ((core_a,), (core_b,))  # each twin keeps its own punctuation ("arms" / "bassinet.")
    made = []
    for label, (problem, parts, lead, trail) in enumerate(
        [(first, parts_a, lead_a, trail_a), (second, parts_b, lead_b, trail_b)]
    ):
        answer = problem.options[problem.label][0]
        before = ("".join(parts[:index]) + lead).replace(_BLANK, answer)
        after = (trail + "".join(parts[index + 1 :])).replace(_BLANK, answer)
        if not after.rstrip().endswith(_ENDS):
            after = after.rstrip() + "."  # as Elazar's; partial scoring needs text after the blank
        made.append(
            Problem(
                uid=f"{problem.uid}~zeroshot",
                segments=(before, after),
                options=options,
                label=label,
                number=problem.number,
                source=problem.source,
            )
        )
    return made[0], made[1]


def zero_shot_schemas(schemas: Sequence[Schema]) -> tuple[list[Schema], Counter[str]]:
    """One two-problem schema per twin pair that transforms; counts of discarded pairs by reason.

    Every schema-metric group of two problems is a candidate pair (a schema of three problems
    has two); schemas with one problem have no twin and count as ``no twin``.
    """
    kept: list[Schema] = []
    dropped: Counter[str] = Counter()
    for schema in schemas:
        pairs = [g for g in schema.groups if len(g) == 2]
        if not pairs:
            dropped["no twin"] += 1
        for group in pairs:
            result = zero_shot_pair(*(schema.problems[i] for i in group))
            if isinstance(result, str):
                dropped[result] += 1
                continue
            suffix = "" if len(pairs) == 1 else "~" + "".join(str(i) for i in group)
            kept.append(
                Schema(
                    uid=f"{schema.uid}{suffix}~zeroshot",
                    problems=result,
                    kind=schema.kind,
                    number=schema.number,
                )
            )
    return kept, dropped


def zero_shot_dataset(schemas: Sequence[Schema], base: str) -> list[Schema]:
    """``zero_shot_schemas`` of a named dataset, logging what was kept and what discarded, why."""
    kept, dropped = zero_shot_schemas(schemas)
    for reason, n in sorted(dropped.items()):
        log.info(f"wsc_tasks: zero-shot of {base}: discarded {n} twin pair(s): {reason}")
    problems, groups = count(kept)
    log.info(
        f"wsc_tasks: zero-shot of {base}: kept {groups} of {groups + sum(dropped.values())} "
        f"twin pairs ({problems} problems)"
    )
    return kept
