"""Token counting in batch calls (``TokenCounter.prime``, ``causal.prime``) changes no count and
no request: every piece of every problem equals the one counted a text at a time, for each real
tokenizer family that reads causal requests, and a primed task leaves (almost) nothing to
encode one text at a time."""

from __future__ import annotations

import pytest
from tiny_models import tokenizer

from wsc_tasks.data import catalog
from wsc_tasks.scoring import causal
from wsc_tasks.scoring.methods import Setup
from wsc_tasks.scoring.tokens import TokenCounter

DATASETS = ("wsc266", "wsc266_inverted", "winogrande_twins")  # one and two blanks, Winogrande's


def _problems() -> list:
    return [p for name in DATASETS for s in catalog.load(name) for p in s.problems]


def _facts(counter: TokenCounter, problems: list, prior: str) -> list:
    setup = Setup(counter, prior, 1)  # type: ignore[arg-type]
    out = []
    for problem in problems:
        pieces = [causal.pieces(problem, i, setup) for i in (0, 1)]
        lengths = counter.answer_lengths(problem) if problem.n_blanks == 1 else None
        out.append((pieces, lengths, counter.tokens_after_blank(problem, 0)))
    return out


@pytest.mark.parametrize("name, prior", [("gpt2", "webtext"), ("smollm2", "bos"),
                                         ("mistral", "bos"), ("opt", "bos")])  # fmt: skip
def test_primed_counts_equal_counts_a_text_at_a_time(data_dir, name, prior):
    problems = _problems()
    one_by_one = TokenCounter(tokenizer(name))
    primed = TokenCounter(tokenizer(name))
    encoded = causal.prime(primed, problems)
    batched, single = primed.calls
    assert encoded == batched > 2 * len(problems)  # every sentence, answer and partial text
    assert single == 0
    causal.pieces.cache_clear()
    expected = _facts(one_by_one, problems, prior)
    causal.pieces.cache_clear()
    got = _facts(primed, problems, prior)
    causal.pieces.cache_clear()
    assert got == expected
    assert one_by_one.calls[0] == 0 and one_by_one.calls[1] > len(problems)
    # what priming could not foresee (splits after more than one token) is counted singly
    assert primed.calls[1] <= 0.01 * one_by_one.calls[1], (primed.calls, one_by_one.calls)
    assert primed._cache == one_by_one._cache | {
        k: v for k, v in primed._cache.items() if k not in one_by_one._cache
    }


def test_a_batch_call_that_differs_from_encode_is_not_trusted(caplog):
    class Odd:
        is_fast = True
        eos_token = None

        def encode(self, text, add_special_tokens=True):
            return [len(text)]

        def __call__(self, texts, add_special_tokens=True, return_offsets_mapping=False):
            return {"input_ids": [[0] for _ in texts]}

        def __len__(self):
            return 10

    counter = TokenCounter(Odd())
    assert counter.prime(["abc", "de"]) == 0
    assert "encodes 'abc' differently" in caplog.text
    assert counter.encode("abc") == [3]


def test_a_slow_tokenizer_is_counted_a_text_at_a_time():
    slow = tokenizer("gpt2")
    counter = TokenCounter(slow)
    object.__setattr__(counter, "tokenizer", type("Slow", (), {"is_fast": False})())
    assert not counter.batched and counter.prime(["a b"]) == 0
