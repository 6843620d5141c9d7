"""Causal scoring methods against explicit forward passes of tiny random GPT-2 and Llama models.

For a few WSC266 problems (some with the blank just before the final period, where smart scoring
switches to full), every registered method's option scores are recomputed here by its formula's
``hand`` (thesis §3.1.1, eq. 3.3–3.15) from log-probabilities of explicit forward passes and
compared with what the task computed inside lm-eval; the accuracies the task reports are checked
against the hand-computed choices, and the number of sequences the model saw against the passes
those formulas read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

import lm_eval
import pytest
import tiny_models
import torch
from lm_eval.models.huggingface import HFLM

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema
from wsc_tasks.scoring import causal, families, prefix_tree
from wsc_tasks.scoring.methods import ScoringError, Setup
from wsc_tasks.scoring.tokens import TokenCounter
from wsc_tasks.serving import tries as sharing

ALL = {"metrics": "all", "scoring": "all"}  # every method, every per-method metric aggregated

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


class Counting:
    """Counts the sequences lm-eval's HFLM feeds the model, by wrapping HFLM's own
    ``_model_call`` in place: a subclass that overrode it would answer through its own methods
    (``serving.own_methods``) rather than the route under test."""

    rows = 0

    def __new__(cls, monkeypatch, **kwargs):
        own = HFLM._model_call

        def counted(self, inps, *args, **kw):
            Counting.rows += inps.shape[0]
            return own(self, inps, *args, **kw)

        monkeypatch.setattr(HFLM, "_model_call", counted)
        return HFLM(**kwargs)


def _sum_lp(model, ids: list[int], start: int, inputs: set | None = None) -> float:
    """log P(ids[start:] | ids[:start]) from one explicit forward pass, in float32 as lm-eval;
    the pass's input joins ``inputs``."""
    return sum(_token_lps(model, ids, start, inputs))


def _token_lps(model, ids: list[int], start: int, inputs: set | None = None) -> list[float]:
    """log P(ids[i] | ids[:i]) for i ≥ start, from one explicit forward pass."""
    if inputs is not None:
        inputs.add(tuple(ids[:-1]))
    with torch.no_grad():  # like lm-eval, the last token is predicted, not fed
        lp = torch.log_softmax(model(torch.tensor([ids[:-1]])).logits[0].float(), dim=-1)
    positions = torch.arange(start - 1, len(ids) - 1)
    return [float(v) for v in lp[positions, torch.tensor(ids[start:])]]


class HandTerms(Mapping):
    """An option's terms by hand (``causal.Hand``), each computed when a formula first reads it,
    so ``inputs`` collects the model inputs of exactly the passes the registered formulas need."""

    def __init__(self, compute: dict[str, Callable[[], float | list[float]]]) -> None:
        self.compute, self.known = compute, {}

    def __getitem__(self, name):
        if name not in self.known:
            self.known[name] = self.compute[name]()
        return self.known[name]

    def __iter__(self):
        return iter(self.compute)

    def __len__(self):
        return len(self.compute)


def hand_terms(model, tok, bos: int | None, problem, option: int, limit: int, inputs: set):
    """Every term a causal formula may read by hand (thesis §3.1.1, eq. 3.2–3.15), for one
    option; with ``bos`` None (GPT-2) the first token by the WebText unigram frequencies, else
    the model's own probability after its prefix token. Two blanks: the answer is every filler,
    partial the text after the last blank."""
    enc = lambda text: tok.encode(text, add_special_tokens=False)  # noqa: E731
    sentence = problem.fill(option)
    sigma = enc(sentence)
    head = enc(sentence[: len(sentence) - len(problem.segments[-1])].rstrip())
    assert sigma[: len(head)] == head
    answers = [
        enc((" " if before.endswith(" ") else "") + filler)
        for filler, before in zip(problem.options[option], problem.segments, strict=False)
    ]

    def answer() -> float:
        if bos is not None:
            return sum(_sum_lp(model, [bos, *ids], 1, inputs) for ids in answers)
        return sum(
            causal.webtext_log_prob(ids[0])
            + (_sum_lp(model, ids, 1, inputs) if len(ids) > 1 else 0)
            for ids in answers
        )

    def full() -> float:
        if bos is None:
            return causal.webtext_log_prob(sigma[0]) + terms["all_but_first"]
        return _sum_lp(model, [bos, *sigma], 1, inputs)

    terms = HandTerms({
        "partial": lambda: _sum_lp(model, sigma, len(head), inputs),
        "all_but_first": lambda: _sum_lp(model, sigma, 1, inputs),
        "full": full,
        "answer": answer,
        "token_lps": lambda: _token_lps(model, sigma, 1, inputs),  # σ2…σn given those before
        "n": lambda: len(sigma),
        "n_after": lambda: len(sigma) - len(head),
        "n_answer": lambda: sum(len(ids) for ids in answers),
        "limit": lambda: limit,
    })  # fmt: skip
    return terms


# the error of an option's score: float32 log-probabilities of other matrix shapes, about 1e-6
# each, summed over the tokens a score covers (its mean: divided by them again)
TOKEN_ERROR = 1e-5


