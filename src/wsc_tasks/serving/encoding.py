"""lm-eval's tokenization of this package's requests, each distinct text encoded once.

lm-eval's ``TemplateLM.loglikelihood`` encodes every request with two tokenizer calls, one text at
a time, and ``HFLM.tok_encode`` asks the tokenizer again for a text it has seen. For this
package's requests the model's view (``model_view``) answers ``tok_encode`` from a memo kept per
model object: filled first from the encodings the tasks' token counters made while they checked
how lm-eval would split each request (where their tokenizer encodes alike,
``tokens.same_encoding``), then with batched tokenizer calls, each source checked on a sample
against the model's own ``tok_encode``; anything else is encoded by ``tok_encode`` itself. lm-eval's
own ``loglikelihood`` code then runs on the view, so the token ids are its own, release by release.

With lm-eval's ``--cache_requests`` the memos are kept in lm-eval's request-cache folder too, one
file per tokenizer identity (``encoding_identity``), written again only when they grew, so a
later run, or another model with the same tokenizer, encodes nothing again.
"""

from __future__ import annotations

import logging
import os
import pickle
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from wsc_tasks.kept import PickledFiles
from wsc_tasks.scoring.tokens import (
    TokenCounter,
    batch_encode,
    encoding_identity,
    same_encoding,
)
from wsc_tasks.serving.own_methods import hf_own

log = logging.getLogger(f"lm_eval.{__name__}")

# a model's memo: (text, add_special_tokens as lm-eval passed it) → token ids
Memo = dict[tuple[str, bool | None], list[int]]
_MEMOS: weakref.WeakKeyDictionary[object, Memo] = weakref.WeakKeyDictionary()
ENCODINGS_FILE = "wsc_tasks-encodings"  # lm-eval cache file name prefix of the kept memos
SAMPLE = 16  # encodings from another source checked against the model's tok_encode


def memo_of(lm: object) -> Memo:
    """The model object's memo (made on first use; dropped with the model)."""
    return _MEMOS.setdefault(lm, {})


def memoised_tok_encode(memo: Memo) -> Callable[..., list[int]]:
    """A ``tok_encode`` method for the model's view: lm-eval's own (the class's), once per text
    and flag; truncation and other arguments go straight to lm-eval's."""

    def tok_encode(
        self: Any,
        string: str,
        add_special_tokens: bool | None = None,
        left_truncate_len: int | None = None,
        **kwargs: Any,
    ) -> list[int]:
        own = super(type(self), self).tok_encode
        if left_truncate_len or kwargs:
            return list(own(string, add_special_tokens, left_truncate_len, **kwargs))
        key = (string, add_special_tokens)
        found = memo.get(key)
        if found is None:
            found = memo[key] = list(own(string, add_special_tokens))
        return list(found)

    return tok_encode


def texts_encoded(pairs: Iterable[tuple[str, str]]) -> tuple[set[str], set[str]]:
    """The texts lm-eval's ``loglikelihood`` encodes for ``pairs`` (``_encode_pair``: the
    context without its trailing whitespace, and context + continuation; flag None), and the
    continuations of empty contexts (flag False)."""
    texts: set[str] = set()
    alone: set[str] = set()
    for context, continuation in pairs:
        if not context:
            alone.add(continuation)
            continue
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        texts.update((context, context + continuation))
    return texts, alone


