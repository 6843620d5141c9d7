"""Every change this package makes to lm-eval's behaviour, one module each (``pNN_<name>.py``).

Each module holds one patch and its record, ``PATCH``: ``PATCHES`` lists them in the order of their
modules, found here as the package is imported (a new patch is a new module). Each names the
lm-eval versions it was written for (``Patch.lm_eval``; checked against the installed lm-eval when
this package is imported, with a warning outside it), the upstream issue or pull request where one
exists, what it fixes and why, and its check (``Patch.still_needed``, defined beside the patch):
lm-eval's own code, unpatched (the function saved before patching, ``original``), run on a small
case that shows the behaviour the patch changes. ``tests/test_patch_checks.py`` runs every
registered patch's check and range: the day one fails, lm-eval has fixed or changed it there and
the patch can probably go. ``tests/test_patches.py`` tests what each patch does, end to end.

When they apply (as before this package existed; N: the module ``pNN_…``):

- ``apply()`` — sections 1 to 6, 9, 12, 15 to 23, when ``wsc_tasks.harness.base`` (the base of
  every task class) is imported (that is, when lm-eval loads this package's tasks, before any
  request is sent); 14 is part of section 2's replacement;
- ``accept_several_include_paths()`` (7) — by ``wsc-tasks run`` before lm-eval's CLI starts;
- ``without_lm_eval_tasks()`` (8) — around that CLI call, when every task asked for is ours;
- ``warn_unkeyed_request_cache`` (10) — inside section 3's ``evaluate``, once per process;
- ``request_cache_tag`` (11) — by this package's tasks as they build their requests;
- ``tasks_meet_the_model`` (13) — inside section 3's ``evaluate``, before any request is built;
- ``explain_chat_template_advice()`` (15) and ``print_counts_as_integers()`` (16) — also by
  ``wsc-tasks run`` before lm-eval's CLI starts (``apply()`` comes too late for a plain ``lm_eval``
  run, whose advice comes first and whose CLI takes ``make_table`` before the tasks load: there
  section 16 rewrites the function it holds, ``print_counts_in_place``);
- ``quiet_git_lookup()`` (17) — first in ``apply()``, and by ``wsc-tasks run``.

Every patch is idempotent: the replacement carries ``_MARK`` and is never wrapped twice.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
import warnings
from collections.abc import Sequence
from importlib import metadata

from wsc_tasks.harness.patches.base import _MARK, GITHUB, TESTED, Patch, is_our_task, original
from wsc_tasks.harness.patches.p01_slice_cache_hits import (
    _slice_cache_hits,
)
from wsc_tasks.harness.patches.p02_aggregate_listed_metrics_only import (
    _aggregate_listed_metrics_only,
)
from wsc_tasks.harness.patches.p03_send_distinct_requests import (
    _send_distinct_requests,
    deduplicated,
    distinct,
)
from wsc_tasks.harness.patches.p04_remember_tokens import (
    _encode_in_one_batch,
    _memo,
    _remember_tokens,
)
from wsc_tasks.harness.patches.p05_schema_stderr import (
    _schema_stderr,
)
from wsc_tasks.harness.patches.p06_drop_expected_group_gaps import (
    GROUP_LOGGER,
    ExpectedGroupGaps,
    _drop_expected_group_gaps,
    our_groups,
)
from wsc_tasks.harness.patches.p07_accept_several_include_paths import (
    accept_several_include_paths,
)
from wsc_tasks.harness.patches.p08_without_lm_eval_tasks import (
    without_lm_eval_tasks,
)
from wsc_tasks.harness.patches.p09_refuse_unserved_requests import (
    _refusal,
    refuse_unserved_requests,
)
from wsc_tasks.harness.patches.p10_warn_unkeyed_request_cache import (
    _KEYED_CACHES,
    _tasks_of,
    _warned_caches,
    mark_cache_keyed,
    warn_unkeyed_request_cache,
)
from wsc_tasks.harness.patches.p11_request_cache_tag import (
    request_cache_tag,
)
from wsc_tasks.harness.patches.p12_check_served_logprobs import (
    CHECK_MARK,
    check_served_logprobs,
    our_tasks_metadata,
)
from wsc_tasks.harness.patches.p13_tasks_meet_the_model import (
    meet_the_model,
    model_argument_keys,
    simple_evaluate_arguments,
)
from wsc_tasks.harness.patches.p14_leave_out_undefined_metrics import (
    leave_out_undefined,
)
from wsc_tasks.harness.patches.p15_explain_chat_template_advice import (
    CHAT_ADVICE,
    CHAT_EXPLANATION,
    EVALUATOR_LOGGER,
    ChatTemplateAdvice,
    explain_chat_template_advice,
)
from wsc_tasks.harness.patches.p16_print_counts_as_integers import (
    integer_counts,
    is_count_row,
    print_counts_as_integers,
    print_counts_in_place,
)
from wsc_tasks.harness.patches.p17_quiet_git_lookup import (
    quiet_git_lookup,
)
from wsc_tasks.harness.patches.p18_score_per_batch import (
    PER_REQUEST_ENV,
    batch_answers,
    score_per_batch,
)
from wsc_tasks.harness.patches.p19_freeze_survivors import (
    freeze_survivors,
    survivors_frozen,
)
from wsc_tasks.harness.patches.p20_share_prefixes import (
    SHARING_ENV,
    share_prefixes,
)
from wsc_tasks.harness.patches.p21_pickle_request_cache import (
    pickle_request_cache,
)
from wsc_tasks.harness.patches.p22_one_line_refusals import (
    OneLineRefusals,
    one_line_refusals,
)
from wsc_tasks.harness.patches.p23_say_where_results_are import (
    said_by_wsc_tasks_run,
    say_where_results_are,
)

log = logging.getLogger(f"lm_eval.{__name__}")

# every patch's record, in the order of its module's number
PATCHES: tuple[Patch, ...] = tuple(
    importlib.import_module(f"{__name__}.{m.name}").PATCH
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if m.name != "base"
)

__all__ = [
    "PATCHES",
    "Patch",
    "TESTED",
    "GITHUB",
    "_MARK",
    "original",
    "is_our_task",
    "apply",
    "check_lm_eval_version",
    "installed_lm_eval",
    "version_warnings",
    "_slice_cache_hits",
    "_aggregate_listed_metrics_only",
    "distinct",
    "deduplicated",
    "_send_distinct_requests",
    "_encode_in_one_batch",
    "_memo",
    "_remember_tokens",
    "_schema_stderr",
    "GROUP_LOGGER",
    "ExpectedGroupGaps",
    "our_groups",
    "_drop_expected_group_gaps",
    "accept_several_include_paths",
    "without_lm_eval_tasks",
    "_refusal",
    "refuse_unserved_requests",
    "_KEYED_CACHES",
    "_warned_caches",
    "mark_cache_keyed",
    "_tasks_of",
    "warn_unkeyed_request_cache",
    "request_cache_tag",
    "CHECK_MARK",
    "our_tasks_metadata",
    "check_served_logprobs",
    "simple_evaluate_arguments",
    "model_argument_keys",
    "meet_the_model",
    "leave_out_undefined",
    "EVALUATOR_LOGGER",
    "CHAT_ADVICE",
    "CHAT_EXPLANATION",
    "ChatTemplateAdvice",
    "explain_chat_template_advice",
    "is_count_row",
    "integer_counts",
    "print_counts_as_integers",
    "quiet_git_lookup",
    "PER_REQUEST_ENV",
    "batch_answers",
    "score_per_batch",
    "freeze_survivors",
    "survivors_frozen",
    "SHARING_ENV",
    "share_prefixes",
    "pickle_request_cache",
    "OneLineRefusals",
    "one_line_refusals",
    "print_counts_in_place",
    "said_by_wsc_tasks_run",
    "say_where_results_are",
]


# -- versions -----------------------------------------------------------------------------------
def _version(text: str) -> tuple[int, ...]:
    """``0.4.9.2`` → (0, 4, 9, 2); a pre-release or local suffix is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:4])


