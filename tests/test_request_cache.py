"""The work around the forward once per tokenizer: lm-eval's request cache (``--cache_requests``)
named by what the requests follow (``tasks.request_cache``: the metadata, the tokenizer's
encodings, the model's family, the package's source, the documents chosen; not the weights or
the paths), and the encodings kept beside it (``serving.encoding``). Never trusted when any of
these changes, and read back only for the documents it was built from: every order of full,
``--limit`` and ``--samples`` runs scores as without the cache; the models of a sweep that share a
tokenizer build and encode the requests once."""

from __future__ import annotations

import functools
import math
import pickle

import datasets
import lm_eval
import lm_eval.evaluator
import pytest
import tiny_models
from lm_eval.models.huggingface import HFLM

from wsc_tasks import fingerprint
from wsc_tasks.scoring.causal import Causal
from wsc_tasks.scoring.tokens import TokenCounter, encoding_identity
from wsc_tasks.serving import encoding
from wsc_tasks.tasks import request_cache, request_task
from wsc_tasks.tasks.request_task import RequestTask


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

    def tag(meta, counter, family, samples=None):
        return request_cache.tag(meta, counter.identity, family, samples)

    tag_a = tag({**meta, "pretrained": str(a)}, _counter(a), "causal")
    assert tag_a == tag({**meta, "pretrained": str(b)}, _counter(b), "causal")
    changed = {
        "metadata": tag({"pretrained": str(b)}, _counter(b), "causal"),
        "family": tag({**meta, "pretrained": str(b)}, _counter(b), "masked"),
        "special tokens": tag(
            {**meta, "pretrained": str(b)}, _counter(b, add_special_tokens=True), "causal"
        ),
        "documents chosen": tag({**meta, "pretrained": str(b)}, _counter(b), "causal", [3, 1]),
    }
    grown = _counter(b)
    grown.tokenizer.add_tokens(["<new-token>"])  # one more token: other encodings
    changed["tokenizer"] = tag({**meta, "pretrained": str(b)}, grown, "causal")
    monkeypatch.setattr(fingerprint, "package_fingerprint", lambda: "another source")
    changed["package"] = tag({**meta, "pretrained": str(a)}, _counter(a), "causal")
    assert all(value != tag_a for value in changed.values()), changed


def test_the_tag_without_a_tokenizer_follows_the_files_the_metadata_names(tmp_path):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    tag = request_cache.tag({"tokenizer": str(folder)})
    assert tag == request_cache.tag({"tokenizer": str(folder)})
    assert tag != request_cache.tag({"tokenizer": str(folder), "headline": "partial"})
    (folder / "tokenizer.json").write_text('{"changed": 1}')
    assert tag != request_cache.tag({"tokenizer": str(folder)})


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


def test_two_folders_with_one_tokenizer_share_one_counter(gpt2_pair):
    """A sweep's worker runs models from many folders: those with one tokenizer share its counter
    (and every scoring cache keyed by it); a tokenizer grown by a token is another."""
    from wsc_tasks.scoring.tokens import counter_from_metadata, same_encoding

    a, b = (counter_from_metadata({"pretrained": str(folder)}) for folder in gpt2_pair)
    assert a is b
    one, two = (_counter(folder).tokenizer for folder in gpt2_pair)
    assert one.name_or_path != two.name_or_path and same_encoding(one, two)
    assert same_encoding(one, two)  # asked again: the identity kept per object
    two.add_tokens(["<new-token>"])
    assert not same_encoding(one, two)


def test_requests_kept_in_memory_come_back_emptied_and_a_rewritten_file_is_read(
    tmp_path, monkeypatch
):
    """A process's next run gets the requests it last read or wrote without unpickling them,
    their responses emptied as in the file; a file another process rewrote is read again."""
    import os
    import pickle

    from lm_eval.api.instance import Instance

    from wsc_tasks.kept import PickledFiles

    file = tmp_path / "requests.pickle"
    monkeypatch.setattr(request_cache, "path", lambda task, kwargs: file)
    monkeypatch.setattr(request_cache, "_FILES", PickledFiles(64))
    built = Instance("loglikelihood", {"n": 1}, ("The cat", " sat"), 0, ("t", 0, 1))
    request_cache.save(None, {}, [[built]])
    built.resps.append((-1.5, False))  # the run that built them answers them
    built.filtered_resps["none"] = (-1.5, False)
    loads = []
    monkeypatch.setattr(request_cache.pickle, "loads", lambda data: loads.append(1))
    [[again]] = request_cache.load(None, {})
    assert again is built and again.resps == [] and again.filtered_resps == {} and not loads
    monkeypatch.undo()
    monkeypatch.setattr(request_cache, "path", lambda task, kwargs: file)
    other = Instance("loglikelihood", {"n": 2}, ("The dog", " ran off"), 0, ("t", 0, 1))
    file.write_bytes(pickle.dumps([[other]]))  # another worker wrote the file since
    os.utime(file, ns=(1, 1))
    [[read]] = request_cache.load(None, {})
    assert read.arguments == ("The dog", " ran off") and read.doc == {"n": 2}


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
def test_a_test_split_is_converted_once_per_documents_and_shared_by_no_object(monkeypatch):
    """Equal documents: one conversion, one Arrow table's memory and values, a ``Dataset`` of
    their own each (a format set on one leaves the other's) and the same fingerprint; other
    documents (one value changed, NaN against None) are converted again; documents that are not
    JSON are converted each time, as ``datasets`` converts them."""
    monkeypatch.setattr(request_task, "_SPLITS", request_task.Latest(4))
    converted: list[int] = []
    from_list = datasets.Dataset.from_list
    monkeypatch.setattr(datasets.Dataset, "from_list", lambda documents: converted.append(1) or
                        from_list(documents))  # fmt: skip

    def documents(value=1.5):
        return [{"text": "a b", "options": [["x"], ["y"]], "score": value, "n": 3},
                {"text": "c", "options": [["z"]], "score": 2.0, "n": None}]  # fmt: skip

    first, second = request_task.test_split(documents()), request_task.test_split(documents())
    assert len(converted) == 1 and first is not second
    assert first.to_list() == second.to_list() == from_list(documents()).to_list()
    text = [split.data.table.column("text").chunk(0).buffers()[2] for split in (first, second)]
    assert text[0].address == text[1].address  # one Arrow table's memory
    assert first.features == second.features and first._fingerprint == second._fingerprint
    first.set_format("numpy")
    assert second.format["type"] is None and second[0]["options"] == [["x"], ["y"]]
    assert request_task.test_split(documents(2.5))[0]["score"] == 2.5 and len(converted) == 2
    nan = request_task.test_split(documents(math.nan))
    none = request_task.test_split(documents(None))
    assert math.isnan(nan[0]["score"]) and none[0]["score"] is None and len(converted) == 4
    raw = [{"bytes": b"\x00\x01"}]
    assert request_task.test_split(raw)[0] == request_task.test_split(raw)[0] == raw[0]
    assert len(converted) == 6


