"""Token-level facts about problems, counted exactly as lm-eval's HF models split requests.

Mean scoring divides by numbers of tokens, smart scoring looks at how many tokens follow the blank,
and the equal-length subset (thesis §3.7.4) compares the options' token counts *in the context of
the problem* (capitalisation and leading space as substituted). lm-eval returns only sums of
log-probabilities, so the tasks count tokens themselves with the model's own tokenizer.
"""

from __future__ import annotations

import copy
import logging
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Protocol

from wsc_tasks.data.problems import Problem
from wsc_tasks.kept import Latest

log = logging.getLogger(f"lm_eval.{__name__}")

Offsets = tuple[tuple[int, int], ...]


class RequestMismatch(ValueError):
    """A request would not give the model the tokens its scoring formula means."""


class Tokenizer(Protocol):
    """A Hugging Face tokenizer, as far as counting tokens goes."""

    eos_token: str | None

    def __len__(self) -> int: ...

    def encode(self, text: str, *, add_special_tokens: bool = ...) -> list[int]: ...

    def __call__(  # one text, or a batch of texts (lists in the answer's values)
        self,
        text: str | list[str],
        *,
        add_special_tokens: bool = ...,
        return_offsets_mapping: bool = ...,
    ) -> Mapping[str, Any]: ...


def _special_tokens_kwargs(add_special_tokens: bool | None) -> dict[str, bool]:
    """The tokenizer's keyword for ``add_special_tokens``; none for None (its own default)."""
    return {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}


def batch_encode(
    tokenizer: Tokenizer,
    texts: Sequence[str],
    add_special_tokens: bool | None = None,
    offsets: bool = False,
) -> tuple[list[list[int]], list[Offsets]] | None:
    """Each text's ids exactly as ``tokenizer.encode`` gives them (and, with ``offsets``, its
    tokens' character offsets), from one batch call of a fast tokenizer's Rust backend; None for
    a tokenizer that cannot vouch for that (slow, or its batch differs from ``encode`` on any
    of up to 16 texts spread over the batch).

    transformers' own batch call runs the same backend call and then converts every encoding
    to Python one at a time (over half its cost); the backend is used directly only while it
    neither pads nor truncates, as transformers' call would then also do."""
    if not texts or not getattr(tokenizer, "is_fast", False):
        return None
    kwargs = _special_tokens_kwargs(add_special_tokens)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    spans: list[Offsets] = []
    if backend is not None and backend.padding is None and backend.truncation is None:
        flag = True if add_special_tokens is None else add_special_tokens  # encode()'s default
        fast = getattr(backend, "encode_batch_fast", None)
        if offsets or fast is None:
            encodings = backend.encode_batch(list(texts), add_special_tokens=flag)
            spans = [tuple(e.offsets) for e in encodings] if offsets else []
        else:
            encodings = fast(list(texts), add_special_tokens=flag)
        ids = [e.ids for e in encodings]
    else:
        answer = tokenizer(list(texts), **kwargs, return_offsets_mapping=offsets)
        ids = [list(i) for i in answer["input_ids"]]
        if offsets:
            spans = [tuple((int(a), int(b)) for a, b in o) for o in answer["offset_mapping"]]
    if not agrees(tokenizer, texts, ids, add_special_tokens, "its batch call"):
        return None
    return ids, spans


