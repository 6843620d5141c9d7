"""The family matrix: real architectures (tiny, random, built offline) with real tokenizers.

For every family, (1) every task of ``wsc_group`` builds its requests with the family's tokenizer
and each request gives the model exactly the token ids its scoring formula means
(``tokens.check_request`` under lm-eval's own encoding rules), and (2) ``wsc266`` and
``winogrande_dev`` run end to end through lm-eval on a few documents, where the ids lm-eval
actually feeds the model are recorded and compared with the intended ones. Tokenizers: GPT-2's
byte-level BPE, the same BPE numbered as RoBERTa/OPT number it, SmolLM2's (from its GGUF),
Mistral-7B v0.1's SentencePiece (``tokenizer.model.v1`` of ``mistral-common``), and a WordPiece
and two SentencePiece unigrams (one with T5's sentinels) trained on the project's sentences; the
models and tokenizers are built by ``tests/tiny_models.py``.
"""

from __future__ import annotations

from pathlib import Path

import lm_eval
import pytest
import tiny_models
from lm_eval.models.huggingface import HFLM

from wsc_tasks.data import catalog
from wsc_tasks.models import mlm
from wsc_tasks.scoring import causal, families, seq2seq
from wsc_tasks.scoring.methods import ScoringError, Setup
from wsc_tasks.scoring.tokens import TokenCounter, check_request
from wsc_tasks.serving.requests import REQUEST_TYPE
from wsc_tasks.tasks.winowhy import WinoWhyTask

pytestmark = pytest.mark.slow

LIMIT = 8
MASKED_SAMPLE = 40  # documents per task whose masked-LM requests are planned in the static check


# architecture, tokenizer, family
MATRIX = [
    ("gpt2", "gpt2", "causal"),
    ("mistral", "mistral", "causal"),  # SentencePiece, BOS prepended
    ("llama", "smollm2", "causal"),  # the embedded default model's tokenizer
    ("opt", "opt", "causal"),  # '</s>' as BOS
    ("qwen2", "smollm2", "causal"),
    ("gemma", "mistral", "causal"),  # SentencePiece, BOS required
    ("gpt_neox", "gpt2", "causal"),
    ("t5", "t5", "seq2seq"),
    ("bert", "wordpiece", "masked"),
    ("roberta", "roberta", "masked"),
    ("deberta-v2", "unigram", "masked"),
    ("albert", "unigram", "masked"),
    ("electra", "wordpiece", "masked"),
    ("modernbert", "modernbert", "masked"),
]
IDS = [f"{arch}-{tok}" for arch, tok, _ in MATRIX]
# Requests depend on the tokenizer and the family only: each pair is checked once, on all tasks.
BY_TOKENIZER = list({(tok, family): (arch, tok, family) for arch, tok, family in MATRIX[::-1]}
                    .values())[::-1]  # fmt: skip


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, tokenizers):
    made: dict[str, Path] = {}

    def get(arch: str, tok_name: str) -> Path:
        key = f"{arch}-{tok_name}"
        if key not in made:
            folder = tmp_path_factory.mktemp(key)
            made[key] = tiny_models.family_model(folder, arch, tokenizers(tok_name))
        return made[key]

    return get


def _leaf_tasks(tree) -> list:
    out = []
    for value in tree.values():
        out.extend(_leaf_tasks(value) if isinstance(value, dict) else [value])
    return out


def _causal_intended(problem, setup: Setup, methods=None) -> dict:
    """Every request the causal ``methods`` (default: every registered one) send for a problem,
    with the token ids it must give the model, as each method's formula declares them."""
    out = {}
    for method in families.FAMILIES["causal"].methods.values() if methods is None else methods:
        out.update(method.intended(problem, setup))
    return out


def _seq2seq_intended(tokens: TokenCounter, problem, option: int, prefix: bool, eos) -> tuple:
    """A T5 request with the ids it means: the input with one sentinel per blank (lm-eval
    encodes it on its own, with the EOS the tokenizer appends) and the target's ids."""
    request = seq2seq.sentinel_request(problem, option, prefix, eos, tokens)
    target = seq2seq.target_ids(tokens, tuple(problem.options[option]), eos)
    return request, (tuple(tokens.encode(request[1][0])), target)


