"""Issue 4 end to end: original/perturbation pairing, Winogrande switched, the associativity
controls, and every consistency task recomputed by hand from the underlying tasks' logged samples
(1 and 2 processes), plus scoring-method consistency recomputed from the per-method outcomes."""

from __future__ import annotations

import math

import lm_eval
import pytest
from conftest import assert_same_metrics, run_dp_eval

from wsc_tasks.data import catalog, transforms
from wsc_tasks.data.pairing import PairingError, pair_schemas
from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.metrics import associativity, ratios, registry
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.metrics.consistency import pair_outcome, schema_flags
from wsc_tasks.metrics.registry import Key, aggregation
from wsc_tasks.scoring import families

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

# consistency task -> (original task, transformed tasks, problem transformation?)
CONSISTENCY = {
    "wsc266_switched_consistency": ("wsc266", ["wsc266_switched"], True),
    "wsc266_adjectival_consistency": ("wsc266", ["wsc266_adjectival"], True),
    "wsc266_unbalanced_consistency": ("wsc266", ["wsc266_unbalanced"], True),
    "wsc266_inverted_consistency": ("wsc266", ["wsc266_inverted"], False),
    "wsc266_nocands_consistency": (
        "wsc266",
        ["wsc266_associative_nocands", "wsc266_nonassociative_nocands"],
        True,
    ),
    "winogrande_switched_consistency": ("winogrande_twins", ["winogrande_switched"], True),
}
SCORING = {"scoring": ["partial", "full", "smart"]}


# -- data: pairing and the Winogrande switched perturbation ---------------------------------------


@pytest.mark.parametrize(
    ("name", "pairs", "originals"),
    [
        ("wsc266_switched", 70, "switchable"),
        ("wsc266_adjectival", 87, "symmetrical"),
        ("wsc266_unbalanced", 133, "all"),
        ("wsc266_inverted", 133, "all"),
        # the 3 schemas the catalog excludes from the hand-made no-cands files have no pair
        ("wsc266_nocands", 130, "all but 3"),
        ("wsc266_associative_nocands", 24, "associative but 1"),
        ("wsc266_nonassociative_nocands", 106, "non-associative but 2"),
        ("reid250_inverted", 125, "all of Reid250"),
    ],
)
def test_original_subsets_found_through_the_numbers_have_the_thesis_sizes(
    data_dir, name, pairs, originals
):
    found = catalog.load_pairs(name)
    assert len(found) == pairs
    assert len({original.uid for original, _ in found}) == pairs
    for original, transformed in found:
        assert original.number == transformed.number  # the same WSC273 schema
        if catalog.PAIR_SPECS[name].problem_level:
            assert [p.number for p in original.problems] == [p.number for p in transformed.problems]


def test_the_associative_subset_is_found_through_the_numbers(data_dir, caplog):
    catalog._pairs_cached.cache_clear()
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        pairs = catalog.load_pairs("wsc266_nocands")
    subsets = [associativity.subset(o) for o, _ in pairs]
    assert subsets.count("associative") == 24 and subsets.count("nonassociative") == 106
    # the excluded schemas' originals complete the thesis's subsets: 25 and 108
    unpaired = catalog.excluded_pairs("wsc266_nocands")
    assert [(o.uid, t.uid) for o, t, _ in unpaired] == [
        ("w96", "w24"),
        ("w45", "w39"),
        ("w97", "w73"),
    ]
    subsets += [associativity.subset(o) for o, _, _ in unpaired]
    assert subsets.count("associative") == 25 and subsets.count("nonassociative") == 108
    assert (
        "pairs wsc266_nocands: 3 wsc266 schema(s) have no pair, their transformed schema being "
        "excluded in the catalog: w96 (w24), w45 (w39), w97 (w73)" in caplog.text
    )


def _schema(uid: str, numbers: list[int | None], text: str = "A _ B") -> Schema:
    before, after = text.split("_")
    problems = tuple(
        Problem(f"{uid}{i}", (before, after), (("x",), ("y",)), i % 2, n, f"f.txt:{i}")
        for i, n in enumerate(numbers)
    )
    return Schema(uid=uid, problems=problems)


