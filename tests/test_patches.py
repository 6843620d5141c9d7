"""The lm-eval patches of ``wsc_tasks.lm_eval_fixes``: what each fixes, end to end where that
needs a model or this package's tasks. That the installed lm-eval, unpatched, still behaves as
each patch says is each module's own check (``Patch.still_needed``), run for every patch by
``tests/test_patch_checks.py``; the tests here named ``test_lm_eval_still_*`` show what a patch
relies on in lm-eval beyond it."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from types import SimpleNamespace

import lm_eval
import pytest
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from wsc_tasks import lm_eval_fixes as patches
from wsc_tasks.lm_eval_fixes.p10_warn_unkeyed_request_cache import constant_lm
from wsc_tasks.lm_eval_fixes.p15_explain_chat_template_advice import LONG_PATH
from wsc_tasks.metrics import ratios

slow = pytest.mark.slow

SHORT = [  # partial scoring of a Winograd problem: context up to the answer
    ("Frank felt vindicated when his rival Bill revealed that Frank", " was the winner."),
    ("Frank felt vindicated when his rival Bill revealed that Bill", " was the winner."),
]
LONG = [  # the same two sentences, split after the key word (inverted problem)
    ("Frank felt vindicated", " when his rival Bill revealed that Frank was the winner."),
    ("Frank felt vindicated", " when his rival Bill revealed that Bill was the winner."),
]


def _lls(lm, pairs):
    return [r[0] for r in lm.loglikelihood([Instance("loglikelihood", {}, p, 0) for p in pairs])]


@slow
def test_shared_sentence_split_twice_scores_as_alone(tiny_gpt2_dir):
    patches.apply()
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=1)
    alone = _lls(lm, SHORT)
    mixed = _lls(lm, SHORT + LONG)
    assert mixed[:2] == alone
    assert mixed[2:] == _lls(lm, LONG)
    assert alone[0] != alone[1]


def test_apply_is_idempotent():
    patches.apply()
    assert patches.apply() is False


def test_distinct_keeps_first_seen_order():
    requests = [Instance("loglikelihood", {}, p, 0) for p in [*SHORT, SHORT[0], *LONG, SHORT[1]]]
    unique, where = patches.distinct(requests)
    assert [r.args for r in unique] == [*SHORT, *LONG]
    assert where == [0, 1, 0, 2, 3, 1]


def test_each_distinct_request_sent_once_and_results_fanned_out():
    sent = []

    def loglikelihood(requests):
        sent.append([r.args for r in requests])
        return [(float(len(r.args[1])), False) for r in requests]

    pairs = [*SHORT, *SHORT, LONG[0]]
    results = patches.deduplicated(loglikelihood)(
        [Instance("loglikelihood", {}, p, 0) for p in pairs]
    )
    assert sent == [[*SHORT, LONG[0]]]
    assert results == [(float(len(c)), False) for _, c in pairs]


@slow
def test_deduplicated_batch_tokenized_requests_score_as_lm_eval(tiny_gpt2_dir):
    patches.apply()
    pairs = [*SHORT, *LONG, SHORT[0], ("Frank felt vindicated ", "when his rival Bill won.")]
    requests = [Instance("loglikelihood", {}, p, 0) for p in pairs]
    plain = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    expected = [r[0] for r in plain.loglikelihood(requests)]  # each text encoded on its own
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    found = [r[0] for r in patches.deduplicated(lm.loglikelihood)(requests)]
    assert found == expected
    memo = lm._wsc_tasks_token_memo
    assert ("Frank felt vindicated", None) in memo  # the trailing space moved, as lm-eval does
    assert all(ids == lm.tokenizer.encode(text) for (text, _), ids in memo.items())


@slow
def test_texts_the_tasks_encoded_are_not_encoded_again_for_lm_eval(tiny_gpt2_dir, monkeypatch):
    """Section 4 takes the encodings of a task's token counter whose tokenizer encodes alike (as
    the CLI's tasks load their own from the model's name) and asks the model's tokenizer only
    for the other texts; a counter of another tokenizer is not used; the scores do not change."""
    from transformers import AutoTokenizer

    from wsc_tasks.lm_eval_fixes import p04_remember_tokens
    from wsc_tasks.scoring.tokens import TokenCounter, same_encoding

    patches.apply()
    pairs = [*SHORT, *LONG]
    requests = [Instance("loglikelihood", {}, p, 0) for p in pairs]
    expected = _lls(HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2), pairs)
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    tasks = TokenCounter(AutoTokenizer.from_pretrained(tiny_gpt2_dir), lm.add_bos_token)
    other = AutoTokenizer.from_pretrained(tiny_gpt2_dir, add_prefix_space=True)
    stray = TokenCounter(other, lm.add_bos_token)
    assert same_encoding(tasks.tokenizer, lm.tokenizer) and tasks.tokenizer is not lm.tokenizer
    assert not same_encoding(other, lm.tokenizer)
    tasks.n_continuation(*SHORT[0])  # a task counts the first request's tokens
    stray.n_continuation(*SHORT[1])  # with a tokenizer that splits words otherwise
    asked: list[str] = []
    batch_encode = p04_remember_tokens.batch_encode

    def recording(tokenizer, texts, *args, **kwargs):
        asked.extend(texts)
        return batch_encode(tokenizer, texts, *args, **kwargs)

    monkeypatch.setattr(p04_remember_tokens, "batch_encode", recording)
    found = [r[0] for r in patches.deduplicated(lm.loglikelihood, [stray, tasks])(requests)]
    assert found == expected
    context, continuation = SHORT[0]
    assert context not in asked and context + continuation not in asked
    assert SHORT[1][0] in asked and LONG[0][0] in asked  # not the stray counter's encodings
    memo = lm._wsc_tasks_token_memo
    assert memo[(context, None)] == list(tasks.known(context, tasks.add_special_tokens))
    assert all(ids == lm.tokenizer.encode(text) for (text, _), ids in memo.items())


@slow
def test_a_counter_whose_encodings_disagree_with_the_tokenizer_is_not_used(tiny_gpt2_dir, caplog):
    """Section 4 checks a sample of a counter's encodings against the model's tokenizer before
    taking them: one that differs (here, made up) sends every text to the tokenizer again."""
    from wsc_tasks.scoring.tokens import TokenCounter

    patches.apply()
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    expected = _lls(HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2), SHORT)
    wrong = TokenCounter(lm.tokenizer, lm.add_bos_token)
    for context, continuation in SHORT:
        for text in (context, context + continuation):
            wrong._cache[(text, lm.add_bos_token)] = (1, 2, 3)
    requests = [Instance("loglikelihood", {}, p, 0) for p in SHORT]
    with caplog.at_level(logging.WARNING):
        found = [r[0] for r in patches.deduplicated(lm.loglikelihood, [wrong])(requests)]
    assert found == expected
    assert "a task's token counter encodes" in caplog.text
    assert all(ids != [1, 2, 3] for ids in lm._wsc_tasks_token_memo.values())


# -- versions --------------------------------------------------------------------------------------
def test_a_version_outside_the_range_names_each_patch():
    assert patches.version_warnings("0.4.13") == []
    for version in ("0.4.12", "0.5.0", "1.0"):
        lines = patches.version_warnings(version)
        assert len(lines) == len(patches.PATCHES)
        assert all(f"lm-eval {version} is installed" in line for line in lines)
        assert "slice_cache_hits" in lines[0] and "wsc_tasks/lm_eval_fixes/" in lines[0]


def test_an_lm_eval_outside_the_ranges_warns(monkeypatch):
    monkeypatch.setattr(patches, "installed_lm_eval", lambda: "0.5.1")
    with pytest.warns(UserWarning, match="lm-eval 0.5.1 is installed"):
        patches.check_lm_eval_version()


def test_every_patch_of_apply_is_marked_and_applied_once():
    from lm_eval import evaluator, evaluator_utils
    from lm_eval.api import metrics as lm_metrics
    from lm_eval.models.utils import Collator

    from wsc_tasks.lm_eval_fixes import p19_freeze_survivors as freeze

    patches.apply()
    assert patches.apply() is False
    for owner, name in [
        (Collator, "get_cache"), (evaluator_utils, "_compute_task_aggregations"),
        (evaluator, "evaluate"), (HFLM, "tok_encode"), (evaluator_utils, "stderr_for_metric"),
        (HFLM, "_loglikelihood_tokens"),
    ]:  # fmt: skip
        patched = getattr(owner, name)
        assert getattr(patched, patches._MARK)
        assert not getattr(patches.original(owner, name), patches._MARK, False)
    assert lm_metrics.stderr_for_metric is evaluator_utils.stderr_for_metric
    assert getattr(evaluator.evaluate, freeze.MARK)  # section 19's own mark on the same function
    filters = logging.getLogger(patches.GROUP_LOGGER).filters
    assert sum(isinstance(f, patches.ExpectedGroupGaps) for f in filters) == 1


# -- 2. aggregate_listed_metrics_only --------------------------------------------------------------
RAW = {("acc", "none"): [1.0, 0.0], ("acc_logged_only", "none"): [1.0, 1.0]}


def _task(module: str) -> object:
    from lm_eval.api.metrics import mean

    cls = type("Task", (), {"__module__": module, "task_name": "t"})
    cls.aggregation = lambda self: {"acc": mean}
    return cls()


def test_our_tasks_aggregate_only_what_they_list():
    from lm_eval import evaluator_utils

    patches.apply()
    compute = evaluator_utils._compute_task_aggregations
    ours, _ = compute(_task("wsc_tasks.tasks.schema_tasks"), RAW, bootstrap_iters=0)
    assert ours == {"acc,none": 0.5, "acc_stderr,none": "N/A"}
    theirs, _ = compute(_task("elsewhere"), RAW, bootstrap_iters=0)
    assert theirs["acc_logged_only,none"] == 1.0


# -- 3. send_distinct_requests and 4. remember_tokens ----------------------------------------------
def test_tok_encode_remembers_a_text():
    calls = []
    tokenizer = SimpleNamespace(
        encode=lambda text, **kwargs: calls.append(text) or [1, 2], decode=lambda ids: "<bos>"
    )
    lm = SimpleNamespace(tokenizer=tokenizer, add_bos_token=False, prefix_token_id=0)
    patches.apply()
    tok_encode = patches.original(HFLM, "tok_encode")
    assert tok_encode(lm, "same text") == tok_encode(lm, "same text") == [1, 2]
    assert calls == ["same text", "same text"]
    assert HFLM.tok_encode(lm, "same text") == HFLM.tok_encode(lm, "same text") == [1, 2]
    assert len(calls) == 3  # remembered


# -- 5. schema_stderr ------------------------------------------------------------------------------
def test_our_aggregations_get_a_schema_stderr():
    from lm_eval import evaluator_utils

    patches.apply()
    lookup = patches.original(evaluator_utils, "stderr_for_metric")
    assert lookup(ratios.SCHEMA_ACCURACY, 1000) is None
    assert evaluator_utils.stderr_for_metric(ratios.SCHEMA_ACCURACY, 1000) is not None


def test_a_schema_stderr_with_no_finite_replicate_is_not_available():
    """Section 5: lm-eval prints ``N/A`` for a missing error; a bootstrap whose every replicate
    is undefined gives that, not ``± nan``."""
    from lm_eval import evaluator_utils

    from wsc_tasks.metrics import registry

    patches.apply()
    undefined = registry.bind("best_threshold", lambda items: float("nan"))
    stderr = evaluator_utils.stderr_for_metric(undefined, 1000)
    assert stderr([{"x": 1}, {"x": 2}, {"x": 3}]) == "N/A"


# -- 6. drop_expected_group_gaps -------------------------------------------------------------------
def _group_gap_records(group_name: str, monkeypatch) -> list[logging.LogRecord]:
    """lm-eval's own ``Group.aggregate`` on two tasks, one without the group's metric, with our
    filter taken off its logger; the records it logged."""
    from lm_eval.api.group import Group
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.config.group import AggMetricConfig

    group = Group(group_name, aggregate_metric_list=[AggMetricConfig("acc", ["none"])])
    for name in ("with_acc", "without_acc"):
        task = ConfigurableTask.__new__(ConfigurableTask)
        task._config = SimpleNamespace(task=name)
        group.add(task)
    logger = logging.getLogger(patches.GROUP_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        group.aggregate(
            {
                "with_acc": {"acc,none": 0.5, "acc_stderr,none": 0.1, "sample_len": 4},
                "without_acc": {"pair_consistency,none": 1.0, "sample_len": 4},
            }
        )
    finally:
        logger.removeHandler(handler)
    return records


def test_the_group_filter_keeps_other_groups_and_messages(monkeypatch):
    assert "somebody_elses_group" not in patches.our_groups()
    records = _group_gap_records("somebody_elses_group", monkeypatch)
    assert any("is missing in" in r.getMessage() for r in records)
    drop = patches.ExpectedGroupGaps()
    assert all(drop.filter(r) for r in records)
    other = logging.LogRecord(
        patches.GROUP_LOGGER, logging.WARNING, "", 0, "Group 'x' ok", (), None
    )
    assert drop.filter(other)


def test_our_groups_are_the_group_yamls():
    assert "wsc_group" in patches.our_groups()


# -- 7. accept_several_include_paths ---------------------------------------------------------------
def _task_folders(tmp_path):
    folders = []
    for name in ("mine_a", "mine_b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.yaml").write_text(
            f"task: {name}\ndataset_path: json\noutput_type: loglikelihood\n"
            "test_split: test\ndoc_to_text: x\ndoc_to_target: y\n"
        )
        folders.append(str(folder))
    return folders


def test_include_path_names_several_folders(tmp_path):
    import os

    from lm_eval.tasks import manager

    patches.accept_several_include_paths()
    assert patches.accept_several_include_paths() is False
    joined = os.pathsep.join(_task_folders(tmp_path))
    unpatched = manager.TaskManager.__new__(manager.TaskManager)
    init = patches.original(manager.TaskManager, "__init__")
    init(unpatched, include_path=joined, include_defaults=False)
    assert "mine_a" not in unpatched.all_tasks
    patched = manager.TaskManager(include_path=joined, include_defaults=False)
    assert {"mine_a", "mine_b"} <= set(patched.all_tasks)


# -- 8. without_lm_eval_tasks ----------------------------------------------------------------------
def test_without_lm_eval_tasks_indexes_only_the_given_folders(tmp_path):
    from lm_eval.tasks import manager

    before = manager.TaskManager.__init__
    folders = _task_folders(tmp_path)
    with patches.without_lm_eval_tasks():
        tasks = set(manager.TaskManager(include_path=folders).all_tasks)
    assert tasks == {"mine_a", "mine_b"}
    assert manager.TaskManager.__init__ is before


# -- 9. refuse_unserved_requests -------------------------------------------------------------------
def test_our_request_types_are_refused_on_lm_evals_lm():
    """Section 9: after ``apply()`` lm-eval's ``LM`` has this package's refusal for each request
    type of ours (the day lm-eval defines one itself, ``Patch.still_needed`` of p09 fails)."""
    from lm_eval.api.model import LM

    from wsc_tasks.scoring import families

    patches.apply()
    ours = {f.request_type for f in families.FAMILIES.values()} - {"loglikelihood"}
    assert ours, "a family with its own request type (masked: mlm_score) is expected"
    for request_type in sorted(ours):
        method = getattr(LM, request_type)
        assert getattr(method, patches._MARK, False), (
            f"lm-eval's LM defines {request_type} itself now: patch p09 can go"
        )


# -- 10. warn_unkeyed_request_cache ----------------------------------------------------------------
def test_an_unkeyed_request_cache_of_our_tasks_warns_once(tmp_path, caplog):
    from lm_eval.api.model import CachingLM

    ours, theirs = _task("wsc_tasks.tasks.schema_tasks"), _task("lm_eval.api.task")
    plain = CachingLM(constant_lm(-1.0), str(tmp_path / "plain_rank0.db"))
    with caplog.at_level(logging.WARNING):
        patches.warn_unkeyed_request_cache(plain, {"other": theirs})
        assert not caplog.records  # lm-eval's own tasks: not ours to warn about
        patches.warn_unkeyed_request_cache(plain, {"group": {"t": ours}})
        patches.warn_unkeyed_request_cache(plain, {"t": ours})
    [line] = [r.getMessage() for r in caplog.records]
    db = tmp_path / "plain_rank0.db"
    assert f"request cache {db} (--use_cache) is keyed by the request alone" in line
    caplog.clear()
    patches.mark_cache_keyed(str(tmp_path / "keyed_0123456789abcdef"))
    keyed = CachingLM(constant_lm(-1.0), str(tmp_path / "keyed_0123456789abcdef_rank0.db"))
    with caplog.at_level(logging.WARNING):
        patches.warn_unkeyed_request_cache(keyed, {"t": ours})
        patches.warn_unkeyed_request_cache(constant_lm(-1.0), {"t": ours})  # no cache at all
    assert not caplog.records


# -- 11. request_cache_tag -------------------------------------------------------------------------
def _cache_names(task, method, monkeypatch) -> list[str]:
    """The request-cache file names ``method`` asks lm-eval for (nothing is read or written)."""
    from lm_eval.api import task as lm_task

    names: list[str] = []
    monkeypatch.setattr(
        lm_task, "load_from_cache", lambda file_name, cache: names.append(file_name)
    )
    monkeypatch.setattr(lm_task, "save_to_cache", lambda file_name, obj: None)
    method(task, limit=2, cache_requests=True)
    return names


def _loaded(task_manager, **metadata) -> object:
    return task_manager(**metadata).load(["wsc266_associative"])["tasks"]["wsc266_associative"]


def test_our_request_cache_is_named_by_the_metadata(
    data_dir, monkeypatch, tiny_gpt2_dir, task_manager
):
    from lm_eval.api.task import ConfigurableTask

    tokenizer = {"tokenizer": str(tiny_gpt2_dir)}  # requests built here without a model
    partial, every = (
        _loaded(task_manager, scoring="partial", **tokenizer),
        _loaded(task_manager, scoring="all", **tokenizer),
    )
    theirs = [_cache_names(t, ConfigurableTask.build_all_requests, monkeypatch) for t in (
        partial, every)]  # fmt: skip
    assert theirs[0] == theirs[1]  # lm-eval's own name: one file for both
    ours = [_cache_names(t, type(t).build_all_requests, monkeypatch) for t in (partial, every)]
    assert ours[0] != ours[1] and all("-wsc_tasks" in name[0] for name in ours)
    again = _cache_names(_loaded(task_manager, scoring="partial", **tokenizer),
                         type(partial).build_all_requests, monkeypatch)  # fmt: skip
    assert again == ours[0]  # the same setup finds its own file again


def test_the_request_cache_tag_follows_metadata_and_named_files(tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    tag = patches.request_cache_tag({"tokenizer": str(folder)})
    assert tag == patches.request_cache_tag({"tokenizer": str(folder)})
    assert tag != patches.request_cache_tag({"tokenizer": str(folder), "headline": "partial"})
    (folder / "tokenizer.json").write_text('{"changed": 1}')
    assert tag != patches.request_cache_tag({"tokenizer": str(folder)})


# -- 12. check_served_logprobs -------------------------------------------------------------------
def test_lm_eval_still_merges_model_args_into_metadata_and_ignores_unknown_ones(tiny_gpt2_dir):
    """What section 12 relies on: ``logprob_check=false`` in ``--model_args`` reaches the tasks'
    metadata (lm-eval's CLI merges the model arguments in), and lm-eval's API models accept it
    and ignore it (their ``**kwargs``)."""
    from lm_eval.config.evaluate_config import EvaluatorConfig
    from lm_eval.models.gguf import GGUFLM
    from lm_eval.models.openai_completions import LocalCompletionsAPI
    from lm_eval.utils import simple_parse_args_string

    args = simple_parse_args_string("model=m,logprob_check=false")
    assert args["logprob_check"] is False
    config = EvaluatorConfig(model_args=args, metadata={"scoring": "all"})
    config._process_arguments()
    assert config.metadata == {"model": "m", "logprob_check": False, "scoring": "all"}
    LocalCompletionsAPI(base_url="http://127.0.0.1:9/v1/completions", tokenizer=str(tiny_gpt2_dir),
                        tokenizer_backend="huggingface", logprob_check=False)  # fmt: skip
    GGUFLM(base_url="http://127.0.0.1:9", logprob_check=False)


def test_the_check_wraps_evaluate_once_beside_section_3():
    from lm_eval import evaluator

    patches.apply()
    assert patches.check_served_logprobs() is False
    assert getattr(evaluator.evaluate, patches.CHECK_MARK)
    assert getattr(evaluator.evaluate, patches._MARK)
    lm_evals = inspect.signature(patches.original(evaluator, "evaluate"))
    assert list(lm_evals.parameters)[:2] == ["lm", "task_dict"]


# -- 14. leave_out_undefined_metrics ---------------------------------------------------------------
def _undefined_task(module: str) -> object:
    cls = type("Task", (), {"__module__": module, "task_name": "t"})
    cls.aggregation = lambda self: {"acc": lambda items: float("nan")}
    cls.config = SimpleNamespace(task="t", metadata={})
    cls.why_undefined = lambda self, metric, items: "no problem"
    cls.documents_evaluated = lambda self, n: f"the first {n} of its 9 documents (--limit)"
    return cls()


def test_our_undefined_metric_is_left_out_with_a_note():
    from lm_eval import evaluator_utils

    patches.apply()
    task = _undefined_task("wsc_tasks.tasks.schema_tasks")
    aggregated, _ = evaluator_utils._compute_task_aggregations(task, {("acc", "none"): [1, 2]}, 0)
    assert aggregated == {}
    assert task.config.metadata["notes"] == [
        "acc not reported: no problem in the first 2 of its 9 documents (--limit)"
    ]


# -- 15. explain_chat_template_advice --------------------------------------------------------------
def _chat_advice_records(monkeypatch) -> list[logging.LogRecord]:
    """What lm-eval's ``simple_evaluate`` logs for an instruct model before it loads the model
    (an unknown model type stops it right after), with our filter taken off its logger."""
    logger = logging.getLogger(patches.EVALUATOR_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        with pytest.raises(ValueError, match="no model for this name"):
            lm_eval.simple_evaluate(
                model="no-such-model", model_args=f"pretrained={LONG_PATH}", tasks=["x"]
            )
    finally:
        logger.removeHandler(handler)
    return records


def test_lm_evals_chat_advice_becomes_the_explanation(monkeypatch):
    """Also when lm-eval wraps it across lines, as for the embedded model's long path."""
    records = _chat_advice_records(monkeypatch)
    advice = [r for r in records if patches.CHAT_ADVICE in " ".join(r.getMessage().split())]
    assert len(advice) == 1
    assert patches.CHAT_ADVICE not in advice[0].getMessage()  # wrapped inside the words
    assert "Recommend setting" in advice[0].getMessage()
    assert "`apply_chat_template`" in advice[0].getMessage()
    assert patches.ChatTemplateAdvice().filter(advice[0])  # kept, as the explanation
    assert advice[0].getMessage() == patches.CHAT_EXPLANATION
    assert advice[0].levelno == logging.INFO


def test_the_chat_advice_is_explained_in_a_run(monkeypatch, capsys):
    """``wsc-tasks run`` installs the filter before lm-eval's CLI starts: the advice to set
    ``--apply_chat_template``, which the tasks refuse, never reaches the user."""
    patches.explain_chat_template_advice()
    assert not patches.explain_chat_template_advice()  # once
    logger = logging.getLogger(patches.EVALUATOR_LOGGER)
    record = logging.LogRecord(
        patches.EVALUATOR_LOGGER, logging.WARNING, "", 0,
        f"pretrained=x-Instruct {patches.CHAT_ADVICE}. Recommend setting it.", (), None,
    )  # fmt: skip
    assert all(f.filter(record) for f in logger.filters)
    assert "Recommend" not in record.getMessage()
    other = logging.LogRecord(
        patches.EVALUATOR_LOGGER, logging.INFO, "", 0, "Setting seed", (), None
    )
    assert all(f.filter(other) for f in logger.filters) and other.getMessage() == "Setting seed"


# -- 16. print_counts_as_integers ------------------------------------------------------------------
TABLE_RESULTS = {
    "results": {
        "wsc266": {
            "acc,none": 0.61654,
            "acc_stderr,none": 0.02,
            "n_problems,none": 266,
            "n_problems_stderr,none": "N/A",
            "schema_acc,none": 0.29,
            "schema_acc_stderr,none": 0.04,
        }
    },
    "versions": {"wsc266": 1.0},
    "n-shot": {"wsc266": 0},
    "higher_is_better": {"wsc266": {"acc": True, "n_problems": None, "schema_acc": True}},
}


def _row(table: str, metric: str) -> list[str]:
    rows = (line.split("|") for line in table.splitlines())
    return next(cells for cells in rows if len(cells) > 5 and cells[5].strip() == metric)


def test_counts_print_as_integers_and_the_rest_as_lm_eval_prints_it():
    from lm_eval import utils

    patches.print_counts_as_integers()
    ours, theirs = (
        utils.make_table(TABLE_RESULTS),
        patches.original(utils, "make_table")(TABLE_RESULTS),
    )
    row = _row(ours, "n_problems")
    assert row[7].strip() == "266" and not row[8].strip() and not row[9].strip()
    assert [len(c) for c in row] == [len(c) for c in _row(theirs, "n_problems")]  # aligned
    for metric in ("acc", "schema_acc"):
        assert _row(ours, metric) == _row(theirs, metric)
    assert patches.integer_counts("|not|a|table|") == "|not|a|table|"


def test_a_count_lm_eval_prints_without_decimals_loses_its_stderr_column_too():
    """lm-eval prints some counts as ``5`` (n_pairs of wsc266_associativity), others as
    ``266.0000``; before, only the second lost its ``± N/A``."""
    line = "|wsc266_associativity|      1|none  |     0|n_pairs|   |    5|±  |   N/A|"
    [row] = patches.integer_counts(line).splitlines()
    cells = row.split("|")
    assert cells[7].strip() == "5" and not cells[8].strip() and not cells[9].strip()
    assert len(row) == len(line)


# -- 17. quiet_git_lookup --------------------------------------------------------------------------
GIT_LOOKUP = (
    "import os, sys; os.chdir(sys.argv[1]); from lm_eval import evaluator{patch}; "
    "print(evaluator.get_git_commit_hash())"
)


def _git_lookup_outside_a_checkout(tmp_path, patch: str):
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
    code = GIT_LOOKUP.format(patch=patch)
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env
    )


