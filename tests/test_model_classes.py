"""Every lm-eval model answers this package's requests with its own answers.

lm-eval's evaluator calls a model's ``loglikelihood(requests)`` and nothing else; the package's
faster routes (shared prefixes, remembered encodings) stand in for lm-eval's own ``HFLM``
methods and so apply to ``HFLM`` only as lm-eval ships it. Each model here runs ``wsc266`` through
``simple_evaluate``, and every answer in its samples must be the answer its own ``loglikelihood``
gives for the same request: a model written to lm-eval's model guide, HFLM subclasses that
override ``_loglikelihood_tokens``, ``_model_call`` or ``tok_encode``, lm-eval's ``dummy``, and
a model wrapped in lm-eval's ``CachingLM`` (``use_cache``). The served ``local-completions``
case is in ``tests/test_served.py`` (a real llama.cpp server).
"""

from __future__ import annotations

import logging

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.models.huggingface import HFLM

from wsc_tasks.serving import own_methods

LIMIT = 6  # schemas of wsc266: 12 problems, 72 requests, 48 distinct


def _run(task_manager, tokenizer_dir, lm, **extra) -> list[dict]:
    """``wsc266``'s samples from ``simple_evaluate`` on ``lm``."""
    import lm_eval

    manager = task_manager(tokenizer=str(tokenizer_dir))
    results = lm_eval.simple_evaluate(
        model=lm, tasks=["wsc266"], task_manager=manager, limit=LIMIT, log_samples=True, **extra
    )
    return results["samples"]["wsc266"]


def _pairs(samples: list[dict]) -> list[tuple[str, str]]:
    """Every distinct (context, continuation) the samples hold, in their order."""
    return list(dict.fromkeys(tuple(pair) for s in samples for pair in s["arguments"]))


def _answers(samples: list[dict]) -> dict[tuple[str, str], tuple[float, bool]]:
    """Each request's answer as the samples record it (one answer per request)."""
    found: dict[tuple[str, str], tuple[float, bool]] = {}
    for sample in samples:
        for pair, resp in zip(sample["arguments"], sample["resps"], strict=True):
            (answer,) = resp
            assert found.setdefault(tuple(pair), tuple(answer)) == tuple(answer)
    return found


def _asked(lm, pairs: list[tuple[str, str]]) -> list[tuple[float, bool]]:
    """``lm``'s own ``loglikelihood`` of ``pairs``, called as lm-eval's evaluator calls it."""
    requests = [
        Instance("loglikelihood", doc={}, arguments=pair, idx=i) for i, pair in enumerate(pairs)
    ]
    return [tuple(a) for a in lm.loglikelihood(requests)]


def _assert_own(samples: list[dict], own: list[tuple[float, bool]], rel: float = 1e-6) -> None:
    recorded = _answers(samples)
    pairs = _pairs(samples)
    assert len(pairs) == len(own) > 0
    for pair, (value, greedy) in zip(pairs, own, strict=True):
        assert recorded[pair][0] == pytest.approx(value, rel=rel, abs=rel), pair
        assert recorded[pair][1] == greedy, pair


# -- a model written to lm-eval's model guide ----------------------------------------------------
class GuideLM(LM):
    """``loglikelihood(self, requests)`` as lm-eval's model guide writes it: no other argument."""

    def loglikelihood(self, requests):
        return [(-float(len(r.args[1])) - len(r.args[0]) / 1000, False) for r in requests]

    def loglikelihood_rolling(self, requests):
        return [-float(len(r.args[0])) for r in requests]

    def generate_until(self, requests):
        return ["" for _ in requests]


@pytest.mark.slow
def test_a_model_written_to_lm_evals_guide_gets_its_own_answers(
    task_manager, tiny_gpt2_dir, caplog
):
    lm = GuideLM()
    with caplog.at_level(logging.INFO, logger="lm_eval"):
        samples = _run(task_manager, tiny_gpt2_dir, lm)
    _assert_own(samples, _asked(lm, _pairs(samples)), rel=0)
    assert "GuideLM is not HFLM: its requests go through its own loglikelihood" in caplog.text


# -- HFLM subclasses -----------------------------------------------------------------------------
class LessPerToken(HFLM):
    """Research code's changed score: 1,000 nats off per continuation token."""

    def _loglikelihood_tokens(self, requests, disable_tqdm=False, override_bs=None):
        found = super()._loglikelihood_tokens(requests, disable_tqdm, override_bs)
        return [
            (ll - 1000 * len(r[2]), greedy) for r, (ll, greedy) in zip(requests, found, strict=True)
        ]


class Tempered(HFLM):
    """A hook on the forward (as lm-eval's ``SteeredModel`` adds its steering): logits halved."""

    def _model_call(self, inps, attn_mask=None, labels=None):
        return super()._model_call(inps, attn_mask, labels) / 2


