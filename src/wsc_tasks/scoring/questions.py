"""A problem asked as a question: the prompt it becomes, and the option a generated answer names.

For models that give no log-probabilities (chat APIs), a problem is asked with its sentence (each
blank written ``_``) and its two options labelled A and B, once in each order (``ORDERS``: as the
dataset gives them, then swapped), and the model answers in a few words. ``prompt`` writes the
question, ``shown`` says which option stands at each letter, and ``read`` is the parser: a pure
function from the answer's text to the letter it names, or to why it names none.

``read`` accepts the forms models give: a letter (``B``, ``b.``, ``(B)``, ``**B**``, ``B: the
suitcase``), a letter after a keyword (``Option B``, ``The answer is (A)``), the option's own words
(``the suitcase``, ``suitcase``) and a sentence that names one option (``The blank refers to the
suitcase.``). Everything else is unanswered, with its reason (``UNANSWERED``): no text, both
options named (``A or B``, ``both the trophy and the suitcase``), a refusal (``I'm sorry…``, ``I
don't know``), neither option named; an answer the server never gave (an HTTP error) is
``ERROR``, decided where the answer is fetched. A letter outranks words, so ``B (the trophy)`` is
B; a refusal outranks words only, so ``I'm not sure, but B`` is B.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from wsc_tasks.data.problems import Problem

ORDERS = ("given", "swapped")  # the options as the dataset gives them, then in the other order
LETTERS = ("A", "B")
QUESTION = "Which option correctly fills the blank (_) in the sentence above?"
QUESTION_TWO = "Which option correctly fills the two blanks (_), in order, in the sentence above?"
INSTRUCTION = "Answer with A or B."
CUE = "Answer:"

# what an answer was read as: a letter, or the option's words; the rest are unanswered
LETTER, WORDS = "letter", "words"
EMPTY, BOTH, REFUSAL, NONE, ERROR = "empty", "both", "refusal", "none", "error"
ANSWERED = (LETTER, WORDS)
UNANSWERED = (EMPTY, BOTH, REFUSAL, NONE, ERROR)
REASONS = {  # each unanswered form in words (notes, reports)
    EMPTY: "no text",
    BOTH: "both options named",
    REFUSAL: "a refusal",
    NONE: "neither option named",
    ERROR: "no answer from the server",
}


def reasons(counted: dict[str, int]) -> str:
    """The unanswered questions by reason, in words (``5 no text, 2 a refusal``), from the
    number of answers read as each form (``metrics.questions.forms``)."""
    return ", ".join(f"{counted[form]} {REASONS[form]}" for form in UNANSWERED if counted.get(form))


def shown(order: int) -> tuple[int, int]:
    """The problem's option at each letter (A, B) when asked in order ``order`` (0: given)."""
    if order not in (0, 1):
        raise ValueError(f"order {order!r}: 0 (as given) or 1 (swapped)")
    return (0, 1) if order == 0 else (1, 0)


def option_text(problem: Problem, option: int) -> str:
    """An option as the question shows it: its filler, or its fillers in order (two blanks)."""
    return " … ".join(problem.options[option])


def sentence(problem: Problem) -> str:
    """The problem's sentence, each blank written ``_``."""
    return "_".join(problem.segments).strip()


def prompt(problem: Problem, order: int) -> str:
    """The question of ``problem`` with its options in ``order``; it ends in ``CUE``, so that a
    model without a chat template answers next."""
    ask = QUESTION if problem.n_blanks == 1 else QUESTION_TWO
    lines = [sentence(problem), "", ask]
    shown_at = zip(LETTERS, shown(order), strict=True)
    lines += [f"{letter}. {option_text(problem, i)}" for letter, i in shown_at]
    return "\n".join([*lines, INSTRUCTION, CUE])


# -- the parser -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reading:
    """What an answer was read as: the letter it names (0: A, 1: B; None: none) and its form."""

    letter: int | None
    form: str

    @property
    def answered(self) -> bool:
        return self.letter is not None


