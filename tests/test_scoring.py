"""Causal scoring methods against explicit forward passes of tiny random GPT-2 and Llama models.

For a few WSC266 problems (some with the blank just before the final period, where smart scoring
switches to full), every method's option scores are recomputed here from the model's logits by the
thesis's formulas (§3.1.1, eq. 3.3–3.15) and compared with what the task computed inside lm-eval;
the accuracies the task reports are checked against the hand-computed choices, and the number of
sequences the model saw against the minimum the methods need.
"""

from __future__ import annotations

from collections.abc import Callable

import lm_eval
import pytest
import tiny_models
import torch
from lm_eval.models.huggingface import HFLM

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema
from wsc_tasks.harness.patches import p20_share_prefixes as sharing
from wsc_tasks.scoring import causal, families, prefix_tree
from wsc_tasks.scoring.causal import CausalFormula
from wsc_tasks.scoring.methods import ScoringError, Setup
from wsc_tasks.scoring.tokens import TokenCounter

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

pytestmark = pytest.mark.slow

TASK = "wsc266"


@pytest.fixture(scope="module")
def tiny_llama_dir(tmp_path_factory):
    """A 2-layer random Llama with a word-level tokenizer trained here on WSC266's words."""
    return tiny_models.llama(tmp_path_factory.mktemp("tiny-llama"), tiny_models.sentences(TASK))


def _doc_ids(counter: TokenCounter) -> list[int]:
    """Three ordinary schemas and two whose blank is followed by one token."""
    schemas = catalog.load(TASK)
    at_end = [
        i for i, s in enumerate(schemas)
        if any(counter.n_continuation(p.fill(0)[: len(p.fill(0)) - len(p.segments[1])],
                                      p.segments[1]) <= 1 for p in s.problems)
    ]  # fmt: skip
    assert len(at_end) >= 2
    return [0, 1, 2, *at_end[:2]]


class Counting(HFLM):
    """HFLM that counts the sequences it feeds the model."""

    rows = 0

    def _model_call(self, inps, *args, **kwargs):
        Counting.rows += inps.shape[0]
        return super()._model_call(inps, *args, **kwargs)


def _sum_lp(model, ids: list[int], start: int) -> float:
    """log P(ids[start:] | ids[:start]) from one explicit forward pass, in float32 as lm-eval."""
    with torch.no_grad():  # like lm-eval, the last token is predicted, not fed
        lp = torch.log_softmax(model(torch.tensor([ids[:-1]])).logits[0].float(), dim=-1)
    positions = torch.arange(start - 1, len(ids) - 1)
    return float(lp[positions, torch.tensor(ids[start:])].sum())


def _hand_scores(model, tok, bos: int | None, problem, option: int, limit: int = 1):
    """Every causal score of one option, by the thesis's formulas."""
    enc = lambda text: tok.encode(text, add_special_tokens=False)  # noqa: E731
    sentence = problem.fill(option)
    sigma = enc(sentence)
    after = problem.segments[1]
    head = enc(sentence[: len(sentence) - len(after)].rstrip())
    n_after = len(sigma) - len(head)
    assert sigma[: len(head)] == head
    abf = _sum_lp(model, sigma, 1)
    before = problem.segments[0]
    answer = enc((" " if before.endswith(" ") else "") + problem.options[option][0])
    if bos is None:  # GPT-2: p1 from the WebText unigram frequencies
        full = causal.webtext_log_prob(sigma[0]) + abf
        p_answer = causal.webtext_log_prob(answer[0])
        p_answer += _sum_lp(model, answer, 1) if len(answer) > 1 else 0.0
    else:  # the model's own probability after its prefix token
        full = _sum_lp(model, [bos, *sigma], 1)
        p_answer = _sum_lp(model, [bos, *answer], 1)
    partial = _sum_lp(model, sigma, len(head))
    return by_hand(
        {"partial": partial, "n_after": n_after, "all_but_first": abf, "full": full,
         "answer": p_answer, "n_answer": len(answer), "n": len(sigma)}, limit
    )  # fmt: skip


