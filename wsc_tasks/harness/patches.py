"""Every change this package makes to lm-eval's behaviour, one section each.

Each section names the lm-eval versions it was written for (``LM_EVAL`` in ``PATCHES``; checked
against the installed lm-eval when this module is imported, with a warning outside it), the
upstream issue or pull request where one exists, what it fixes and why. ``tests/test_patches.py``
shows, for each, that the installed lm-eval still behaves as the section says (calling the
function saved before patching, ``original``): the day one of those tests fails, lm-eval has
changed there and the patch can probably go.

When they apply (as before this module existed):

- ``apply()`` — sections 1 to 6, 9, 12, 15, 16 and 17, when ``wsc_tasks.harness.base`` (the base of
  every task class) is imported (that is, when lm-eval loads this package's tasks, before any
  request is sent); 14 is part of section 2's replacement;
- ``accept_several_include_paths()`` (7) — by ``wsc-tasks run`` before lm-eval's CLI starts;
- ``without_lm_eval_tasks()`` (8) — around that CLI call, when every task asked for is ours;
- ``warn_unkeyed_request_cache`` (10) — inside section 3's ``evaluate``, once per process;
- ``request_cache_tag`` (11) — by this package's tasks as they build their requests;
- ``tasks_meet_the_model`` (13) — inside section 3's ``evaluate``, before any request is built;
- ``explain_chat_template_advice()`` (15) and ``print_counts_as_integers()`` (16) — also by
  ``wsc-tasks run`` before lm-eval's CLI starts (``apply()`` comes too late for a plain ``lm_eval``
  run, whose advice comes first and whose CLI takes ``make_table`` before the tasks load).

Every patch is idempotent: the replacement carries ``_MARK`` and is never wrapped twice.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from types import FrameType
from typing import Any

from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError

log = logging.getLogger(f"lm_eval.{__name__}")

_MARK = "_wsc_tasks_patch"
_ORIGINALS: dict[tuple[int, str], Any] = {}


@dataclass(frozen=True)
class Patch:
    """What one section patches, for which lm-eval versions, and where upstream discusses it."""

    name: str
    target: str  # the lm-eval attribute replaced (or the logger filtered)
    lm_eval: tuple[str, str]  # (lowest version checked, first version not allowed)
    upstream: tuple[str, ...] = ()


# lm-eval 0.4.13 is the release every section was written and tested against (the newest on PyPI
# when written); pyproject allows < 0.5, which is where internals may move.
TESTED = ("0.4.13", "0.5")
GITHUB = "https://github.com/EleutherAI/lm-evaluation-harness"
PATCHES: tuple[Patch, ...] = (
    Patch("slice_cache_hits", "lm_eval.models.utils.Collator.get_cache", TESTED,
          (f"{GITHUB}/issues/2984", f"{GITHUB}/pull/2987")),
    Patch("aggregate_listed_metrics_only", "lm_eval.evaluator_utils._compute_task_aggregations",
          TESTED),
    Patch("send_distinct_requests", "lm_eval.evaluator.evaluate", TESTED),
    Patch("remember_tokens", "lm_eval.models.huggingface.HFLM.tok_encode", TESTED),
    Patch("schema_stderr", "lm_eval.evaluator_utils.stderr_for_metric", TESTED),
    Patch("drop_expected_group_gaps", "logger lm_eval.api.group", TESTED),
    Patch("accept_several_include_paths", "lm_eval.tasks.manager.TaskManager.__init__", TESTED),
    Patch("without_lm_eval_tasks", "lm_eval.tasks.manager.TaskManager.__init__", TESTED,
          (f"{GITHUB}/issues/1801",)),
    Patch("refuse_unserved_requests", "lm_eval.api.model.LM.<our request types>", TESTED),
    Patch("warn_unkeyed_request_cache", "lm_eval.api.model.CachingLM (a warning)", TESTED,
          (f"{GITHUB}/issues/2715", f"{GITHUB}/issues/4063")),
    Patch("request_cache_tag", "lm_eval.api.task.Task.build_all_requests(tokenizer_name=)",
          TESTED),
    Patch("check_served_logprobs", "lm_eval.evaluator.evaluate", TESTED,
          (f"{GITHUB}/issues/1949",)),
    Patch("tasks_meet_the_model", "lm_eval.evaluator.evaluate (simple_evaluate's model_args read)",
          TESTED),
    Patch("leave_out_undefined_metrics", "lm_eval.evaluator_utils._compute_task_aggregations",
          TESTED),
    Patch("explain_chat_template_advice", "logger lm_eval.evaluator", TESTED),
    Patch("print_counts_as_integers", "lm_eval.utils.make_table", TESTED),
    Patch("score_per_batch", "lm_eval.models.huggingface.HFLM._loglikelihood_tokens", TESTED),
)  # fmt: skip


# -- versions and bookkeeping ----------------------------------------------------------------------
def _version(text: str) -> tuple[int, ...]:
    """``0.4.9.2`` → (0, 4, 9, 2); a pre-release or local suffix is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:4])


def installed_lm_eval() -> str:
    return metadata.version("lm_eval")


def version_warnings(installed: str) -> list[str]:
    """One line per patch whose declared lm-eval range does not hold ``installed``."""
    found = _version(installed)
    lines = []
    for patch in PATCHES:
        low, below = patch.lm_eval
        if not _version(low) <= found < _version(below):
            lines.append(
                f"wsc_tasks: patch {patch.name} ({patch.target}) was written for lm-eval "
                f">={low},<{below} but lm-eval {installed} is installed; run "
                "tests/test_patches.py to see whether lm-eval still needs it, then adjust its "
                "range in wsc_tasks/harness/patches.py"
            )
    return lines