def test_the_git_lookup_is_quiet_and_records_the_same_value(tmp_path):
    plain = _git_lookup_outside_a_checkout(tmp_path, "")
    patch = "; from wsc_tasks.harness import patches; patches.quiet_git_lookup()"
    quiet = _git_lookup_outside_a_checkout(tmp_path, patch)
    assert "not a git repository" not in quiet.stderr
    assert "fatal" not in quiet.stderr
    assert quiet.stdout == plain.stdout  # lm-eval's fallback value, unchanged
    assert patches.quiet_git_lookup() in (True, False) and not patches.quiet_git_lookup()


# -- 18. score_per_batch ---------------------------------------------------------------------------


def _answers_per_request(log_probs, rows, starts, conts):
    """What lm-eval's loop computes for each continuation, one at a time."""
    import torch

    out = []
    for row, start, cont in zip(rows, starts, conts, strict=True):
        logits = log_probs[row, start : start + len(cont)].unsqueeze(0)
        tokens = torch.tensor(cont).unsqueeze(0)
        greedy = (logits.argmax(dim=-1) == tokens).all()
        out.append((float(torch.gather(logits, 2, tokens.unsqueeze(-1)).sum()), bool(greedy)))
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_batch_answers_are_the_per_request_answers(dtype):
    """One gather for a batch: sums bitwise equal to lm-eval's per-request sums on a CPU, and the
    greedy check true exactly where every continuation token is the argmax."""
    import torch

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 9, 11, generator=generator) * 4
    log_probs = torch.log_softmax(logits, dim=-1).to(getattr(torch, dtype))
    greedy = log_probs.float().argmax(dim=-1)
    rows = [0, 0, 1, 2, 2, 1]
    starts = [2, 5, 0, 4, 8, 3]
    conts = [
        greedy[0, 2:7].tolist(),  # all greedy
        [greedy[0, 5].item(), (greedy[0, 6].item() + 1) % 11],  # the last token is not
        [3, 1, 4, 1, 5, 9, 2, 6, 5],  # the whole row
        greedy[2, 4:5].tolist(),  # one token
        [7],
        [0, 0, 0],
    ]
    positions = [range(s, s + len(c)) for s, c in zip(starts, conts, strict=True)]
    got = patches.batch_answers(log_probs, rows, positions, conts)
    assert got == _answers_per_request(log_probs, rows, starts, conts)
    assert [g for _, g in got] == [True, False, False, True, greedy[2, 8].item() == 7, False]