# Each formula of ``causal.CausalFormula`` by hand (thesis eq. 3.2–3.15): (its value, the tokens
# it predicts) from one option's hand-computed log-probabilities and counts. Every registered
# method is checked through it (``by_hand``): a new method of these formulas needs nothing here,
# a new formula its line.
HAND: dict[CausalFormula, Callable[[dict[str, float]], tuple[float, float]]] = {
    CausalFormula.PARTIAL: lambda h: (h["partial"], h["n_after"]),
    CausalFormula.ALL_BUT_FIRST: lambda h: (h["all_but_first"], h["n"] - 1),
    CausalFormula.FULL: lambda h: (h["full"], h["n"]),
    CausalFormula.FULL_NORM: lambda h: (h["full"] - h["answer"], h["n"] - h["n_answer"]),
    # full when at most ``limit`` tokens follow the blank, else partial
    CausalFormula.SMART: lambda h: HAND[
        CausalFormula.FULL if h["n_after"] <= h["limit"] else CausalFormula.PARTIAL
    ](h),
}


def by_hand(h: dict[str, float], limit: int) -> dict[str, float]:
    """Every registered causal method's score of one option from its hand primitives ``h``
    (``limit``: smart's)."""
    out = {}
    for name, method in causal.METHODS.items():
        value, count = HAND[method.formula]({**h, "limit": limit})
        out[name] = value / count if method.mean else value
    return out


