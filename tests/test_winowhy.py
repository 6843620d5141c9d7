"""WinoWhy (Zhang et al. 2020): its sizes and the paper's per-category figures, the metrics on
hand-computed cases, the knowledge categories of WSC273 (Tables 4 and 5), and tiny models of the
three families through lm-eval, checked against explicit forward passes."""

from __future__ import annotations

import itertools
import math
import re

import lm_eval
import pytest
import torch
from test_mlm import _hand as _masked_hand

from wsc_tasks.data import catalog, knowledge, parsers, sources, winowhy
from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.metrics.plausibility import (
    accuracy_at,
    best_threshold,
    group_ranking_accuracy,
    majority_baseline,
    roc_auc,
)
from wsc_tasks.models import mlm
from wsc_tasks.scoring.methods import ScoringError

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

# -- metrics on hand-computed cases ----------------------------------------------------------------


def test_best_threshold_accuracy_by_hand():
    # thresholds 0.1: 2/4, 0.35: 3/4, 0.4: 2/4, 0.8: 3/4, +inf (all negative): 2/4
    assert best_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == (0.75, 0.35)
    # equal scores get one prediction: 1 (all positive) 2/3, 2: 2/3, +inf: 1/3 -> lowest, 1
    assert best_threshold([1, 1, 2], [0, 1, 1]) == (pytest.approx(2 / 3), 1.0)
    # all negative wins: the threshold is +inf and the accuracy the majority baseline
    assert best_threshold([3, 2, 1], [0, 0, 1]) == (pytest.approx(2 / 3), math.inf)
    assert majority_baseline([0, 0, 1]) == pytest.approx(2 / 3)
    assert accuracy_at([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], 0.8) == 0.75


def test_roc_auc_by_hand():
    # pairs (pos, neg): (0.35,0.1) 1, (0.35,0.4) 0, (0.8,0.1) 1, (0.8,0.4) 1 -> 3/4
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    # a tie counts one half: (1,1) 1/2, (1,0) 1, (2,1) 1, (2,0) 1 -> 3.5/4
    assert roc_auc([1, 2, 1, 0], [1, 1, 0, 0]) == 0.875
    assert roc_auc([5, 5], [1, 0]) == 0.5
    assert math.isnan(roc_auc([1, 2], [1, 1]))


def test_question_group_accuracy_by_hand():
    questions = [
        ([3, 2, 1], [1, 1, 0]),  # min positive 2 > max negative 1: solved
        ([3, 2, 2], [1, 0, 1]),  # a positive ties a negative: not solved
        ([1, 2], [1, 1]),  # no negative: not counted
    ]
    assert group_ranking_accuracy(questions) == 0.5


def test_bad_scores_are_errors():
    with pytest.raises(ValueError, match="finite"):
        roc_auc([math.nan, 1.0], [0, 1])
    with pytest.raises(ValueError, match="2 scores for 3 labels"):
        best_threshold([1.0, 2.0], [0, 1, 1])


# -- the dataset and the categories ---------------------------------------------------------------

TABLE_6 = {  # category: (reasons, majority-voting accuracy in %)
    "property": (337, 54.30),
    "object": (856, 56.31),
    "eventuality": (928, 56.47),
    "spatial": (674, 52.67),
    "quantity": (206, 52.43),
    "others": (496, 55.24),
}
TABLE_4 = {"property": 32, "object": 82, "eventuality": 88, "spatial": 64, "quantity": 20,
           "others": 48, "single": 222, "multiple": 51}  # fmt: skip


def test_sizes_and_left_out_reasons(data_dir, caplog):
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        questions = winowhy.load_winowhy()
    labels = [r.label for q in questions for r in q.reasons]
    assert (len(questions), len(labels), sum(labels)) == (273, 2865, 1270)
    assert "left out 610 reason(s): acceptable (plausibility 0.4)" in caplog.text
    assert "left out 620 reason(s): acceptable (plausibility 0.6)" in caplog.text
    assert questions[0].context == (
        "The city councilmen refused the demonstrators a permit because they feared violence. "
        "The 'they' refers to the city councilmen because"
    )
    assert questions[0].reasons[0] == winowhy.Reason(
        "city councilmen are administrative so they are more likely to fear", 1, 1.0, "human"
    )
    assert round(100 * majority_baseline(labels), 2) == 55.67


def test_per_category_sizes_and_majority_baseline_match_table_6(data_dir):
    questions = winowhy.load_winowhy()
    for category, (n, majority) in TABLE_6.items():
        labels = [
            r.label
            for q in questions
            if category in knowledge.wsc273_categories(q.number)
            for r in q.reasons
        ]
        assert (len(labels), round(100 * majority_baseline(labels), 2)) == (n, majority)


