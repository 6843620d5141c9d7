"""Every metric of a representative set of tasks equals the value before the speed work (issue 14).

The fixture holds lm-eval's figures for the chance model (seed 1) with GPT-2's tokenizer, written
by ``tests/reference_metrics.py`` on the code before the change. Values and bootstrap errors are
compared exactly: the chance model's scores do not depend on batching, and the bootstraps use the
same resample indexes as before.
"""

from __future__ import annotations

import json

import pytest
from reference_metrics import FIXTURE, evaluate, figures

pytestmark = pytest.mark.slow


def test_every_metric_equals_the_reference(tiny_gpt2_dir, data_dir, tmp_path):
    expected = json.loads(FIXTURE.read_text())
    found = figures(evaluate(tiny_gpt2_dir, tmp_path, ["--metadata", '{"metrics": "all"}']))
    assert found.keys() == expected.keys()
    for task, row in expected.items():
        assert found[task] == row, task
