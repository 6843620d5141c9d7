"""Reid250, its inversion and its dyads (thesis §3.5–3.6): the published files' specs, and the
dyads the catalog generates from any dataset by name (``dyads:<base>:<grouping>:<wrapper>``).

Both read datasets through the catalog's ``load``, which the catalog passes in (it imports this
module to build its table).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial

from wsc_tasks.data import parsers, sources
from wsc_tasks.data.problems import Schema, SchemaKind, count
from wsc_tasks.data.roles import ADVERSARIAL, FORMULATION, PERTURBATION, SUBSET, DatasetSpec, Role

log = logging.getLogger("lm_eval.wsc_tasks.data.catalog")

Load = Callable[[str], list[Schema]]


def _maler(relpath: str) -> Callable[[], list[Schema]]:
    return lambda: list(parsers.parse_maler(sources.resolve(relpath)).schemas)


# -- Reid250, its inversion and its dyads (thesis §3.5–3.6) ---------------------------------------

_R = "maler/reid250/"
KINDS: dict[str, SchemaKind] = {"substitution": "s", "transposition": "t"}
INVERSIONS = {"reid250": "reid250_inverted"}  # a dataset's own inversion, for dyads solved by key
DYADS_PREFIX = "dyads:"
_REID_DYAD_FILES = {  # thesis grouping -> published Reid250×2 file (wrapper "It is … that SCHEMA.")
    "by_answer": "reid250x2-v1-by-answer.txt",
    "by_answer_fix_key": "reid250x2-v1-by-answer.txt",
    "by_key": "reid250x2-v1-by-key.txt",
    "by_boolean": "reid250x2-v1-by-boolean.txt",
}


def _of_kind(load: Load, base: str, kind: str) -> list[Schema]:
    schemas = load(base)
    kept = [s for s in schemas if s.kind == KINDS[kind]]
    log.info(f"wsc_tasks: {kind} schemas of {base}: kept {len(kept)} of {len(schemas)}")
    return kept


def _dyad_file(grouping: str) -> Callable[[], list[Schema]]:
    from wsc_tasks.data.dyads import regroup

    return lambda: regroup(_maler(_R + _REID_DYAD_FILES[grouping])(), grouping)


def reid_specs(load: Load) -> list[DatasetSpec]:
    """Reid250 and Reid250 inverted, each whole and by schema kind; the published Reid250×2 in
    each mode, grouped for schema metrics as thesis §3.5.6 prescribes, whole and by kind."""
    specs = [
        DatasetSpec("reid250", _maler(_R + "reid250.txt"), (250, 125),
                    "Reid250, 75 substitution + 50 transposition schemas, thesis §3.6.2",
                    role=Role(ADVERSARIAL)),
        DatasetSpec("reid250_inverted", _maler(_R + "reid250-inverted.txt"), (250, 125),
                    "Reid250 solved by key (inverted); transposition schemas get two blanks and "
                    "ordered-pair options, thesis §3.5.5",
                    role=Role(PERTURBATION, "reid250", "inverted", problem_level=False,
                              pairs=125)),
    ]  # fmt: skip
    x2 = {  # dataset name: (grouping, description)
        "reid250x2": ("by_answer", "Reid250×2 by answer; schemas fix a truth value (3.78)"),
        "reid250x2_by_key": ("by_key", "Reid250×2 by key; schemas fix a truth value"),
        "reid250x2_by_boolean": (
            "by_boolean",
            "Reid250×2 by boolean; schemas fix a key phrase (3.79)",
        ),
        "reid250x2_by_answer_fix_key": (
            "by_answer_fix_key",
            "Reid250×2 by answer; schemas fix a key phrase (3.79), the grouping that by boolean "
            "is compared with (Table 4.38)",
        ),
    }
    for name, (grouping, what) in x2.items():
        specs.append(DatasetSpec(name, _dyad_file(grouping), (500, 250), f"{what}, §3.5.6",
                                 role=Role(FORMULATION, "reid250", "dyads")))  # fmt: skip
    sizes = {"substitution": (150, 75), "transposition": (100, 50)}
    for base in ("reid250", "reid250_inverted", "reid250x2", "reid250x2_by_key",
                 "reid250x2_by_boolean"):  # fmt: skip
        factor = 2 if base.startswith("reid250x2") else 1
        for kind, (problems, groups) in sizes.items():
            specs.append(
                DatasetSpec(
                    f"{base}_{kind}",
                    partial(_of_kind, load, base, kind),
                    (problems * factor, groups * factor),
                    f"the {kind} schemas of {base}",
                    role=Role(SUBSET, base),
                )
            )
    return specs


def dyads_name(base: str, grouping: str, wrapper: str) -> str:
    """The catalog name of a generated dyadic dataset (what a task YAML puts in ``dataset``)."""
    return f"{DYADS_PREFIX}{base}:{grouping}:{wrapper}"


def generated_spec(name: str, known: Mapping[str, DatasetSpec], load: Load) -> DatasetSpec:
    """Datasets named by their recipe: ``dyads:<base dataset>:<grouping>:<wrapper>``, e.g.
    ``dyads:reid250:by_key:That SCHEMA is [true ~ false].`` (groupings: ``dyads.GROUPINGS``;
    by key needs a base with a known inversion, ``INVERSIONS``)."""
    if not name.startswith(DYADS_PREFIX):
        raise KeyError(
            f"unknown wsc_tasks dataset {name!r}; known: {sorted(known)} and generated "
            f"'{DYADS_PREFIX}<base>:<grouping>:<wrapper>' dyads"
        )
    from wsc_tasks.data import dyads

    parts = name[len(DYADS_PREFIX) :].split(":", 2)
    if len(parts) != 3:
        raise KeyError(f"dataset {name!r}: write {DYADS_PREFIX}<base>:<grouping>:<wrapper>")
    base, grouping, template = (part.strip() for part in parts)
    if base not in known:
        raise KeyError(f"dataset {name!r}: unknown base dataset {base!r}")
    if grouping not in dyads.GROUPINGS:
        raise KeyError(f"dataset {name!r}: grouping {grouping!r} not in {list(dyads.GROUPINGS)}")
    mode = dyads.GROUPINGS[grouping][0]
    if mode == "by key" and base not in INVERSIONS:
        raise KeyError(
            f"dataset {name!r}: solution by key needs the inversion of {base}; known for "
            f"{sorted(INVERSIONS)}"
        )
    wrapper = dyads.parse_wrapper(template)  # errors name the wrapper before any data is read

    def build() -> list[Schema]:
        inverted = load(INVERSIONS[base]) if mode == "by key" else None
        made = dyads.make_dyads(load(base), wrapper, grouping, inverted)
        log.info(
            f"wsc_tasks: {len(made)} dyads of {base} in wrapper {wrapper.template!r}, {mode}, "
            f"schemas fixing a {dyads.GROUPINGS[grouping][1]}"
        )
        return made

    problems, _ = count(load(base))
    return DatasetSpec(
        name,
        build,
        (2 * problems, 2 * len(load(base))),
        f"dyads of {base}",
        role=Role(FORMULATION, base, "dyads"),
    )
