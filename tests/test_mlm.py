"""Masked-LM scoring (``--model hf-mlm``) against explicit forward passes of a tiny RoBERTa."""

from __future__ import annotations

import lm_eval
import pytest
import tiny_models
import torch
from conftest import assert_same_metrics, run_dp_eval

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema
from wsc_tasks.models import mlm
from wsc_tasks.scoring import families
from wsc_tasks.scoring.masked import answer_spans
from wsc_tasks.scoring.methods import ScoringError, Setup

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

pytestmark = pytest.mark.slow

TASK = "wsc266"


def _hand(model, tok, problem, option: int) -> dict[str, float]:
    """Every masked-LM score of one option, one explicit forward pass per masked copy; with two
    blanks the answer is both fillers (multi-mask masks both spans at once)."""
    sentence = problem.fill(option)
    spans, position = [], 0
    for segment, filler in zip(problem.segments, problem.options[option], strict=False):
        position += len(segment)
        spans.append((position, position + len(filler)))
        position += len(filler)
    assert [sentence[a:b] for a, b in spans] == list(problem.options[option])
    enc = tok(sentence, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    answer = [
        i
        for i, (a, b) in enumerate(enc["offset_mapping"])
        if not special[i] and any(a < end and b > begin for begin, end in spans)
    ]

    def logprobs(masked_positions):
        masked = torch.tensor([ids])
        masked[0, masked_positions] = tok.mask_token_id
        with torch.no_grad():
            lp = torch.log_softmax(model(input_ids=masked).logits[0].float(), dim=-1)
        return [float(lp[i, ids[i]]) for i in masked_positions]

    single = {i: logprobs([i])[0] for i, s in enumerate(special) if not s}
    multi = sum(logprobs(answer))
    statement = sum(single.values())
    answer_sum = sum(single[i] for i in answer)
    return {
        "multi_mask": multi,
        "multi_mask_mean": multi / len(answer),
        "statement": statement,
        "statement_mean": statement / len(ids),
        "answer": answer_sum,
        "answer_mean": answer_sum / len(answer),
    }


def test_every_masked_method_by_hand(tiny_roberta_dir, data_dir, task_manager):
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=8)
    manager = task_manager(pretrained=str(tiny_roberta_dir), **ALL)
    rows = []
    hook = lm.model.base_model.register_forward_hook(
        lambda module, args, kwargs, output: rows.append(kwargs["input_ids"].shape[0]),
        with_kwargs=True,
    )
    out = lm_eval.simple_evaluate(
        model=lm, tasks=[TASK], task_manager=manager, samples={TASK: [0, 1, 2]}, log_samples=True
    )
    hook.remove()
    methods = families.FAMILIES["masked"].methods
    right, problems = dict.fromkeys(methods, 0), 0
    for sample in out["samples"][TASK]:
        results = {
            ("mlm_score", (a[0], tuple(tuple(s) for s in a[1]), a[2])): mlm.MaskedScore(*r[0])
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
        for problem in Schema.from_doc(sample["doc"]).problems:
            problems += 1
            hand = [_hand(lm.model, lm.tokenizer, problem, i) for i in (0, 1)]
            for name, method in methods.items():
                ours = method.option_scores(problem, results, Setup())
                assert ours == pytest.approx([h[name] for h in hand], abs=1e-5), (name, problem.uid)
                right[name] += (0 if hand[0][name] >= hand[1][name] else 1) == problem.label
    result = out["results"][TASK]
    for name in methods:
        assert result[f"acc_{name},none"] == pytest.approx(right[name] / problems, abs=1e-12)
    assert result["acc,none"] == result["acc_statement_mean,none"]  # headline: mean statement
    # Minimum passes: one per distinct masked input. Statement and answer scoring share the
    # single-mask copies of each filled sentence; multi-mask adds one copy per option.
    inputs = set()
    for sample in out["samples"][TASK]:
        for problem in Schema.from_doc(sample["doc"]).problems:
            for i in (0, 1):
                for mode in ("statement", "multimask"):
                    spans = answer_spans(problem, i)
                    _, _, jobs = mlm.plan_jobs(lm.tokenizer, problem.fill(i), spans, mode)
                    inputs.update(masked for masked, _ in jobs)
    assert sum(rows) == len(inputs)


def test_batched_scores_equal_one_at_a_time(tiny_roberta_dir, data_dir):
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=16)
    problems = [p for s in catalog.load(TASK)[:4] for p in s.problems]
    args = [(p.fill(i), answer_spans(p, i), mode)
            for p in problems for i in (0, 1) for mode in ("statement", "multimask")]  # fmt: skip
    batched = mlm.score_requests(lm.model, lm.tokenizer, args, 16, "cpu")
    alone = [mlm.score_requests(lm.model, lm.tokenizer, [a], 1, "cpu")[0] for a in args]
    for x, y in zip(batched, alone, strict=True):
        assert x.n == y.n and x.answer_n == y.answer_n
        assert x.total == pytest.approx(y.total, abs=1e-4)
        assert x.answer_total == pytest.approx(y.answer_total, abs=1e-4)