def test_wsc273_category_counts_match_tables_4_and_5(data_dir):
    counts = dict.fromkeys(TABLE_4, 0)
    for number in range(1, 274):
        for name in knowledge.wsc273_categories(number):
            counts[name] += 1
        counts[knowledge.knowledge_count(number)] += 1
    assert counts == TABLE_4
    assert knowledge.wsc273_categories(1) == ("property", "quantity", "others")
    with pytest.raises(KeyError, match="274 is not a WSC273 problem number"):
        knowledge.wsc273_categories(274)


def test_thesis_wsc273_numbering_is_winowhys_order(data_dir):
    """Categories index questions of winowhy.json; the thesis file numbers the same problems."""
    raw = {
        p.number: p
        for s in parsers.parse_wsc273_raw(sources.resolve("winowhy/winowhy.json"))
        for p in s.problems
    }

    def words(p: Problem) -> list[str]:
        return re.findall(r"[a-z]+", "".join(p.segments).lower())

    problems = [p for s in catalog.load("wsc273_schemas") for p in s.problems]
    assert len(problems) == 273
    assert all(words(p) == words(raw[p.number]) for p in problems)


def test_cat_ref_errors_name_the_file(tmp_path):
    path = tmp_path / "cat_ref.json"
    path.write_text('{"Property": [0], "Colour": []}')
    with pytest.raises(
        ValueError, match=r"cat_ref.json: unknown knowledge categories \['Colour'\]"
    ):
        knowledge.parse_cat_ref(path)
    path.write_text('{"Property": [0]}')
    with pytest.raises(ValueError, match="questions without a category: \\[2, 3"):
        knowledge.parse_cat_ref(path)


# -- through lm-eval ------------------------------------------------------------------------------

QUESTIONS = list(range(0, 273, 20))  # 14 questions, every category present


def _log_likelihood(model, tok, context: str, continuation: str) -> float:
    head = tok(context)["input_ids"]
    ids = tok(context + continuation)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return float(sum(lp[i - 1, ids[i]] for i in range(len(head), len(ids))))


@pytest.fixture(scope="module")
def causal_run(tiny_gpt2_dir, data_dir, task_manager):
    return lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_dir}",
        tasks=["winowhy", "wsc273_schemas"],
        task_manager=task_manager(
            **ALL, pretrained=str(tiny_gpt2_dir), scoring="partial", headline="partial"
        ),
        samples={"winowhy": QUESTIONS, "wsc273_schemas": list(range(136))},
        device="cpu",
        batch_size=16,
        log_samples=True,
    )


@pytest.mark.slow
def test_winowhy_causal_metrics_recomputed_by_hand(causal_run, tiny_gpt2_dir, gpt2_tok):
    from transformers import AutoModelForCausalLM

    samples = causal_run["samples"]["winowhy"]
    result = causal_run["results"]["winowhy"]
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2_dir).eval()
    first = samples[0]
    context, reason = first["doc"]["context"], first["doc"]["reasons"][0]
    assert tuple(first["arguments"][0]) == (context, " " + reason)
    hand = _log_likelihood(model, gpt2_tok, context, " " + reason)
    assert first["resps"][0][0][0] == pytest.approx(hand, abs=1e-4)

    per_question, categories = [], []
    for sample in samples:
        doc = sample["doc"]
        means = []
        for reason, resp in zip(doc["reasons"], sample["resps"], strict=True):
            n = len(gpt2_tok(doc["context"] + " " + reason)["input_ids"]) - len(
                gpt2_tok(doc["context"])["input_ids"]
            )
            means.append(resp[0][0] / n)
        per_question.append((means, doc["labels"]))
        categories.append(doc["categories"])
    scores = [s for q in per_question for s in q[0]]
    labels = [y for q in per_question for y in q[1]]
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    pairs = [(p > n) + 0.5 * (p == n) for p, n in itertools.product(positives, negatives)]
    assert result["roc_auc,none"] == pytest.approx(sum(pairs) / len(pairs), abs=1e-12)
    candidates = [*sorted(set(scores)), math.inf]
    accuracies = [
        sum((s >= t) == bool(y) for s, y in zip(scores, labels, strict=True)) / len(scores)
        for t in candidates
    ]
    best = max(accuracies)
    threshold = candidates[accuracies.index(best)]
    assert result["acc_best_threshold,none"] == pytest.approx(best, abs=1e-12)
    assert result["acc_best_threshold_mean,none"] == result["acc_best_threshold,none"]
    assert result["best_threshold,none"] == pytest.approx(threshold, abs=1e-12)
    solved = [
        min(s for s, y in zip(*q, strict=True) if y)
        > max(s for s, y in zip(*q, strict=True) if not y)
        for q in per_question
    ]
    assert result["question_group_acc,none"] == pytest.approx(sum(solved) / len(solved))
    for category in TABLE_6:
        chosen = [q for q, c in zip(per_question, categories, strict=True) if category in c]
        s = [x for q in chosen for x in q[0]]
        y = [x for q in chosen for x in q[1]]
        correct = sum((a >= threshold) == bool(b) for a, b in zip(s, y, strict=True))
        assert result[f"acc_best_threshold_{category},none"] == pytest.approx(correct / len(y))
        assert result[f"n_reasons_{category},none"] == len(y)
    assert (result["n_questions,none"], result["n_reasons,none"]) == (14, len(labels))
    assert result["n_positive,none"] == sum(labels)
    assert {"roc_auc_sum,none", "roc_auc_per_byte,none"} <= result.keys()


