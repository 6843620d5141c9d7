"""Every dataset the tasks evaluate, by name: which file, which parser or transformation, what size.

Sizes from ``data/README.md`` and the papers are checked on every load: a file that parses to a
different number of problems or schemas is an error, not a silently smaller evaluation. A
hand-made file's defective schemas (a control that still names a candidate) are declared once, in
the dataset's spec, each with its reason: loading drops them and logs why, and the pair datasets
and ``wsc-tasks data audit`` read that one declaration.

Each dataset also declares its ``Role``: a full set, a subset, a perturbation or a control
baseline of another dataset, another formulation of one, or an adversarial set. The pair datasets
of the consistency tasks, the report's perturbations, the leaderboard's control columns and the
audited controls are read from the roles, so a new perturbation is one entry here (with its data
file's checksum in ``sources.py``, its task YAMLs, their line in the group YAML its role implies,
e.g. ``wsc266_perturbations.yaml``, and a row in ``task_configs/README.md``; tests check the last
two).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from wsc_tasks.data import dyad_specs, parsers, sources
from wsc_tasks.data.dyad_specs import DYADS_PREFIX
from wsc_tasks.data.dyad_specs import INVERSIONS as INVERSIONS  # re-exported
from wsc_tasks.data.dyad_specs import KINDS as KINDS  # re-exported
from wsc_tasks.data.dyad_specs import dyads_name as dyads_name  # re-exported
from wsc_tasks.data.problems import Schema, count
from wsc_tasks.data.roles import ADVERSARIAL as ADVERSARIAL  # re-exported
from wsc_tasks.data.roles import CHANGES as CHANGES  # re-exported
from wsc_tasks.data.roles import (
    CONTROL,
    FORMULATION,
    FULL,
    PERTURBATION,
    ROLE_KINDS,
    SUBSET,
    DatasetSpec,
    Role,
    RoleKind,
)
from wsc_tasks.data.roles import RANKING as RANKING  # re-exported
from wsc_tasks.data.transforms import TRANSFORMS, transform_schemas

log = logging.getLogger(f"lm_eval.{__name__}")

WINOGRANDE_DEV = "elazar/winogrande/dev.jsonl"


def _maler(relpath: str) -> Callable[[], list[Schema]]:
    return lambda: list(parsers.parse_maler(sources.resolve(relpath)).schemas)


def _winogrande_all() -> list[Schema]:
    schemas = parsers.group_twins(parsers.parse_winogrande(sources.resolve(WINOGRANDE_DEV)))
    pairs = sum(len(s.problems) == 2 for s in schemas)
    log.info(
        f"wsc_tasks: {WINOGRANDE_DEV}: {pairs} twin pairs and {len(schemas) - pairs} problems "
        "without a twin (problem metrics only)"
    )
    return schemas


def _winogrande_twins() -> list[Schema]:
    return [s for s in load("winogrande_dev") if len(s.problems) == 2]


def _generated(
    name: str, kind: RoleKind, base: str, transform: str, origin: str, **role: Any
) -> DatasetSpec:
    """A dataset made here from ``base`` by ``transforms.TRANSFORMS[transform]``."""
    return DatasetSpec(
        name,
        _transformed(base, transform),
        None,
        origin,
        role=Role(kind, base, transform, generated=True, **role),
    )


def _transformed(base: str, transform: str) -> Callable[[], list[Schema]]:
    def build() -> list[Schema]:
        source = load(base)
        kept, dropped = transform_schemas(source, TRANSFORMS[transform])
        for reason, n in sorted(dropped.items()):
            log.info(f"wsc_tasks: {transform} of {base}: dropped {n} schema(s): {reason}")
        problems, groups = count(kept)
        log.info(
            f"wsc_tasks: {transform} of {base}: kept {len(kept)} of {len(source)} schemas "
            f"({problems} problems, {groups} schema groups)"
        )
        return kept

    return build


_W = "maler/wsc266/"
SPECS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            "wsc273_schemas",
            _maler(_W + "wsc273.txt"),
            (273, 137),
            "WSC273 preprocessed as thesis §3.2; 253–255 scored as {253,254},{254,255}",
            role=Role(FULL),
        ),
        DatasetSpec(
            "wsc266", _maler(_W + "wsc266.txt"), (266, 133), "WSC266, thesis §3.3", role=Role(FULL)
        ),
        DatasetSpec(
            "wsc266_associative",
            _maler(_W + "wsc266_associative.txt"),
            (50, 25),
            "associative subset, thesis §3.4.1",
            role=Role(SUBSET, "wsc266"),
        ),
        DatasetSpec(
            "wsc266_nonassociative",
            _maler(_W + "wsc266_nonassociative.txt"),
            (216, 108),
            "non-associative subset, thesis §3.4.1",
            role=Role(SUBSET, "wsc266"),
        ),
        DatasetSpec(
            "wsc266_switched",
            _maler(_W + "wsc266_switched.txt"),
            (140, 70),
            "switched candidates of the switchable subset, thesis §3.4.2",
            role=Role(PERTURBATION, "wsc266", "switched", pairs=70),
        ),
        DatasetSpec(
            "wsc266_adjectival",
            _maler(_W + "wsc266_adjectival.txt"),
            (174, 87),
            "adjectival perturbation of the symmetrical subset, thesis §3.4.4",
            role=Role(PERTURBATION, "wsc266", "adjectival", pairs=87),
        ),
        DatasetSpec(
            "wsc266_unbalanced",
            _maler(_W + "wsc266_unbalanced.txt"),
            (266, 133),
            "unbalanced perturbation, thesis §3.4.4",
            role=Role(PERTURBATION, "wsc266", "unbalanced", pairs=133),
        ),
        DatasetSpec(
            "wsc266_inverted",
            _maler(_W + "wsc266_inverted.txt"),
            (266, 133),
            "inverted schemas, solution by key, thesis §3.4.3",
            role=Role(PERTURBATION, "wsc266", "inverted", problem_level=False, pairs=133),
        ),
        DatasetSpec(
            "wsc266_associative_nocands",
            _maler(_W + "wsc266_associative_nocands.txt"),
            (50, 25),
            "no-candidates perturbation of the associative subset (thesis, hand-made)",
            excluded={
                "w24": "candidate 'pin' left in the text ('When I pulled the pin out', WSC273 "
                "#193/#194; audit: leak)",
            },
            role=Role(CONTROL, "wsc266", "nocands", pairs=24),  # of its associative schemas
        ),
        DatasetSpec(
            "wsc266_nonassociative_nocands",
            _maler(_W + "wsc266_nonassociative_nocands.txt"),
            (216, 108),
            "no-candidates perturbation of the non-associative subset (thesis, hand-made)",
            excluded={
                "w39": "'mouse' cut out of 'mouse hole' ('Was lying by hole', WSC273 #89/#90; "
                "audit: non-mention deletion)",
                "w73": "candidate 'coffee' left in the key ('_ got full of coffee', WSC273 "
                "#195/#196; audit: leak)",
            },
            role=Role(CONTROL, "wsc266", "nocands", pairs=106),  # of its non-associative ones
        ),
        _generated(
            "wsc273_nocands",
            CONTROL,
            "wsc273_schemas",
            "nocands",
            "no-cands baseline (Elazar §5) of WSC273, made by wsc_tasks.data.transforms",
        ),
        _generated(
            "wsc273_partsent",
            CONTROL,
            "wsc273_schemas",
            "partsent",
            "part-sent baseline (Elazar §5, fn. 9) of WSC273, made by wsc_tasks.data.transforms",
        ),
        DatasetSpec(
            "winogrande_dev",
            _winogrande_all,
            (1267, 284),
            "Winogrande (xl) dev, all problems; schema metrics over the 284 twin pairs",
            role=Role(FULL),
        ),
        DatasetSpec(
            "winogrande_twins",
            _winogrande_twins,
            (568, 284),
            "Winogrande dev twins paired by qID (Elazar §3.1)",
            role=Role(SUBSET, "winogrande_dev"),
        ),
        _generated(
            "winogrande_nocands",
            CONTROL,
            "winogrande_twins",
            "nocands",
            "no-cands baseline of the Winogrande twins, made by wsc_tasks.data.transforms",
        ),
        _generated(
            "winogrande_switched",
            PERTURBATION,
            "winogrande_twins",
            "switched",
            "candidates switched in the Winogrande twins, made by wsc_tasks.data.transforms (new)",
            pairs=273,
        ),
        _generated(
            "winogrande_partsent",
            CONTROL,
            "winogrande_twins",
            "partsent",
            "part-sent baseline of the Winogrande twins, made by wsc_tasks.data.transforms",
        ),
        DatasetSpec(
            "wsc273_zeroshot",
            lambda: _zero_shot("wsc273_schemas"),
            (226, 113),
            "Elazar §6.1 zero-shot form of WSC273 (key word blanked), by wsc_tasks.data.zeroshot",
            role=Role(FORMULATION, "wsc273_schemas", "zeroshot"),
        ),
        DatasetSpec(
            "winogrande_zeroshot",
            lambda: _zero_shot("winogrande_twins"),
            (364, 182),
            "Elazar §6.1 zero-shot form of the Winogrande dev twins, by wsc_tasks.data.zeroshot",
            role=Role(FORMULATION, "winogrande_twins", "zeroshot"),
        ),
    ]
}


def _zero_shot(base: str) -> list[Schema]:
    from wsc_tasks.data.zeroshot import zero_shot_dataset

    return zero_shot_dataset(load(base), base)


def _split_excluded(spec: DatasetSpec, schemas: list[Schema]) -> tuple[list[Schema], list[Schema]]:
    """(kept, excluded) schemas; an exclusion naming no schema of the file is an error."""
    unknown = sorted(set(spec.excluded) - {s.uid for s in schemas})
    if unknown:
        raise ValueError(
            f"dataset {spec.name}: excluded schema(s) {unknown} not in the file; fix "
            f"catalog.SPECS[{spec.name!r}].excluded"
        )
    kept = [s for s in schemas if s.uid not in spec.excluded]
    return kept, [s for s in schemas if s.uid in spec.excluded]


@cache
def _load_cached(name: str) -> tuple[Schema, ...]:
    spec = SPECS.get(name) or dyad_specs.generated_spec(name, SPECS, load)  # "dyads:…" names
    schemas = spec.build()
    problems, groups = count(schemas)
    if spec.expected is not None and (problems, groups) != spec.expected:
        raise ValueError(
            f"dataset {name}: parsed {problems} problems in {groups} schema groups, expected "
            f"{spec.expected[0]} and {spec.expected[1]} (data/README.md). Is it the pinned file?"
        )
    if spec.excluded:
        schemas, dropped = _split_excluded(spec, schemas)
        for schema in dropped:
            log.info(
                f"wsc_tasks: {name}: dropped 1 schema(s) excluded in the catalog: {schema.uid}: "
                f"{spec.excluded[schema.uid]}"
            )
        problems, groups = count(schemas)
        log.info(
            f"wsc_tasks: {name}: kept {len(schemas)} of {len(schemas) + len(dropped)} schemas "
            f"({problems} problems, {groups} schema groups); {len(dropped)} excluded"
        )
    log.info(f"wsc_tasks: {name}: {len(schemas)} documents, {problems} problems, {groups} schemas")
    return tuple(schemas)


def load(name: str) -> list[Schema]:
    """The schemas of a named dataset, parsed, transformed and size-checked."""
    return list(_load_cached(name))


def excluded(name: str) -> list[tuple[Schema, str]]:
    """The schemas ``load(name)`` leaves out by its spec's declaration, each with the reason."""
    spec = SPECS.get(name)
    if spec is None or not spec.excluded:
        return []
    return [(s, spec.excluded[s.uid]) for s in _split_excluded(spec, spec.build())[1]]