def _local_winogrande(folder, data_dir):
    import yaml
    from lm_eval.tasks import TaskManager  # noqa: F401

    from wsc_tasks.data import catalog

    builtin = Path(lm_eval.__file__).parent / "tasks" / "winogrande" / "default.yaml"
    config = {
        "include": str(builtin),
        "task": "builtin_winogrande_local",
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"validation": str(data_dir / catalog.WINOGRANDE_DEV)}},
        "training_split": None,
    }
    (folder / "builtin_winogrande_local.yaml").write_text(yaml.safe_dump(config))
    return folder


@slow
def test_per_batch_scoring_equals_lm_evals_loop_on_every_task(
    tiny_gpt2_dir, data_dir, tmp_path, monkeypatch
):
    """Every request of every task of ``wsc_group`` and of lm-eval's ``winogrande`` (first 3
    documents each), fp32 on a CPU: section 18's answers (section 20's prefix sharing turned
    off) equal lm-eval's own loop's (with section 1), to 1e-6, greedy flags identical; in a run,
    through ``--model hf``."""
    from lm_eval.tasks import TaskManager

    from wsc_tasks.paths import include_path

    patches.apply()
    monkeypatch.setenv(patches.SHARING_ENV, "0")
    batched = HFLM._loglikelihood_tokens
    per_request = patches.original(HFLM, "_loglikelihood_tokens")
    compared: list[int] = []

    def both(self, requests, *args, **kwargs):
        ours = batched(self, requests, *args, **kwargs)
        theirs = per_request(self, requests, *args, **kwargs)
        assert [g for _, g in ours] == [g for _, g in theirs]
        assert [ll for ll, _ in ours] == pytest.approx([ll for ll, _ in theirs], abs=1e-6, rel=0)
        compared.append(len(requests))
        return ours

    setattr(both, patches._MARK, True)  # not wrapped again when the tasks' import applies

    manager = TaskManager(
        include_path=[str(include_path()), str(_local_winogrande(tmp_path, data_dir))],
        include_defaults=False,
    )
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=16)
    HFLM._loglikelihood_tokens = both
    try:
        lm_eval.simple_evaluate(
            model=lm,
            tasks=["wsc_group", "builtin_winogrande_local"],
            task_manager=manager,
            limit=3,
        )
    finally:
        HFLM._loglikelihood_tokens = batched
    assert compared and sum(compared) > 500