def by_hand(h) -> dict[str, tuple[float, float]]:
    """Every registered causal method's (score, tolerance) of one option from its hand terms."""
    out = {}
    for name, method in families.FAMILIES["causal"].methods.items():
        _, count = method.formula.hand(h)
        out[name] = method.hand(h), TOKEN_ERROR * (1 if method.mean else max(count, 1))
    return out


def _hand_scores(model, tok, bos, problem, option: int, inputs: set, limit: int = 1):
    return by_hand(hand_terms(model, tok, bos, problem, option, limit, inputs))


def _count_values(formulas: set, monkeypatch) -> Counter:
    """How often each (formula, problem, option) value is computed from here on."""
    computed: Counter = Counter()
    for kind in {type(formula) for formula in formulas}:
        value = kind.value

        def counted(self, problem, option, setup, results, value=value):
            computed[(self.name, problem.uid, option)] += 1
            return value(self, problem, option, setup, results)

        monkeypatch.setattr(kind, "value", counted)
    return computed


@pytest.mark.parametrize("shared", [False, True], ids=["padded", "shared-prefixes"])
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_every_causal_method_by_hand(
    arch, shared, tiny_gpt2_dir, tiny_llama_dir, data_dir, task_manager, monkeypatch
):
    """Every causal method's score of every option against one explicit forward pass per
    sequence (fp32; to 1e-5 per token the score sums or a relative 1e-6, the rounding of other
    matrix shapes), and the
    fewest token sequences (lm-eval's padded batches) or token positions (shared prefixes,
    ``serving.tries``) through the model."""
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
    lm = Counting(monkeypatch, pretrained=str(folder), device="cpu", batch_size=64 if shared else 1)
    counter = TokenCounter(lm.tokenizer)
    doc_ids = _doc_ids(counter)
    manager = task_manager(pretrained=str(folder), **ALL)
    Counting.rows = 0
    formulas = {m.formula for m in families.FAMILIES["causal"].methods.values()
                if isinstance(m, causal.Causal)}  # fmt: skip
    computed = _count_values(formulas, monkeypatch)
    out = lm_eval.simple_evaluate(
        model=lm, tasks=[TASK], task_manager=manager, samples={TASK: doc_ids}, log_samples=True
    )
    in_the_task = Counter(computed)  # the checks below call the formulas again
    rows = Counting.rows
    # ``full`` and ``full_mean`` read one formula, ``smart`` reads full's or partial's: each
    # option's value of each formula is computed once per problem in the task
    # (``causal.formula_value``)
    assert len(formulas) < len(families.FAMILIES["causal"].methods)
    assert in_the_task and set(in_the_task.values()) == {1}, in_the_task.most_common(3)
    samples = out["samples"][TASK]
    assert out["configs"][TASK]["metadata"]["first_token_prior"] == (
        "webtext" if arch == "gpt2" else "bos"
    )
    model, tok = lm.model, lm.tokenizer
    bos = None if arch == "gpt2" else lm.prefix_token_id
    setup = Setup(counter, "webtext" if arch == "gpt2" else "bos", 1)
    methods = families.FAMILIES["causal"].methods
    right = {name: 0 for name in methods}
    problems = 0
    inputs: set[tuple[int, ...]] = set()  # every model input the formulas need, by hand
    for sample in samples:
        schema = Schema.from_doc(sample["doc"])
        results = {
            ("loglikelihood", tuple(a)): r[0]
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
        for problem in schema.problems:
            problems += 1
            hand = [_hand_scores(model, tok, bos, problem, i, inputs) for i in (0, 1)]
            for name, method in methods.items():
                ours = method.option_scores(problem, results, setup)
                tolerance = max(h[name][1] for h in hand)
                expected = pytest.approx([h[name][0] for h in hand], abs=tolerance, rel=1e-6)
                assert ours == expected, (name, problem.uid)
                choice = 0 if hand[0][name][0] >= hand[1][name][0] else 1
                right[name] += choice == problem.label
    result = out["results"][TASK]
    for name in methods:
        assert result[f"acc_{name},none"] == pytest.approx(right[name] / problems, abs=1e-12), name
    assert result["acc,none"] == result["acc_smart,none"]  # causal headline: smart at limit 1
    # Shared prefixes: the trie of the distinct model inputs the registered formulas read by hand
    # (``inputs``; inputs drop the last token, so texts that differ only there share nodes).
    # lm-eval's own loop (sharing off): one row per distinct request, its logits cache, which
    # would give requests of one input one row, off (``lm_eval_fixes.cache_hits``).
    if shared:
        assert positions == [prefix_tree.trie_nodes(inputs)] and rows == 0
    else:
        distinct = {tuple(a) for sample in samples for a in sample["arguments"]}
        assert rows == len(distinct) >= len(inputs)


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


def test_every_t5_method_by_hand(tiny_t5_dir, data_dir, task_manager, monkeypatch):
    lm = Counting(monkeypatch, pretrained=str(tiny_t5_dir), device="cpu", batch_size=1)
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