@pytest.mark.slow
def test_wsc273_schemas_accuracy_per_category(causal_run):
    result = causal_run["results"]["wsc273_schemas"]
    right = dict.fromkeys(TABLE_4, 0)
    total = dict.fromkeys(TABLE_4, 0)
    for sample in causal_run["samples"]["wsc273_schemas"]:
        lls = iter(r[0][0] for r in sample["resps"])
        for problem in Schema.from_doc(sample["doc"]).problems:
            first, second = next(lls), next(lls)
            correct = (0 if first >= second else 1) == problem.label
            names = {
                *knowledge.wsc273_categories(problem.number),
                knowledge.knowledge_count(problem.number),
            }
            for name in names:
                right[name] += correct
                total[name] += 1
    assert total == TABLE_4
    for name in TABLE_4:
        assert result[f"acc_cat_{name},none"] == pytest.approx(right[name] / total[name])
        assert result[f"n_cat_{name},none"] == TABLE_4[name]


@pytest.mark.slow
def test_winowhy_masked_scores_the_reason_tokens(tiny_roberta_dir, data_dir, task_manager):
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=32)
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=["winowhy"],
        task_manager=task_manager(**ALL, pretrained=str(tiny_roberta_dir)),
        samples={"winowhy": [0]},
        log_samples=True,
    )
    sample = out["samples"]["winowhy"][0]
    doc = sample["doc"]
    means = []
    for k, (reason, resp) in enumerate(zip(doc["reasons"], sample["resps"], strict=True)):
        score = mlm.MaskedScore(*resp[0])
        means.append(score.answer_total / score.answer_n)
        if k < 3:  # each reason token masked in turn, by explicit forward passes
            problem = Problem("r", (doc["context"] + " ", ""), ((reason,), (reason,)), 0)
            hand = _masked_hand(lm.model, lm.tokenizer, problem, 0)
            assert means[-1] == pytest.approx(hand["answer_mean"], abs=1e-5)
    assert out["results"]["winowhy"]["roc_auc,none"] == pytest.approx(
        roc_auc(means, doc["labels"]), abs=1e-12
    )


@pytest.mark.slow
def test_winowhy_seq2seq_request_and_mean(tiny_t5_dir, data_dir, task_manager):
    from transformers import AutoTokenizer

    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_t5_dir}",
        tasks=["winowhy"],
        task_manager=task_manager(**ALL, pretrained=str(tiny_t5_dir)),
        samples={"winowhy": [0]},
        device="cpu",
        batch_size=8,
        log_samples=True,
    )
    sample = out["samples"]["winowhy"][0]
    doc = sample["doc"]
    tok = AutoTokenizer.from_pretrained(tiny_t5_dir)
    means = []
    for reason, arguments, resp in zip(
        doc["reasons"], sample["arguments"], sample["resps"], strict=True
    ):
        target = f"<extra_id_0> {reason} <extra_id_1>"
        assert tuple(arguments) == (doc["context"] + " <extra_id_0>", target)
        means.append(resp[0][0] / len(tok.encode(target, add_special_tokens=False)))
    assert out["results"]["winowhy"]["roc_auc,none"] == pytest.approx(
        roc_auc(means, doc["labels"]), abs=1e-12
    )


def test_a_model_without_tokenizer_gets_per_byte_with_a_note(data_dir, task_manager):
    from wsc_tasks.models.chance import ChanceLM

    task = task_manager(**ALL).load(["winowhy"])["tasks"]["winowhy"]
    assert task.headline == "per_byte" and "roc_auc_mean" not in task.aggregation()
    task.meet_model(ChanceLM(seed=1))  # what serving does before the model gets a request
    [note] = task.config.metadata["notes"]
    assert note.startswith("headline score per_byte")
    assert "wsc-chance was given no tokenizer" in note
    with pytest.raises(ScoringError, match="per-token mean needs the model's tokenizer"):
        task_manager(**ALL, reason_score="mean").load(["winowhy"])
