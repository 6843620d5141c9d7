"""lm-eval's HF logits cache must not change a log-likelihood when another request splits the same
sentence elsewhere (what partial scoring of a problem and of its inversion send)."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from wsc_tasks import lm_eval_fixes

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
    lm_eval_fixes.apply()
    lm = HFLM(pretrained=str(tiny_gpt2_dir), device="cpu", batch_size=1)
    alone = _lls(lm, SHORT)
    mixed = _lls(lm, SHORT + LONG)
    assert mixed[:2] == alone
    assert mixed[2:] == _lls(lm, LONG)
    assert alone[0] != alone[1]


def test_apply_is_idempotent():
    lm_eval_fixes.apply()
    assert lm_eval_fixes.apply() is False
