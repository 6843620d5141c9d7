"""Every entry of ``wsc_tasks.lm_eval_fixes``, through the record in its module: the installed
lm-eval is among the releases it was checked on, and lm-eval, unchanged, still behaves as the
entry says (``Fix.still_needed``). The one patch adds methods and replaces nothing; what the
package relies on in lm-eval beyond the entries is tested here too (``test_lm_eval_still_*``)."""

from __future__ import annotations

import sys

import lm_eval
import pytest
from lm_eval.api.model import LM

from wsc_tasks import lm_eval_fixes
from wsc_tasks.lm_eval_fixes import request_types
from wsc_tasks.metrics import registry
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.serving.generation import GENERATION_TYPE
from wsc_tasks.serving.requests import REQUEST_TYPE

EVERY = pytest.mark.parametrize("fix", lm_eval_fixes.FIXES, ids=lambda f: f.name)


def _module(fix: lm_eval_fixes.Fix) -> str:
    return sys.modules[fix.still_needed.__module__].__file__ or fix.still_needed.__module__


def test_every_module_has_its_record_and_one_is_a_patch():
    names = [f.name for f in lm_eval_fixes.FIXES]
    assert names and len(names) == len(set(names))
    assert [f.still_needed.__module__.rsplit(".", 1)[1] for f in lm_eval_fixes.FIXES] == names
    assert [f.name for f in lm_eval_fixes.FIXES if f.kind == lm_eval_fixes.PATCH] == [
        "class_task_metadata",
        "request_types",
    ]
    assert all(f.kind in (lm_eval_fixes.PATCH, lm_eval_fixes.AVOIDED) for f in lm_eval_fixes.FIXES)


def test_the_installed_lm_eval_is_a_supported_release():
    installed = lm_eval_fixes.installed_lm_eval()
    assert lm_eval_fixes.version_warnings(installed) == []
    assert lm_eval_fixes.within(installed, lm_eval_fixes.SUPPORTED)
    for fix in lm_eval_fixes.FIXES:  # each entry's releases among the supported ones
        assert lm_eval_fixes.within(fix.lm_eval[0], lm_eval_fixes.SUPPORTED), fix.name


@EVERY
def test_lm_eval_still_behaves_as_the_entry_says(fix):
    installed = lm_eval_fixes.installed_lm_eval()
    expected = lm_eval_fixes.applies(fix)  # True on the releases the entry is for
    assert fix.still_needed() is expected, (
        f"lm-eval {installed} {'no longer behaves' if expected else 'behaves'} as {fix.name} "
        f"says ({fix.behaviour}) on releases {fix.lm_eval}, as {fix.still_needed.__name__} in "
        f"{_module(fix)} shows: lm-eval has changed it; drop the entry and what it does, or "
        "change its releases"
    )


def test_a_release_outside_the_supported_ones_is_warned_of():
    assert lm_eval_fixes.version_warnings("0.4.13") == []
    for version in ("0.4.9", "0.5.0", "1.0"):
        [line] = lm_eval_fixes.version_warnings(version)
        assert f"lm-eval {version} is outside the releases >=0.4.10,<0.5" in line


def test_the_patch_adds_methods_to_lm_and_replaces_none():
    lm_eval_fixes.apply()
    assert lm_eval_fixes.apply() is False  # once
    added = request_types.methods()
    assert set(added) == {REQUEST_TYPE, GENERATION_TYPE} | {
        f.request_type for f in families.FAMILIES.values() if f.request_type != "loglikelihood"
    }
    for name in added:
        assert getattr(getattr(LM, name), request_types.MARK)
    for name in ("loglikelihood", "loglikelihood_rolling", "generate_until"):
        assert not hasattr(getattr(LM, name), request_types.MARK)


def test_a_masked_request_is_refused_on_a_model_that_cannot_serve_it():
    lm_eval_fixes.apply()

    class Causal(LM):
        loglikelihood = loglikelihood_rolling = generate_until = None

    request = type("R", (), {"task_name": "wsc266", "args": ("a", "b")})()
    with pytest.raises(ScoringError, match=r"task wsc266: the model is a masked .* --model hf-mlm"):
        Causal().mlm_score([request])


def test_lm_eval_still_writes_the_stderr_metric_where_it_writes_a_stderr(
    tiny_gpt2_dir, task_manager
):
    """What ``stderr_keys`` relies on: lm-eval aggregates ``<metric>_stderr`` after the metric
    and keeps its value in the metric's stderr column, so its table prints it."""
    out = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_gpt2_dir},dtype=float32", tasks=["wsc266"],
        task_manager=task_manager(pretrained=str(tiny_gpt2_dir)), limit=20, device="cpu",
        batch_size=16,
    )  # fmt: skip
    row = out["results"]["wsc266"]
    stderr = row[registry.column(registry.stderr_name(registry.SCHEMA_ACC))]
    assert isinstance(stderr, float)  # lm-eval alone writes N/A there
    assert registry.column("n_problems") not in row  # a count: not a figure of lm-eval's table
    from lm_eval.utils import make_table

    [line] = [x for x in make_table(out).splitlines() if x.count("|") > 5 and
              x.split("|")[5].strip() == registry.SCHEMA_ACC]  # fmt: skip
    assert "N/A" not in line