def installed_lm_eval() -> str:
    return metadata.version("lm_eval")


def version_warnings(installed: str, among: Sequence[Patch] = PATCHES) -> list[str]:
    """One line per patch (of ``among``) whose declared lm-eval range does not hold
    ``installed``."""
    found = _version(installed)
    lines = []
    for patch in among:
        low, below = patch.lm_eval
        if not _version(low) <= found < _version(below):
            lines.append(
                f"wsc_tasks: patch {patch.name} ({patch.target}) was written for lm-eval "
                f">={low},<{below} but lm-eval {installed} is installed; run "
                "tests/test_patch_checks.py to see whether lm-eval still needs it, then adjust "
                "its range in its module under wsc_tasks/harness/patches/"
            )
    return lines


def check_lm_eval_version() -> None:
    for line in version_warnings(installed_lm_eval()):
        warnings.warn(line, stacklevel=2)
        log.warning(line)


def apply() -> bool:
    """Sections 1–6, 9, 12 and 15–23, once per process (13 and 14 are parts of 3 and 2); True if
    the logits cache was patched now."""
    quiet_git_lookup()  # section 17
    explain_chat_template_advice()
    print_counts_as_integers()
    print_counts_in_place()  # the table of a plain lm_eval run, whose CLI holds make_table
    one_line_refusals()  # section 22
    say_where_results_are()  # section 23
    refuse_unserved_requests()
    check_served_logprobs()
    _aggregate_listed_metrics_only()
    _send_distinct_requests()
    _schema_stderr()
    _drop_expected_group_gaps()
    score_per_batch()  # section 18
    freeze_survivors()  # section 19
    share_prefixes()  # section 20, around section 18's replacement
    pickle_request_cache()  # section 21
    return _slice_cache_hits()


check_lm_eval_version()
