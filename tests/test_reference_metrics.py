"""Every metric of a representative set of tasks equals the value before the speed work
(vectorised bootstraps, merged requests).

The fixture holds lm-eval's figures for the chance model (seed 1) with GPT-2's tokenizer, written
by ``tests/reference_metrics.py`` on the code before the change. Values and bootstrap errors are
compared exactly: the chance model's scores do not depend on batching, and the bootstraps use the
same resample indexes as before.
"""

from __future__ import annotations

import json

import pytest
from reference_metrics import FIXTURE, METADATA, evaluate, figures

pytestmark = pytest.mark.slow


def test_every_metric_equals_the_reference(tiny_gpt2_dir, data_dir, tmp_path):
    expected = json.loads(FIXTURE.read_text())
    found = figures(evaluate(tiny_gpt2_dir, tmp_path, METADATA))
    assert found.keys() == expected.keys()
    for task, row in expected.items():
        assert found[task] == row, task


def test_default_table_lists_each_tasks_headline_metrics_only(
    tiny_gpt2_dir, data_dir, task_manager
):
    names = ["wsc266", "wsc266_switched_consistency", "wsc266_associativity", "winowhy"]
    counts = {}
    for choice in ("headline", "all"):
        manager = task_manager(tokenizer=str(tiny_gpt2_dir), metrics=choice)
        tasks = manager.load(names)["tasks"]
        counts[choice] = {name: len(tasks[name].shown()) for name in names}
    assert counts["headline"] == {
        "wsc266": 2,  # acc, schema_acc: the counts are no figure of the model
        "wsc266_switched_consistency": 6,
        "wsc266_associativity": 6,
        "winowhy": 4,
    }
    assert all(counts["all"][n] > counts["headline"][n] for n in names)


def test_an_unknown_metric_choice_names_the_task():
    from wsc_tasks.tasks.request_task import metric_choice

    with pytest.raises(ValueError, match="task wsc266: metadata.metrics is 'some'"):
        metric_choice("wsc266", {"metrics": "some"})
