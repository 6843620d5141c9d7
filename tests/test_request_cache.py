"""The work around the forward once per tokenizer: lm-eval's request cache (``--cache_requests``)
named by what the requests follow (patches section 11: the metadata, the tokenizer's encodings,
the model's family, the package's source; not the weights or the paths), and the encodings kept
beside it (patches section 4). Never trusted when any of these changes; the models of a sweep
that share a tokenizer build and encode the requests once, and score as without the cache."""

from __future__ import annotations

import functools

import lm_eval
import lm_eval.evaluator
import pytest
import tiny_models
from lm_eval.models.huggingface import HFLM

from wsc_tasks import lm_eval_fixes as patches

from wsc_tasks import fingerprint
from wsc_tasks.tasks.request_task import RequestTask
from wsc_tasks.scoring.tokens import TokenCounter, encoding_identity


@pytest.fixture(scope="module")
def gpt2_pair(tmp_path_factory):
    """Two tiny GPT-2s of different weights in different folders, one tokenizer."""
    return [tiny_models.gpt2(tmp_path_factory.mktemp(f"gpt2-{seed}"), seed=seed) for seed in (0, 1)]


def _counter(folder, **kwargs) -> TokenCounter:
    from transformers import AutoTokenizer

    return TokenCounter(AutoTokenizer.from_pretrained(folder), **kwargs)


def test_the_tag_follows_the_tokenizer_not_the_weights_or_the_path(gpt2_pair, monkeypatch):
    a, b = gpt2_pair
    meta = {"headline": "partial"}
    tag = patches.request_cache_tag({**meta, "pretrained": str(a)}, _counter(a), "causal")
    assert tag == patches.request_cache_tag({**meta, "pretrained": str(b)}, _counter(b), "causal")
    changed = {
        "metadata": patches.request_cache_tag({"pretrained": str(b)}, _counter(b), "causal"),
        "family": patches.request_cache_tag({**meta, "pretrained": str(b)}, _counter(b), "masked"),
        "special tokens": patches.request_cache_tag(
            {**meta, "pretrained": str(b)}, _counter(b, add_special_tokens=True), "causal"
        ),
    }
    grown = _counter(b)
    grown.tokenizer.add_tokens(["<new-token>"])  # one more token: other encodings
    changed["tokenizer"] = patches.request_cache_tag(
        {**meta, "pretrained": str(b)}, grown, "causal"
    )
    monkeypatch.setattr(fingerprint, "package_fingerprint", lambda: "another source")
    changed["package"] = patches.request_cache_tag(
        {**meta, "pretrained": str(a)}, _counter(a), "causal"
    )
    assert all(value != tag for value in changed.values()), changed


def test_the_encoding_identity_is_the_content():
    from transformers import PreTrainedTokenizerFast

    core = tiny_models.gpt2_renumbered([])
    one = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="</s>")
    two = PreTrainedTokenizerFast(
        tokenizer_object=tiny_models.gpt2_renumbered([]), eos_token="</s>"
    )
    other_eos = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<s>")
    assert encoding_identity(one) == encoding_identity(two) is not None
    assert encoding_identity(other_eos) != encoding_identity(one)
    assert encoding_identity(object()) is None  # no Rust tokenizer: no content identity


def test_the_package_fingerprint_follows_its_sources(tmp_path, monkeypatch):
    import wsc_tasks.paths

    (tmp_path / "task.yaml").write_text("task: a\n")
    monkeypatch.setattr(wsc_tasks.paths, "include_path", lambda: tmp_path)
    fingerprint.package_fingerprint.cache_clear()
    try:
        before = fingerprint.package_fingerprint()
        (tmp_path / "task.yaml").write_text("task: b\n")
        fingerprint.package_fingerprint.cache_clear()
        assert fingerprint.package_fingerprint() != before
    finally:
        fingerprint.package_fingerprint.cache_clear()


@pytest.mark.slow
def test_a_sweeps_models_with_one_tokenizer_build_and_encode_once(
    gpt2_pair, task_manager, tmp_path, monkeypatch
):
    """Three runs with lm-eval's request cache in one folder: the first builds and encodes, the
    second (other weights, other folder, same tokenizer) builds no request and encodes no text,
    with the figures of a run without the cache; a third with another tokenizer builds again."""
    import lm_eval.caching.cache as lm_cache

    monkeypatch.setattr(lm_cache, "PATH", str(tmp_path / "requests"))
    built: list[str] = []
    construct = RequestTask.construct_requests

    def counted(self, doc, ctx, **kwargs):
        built.append(self.config.task)
        return construct(self, doc, ctx, **kwargs)

    monkeypatch.setattr(RequestTask, "construct_requests", counted)
    tasks = ["wsc266", "winowhy"]

    def run(folder, cache: bool):
        built.clear()
        lm = HFLM(pretrained=str(folder), device="cpu", batch_size=16)
        manager = task_manager(pretrained=str(folder))
        out = lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=3,
                                      cache_requests=cache, bootstrap_iters=0)  # fmt: skip
        return out["results"], len(built), lm

    first, n_first, _ = run(gpt2_pair[0], cache=True)
    assert n_first > 0
    encoded = {}
    inside = [False]  # lm-eval's evaluate is running (the tasks' plans encode a few probes before)
    evaluate = lm_eval.evaluator.evaluate

    @functools.wraps(evaluate)
    def flagged(*args, **kwargs):
        inside[0] = True
        try:
            return evaluate(*args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(lm_eval.evaluator, "evaluate", flagged)

    def encode(self, text, flag):  # a text the second run's counters encode while it runs
        if inside[0] and (text, flag) not in self._cache:
            encoded[text] = flag
        return original(self, text, flag)

    Counter = TokenCounter
    original = Counter._encode
    monkeypatch.setattr(Counter, "_encode", encode)
    batches: list[int] = []
    prime = Counter.prime
    monkeypatch.setattr(Counter, "prime", lambda self, texts, *a: batches.append(1) or prime(
        self, texts, *a))  # fmt: skip
    second, n_second, lm = run(gpt2_pair[1], cache=True)
    assert n_second == 0 and not batches and not encoded, (n_second, len(encoded))
    assert patches._memo(lm)  # the model's encodings came from the cache too
    plain, n_plain, _ = run(gpt2_pair[1], cache=False)
    assert n_plain > 0 and second == plain
    llama = tiny_models.family_model(tmp_path / "llama", "llama", tiny_models.tokenizer("smollm2"))
    _, n_third, _ = run(llama, cache=True)  # another tokenizer
    assert n_third > 0
    assert first.keys() == second.keys()
