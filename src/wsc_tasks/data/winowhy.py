"""WinoWhy's reasons (Zhang et al. 2020 §3): which reasons of each WSC273 question are kept.

Each of the 273 WSC273 questions of ``winowhy.json`` comes with 15 candidate reasons for its
correct answer, each rated by five annotators. The clearly plausible (plausibility ≥ 0.8,
positive, 1,270) and clearly implausible ones (≤ 0.2, negative, 1,595) are kept: 2,865 reasons;
the 1,230 "acceptable" ones in between are left out, as in the paper (§3.4), and counted in the
log. A reason continues the text the paper's annotators and GPT-2 saw (§3.2, Table 2): the
question followed by its answer and "because".
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wsc_tasks.data import sources
from wsc_tasks.data.knowledge import wsc273_categories
from wsc_tasks.data.parsers import ParseError, normalise_space, read_wsc273_json

log = logging.getLogger(f"lm_eval.{__name__}")

WINOWHY = "winowhy/winowhy.json"
POSITIVE, NEGATIVE = 0.8, 0.2  # plausibility thresholds of the paper (§3.4)
EXPECTED = (1270, 1595)
_ARTICLES = {"The", "A", "An"}


@dataclass(frozen=True)
class Reason:
    text: str
    label: int  # 1 positive, 0 negative
    plausibility: float
    source: str  # human, reverse (a reason given for the twin question) or gpt (GPT-2)


@dataclass(frozen=True)
class WhyQuestion:
    number: int  # WSC273 problem number
    context: str  # question, answer, "because"
    reasons: tuple[Reason, ...]

    def to_doc(self) -> dict[str, Any]:
        """The lm-eval document of the question: its reasons with their labels and sources,
        and its knowledge categories."""
        return {
            "number": self.number,
            "context": self.context,
            "reasons": [r.text for r in self.reasons],
            "labels": [r.label for r in self.reasons],
            "plausibility": [r.plausibility for r in self.reasons],
            "sources": [r.source for r in self.reasons],
            "categories": list(wsc273_categories(self.number)),
        }


def question_context(before: str, pronoun: str, after: str, answer: str) -> str:
    """The text a reason continues: the sentence, "The 'pronoun' refers to answer because"
    (each part's whitespace normalised, as ``read_wsc273_json`` gives them)."""
    joiner = "" if after[:1] in ".,;:!?'" else " "
    sentence = f"{before} {pronoun}{joiner}{after}" if before else f"{pronoun}{joiner}{after}"
    head, _, rest = answer.partition(" ")
    if head in _ARTICLES and rest:
        answer = f"{head.lower()} {rest}"
    return f"{sentence} The '{pronoun}' refers to {answer} because"


def parse_winowhy(path: str | Path) -> tuple[list[WhyQuestion], Counter[str]]:
    """The questions with their kept reasons, and how many reasons were left out, by why."""
    questions, left_out = [], Counter[str]()
    for question in read_wsc273_json(path):
        where = f"{path}: question {question.number}"
        if question.reasons is None:
            raise ParseError(f"{where}: malformed question (no 'reasons')")
        answer = question.answers[question.correct]
        context = question_context(question.before, question.pronoun, question.after, answer)
        reasons = []
        for k, item in enumerate(question.reasons):
            if not (isinstance(item, list) and len(item) == 4 and isinstance(item[2], int | float)):
                raise ParseError(f"{where}, reason {k + 1}: expected [text, source, score, label]")
            reason = normalise_space(str(item[0]))
            source, plausibility = str(item[1]), float(item[2])
            if not reason:
                raise ParseError(f"{where}, reason {k + 1}: empty reason")
            if plausibility >= POSITIVE or plausibility <= NEGATIVE:
                label = int(plausibility >= POSITIVE)
                reasons.append(Reason(reason, label, plausibility, source))
            else:
                left_out[f"acceptable (plausibility {plausibility:.1f})"] += 1
        if reasons:
            questions.append(WhyQuestion(question.number, context, tuple(reasons)))
        else:
            left_out["question without a kept reason"] += 1
    return questions, left_out


def load_winowhy() -> list[WhyQuestion]:
    """The pinned WinoWhy questions, size-checked against the paper (1,270 + 1,595)."""
    path = sources.resolve(WINOWHY)
    questions, left_out = parse_winowhy(path)
    labels = [r.label for q in questions for r in q.reasons]
    counts = (sum(labels), len(labels) - sum(labels))
    for why, n in sorted(left_out.items()):
        log.info(f"wsc_tasks: winowhy: left out {n} reason(s): {why}")
    if counts != EXPECTED:
        raise ValueError(
            f"{path}: {counts[0]} positive and {counts[1]} negative reasons, expected "
            f"{EXPECTED[0]} and {EXPECTED[1]} (Zhang et al. 2020 §3.4). Is it the pinned file?"
        )
    log.info(
        f"wsc_tasks: winowhy: {len(questions)} questions, {len(labels)} reasons "
        f"({counts[0]} positive, {counts[1]} negative)"
    )
    return questions