def _intended(task, doc: dict) -> dict:
    """Every request the task's token-counting methods mean for this document, with its ids."""
    tokens, out = task.setup.tokens, {}
    for schema in task.schemas(doc):
        for problem in schema.problems:
            if task.family == "causal":
                out.update(_causal_intended(problem, task.setup, task.methods))
            elif task.family == "seq2seq":
                for method in task.methods:
                    eos = method._eos(task.setup)
                    for option in range(len(problem.options)):
                        request, split = _seq2seq_intended(
                            tokens, problem, option, method.prefix, eos
                        )
                        out[request] = split
    return out


def _reason_intended(tokens: TokenCounter, request) -> tuple:
    """WinoWhy's causal request: the reason's tokens after the question's, split between them."""
    context, continuation = request[1]
    ids = tokens.intended_split(context + continuation, len(tokens.encode(context, False)))
    return tuple(ids[0]), tuple(ids[1])


def _check_task(task, tokens: TokenCounter, limit: int | None = None) -> int:
    checked = 0
    docs = task.dataset["test"]
    for doc in docs if limit is None else list(docs)[:limit]:
        instances = task.construct_requests(doc, "")
        if isinstance(task, WinoWhyTask):
            intended = {}
            for instance, reason in zip(instances, doc["reasons"], strict=True):
                request = ("loglikelihood", instance.arguments)
                if task.family == "causal":
                    intended[request] = _reason_intended(tokens, request)
                elif task.family == "seq2seq":
                    target = seq2seq.target_ids(tokens, (reason,), None)
                    intended[request] = (tuple(tokens.encode(instance.arguments[0])), target)
        else:
            intended = _intended(task, doc)
        for instance in instances:
            kind = (
                "loglikelihood" if instance.request_type == REQUEST_TYPE else instance.request_type
            )
            request = (kind, instance.arguments)
            if instance.request_type == "mlm_score":
                text, spans, mode = instance.arguments
                mlm.plan_jobs(tokens.tokenizer, text, spans, mode)  # answer tokens found
            else:
                assert request in intended, request
                check_request(tokens, request, intended[request])
            checked += 1
    return checked


@pytest.mark.parametrize(
    "arch, tok_name, family", BY_TOKENIZER, ids=[f"{t}-{f}" for _, t, f in BY_TOKENIZER]
)
def test_every_wsc_group_request_means_its_tokens(
    arch, tok_name, family, model_dir, tokenizers, data_dir, task_manager
):
    folder = model_dir(arch, tok_name)
    manager = task_manager(pretrained=str(folder))
    tasks = _leaf_tasks(manager.load(["wsc_group"])["tasks"])
    assert len(tasks) >= 40
    own = TokenCounter(tokenizers(tok_name))  # masked WinoWhy counts with the model's own
    for task in tasks:
        assert task.family == family
        tokens = task.setup.tokens if hasattr(task, "setup") else task.tokens
        # masked requests are plain strings (hf-mlm re-checks every one when it plans its jobs):
        # a sample of each task shows the family's spans find their tokens
        limit = MASKED_SAMPLE if family == "masked" else None
        assert _check_task(task, tokens or own, limit) > 0, task.config.task


class Recording(HFLM):
    """lm-eval's HF model, recording the token ids it feeds for every request (lm-eval's own
    loop: a seq2seq model; a causal model's requests, tokenized by lm-eval, reach
    ``serving.tries.model_inputs``, recorded by ``_record_causal``)."""

    seen: dict = {}

    def _loglikelihood_tokens(self, requests, *args, **kwargs):
        _record(requests)
        return super()._loglikelihood_tokens(requests, *args, **kwargs)


def _record(requests) -> None:
    for (context, continuation), context_enc, continuation_enc in requests:
        Recording.seen[(context, continuation)] = (tuple(context_enc), tuple(continuation_enc))


