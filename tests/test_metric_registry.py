"""The metric registry: every metric a task registers has one record, and every record is used."""

from __future__ import annotations

import json

import numpy as np
import oracles
import pytest

from wsc_tasks.metrics import accuracy, consistency, ratios, registry
from wsc_tasks.tasks import stderr

# one task of every task class, with a tokenizer so the token metrics and split counts are on
TASKS = [
    "wsc266",  # SchemaTask: base, per-method, method-pair, token metrics, split counts
    "wsc273_schemas",  # CategorizedSchemaTask
    "wsc266_switched_consistency",  # a problem transformation
    "wsc266_inverted_consistency",  # a schema transformation
    "wsc266_associativity",
    "winowhy",
    "wsc273_contamination",  # ContaminationTask
    "wsc266_chat",  # QuestionTask
]


@pytest.fixture(scope="module")
def task_aggregations(tiny_gpt2_dir, data_dir, task_manager) -> dict[str, dict]:
    """Every metric each task gives a per-document value for."""
    tasks = task_manager(tokenizer=str(tiny_gpt2_dir), metrics="all").load(TASKS)["tasks"]
    return {name: tasks[name].all_aggregations() for name in TASKS}


def test_what_lm_eval_aggregates_is_the_shown_metrics_and_their_errors(
    tiny_gpt2_dir, data_dir, task_manager
):
    """No table row that is no figure of the model: no count, no count of the metrics not shown
    (their values ride with the first standard error's, ``registry.lm_eval_values``)."""
    task = task_manager(tokenizer=str(tiny_gpt2_dir)).load(["wsc266"])["tasks"]["wsc266"]
    given = task.aggregation()
    shown = task.shown()
    assert set(shown) == registry.headline(registry.TaskKind.SCHEMA) == {"acc", "schema_acc"}
    errors = {registry.stderr_name(n) for n, f in shown.items() if stderr.has_stderr(f)}
    assert errors == {"acc_stderr", "schema_acc_stderr"}
    assert set(given) == set(shown) | errors
    directions = task.higher_is_better()
    assert all(directions[name] is None for name in errors)


def test_every_task_kind_shows_a_figure_with_a_standard_error_and_no_count():
    """The first standard error carries the other metrics' per-document values."""
    for kind in registry.TaskKind:
        shown = registry.headline(kind)
        assert any(registry.METRICS[name].stderr for name in shown), kind
        assert not [n for n in shown if registry.METRICS[n].kind == "count"], kind


def test_a_documents_values_reach_lm_eval_and_come_back_from_its_samples():
    values = {"acc": {"correct": [1, 0], "groups": [[0, 1]]}, "n_problems": 2, "acc_partial": 1}
    handed = registry.lm_eval_values(values, ["acc"], ["acc"])
    assert handed["acc"] == values["acc"]
    assert handed["acc_stderr"] == {
        registry.CARRIED: values["acc"],
        registry.OTHERS: [[["n_problems"], 2], [["acc_partial"], 1]],
    }
    assert registry.carried(handed["acc_stderr"]) == values["acc"]
    row = {"metrics": list(handed), **handed}
    assert registry.logged(row) == values
    assert registry.logged(json.loads(json.dumps(row))) == values  # as lm-eval writes it
    shared = {"correct": [1, 1], "groups": [[0, 1]]}  # one outcome under several names: once
    many = {"acc": shared, "acc_lm": shared, "acc_equal_len": shared, "n_problems": 2}
    carrying = registry.lm_eval_values(many, ["acc"], ["acc"])["acc_stderr"]
    assert carrying[registry.OTHERS] == [[["acc_lm", "acc_equal_len"], shared], [["n_problems"], 2]]
    assert registry.logged({"metrics": ["acc", "acc_stderr"], "acc": shared,
                            "acc_stderr": carrying}) == many  # fmt: skip
    before = {"metrics": ["acc", "acc_stderr"], "acc": values["acc"],
              "acc_stderr": {registry.CARRIED: values["acc"],
                             registry.OTHERS: {"n_problems": 2, "acc_partial": 1}}}  # fmt: skip
    assert registry.logged(before) == values  # samples written before the grouped form
    assert registry.lm_eval_values(values, list(values), ["acc"])["acc_stderr"] == values["acc"]
    old = {"metrics": ["acc", registry.MORE_METRICS], "acc": values["acc"],
           registry.MORE_METRICS: {"n_problems": 2, "acc_partial": 1}}  # fmt: skip
    assert registry.logged(old) == values  # samples written before
    with pytest.raises(ValueError, match="no shown metric has a standard error"):
        registry.lm_eval_values(values, ["n_problems"], [])


