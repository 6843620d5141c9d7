"""The request type this package's tasks send to lm-eval, and the request that knows its task.

lm-eval groups a run's requests by ``Instance.request_type`` and runs each group as
``getattr(lm, request_type)(requests)``. Log-likelihood requests of this package's tasks carry
``REQUEST_TYPE`` instead of lm-eval's ``loglikelihood``, so they reach ``route.serve`` and no
other task's request does. Each is a ``TaskRequest``: lm-eval's ``Instance`` with the task that
built it, whose plan (methods, tokenizer) the model must match before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from lm_eval.api.instance import Instance

from wsc_tasks.scoring.tokens import TokenCounter

REQUEST_TYPE = "wsc_tasks_loglikelihood"  # the method lm-eval calls on the model for them
LM_EVAL_TYPE = "loglikelihood"  # what each of them is in lm-eval's terms (its cache keys them so)


class Requester(Protocol):
    """What serving reads of the task behind a request (``tasks.conventions.TaskConventions``)."""

    caches_requests: bool  # built with lm-eval's --cache_requests

    @property
    def name(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, object]: ...

    def meet_model(self, lm: object) -> None: ...

    def token_counter(self) -> TokenCounter | None: ...

    def record_served_check(self, outcome: Mapping[str, object]) -> None: ...


@dataclass(eq=False)
class TaskRequest(Instance):
    """lm-eval's ``Instance`` with the task that built it (``task``: not pickled, so lm-eval's
    request cache keeps the requests alone; the task binds itself again when it reads them)."""

    task: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["task"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
