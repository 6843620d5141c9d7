"""End to end inside lm-eval with a tiny random GPT-2: registry, exactness against lm-eval's own
``winogrande``, metrics recomputed from logged samples, group rows, and multi-process runs."""

from __future__ import annotations

from pathlib import Path

import lm_eval
import pytest
import yaml
from conftest import assert_same_metrics, run_dp_eval
from lm_eval.tasks import TaskManager

from wsc_tasks.data import catalog
from wsc_tasks.paths import include_path

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

pytestmark = pytest.mark.slow

TASKS = sorted(catalog.SPECS)
GROUPS = [
    "wsc_group",
    "wsc266_suite",
    "wsc266_perturbations",
    "winogrande_suite",
    "reid250_suite",
    "zeroshot_suite",
]
BUILTIN_WINOGRANDE = Path(lm_eval.__file__).parent / "tasks" / "winogrande" / "default.yaml"


@pytest.fixture(scope="module")
def builtin_dir(tmp_path_factory, data_dir) -> Path:
    """lm-eval's own winogrande task, unchanged but for reading the same local dev file."""
    folder = tmp_path_factory.mktemp("builtin")
    config = {
        "include": str(BUILTIN_WINOGRANDE),
        "task": "builtin_winogrande_local",
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"validation": str(data_dir / catalog.WINOGRANDE_DEV)}},
        "training_split": None,
    }
    (folder / "builtin_winogrande_local.yaml").write_text(yaml.safe_dump(config))
    return folder


@pytest.fixture(scope="module")
def run(tiny_gpt2_dir, builtin_dir):
    # Partial scoring only: the structure under test is the same for every method, and
    # tests/test_scoring.py checks the methods themselves. Not the task_manager fixture: lm-eval's
    # own winogrande (from builtin_dir) runs beside ours.
    manager = TaskManager(
        include_path=[str(include_path()), str(builtin_dir)],
        metadata={
            "pretrained": str(tiny_gpt2_dir),
            "scoring": "partial",
            "headline": "partial",
            **ALL,
        },  # fmt: skip
    )
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_dir}",
        tasks=["wsc_group", "builtin_winogrande_local"],
        task_manager=manager,
        device="cpu",
        batch_size=64,
        log_samples=True,
    )


def test_every_task_and_group_is_registered_without_shadowing():
    manager = TaskManager(include_path=str(include_path()))  # with lm-eval's tasks, unshadowed
    names = set(manager.all_tasks)
    assert set(TASKS + GROUPS) <= names
    for builtin in ("wsc273", "winogrande", "wsc"):
        assert builtin in names
        assert "lm_eval/tasks" in str(manager.task_index[builtin].yaml_path)


def _per_problem(out: dict) -> tuple[dict, dict]:
    """Each Winogrande problem's two log-likelihoods: (this package's, lm-eval's)."""
    theirs = {
        s["doc"]["qID"]: [r[0][0] for r in s["resps"]]
        for s in out["samples"]["builtin_winogrande_local"]
    }
    ours = {}
    for sample in out["samples"]["winogrande_dev"]:
        resps = iter(sample["resps"])
        for problem in sample["doc"]["problems"]:
            ours[problem["uid"]] = [next(resps)[0][0], next(resps)[0][0]]
    return ours, theirs


def test_winogrande_dev_is_builtin_winogrande_beside_wsc_group(run):
    """In one run with every task of ``wsc_group``, this package's requests go through the
    shared-prefix route, lm-eval's own through its padded batches: the same log-likelihoods to
    floating-point rounding, the same decisions and accuracy."""
    ours, theirs = _per_problem(run)
    assert len(ours) == len(theirs) == 1267
    for uid, pair in theirs.items():
        assert ours[uid] == pytest.approx(pair, abs=1e-4, rel=0), uid
        assert (ours[uid][0] > ours[uid][1]) == (pair[0] > pair[1]), uid
    ours_acc = run["results"]["winogrande_dev"]["acc,none"]
    assert ours_acc == run["results"]["builtin_winogrande_local"]["acc,none"]
    assert run["results"]["winogrande_dev"]["acc_partial,none"] == ours_acc