def agrees(
    tokenizer: Tokenizer,
    texts: Sequence[str],
    ids: Sequence[Sequence[int]],
    add_special_tokens: bool | None,
    source: str,
) -> bool:
    """Whether ``tokenizer.encode`` gives ``ids`` for up to 16 of ``texts``, spread over them
    (the check of encodings made another way, by ``source``); logs the first that differs."""
    kwargs = _special_tokens_kwargs(add_special_tokens)
    step = max(len(texts) // 16, 1)
    for i in range(0, len(texts), step):
        if list(ids[i]) != list(tokenizer.encode(texts[i], **kwargs)):
            log.warning(
                "wsc_tasks: %s encodes %r differently from this tokenizer's encode(); "
                "encoding one text at a time",
                source,
                texts[i],
            )
            return False
    return True


def same_encoding(a: object, b: object) -> bool:
    """Whether two tokenizer objects encode every text alike: one object, or fast tokenizers of
    one class, built with the same arguments (but where they were read from) around the same Rust
    tokenizer (its vocabulary, merges, normalizer, pre-tokenizer, post-processor and added
    tokens, as serialised): the same ``encoding_identity``."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    found = _identity_of(a)
    return found is not None and found == _identity_of(b)


_IDENTITIES: weakref.WeakKeyDictionary[object, tuple[int, str | None]] = weakref.WeakKeyDictionary()


def _identity_of(tokenizer: object) -> str | None:
    """``encoding_identity`` of a tokenizer object, computed once per object and size (serialising
    a Rust tokenizer takes milliseconds, and every task of a run asks; a token added since
    changes its size)."""
    size = len(tokenizer) if hasattr(tokenizer, "__len__") else -1
    try:
        known = _IDENTITIES.get(tokenizer)
    except TypeError:  # neither hashable nor weakly referable: computed every time
        return encoding_identity(tokenizer)
    if known is None or known[0] != size:
        known = _IDENTITIES[tokenizer] = (size, encoding_identity(tokenizer))
    return known[1]


# tokenizer arguments that say where it was read from, not how it encodes
_LOCATION_ARGUMENTS = frozenset(
    {"name_or_path", "vocab_file", "merges_file", "tokenizer_file", "is_local", "local_files_only",
     "_commit_hash", "cache_dir"}
)  # fmt: skip


def encoding_identity(tokenizer: object, *rule: object) -> str | None:
    """16 hex digits that change with whatever decides a fast tokenizer's encodings (its class,
    its arguments but those naming where it was read from, its Rust tokenizer as serialised) and
    with ``rule`` (how it is called: special tokens, BOS), and with nothing else: two models'
    folders holding the same tokenizer get the same identity. None for a tokenizer without a
    Rust backend, which has no such serialisation."""
    import hashlib
    import json

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return None
    arguments = getattr(tokenizer, "init_kwargs", None) or {}
    kept = {k: v for k, v in arguments.items() if k not in _LOCATION_ARGUMENTS}
    rules = [type(tokenizer).__qualname__, kept, backend.to_str(), list(rule)]
    text = json.dumps(rules, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# hashed by identity: one counter per tokenizer and encoding rule, a key of scoring caches; frozen,
# since every task of a run shares it (``_counter``)
@dataclass(frozen=True, eq=False)
class TokenCounter:
    """Counts continuation tokens the way ``lm_eval.api.model.TemplateLM._encode_pair`` does."""

    tokenizer: Tokenizer
    add_special_tokens: bool | None = None  # None: the tokenizer's default, as lm-eval's HFLM
    seq2seq: bool = False  # lm-eval encodes an encoder–decoder's context on its own
    _cache: dict[tuple[str, bool | None], tuple[int, ...]] = field(default_factory=dict, repr=False)
    _offsets: dict[str, Offsets] = field(default_factory=dict, repr=False)
    # [texts encoded in batches, tokenizer calls for one text]: what ``prime`` saved (the tests)
    calls: list[int] = field(default_factory=lambda: [0, 0], repr=False)

    @property
    def batched(self) -> bool:
        """Whether ``prime`` can encode in batch calls (a fast, Rust-backed tokenizer)."""
        return bool(getattr(self.tokenizer, "is_fast", False))

    def prime(self, texts: Iterable[str], add_special_tokens: bool | None = None) -> int:
        """Encode the texts not yet cached in one batch call of the tokenizer, so that the
        counting that follows finds them cached; returns how many it encoded.

        A fast tokenizer encodes a batch in Rust, in parallel, without the per-call Python of
        ``encode`` (measured with GPT-2's: 21 µs a text through the backend against 108 for
        ``encode``); see ``batch_encode`` for when the batch is trusted."""
        flag = self.add_special_tokens if add_special_tokens is None else add_special_tokens
        todo = list(dict.fromkeys(t for t in texts if (t, flag) not in self._cache))
        encoded = batch_encode(self.tokenizer, todo, flag)
        if encoded is None:
            return 0
        for text, ids in zip(todo, encoded[0], strict=True):
            self._cache[(text, flag)] = tuple(ids)
        self.calls[0] += len(todo)
        return len(todo)

    def prime_offsets(self, texts: Iterable[str]) -> int:
        """Character offsets (and ids without special tokens) of the texts not yet known, in one
        batch call of a fast tokenizer; returns how many it encoded."""
        todo = list(dict.fromkeys(t for t in texts if t and t not in self._offsets))
        encoded = batch_encode(self.tokenizer, todo, False, offsets=True)
        if encoded is None:
            return 0
        for text, ids, offsets in zip(todo, *encoded, strict=True):
            self._offsets[text] = offsets
            self._cache.setdefault((text, False), tuple(ids))
        self.calls[0] += len(todo)
        return len(todo)

    def known(self, text: str, add_special_tokens: bool | None) -> tuple[int, ...] | None:
        """``text``'s ids if already encoded with ``add_special_tokens`` as the tokenizer is
        given it (None: the tokenizer's default), else None; encodes nothing."""
        return self._cache.get((text, add_special_tokens))

    def offsets(self, text: str) -> Offsets:
        """(start, end) character offsets of ``text``'s tokens, without special tokens."""
        if text not in self._offsets:
            self.calls[1] += 1
            encoding = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            self._offsets[text] = tuple((int(a), int(b)) for a, b in encoding["offset_mapping"])
        return self._offsets[text]

    def encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]:
        flag = self.add_special_tokens if add_special_tokens is None else add_special_tokens
        return list(self._encode(text, flag))

    def _encode(self, text: str, flag: bool | None) -> tuple[int, ...]:
        key = (text, flag)
        if key not in self._cache:
            kwargs = _special_tokens_kwargs(flag)
            self.calls[1] += 1
            self._cache[key] = tuple(self.tokenizer.encode(text, **kwargs))
        return self._cache[key]

    def split(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """(context tokens, continuation tokens) of a causal loglikelihood request."""
        if not context:
            return [], self.encode(continuation, add_special_tokens=False)
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        whole = self.encode(context + continuation)
        head = self.encode(context)
        return head, whole[len(head) :]

    @cached_property
    def identity(self) -> str | None:
        """What this counter's encodings follow: ``encoding_identity`` of its tokenizer and
        encoding rule; None when the tokenizer has no content identity."""
        return encoding_identity(self.tokenizer, self.add_special_tokens, self.seq2seq)

    def memo(self) -> dict[str, dict]:
        """Everything encoded so far (ids by text and rule, offsets by text), to be kept."""
        return {"ids": dict(self._cache), "offsets": dict(self._offsets)}

    def remember(self, memo: Mapping[str, Mapping]) -> None:
        """Take the encodings of ``memo`` (``TokenCounter.memo`` of a counter of the same
        ``identity``) as if encoded here; what is known already stays."""
        for key, ids in memo.get("ids", {}).items():
            self._cache.setdefault(key, ids)
        for text, offsets in memo.get("offsets", {}).items():
            self._offsets.setdefault(text, offsets)

    @cached_property  # asked for every request; transformers' attribute lookup is slow
    def prefix_token_id(self) -> int | None:
        """What lm-eval's HFLM puts before an empty context: BOS, else EOS."""
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return bos if bos is not None else getattr(self.tokenizer, "eos_token_id", None)

    def model_input(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """(context ids, continuation ids) exactly as lm-eval's ``loglikelihood`` builds them:
        an empty context becomes the prefix token, trailing whitespace of the context moves to
        the continuation, and a seq2seq context is encoded on its own."""
        if not context:
            ids = self.encode(continuation, add_special_tokens=False)
            prefix = self.prefix_token_id
            if prefix is None or not ids:
                return [], ids
            return ([prefix], ids) if prefix != ids[0] else (ids[:1], ids[1:])
        if not self.seq2seq:
            return self.split(context, continuation)
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        return self.encode(context), self.encode(continuation, add_special_tokens=False)

    def intended_split(self, text: str, k: int) -> tuple[list[int], list[int]]:
        """``text`` tokenized as the model reads it (the tokenizer's own special tokens
        included), split after its ``k``-th token; k = 0 means after the prefix token."""
        plain = self.encode(text, add_special_tokens=False)
        if k == 0:
            prefix = self.prefix_token_id
            return ([] if prefix is None else [prefix]), plain
        whole = self.encode(text)
        lead = next(
            (s for s in range(len(whole) - len(plain) + 1) if whole[s : s + len(plain)] == plain),
            None,
        )
        if lead is None:
            raise RequestMismatch(
                f"{text!r}: its tokens with special tokens do not contain its tokens without them"
            )
        return whole[: lead + k], whole[lead + k :]

    def n_continuation(self, context: str, continuation: str) -> int:
        return len(self.split(context, continuation)[1])

    def first_token_text(self, text: str) -> str:
        """The prefix of ``text`` that its first token covers (for all-but-first scoring)."""
        offsets = self.offsets(text)
        if not offsets:
            raise ValueError(f"empty text has no first token: {text!r}")
        return text[: offsets[0][1]]

    def answer_lengths(self, problem: Problem) -> tuple[int, int]:
        """Token counts of the two options in the context of the problem (first blank)."""
        before = problem.segments[0]
        first, second = (  # a problem has two options
            self.n_continuation(before, filler) if before else len(self.encode(filler, False))
            for filler, *_ in problem.options
        )
        return first, second

    def tokens_after_blank(self, problem: Problem, option: int) -> int:
        """Number of tokens after the (last) filled blank: what partial scoring predicts."""
        filled = problem.fill(option)
        after = problem.segments[-1]
        return self.n_continuation(filled[: len(filled) - len(after)], after)


def check_request(
    counter: TokenCounter,
    request: tuple[str, tuple[str, str]],
    intended: tuple[Sequence[int], Sequence[int]],
) -> None:
    """Raise ``RequestMismatch`` unless lm-eval turns ``request`` into exactly ``intended``
    (context ids, continuation ids): both non-empty, nothing moved across the split."""
    kind, (context, continuation) = request
    got = counter.model_input(context, continuation)
    if not got[0] or not got[1]:
        raise RequestMismatch(
            f"{kind} request {(context, continuation)!r}: lm-eval would build an empty "
            f"{'context' if not got[0] else 'continuation'} (tokens {got})"
        )
    if (list(got[0]), list(got[1])) != (list(intended[0]), list(intended[1])):
        raise RequestMismatch(
            f"{kind} request {(context, continuation)!r}: lm-eval builds context/continuation "
            f"{got[0]} / {got[1]}, the formula means {intended[0]} / {intended[1]}"
        )


_GGUF_PARSES: dict[str, object] = {}


@contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """While inside, transformers parses a GGUF file's metadata once per process.

    The tasks read the model's config (its family) and its tokenizer; from a GGUF file each of
    the two makes transformers parse the whole file's metadata again (seconds for SmolLM2's
    49 k-token vocabulary). Callers get a deep copy, so the shared parse cannot be altered.
    """
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = gguf_utils.load_gguf_checkpoint

    def load(path: object, return_tensors: bool = False, *args: object, **kwargs: object) -> object:
        if return_tensors or args or kwargs:
            return original(path, return_tensors, *args, **kwargs)
        key = str(path)
        if key not in _GGUF_PARSES:
            _GGUF_PARSES.clear()  # one model per run: keep one parse
            _GGUF_PARSES[key] = original(path, return_tensors=False)
        return copy.deepcopy(_GGUF_PARSES[key])

    gguf_utils.load_gguf_checkpoint = load
    try:
        yield
    finally:
        gguf_utils.load_gguf_checkpoint = original


@lru_cache(maxsize=8)
def _load_tokenizer(
    name: str, gguf_file: str | None, revision: str | None, trust: bool
) -> Tokenizer:
    from transformers import AutoTokenizer

    kwargs: dict[str, bool | str] = {"trust_remote_code": trust}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if revision:
        kwargs["revision"] = revision
    with gguf_parsed_once():
        tokenizer: Tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
    return tokenizer


def named_tokenizer(metadata: Mapping[str, object]) -> str | None:
    """The tokenizer the metadata names (``tokenizer``, else ``pretrained``), if any."""
    name = metadata.get("tokenizer") or metadata.get("pretrained")
    return name if isinstance(name, str) else None


def counter_from_metadata(
    metadata: Mapping[str, Any], seq2seq: bool = False
) -> TokenCounter | None:
    """A counter for the model named in lm-eval's task metadata (the CLI merges model_args);
    ``seq2seq``: lm-eval encodes the model's contexts alone (an encoder–decoder)."""
    name = named_tokenizer(metadata)
    if name is None:
        return None
    add_bos = metadata.get("add_bos_token")
    if add_bos is None and "base_url" in metadata:
        add_bos = False  # lm-eval's API models (local-completions…) encode without specials
    return _counter(
        name,
        metadata.get("gguf_file"),
        metadata.get("revision"),
        bool(metadata.get("trust_remote_code", False)),
        None if add_bos is None else bool(add_bos),
        seq2seq,
    )


@lru_cache(maxsize=8)
def _counter(
    name: str,
    gguf_file: str | None,
    revision: str | None,
    trust: bool,
    add_bos: bool | None,
    seq2seq: bool,
) -> TokenCounter:
    """One counter per tokenizer, so that every task of a run shares its encodings; and one per
    encoding identity (``same_encodings``)."""
    counter = TokenCounter(_load_tokenizer(name, gguf_file, revision, trust), add_bos, seq2seq)
    return same_encodings(counter)


_BY_IDENTITY: Latest[str, TokenCounter] = Latest(4)  # the latest few, by ``identity``


def same_encodings(counter: TokenCounter) -> TokenCounter:
    """The counter this process already has for ``counter``'s encodings (its ``identity``), else
    ``counter``: the models of a sweep's worker that share a tokenizer from different folders
    share one counter, its encodings and every scoring cache keyed by it (a request's pieces are
    computed once per tokenizer, not once per model)."""
    key = counter.identity
    if key is None:
        return counter
    return _BY_IDENTITY.use(key, counter)