@pytest.fixture
def _record_causal(monkeypatch):
    from wsc_tasks.serving import tries

    model_inputs = tries.model_inputs

    def recording(requests):
        _record(requests)
        return model_inputs(requests)

    monkeypatch.setattr(tries, "model_inputs", recording)


@pytest.mark.parametrize("arch, tok_name, family", MATRIX, ids=IDS)
def test_wsc266_and_winogrande_dev_end_to_end(
    arch, tok_name, family, model_dir, data_dir, task_manager, _record_causal
):
    folder = model_dir(arch, tok_name)
    manager = task_manager(pretrained=str(folder), metrics="all")  # the counts among them
    Recording.seen = {}
    if family == "masked":
        model, model_args = "hf-mlm", f"pretrained={folder}"
    else:
        backend = "seq2seq" if family == "seq2seq" else "causal"
        model = Recording(pretrained=str(folder), device="cpu", batch_size=64, backend=backend)
        model_args = None
    out = lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["wsc266", "winogrande_dev"],
        task_manager=manager,
        device="cpu",
        batch_size=64,
        limit=LIMIT,
        bootstrap_iters=0,
    )
    for name in ("wsc266", "winogrande_dev"):
        row = out["results"][name]
        assert LIMIT <= row["n_problems,none"] <= 2 * LIMIT
        assert 0 <= row["acc,none"] <= 1
    if family == "masked":
        return
    tasks = _leaf_tasks(manager.load(["wsc266", "winogrande_dev"])["tasks"])
    intended = {}
    for task in tasks:
        for doc in list(task.dataset["test"])[:LIMIT]:
            intended.update({r[1]: ids for r, ids in _intended(task, doc).items()})
    assert Recording.seen and set(Recording.seen) <= set(intended)
    for arguments, ids in Recording.seen.items():
        assert ids == tuple(map(tuple, intended[arguments])), arguments


def test_gpt2_lone_space_answers_are_split_after_it(data_dir):
    """GPT-2 splits " iced" into 'Ġ' + 'iced': the context of σ2 given σ1 would be a lone space,
    which lm-eval moves into the continuation. Both tokens go to the WebText prior instead."""
    counter = TokenCounter(tiny_models.gpt2_tokenizer())
    assert counter.encode(" iced", False) == [220, 3711]
    request, k, split = causal.token_split(counter, " iced")
    assert (request, k, split) == (None, 2, None)
    request, k, split = causal.token_split(counter, " iced tea")
    assert k == 2 and request == ("loglikelihood", (" iced", " tea"))
    setup = Setup(counter, "webtext", 1)
    problems = [p for s in catalog.load("winogrande_dev") for p in s.problems]
    shifted = sum(causal.shifted_splits(p, setup) for p in problems)
    assert shifted == 3  # the fillers " iced" (line 263) and " urn" (458, 459)
    for problem in problems:
        for request, ids in _causal_intended(problem, setup).items():
            check_request(counter, request, ids)


def test_sentencepiece_lone_prefix_is_not_a_context(tokenizers):
    """Mistral's '▁' + 'urn': the text of σ1 alone re-encodes as '▁u', so all-but-first
    conditions on the first two tokens, both visible in the counts."""
    counter = TokenCounter(tokenizers("mistral"))
    assert counter.tokenizer.convert_ids_to_tokens(counter.encode("urn is here.", False))[:2] == [
        "▁",
        "urn",
    ]
    request, k, split = causal.token_split(counter, "urn is here.")
    assert k == 2 and request == ("loglikelihood", ("urn", " is here."))
    check_request(counter, request, split)


def test_bart_without_sentinels_is_refused_before_any_model_work(model_dir, data_dir, task_manager):
    folder = model_dir("bart", "roberta")
    manager = task_manager(pretrained=str(folder))
    with pytest.raises(ScoringError, match="no sentinel token <extra_id_0>"):
        manager.load(["wsc266"])["tasks"]
