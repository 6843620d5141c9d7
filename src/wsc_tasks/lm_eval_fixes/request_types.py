"""The one patch: lm-eval's ``LM`` gains a method for each request type of this package.

lm-eval runs every request type as ``getattr(lm, request_type)(requests)``; a type no model
defines would end in ``AttributeError``. This package's log-likelihood requests carry a type of
their own (``serving.requests.REQUEST_TYPE``), so that they reach ``serving.route.serve`` and
no other task's request does; ``LM`` gets that method, for every model. The question tasks'
generation requests likewise carry ``serving.generation.GENERATION_TYPE``, which reaches
``serving.generation.serve`` (each failed answer counted, not the run lost). The masked family's
``mlm_score`` is served by this package's ``hf-mlm`` model; every other model gets a method that
refuses it with the command to use instead (a masked LM under ``--model hf``). Nothing lm-eval
defines is replaced, and no other task's request reaches these methods. If lm-eval ever defines
a method of one of these names, the patch stops applying (its check fails).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from wsc_tasks.lm_eval_fixes.base import PATCH, Fix
from wsc_tasks.lm_eval_types import Answer
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.serving.generation import GENERATION_TYPE
from wsc_tasks.serving.requests import REQUEST_TYPE

MARK = "_wsc_tasks_request_type"  # on each method added, so that it is added once


def _serve(self: Any, requests: list[Any], disable_tqdm: bool = False) -> list[Answer]:
    from wsc_tasks.serving.route import serve

    return serve(self, requests, disable_tqdm=disable_tqdm)


def _generate(self: Any, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
    from wsc_tasks.serving.generation import serve

    return serve(self, requests, disable_tqdm=disable_tqdm)


def _refusal(family: families.Family) -> Callable[..., NoReturn]:
    def refuse(self: object, requests: Sequence[Any], *args: object, **kwargs: object) -> NoReturn:
        tasks = sorted({str(r.task_name) for r in requests if r.task_name}) or ["?"]
        raise ScoringError(
            f"task {', '.join(tasks)}: the model is a {family.name} language model; "
            f"{type(self).__name__} does not serve its {family.request_type} requests: run it "
            f"as --model {family.model} (wsc-tasks run --model {family.model} --model_args "
            "pretrained=...)"
        )

    refuse.__name__ = family.request_type
    return refuse


def methods() -> dict[str, Callable[..., Any]]:
    """The methods ``LM`` gains, by request type."""
    added: dict[str, Callable[..., Any]] = {REQUEST_TYPE: _serve, GENERATION_TYPE: _generate}
    for family in families.FAMILIES.values():
        if family.request_type != "loglikelihood":
            added[family.request_type] = _refusal(family)
    return added


def serve_request_types() -> bool:
    """Add the methods ``LM`` lacks (once per process); True if any was added now."""
    from lm_eval.api.model import LM

    added = False
    for name, function in methods().items():
        if name in vars(LM):
            continue
        setattr(function, MARK, True)
        setattr(LM, name, function)
        added = True
    return added


def lm_eval_has_no_method_for_these_request_types() -> bool:
    """lm-eval dispatches each request type by name (``getattr(lm, request_type)``), and its
    ``LM`` defines none of this package's request types (each is missing or this patch's)."""
    import inspect

    from lm_eval import evaluator
    from lm_eval.api.model import LM

    dispatches = "getattr(lm, reqtype)" in inspect.getsource(evaluator.evaluate)
    ours = [getattr(LM, name, None) for name in methods()]
    return dispatches and all(method is None or getattr(method, MARK, False) for method in ours)


FIX = Fix(
    "request_types",
    PATCH,
    "lm-eval runs each request type as a method of the model named like it, and its LM has none "
    "for a request type of another package",
    "lm_eval.api.model.LM gains a method for each request type of this package (the route of "
    "its log-likelihood requests and of its questions' generations; a refusal of masked-LM "
    "requests for models that cannot serve them); nothing of lm-eval is replaced",
    still_needed=lm_eval_has_no_method_for_these_request_types,
)
