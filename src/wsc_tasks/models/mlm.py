"""``hf-mlm``: an lm-eval model for masked language models (BERT, RoBERTa, ALBERT, DeBERTa…).

It answers one request type, ``mlm_score``, sent by the masked-LM scoring methods of
``wsc_tasks.scoring.methods`` (thesis §3.1.2): for a filled sentence and the character spans of its
answer, either every token masked in turn (``statement``; the answer tokens' share gives
``answer`` scoring from the same copies) or the answer tokens masked at once (``multimask``).
The masked copies are built and batched in ``wsc_tasks.models.mlm_scoring`` (re-exported here).
Under
``accelerate launch`` each process scores its own share of the documents, as lm-eval's HFLM does.
"""

from __future__ import annotations

import logging
from typing import Any

# lm-eval loads its own models only while its registry is empty: fill it before adding ours.
import lm_eval.models  # noqa: F401
import torch
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from wsc_tasks.models.mlm_scoring import DEFAULT_MAX_BATCH_TOKENS, MaskedScore, score_requests
from wsc_tasks.models.mlm_scoring import _masked_logits as _masked_logits  # re-exported
from wsc_tasks.models.mlm_scoring import batch_bounds as batch_bounds  # re-exported
from wsc_tasks.models.mlm_scoring import plan_jobs as plan_jobs  # re-exported
from wsc_tasks.models.mlm_scoring import run_batches as run_batches  # re-exported
from wsc_tasks.scoring import families

log = logging.getLogger(f"lm_eval.{__name__}")

Span = tuple[int, int]


def unknown_arguments(names: list[str]) -> str:
    """One line naming the unknown model arguments of ``hf-mlm`` and the closest known one."""
    import difflib
    import inspect

    parameters = inspect.signature(MaskedLM.__init__).parameters
    known = [n for n in parameters if n not in ("self", "kwargs")]
    near = difflib.get_close_matches(names[0], known, n=1)
    hint = f"did you mean {near[0]}? " if near else ""
    return f"{MODEL}: unknown model argument(s) {', '.join(names)}; {hint}known: {', '.join(known)}"


MODEL = "hf-mlm"


@register_model(MODEL)
class MaskedLM(LM):
    """lm-eval model for masked LMs; ``--model hf-mlm --model_args pretrained=roberta-base``."""

    ARGUMENTS = (  # what ``wsc-tasks run`` names when --model_args are missing
        "pretrained=<Hub id or folder of a masked LM> (and dtype=, max_batch_tokens=, revision=, "
        "trust_remote_code=)"
    )

    def __init__(
        self,
        pretrained: str,
        device: str | None = None,
        batch_size: int | str = 32,
        max_batch_size: int | None = None,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        dtype: str = "float32",
        revision: str | None = None,
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if kwargs:  # a misspelt argument must not be dropped in silence
            raise ValueError(unknown_arguments(sorted(kwargs)))
        from accelerate import Accelerator
        from transformers import AutoConfig, AutoModelForMaskedLM, AutoTokenizer

        accelerator = Accelerator()
        if accelerator.num_processes > 1:
            self.accelerator = accelerator
            self._rank = accelerator.process_index
            self._world_size = accelerator.num_processes
            device = str(accelerator.device)
        elif device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self._device = torch.device(device)
        options = {"revision": revision, "trust_remote_code": trust_remote_code}
        family = families.family_of_config(AutoConfig.from_pretrained(pretrained, **options))
        if family.model != MODEL:  # a causal LM or T5: no mask token, and another model serves it
            raise ValueError(
                f"{MODEL}: {pretrained} is a {family.name} model, not a masked LM; --model "
                f"{family.model} serves it (wsc-tasks run --model {family.model} --model_args "
                f"pretrained={pretrained})"
            )
        self.tokenizer = AutoTokenizer.from_pretrained(pretrained, **options)
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"hf-mlm: {pretrained} has no mask token: not a masked LM")
        self.model = AutoModelForMaskedLM.from_pretrained(
            pretrained, dtype=getattr(torch, dtype), **options
        ).to(self._device)
        self.model.eval()
        # --batch_size N: at most N masked copies per pass; auto: as many as the token budget
        # (max_batch_tokens, padded positions per pass) allows, up to --max_batch_size if given
        auto = str(batch_size).startswith("auto")
        self.batch_size = (
            (int(max_batch_size) if max_batch_size else None) if auto else int(batch_size)
        )
        self.max_batch_tokens = int(max_batch_tokens)

    def mlm_score(self, requests: list[Instance]) -> list[MaskedScore]:
        from wsc_tasks.serving.route import meet

        meet(self, requests)  # each task's plan must be this model's (family, tokenizer)
        return score_requests(
            self.model,
            self.tokenizer,
            [r.args for r in requests],
            self.batch_size,
            self._device,
            self.max_batch_tokens,
        )

    def _not_served(self, *args: Any, **kwargs: Any):
        raise NotImplementedError(
            "hf-mlm serves only the masked-LM scoring requests of wsc_tasks' tasks "
            "(loglikelihood and generation need a causal or seq2seq model: --model hf)"
        )

    loglikelihood = loglikelihood_rolling = generate_until = _not_served

    # data-parallel plumbing, as lm-eval's HFLM
    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.world_size <= 1 else self.accelerator.gather(tensor)

    def gather_object(self, obj: Any, dst: int = 0) -> list[Any] | None:
        if self.world_size <= 1:
            return [obj]
        result = [None] * self.world_size if self.rank == dst else None
        torch.distributed.gather_object(obj=obj, object_gather_list=result, dst=dst)
        return result

    def barrier(self) -> None:
        if self.world_size > 1:
            self.accelerator.wait_for_everyone()

    @property
    def device(self) -> torch.device:
        return self._device
