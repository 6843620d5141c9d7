"""What scored a foreign run's problems, and what such a run cannot say.

A foreign run (lm-eval's built-in ``winogrande`` or ``wsc273`` read from its ``--log_samples``,
or an Open LLM Leaderboard details file) holds each problem's two log-likelihoods under one
scoring method and nothing else: its problem accuracy a and schema accuracy A are estimated as a
run of this package's are, while the control baselines, perturbations and consistency that only
this package's tasks produce are *absent* from it, never zero and never left out unsaid. The
sentence saying so is written once, here (``absent``), for the report, the leaderboard and their
notes; so is the line naming the method and num_fewshot shown beside each model (``describe``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from wsc_tasks import markup

# what a foreign run does not have, in the order the findings would say them
ABSENT = ("control baselines", "perturbations", "consistency")
LM_EVAL = "lm-eval samples"  # ``Origin.reader``: lm-eval's --log_samples files
DETAILS = "Open LLM Leaderboard details"  # ``Origin.reader``: the leaderboard's details Parquet
SHOWN_APART = 10  # problems named in a note, then "and N more"


@dataclass(frozen=True)
class Origin:
    """One foreign task as it was read: who scored it and how, and how much of it there is."""

    reader: str  # LM_EVAL or DETAILS
    task: str  # the task as its harness named it: "winogrande", "wsc273"
    file: str  # the file read (a Hub file: "<repo>@<commit>:<path>")
    num_fewshot: int | None  # None: the file does not record it
    scoring: str = "partial"  # lm-eval's method for both tasks: the text after the blank scored
    problems: int = 0  # problems of the pinned dataset
    read: int = 0  # of them, the problems the run scored
    apart: tuple[str, ...] = ()  # problems scored whose schema partner is not in the run
    undefined: tuple[str, ...] = ()  # problems in the run with a NaN log-likelihood: no verdict

    @property
    def partial(self) -> bool:
        return self.held < self.problems

    @property
    def held(self) -> int:
        """The problems the file holds: scored, or with a NaN log-likelihood."""
        return self.read + len(self.undefined)

    def shots(self) -> str:
        return (
            "num_fewshot not recorded" if self.num_fewshot is None else (f"{self.num_fewshot}-shot")
        )

    def describe(self) -> str:
        """The method and num_fewshot, as a table shows them beside each model (plain text)."""
        return f"{self.harness()} {self.task}, {self.scoring} scoring, {self.shots()}"

    def harness(self) -> str:
        return "Open LLM Leaderboard (lm-eval)" if self.reader == DETAILS else "lm-eval"

    def absent(self) -> str:
        """The sentence of what the run cannot say (``ABSENT``), for the findings (Markdown,
        the task and file marked as user text)."""
        return (
            f"Scored by {self.harness()} {markup.code(self.task)}, {self.scoring} scoring, "
            f"{self.shots()} (read from {markup.code(self.file)}): a and A only; "
            f"{', '.join(ABSENT[:-1])} and {ABSENT[-1]} are absent from such a run, not zero."
        )

    def brief(self) -> str:
        """``absent`` in a clause, for a leaderboard row."""
        return (
            f"{', '.join(ABSENT[:-1])} and {ABSENT[-1]} absent ({self.harness()} "
            f"{markup.code(self.task)}, {self.scoring} scoring, {self.shots()})"
        )

    def notes(self, label: str, name: str) -> list[str]:
        """What a reader must know of this task before its figures: a partial run, the problems
        counted apart."""
        out = []
        if self.partial:
            out.append(
                f"{label}, {name}: partial: {self.file} holds {self.held:,} of the "
                f"{self.problems:,} problems of the pinned dataset; its figures are of those"
            )
        if self.undefined:
            out.append(
                f"{label}, {name}: {len(self.undefined):,} problem(s) have a NaN log-likelihood "
                f"in {self.file}: no verdict, so they and their schemas are left out of a and A: "
                f"{_listed(self.undefined)}"
            )
        if self.apart:
            out.append(
                f"{label}, {name}: {len(self.apart)} problem(s) whose schema partner is not in "
                f"the run, counted in a and not in A: {_listed(self.apart)}"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["apart"], found["undefined"] = list(self.apart), list(self.undefined)
        return found

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Origin:
        listed = {key: tuple(data.get(key) or ()) for key in ("apart", "undefined")}
        return cls(**{**data, **listed})


def _listed(problems: tuple[str, ...]) -> str:
    """The first ``SHOWN_APART`` problems, then "and N more"."""
    more = len(problems) - SHOWN_APART
    return ", ".join(problems[:SHOWN_APART]) + (f" and {more} more" if more > 0 else "")


CELL = "absent"  # a table cell of a figure a foreign run cannot have
