"""Dataset roles: every role names datasets that exist, and the report, the leaderboard, the audit
and the group YAMLs list exactly what the roles imply (a new perturbation is one catalog entry)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from wsc_tasks import leaderboard
from wsc_tasks.data import audit, canonical, catalog, transforms
from wsc_tasks.data.catalog import CONTROL, FORMULATION, FULL, PERTURBATION, SUBSET
from wsc_tasks.paths import include_path
from wsc_tasks.report.sections import perturbations

CONFIGS = include_path()


class _Loader(yaml.SafeLoader):
    """Reads the YAMLs as data: ``!function`` names a class, kept as its dotted name."""


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def _read(path: Path) -> dict:
    """A YAML as lm-eval merges it: what it includes (relative to its folder), then its own keys."""
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    include = config.pop("include", None)
    return {**(_read(path.parent / include) if include else {}), **config}


def _configs() -> dict[str, dict]:
    """task or group name -> its YAML (merged with its includes), for every task and group."""
    found = {}
    for path in sorted(CONFIGS.rglob("*.yaml")):
        config = _read(path)
        found[config.get("group") or config["task"]] = config
    return found


CONFIGS_BY_NAME = _configs()
GROUPS = {name: c["task"] for name, c in CONFIGS_BY_NAME.items() if "group" in c}
TASKS = {name: c for name, c in CONFIGS_BY_NAME.items() if "group" not in c}
CLASSES = {name: c["class"].rpartition(".")[2] for name, c in TASKS.items()}
# the contamination check: one task per published dataset, in an optional group beside wsc_group
CONTAMINATION = {t for t, c in CLASSES.items() if c == "ContaminationTask"}
# the schema tasks asked as questions: one per catalog dataset, in a group of their own
QUESTIONS = {t for t, c in CLASSES.items() if c == "QuestionTask"}
OPTIONAL_GROUPS = {"contamination_suite", "wsc_group_chat"}
SCORED = {"SchemaTask", "CategorizedSchemaTask"}  # the log-likelihood tasks of one dataset


def _is_pair_task(config: dict) -> bool:
    return config["class"].rpartition(".")[2] in ("ConsistencyTask", "AssociativityTask")


def _dataset(task: str) -> str | None:
    return (TASKS[task].get("metadata") or {}).get("dataset")


def _root(task: str) -> str | None:
    """The full or adversarial dataset a task's documents come from (None: WinoWhy)."""
    dataset = _dataset(task)
    if dataset is None:
        return None
    if _is_pair_task(TASKS[task]):
        return catalog.root(catalog.PAIR_SPECS[dataset].original)
    return catalog.root(dataset)


def _kind(task: str) -> str | None:
    dataset = _dataset(task)
    if dataset is None or _is_pair_task(TASKS[task]):
        return None
    return catalog.role_of(dataset).kind


# -- the roles themselves ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(catalog.SPECS))
def test_every_role_refers_to_datasets_that_exist(name):
    role = catalog.SPECS[name].role
    assert role.kind in catalog.ROLE_KINDS
    if role.kind in (FULL, catalog.ADVERSARIAL):
        assert role.of is None
        return
    assert role.of in catalog.SPECS, f"{name}: role of unknown dataset {role.of!r}"
    assert catalog.role_of(catalog.root(name)).kind in (FULL, catalog.ADVERSARIAL)
    if role.generated:
        assert role.change in transforms.TRANSFORMS
    if role.kind == CONTROL:
        assert role.change in audit.CHECKS  # the audit knows what to check
    if role.pairs is not None:
        assert role.kind in (PERTURBATION, CONTROL)
        pair = catalog.PAIR_SPECS[name]
        assert (pair.original, pair.transformed, pair.expected) == (role.of, (name,), role.pairs)
        assert pair.problem_level == role.problem_level
    else:
        assert role.problem_level  # a schema-level matching means nothing without pairs


def test_every_pair_dataset_pairs_catalog_datasets():
    for name, pair in catalog.PAIR_SPECS.items():
        assert pair.name == name
        assert {pair.original, *pair.transformed} <= set(catalog.SPECS)
        for transformed in pair.transformed:
            assert catalog.role_of(transformed).of == pair.original


def test_generated_dyads_have_their_base_as_origin():
    role = catalog.role_of(
        catalog.dyads_name("reid250", "by_key", "That SCHEMA is [true ~ false].")
    )
    assert (role.kind, role.of, role.change) == (FORMULATION, "reid250", "dyads")
    assert catalog.root(catalog.dyads_name("reid250x2", "by_key", "x SCHEMA [a ~ b]")) == "reid250"
    with pytest.raises(KeyError, match="unknown wsc_tasks dataset 'nope'"):
        catalog.role_of("nope")


def test_unknown_kinds_and_cycles_are_errors(monkeypatch):
    with pytest.raises(KeyError, match="unknown dataset role 'perturbed'"):
        catalog.datasets("perturbed")
    spec = catalog.SPECS["wsc266"]
    monkeypatch.setitem(
        catalog.SPECS, "wsc266", replace(spec, role=catalog.Role(SUBSET, "wsc266_associative"))
    )
    with pytest.raises(
        ValueError, match="cycle: wsc266_switched -> wsc266 -> wsc266_associative -> wsc266"
    ):
        catalog.root("wsc266_switched")


# -- what reads the roles --------------------------------------------------------------------------


def _in_order(found: tuple[str, ...], expected: tuple[str, ...]) -> bool:
    """``expected`` all in ``found``, in that order (a later catalog entry may add more)."""
    return tuple(n for n in found if n in expected) == expected


