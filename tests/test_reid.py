"""Reid250 tasks: dataset sizes, the task YAMLs, and the scoring of two-blank problems (inverted
transposition schemas, thesis §3.5.5) by every method of every model family, recomputed here from
explicit forward passes of tiny random models: the whole substitution of both fillers."""

from __future__ import annotations

import lm_eval
import pytest
import tiny_models
from test_mlm import _hand
from test_scoring import TOKEN_ERROR, _t5_hand, by_hand, hand_terms

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema, count
from wsc_tasks.models import mlm
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import Setup
from wsc_tasks.scoring.tokens import TokenCounter

TWO_BLANKS = "reid250_inverted_transposition"
DOCS = [5, 19]  # t29: first blank starts the sentence, "." after; t56: text after the second

SIZES = {  # name: (documents, problems, schema groups)
    "reid250": (125, 250, 125),
    "reid250_substitution": (75, 150, 75),
    "reid250_transposition": (50, 100, 50),
    "reid250_inverted": (125, 250, 125),
    "reid250_inverted_substitution": (75, 150, 75),
    "reid250_inverted_transposition": (50, 100, 50),
    "reid250x2": (125, 500, 250),
    "reid250x2_substitution": (75, 300, 150),
    "reid250x2_transposition": (50, 200, 100),
    "reid250x2_by_key": (125, 500, 250),
    "reid250x2_by_key_substitution": (75, 300, 150),
    "reid250x2_by_key_transposition": (50, 200, 100),
    "reid250x2_by_boolean": (125, 500, 250),
    "reid250x2_by_boolean_substitution": (75, 300, 150),
    "reid250x2_by_boolean_transposition": (50, 200, 100),
    "reid250x2_by_answer_fix_key": (125, 500, 250),
}
SUITE = [*SIZES, "reid250x2_that", "reid250x2_that_by_key", "reid250x2_that_by_boolean",
         "reid250_inverted_consistency"]  # fmt: skip


@pytest.mark.parametrize("name", sorted(SIZES))
def test_reid_dataset_sizes(data_dir, name):
    schemas = catalog.load(name)
    assert (len(schemas), *count(schemas)) == SIZES[name]
    assert {s.kind for s in schemas} <= {"s", "t"}


def test_two_blank_problems_are_exactly_the_inverted_transposition_ones(data_dir):
    two = {(name, p.n_blanks) for name in SIZES for s in catalog.load(name) for p in s.problems}
    with_two = {name for name, blanks in two if blanks == 2}
    assert with_two == {"reid250_inverted", TWO_BLANKS, "reid250x2_by_key",
                        "reid250x2_by_key_transposition"}  # fmt: skip
    for schema in catalog.load(TWO_BLANKS):
        for problem in schema.problems:
            first, second = problem.options
            assert problem.n_blanks == 2 and [f.lower() for f in first] == [
                f.lower() for f in reversed(second)
            ]  # ordered pairs of the same two key phrases


def test_suite_yaml_lists_every_task(data_dir, task_manager):
    manager = task_manager()
    assert set(SUITE) | {"reid250_suite"} <= set(manager.all_tasks)
    loaded = manager.load(["reid250_suite"])  # builds every dataset, dyads included
    names = {task.config.task for task in _leaves(loaded)}
    assert names == set(SUITE)


def _leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    elif isinstance(tree, list | tuple):
        for value in tree:
            yield from _leaves(value)
    elif hasattr(tree, "config"):
        yield tree


