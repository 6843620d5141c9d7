"""How this package's requests reach a model (``wsc_tasks.serving``): each distinct request once,
lm-eval's own tokenization and request cache, a shorter continuation never scored from a longer
one's positions, the model object and its class left as they were, and ``--batch_size auto``
sized by the real rows."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
import torch
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM, CachingLM
from lm_eval.models.huggingface import HFLM

from wsc_tasks import lm_eval_fixes
from wsc_tasks.serving import encoding, route, tries
from wsc_tasks.serving.model_view import view
from wsc_tasks.serving.requests import REQUEST_TYPE, TaskRequest

slow = pytest.mark.slow

SHORT = [  # partial scoring of a Winograd problem: context up to the answer
    ("Frank felt vindicated when his rival Bill revealed that Frank", " was the winner."),
    ("Frank felt vindicated when his rival Bill revealed that Bill", " was the winner."),
]
LONG = [  # the same two sentences, split after the key word (inverted problem)
    ("Frank felt vindicated", " when his rival Bill revealed that Frank was the winner."),
    ("Frank felt vindicated", " when his rival Bill revealed that Bill was the winner."),
]


class Task:
    """What serving reads of a task (``serving.requests.Requester``), recording what it is told."""

    def __init__(self, counter=None) -> None:
        self.name, self.metadata, self.caches_requests = "t", {}, False
        self.counter, self.met, self.checks = counter, [], []

    def meet_model(self, lm) -> None:
        self.met.append(lm)

    def token_counter(self):
        return self.counter

    def record_served_check(self, outcome) -> None:
        self.checks.append(outcome)


def _requests(pairs, task=None) -> list[TaskRequest]:
    task = task or Task()
    return [
        TaskRequest(REQUEST_TYPE, {}, pair, k, ("t", k, 1), task=task)
        for k, pair in enumerate(pairs)
    ]


def _plain(pairs) -> list[Instance]:
    return [Instance("loglikelihood", {}, pair, 0) for pair in pairs]


class Recording(LM):
    """A model that answers a request with the length of its continuation, recording each call."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[list[tuple[str, str]]] = []

    def loglikelihood(self, requests, disable_tqdm=False):
        self.sent.append([tuple(r.args) for r in requests])
        return [(-float(len(r.args[1])), False) for r in requests]

    loglikelihood_rolling = generate_until = None


def test_distinct_keeps_first_seen_order():
    requests = _requests([*SHORT, SHORT[0], *LONG, SHORT[1]])
    unique, where = route.distinct(requests)
    assert [tuple(r.args) for r in unique] == [*SHORT, *LONG]
    assert where == [0, 1, 0, 2, 3, 1]


def test_each_distinct_request_goes_to_the_model_once_and_every_task_meets_it_first():
    lm_eval_fixes.apply()
    lm, task = Recording(), Task()
    pairs = [*SHORT, *SHORT, LONG[0]]
    answers = getattr(lm, REQUEST_TYPE)(_requests(pairs, task))  # as lm-eval's evaluate calls it
    assert lm.sent == [[*SHORT, LONG[0]]]
    assert answers == [(-float(len(c)), False) for _, c in pairs]
    assert task.met == [lm]


def test_a_request_without_its_task_is_an_error_not_a_guess():
    request = TaskRequest(REQUEST_TYPE, {}, SHORT[0], 0, ("wsc266", 0, 1))
    with pytest.raises(RuntimeError, match="task wsc266: a request reached the model without"):
        route.serve(Recording(), [request])


# -- lm-eval's request cache --------------------------------------------------------------------
def test_the_request_cache_is_read_and_written_with_lm_evals_own_keys(tmp_path, caplog):
    """An answer lm-eval's own ``loglikelihood`` cached is read for this package's request, and
    this package's answers are lm-eval's for its own tasks; the model gets only the rest."""
    lm_eval_fixes.apply()
    path = str(tmp_path / "shared")
    first = CachingLM(Recording(), path)
    first.loglikelihood(_plain([SHORT[0]]))  # an lm-eval task of another package
    second = CachingLM(Recording(), path)
    with caplog.at_level(logging.WARNING):
        answers = getattr(second, REQUEST_TYPE)(_requests([SHORT[0], LONG[0]]))
    assert second.lm.sent == [[LONG[0]]]  # SHORT[0] came from the cache
    assert answers == [(-float(len(SHORT[0][1])), False), (-float(len(LONG[0][1])), False)]
    third = CachingLM(Recording(), path)
    assert third.loglikelihood(_plain([LONG[0]])) == [answers[1]]
    assert not third.lm.sent  # written by serving, read by lm-eval
    warned = [
        r.getMessage() for r in caplog.records if "keyed by the request alone" in r.getMessage()
    ]
    assert len(warned) == 1 and "--use_cache" in warned[0]


