"""lm-eval's HF logits cache must not change a log-likelihood when another request splits the same
sentence elsewhere (what partial scoring of a problem and of its inversion send)."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from wsc_tasks import patches

pytestmark = pytest.mark.slow

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