def test_pairing_errors_name_the_row():
    originals = [_schema("w1", [1, 2]), _schema("w2", [3, 4])]
    assert [(o.uid, t.uid) for o, t in pair_schemas(originals, [_schema("t", [3, 4])], True)] == [
        ("w2", "t")
    ]
    with pytest.raises(PairingError, match="f.txt:0.*exactly one original"):
        pair_schemas(originals, [_schema("t", [2, 3])], True)  # straddles two schemas
    with pytest.raises(PairingError, match="exactly one original"):
        pair_schemas(originals, [_schema("t", [9, 10])], True)  # unknown numbers
    with pytest.raises(PairingError, match="problem order"):
        pair_schemas(originals, [_schema("t", [4, 3])], True)
    assert pair_schemas(originals, [_schema("t", [4, 3])], False)  # inversion: schema level
    with pytest.raises(PairingError, match="used twice"):
        pair_schemas(originals, [_schema("t", [1, 2]), _schema("u", [1, 2])], True)


def test_switching_exchanges_mentions_and_options_and_flips_the_answer():
    problem = Problem(
        "q-1",
        ("Sarah was a better surgeon than Maria so ", " got the harder cases."),
        (("Sarah",), ("Maria",)),
        0,
    )
    switched = transforms.switch_candidates(problem)
    assert switched.segments[0] == "Maria was a better surgeon than Sarah so "
    assert switched.options == (("Maria",), ("Sarah",)) and switched.label == 0
    assert switched.options[switched.label] == ("Maria",)  # the answer is now the other person
    twice = Problem("q", ("Ann met Bob and Ann said ", " was late."), (("Ann",), ("Bob",)), 0)
    assert transforms.switch_candidates(twice) == "a candidate occurs more than once"
    inside = Problem("q", ("The Annex hid Bob; ", " was late."), (("Ann",), ("Bob",)), 0)
    assert transforms.switch_candidates(inside) == "a candidate does not occur as a whole word"


def test_winogrande_switched_keeps_and_reports(data_dir, caplog):
    caplog.set_level("INFO")
    twins = catalog.load("winogrande_twins")
    kept, dropped = transforms.transform_schemas(twins, transforms.switch_candidates)
    assert len(twins) == 284 and len(kept) == 273
    assert dict(dropped) == {
        "a candidate does not occur as a whole word": 9,
        "a candidate occurs more than once": 2,
    }
    assert [s.uid for s in catalog.load("winogrande_switched")] == [s.uid for s in kept]


# -- pure aggregations ----------------------------------------------------------------------------


def test_three_problem_schemas_are_compared_group_by_group():
    before = outcome([1, 1, 0], [[0, 1], [1, 2]])
    after = outcome([1, 1, 1], [[0, 1], [1, 2]])
    items = [pair_outcome(before, after)]
    assert schema_flags(items[0]) == [([1, 1], [1, 1]), ([1, 0], [1, 1])]
    assert aggregation("consistency")(items) == pytest.approx(2 / 3)  # problem 254 once
    assert aggregation("schema_consistency_strict")(items) == 0.5
    assert aggregation("preserved_schema_acc_rev")(items) == 0.5


def _float(value) -> float:
    assert value.shape == ()  # two numbers in, one out
    return float(value)


def test_associativity_formulas_reproduce_thesis_tables_4_27_and_4_28():
    # GPT-2, problem accuracy, non-associative subset: r = 0.718, r_B = 0.505 (Table 4.26)
    assert _float(ratios.relative_loss(0.718, 0.505)) == pytest.approx(0.297, abs=5e-4)
    assert _float(ratios.relative_gain(0.718, 0.505)) == pytest.approx(0.430, abs=5e-4)
    # T5, schema accuracy, associative: 0.880 and 0.520 -> 0.409 and 0.750
    assert _float(ratios.relative_loss(0.88, 0.52)) == pytest.approx(0.409, abs=5e-4)
    assert _float(ratios.relative_gain(0.88, 0.52)) == pytest.approx(0.750, abs=5e-4)
    # Table 4.28, GPT-2 a on WSC266: r = 0.744, r - r_B = 0.192 -> gain 0.429
    assert _float(ratios.relative_gain(0.744, 0.744 - 0.192)) == pytest.approx(0.429, abs=5e-4)
    assert math.isnan(_float(ratios.relative_loss(0.0, 0.0)))
    assert math.isnan(_float(ratios.relative_gain(1.0, 1.0)))


# -- end to end: recomputed by hand from the logged samples ----------------------------------------


def _key(problems: list[dict]) -> tuple:
    return tuple(p["number"] for p in problems)