def test_every_registered_metric_has_exactly_one_record(task_aggregations):
    for task, functions in task_aggregations.items():
        for name, function in functions.items():
            assert isinstance(function, registry.Aggregation), (task, name)
            record = function.metric
            assert registry.METRICS[record.name] is record, (task, name)
            assert [m for m in registry.REGISTRY if m is record] == [record]
            assert function.key.name == name, (task, name)  # named by its key
            assert registry.Key.parse(name) == function.key, (task, name)  # and read back
            if record.form is not None:  # the samples reader finds its form by name
                assert name == record.name or name.startswith(record.name + "_"), (task, name)


def test_every_record_is_used_by_some_task(task_aggregations):
    used = {f.metric.name for functions in task_aggregations.values() for f in functions.values()}
    assert used == set(registry.METRICS)


def test_schema_transformations_get_only_schema_matched_metrics(task_aggregations):
    inverted = task_aggregations["wsc266_inverted_consistency"]
    switched = task_aggregations["wsc266_switched_consistency"]
    assert "consistency" in switched and "schema_consistency_strict" in switched
    assert "consistency" not in inverted and "schema_consistency_strict" not in inverted
    assert "schema_consistency" in inverted


def test_record_names_are_unique_and_fields_valid():
    assert len(registry.METRICS) == len(registry.REGISTRY)
    for m in registry.REGISTRY:
        assert m.level in {"problem", "schema", "pair", "reason", "question", "shard",
                           "document"}, m.name  # fmt: skip
        assert m.value in {
            registry.OUTCOME,
            registry.PAIR,
            registry.TAGGED_PAIR,
            registry.REASONS,
            registry.SPLITS,
            registry.SHARDS,
            registry.ANSWERS,
        }, m.name
        assert m.aggregate is not None or m.value == registry.REASONS, m.name
        assert m.symbol, m.name


def test_pure_aggregates_are_known_by_identity():
    assert registry.record_of(ratios.PROBLEM_ACCURACY) is registry.METRICS["acc"]
    assert registry.form(registry.bind("schema_acc")) is ratios.SCHEMA_ACCURACY
    assert registry.record_of(len) is None  # len is nobody's: only a bound n_pairs is ours
    assert registry.record_of(registry.bind("n_pairs")) is registry.METRICS["n_pairs"]
    assert registry.record_of(np.mean) is None


def test_stderr_classification_reads_the_records():
    assert stderr.has_stderr(registry.bind("consistency"))
    for count in ("n_schemas", "n_questions"):
        assert not stderr.has_stderr(registry.bind(count)), count
    assert not stderr.has_stderr(registry.bind("n_reasons", lambda items: len(items)))  # a count
    assert not stderr.has_stderr(np.mean)


def test_a_consistency_record_is_its_oracle_and_its_form():
    rng = np.random.default_rng(5)
    items = [
        consistency.pair_outcome(
            accuracy.outcome(rng.random(2) < 0.6, [[0, 1]]),
            accuracy.outcome(rng.random(2) < 0.5, [[0, 1]]),
        )
        for _ in range(37)
    ]
    for record in registry.select(value=registry.PAIR, kind="consistency"):
        expected = oracles.consistency_metric(record.name, items)
        assert registry.bind(record.name)(items) == expected, record.name
        assert record.form(items) == pytest.approx(expected, abs=1e-12), record.name


def test_higher_is_better_comes_from_the_records():
    chosen = {
        "acc_full": registry.bind("acc"),
        "half_solved": registry.bind("half_solved"),
        "best_threshold": registry.bind("best_threshold", lambda items: 0.0),
        "n_problems": registry.bind("n_problems"),
        "acc_diff": registry.bind("acc_diff"),
        "acc_assoc_gap_original": registry.bind("acc_assoc_gap_original"),
    }
    assert registry.higher_is_better(chosen) == {
        "acc_full": True,
        "half_solved": False,
        "best_threshold": None,  # neither: lm-eval prints no arrow for None
        "n_problems": None,
        "acc_diff": None,
        "acc_assoc_gap_original": None,
    }


def test_counts_and_differences_get_no_arrow_in_lm_evals_table():
    """lm-eval's table prints ↑/↓ from ``higher_is_better`` and nothing for None."""
    from lm_eval.utils import make_table

    counts = [m.name for m in registry.REGISTRY if m.kind == "count"]
    assert {"n_problems", "n_schemas", "n_pairs", "n_questions"} <= set(counts)
    assert all(registry.METRICS[name].higher_is_better is None for name in counts)
    result = {
        "results": {"t": {"acc,none": 0.5, "n_problems,none": 10, "acc_diff,none": -0.1}},
        "versions": {"t": 1.0},
        "higher_is_better": {
            "t": registry.higher_is_better(
                {name: registry.bind(name) for name in ("acc", "n_problems", "acc_diff")}
            )
        },
    }
    rows = {
        line.split("|")[5].strip(): line.split("|")[6]
        for line in make_table(result).splitlines()[2:]
    }
    assert rows == {"acc": "↑  ", "n_problems": "   ", "acc_diff": "   "}