def test_masked_model_through_hf_is_refused(tiny_roberta_dir, data_dir, task_manager):
    """The refusal comes when lm-eval hands the masked requests to a model that does not serve
    them (``families.refuse_unserved_requests``), whichever was built first."""
    from lm_eval.models.huggingface import HFLM

    manager = task_manager(pretrained=str(tiny_roberta_dir))
    tasks = manager.load([TASK])  # before the model: the order does not matter
    hf = HFLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=8)
    with pytest.raises(ScoringError, match=r"task wsc266: .*masked.*--model hf-mlm"):
        lm_eval.evaluate(hf, tasks, limit=1, bootstrap_iters=0)


def test_two_processes_give_the_same_metrics_as_one(tiny_roberta_dir, tmp_path, data_dir):
    outputs = {
        n: run_dp_eval(
            n, tiny_roberta_dir, tmp_path / f"p{n}.json", "wsc273_schemas", "8", "hf-mlm"
        )
        for n in (1, 2)
    }
    assert outputs[1]["world_size"] == 1 and outputs[2]["world_size"] == 2
    ones, twos = outputs[1]["results"]["wsc273_schemas"], outputs[2]["results"]["wsc273_schemas"]
    assert_same_metrics(ones, twos)


def test_registering_hf_mlm_keeps_lm_evals_own_models():
    import subprocess
    import sys

    code = (
        "import wsc_tasks.models.mlm\n"
        "from lm_eval.api.registry import get_model\n"
        "print(get_model('hf').__name__, get_model('hf-mlm').__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["HFLM", "MaskedLM"]


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A 1-layer random BERT with a WordPiece vocabulary trained on WSC266 ([CLS] … [SEP])."""
    return tiny_models.bert(tmp_path_factory.mktemp("tiny-bert"), tiny_models.sentences(TASK))


def test_batch_bounds_by_rows_and_tokens():
    lengths = [5, 5, 4, 3, 3, 2]
    assert mlm.batch_bounds(lengths, 3, 12) == [(0, 2), (2, 5), (5, 6)]
    assert mlm.batch_bounds(lengths, 2, 1000) == [(0, 2), (2, 4), (4, 6)]
    assert mlm.batch_bounds(lengths, None, 1000) == [(0, 6)]
    assert mlm.batch_bounds(lengths, None, 1) == [(k, k + 1) for k in range(6)]  # never empty
    assert mlm.batch_bounds([], 4, 100) == []


@pytest.mark.parametrize("which", ["roberta", "bert"])
def test_tensor_copies_equal_per_copy_reference(which, tiny_roberta_dir, tiny_bert_dir, data_dir):
    """The tensor-built copies score as the per-copy tuples of ``plan_jobs`` do: bit for bit
    with the same batches, and to float32 rounding when the token budget splits them otherwise
    (a row's arithmetic may then differ in the last bits with the batch's shape)."""
    from benchmarks.mlm_throughput import per_copy_scores

    folder = tiny_roberta_dir if which == "roberta" else tiny_bert_dir
    lm = mlm.MaskedLM(pretrained=str(folder), device="cpu")
    model, tok = lm.model, lm.tokenizer
    problems = [p for s in catalog.load(TASK)[:3] for p in s.problems]
    args = [(p.fill(i), answer_spans(p, i), mode)
            for p in problems for i in (0, 1) for mode in ("statement", "multimask")]  # fmt: skip
    args += args[:3]  # the same request twice: its copies are computed once
    reference = per_copy_scores(model, tok, args, 16, "cpu")
    assert mlm.score_requests(model, tok, args, 16, "cpu", 10**9) == reference
    distinct = {m for a in args for m, _ in mlm.plan_jobs(tok, *a)[2]}
    longest = max(len(m) for m in distinct)
    shapes = []
    hook = model.base_model.register_forward_hook(
        lambda module, a, kw, out: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    for batch_size, budget in [(None, longest), (None, 3 * longest + 1), (5, 10**9), (None, 1)]:
        shapes.clear()
        ours = mlm.score_requests(model, tok, args, batch_size, "cpu", budget)
        assert sum(rows for rows, _ in shapes) == len(distinct)
        assert all(rows == 1 or rows * width <= budget for rows, width in shapes)
        assert all(rows <= (batch_size or rows) for rows, _ in shapes)
        for x, y in zip(ours, reference, strict=True):
            assert (x.n, x.answer_n) == (y.n, y.answer_n)
            assert x.total == pytest.approx(y.total, abs=1e-5)
            assert x.answer_total == pytest.approx(y.answer_total, abs=1e-5)
    hook.remove()


def test_batch_size_auto_leaves_rows_to_the_token_budget(tiny_roberta_dir):
    lm = mlm.MaskedLM(
        pretrained=str(tiny_roberta_dir), device="cpu", batch_size="auto", max_batch_tokens="500"
    )
    assert (lm.batch_size, lm.max_batch_tokens) == (None, 500)
    lm = mlm.MaskedLM(
        pretrained=str(tiny_roberta_dir), device="cpu", batch_size="auto:4", max_batch_size=64
    )
    assert (lm.batch_size, lm.max_batch_tokens) == (64, mlm.DEFAULT_MAX_BATCH_TOKENS)
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=8)
    assert (lm.batch_size, lm.max_batch_tokens) == (8, mlm.DEFAULT_MAX_BATCH_TOKENS)


@pytest.mark.parametrize("family", ["seq2seq", "causal"])
def test_a_model_hf_mlm_does_not_serve_names_the_model_that_does(family, tmp_path):
    """Before, a T5 said only "no mask token: not a masked LM"; ``--model hf`` serves it."""
    tiny_models.config_only(tmp_path, "t5" if family == "seq2seq" else "gpt2")
    with pytest.raises(ValueError) as error:
        mlm.MaskedLM(pretrained=str(tmp_path), device="cpu")
    assert str(error.value) == (
        f"hf-mlm: {tmp_path} is a {family} model, not a masked LM; --model hf serves it "
        f"(wsc-tasks run --model hf --model_args pretrained={tmp_path})"
    )


def test_bf16_scores_within_tolerance_of_fp32(tiny_roberta_dir, data_dir, monkeypatch):
    """Half-precision logits' log-softmax is taken in fp32: bf16 statement scores stay within
    1e-3 of their size of fp32's, half the error of a log-softmax in bf16 (minicons' way)."""
    problems = [p for s in catalog.load(TASK)[:8] for p in s.problems]
    args = [(p.fill(i), answer_spans(p, i), "statement") for p in problems for i in (0, 1)]
    scores = {}
    for dtype in ("float32", "bfloat16"):
        lm = mlm.MaskedLM(
            pretrained=str(tiny_roberta_dir), device="cpu", batch_size=64, dtype=dtype
        )
        with torch.no_grad():  # peaked predictions, as a trained model's: large logits
            lm.model.lm_head.decoder.weight.mul_(32)
        scores[dtype] = [
            s.total for s in mlm.score_requests(lm.model, lm.tokenizer, args, 64, "cpu")
        ]
    log_softmax = torch.log_softmax
    monkeypatch.setattr(torch, "log_softmax", lambda x, dim: log_softmax(x.bfloat16(), dim).float())
    in_bf16 = [s.total for s in mlm.score_requests(lm.model, lm.tokenizer, args, 64, "cpu")]
    ours = [abs(a - b) for a, b in zip(scores["bfloat16"], scores["float32"], strict=True)]
    theirs = [abs(a - b) for a, b in zip(in_bf16, scores["float32"], strict=True)]
    assert all(d <= 1e-3 * abs(s) for d, s in zip(ours, scores["float32"], strict=True))
    assert 0 < max(ours) < 0.6 * max(theirs)