def test_a_cache_keyed_by_the_model_is_not_warned_of(tmp_path, caplog):
    lm_eval_fixes.apply()
    route.mark_cache_keyed(str(tmp_path / "keyed_0123456789abcdef"))
    keyed = CachingLM(Recording(), str(tmp_path / "keyed_0123456789abcdef"))
    with caplog.at_level(logging.WARNING):
        getattr(keyed, REQUEST_TYPE)(_requests(SHORT))
    assert not [r for r in caplog.records if "keyed by the request alone" in r.getMessage()]


# -- a Hugging Face causal model -------------------------------------------------------------------
def _own(lm, pairs) -> list[tuple[float, bool]]:
    """lm-eval's own loop on ``pairs``, each request alone (its logits cache off)."""
    cached = lm.logits_cache
    lm.logits_cache = False
    try:
        return lm.loglikelihood(_plain(pairs), disable_tqdm=True)
    finally:
        lm.logits_cache = cached


@slow
def test_a_sentence_split_twice_scores_as_alone_and_as_lm_evals_own_loop(tiny_gpt2_dir):
    """``wsc266`` and ``wsc266_inverted`` fill the same sentence and split it at two places:
    served together, each scores as alone (lm-eval's logits cache would not)."""
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=1)
    pairs = [*SHORT, *LONG, ("Frank felt vindicated ", "when his rival Bill won."), ("", "Bill.")]
    served = route.hf_causal_answers(lm, _requests(pairs), [])
    alone = [route.hf_causal_answers(lm, _requests([p]), [])[0] for p in pairs]
    assert served == alone
    assert [a for a, _ in served] == pytest.approx([a for a, _ in _own(lm, pairs)], abs=2e-4)
    memo = encoding.memo_of(lm)
    assert ("Frank felt vindicated", None) in memo  # the trailing space moved, as lm-eval does
    assert all(
        ids == lm.tok_encode(text, add_special_tokens=flag) for (text, flag), ids in memo.items()
    )


@slow
def test_the_model_object_and_its_class_are_left_as_they_were(tiny_gpt2_dir):
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=4)
    before, methods = dict(vars(lm)), dict(vars(HFLM))
    route.hf_causal_answers(lm, _requests([*SHORT, *LONG]), [])
    assert type(lm) is HFLM and lm.logits_cache is True
    assert set(vars(lm)) == set(before) and dict(vars(HFLM)) == methods


def test_a_view_reads_and_writes_the_models_state_but_its_own_overrides():
    class Model:
        def __init__(self) -> None:
            self.flag, self.count = True, 0

        def twice(self) -> int:
            self.count += 1
            return 2 * self.value()

        def value(self) -> int:
            return 1

    model = Model()
    seen = view(model, flag=False, value=lambda self: 5)
    assert isinstance(seen, Model) and seen.flag is False and model.flag is True
    assert seen.twice() == 10 and model.twice() == 2
    assert model.count == 2  # the view's call counted on the model's own state
    assert type(model) is Model and "value" not in vars(model)


@slow
def test_texts_the_tasks_encoded_are_not_encoded_again(tiny_gpt2_dir, monkeypatch):
    """The encodings of a task's token counter whose tokenizer encodes alike are taken (checked on
    a sample against the model's ``tok_encode``); a counter of another tokenizer is not used; the
    answers do not change."""
    from transformers import AutoTokenizer

    from wsc_tasks.scoring.tokens import TokenCounter, same_encoding

    pairs = [*SHORT, *LONG]
    expected = route.hf_causal_answers(
        HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2), _requests(pairs), []
    )
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    tasks = TokenCounter(AutoTokenizer.from_pretrained(tiny_gpt2_dir), lm.add_bos_token)
    other = AutoTokenizer.from_pretrained(tiny_gpt2_dir, add_prefix_space=True)
    stray = TokenCounter(other, lm.add_bos_token)
    assert same_encoding(tasks.tokenizer, lm.tokenizer) and tasks.tokenizer is not lm.tokenizer
    assert not same_encoding(other, lm.tokenizer)
    tasks.n_continuation(*SHORT[0])  # a task counts the first request's tokens
    stray.n_continuation(*SHORT[1])  # with a tokenizer that splits words otherwise
    asked: list[str] = []
    batch_encode = encoding.batch_encode

    def recording(tokenizer, texts, *args, **kwargs):
        asked.extend(texts)
        return batch_encode(tokenizer, texts, *args, **kwargs)

    monkeypatch.setattr(encoding, "batch_encode", recording)
    found = route.hf_causal_answers(lm, _requests(pairs), [stray, tasks])
    assert found == expected
    context, continuation = SHORT[0]
    assert context not in asked and context + continuation not in asked
    assert SHORT[1][0] in asked and LONG[0][0] in asked  # not the stray counter's encodings
    memo = encoding.memo_of(lm)
    assert memo[(context, None)] == list(tasks.known(context, tasks.add_special_tokens))