_ALONE = re.compile(r"[\W_]*([ABab])[\W_]*")  # the whole answer is a letter: "b.", "(B)", "**A**"
# a letter after a keyword: "Option B", "answer: b", "The answer is (A)"; a lower-case letter only
# where no word follows ("the answer is a suitcase" names no letter)
_KEYWORD = re.compile(
    r"\b(?i:option|answer|choice|letter)\s*(?i:is|would be|:)?\s*[(\[\"'*]*"
    r"(?:([AB])(?![\w'’])|([ab])(?=\s*(?:$|[.,;:!)\]*\"'’])))"
)
_CAPITAL = re.compile(r"(?<![\w'’])([AB])(?![\w'’])")
# "A man", "A suitcase": the article, unless a verb or a conjunction follows ("A is", "A and B")
_ARTICLE = re.compile(r"A\s+(?!(?:is|was|fits|fills|and|or|nor|then)\b)[a-z]")
_REFUSAL = re.compile(
    r"\b(?:i\s*(?:can ?not|can't|can’t|cannot|am unable|'m unable|’m unable|do not know|don't "
    r"know|don’t know|am not sure|'m not sure|’m not sure|am sorry|'m sorry|’m sorry|apologi[sz]e)"
    r"|as an ai|not enough (?:information|context)|(?:can ?not|can't|cannot) be determined"
    r"|impossible to (?:tell|say|determine)|neither)\b",
    re.IGNORECASE,
)
_DETERMINERS = re.compile(
    r"^(?:the|a|an|his|her|their|its|my|your|our|this|that|these|those)\s+", re.IGNORECASE
)


def _letters(text: str) -> set[int]:
    """The letters ``text`` names: the whole answer, a letter after a keyword, or a capital A or
    B standing alone (not the article)."""
    alone = _ALONE.fullmatch(text)
    if alone:
        return {LETTERS.index(alone[1].upper())}
    found = {LETTERS.index((m[1] or m[2]).upper()) for m in _KEYWORD.finditer(text)}
    for match in _CAPITAL.finditer(text):
        if match[1] == "A" and _ARTICLE.match(text, match.start()):
            continue
        found.add(LETTERS.index(match[1]))
    return found


def _phrases(option: str) -> list[str]:
    """How an answer may name an option: its words, and without a leading determiner."""
    words = " ".join(option.replace("…", " ").split())
    bare = _DETERMINERS.sub("", words)
    return [p for p in dict.fromkeys((words, bare)) if p]


def _named(text: str, options: Sequence[str]) -> set[int]:
    """The options whose words ``text`` names (a mention inside a longer mention of the other
    option does not count: "the old man" names "the old man", not also "the man")."""
    spans: list[tuple[int, int, int]] = []
    for letter, option in enumerate(options):
        for phrase in _phrases(option):
            pattern = re.compile(rf"(?<![\w'’]){re.escape(phrase)}(?![\w'’])", re.IGNORECASE)
            spans += [(m.start(), m.end(), letter) for m in pattern.finditer(text)]
    kept = {
        letter
        for start, end, letter in spans
        if not any(
            other != letter and s <= start and end <= e and (e - s) > (end - start)
            for s, e, other in spans
        )
    }
    return kept


def read(answer: str, options: Sequence[str]) -> Reading:
    """The letter ``answer`` names, ``options`` being the texts shown at A and B (``option_text``);
    see the module docstring for the forms and their precedence."""
    text = answer.strip()
    if not text:
        return Reading(None, EMPTY)
    letters = _letters(text)
    if len(letters) == 1:
        return Reading(letters.pop(), LETTER)
    if letters:
        return Reading(None, BOTH)
    if _REFUSAL.search(text):
        return Reading(None, REFUSAL)
    named = _named(text, options)
    if len(named) == 1:
        return Reading(named.pop(), WORDS)
    return Reading(None, BOTH if named else NONE)
