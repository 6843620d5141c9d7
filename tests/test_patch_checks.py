"""Every lm-eval patch of ``wsc_tasks.lm_eval_fixes``, through the record in its module: the
installed lm-eval is inside the versions it names, and lm-eval, unpatched, still behaves as the
patch says (``Patch.still_needed``). A patch is added by its module alone; the day one of these
fails for a patch, lm-eval has fixed or changed what the patch is for."""

from __future__ import annotations

import sys

import pytest

from wsc_tasks import lm_eval_fixes as patches

EVERY = pytest.mark.parametrize("patch", patches.PATCHES, ids=lambda p: p.name)


def _module(patch: patches.Patch) -> str:
    return sys.modules[patch.still_needed.__module__].__file__ or patch.still_needed.__module__


def test_every_patch_module_has_its_record():
    names = [p.name for p in patches.PATCHES]
    assert names and len(names) == len(set(names))
    modules = [p.still_needed.__module__.rsplit(".", 1)[1] for p in patches.PATCHES]
    assert modules == sorted(modules)  # in the order of the modules, each check in its own
    assert all(m.endswith(f"_{n}") for m, n in zip(modules, names, strict=True))


@EVERY
def test_the_installed_lm_eval_is_in_the_patchs_range(patch):
    installed = patches.installed_lm_eval()
    low, below = patch.lm_eval
    assert patches.version_warnings(installed, [patch]) == [], (
        f"lm-eval {installed} is outside >={low},<{below}, the range of patch {patch.name} "
        f"({_module(patch)}): run this test file, and widen the range there if its check passes"
    )


@EVERY
def test_lm_eval_still_needs_the_patch(patch):
    assert patch.still_needed() is True, (
        f"lm-eval {patches.installed_lm_eval()} no longer behaves as patch {patch.name} "
        f"({patch.target}) says, as {patch.still_needed.__name__} in {_module(patch)} shows: "
        "lm-eval has fixed or changed it; drop the patch (its module and its tests in "
        "tests/test_patches.py), or rewrite it for the new behaviour"
    )