def test_winogrande_dev_is_builtin_winogrande_exactly_through_lm_evals_loop(
    tiny_gpt2_dir, builtin_dir, monkeypatch
):
    """With prefix sharing off, this package's requests go through lm-eval's own loop: on the
    same requests, the same floats, not merely close."""
    monkeypatch.setenv("WSC_TASKS_PREFIX_SHARING", "0")
    manager = TaskManager(
        include_path=[str(include_path()), str(builtin_dir)], include_defaults=False,
        metadata={"pretrained": str(tiny_gpt2_dir), "scoring": ["partial"], **ALL},
    )  # fmt: skip
    found = {}
    for task in ("winogrande_dev", "builtin_winogrande_local"):  # each its own requests alone
        found[task] = lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={tiny_gpt2_dir}", tasks=[task],
            task_manager=manager, device="cpu", batch_size=64, log_samples=True,
        )  # fmt: skip
    merged = {"samples": {**found["winogrande_dev"]["samples"],
                          **found["builtin_winogrande_local"]["samples"]}}  # fmt: skip
    ours, theirs = _per_problem(merged)
    assert len(ours) == len(theirs) == 1267
    assert ours == theirs


def test_winogrande_dev_prints_lm_evals_winogrande_acc_by_default(tiny_gpt2_dir, task_manager):
    """With every causal method (the model's tokenizer known), ``acc`` of ``winogrande_dev`` is
    still partial scoring, which the test above finds equal to lm-eval's own ``winogrande``
    ``acc``: the same name never means two numbers. ``--metadata`` can still choose another."""
    from wsc_tasks.scoring import families

    manager = task_manager(pretrained=str(tiny_gpt2_dir))
    [task] = manager.load(["winogrande_dev"])["tasks"].values()
    assert task.family == "causal" and task.methods[0].name == "partial"
    assert len(task.methods) == len(families.FAMILIES["causal"].methods)
    chosen = {"pretrained": str(tiny_gpt2_dir), "headline": "smart"}
    manager = task_manager(**chosen)
    [task] = manager.load(["winogrande_dev"])["tasks"].values()
    assert task.methods[0].name == "smart"


def _recompute(samples):
    """acc and schema_acc from the logged log-likelihoods, independently of
    wsc_tasks.metrics.accuracy."""
    right = total = solved = groups = 0
    for sample in samples:
        lls = iter(r[0][0] for r in sample["resps"])
        correct = []
        for problem in sample["doc"]["problems"]:
            first, second = next(lls), next(lls)
            correct.append((0 if first >= second else 1) == problem["label"])
        right, total = right + sum(correct), total + len(correct)
        for group in sample["doc"]["groups"]:
            groups += 1
            solved += all(correct[i] for i in group)
    return right / total, solved / groups, total, groups


@pytest.mark.parametrize("task", TASKS)
def test_reported_metrics_equal_recomputation_from_samples(run, task):
    result = run["results"][task]
    acc, schema_acc, problems, groups = _recompute(run["samples"][task])
    assert result["acc,none"] == pytest.approx(acc, abs=1e-12)
    assert result["schema_acc,none"] == pytest.approx(schema_acc, abs=1e-12)
    assert (result["n_problems,none"], result["n_schemas,none"]) == (problems, groups)
    a, big_a, half = result["acc,none"], result["schema_acc,none"], result["half_solved,none"]
    if problems == 2 * groups:  # eq. 3.80 holds when every problem is in one two-problem schema
        assert a == pytest.approx(big_a + half / 2, abs=1e-12)


def test_group_rows_are_unweighted_means_of_their_tasks(run):
    """A group of tasks of one kind aggregates them; a group that mixes kinds (accuracy tasks
    beside consistency tasks) has no aggregate row, so lm-eval warns of no missing metric."""
    results = run["results"]
    members = ["wsc273_zeroshot", "winogrande_zeroshot"]
    for metric in ("acc,none", "schema_acc,none"):
        expected = sum(results[m][metric] for m in members) / len(members)
        assert results["zeroshot_suite"][metric] == pytest.approx(expected, abs=1e-12)
    for group in ("wsc266_suite", "wsc266_perturbations", "winogrande_suite", "reid250_suite"):
        assert "acc,none" not in results.get(group, {}), group
    # the everything group prints no mean: it would mix control baselines and WinoWhy in
    assert "acc,none" not in results.get("wsc_group", {})
    assert "schema_acc,none" not in results.get("wsc_group", {})


def test_two_processes_give_the_same_metrics_as_one(tiny_gpt2_dir, tmp_path, data_dir):
    tasks = "wsc273_schemas,wsc266,wsc266_inverted"  # the triple; one sentence split twice
    outputs = {n: run_dp_eval(n, tiny_gpt2_dir, tmp_path / f"p{n}.json", tasks) for n in (1, 2)}
    assert outputs[1]["world_size"] == 1 and outputs[2]["world_size"] == 2
    assert outputs[1]["results"].keys() == outputs[2]["results"].keys()
    for task, row in outputs[1]["results"].items():
        assert_same_metrics(row, outputs[2]["results"][task], task)