@slow
def test_a_counter_whose_encodings_disagree_with_the_model_is_not_used(tiny_gpt2_dir, caplog):
    from wsc_tasks.scoring.tokens import TokenCounter

    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=2)
    expected = _own(lm, SHORT)
    wrong = TokenCounter(lm.tokenizer, lm.add_bos_token)
    for context, continuation in SHORT:
        for text in (context, context + continuation):
            wrong._cache[(text, lm.add_bos_token)] = (1, 2, 3)
    with caplog.at_level(logging.WARNING):
        found = route.hf_causal_answers(lm, _requests(SHORT), [wrong])
    assert [a for a, _ in found] == pytest.approx([a for a, _ in expected], abs=2e-4)
    assert "a task's token counter encodes" in caplog.text
    assert all(ids != [1, 2, 3] for ids in encoding.memo_of(lm).values())


# -- the scoring of a batch ----------------------------------------------------------------------
def _answers_per_request(log_probs, rows, starts, conts):
    """What lm-eval's loop computes for each continuation, one at a time."""
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
    got = tries.batch_answers(log_probs, rows, positions, conts)
    assert got == _answers_per_request(log_probs, rows, starts, conts)
    assert [g for _, g in got] == [True, False, False, True, greedy[2, 8].item() == 7, False]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_greedy_flags_are_argmaxs_with_ties_nans_and_shared_positions(dtype, monkeypatch):
    """``greedy_flags`` (the maximum everywhere, the argmax only where a token reaches it, a
    chunk of positions at a time) answers as lm-eval's argmax comparison: a token tied for the
    maximum is greedy only as the first of the tied, a row holding NaN only at its first NaN."""
    monkeypatch.setattr(tries, "ARGMAX_ROWS", 3)  # several chunks
    generator = torch.Generator().manual_seed(1)
    for trial in range(20):
        values = torch.randint(-3, 1, (2, 7, 5), generator=generator).to(getattr(torch, dtype))
        if trial % 4 == 0:  # NaN in some positions
            values[0, trial % 7, (trial // 4) % 5] = float("nan")
            values[1, 2, :2] = float("nan")
        rows = torch.randint(0, 2, (40,), generator=generator)
        positions = torch.randint(0, 7, (40,), generator=generator)  # shared by several tokens
        argmax = values.argmax(dim=-1)
        targets = torch.where(  # half of them the argmax, the rest any token (ties included)
            torch.rand(40, generator=generator) < 0.5,
            argmax[rows, positions],
            torch.randint(0, 5, (40,), generator=generator),
        )
        index = torch.stack([rows, positions, targets])
        picked = values[rows, positions, targets]
        expected = argmax[rows, positions] == targets
        assert torch.equal(tries.greedy_flags(values, index, picked), expected), trial
        assert expected.any() and not expected.all()


def test_an_auto_batch_is_sized_by_the_real_rows(monkeypatch):
    """``--batch_size auto``: lm-eval's ``max_batch_size`` requests' worth of tokens (the mean
    request length times it, as a fixed batch size), halved on a GPU until the fullest forward
    call of the real packed rows fits; never lm-eval's own detection, whose logits of
    ``max_batch_size`` rows of the longest request cost several times the real calls."""
    inputs = [[1] * 30, [2] * 50, [3] * 40]  # no shared prefix: 120 trie nodes
    cpu = SimpleNamespace(batch_size="auto", max_batch_size=64, device=torch.device("cpu"))
    fixed = SimpleNamespace(batch_size=64)
    assert tries.token_budget(cpu, inputs, None) == tries.token_budget(fixed, inputs, None) == 2560
    tried: list[int] = []

    def forward(lm, ids, positions, ends):
        tried.append(int(ids.numel()))
        if ids.numel() > 100:
            raise torch.cuda.OutOfMemoryError("out of memory")
        return torch.zeros(*ids.shape, 4)

    monkeypatch.setattr(tries, "tree_forward", forward)
    monkeypatch.setattr(tries, "_tensors", lambda lm, rows: tries.prefix_tree.tree_inputs(rows))
    monkeypatch.setattr(tries.prefix_tree, "tree_inputs", lambda rows: [torch.zeros(
        len(rows), max(len(r.tokens) for r in rows))] * 3)  # fmt: skip
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    gpu = SimpleNamespace(batch_size="auto", max_batch_size=8, softmax_dtype=torch.float32,
                          device=SimpleNamespace(type="cuda"))  # fmt: skip
    assert tries.token_budget(gpu, inputs, None) == 80  # 8 → 4 → 2 requests' worth of 40
    assert tried[-1] <= 100 < tried[0]