def check_lm_eval_version() -> None:
    for line in version_warnings(installed_lm_eval()):
        warnings.warn(line, stacklevel=2)
        log.warning(line)


def _replace(owner: Any, name: str, new: Callable[..., Any], mark: str = _MARK) -> bool:
    """Set ``owner.name = new`` unless already patched; keep the original for ``original``.

    A second section wrapping the same function passes its own ``mark`` (its wrapper copies the
    marks of what it wraps with ``functools.wraps``, so each section still applies once)."""
    current = getattr(owner, name)
    if getattr(current, mark, False):
        return False
    _ORIGINALS.setdefault((id(owner), name), current)
    setattr(new, mark, True)
    if getattr(current, "__doc__", None) and not getattr(new, "__doc__", None):
        new.__doc__ = current.__doc__
    setattr(owner, name, new)
    return True


def original(owner: Any, name: str) -> Any:
    """lm-eval's own ``owner.name``, as it was before this module patched it."""
    return _ORIGINALS.get((id(owner), name), getattr(owner, name))


def apply() -> bool:
    """Sections 1–6, 9, 12 and 15–17, once per process (13 and 14 are parts of 3 and 2); True if
    the logits cache was patched now."""
    explain_chat_template_advice()
    print_counts_as_integers()
    refuse_unserved_requests()
    check_served_logprobs()
    _aggregate_listed_metrics_only()
    _send_distinct_requests()
    _schema_stderr()
    _drop_expected_group_gaps()
    score_per_batch()
    return _slice_cache_hits()


# -- 1. slice_cache_hits ---------------------------------------------------------------------------
# lm-eval's HFLM (``logits_cache=True``, its default) computes one forward pass for all requests
# whose ``context + continuation[:-1]`` tokens are equal, and the ``Collator`` hands each of them
# the logits of the longest continuation (the representative since PR #2987, which fixed the crash
# of issue #2984 and trims the greedy check to each continuation, ``greedy_tokens[:, -n:]``). The
# log-likelihood itself is still gathered from the *first* positions of those logits, so a shorter
# continuation gets a wrong value. The same sentence split at two places is exactly what partial
# scoring of a problem and of its inversion send (``wsc266`` and ``wsc266_inverted`` fill the same
# sentence): without the fix, scores in a run depend on which other tasks share it. The fix trims
# each cache hit's logits to its own continuation, a no-op for every request already scored right.
# Upstream, the one-line fix is the same trailing slice on the gather in
# ``HFLM._loglikelihood_tokens``.
def _slice_cache_hits() -> bool:
    from lm_eval.models.utils import Collator

    get_cache_original = Collator.get_cache

    def get_cache(self: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any, Any]]:
        for request_str, cont_toks, logits in get_cache_original(self, *args, **kwargs):
            # logits: [1, positions of the longest continuation, vocab]; keep this request's own
            yield request_str, cont_toks, logits[:, -len(cont_toks) :, :]

    patched = _replace(Collator, "get_cache", get_cache)
    if patched:
        log.debug("wsc_tasks: lm-eval Collator.get_cache now slices each cache hit to its own")
    return patched


# -- 2. aggregate_listed_metrics_only --------------------------------------------------------------
# lm-eval aggregates (with ``mean`` and a warning, if the task names no aggregation) every key
# ``process_results`` returns, and every key is a row of its printed table. This package's tasks
# return a per-document value for every scoring method and method pair, so that ``--log_samples``
# keeps them all for ``wsc-tasks report``, but by default list only their headline metrics in
# ``aggregation()``; with this patch lm-eval aggregates only those (for this package's tasks only).
# No upstream issue found; upstream, a task could mark keys as logged-only.
def is_our_task(task: Any) -> bool:
    return type(task).__module__.startswith("wsc_tasks.")


def _aggregate_listed_metrics_only() -> None:
    from lm_eval import evaluator_utils

    compute_original = getattr(evaluator_utils, "_compute_task_aggregations", None)
    if compute_original is None:  # another lm-eval: every logged metric is aggregated
        log.warning("wsc_tasks: lm-eval without _compute_task_aggregations: all metrics printed")
        return

    def compute(task: Any, raw_metrics: dict, *args: Any, **kwargs: Any) -> Any:
        if not is_our_task(task):
            return compute_original(task, raw_metrics, *args, **kwargs)
        listed = task.aggregation()
        raw_metrics = {key: items for key, items in raw_metrics.items() if key[0] in listed}
        aggregated, size = compute_original(task, raw_metrics, *args, **kwargs)
        leave_out_undefined(task, aggregated, raw_metrics)  # section 14
        return aggregated, size

    _replace(evaluator_utils, "_compute_task_aggregations", compute)