def test_headline_flags_are_the_metrics_each_task_kind_prints():
    kinds = registry.TaskKind
    assert registry.headline(kinds.SCHEMA) == {"acc", "schema_acc"}
    assert registry.headline(kinds.CONSISTENCY) == {
        "acc_original", "acc_perturbed", "acc_diff", "schema_acc_diff", "consistency",
        "schema_consistency",
    }  # fmt: skip
    assert registry.headline(kinds.ASSOCIATIVITY) == {
        f"{m}_{s}_adjusted"
        for m in ("acc", "schema_acc")
        for s in ("wsc266", "associative", "nonassociative")
    }
    assert registry.headline(kinds.QUESTION) == {
        "acc", "schema_acc", "unanswered", "first_option", "order_consistency",
    }  # fmt: skip
    assert registry.headline(kinds.WINOWHY) == {
        "acc_best_threshold", "majority_baseline", "roc_auc", "question_group_acc",
    }  # fmt: skip


@pytest.mark.parametrize(
    "name, key",
    [
        ("acc", registry.Key("acc")),
        ("acc_smart_mean", registry.Key("acc", method="smart_mean")),
        ("acc_equal_len", registry.Key("acc", subset="equal_len")),
        ("share_blank_at_end", registry.Key("share", subset="blank_at_end")),
        ("acc_cat_spatial", registry.Key("acc", category="spatial")),
        ("n_cat_single", registry.Key("n_problems", category="single")),
        ("schema_consistency_weak_full_to_partial",
         registry.Key("schema_consistency_weak", pair=("full", "partial"))),
        ("schema_consistency_partial_to_smart",
         registry.Key("schema_consistency", pair=("partial", "smart"))),
        ("acc_wsc266_rel_gain", registry.Key("acc_wsc266_rel_gain")),
        ("roc_auc_spatial", registry.Key("roc_auc", category="spatial")),
        ("roc_auc_per_byte", registry.Key("roc_auc", score="per_byte")),
        ("acc_best_threshold_mean", registry.Key("acc_best_threshold", score="mean")),
        ("n_reasons_others", registry.Key("n_reasons", category="others")),
    ],
)  # fmt: skip
def test_a_key_is_written_and_read_one_way(name, key):
    assert key.name == name
    assert registry.Key.parse(name) == key


def test_names_that_are_not_ours_have_no_key():
    for name in ("word_perplexity", "n_cat", "schema_consistency_full", "roc_auc_", "accuracy"):
        assert registry.Key.parse(name) is None, name
    assert registry.reported(
        {"acc,none": 0.5, "acc_stderr,none": 0.1, "alias": "x", "bleu,none": 3.0, "acc,strict": 0.4}
    ) == {registry.Key("acc"): 0.5}
    with pytest.raises(ValueError, match="takes one of"):
        registry.Key("schema_acc", category="spatial")
    with pytest.raises(ValueError, match="takes one of"):
        registry.Key("acc", method="smart", subset="equal_len")
    with pytest.raises(KeyError, match="no metric record"):
        registry.Key("accuracy")


def test_task_kind_is_read_from_the_metric_names():
    def kind(*names: str) -> registry.TaskKind | None:
        return registry.task_kind(registry.parse_all(names).values())

    assert kind("acc", "acc_smart", "consistency_full_to_partial") == registry.TaskKind.SCHEMA
    assert kind("schema_consistency", "acc_diff") == registry.TaskKind.CONSISTENCY
    assert kind("acc_wsc266_adjusted", "n_pairs") == registry.TaskKind.ASSOCIATIVITY
    assert kind("roc_auc", "n_questions") == registry.TaskKind.WINOWHY
    assert kind("acc", "schema_acc", "unanswered", "n_asked") == registry.TaskKind.QUESTION
    assert kind("word_perplexity") is None
    names = ["acc_full", "schema_acc_full", "acc_equal_len", "acc_cat_single", "acc_partial",
             "schema_acc_partial", "acc_smart"]  # fmt: skip
    keys = registry.parse_all(names).values()
    assert registry.methods(keys) == ["full", "partial"]


def test_relative_change_is_the_oracles_elementwise():
    rng = np.random.default_rng(11)
    r, r_b = rng.choice([0.0, 0.25, 0.5, 1.0], 200), rng.choice([0.0, 0.5, 0.75, 1.0], 200)
    for function, oracle in (
        (ratios.relative_loss, oracles.relative_loss),
        (ratios.relative_gain, oracles.relative_gain),
    ):
        expected = np.array([oracle(x, y) for x, y in zip(r, r_b, strict=True)])
        assert np.array_equal(function(r, r_b), expected, equal_nan=True)