def _results(sample, kind="loglikelihood"):
    if kind == "mlm_score":
        return {
            (kind, (a[0], tuple(tuple(s) for s in a[1]), a[2])): mlm.MaskedScore(*r[0])
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
    return {
        (kind, tuple(a)): r[0] for a, r in zip(sample["arguments"], sample["resps"], strict=True)
    }


def _with_tolerance(scores: dict) -> dict[str, tuple[float, float]]:
    """(score, tolerance) by method: a hand that gives only scores is held to 1e-5."""
    return {k: v if isinstance(v, tuple) else (v, TOKEN_ERROR) for k, v in scores.items()}


def _run(task_manager, lm, folder, family_methods, hand, kind="loglikelihood", setup=None):
    """Evaluate TWO_BLANKS on DOCS; every method's option scores must equal the hand scores and
    the reported accuracy the hand-computed choices."""
    # every method, and the per-method accuracies too
    manager = task_manager(pretrained=str(folder), metrics="all", scoring="all")
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=[TWO_BLANKS],
        task_manager=manager,
        samples={TWO_BLANKS: DOCS},
        log_samples=True,
    )
    right, problems = dict.fromkeys(family_methods, 0), 0
    for sample in out["samples"][TWO_BLANKS]:
        results = _results(sample, kind)
        for problem in Schema.from_doc(sample["doc"]).problems:
            assert problem.n_blanks == 2
            problems += 1
            scores = [_with_tolerance(hand(problem, i)) for i in (0, 1)]
            for name, method in family_methods.items():
                ours = method.option_scores(problem, results, setup)
                tolerance = max(s[name][1] for s in scores)
                expected = pytest.approx([s[name][0] for s in scores], abs=tolerance)
                assert ours == expected, (name, problem)
                right[name] += (
                    0 if scores[0][name][0] >= scores[1][name][0] else 1
                ) == problem.label
    assert problems == 2 * len(DOCS)
    result = out["results"][TWO_BLANKS]
    for name in family_methods:
        assert result[f"acc_{name},none"] == pytest.approx(right[name] / problems, abs=1e-12)
    return out


def _causal_hand(model, tok, problem, option: int) -> dict[str, tuple[float, float]]:
    """Every causal (score, tolerance) of a two-blank option by its formula's hand (GPT-2:
    WebText p1); partial and smart look at the text after the second blank (§3.7.5), normalized
    full divides by the probability of each filler alone."""
    return by_hand(hand_terms(model, tok, None, problem, option, 1, set()))


def test_two_blanks_causal_by_hand(tiny_gpt2_dir, data_dir, task_manager):
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=8)
    setup = Setup(TokenCounter(lm.tokenizer), "webtext", 1)
    hand = lambda problem, i: _causal_hand(lm.model, lm.tokenizer, problem, i)  # noqa: E731
    out = _run(
        task_manager, lm, tiny_gpt2_dir, families.FAMILIES["causal"].methods, hand, setup=setup
    )
    assert out["results"][TWO_BLANKS]["acc,none"] == out["results"][TWO_BLANKS]["acc_smart,none"]


@pytest.fixture(scope="module")
def tiny_t5_reid_dir(tmp_path_factory, data_dir):
    """A tiny T5 whose word-level tokenizer knows Reid250's words and three sentinels."""
    texts = tiny_models.sentences("reid250_inverted")
    return tiny_models.t5(tmp_path_factory.mktemp("tiny-t5-reid"), texts, seed=5)


def test_two_blanks_t5_by_hand(tiny_t5_reid_dir, task_manager):
    """One sentinel per blank in the input; the target is both fillers between sentinels."""
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=str(tiny_t5_reid_dir), device="cpu", batch_size=8)
    setup = Setup(TokenCounter(lm.tokenizer), "bos", 1)
    hand = lambda problem, i: _t5_hand(lm.model, lm.tokenizer, problem, i)  # noqa: E731
    out = _run(
        task_manager, lm, tiny_t5_reid_dir, families.FAMILIES["seq2seq"].methods, hand, setup=setup
    )
    sample = out["samples"][TWO_BLANKS][0]
    assert any("<extra_id_1>" in a[0] and "<extra_id_2>" in a[1] for a in sample["arguments"])


def test_two_blanks_masked_by_hand(tiny_roberta_dir, task_manager):
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=16)
    hand = lambda problem, i: _hand(lm.model, lm.tokenizer, problem, i)  # noqa: E731
    methods = families.FAMILIES["masked"].methods
    _run(task_manager, lm, tiny_roberta_dir, methods, hand, "mlm_score", Setup())