# -- pairs of (original, transformed) schemas, the documents of the consistency tasks -------------


@dataclass(frozen=True)
class PairSpec:
    name: str
    original: str  # dataset name
    transformed: tuple[str, ...]  # dataset names, concatenated
    problem_level: bool  # a problem transformation (else a schema transformation, e.g. inversion)
    expected: int  # number of schema pairs (an original whose image is excluded has none)
    origin: str


# pair datasets of more than one transformed dataset; the others come from the datasets' roles
COMBINED_PAIRS = (
    PairSpec(
        "wsc266_nocands",
        "wsc266",
        ("wsc266_associative_nocands", "wsc266_nonassociative_nocands"),
        True,
        130,
        "WSC266 and its hand-made no-candidates perturbation",
    ),
)
PAIR_SPECS: dict[str, PairSpec] = {}  # filled below, once every dataset is in SPECS


@cache
def _pairs_cached(name: str) -> tuple[tuple[Schema, Schema], ...]:
    from wsc_tasks.data.pairing import pair_schemas

    if name not in PAIR_SPECS:
        raise KeyError(f"unknown wsc_tasks pair dataset {name!r}; known: {sorted(PAIR_SPECS)}")
    spec = PAIR_SPECS[name]
    transformed = [s for dataset in spec.transformed for s in load(dataset)]
    pairs = pair_schemas(load(spec.original), transformed, spec.problem_level)
    if len(pairs) != spec.expected:
        raise ValueError(
            f"schema pairs {name}: {len(pairs)} pairs, expected {spec.expected}: "
            "is every data file the pinned one?"
        )
    log.info(
        f"wsc_tasks: pairs {name}: {len(pairs)} {spec.original} schemas matched with "
        f"{' + '.join(spec.transformed)}"
    )
    unpaired = excluded_pairs(name)
    if unpaired:
        uids = ", ".join(f"{o.uid} ({t.uid})" for o, t, _ in unpaired)
        log.info(
            f"wsc_tasks: pairs {name}: {len(unpaired)} {spec.original} schema(s) have no pair, "
            f"their transformed schema being excluded in the catalog: {uids}"
        )
    return tuple(pairs)


