"""lm-eval patch 9, ``refuse_unserved_requests``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NoReturn

from wsc_tasks.harness.patches.base import (
    _MARK,
    TESTED,
    Patch,
    Request,
)
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError


# Not a bug of lm-eval: an extension it has no hook for. lm-eval 0.4 runs each request type as
# ``getattr(lm, request_type)(requests)``, whichever of model and tasks it built first; the masked
# family's ``mlm_score`` is no method of lm-eval's ``LM``, so a masked LM under ``--model hf``
# would end in ``AttributeError: 'HFLM' object has no attribute 'mlm_score'``. ``LM`` gets a
# method for every request type of ours it lacks that refuses with the command to use instead;
# ``hf-mlm`` defines its own. If lm-eval ever defines such a method itself, this stops applying
# (its check, ``still_needed``, then fails).
def _refusal(family: families.Family) -> Callable[..., NoReturn]:
    def refuse(
        self: object, requests: Sequence[Request], *args: object, **kwargs: object
    ) -> NoReturn:
        tasks = sorted({str(r.task_name) for r in requests if r.task_name}) or ["?"]
        raise ScoringError(
            f"task {', '.join(tasks)}: the model is a {family.name} language model; "
            f"{type(self).__name__} does not serve its {family.request_type} requests: run it "
            f"as --model {family.model} (wsc-tasks run --model {family.model} --model_args "
            "pretrained=...)"
        )

    refuse.__name__ = family.request_type
    setattr(refuse, _MARK, True)
    return refuse


def refuse_unserved_requests() -> None:
    """Give lm-eval's ``LM`` a refusing method for every request type of ours it lacks.

    lm-eval 0.4 runs each request type as ``getattr(lm, request_type)(requests)``; without this,
    a masked LM under ``--model hf`` would end in ``AttributeError: 'HFLM' object has no
    attribute 'mlm_score'``. Our own models (``hf-mlm``) define the method and are unaffected.
    """
    from lm_eval.api.model import LM

    for family in families.FAMILIES.values():
        if not hasattr(LM, family.request_type):
            setattr(LM, family.request_type, _refusal(family))


def lm_eval_has_no_method_for_our_request_types() -> bool:
    """lm-eval's ``LM`` defines no method named like a request type of ours (``mlm_score``): each
    such attribute is missing or this section's refusal."""
    from lm_eval.api.model import LM

    ours = {f.request_type for f in families.FAMILIES.values()} - {"loglikelihood"}
    return bool(ours) and all(
        getattr(getattr(LM, request_type, None), _MARK, True) for request_type in ours
    )


PATCH = Patch(
    "refuse_unserved_requests",
    "lm_eval.api.model.LM.<our request types>",
    TESTED,
    still_needed=lm_eval_has_no_method_for_our_request_types,
)
