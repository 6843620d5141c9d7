"""Every metadata key a task of this package may be given and the values it takes, so that a
misspelt key or value is never read as another setting.

lm-eval hands a task a metadata mapping made of its YAML ``metadata:``, lm-eval's own keys, the
``--metadata`` of the run and, from the CLI (or ``simple_evaluate`` without a ``TaskManager``), the
``--model_args`` merged in. A key nobody reads would otherwise be ignored without a word
(``{"scorng": ["partial"]}`` runs every method): ``wsc-tasks run``, which knows ``--metadata``
apart from ``--model_args``, refuses it with the closest known key before the model loads; a
task that lm-eval builds cannot tell a misspelt key from a model argument merged in, and warns.
A value is checked here too (``check_values``), by ``wsc-tasks run`` before the model loads and by
each task when lm-eval builds it: one line naming the key, the allowed values or the closest, and
the fix. Model arguments are the model's business: lm-eval's ``hf`` passes unknown ones
on to transformers, and this package's models (``wsc-chance``, ``hf-mlm``) check their own.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from wsc_tasks.serving import served

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


class BadValue(ValueError):
    """A metadata value that its key does not take."""


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


def check(where: str, metadata: Mapping[str, object], *, strict: bool = True) -> None:
    """Raise ``UnknownKey`` for the first key of ``metadata`` that is not known here (``strict``:
    ``wsc-tasks run``, which knows ``--metadata`` apart from ``--model_args``). Otherwise a key
    spelt like a setting of these tasks is a warning, once per process: lm-eval merges the model
    arguments (``dtype``, ``seed``…) into the same metadata, and other packages' tasks read it."""
    for key in metadata:
        if key in KNOWN:
            continue
        if strict:
            raise UnknownKey(message(where, str(key)))
        if key not in _warned and closest(str(key), SETTINGS) is not None:  # a misspelling?
            _warned.add(key)
            log.warning(
                f"wsc_tasks: {message(where, str(key))}; left alone, as it may be a model "
                "argument lm-eval merged in or another package's key"
            )


def _methods(family: str | None) -> list[str]:
    """The scoring methods ``family`` serves; every family's when it is not known yet (before the
    model loads the tasks re-check against the model's own family)."""
    from wsc_tasks.scoring import families

    found = (
        [families.FAMILIES[family]] if family in families.FAMILIES else families.FAMILIES.values()
    )
    return list(dict.fromkeys(name for f in found for name in f.methods))


def _fix(key: str, value: object) -> str:
    return f"fix: --metadata '{json.dumps({key: value})}'"


def _choice(
    where: str,
    key: str,
    value: object,
    allowed: Sequence[str],
    what: str,
    fixed: Callable[[str], object] = lambda name: name,
) -> str:
    """The one line for a value not among ``allowed``: the closest, the allowed ones, and the fix
    (``fixed``: the key's whole value with the closest, or the first allowed, put in)."""
    near = difflib.get_close_matches(str(value), allowed, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}? " if near else ""
    fix = _fix(key, fixed(near[0] if near else allowed[0]))
    return f"{where} {key}: {value!r} is not {what}; {hint}allowed: {', '.join(allowed)}; {fix}"


def _integer(value: object, low: int | None) -> bool:
    whole = isinstance(value, int) and not isinstance(value, bool)
    return whole and (low is None or value >= low)  # type: ignore[operator]


def check_values(where: str, metadata: Mapping[str, object], family: str | None = None) -> None:
    """Raise ``BadValue`` for the first setting whose value its key does not take (``where``:
    ``wsc-tasks: --metadata`` or ``task wsc266: metadata``; ``family``: the model's, when
    known). Scoring-method names are checked against ``family``'s methods, else every family's."""
    from wsc_tasks.metrics.winowhy import SCORES
    from wsc_tasks.scoring import families

    methods = _methods(family)
    scoring = metadata.get("scoring", "all")
    if scoring != "all":
        names = scoring.split(",") if isinstance(scoring, str) else scoring
        if not isinstance(names, list) or not names:
            raise BadValue(
                f"{where} scoring: {scoring!r} is not a list of scoring methods; allowed: "
                f'"all", "name,name" or a list of names; {_fix("scoring", ["partial", "smart"])}'
            )
        names = [str(n).strip() for n in names]
        for i, name in enumerate(names):
            if name not in methods:

                def put(good: str, i: int = i) -> object:
                    new = [*names[:i], good, *names[i + 1 :]]
                    return ",".join(new) if isinstance(scoring, str) else new

                raise BadValue(_choice(where, "scoring", name, methods, "a scoring method", put))
    headline = metadata.get("headline")
    if isinstance(headline, dict):
        for family_name, method in headline.items():
            kinds = list(families.FAMILIES)

            def renamed(good: str, method: object = method) -> object:
                return {good: method}

            def chosen(good: str, family_name: object = family_name) -> object:
                return {**headline, family_name: good}

            if family_name not in kinds:
                said = "a model family"
                raise BadValue(_choice(where, "headline", family_name, kinds, said, renamed))
            own = _methods(str(family_name))
            if method not in own:
                said = f"a {family_name} method"
                raise BadValue(_choice(where, "headline", method, own, said, chosen))
    elif headline is not None and headline not in methods:
        raise BadValue(_choice(where, "headline", headline, methods, "a scoring method"))
    checks: dict[str, tuple[Callable[[object], bool], str, object]] = {
        "smart_limit": (lambda v: _integer(v, 1), "an integer ≥ 1", 2),
        "shards": (lambda v: _integer(v, 1), "an integer ≥ 1", 50),
        "permutations": (lambda v: _integer(v, 1), "an integer ≥ 1", 10),
        "shuffle_seed": (lambda v: _integer(v, None), "an integer", 1234),
        "tokenizer": (lambda v: isinstance(v, str) and bool(v), "a Hub id or local path", "gpt2"),
    }
    for key, (good, allowed, example) in checks.items():
        if key in metadata and not good(metadata[key]):
            raise BadValue(
                f"{where} {key}: {metadata[key]!r} is not {allowed}; {_fix(key, example)}"
            )
    choices = {"metrics": ("headline", "all"), "reason_score": SCORES}
    for key, allowed_values in choices.items():
        if key in metadata and metadata[key] not in allowed_values:
            raise BadValue(_choice(where, key, metadata[key], list(allowed_values), "a choice"))
    skip = metadata.get(served.SKIP_KEY, True)
    if str(skip).strip().lower() not in ("true", "false"):
        raise BadValue(
            _choice(
                where,
                served.SKIP_KEY,
                skip,
                ["true", "false"],
                "true or false",
                lambda g: g == "true",
            )
        )
