"""What a dataset is: its ``Role`` relative to the dataset it is made from, and its ``DatasetSpec``.

The catalog (``wsc_tasks.data.catalog``) holds one spec per dataset; the pair datasets, the
report's perturbations, the leaderboard's controls and the audit read the roles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from wsc_tasks.data.problems import Schema

# -- roles: what each dataset is ---------------------------------------------------------------
FULL: Final = "full"  # a dataset in its own right
ADVERSARIAL: Final = "adversarial"  # a dataset in its own right, of schemas made to defeat models
SUBSET: Final = "subset"  # some schemas of ``of``, unchanged
# schemas of ``of`` changed in a way a reasoning model should follow
PERTURBATION: Final = "perturbation"
CONTROL: Final = "control"  # a control baseline of ``of``: the clue removed, near chance expected
# the schemas of ``of`` asked another way (zero-shot form, dyads)
FORMULATION: Final = "formulation"
ROLE_KINDS = (FULL, ADVERSARIAL, SUBSET, PERTURBATION, CONTROL, FORMULATION)
RoleKind = Literal["full", "adversarial", "subset", "perturbation", "control", "formulation"]


# what a role's ``change`` does to the schemas of ``of``, in words (the report's findings say it)
CHANGES = {
    "nocands": "without the candidates",
    "partsent": "with only the clause around the pronoun",
    "switched": "with the two candidates switched",
    "adjectival": "with the candidates made one noun told apart by adjectives",
    "unbalanced": "with one candidate lengthened by adjectives",
    "inverted": "solved by key, the key words being the options",
    "zeroshot": "in the zero-shot form (the key word blanked)",
    "dyads": "as dyads",
}
RANKING = "wsc266"  # the dataset models are ranked on: the report's findings lead with it


@dataclass(frozen=True)
class Role:
    """What a dataset is, relative to the dataset it is made from."""

    kind: RoleKind
    of: str | None = None  # the catalog dataset it is made from; None for FULL and ADVERSARIAL
    change: str = ""  # "nocands", "inverted", "zeroshot", …; for a control, its audit.CHECKS key
    generated: bool = False  # made here from ``of`` by ``transforms.TRANSFORMS[change]``
    problem_level: bool = True  # matched with ``of`` problem by problem (False: by schema)
    pairs: int | None = None  # schema pairs with ``of``: a pair dataset of the same name exists


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    build: Callable[[], list[Schema]]
    expected: tuple[int, int] | None  # (problems, schema groups) as built; None for derived ones
    origin: str  # what it is and where it comes from, for the task README and logs
    # schema uid -> why it is dropped on load: defects of a hand-made file, found by the audit
    excluded: Mapping[str, str] = field(default_factory=dict)
    role: Role = field(kw_only=True)