class Lowercased(HFLM):
    """Another tokenization: every text lowercased before it is encoded."""

    def tok_encode(self, string, add_special_tokens=None, left_truncate_len=None, **kwargs):
        return super().tok_encode(string.lower(), add_special_tokens, left_truncate_len, **kwargs)


def _hf(cls, folder):
    return cls(pretrained=str(folder), batch_size=8, device="cpu", dtype="float32")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cls", "method"),
    [
        (LessPerToken, "_loglikelihood_tokens"),
        (Tempered, "_model_call"),
        (Lowercased, "tok_encode"),
    ],
)
def test_an_hflm_subclass_gets_its_own_answers(task_manager, tiny_gpt2_dir, cls, method, caplog):
    lm = _hf(cls, tiny_gpt2_dir)
    assert own_methods.overridden(lm) == [method]
    with caplog.at_level(logging.INFO, logger="lm_eval"):
        samples = _run(task_manager, tiny_gpt2_dir, lm)
    lm.logits_cache = False  # as the package asks it (lm-eval's cache_hits defect kept away)
    pairs = _pairs(samples)
    own = _asked(lm, pairs)
    _assert_own(samples, own)
    lm_evals = _asked(_hf(HFLM, tiny_gpt2_dir), pairs)
    assert sum(abs(a[0] - b[0]) > 1e-3 for a, b in zip(own, lm_evals, strict=True)) > len(pairs) / 2
    if cls is LessPerToken:
        assert max(value for value, _ in _answers(samples).values()) < -1000
    assert f"{cls.__name__} defines its own {method}: its requests go through its own" in (
        caplog.text
    )


def test_hflm_itself_and_its_plain_subclasses_keep_the_shared_prefix_route(tiny_gpt2_dir):
    class Renamed(HFLM):
        """A subclass that changes nothing the routes stand in for."""

    assert own_methods.hf_own(_hf(HFLM, tiny_gpt2_dir))
    assert own_methods.hf_own(_hf(Renamed, tiny_gpt2_dir))
    assert not own_methods.hf_own(_hf(Tempered, tiny_gpt2_dir))
    assert not own_methods.hf_own(GuideLM())


def test_lm_evals_steered_model_would_be_bypassed_by_the_shared_prefix_route():
    """lm-eval's own ``SteeredModel`` adds its steering in ``_model_call``: it answers through
    its own methods, not the route (which calls the transformers model directly)."""
    from lm_eval.models.hf_steered import SteeredModel

    assert own_methods.overridden(SteeredModel.__new__(SteeredModel)) == ["_model_call"]


# -- lm-eval's dummy, and lm-eval's request cache -------------------------------------------------
@pytest.mark.slow
def test_lm_evals_dummy_gets_its_own_answers(task_manager, tiny_gpt2_dir, monkeypatch):
    """``dummy`` answers at random: every answer in the samples is one it gave for that request,
    and each distinct request was asked once."""
    from lm_eval.models.dummy import DummyLM

    given: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    own = DummyLM.loglikelihood

    def spied(self, requests, disable_tqdm=False):
        found = own(self, requests, disable_tqdm)
        for request, answer in zip(requests, found, strict=True):
            given.setdefault(tuple(request.args), []).append(tuple(answer))
        return found

    monkeypatch.setattr(DummyLM, "loglikelihood", spied)
    samples = _run(task_manager, tiny_gpt2_dir, DummyLM())
    assert given.keys() == set(_pairs(samples))
    assert all(len(answers) == 1 for answers in given.values())
    assert _answers(samples) == {pair: answers[0] for pair, answers in given.items()}


@pytest.mark.slow
def test_a_model_in_lm_evals_request_cache_gets_its_own_answers(
    task_manager, tiny_gpt2_dir, tmp_path, caplog
):
    """``simple_evaluate(use_cache=…)`` wraps the model in lm-eval's ``CachingLM``: HFLM keeps the
    shared-prefix route (within 1e-4 of its own loop), an HFLM subclass its own answers, and a
    second run reads the same answers from the cache."""
    cache = str(tmp_path / "answers")
    first = _run(task_manager, tiny_gpt2_dir, _hf(HFLM, tiny_gpt2_dir), use_cache=cache)
    lm = _hf(HFLM, tiny_gpt2_dir)
    lm.logits_cache = False
    _assert_own(first, _asked(lm, _pairs(first)), rel=1e-4)
    subclass = _run(task_manager, tiny_gpt2_dir, _hf(LessPerToken, tiny_gpt2_dir),
                    use_cache=str(tmp_path / "other"))  # fmt: skip
    assert max(value for value, _ in _answers(subclass).values()) < -1000
    with caplog.at_level(logging.INFO, logger="lm_eval"):
        again = _run(task_manager, tiny_gpt2_dir, _hf(HFLM, tiny_gpt2_dir), use_cache=cache)
    assert _answers(again) == _answers(first)
    distinct = len(_pairs(first))
    assert f"answer cache (--use_cache) answered {distinct} of {distinct} distinct" in caplog.text
