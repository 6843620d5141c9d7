"""A Hub query that expands to a sweep's models: what ``huggingface_hub.list_models`` filters
(author, search, tags, library, sort, limit) and a creation date. ``expand`` writes the models it
found into the sweep folder (``hub-models.yaml``), so a later sweep of the same query runs the
same models. Each model is then pinned to its commit by ``wsc_tasks.sweep.hub``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks.paths import SWEEP_HUB_MODELS, write_text_aside
from wsc_tasks.sweep.models import ModelsFileError, ModelSpec

log = logging.getLogger("lm_eval.wsc_tasks.sweep.hub")

QUERY_KEYS = ("author", "search", "tags", "library", "sort", "limit", "created_after", "model",
              "model_args", "trust_remote_code")  # fmt: skip
EXPANDED = SWEEP_HUB_MODELS  # in the sweep folder: the models a query expanded to


@dataclasses.dataclass(frozen=True)
class HubQuery:
    """A Hub search whose results are a sweep's models (``list_models``' filters)."""

    author: str | None = None
    search: str | None = None
    tags: tuple[str, ...] = ()
    library: str | None = None
    sort: str | None = None
    limit: int | None = None
    created_after: str | None = None  # an ISO date: models created on or after it
    model: str = "hf"  # the lm-eval model type of every model found
    model_args: str = ""  # added to each model's pretrained=<id>
    trust_remote_code: bool = False

    def to_json(self) -> dict[str, Any]:
        found = {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, (), "")}
        if "tags" in found:
            found["tags"] = list(self.tags)
        return found


def parse_query(given: Mapping[str, Any] | str, where: str) -> HubQuery:
    """A query from a models file's ``hub:`` section or ``--hub-query 'author=x,limit=5'``; an
    unknown key or bad value is an error naming ``where``."""
    if isinstance(given, str):
        pairs = [item.split("=", 1) for item in given.split(",") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ModelsFileError(f"{where}: expected KEY=VALUE,… (keys: {', '.join(QUERY_KEYS)})")
        given = {key.strip(): value.strip() for key, value in pairs}
    unknown = sorted(set(given) - set(QUERY_KEYS))
    if unknown:
        raise ModelsFileError(f"{where}: unknown key(s) {unknown} (keys: {', '.join(QUERY_KEYS)})")
    values: dict[str, Any] = dict(given)
    tags = values.get("tags", ())
    values["tags"] = tuple(tags.split("+") if isinstance(tags, str) else (str(t) for t in tags))
    try:
        if values.get("limit") is not None:
            values["limit"] = int(values["limit"])
        if values.get("created_after") is not None:
            values["created_after"] = dt.date.fromisoformat(
                str(values["created_after"])
            ).isoformat()
    except ValueError as error:
        raise ModelsFileError(f"{where}: {error}") from None
    if isinstance(values.get("model_args"), dict):
        values["model_args"] = ",".join(f"{k}={v}" for k, v in values["model_args"].items())
    trust = str(values.get("trust_remote_code", False)).lower()
    values["trust_remote_code"] = trust in ("1", "true", "yes")
    if not any(values.get(key) for key in ("author", "search", "tags", "library")):
        raise ModelsFileError(f"{where}: a Hub query needs author, search, tags or library")
    return HubQuery(**values)


def _models(n: int) -> str:
    return f"{n} model" if n == 1 else f"{n} models"


def _name(repo: str, repos: Sequence[str]) -> str:
    """The model's folder name: the repository's name, or ``author--name`` when two share it."""
    short = repo.split("/")[-1]
    same = sum(other.split("/")[-1] == short for other in repos)
    return repo.replace("/", "--") if same > 1 else short


def _reachable(timeout_s: float = 5.0) -> None:
    """A connection to the Hub's address, or a one-line error naming ``HF_ENDPOINT`` at once
    (the client's listing tries a refused connection again for half a minute)."""
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    where = urlsplit(constants.ENDPOINT)
    port = where.port or (443 if where.scheme == "https" else 80)
    try:
        socket.create_connection((where.hostname or "", port), timeout=timeout_s).close()
    except OSError as error:
        raise ModelsFileError(
            f"the Hub at {constants.ENDPOINT} cannot be reached ({error}): check HF_ENDPOINT "
            "and the network, or give the models in a models file"
        ) from None


def search(query: HubQuery) -> list[str]:
    """The repository ids the Hub lists for ``query``, in its order."""
    from huggingface_hub import HfApi

    _reachable()
    tags = [*query.tags, *([query.library] if query.library else [])]
    limit = None if query.created_after else query.limit  # the date is filtered here
    found = HfApi().list_models(
        author=query.author, search=query.search, filter=tags or None, sort=query.sort, limit=limit
    )
    repos = []
    for info in found:
        created = info.created_at
        if query.created_after and (
            created is None or created.date().isoformat() < query.created_after
        ):
            continue
        repos.append(info.id)
        if query.limit is not None and len(repos) >= query.limit:
            break
    return repos


def expand(query: HubQuery, out: Path) -> list[ModelSpec]:
    """The models of ``query``: those an earlier sweep of the same query wrote into
    ``<out>/hub-models.yaml``, else the Hub's answer, written there (a sweep is resumed and
    reproduced with the same models even when the Hub's listing changed)."""
    path = out / EXPANDED
    if path.is_file():
        written = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if written.get("hub") != query.to_json():
            raise ModelsFileError(
                f"{path} holds the models of another Hub query ({written.get('hub')}); use "
                "another --out, or delete the file to query the Hub again"
            )
        specs = [ModelSpec(**entry) for entry in written.get("models", [])]
        log.info(f"wsc_tasks: sweep: {_models(len(specs))} of the Hub query, as {path} lists them")
        return specs
    repos = search(query)
    if not repos:
        raise ModelsFileError(f"the Hub query {query.to_json()} found no models")
    trust = "trust_remote_code=True" if query.trust_remote_code else ""
    extra = "".join(f",{a}" for a in (query.model_args, trust) if a)
    specs = [
        ModelSpec(_name(repo, repos), query.model, f"pretrained={repo}{extra}") for repo in repos
    ]
    out.mkdir(parents=True, exist_ok=True)
    entries = [{"name": s.name, "model": s.model, "model_args": s.model_args} for s in specs]
    text = yaml.safe_dump({"hub": query.to_json(), "models": entries}, sort_keys=False)
    write_text_aside(path, text)  # a sweep stopped here leaves no half a list
    log.info(f"wsc_tasks: sweep: the Hub query found {_models(len(specs))}, written to {path}")
    return specs
