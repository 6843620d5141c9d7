"""Knowledge categories of the WSC273 questions (WinoWhy, Zhang et al. 2020 §2.2, Tables 1 and 4).

``winowhy/cat_ref.json`` lists, per category, the 0-based indexes of the WSC273 questions whose
major knowledge type it is (a question with several equally voted types is in each of them). The
index is the WSC273 problem number minus one; the thesis files keep that numbering, so any problem
with a WSC273 ``number`` has categories. The file names the paper's *Eventuality* ``Temporal`` and
holds an empty ``Causal`` list (the paper removed that type, §2.2.1); the names here are the
paper's, lower-case.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from wsc_tasks.data import sources

log = logging.getLogger(f"lm_eval.{__name__}")

CAT_REF = "winowhy/cat_ref.json"
WSC273_SIZE = 273
# cat_ref.json key -> category name (paper Table 1, in its order); Causal is empty and removed.
FILE_NAMES = {
    "Property": "property",
    "Object": "object",
    "Temporal": "eventuality",
    "Spatial": "spatial",
    "Quantity": "quantity",
    "Others": "others",
}
CATEGORIES = tuple(FILE_NAMES.values())
REMOVED = ("Causal",)


def parse_cat_ref(path: str | Path) -> dict[int, tuple[str, ...]]:
    """WSC273 problem number (1-based) -> its categories, in the order of ``CATEGORIES``."""
    path = Path(path)
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from error
    unknown = set(table) - set(FILE_NAMES) - set(REMOVED)
    if unknown or not isinstance(table, dict):
        raise ValueError(f"{path}: unknown knowledge categories {sorted(unknown)}")
    for name in REMOVED:
        if table.get(name):
            raise ValueError(f"{path}: category {name!r} was removed by the paper but is not empty")
    by_number: dict[int, list[str]] = {n: [] for n in range(1, WSC273_SIZE + 1)}
    for key, name in FILE_NAMES.items():
        for index in table.get(key, []):
            if not isinstance(index, int) or not 0 <= index < WSC273_SIZE:
                raise ValueError(f"{path}: {key}: {index!r} is not a WSC273 question index")
            by_number[index + 1].append(name)
    missing = [n for n, names in by_number.items() if not names]
    if missing:
        raise ValueError(f"{path}: WSC273 questions without a category: {missing}")
    return {n: tuple(names) for n, names in by_number.items()}


@cache
def _categories() -> Mapping[int, tuple[str, ...]]:
    return parse_cat_ref(sources.resolve(CAT_REF))


def wsc273_categories(number: int) -> tuple[str, ...]:
    """The knowledge categories of WSC273 problem ``number`` (1–273), as Table 4 counts them."""
    table = _categories()
    if number not in table:
        raise KeyError(f"{number} is not a WSC273 problem number (1-{WSC273_SIZE})")
    return table[number]


def knowledge_count(number: int) -> str:
    """``single`` or ``multiple`` major knowledge types (Zhang et al. 2020 Table 5: 222 and 51)."""
    return "single" if len(wsc273_categories(number)) == 1 else "multiple"