def _agrees(lm: Any, found: dict[str, list[int]], flag: bool | None, source: str) -> bool:
    """Whether the model's own ``tok_encode`` gives ``found``'s ids for a sample of its texts."""
    texts = sorted(found)
    step = max(len(texts) // SAMPLE, 1)
    for text in texts[::step]:
        if list(lm.tok_encode(text, add_special_tokens=flag)) != list(found[text]):
            log.warning(
                "wsc_tasks: %s encodes %r otherwise than the model's tok_encode; those texts "
                "are encoded by the model one at a time",
                source,
                text,
            )
            return False
    return True


def prefill(lm: Any, pairs: Sequence[tuple[str, str]], counters: Sequence[TokenCounter]) -> int:
    """Fill the model's memo for the texts lm-eval will encode for ``pairs``: from the counters
    whose tokenizer encodes alike, then in batch calls; returns how many texts were added."""
    memo = memo_of(lm)
    texts, alone = texts_encoded(pairs)
    bos = getattr(lm.tokenizer, "bos_token", None)
    alike = [c for c in counters if same_encoding(c.tokenizer, lm.tokenizer)]
    added = 0
    for flag, chosen in (
        (None, [t for t in texts if not (bos and t.startswith(bos))]),  # tok_encode's own rule
        (False, list(alone)),
    ):
        todo = sorted(t for t in chosen if (t, flag) not in memo)
        counter_flag = _counter_flag(lm, flag)
        for counter in alike:
            hits = {t: list(ids) for t in todo if (ids := counter.known(t, counter_flag))}
            if hits and _agrees(lm, hits, flag, "a task's token counter"):
                memo.update(((t, flag), ids) for t, ids in hits.items())
                added += len(hits)
                todo = [t for t in todo if t not in hits]
        encoded = batch_encode(lm.tokenizer, todo, counter_flag) if todo else None
        if encoded is not None:
            batched = dict(zip(todo, encoded[0], strict=True))
            if _agrees(lm, batched, flag, "a batch call of the tokenizer"):
                memo.update(((t, flag), ids) for t, ids in batched.items())
                added += len(batched)
    return added


def _counter_flag(lm: Any, flag: bool | None) -> bool | None:
    """The tokenizer's ``add_special_tokens`` that lm-eval's ``tok_encode`` passes for ``flag``
    (None: the model's ``add_bos_token`` if set, else the tokenizer's default)."""
    if flag is not None:
        return flag
    add_bos = getattr(lm, "add_bos_token", None)
    return None if add_bos is None else bool(add_bos)


# -- kept in lm-eval's request-cache folder --------------------------------------------------------
def _files(lm: Any, counters: Sequence[TokenCounter]) -> list[tuple[str, TokenCounter | None]]:
    """(lm-eval cache file name, counter; None: the model's memo) of each identified tokenizer."""
    from wsc_tasks.fingerprint import package_fingerprint

    package = package_fingerprint()
    found = {f"{ENCODINGS_FILE}-{c.identity}-{package}": c for c in counters if c.identity}
    files: list[tuple[str, TokenCounter | None]] = list(found.items())
    model = encoding_identity(getattr(lm, "tokenizer", None), getattr(lm, "add_bos_token", None))
    if model is not None and hf_own(lm):
        files.append((f"{ENCODINGS_FILE}-model-{model}-{package}", None))
    return files


def _path(name: str) -> Path:
    """A memo's file in lm-eval's request-cache folder, named as lm-eval names its own."""
    from lm_eval.caching import cache

    return Path(cache.PATH) / f"{name}{cache.FILE_SUFFIX}"


_KEPT: dict[Path, int] = {}  # a file's encodings as this process last read or wrote it
# each file's memo as last read or written here: the models of a sweep's worker that share a
# tokenizer read it once
_FILES = PickledFiles(8)  # a few tokenizers', the latest


def _read(path: Path) -> dict | None:
    """The memo in ``path`` (None: none, or unreadable)."""
    try:
        kept, _ = _FILES.read(path)  # lm-eval's folder, as its own
    except (OSError, pickle.UnpicklingError, EOFError, ValueError):
        return None
    return kept if isinstance(kept, dict) else None


def _size(memo: dict, counter: TokenCounter | None) -> int:
    return len(memo) if counter is None else len(memo.get("ids", {}))


def load(lm: Any, counters: Sequence[TokenCounter]) -> int:
    """Fill the counters' and the model's memos from their files in lm-eval's request cache;
    returns how many encodings were read."""
    read = 0
    for name, counter in _files(lm, counters):
        path = _path(name)
        kept = _read(path)
        if kept is None:
            continue
        if counter is None:
            memo = memo_of(lm)
            for key, ids in kept.items():
                memo.setdefault(key, ids)
        else:
            counter.remember(kept)
        _KEPT[path] = _size(kept, counter)
        read += _KEPT[path]
    return read


def save(lm: Any, counters: Sequence[TokenCounter]) -> int:
    """Write the counters' and the model's memos that grew since they were read to lm-eval's
    request cache (with Python's own pickler, which lm-eval's reader reads: lm-eval's ``dill``
    took seconds for ``wsc_group``'s encodings), each written aside and renamed into place, so
    workers sharing the folder never read half a file; returns how many encodings were
    written."""
    written = 0
    for name, counter in _files(lm, counters):
        memo: dict = dict(memo_of(lm)) if counter is None else counter.memo()
        path, size = _path(name), _size(memo, counter)
        if size <= _KEPT.get(path, -1):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        aside.write_bytes(pickle.dumps(memo, protocol=pickle.HIGHEST_PROTOCOL))
        aside.replace(path)
        _KEPT[path] = size
        _FILES.wrote(path, memo)
        written += size
    return written