def test_a_sweeps_models_with_one_tokenizer_build_and_encode_once(
    gpt2_pair, task_manager, tmp_path, monkeypatch
):
    """Three runs with lm-eval's request cache in one folder: the first builds and encodes, the
    second (other weights, other folder, same tokenizer) builds no request, encodes no text,
    computes no problem's requests or token facts, converts no task's documents to a split,
    unpickles nothing (this process holds what it wrote) and writes no encodings file again,
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
    files = list((tmp_path / "requests").glob(f"{encoding.ENCODINGS_FILE}-*"))
    written = {path: path.stat().st_mtime_ns for path in files}
    unpickled: list[int] = []  # the requests and encodings this process already holds
    loads = pickle.loads
    monkeypatch.setattr(pickle, "loads", lambda data, *a, **k: unpickled.append(1) or loads(
        data, *a, **k))  # fmt: skip
    computed: list[int] = []  # a problem's requests: computed once per methods and tokenizer
    requests_of = Causal.requests
    monkeypatch.setattr(Causal, "requests", lambda self, problem, setup: computed.append(1) or
                        requests_of(self, problem, setup))  # fmt: skip
    converted: list[int] = []  # a task's documents made a ``datasets`` split: once per process
    from_list = datasets.Dataset.from_list
    monkeypatch.setattr(datasets.Dataset, "from_list", lambda documents: converted.append(1) or
                        from_list(documents))  # fmt: skip
    facts: list[int] = []  # a problem's token facts: once per setup
    lengths_of = Counter.answer_lengths
    monkeypatch.setattr(Counter, "answer_lengths", lambda self, problem: facts.append(1) or
                        lengths_of(self, problem))  # fmt: skip
    second, n_second, lm = run(gpt2_pair[1], cache=True)
    monkeypatch.setattr(pickle, "loads", loads)
    assert not unpickled and not computed and not facts and not converted
    assert n_second == 0 and not batches and not encoded, (n_second, len(encoded))
    assert written and {path: path.stat().st_mtime_ns for path in files} == written  # nothing new
    assert encoding.memo_of(lm)  # the model's encodings came from the cache too
    plain, n_plain, _ = run(gpt2_pair[1], cache=False)
    assert n_plain > 0 and second == plain
    llama = tiny_models.family_model(tmp_path / "llama", "llama", tiny_models.tokenizer("smollm2"))
    _, n_third, _ = run(llama, cache=True)  # another tokenizer
    assert n_third > 0
    assert first.keys() == second.keys()


# -- the documents a cached request set was built from ---------------------------------------------
SELECTIONS = {
    "full": {},
    "limit": {"limit": 4},
    "samples": {"samples": {"wsc266": [51, 95, 105, 114]}},
    "first four": {"samples": {"wsc266": [0, 1, 2, 3]}},
}
ORDERS = [
    ("samples", "first four", "limit", "full"),  # the order that paired documents wrongly
    ("samples", "full", "limit"),
    ("full", "samples", "first four"),
    ("limit", "samples", "full", "first four"),
]


def _outcomes(out: dict) -> list:
    """Each document's arguments, answers and metric values, in the order lm-eval gives them."""
    return [
        (s["doc_id"], s["arguments"], s["resps"], s["acc"], s["schema_acc"])
        for s in out["samples"]["wsc266"]
    ]


@pytest.mark.slow
@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_every_order_of_full_limit_and_samples_runs_scores_as_without_the_cache(
    order, gpt2_pair, task_manager, tmp_path, monkeypatch
):
    """Through lm-eval's API, one cache folder for the whole order: each run's documents, their
    requests and answers, and its metrics equal a run without the cache, exactly."""
    import lm_eval.caching.cache as lm_cache

    monkeypatch.setattr(lm_cache, "PATH", str(tmp_path / "requests"))
    lm = HFLM(pretrained=str(gpt2_pair[0]), device="cpu", batch_size=16)

    def run(name: str, cache: bool) -> list:
        out = lm_eval.simple_evaluate(
            model=lm, tasks=["wsc266"], task_manager=task_manager(pretrained=str(gpt2_pair[0])),
            cache_requests=cache, bootstrap_iters=0, log_samples=True, **SELECTIONS[name],
        )  # fmt: skip
        return _outcomes(out)

    for name in order:
        assert run(name, cache=True) == run(name, cache=False), name
