"""Problems asked as questions: what one document's answers were, and the shares read from them.

A question task asks each problem of a schema twice, its options in each order
(``scoring.questions.ORDERS``), and its per-document value besides the ``SchemaOutcome`` of the
accuracies is an ``Answers``: per question, the option its answer named (-1: unanswered), the
right one, the order it was asked in, its problem and the form the parser read. The shares
below are ratios over documents (``ratios.Ratio``), so lm-eval's figure and the schema
bootstrap come from the same sums:

- **unanswered** u: questions whose answer names no option (no text, both options, a refusal,
  neither, no answer from the server), of the questions asked; they count as wrong in a and A;
- **first option** f_A: answers naming the option shown first (A), of the questions answered.
  Each problem is asked with A and B exchanged, so a model whose answer follows the options, not
  their order, names A exactly half the time: 0.5; a model that always answers A has 1;
- **order consistency** c_o: problems whose two answers (one per order) name the same option,
  of the problems asked; an unanswered question never agrees. A model that always answers A
  has 0; one answering at random about 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

UNANSWERED = -1  # ``chosen`` of a question whose answer names no option


class Answers(TypedDict):
    """One document's questions, in the order they were asked."""

    chosen: list[int]  # the problem's option the answer named, UNANSWERED for none
    label: list[int]  # the right option
    order: list[int]  # 0: the options as given, 1: swapped
    problem: list[int]  # the problem's index in its schema (document)
    form: list[str]  # how the answer was read (``scoring.questions``)


def answers(
    chosen: Sequence[int | None],
    label: Sequence[int],
    order: Sequence[int],
    problem: Sequence[int],
    form: Sequence[str],
) -> Answers:
    """An ``Answers`` value (None in ``chosen``: unanswered)."""
    return {
        "chosen": [UNANSWERED if c is None else int(c) for c in chosen],
        "label": [int(x) for x in label],
        "order": [int(x) for x in order],
        "problem": [int(x) for x in problem],
        "form": [str(x) for x in form],
    }


def position(chosen: int, order: int) -> int:
    """Where the chosen option was shown: 0 for A, 1 for B (order 1 shows the options swapped)."""
    return chosen if order == 0 else 1 - chosen


# -- per-document parts (numerator, denominator) of the ratios --------------------------------
def unanswered_parts(value: Answers) -> tuple[float, float]:
    chosen = value["chosen"]
    return float(sum(c == UNANSWERED for c in chosen)), float(len(chosen))


def first_option_parts(value: Answers) -> tuple[float, float]:
    pairs = [(c, o) for c, o in zip(value["chosen"], value["order"], strict=True) if c >= 0]
    return float(sum(position(c, o) == 0 for c, o in pairs)), float(len(pairs))


def order_consistency_parts(value: Answers) -> tuple[float, float]:
    by_problem: dict[int, dict[int, int]] = {}
    for c, o, p in zip(value["chosen"], value["order"], value["problem"], strict=True):
        by_problem.setdefault(p, {})[o] = c
    same = sum(
        len(asked) == 2 and asked[0] == asked[1] != UNANSWERED for asked in by_problem.values()
    )
    return float(same), float(len(by_problem))


# -- counts -----------------------------------------------------------------------------------
def n_unanswered(values: Sequence[Answers]) -> int:
    return sum(sum(c == UNANSWERED for c in v["chosen"]) for v in values)


def n_asked(values: Sequence[Answers]) -> int:
    return sum(len(v["chosen"]) for v in values)


def forms(values: Sequence[Answers]) -> dict[str, int]:
    """How many answers were read as each form, in first-seen order."""
    found: dict[str, int] = {}
    for value in values:
        for form in value["form"]:
            found[form] = found.get(form, 0) + 1
    return found