@pytest.mark.parametrize("shared", [False, True], ids=["padded", "shared-prefixes"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_every_causal_method_by_hand(
    arch, shared, tiny_gpt2_dir, tiny_llama_dir, data_dir, task_manager, monkeypatch
):
    """Every causal method's score of every option against one explicit forward pass per
    sequence (fp32; to 1e-5 or a relative 1e-6, the rounding of other matrix shapes), and the
    fewest token sequences (lm-eval's padded batches) or token positions (shared prefixes,
    patches section 20) through the model."""
    folder = tiny_gpt2_dir if arch == "gpt2" else tiny_llama_dir
    positions: list[int] = []
    if shared:  # one forward call: every tree in one row, its nodes counted
        tree_inputs = prefix_tree.tree_inputs

        def counted(rows, pad_id=0):
            positions.append(sum(len(row.tokens) for row in rows))
            return tree_inputs(rows, pad_id)

        monkeypatch.setattr(prefix_tree, "tree_inputs", counted)
        monkeypatch.setattr(sharing, "probe", lambda lm, inputs: None)
    else:
        monkeypatch.setenv(sharing.SHARING_ENV, "0")
    lm = Counting(pretrained=str(folder), device="cpu", batch_size=64 if shared else 1)
    counter = TokenCounter(lm.tokenizer)
    doc_ids = _doc_ids(counter)
    manager = task_manager(pretrained=str(folder), **ALL)
    Counting.rows = 0
    out = lm_eval.simple_evaluate(
        model=lm, tasks=[TASK], task_manager=manager, samples={TASK: doc_ids}, log_samples=True
    )
    rows = Counting.rows
    samples = out["samples"][TASK]
    assert out["configs"][TASK]["metadata"]["first_token_prior"] == (
        "webtext" if arch == "gpt2" else "bos"
    )
    model, tok = lm.model, lm.tokenizer
    bos = None if arch == "gpt2" else lm.prefix_token_id
    setup = Setup(counter, "webtext" if arch == "gpt2" else "bos", 1)
    right = {name: 0 for name in causal.METHODS}
    problems = 0
    for sample in samples:
        schema = Schema.from_doc(sample["doc"])
        results = {
            ("loglikelihood", tuple(a)): r[0]
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
        for problem in schema.problems:
            problems += 1
            hand = [_hand_scores(model, tok, bos, problem, i) for i in (0, 1)]
            for name, method in causal.METHODS.items():
                ours = method.option_scores(problem, results, setup)
                expected = pytest.approx([h[name] for h in hand], abs=1e-5, rel=1e-6)
                assert ours == expected, (name, problem.uid)
                choice = 0 if hand[0][name] >= hand[1][name] else 1
                right[name] += choice == problem.label
    result = out["results"][TASK]
    for name in causal.METHODS:
        assert result[f"acc_{name},none"] == pytest.approx(right[name] / problems, abs=1e-12), name
    assert result["acc,none"] == result["acc_smart,none"]  # causal headline: smart at limit 1
    # Minimum forward passes: one per distinct model input the formulas need. A filled sentence
    # feeds partial, all-but-first, loss, smart and (with WebText's p1) full at once; without
    # WebText, full needs it once more after BOS; normalized full needs the answer alone (given
    # its first token with WebText, none if it is one token; after BOS otherwise). Inputs drop
    # the last token, so answers that differ only there share a pass.
    inputs = set()
    for sample in samples:
        for problem in Schema.from_doc(sample["doc"]).problems:
            for i in (0, 1):
                sentence = counter.encode(problem.fill(i), False)
                before = problem.segments[0]
                answer = counter.encode(
                    (" " if before.endswith(" ") else "") + problem.options[i][0], False
                )
                inputs.add(tuple(sentence[:-1]))
                if arch == "gpt2":
                    if len(answer) > 1:
                        inputs.add(tuple(answer[:-1]))
                else:
                    inputs.add((bos, *sentence[:-1]))
                    inputs.add((bos, *answer[:-1]))
    if shared:
        assert positions == [prefix_tree.trie_nodes(inputs)] and rows == 0
    else:
        assert rows == len(inputs)


def _t5_hand(model, tok, problem, option: int) -> dict[str, float]:
    """Every T5 score of one option from one explicit encoder-decoder pass per input/target."""
    fillers = problem.options[option]
    text = problem.segments[0] + "".join(
        f"<extra_id_{k}>{seg}" for k, seg in enumerate(problem.segments[1:])
    )
    target = "".join(f"<extra_id_{k}> {f} " for k, f in enumerate(fillers))
    target += f"<extra_id_{len(fillers)}>"
    scores = {}
    for tag, prefix in (("", ""), ("_prefix", "wsc: ")):
        inputs = torch.tensor([tok.encode(prefix + text)])  # with EOS, as T5's tokenizer
        for eos in (False, True):
            labels = tok.encode(target + ("</s>" if eos else ""), add_special_tokens=False)
            with torch.no_grad():
                logits = model(input_ids=inputs, labels=torch.tensor([labels])).logits[0]
            lp = torch.log_softmax(logits.float(), dim=-1)
            total = float(lp[torch.arange(len(labels)), torch.tensor(labels)].sum())
            if eos:
                scores[f"masked{tag}"] = total
                scores[f"loss{tag}"] = total / len(labels)
            else:
                scores[f"masked{tag}_noeos"] = total
                scores[f"masked{tag}_mean"] = total / len(labels)
    return scores


def test_every_t5_method_by_hand(tiny_t5_dir, data_dir, task_manager):
    lm = Counting(pretrained=str(tiny_t5_dir), device="cpu", batch_size=1)
    assert lm.backend == "seq2seq"
    counter = TokenCounter(lm.tokenizer)
    manager = task_manager(pretrained=str(tiny_t5_dir), **ALL)
    Counting.rows = 0
    out = lm_eval.simple_evaluate(
        model=lm, tasks=[TASK], task_manager=manager, samples={TASK: [0, 1, 2, 3]}, log_samples=True
    )
    setup = Setup(counter, "bos", 1)
    methods = families.FAMILIES["seq2seq"].methods
    right, problems = dict.fromkeys(methods, 0), 0
    for sample in out["samples"][TASK]:
        results = {
            ("loglikelihood", tuple(a)): r[0]
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
        for problem in Schema.from_doc(sample["doc"]).problems:
            problems += 1
            hand = [_t5_hand(lm.model, lm.tokenizer, problem, i) for i in (0, 1)]
            for name, method in methods.items():
                ours = method.option_scores(problem, results, setup)
                expected = pytest.approx([h[name] for h in hand], abs=1e-5, rel=1e-6)
                assert ours == expected, (name, problem.uid)
                right[name] += (0 if hand[0][name] >= hand[1][name] else 1) == problem.label
    result = out["results"][TASK]
    for name in methods:
        assert result[f"acc_{name},none"] == pytest.approx(right[name] / problems, abs=1e-12)
    assert result["acc,none"] == result["acc_masked_prefix_mean,none"]  # Winograd headline
    # lm-eval returns only sums, so each (prefix, EOS) pair is one pass: 4 per option here.
    assert Counting.rows == 4 * 2 * problems


def test_method_of_another_family_is_refused(tiny_gpt2_dir, data_dir, task_manager):
    manager = task_manager(pretrained=str(tiny_gpt2_dir), scoring=["masked_prefix_mean"])
    with pytest.raises(ScoringError, match=r"task wsc266, causal model: .*masked_prefix_mean"):
        manager.load([TASK])