def _per_problem(samples: list[dict]) -> dict:
    """number -> solved (numbered data), or schema uid -> solved flags (Winogrande)."""
    out: dict = {}
    for sample in samples:
        flags = sample["acc"]["correct"]
        problems = sample["doc"]["problems"]
        if all(p["number"] >= 0 for p in problems):
            out.update(zip(_key(problems), flags, strict=True))
        else:
            out[sample["doc"]["schema_uid"]] = flags
    return out


def _schemas_by_number(samples: list[dict]) -> dict:
    return {n: s["acc"]["correct"] for s in samples for n in _key(s["doc"]["problems"])}


def _hand_pairs(samples: dict, original: str, transformed: list[str], problem_level: bool):
    """(before flags, after flags, tag) for every transformed schema, from the two tasks alone."""
    per_problem, per_schema = _per_problem(samples[original]), _schemas_by_number(samples[original])
    pairs = []
    for task in transformed:
        for sample in samples[task]:
            problems, after = sample["doc"]["problems"], sample["acc"]["correct"]
            numbered = all(p["number"] >= 0 for p in problems)
            if not numbered:
                before = per_problem[sample["doc"]["schema_uid"]]
            elif problem_level:
                before = [per_problem[n] for n in _key(problems)]
            else:
                before = per_schema[problems[0]["number"]]
            pairs.append((before, after, task))
    return pairs


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


# every consistency record of the registry, with the thesis's equation over lists (its oracle):
# a new record is recomputed here without an edit
RECORDS = registry.select(value=registry.PAIR, kind="consistency")


def _by_hand(pairs) -> dict[str, float]:
    problems = [(b, a) for before, after, _ in pairs for b, a in zip(before, after, strict=True)]
    schemas = [(tuple(b), tuple(a)) for b, a, _ in pairs]
    found = {m.name: m.oracle(problems if m.level == "problem" else schemas) for m in RECORDS}
    return {
        **found,
        "acc_original": _mean(x for b, _, _ in pairs for x in b),
        "acc_perturbed": _mean(x for _, a, _ in pairs for x in a),
        "schema_acc_original": _mean(all(b) for b, _, _ in pairs),
        "schema_acc_perturbed": _mean(all(a) for _, a, _ in pairs),
        "n_pairs": len(pairs),
    }


def _close(reported: float | str | None, expected: float) -> bool:
    """``reported`` equals ``expected``; a metric undefined on the documents (NaN by hand) is
    lm-eval's ``N/A`` in the results, never NaN."""
    if isinstance(expected, float) and math.isnan(expected):
        return reported == "N/A"
    return reported == pytest.approx(expected, abs=1e-12)


def _check_consistency(results: dict, samples: dict, tasks: list[str]) -> int:
    checked = 0
    for task in tasks:
        original, transformed, problem_level = CONSISTENCY[task]
        expected = _by_hand(_hand_pairs(samples, original, transformed, problem_level))
        expected["acc_diff"] = expected["acc_perturbed"] - expected["acc_original"]
        expected["schema_acc_diff"] = (
            expected["schema_acc_perturbed"] - expected["schema_acc_original"]
        )
        reported = results[task]
        problem_only = {m.name for m in RECORDS if m.problem_matched}  # Table 3.6
        for metric, value in expected.items():
            if not problem_level and metric in problem_only:
                assert f"{metric},none" not in reported, (task, metric)  # Table 3.6
                continue
            assert _close(reported.get(f"{metric},none"), value), (task, metric)
            checked += 1
    return checked


def _check_associativity(results: dict, samples: dict) -> None:
    pairs = _hand_pairs(
        samples, "wsc266", ["wsc266_associative_nocands", "wsc266_nonassociative_nocands"], True
    )
    reported = results["wsc266_associativity"]
    rates = {}
    scopes = [
        ("associative", "wsc266_associative_nocands"),
        ("nonassociative", "wsc266_nonassociative_nocands"),
        ("wsc266", None),
    ]
    for scope, tag in scopes:
        chosen = [p for p in pairs if tag is None or p[2] == tag]
        for metric, solved in [("acc", lambda f: f), ("schema_acc", lambda f: [all(f)])]:
            r = _mean(x for b, _, _ in chosen for x in solved(b))
            r_b = _mean(x for _, a, _ in chosen for x in solved(a))
            rates[metric, scope] = (r, r_b)
            expected = {"original": r, "nocands": r_b, "adjusted": r - r_b,
                        "rel_loss": (r - r_b) / r if r else float("nan"),
                        "rel_gain": (r - r_b) / (1 - r_b) if r_b < 1 else float("nan")}  # fmt: skip
            for quantity, value in expected.items():
                assert _close(reported.get(f"{metric}_{scope}_{quantity},none"), value)
    for metric in ("acc", "schema_acc"):
        for side, name in ((0, "original"), (1, "nocands")):
            gap = rates[metric, "associative"][side] - rates[metric, "nonassociative"][side]
            assert _close(reported.get(f"{metric}_assoc_gap_{name},none"), gap)