# -- 19. freeze_survivors --------------------------------------------------------------------------
class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_survivors_of_a_full_collection_are_frozen_while_the_block_runs():
    """A full collection inside the block freezes what survived it (the next walks only newer
    objects); on leaving, they are handed back, and a cycle that became garbage meanwhile is
    collected by the next full collection."""
    import gc
    import weakref

    assert gc.get_freeze_count() == 0
    with patches.survivors_frozen() as engaged:
        assert engaged
        survivor = _Cycle()
        gone = weakref.ref(survivor)
        gc.collect()
        frozen = gc.get_freeze_count()
        assert frozen > 0  # the survivor among them
        del survivor
        gc.collect()
        assert gone() is not None  # frozen: not walked until the block ends
        fresh = _Cycle()
        fresh_ref = weakref.ref(fresh)
        del fresh
        gc.collect()
        assert fresh_ref() is None  # garbage made since the last freeze still goes
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None


def test_the_collector_is_left_alone_when_off_or_when_objects_are_frozen_already():
    import gc

    gc.disable()
    try:
        with patches.survivors_frozen() as engaged:
            assert not engaged
            gc.collect()
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
    gc.freeze()  # the process's own frozen objects
    try:
        frozen = gc.get_freeze_count()
        with patches.survivors_frozen() as engaged:
            assert not engaged
            _Cycle()
            gc.collect()
        assert gc.get_freeze_count() == frozen  # none added, none handed back
    finally:
        gc.unfreeze()


