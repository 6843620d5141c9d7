"""lm-eval patch 4, ``remember_tokens``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    Request,
    _replace,
    original,
)
from wsc_tasks.scoring.tokens import (
    TokenCounter,
    agrees,
    batch_encode,
    encoding_identity,
    same_encoding,
)


# ``TemplateLM._encode_pair`` makes two tokenizer calls per request, one text at a time. An HF
# causal model's ``tok_encode`` now remembers its texts, and section 3 fills that memo before each
# model call: with the encodings of the tasks' token counters whose tokenizer encodes alike
# (``tokens.same_encoding``, a sample checked against the model's tokenizer, ``tokens.agrees``)
# and the same special tokens, most of the texts, as the tasks check how lm-eval will split each
# request they build; the rest with one batched tokenizer call (same tokenizer arguments as
# ``HFLM.tok_encode``). No upstream issue found; upstream, ``TemplateLM.loglikelihood`` could
# encode the pairs with one ``tokenizer(list)`` call.
def _encode_in_one_batch(
    lm: object, requests: Sequence[Request], counters: Sequence[TokenCounter] = ()
) -> None:
    """Fill an HF causal model's text → tokens memo for the texts that
    ``TemplateLM.loglikelihood`` will encode (``_encode_pair``'s, and an empty context's
    continuation): from ``counters`` where they encoded a text alike, else with batched
    calls."""
    from lm_eval.models.huggingface import HFLM

    if not isinstance(lm, HFLM) or getattr(lm, "backend", None) != "causal":
        return
    from lm_eval.models.utils import _add_special_kwargs

    texts: set[str] = set()
    alone: set[str] = set()  # an empty context's continuation, encoded without special tokens
    for request in requests:
        context, continuation = request.args[:2]
        if not context:
            alone.add(continuation)
            continue
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        texts.update((context, context + continuation))
    memo = _memo(lm)
    alike = [c for c in counters if same_encoding(c.tokenizer, lm.tokenizer)]
    source = "a task's token counter"  # where the encodings came from, for ``agrees``' warning
    bos = lm.tokenizer.decode(lm.prefix_token_id)
    default = _add_special_kwargs(None, lm.add_bos_token).get("add_special_tokens")
    for flag, key, chosen in (
        (default, None, [t for t in texts if not t.startswith(bos)]),  # tok_encode's own rule
        (False, False, list(alone)),
    ):
        todo = sorted(t for t in chosen if (t, key) not in memo)
        for counter in alike:
            hits = {text: found for text in todo if (found := counter.known(text, flag))}
            if hits and agrees(lm.tokenizer, list(hits), list(hits.values()), flag, source):
                memo.update(((text, key), list(found)) for text, found in hits.items())
                todo = [text for text in todo if text not in hits]
        encoded = batch_encode(lm.tokenizer, todo, flag)
        if encoded is not None:  # else lm-eval encodes them one at a time, as without the memo
            memo.update(((text, key), ids) for text, ids in zip(todo, encoded[0], strict=True))


# With lm-eval's ``--cache_requests``, the encodings are kept too, in lm-eval's request-cache
# folder (``lm_eval.caching.cache``), one file per tokenizer: the tasks' counters' (by
# ``TokenCounter.identity``) and the model's memo (by its tokenizer's ``encoding_identity`` and
# ``add_bos_token``), each name also carrying the package's source fingerprint. The next run with
# the same tokenizer, another model of a sweep included, reads them instead of encoding again;
# a tokenizer that encodes any text differently has another identity, so another file.
ENCODINGS_FILE = "wsc_tasks-encodings"


def _model_identity(lm: object) -> str | None:
    """What an HF causal model's memo follows: its tokenizer's encodings and BOS rule."""
    from lm_eval.models.huggingface import HFLM

    if not isinstance(lm, HFLM) or getattr(lm, "backend", None) != "causal":
        return None
    return encoding_identity(lm.tokenizer, lm.add_bos_token)


def _encodings_files(
    lm: object, counters: Sequence[TokenCounter]
) -> list[tuple[str, TokenCounter | None]]:
    """(lm-eval cache file name, counter; None: the model's memo) of each identified tokenizer."""
    from wsc_tasks.harness.fingerprint import package_fingerprint

    package = package_fingerprint()
    found = {f"{ENCODINGS_FILE}-{c.identity}-{package}": c for c in counters if c.identity}
    files: list[tuple[str, TokenCounter | None]] = list(found.items())
    model = _model_identity(lm)
    if model is not None:
        files.append((f"{ENCODINGS_FILE}-model-{model}-{package}", None))
    return files


def load_encodings(lm: object, counters: Sequence[TokenCounter]) -> int:
    """Fill the counters' and the model's memos from their files in lm-eval's request cache;
    returns how many encodings were read."""
    from lm_eval.caching.cache import load_from_cache

    read = 0
    for name, counter in _encodings_files(lm, counters):
        kept = load_from_cache(file_name=name, cache=True)
        if not isinstance(kept, dict):
            continue
        if counter is None:
            _memo(lm).update(kept)
            read += len(kept)
        else:
            counter.remember(kept)
            read += len(kept.get("ids", {}))
    return read


def save_encodings(lm: object, counters: Sequence[TokenCounter]) -> int:
    """Write the counters' and the model's memos to lm-eval's request cache; returns how many
    encodings were written."""
    from lm_eval.caching.cache import save_to_cache

    written = 0
    for name, counter in _encodings_files(lm, counters):
        memo: dict = dict(_memo(lm)) if counter is None else counter.memo()
        save_to_cache(file_name=name, obj=memo)
        written += len(memo) if counter is None else len(memo["ids"])
    return written


def _memo(lm: object) -> dict[tuple[str, bool | None], list[int]]:
    """``lm``'s text → tokens memo (made on first use, kept in the model object itself)."""
    memo: dict[tuple[str, bool | None], list[int]]
    memo = vars(lm).setdefault("_wsc_tasks_token_memo", {})
    return memo


def _remember_tokens() -> None:
    from lm_eval.models.huggingface import HFLM

    tok_encode_original = HFLM.tok_encode

    def tok_encode(
        self: object,
        string: str,
        add_special_tokens: bool | None = None,
        left_truncate_len: int | None = None,
        **kwargs: object,
    ) -> list[int]:
        if left_truncate_len or kwargs:
            return tok_encode_original(
                self, string, add_special_tokens, left_truncate_len, **kwargs
            )
        memo = _memo(self)
        key = (string, add_special_tokens)
        if key not in memo:
            memo[key] = tok_encode_original(self, string, add_special_tokens)
        return list(memo[key])

    _replace(HFLM, "tok_encode", tok_encode)


class RecordingTemplateLM(Protocol):
    encoded: list[str]
    sent: list[object]

    def loglikelihood(self, requests: list[object]) -> list[tuple[float, bool]]: ...


def recording_template_lm() -> RecordingTemplateLM:
    """An lm-eval ``TemplateLM`` that records the texts it encodes and the requests it scores."""
    from lm_eval.api.model import TemplateLM

    class Recorder(TemplateLM):
        eot_token_id = 0

        def __init__(self) -> None:
            super().__init__()
            self.encoded: list[str] = []
            self.sent: list[object] = []

        def tok_encode(self, string: str, **kwargs: object) -> list[int]:
            self.encoded.append(string)
            return [ord(c) for c in string]

        def _loglikelihood_tokens(
            self, requests: list[object], **kwargs: object
        ) -> list[tuple[float, bool]]:
            self.sent.extend(requests)
            return [(0.0, False)] * len(requests)

        def loglikelihood_rolling(self, requests: list[object], **kwargs: object) -> list[float]:
            raise NotImplementedError

        def generate_until(self, requests: list[object], **kwargs: object) -> list[str]:
            raise NotImplementedError

    recorder: RecordingTemplateLM = Recorder()
    return recorder


def lm_eval_encodes_a_text_again_on_every_call() -> bool:
    """lm-eval's ``TemplateLM`` makes two tokenizer calls a request, and ``HFLM.tok_encode``
    calls the tokenizer again for a text it has encoded before."""
    from types import SimpleNamespace

    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = recording_template_lm()
    lm.loglikelihood([Instance("loglikelihood", {}, ("a b", " c"), 0) for _ in range(3)])
    calls: list[str] = []

    def encode(text: str, **kwargs: object) -> list[int]:
        calls.append(text)
        return [1, 2]

    tokenizer = SimpleNamespace(encode=encode, decode=lambda ids: "<bos>")
    hf = SimpleNamespace(tokenizer=tokenizer, add_bos_token=False, prefix_token_id=0)
    tok_encode = original(HFLM, "tok_encode")
    tok_encode(hf, "same text")
    tok_encode(hf, "same text")
    return len(lm.encoded) == 6 and calls == ["same text", "same text"]


PATCH = Patch(
    "remember_tokens",
    "lm_eval.models.huggingface.HFLM.tok_encode",
    TESTED,
    still_needed=lm_eval_encodes_a_text_again_on_every_call,
)