def _check_method_consistency(results: dict, samples: dict, task: str) -> None:
    """Every consistency record between the methods of every causal method pair."""
    for first, second in families.FAMILIES["causal"].method_pairs:
        pairs = [
            (s[f"acc_{first}"]["correct"], s[f"acc_{second}"]["correct"], None)
            for s in samples[task]
        ]
        expected = _by_hand(pairs)
        for metric in RECORDS:
            name = Key(metric.name, pair=(first, second)).name
            assert _close(results[task].get(f"{name},none"), expected[metric.name]), name


UNDERLYING = sorted({t for o, ts, _ in CONSISTENCY.values() for t in [o, *ts]})


@pytest.fixture(scope="module")
def run(tiny_gpt2_dir, task_manager):
    manager = task_manager(pretrained=str(tiny_gpt2_dir), **SCORING, **ALL)
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_dir}",
        tasks=[*CONSISTENCY, "wsc266_associativity", *UNDERLYING],
        task_manager=manager,
        device="cpu",
        batch_size=64,
        log_samples=True,
    )


@pytest.mark.slow
def test_consistency_tasks_equal_recomputation_from_the_underlying_samples(run):
    assert _check_consistency(run["results"], run["samples"], list(CONSISTENCY)) > 80
    _check_associativity(run["results"], run["samples"])
    assert run["results"]["wsc266_switched_consistency"]["n_pairs,none"] == 70
    assert run["results"]["winogrande_switched_consistency"]["n_pairs,none"] == 273
    assert run["results"]["wsc266_nocands_consistency"]["n_pairs,none"] == 130
    assert run["results"]["wsc266_associativity"]["n_pairs,none"] == 130


@pytest.mark.slow
@pytest.mark.parametrize("task", ["wsc266", "wsc266_inverted", "winogrande_twins"])
def test_scoring_method_consistency_equals_recomputation(run, task):
    _check_method_consistency(run["results"], run["samples"], task)


@pytest.mark.slow
def test_consistency_tasks_in_two_processes(tiny_gpt2_dir, tmp_path):
    tasks = [
        "wsc266_switched_consistency",
        "wsc266_inverted_consistency",
        "wsc266_nocands_consistency",
    ]
    underlying = sorted({t for k in tasks for t in [CONSISTENCY[k][0], *CONSISTENCY[k][1]]})
    names = ",".join([*tasks, "wsc266_associativity", *underlying])
    outputs = {}
    for processes in (1, 2):
        out = tmp_path / f"p{processes}.json"
        outputs[processes] = run_dp_eval(
            processes, tiny_gpt2_dir, out, names, "1", metadata={**SCORING, **ALL}
        )
        result = outputs[processes]
        assert result["world_size"] == processes
        assert _check_consistency(result["results"], result["samples"], tasks) > 30
        _check_associativity(result["results"], result["samples"])
    for task in [*tasks, "wsc266_associativity"]:
        assert_same_metrics(outputs[1]["results"][task], outputs[2]["results"][task], task)


@pytest.mark.slow
def test_masked_lm_consistency_and_method_pair(tiny_roberta_dir, task_manager):
    from wsc_tasks.models.mlm import MaskedLM

    lm = MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=16)
    scoring = {"scoring": ["statement_mean", "multi_mask_mean"]}
    manager = task_manager(pretrained=str(tiny_roberta_dir), **scoring, **ALL)
    tasks = ["wsc266", "wsc266_switched", "wsc266_switched_consistency"]
    out = lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=manager, log_samples=True)
    assert _check_consistency(out["results"], out["samples"], tasks[-1:]) > 10
    first, second = "multi_mask_mean", "statement_mean"
    pairs = [
        (s[f"acc_{first}"]["correct"], s[f"acc_{second}"]["correct"], None)
        for s in out["samples"]["wsc266"]
    ]
    expected = _by_hand(pairs)
    for metric in RECORDS:
        name = Key(metric.name, pair=(first, second)).name
        assert _close(out["results"]["wsc266"].get(f"{name},none"), expected[metric.name]), name