def test_evaluate_freezes_survivors_only_for_our_tasks():
    import gc

    from wsc_tasks.lm_eval_fixes import p19_freeze_survivors as freeze

    seen: list[int] = []

    def evaluate(lm, task_dict, **kwargs):
        gc.collect()
        seen.append(gc.get_freeze_count())
        return {}

    wrapped = freeze.freezing(evaluate)
    ours, theirs = _task("wsc_tasks.tasks.schema_tasks"), _task("lm_eval.api.task")
    wrapped(None, {"group": {"a": theirs, "b": ours}})
    wrapped(None, task_dict={"a": theirs})
    assert seen[0] > 0 and seen[1] == 0
    assert gc.get_freeze_count() == 0


# -- 21. pickle_request_cache ----------------------------------------------------------------------
def test_the_request_cache_reads_and_writes_lm_evals_files_both_ways(tmp_path, monkeypatch):
    """Written with the standard pickler and read by lm-eval's own dill reader, written by
    lm-eval's dill writer and read here; an object only dill pickles (a lambda) still goes."""
    import lm_eval.api.task as lm_task
    from lm_eval.api.instance import Instance
    from lm_eval.caching import cache

    patches.apply()
    monkeypatch.setattr(cache, "PATH", str(tmp_path))
    instances = [[Instance("loglikelihood", {"id": k}, ("a b", f" c{k}"), k)] for k in range(3)]
    lm_task.save_to_cache("ours", instances)
    theirs = patches.original(cache, "load_from_cache")("ours", cache=True)
    assert [[i.args for i in group] for group in theirs] == [[("a b", f" c{k}")] for k in range(3)]
    patches.original(cache, "save_to_cache")("theirs", instances)
    back = lm_task.load_from_cache(file_name="theirs", cache=True)
    assert [[i.doc for i in group] for group in back] == [[{"id": k}] for k in range(3)]
    assert lm_task.load_from_cache(file_name="theirs", cache=False) is None
    assert lm_task.load_from_cache(file_name="missing", cache=True) is None
    cache.save_to_cache("lambda", {"f": lambda x: x + 1})
    assert cache.load_from_cache("lambda", cache=True)["f"](1) == 2