# -- 3. send_distinct_requests ---------------------------------------------------------------------
# lm-eval passes the loglikelihood requests of all tasks to the model in one call, duplicates
# included; overlapping tasks (``wsc266`` and its subsets, every consistency task's original side,
# Reid250's rows) send the same (context, continuation) many times, and ``TemplateLM`` tokenizes
# every request on its own. The model gets each distinct request once and the results are fanned
# back out (a deterministic model's result depends on the request's arguments only). No upstream
# issue found; upstream this belongs in ``TemplateLM.loglikelihood``, before
# ``_loglikelihood_tokens``.
def distinct(requests: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """The requests with distinct arguments, in first-seen order, and where each request went."""
    first: dict[Any, int] = {}
    unique: list[Any] = []
    where: list[int] = []
    for request in requests:
        index = first.setdefault(request.args, len(unique))
        if index == len(unique):
            unique.append(request)
        where.append(index)
    return unique, where


def deduplicated(method: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """``lm.loglikelihood`` that sends each distinct request once."""

    def loglikelihood(requests: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        unique, where = distinct(requests)
        log.info(
            f"wsc_tasks: {len(requests)} loglikelihood requests, {len(unique)} distinct sent to "
            "the model"
        )
        _encode_in_one_batch(getattr(method, "__self__", None), unique)
        results = method(unique, *args, **kwargs)
        return [results[i] for i in where]

    setattr(loglikelihood, _MARK, True)
    return loglikelihood


def _send_distinct_requests() -> None:
    from lm_eval import evaluator

    evaluate_original = evaluator.evaluate
    if getattr(evaluate_original, _MARK, False):
        return
    _remember_tokens()

    @functools.wraps(evaluate_original)
    def evaluate(lm: Any, *args: Any, **kwargs: Any) -> Any:
        meet_the_model(lm, kwargs["task_dict"] if "task_dict" in kwargs else args[0])  # 13
        method = getattr(lm, "loglikelihood", None)
        if method is None or getattr(method, _MARK, False):
            return evaluate_original(lm, *args, **kwargs)
        warn_unkeyed_request_cache(lm, kwargs.get("task_dict", args[0] if args else {}))
        lm.loglikelihood = deduplicated(method)
        try:
            return evaluate_original(lm, *args, **kwargs)
        finally:
            del lm.loglikelihood

    _replace(evaluator, "evaluate", evaluate)


# -- 4. remember_tokens ----------------------------------------------------------------------------
# ``TemplateLM._encode_pair`` makes two tokenizer calls per request, one text at a time. An HF
# causal model's ``tok_encode`` now remembers its texts, and section 3 fills that memo with one
# batched tokenizer call per model call (same tokenizer arguments as ``HFLM.tok_encode``). No
# upstream issue found; upstream, ``TemplateLM.loglikelihood`` could encode the pairs with one
# ``tokenizer(list)`` call.
def _encode_in_one_batch(lm: Any, requests: Sequence[Any]) -> None:
    """Fill an HF causal model's text → tokens memo with one batched call for the texts that
    ``TemplateLM._encode_pair`` will encode."""
    from lm_eval.models.huggingface import HFLM

    if not isinstance(lm, HFLM) or getattr(lm, "backend", None) != "causal":
        return
    from lm_eval.models.utils import _add_special_kwargs

    texts: set[str] = set()
    for request in requests:
        context, continuation = request.args[:2]
        if not context:
            continue
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        texts.update((context, context + continuation))
    memo = _memo(lm)
    bos = lm.tokenizer.decode(lm.prefix_token_id)
    plain = sorted(t for t in texts if (t, None) not in memo and not t.startswith(bos))
    if plain:
        kwargs = _add_special_kwargs(None, lm.add_bos_token)
        for text, ids in zip(plain, lm.tokenizer(plain, **kwargs)["input_ids"], strict=True):
            memo[(text, None)] = list(ids)


def _memo(lm: Any) -> dict[tuple[str, bool | None], list[int]]:
    if "_wsc_tasks_token_memo" not in vars(lm):
        lm._wsc_tasks_token_memo = {}
    return lm._wsc_tasks_token_memo


def _remember_tokens() -> None:
    from lm_eval.models.huggingface import HFLM

    tok_encode_original = HFLM.tok_encode

    def tok_encode(
        self: Any,
        string: str,
        add_special_tokens: bool | None = None,
        left_truncate_len: int | None = None,
        **kwargs: Any,
    ) -> list[int]:
        if left_truncate_len or kwargs:
            return tok_encode_original(
                self, string, add_special_tokens, left_truncate_len, **kwargs
            )
        memo = _memo(self)
        key = (string, add_special_tokens)
        if key not in memo:
            memo[key] = tok_encode_original(self, string, add_special_tokens)
        return list(memo[key])

    _replace(HFLM, "tok_encode", tok_encode)


# -- 5. schema_stderr ------------------------------------------------------------------------------
# lm-eval asks ``stderr_for_metric(aggregation, bootstrap_iters)`` for every metric; it knows no
# error for an aggregation outside its own list and prints ``N/A``. This hook answers for this
# package's aggregations with the schema bootstrap of ``harness.stderr`` (which says which
# aggregations are ours and computes the error); every other metric gets lm-eval's own answer.
# lm-eval binds the name in two modules, so both are replaced. No upstream issue found; upstream, an
# aggregation could carry its own stderr function (as a metric's ``stderr`` attribute or a registry
# entry).
def _schema_stderr() -> bool:
    from lm_eval import evaluator_utils
    from lm_eval.api import metrics as lm_metrics

    from wsc_tasks.harness import stderr

    lookup_original = original(evaluator_utils, "stderr_for_metric")

    def stderr_for_metric(metric: Callable[..., Any], bootstrap_iters: int) -> Any:
        if not stderr.is_ours(metric):
            return lookup_original(metric, bootstrap_iters)
        if bootstrap_iters <= 0 or stderr.is_count(metric):
            return None
        iters = min(bootstrap_iters, stderr.MAX_ITERS)

        def schema_stderr(items: Sequence[Any]) -> float | str:
            value = stderr.schema_stderr(metric, items, iters)
            return "N/A" if math.isnan(value) else value  # no replicate had a value: none

        return schema_stderr

    patched = _replace(evaluator_utils, "stderr_for_metric", stderr_for_metric)
    _replace(lm_metrics, "stderr_for_metric", evaluator_utils.stderr_for_metric)
    if patched:
        log.debug("wsc_tasks: lm-eval's stderr for wsc_tasks metrics is now a schema bootstrap")
    return patched


# -- 6. drop_expected_group_gaps -------------------------------------------------------------------
# Our groups mix tasks that report accuracies with consistency tasks that report pair metrics; each
# group row averages a metric over the tasks that have it, by design (task_configs/README.md), so
# lm-eval's per-group warning "Group '<name>': metric '<m>' is missing in k/n tasks" (logged by
# ``lm_eval.api.group.Group.aggregate``) is dropped for our groups, and only for them. A logging
# filter, not a code patch: if lm-eval rewords the message, the warning shows again (and
# tests/test_patches.py fails). No upstream issue found; upstream, a group could declare that its
# metrics come from a subset of its tasks.
GROUP_LOGGER = "lm_eval.api.group"


class ExpectedGroupGaps(logging.Filter):
    """Drops lm-eval's "metric missing" warning for this package's groups."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            message.startswith("Group '")
            and "' is missing in " in message
            and message.split("'")[1] in our_groups()
        )


@lru_cache(maxsize=1)
def our_groups() -> frozenset[str]:
    """The ``group:`` names of this package's YAMLs."""
    from importlib.resources import files

    import yaml

    names = set()
    for path in files("wsc_tasks.task_configs").iterdir():
        if path.name.endswith(".yaml") and "\ngroup:" in "\n" + path.read_text():
            names.add(yaml.safe_load(path.read_text())["group"])
    return frozenset(names)


def _drop_expected_group_gaps() -> bool:
    logger = logging.getLogger(GROUP_LOGGER)
    if any(isinstance(f, ExpectedGroupGaps) for f in logger.filters):
        return False
    logger.addFilter(ExpectedGroupGaps())
    return True


# -- 7. accept_several_include_paths ---------------------------------------------------------------
# lm-eval's ``TaskManager`` takes a list of folders but its ``run --include_path`` passes one string
# (its own ``ls`` help shows ``"/path/to/tasks1:/path/to/tasks2"``, which ``run`` then reads as one
# folder). In ``wsc-tasks run`` the string is split on the path separator so the user's folder and
# this package's can be combined. No upstream issue found; upstream, ``run`` could split it as
# ``ls`` documents.
def accept_several_include_paths() -> bool:
    """Let ``--include_path a:b`` name several folders; True if patched now."""
    import os

    from lm_eval.tasks import manager

    init_original = manager.TaskManager.__init__

    def init(self: object, *args: object, include_path: object = None, **kwargs: object) -> None:
        if isinstance(include_path, str) and os.pathsep in include_path:
            include_path = [p for p in include_path.split(os.pathsep) if p]
        init_original(self, *args, include_path=include_path, **kwargs)

    return _replace(manager.TaskManager, "__init__", init)


# -- 8. without_lm_eval_tasks ----------------------------------------------------------------------
# lm-eval's ``TaskManager`` reads the YAMLs of its thousands of tasks before it loads any (about 14
# s of CPU); a run of this package's tasks needs none of them.
# ``TaskManager(include_defaults=False)`` exists since issue #1801 asked for it, but ``lm_eval run``
# has no flag for it, so while a ``wsc-tasks run`` of only our tasks lasts, it is the default.
# Undone when the block ends.
@contextlib.contextmanager
def without_lm_eval_tasks() -> Iterator[None]:
    """While the block runs, a ``TaskManager`` indexes only the folders it is given."""
    from lm_eval.tasks import manager

    init_before = manager.TaskManager.__init__

    def init(self: object, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("include_defaults", False)
        init_before(self, *args, **kwargs)

    manager.TaskManager.__init__ = init
    try:
        yield
    finally:
        manager.TaskManager.__init__ = init_before


# -- 9. refuse_unserved_requests -------------------------------------------------------------------
# Not a bug of lm-eval: an extension it has no hook for. lm-eval 0.4 runs each request type as
# ``getattr(lm, request_type)(requests)``, whichever of model and tasks it built first; the masked
# family's ``mlm_score`` is no method of lm-eval's ``LM``, so a masked LM under ``--model hf``
# would end in ``AttributeError: 'HFLM' object has no attribute 'mlm_score'``. ``LM`` gets a
# method for every request type of ours it lacks that refuses with the command to use instead;
# ``hf-mlm`` defines its own. If lm-eval ever defines such a method itself, this stops applying
# (``tests/test_patches.py`` then fails).
def _refusal(family: families.Family) -> Callable[..., Any]:
    def refuse(self: Any, requests: list[Any], *args: Any, **kwargs: Any) -> Any:
        tasks = sorted({str(r.task_name) for r in requests if r.task_name}) or ["?"]
        raise ScoringError(
            f"task {', '.join(tasks)}: the model is a {family.name} language model; "
            f"{type(self).__name__} does not serve its {family.request_type} requests: run it "
            f"as --model {family.model} (wsc-tasks run --model {family.model} --model_args "
            "pretrained=...)"
        )

    refuse.__name__ = family.request_type
    setattr(refuse, _MARK, True)
    return refuse


def refuse_unserved_requests() -> None:
    """Give lm-eval's ``LM`` a refusing method for every request type of ours it lacks.

    lm-eval 0.4 runs each request type as ``getattr(lm, request_type)(requests)``; without this,
    a masked LM under ``--model hf`` would end in ``AttributeError: 'HFLM' object has no
    attribute 'mlm_score'``. Our own models (``hf-mlm``) define the method and are unaffected.
    """
    from lm_eval.api.model import LM

    for family in families.FAMILIES.values():
        if not hasattr(LM, family.request_type):
            setattr(LM, family.request_type, _refusal(family))


# -- 10. warn_unkeyed_request_cache ----------------------------------------------------------------
# lm-eval's ``--use_cache PATH`` (``CachingLM``, a SQLite file ``PATH_rank<r>.db``) keys each answer
# by the request alone (``hash_args``: request type and arguments), not by the model (upstream
# issues #2715 and #4063): a second model, or new weights saved at the same path, run with the
# same PATH reads the first one's log-likelihoods as its own, and the log only says
# ``Cached requests: N, Requests remaining: 0``. ``wsc-tasks run`` (and the sweep) add the model's
# fingerprint (``harness.fingerprint.cache_key``) to PATH and mark that path here; a plain
# ``lm_eval --use_cache`` run of this package's tasks gets one warning. Upstream, ``CachingLM``
# could hash the model's identity into every key.
_KEYED_CACHES: set[str] = set()
_warned_caches: set[str] = set()


def mark_cache_keyed(prefix: str) -> None:
    """``--use_cache`` paths under ``prefix`` are keyed by the model: no warning for them."""
    _KEYED_CACHES.add(prefix)


def _tasks_of(task_dict: Any) -> Iterator[Any]:
    for value in (task_dict or {}).values() if isinstance(task_dict, dict) else ():
        yield from _tasks_of(value) if isinstance(value, dict) else (value,)


def warn_unkeyed_request_cache(lm: Any, task_dict: Any) -> None:
    """Warn once per cache file when ``lm`` is lm-eval's request cache, not keyed by the model,
    and one of this package's tasks is about to read it."""
    from lm_eval.api.model import CachingLM

    if not isinstance(lm, CachingLM) or not any(map(is_our_task, _tasks_of(task_dict))):
        return
    db = str(lm.cache_db)
    if db in _warned_caches or any(db.startswith(prefix) for prefix in _KEYED_CACHES):
        return
    _warned_caches.add(db)
    line = (
        f"wsc_tasks: lm-eval's request cache {db} (--use_cache) is keyed by the request alone, "
        "not by the model: another model, or new weights at the same path, run with the same "
        "--use_cache reads these answers as its own; give each model its own --use_cache path, "
        "or run `wsc-tasks run`, which keys the path by the model"
    )
    log.warning(line)


# -- 11. request_cache_tag -------------------------------------------------------------------------
# lm-eval's ``--cache_requests`` saves each task's built requests in a file named by the task,
# few-shot count, rank, world size, chat template, system prompt and the model's tokenizer name
# (``Task.build_all_requests``), not by the task's metadata. This package's requests depend on it
# (``scoring``, ``headline``, the tokenizer named by ``pretrained=``/``tokenizer=``): a run with
# other ``--metadata`` read the requests of the first, sent them all to the model, then failed in
# ``zip()`` (fewer requests than its methods need), or scored the wrong ones. This package's tasks
# pass ``tokenizer_name`` with a tag of their metadata, the files it names and this package's
# version (``tokenizer_name`` is used for that file name only), so each setup has its own file.
# No upstream issue found; upstream, the cache name could include the task config's metadata.
def request_cache_tag(task_metadata: dict[str, Any] | None) -> str:
    """16 hex digits that change with the metadata, the model files it names, and the package."""
    import hashlib
    import json

    from wsc_tasks.harness.fingerprint import model_fingerprint
    from wsc_tasks.paths import MODEL_FILE_ARGS

    meta = dict(task_metadata or {})
    named = ",".join(f"{key}={meta[key]}" for key in MODEL_FILE_ARGS if meta.get(key))
    try:
        package = metadata.version("wsc-tasks")
    except metadata.PackageNotFoundError:  # a source checkout on sys.path
        package = "source"
    identity = {"metadata": meta, "files": model_fingerprint(named), "wsc_tasks": package}
    text = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- 12. check_served_logprobs ---------------------------------------------------------------------
# Not a bug of lm-eval's code: of what it trusts. Its API models (``local-completions``,
# ``openai-completions``, ``sglang-generate``, ``gguf``) sum the prompt log-probabilities a server
# echoes as they come, and check nothing (upstream #1949 asks whether servers' echoes are
# compatible at all); llama-cpp-python 0.3.36's server echoes the next token's log-probabilities,
# and the run ends with plausible metrics that mean nothing. Before lm-eval's ``evaluate`` sends
# anything, a run of our tasks on such a model first has ``served.preflight`` compare the
# server's echo with its generation path (once per model object) and stop with one line if they
# disagree; the outcome goes into the results (``served.RESULTS_KEY``). lm-eval's CLI merges
# ``--model_args`` into the tasks' metadata, which is where ``logprob_check=false`` is read, and
# its API models ignore model arguments they do not know; ``tests/test_patches.py`` checks all
# three (unchecked echo, merged arguments, ignored argument).
CHECK_MARK = "_wsc_tasks_patch_check_served_logprobs"


def our_tasks_metadata(task_dict: Any) -> list[tuple[str, dict[str, Any]]]:
    """(name, metadata) of this package's tasks among those lm-eval's ``evaluate`` was given."""
    tasks = task_dict.get("tasks", {}) if isinstance(task_dict, dict) else {}
    return [
        (str(name), dict(task.config.metadata or {}))
        for name, task in tasks.items()
        if is_our_task(task)
    ]


def check_served_logprobs() -> bool:
    """Run ``served.preflight`` at the start of lm-eval's ``evaluate``; True if patched now."""
    from lm_eval import evaluator

    from wsc_tasks.harness import served

    evaluate_before = evaluator.evaluate

    @functools.wraps(evaluate_before)
    def evaluate(lm: Any, *args: Any, **kwargs: Any) -> Any:
        task_dict = kwargs.get("task_dict", args[0] if args else None)
        ours = our_tasks_metadata(task_dict)
        outcome = served.preflight(lm, ours) if ours else None
        results = evaluate_before(lm, *args, **kwargs)
        if outcome is not None and isinstance(results, dict):
            results[served.RESULTS_KEY] = outcome
        return results

    return _replace(evaluator, "evaluate", evaluate, CHECK_MARK)


# -- 13. tasks_meet_the_model ----------------------------------------------------------------------
# Not a bug of lm-eval: an ordering it has no hook for. lm-eval builds the tasks before it hands
# them a model, and its CLI (and ``simple_evaluate`` without a ``TaskManager``) merges the model
# arguments into every task's metadata, while ``simple_evaluate(..., task_manager=...)`` and
# ``evaluate(lm, task_dict)`` do not: a task would see the tokenizer from one entry point and not
# from another. Before any request is built, ``evaluate`` now hands each of our tasks the model
# (``TaskConventions.meet_model``: the plan settled from the model when the metadata names no
# tokenizer, see ``model_facts``) and the keys that came from the run's model arguments, read from
# ``simple_evaluate``'s own ``model_args`` while it runs (the only record of which metadata keys
# are model arguments, so that a misspelt key can be told from one). Its ``metadata`` argument,
# which lm-eval ignores when a ``task_manager`` is given, is checked against the tasks' metadata.
def simple_evaluate_arguments() -> dict[str, Any] | None:
    """``model_args``, ``metadata`` and ``task_manager`` of the running ``simple_evaluate``;
    None outside it (``evaluate`` called directly)."""
    import inspect

    from lm_eval import evaluator

    code = inspect.unwrap(original(evaluator, "simple_evaluate")).__code__
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    if frame is None:
        return None
    names = ("model_args", "metadata", "task_manager")
    return {name: frame.f_locals.get(name) for name in names}


def model_argument_keys(model_args: Any) -> frozenset[str]:
    """The keys of ``simple_evaluate``'s ``model_args`` (a ``k=v,…`` string or a mapping)."""
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string

        return frozenset(simple_parse_args_string(model_args))
    return frozenset(model_args) if isinstance(model_args, dict) else frozenset()


def meet_the_model(lm: Any, task_dict: Any) -> None:
    """Hand each of our tasks in ``task_dict`` the model and the run's model-argument keys."""
    from lm_eval.api.task import Task

    run = simple_evaluate_arguments() or {}
    keys = model_argument_keys(run.get("model_args"))
    every = [t for t in _tasks_of(task_dict) if isinstance(t, Task)]
    tasks = [t for t in every if is_our_task(t) and hasattr(t, "meet_model")]
    shared = len(tasks) < len(every)  # other packages' tasks read the same metadata
    given = run.get("metadata") or {}
    if run.get("task_manager") is not None and isinstance(given, dict):
        for task in tasks:
            requested = task._requested
            ignored = sorted(k for k, v in given.items() if k not in requested or requested[k] != v)
            if ignored:
                raise ScoringError(
                    f"task {task.config.task}: simple_evaluate(metadata=...) is not used by "
                    f"lm-eval when a task_manager is given ({', '.join(ignored)}); pass it as "
                    "TaskManager(include_path=..., metadata=...)"
                )
    for task in tasks:
        task.meet_model(lm, keys, shared)


# -- 14. leave_out_undefined_metrics ---------------------------------------------------------------
# lm-eval stores and prints whatever an aggregation returns, NaN included ("NaN ± nan"), and then
# ``simple_evaluate`` and ``evaluate`` on the same documents no longer compare equal (NaN != NaN).
# A metric of ours with no value on the documents evaluated (a share with nothing to count, e.g.
# the non-associative schemas among the first 5 documents) is left out of the results instead,
# with a note naming it and why (``TaskConventions.why_undefined``; ``notes``). Part of section 2's
# replacement. No upstream issue found; upstream, an aggregation could return "undefined" with a
# reason.
def leave_out_undefined(task: Any, aggregated: dict[str, Any], raw_metrics: dict) -> None:
    from wsc_tasks.harness import notes

    why: dict[str, list[str]] = {}
    for (metric, filter_key), items in raw_metrics.items():
        value = aggregated.get(f"{metric},{filter_key}")
        if not (isinstance(value, float) and math.isnan(value)):
            continue
        del aggregated[f"{metric},{filter_key}"]
        aggregated.pop(f"{metric}_stderr,{filter_key}", None)
        reason = task.why_undefined(metric, items) if hasattr(task, "why_undefined") else ""
        where = task.documents_evaluated(len(items)) if hasattr(task, "why_undefined") else ""
        why.setdefault(f"{reason or 'undefined'} in {where or 'these documents'}", []).append(
            metric
        )
    for reason, metrics in why.items():
        notes.add(task, f"{', '.join(metrics)} not reported: {reason}")


# -- 15. explain_chat_template_advice --------------------------------------------------------------
# ``simple_evaluate`` warns for any model whose arguments contain "inst" or "chat" (the embedded
# SmolLM2-135M-Instruct among them) that the chat template is not applied and recommends
# ``--apply_chat_template``, which these tasks refuse (``flags``): they score each option's
# sentence by log-likelihood with no prompt, so there is nothing to put in a chat turn. The advice
# is replaced by that explanation, in the same WARNING record (a logging filter, not a code patch:
# if lm-eval rewords its advice, the original shows again and tests/test_patches.py fails). No
# upstream issue found; upstream, a task could declare that it takes no chat template.
EVALUATOR_LOGGER = "lm_eval.evaluator"
CHAT_ADVICE = "appears to be an instruct or chat variant but chat template is not applied"
CHAT_EXPLANATION = (
    "wsc_tasks: the model looks like an instruct or chat model; these tasks score each option's "
    "sentence by log-likelihood with no prompt, so no chat template applies to them "
    "(--apply_chat_template is refused while they run; run other tasks that need it separately)"
)


class ChatTemplateAdvice(logging.Filter):
    """Rewrites lm-eval's chat-template advice as the reason it does not apply here."""

    def filter(self, record: logging.LogRecord) -> bool:
        if CHAT_ADVICE in record.getMessage():
            record.msg, record.args = CHAT_EXPLANATION, ()
        return True


def explain_chat_template_advice() -> bool:
    """Section 15, once per process; True if the filter was added now."""
    logger = logging.getLogger(EVALUATOR_LOGGER)
    if any(isinstance(f, ChatTemplateAdvice) for f in logger.filters):
        return False
    logger.addFilter(ChatTemplateAdvice())
    return True


# -- 16. print_counts_as_integers ------------------------------------------------------------------
# lm-eval's printed table writes every value of the Value column with the column's precision, so a
# count of ours reads "266.0000" (and "± N/A", an error it does not have) beside the accuracies.
# The table lm-eval prints is rewritten, for the rows of this package's count metrics with a whole
# value: the number as an integer, right-aligned in its cell, no ± and no stderr. Only the text is
# changed; the results files keep lm-eval's values. No upstream issue found; upstream, a metric
# could carry its number format.
def is_count_row(metric: str) -> bool:
    """A row of lm-eval's table whose metric is one of this package's counts."""
    from wsc_tasks.metrics import registry

    key = registry.Key.parse(metric)
    return key is not None and key.metric.kind == "count"


def integer_counts(table: str) -> str:
    """``table`` (lm-eval's Markdown) with the whole values of count rows written as integers."""
    lines = table.split("\n")
    for i, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) != 11 or not is_count_row(cells[5].strip()):
            continue
        value = cells[7].strip()
        if not re.fullmatch(r"\d+(\.0*)?", value):  # 80.0000, or 5 (an int count)
            continue
        cells[7] = value.split(".")[0].rjust(len(cells[7]))
        if cells[9].strip() == "N/A":
            cells[8], cells[9] = " " * len(cells[8]), " " * len(cells[9])
        lines[i] = "|".join(cells)
    return "\n".join(lines)


def print_counts_as_integers() -> bool:
    """Section 16, once per process; True if ``make_table`` was wrapped now."""
    from lm_eval import utils

    make_table_original = utils.make_table

    @functools.wraps(make_table_original)
    def make_table(*args: Any, **kwargs: Any) -> str:
        return integer_counts(make_table_original(*args, **kwargs))

    return _replace(utils, "make_table", make_table)


# -- 17. score_per_batch ---------------------------------------------------------------------------
# ``HFLM._loglikelihood_tokens`` builds one tensor per request (``torch.tensor`` for its input and
# again for its continuation), then, per request, slices, takes the argmax, compares, gathers, sums
# and reads the answer back to the host (``float``, ``bool``): two small device syncs per request,
# 43,745 distinct requests for ``wsc_group``. For a causal model it now does the same per forward
# call: the padded inputs as one tensor, lm-eval's one log-softmax, one gather of every scored
# token (continuations of cache hits included, each from its own last positions, as section 1),
# one argmax comparison with the continuation tokens, and one transfer to the host; each request's
# sum is then taken on the host, in the log-softmax dtype, over its own tokens as a ``[k, n]``
# block of requests of the same length (bitwise the ``[1, n]`` sum lm-eval takes, on a CPU; on a
# GPU within the rounding of a reduction order). Batches, their order, the cache hook and the
# results' order are lm-eval's. Sequence-to-sequence models, subclasses that select other logits
# (``_select_cont_toks``) and ``WSC_TASKS_PER_REQUEST_SCORING=1`` keep lm-eval's own loop. No
# upstream issue found; upstream, ``_loglikelihood_tokens`` could score each batch this way.
PER_REQUEST_ENV = "WSC_TASKS_PER_REQUEST_SCORING"  # 1: lm-eval's own per-request loop


def _scores_per_batch(lm: Any) -> bool:
    """Whether section 17's per-batch scoring serves ``lm`` (else lm-eval's own loop)."""
    import os

    from lm_eval.models.huggingface import HFLM

    return (
        getattr(lm, "backend", None) == "causal"
        and type(lm)._select_cont_toks is HFLM._select_cont_toks
        and os.environ.get(PER_REQUEST_ENV, "") in ("", "0")
    )


def batch_answers(
    log_probs: Any, rows: Sequence[int], starts: Sequence[int], conts: Sequence[Sequence[int]]
) -> list[tuple[float, bool]]:
    """(sum of log-probabilities, greedy) of each continuation ``conts[i]``, scored at positions
    ``starts[i]…`` of row ``rows[i]`` of ``log_probs`` ([batch, positions, vocab]): one gather,
    one argmax comparison and one transfer to the host for all of them."""
    import torch

    by_length: dict[int, list[int]] = {}
    for i, cont in enumerate(conts):
        by_length.setdefault(len(cont), []).append(i)
    flat_rows: list[int] = []
    flat_positions: list[int] = []
    flat_targets: list[int] = []
    for n, members in by_length.items():  # tokens grouped by length: each group a [k, n] block
        for i in members:
            flat_rows += [rows[i]] * n
            flat_positions += range(starts[i], starts[i] + n)
            flat_targets += conts[i]
    index = torch.tensor([flat_rows, flat_positions, flat_targets], dtype=torch.long)
    index = index.to(log_probs.device)
    picked = log_probs[index[0], index[1], index[2]]
    greedy = log_probs.argmax(dim=-1)[index[0], index[1]] == index[2]
    host = torch.stack([picked, greedy.to(picked.dtype)]).cpu()  # the one transfer
    answers: list[tuple[float, bool]] = [(0.0, False)] * len(conts)
    offset = 0
    for n, members in by_length.items():
        block = host[:, offset : offset + n * len(members)].reshape(2, len(members), n)
        sums, matches = block[0].sum(dim=1).tolist(), (block[1] == 1).all(dim=1).tolist()
        for i, total, match in zip(members, sums, matches, strict=True):
            answers[i] = (float(total), bool(match))
        offset += n * len(members)
    return answers


def score_per_batch() -> bool:
    """Section 17; True if ``HFLM._loglikelihood_tokens`` was replaced now."""
    from lm_eval.models.huggingface import HFLM

    per_request = HFLM._loglikelihood_tokens

    def _loglikelihood_tokens(
        self: Any, requests: list[Any], disable_tqdm: bool = False, override_bs: int | None = None
    ) -> list[tuple[float, bool]]:
        if not _scores_per_batch(self):
            return per_request(self, requests, disable_tqdm, override_bs)
        return _batched_loglikelihood_tokens(self, requests, disable_tqdm, override_bs)

    return _replace(HFLM, "_loglikelihood_tokens", _loglikelihood_tokens)


def _batched_loglikelihood_tokens(
    lm: Any, requests: list[Any], disable_tqdm: bool, override_bs: int | None
) -> list[tuple[float, bool]]:
    """lm-eval 0.4.13's ``HFLM._loglikelihood_tokens`` for a causal model, scored per batch."""
    import torch
    import torch.nn.functional as F
    from lm_eval.models.huggingface import eval_logger
    from lm_eval.models.utils import Collator
    from tqdm import tqdm

    re_ord = Collator(
        requests,
        sort_fn=lambda req: (-len(req[1] + req[2]), tuple(req[1] + req[2])),
        group_by="contexts" if lm.logits_cache else None,
        group_fn=lambda req: req[-2] + req[-1][:-1],
    )
    n_reordered = len(re_ord)
    batch_size = (
        lm.batch_size if lm.batch_size != "auto" else override_bs if override_bs is not None else 0
    )
    batch_fn = (
        lm._batch_scheduler
        if lm.batch_size == "auto" and n_reordered > 0 and not override_bs
        else None
    )
    if batch_fn is not None:
        lm.batch_sizes = {}  # as lm-eval: detect again for these requests
    pbar = tqdm(
        total=len(requests),
        disable=(disable_tqdm or (lm.rank != 0)),
        desc="Running loglikelihood requests",
    )
    res: list[tuple[float, bool]] = []
    placeholder = torch.zeros(1, 1, 1)  # get_cache's logits: only its bookkeeping is used here
    for chunk in re_ord.get_batched(n=batch_size, batch_fn=batch_fn):
        inputs = []
        for _, context_enc, continuation_enc in chunk:
            assert len(context_enc) > 0
            assert len(continuation_enc) > 0
            assert len(continuation_enc) <= lm.max_length
            total_length = len(context_enc) + len(continuation_enc)
            if total_length > lm.max_length + 1:
                eval_logger.warning(
                    f"Combined length of context ({len(context_enc)}) and continuation "
                    f"({len(continuation_enc)}) exceeds model's maximum length "
                    f"({lm.max_length}). Truncating {total_length - lm.max_length + 1} tokens "
                    "from the left."
                )
            inputs.append((context_enc + continuation_enc)[-(lm.max_length + 1) :][:-1])
        width = max(map(len, inputs))
        padded = [ids + [0] * (width - len(ids)) for ids in inputs]  # lm-eval's right padding
        batched = torch.tensor(padded, dtype=torch.long).to(lm.device)
        log_probs = F.log_softmax(lm._model_call(batched), dim=-1, dtype=lm.softmax_dtype)
        shift = log_probs.shape[1] - width  # virtual tokens before the input, as lm-eval allows
        rows, starts, conts, keys = [], [], [], []
        for row, ((request_str, ctx_tokens, cont_tokens), ids) in enumerate(
            zip(chunk, inputs, strict=True)
        ):
            end = len(ids) + shift
            for key, cont, _ in re_ord.get_cache(
                req_str=request_str, cxt_toks=ctx_tokens, cont_toks=cont_tokens, logits=placeholder
            ):
                rows.append(row)
                starts.append(end - len(cont))  # each continuation's own last positions
                conts.append(list(cont))
                keys.append(key)
        for key, answer in zip(keys, batch_answers(log_probs, rows, starts, conts), strict=True):
            res.append(answer)
            if key is not None:
                lm.cache_hook.add_partial("loglikelihood", key, answer)
        pbar.update(len(keys))
    pbar.close()
    return re_ord.get_original(res)


check_lm_eval_version()