def load_pairs(name: str) -> list[tuple[Schema, Schema]]:
    """(original, transformed) schema pairs of a named pair dataset, matched and size-checked."""
    return list(_pairs_cached(name))


def excluded_pairs(name: str) -> list[tuple[Schema, Schema, str]]:
    """(original, excluded transformed schema, reason) for the schemas that ``load_pairs(name)``
    lacks because ``excluded`` drops them from a transformed dataset."""
    from wsc_tasks.data.pairing import pair_schemas

    spec = PAIR_SPECS[name]
    dropped = [pair for dataset in spec.transformed for pair in excluded(dataset)]
    if not dropped:
        return []
    originals = pair_schemas(load(spec.original), [s for s, _ in dropped], spec.problem_level)
    return [(o, t, reason) for (o, t), (_, reason) in zip(originals, dropped, strict=True)]


SPECS.update((spec.name, spec) for spec in dyad_specs.reid_specs(load))
PAIR_SPECS.update(
    (name, PairSpec(name, spec.role.of, (name,), spec.role.problem_level, spec.role.pairs,
                    f"{spec.role.of} and {spec.origin}"))
    for name, spec in SPECS.items()
    if spec.role.of is not None and spec.role.pairs is not None
)  # fmt: skip
PAIR_SPECS.update((spec.name, spec) for spec in COMBINED_PAIRS)


def role_of(name: str) -> Role:
    """The role of a catalog dataset, or of a generated ``dyads:<base>:…`` one (not loaded)."""
    if name in SPECS:
        return SPECS[name].role
    if name.startswith(DYADS_PREFIX):
        return Role(FORMULATION, name[len(DYADS_PREFIX) :].split(":", 1)[0].strip(), "dyads")
    raise KeyError(f"unknown wsc_tasks dataset {name!r}; known: {sorted(SPECS)}")


def datasets(kind: RoleKind, of: str | None = None) -> list[str]:
    """The catalog's datasets of a role kind (made from ``of``, if given), in catalog order."""
    if kind not in ROLE_KINDS:
        raise KeyError(f"unknown dataset role {kind!r}; known: {', '.join(ROLE_KINDS)}")
    return [
        name
        for name, spec in SPECS.items()
        if spec.role.kind == kind and (of is None or spec.role.of == of)
    ]


def root(name: str) -> str:
    """The full or adversarial dataset that ``name`` is made from, through its roles' ``of``."""
    seen = [name]
    while (of := role_of(seen[-1]).of) is not None:
        if of in seen:
            raise ValueError(f"dataset roles form a cycle: {' -> '.join([*seen, of])}")
        seen.append(of)
    return seen[-1]
