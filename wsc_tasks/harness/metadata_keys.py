"""Every metadata key a task of this package may be given, so that a misspelt one is an error.

lm-eval hands a task a metadata mapping made of its YAML ``metadata:``, lm-eval's own keys, the
``--metadata`` of the run and, from the CLI (or ``simple_evaluate`` without a ``TaskManager``), the
``--model_args`` merged in. A key nobody reads would otherwise be ignored without a word
(``{"scorng": ["partial"]}`` runs every method), so a key that is none of these is refused with the
closest known key (a warning instead when other packages' tasks share the run, and may read it).
Model arguments are the model's business: lm-eval's ``hf`` passes unknown ones
on to transformers, and this package's models (``wsc-chance``, ``hf-mlm``) check their own.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Iterable, Mapping

from wsc_tasks.harness import served

# read by the tasks (task_configs/README.md); ``dataset`` comes from each task's YAML; the
# served-model check's switch (``served``), read from the tasks' metadata; the contamination
# check's shards, permutations and shuffle_seed
SETTINGS = ("dataset", "scoring", "headline", "smart_limit", "tokenizer", "metrics",
            "reason_score", served.SKIP_KEY, "shards", "permutations", "shuffle_seed")  # fmt: skip
# the model arguments the tasks read to find the tokenizer and family (``scoring.tokens``)
MODEL_DESCRIPTION = ("pretrained", "gguf_file", "revision", "trust_remote_code", "add_bos_token",
                     "base_url")  # fmt: skip
WRITTEN = ("first_token_prior", "notes")  # written by the tasks into their results config
LM_EVAL = ("version", "config_source", "config", "_metadata")  # lm-eval's own (YAML, TaskFactory)
KNOWN = frozenset(SETTINGS + MODEL_DESCRIPTION + WRITTEN + LM_EVAL)


log = logging.getLogger(f"lm_eval.{__name__}")
_warned: set[str] = set()  # keys warned of (shared metadata), once per process


class UnknownKey(ValueError):
    """A metadata key that no task of this package, and not lm-eval, reads."""


def closest(key: str, known: Iterable[str]) -> str | None:
    """The known key nearest to ``key`` in spelling, if any is near enough."""
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def message(where: str, key: str, known: Iterable[str] = SETTINGS) -> str:
    """``where`` names the source: ``--metadata`` or ``task wsc266: metadata``."""
    near = closest(key, known) or closest(key, KNOWN)
    hint = f"did you mean {near}? " if near else ""
    return (
        f"{where} key {key!r} is unknown; {hint}known keys: "
        f"{', '.join(sorted(SETTINGS))} (task_configs/README.md)"
    )


def check(
    where: str,
    metadata: Mapping[str, object],
    model_arguments: Collection[str] = (),
    *,
    shared: bool = False,
) -> None:
    """Raise ``UnknownKey`` for the first key of ``metadata`` that is not known here and not one
    of ``model_arguments`` (the keys lm-eval merged in from the run's model arguments). With
    ``shared`` (the run has tasks of others, which read the same metadata and may know the key)
    each such key is a warning instead."""
    for key in metadata:
        if key not in KNOWN and key not in model_arguments:
            text = message(where, str(key))
            if not shared:
                raise UnknownKey(text)
            if key not in _warned:
                _warned.add(key)
                log.warning(f"wsc_tasks: {text}; left to the run's other tasks")