def test_report_perturbations_are_the_catalogs():
    assert perturbations.PERTURBATIONS == tuple(catalog.datasets(PERTURBATION, of="wsc266"))
    thesis = ("wsc266_switched", "wsc266_adjectival", "wsc266_unbalanced", "wsc266_inverted")
    # the rows of thesis Table 4.16, in its order
    assert _in_order(perturbations.PERTURBATIONS, thesis)
    schema_level = {n for n, s in catalog.SPECS.items() if not s.role.problem_level}
    assert perturbations.SCHEMA_TRANSFORMATIONS == schema_level
    assert {"wsc266_inverted", "reid250_inverted"} <= schema_level


def test_leaderboard_controls_are_the_catalogs():
    controls = catalog.datasets(CONTROL)
    generated = [n for n in controls if catalog.role_of(n).generated]
    hand_made = [n for n in controls if not catalog.role_of(n).generated]
    assert leaderboard.CONTROLS == (*generated, *hand_made)  # whole datasets' baselines first
    assert _in_order(
        leaderboard.CONTROLS,
        (
            "wsc273_nocands",
            "wsc273_partsent",
            "winogrande_nocands",
            "winogrande_partsent",
            "wsc266_associative_nocands",
            "wsc266_nonassociative_nocands",
        ),
    )


def test_audit_covers_every_control():
    assert set(audit.GENERATED) | set(audit.HAND_MADE) == set(catalog.datasets(CONTROL))
    assert _in_order(
        audit.HAND_MADE, ("wsc266_associative_nocands", "wsc266_nonassociative_nocands")
    )
    assert set(audit.HAND_MADE) <= set(catalog.PAIR_SPECS)  # matched with their originals
    for name, (source, kind) in audit.GENERATED.items():
        assert catalog.role_of(name) == catalog.Role(CONTROL, source, kind, generated=True)


# -- task YAMLs and groups -----------------------------------------------------------------------


def test_every_dataset_has_its_task_and_every_task_its_dataset():
    """The report and the leaderboard find a dataset's results under the task of its name."""
    for task, config in TASKS.items():
        dataset = _dataset(task)
        if task in CONTAMINATION:
            assert task == f"{dataset.removesuffix('_schemas')}_contamination"
            assert dataset in canonical.published()
        elif task in QUESTIONS:  # named for the log-likelihood task on its dataset
            [scored] = [t for t in TASKS if _dataset(t) == dataset and CLASSES[t] in SCORED]
            assert task == f"{scored}_chat"
        elif dataset is None:
            assert CLASSES[task] == "WinoWhyTask"
        elif _is_pair_task(config):
            assert dataset in catalog.PAIR_SPECS
            if CLASSES[task] == "ConsistencyTask":  # not the associativity task
                assert task == f"{dataset}_consistency"
        elif dataset.startswith(catalog.DYADS_PREFIX):
            catalog.role_of(dataset)
        else:
            assert task == dataset
    assert set(catalog.SPECS) <= set(TASKS)
    # every dataset a task scores by log-likelihood is asked as questions too, once
    scored = [_dataset(t) for t in TASKS if CLASSES[t] in SCORED]
    assert sorted(_dataset(t) for t in QUESTIONS) == sorted(scored)


def test_every_task_is_in_exactly_one_group():
    listed = [member for members in GROUPS.values() for member in members]
    assert sorted(listed) == sorted({*TASKS, *GROUPS} - {"wsc_group", *OPTIONAL_GROUPS})


def _implied_groups() -> dict[str, set[str]]:
    """Each group's members as the roles imply them."""

    def of_root(root: str) -> set[str]:
        return {t for t in TASKS if _root(t) == root and t not in CONTAMINATION | QUESTIONS}

    zeroshot = {
        t
        for t in TASKS
        if _kind(t) == FORMULATION
        and catalog.role_of(_dataset(t)).change == "zeroshot"
        and t not in QUESTIONS
    }
    wsc266 = of_root("wsc266")
    perturbations = {t for t in wsc266 if _kind(t) in (PERTURBATION, CONTROL, None)}
    suites = {
        "wsc266": "wsc266_suite",
        "winogrande_dev": "winogrande_suite",
        "reid250": "reid250_suite",
    }
    roots = {_root(t) for t in TASKS} - {None}
    return {
        "wsc266_perturbations": perturbations,
        "wsc266_suite": (wsc266 - perturbations) | {"wsc266_perturbations"},
        "winogrande_suite": of_root("winogrande_dev") - zeroshot,
        "reid250_suite": of_root("reid250"),
        "zeroshot_suite": zeroshot,
        "wsc_group": {
            *(suites[r] for r in roots if r in suites),
            *{t for r in roots - set(suites) for t in of_root(r)} - zeroshot,
            "zeroshot_suite",
            *(t for t in TASKS if _root(t) is None),  # WinoWhy
        },
        "contamination_suite": {
            f"{d.removesuffix('_schemas')}_contamination" for d in canonical.published()
        },  # fmt: skip
        "wsc_group_chat": QUESTIONS,
    }


def test_group_yamls_list_exactly_what_the_roles_imply():
    implied = _implied_groups()
    assert set(implied) == set(GROUPS)
    for group, members in GROUPS.items():
        assert len(members) == len(set(members)), group
        assert set(members) == implied[group], group
    assert implied["wsc266_perturbations"] >= set(perturbations.PERTURBATIONS)


def test_every_task_and_group_has_a_readme_row():
    text = "".join(p.read_text(encoding="utf-8") for p in CONFIGS.rglob("README.md"))
    assert [name for name in CONFIGS_BY_NAME if f"`{name}`" not in text] == []
