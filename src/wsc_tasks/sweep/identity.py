"""A model's identity in a sweep, asked once: the arguments its run is made with, the fingerprint
of its weights and tokenizer, and its Hub commit.

Before, the sweep, the runner and the answer cache each rebuilt these from the models file's
entry (default model, cached Hub commit, file fingerprints) and could disagree, e.g. when lm-eval
downloaded a model between two of them. ``identify`` is the one place: a Hub model is pinned
first (``sweep.hub.pin``: ``spec.hub['commit']``), so its arguments carry ``revision=<commit>``
and its fingerprint is that of the commit, whatever the cache holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wsc_tasks.fingerprint import cache_key
from wsc_tasks.sweep.hub import run_args
from wsc_tasks.sweep.models import ModelSpec, resolved_args


@dataclass(frozen=True)
class Identity:
    args: str  # ``--model_args`` of the run: the default model's path, ``revision=<commit>``
    fingerprint: str  # ``cache_key``: the answer cache's file and ``done.json``'s fingerprint
    hub: dict[str, Any] = field(default_factory=dict)  # repo, revision, commit of a Hub model


def identify(spec: ModelSpec) -> Identity:
    """The identity of ``spec`` (pinned by ``hub.pin`` if it is a Hub model). Raises
    ``SystemExit`` when the default model is not installed."""
    args = run_args(spec, resolved_args(spec))
    return Identity(args, cache_key(spec.model, args), dict(spec.hub))
