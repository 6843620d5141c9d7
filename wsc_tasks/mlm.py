"""``hf-mlm``: an lm-eval model for masked language models (BERT, RoBERTa, ALBERT, DeBERTa…).

It answers one request type, ``mlm_score``, sent by the masked-LM scoring methods of
``wsc_tasks.scoring`` (thesis §3.1.2): for a filled sentence and the character spans of its
answer, either every token masked in turn (``statement``; the answer tokens' share gives
``answer`` scoring from the same copies) or the answer tokens masked at once (``multimask``).
Every masked copy of every request is a job; identical jobs are computed once, jobs are sorted by
length so that a batch pads little, and batches go through the model together. Under
``accelerate launch`` each process scores its own share of the documents, as lm-eval's HFLM does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

# lm-eval loads its own models only while its registry is empty: fill it before adding ours.
import lm_eval.models  # noqa: F401
import torch
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

log = logging.getLogger(f"lm_eval.{__name__}")

Span = tuple[int, int]


class MaskedScore(NamedTuple):
    """Log-probability sums and token counts of one ``mlm_score`` request (logged as a list)."""

    total: float  # statement: every real token; multimask: the answer tokens
    n: int  # statement: every token, special tokens included (thesis eq. 3.23); multimask: answer
    answer_total: float
    answer_n: int


def _answer_positions(offsets: Sequence[Span], special: Sequence[int], spans: Sequence[Span]):
    return [
        i
        for i, (a, b) in enumerate(offsets)
        if not special[i] and any(a < end and b > start for start, end in spans)
    ]


def plan_jobs(tokenizer: Any, text: str, spans: Sequence[Span], mode: str):
    """The masked copies one request needs: (ids, masked positions), and how to add them up."""
    encoding = tokenizer(
        text, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=True
    )
    ids, offsets = encoding["input_ids"], encoding["offset_mapping"]
    special = encoding["special_tokens_mask"]
    answer = _answer_positions(offsets, special, spans)
    if not answer:
        raise ValueError(f"no token of the answer spans {spans} in {text!r}")
    mask = tokenizer.mask_token_id
    if mode == "multimask":
        masked = list(ids)
        for i in answer:
            masked[i] = mask
        return ids, answer, [(tuple(masked), tuple(answer))]
    if mode != "statement":
        raise ValueError(f"unknown masked-LM scoring mode {mode!r}")
    jobs = []
    for i, is_special in enumerate(special):
        if not is_special:
            masked = list(ids)
            masked[i] = mask
            jobs.append((tuple(masked), (i,)))
    return ids, answer, jobs


Needs = dict[tuple[int, ...], set[tuple[int, int]]]  # masked input -> {(position, target)}
Values = dict[tuple[tuple[int, ...], int, int], float]  # (masked input, position, target) -> lp


def run_jobs(model: Any, pad_id: int, needs: Needs, batch_size: int, device: Any) -> Values:
    """log P(target at position | masked input) for every needed (input, position, target).

    Each distinct masked input is computed once, even when several requests need it (two
    sentences that differ in one token are the same input once that token is masked).
    """
    inputs = sorted(needs, key=len, reverse=True)
    out: Values = {}
    for start in range(0, len(inputs), batch_size):
        batch = inputs[start : start + batch_size]
        ids = torch.full((len(batch), len(batch[0])), pad_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = 1
        wanted = [sorted(needs[seq]) for seq in batch]
        rows = torch.tensor([r for r, w in enumerate(wanted) for _ in w])
        positions = torch.tensor([p for w in wanted for p, _ in w])
        targets = torch.tensor([t for w in wanted for _, t in w])
        with torch.inference_mode():
            logits = _masked_logits(model, ids.to(device), attention.to(device), rows, positions)
            picked = torch.log_softmax(logits.float(), dim=-1)
            picked = picked[torch.arange(len(targets)), targets.to(picked.device)].tolist()
        values = iter(picked)
        for seq, needed in zip(batch, wanted, strict=True):
            for position, target in needed:
                out[(seq, position, target)] = next(values)
    return out


_HEADS = ("lm_head", "cls", "predictions")  # RoBERTa/XLM-R, BERT/DeBERTa, ALBERT


def _masked_logits(model: Any, ids: torch.Tensor, attention: torch.Tensor, rows: torch.Tensor,
                   positions: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Logits at the masked positions only: the vocabulary projection of the other positions,
    most of a statement-scoring batch, is skipped when the model's head is a known module."""
    head = next((getattr(model, name) for name in _HEADS if hasattr(model, name)), None)
    base = getattr(model, "base_model", None)
    if head is None or base is None or base is model:
        logits = model(input_ids=ids, attention_mask=attention).logits
        return logits[rows.to(logits.device), positions.to(logits.device)]
    hidden = base(input_ids=ids, attention_mask=attention).last_hidden_state
    return head(hidden[rows.to(hidden.device), positions.to(hidden.device)])


def score_requests(model: Any, tokenizer: Any, args: Sequence[tuple], batch_size: int,
                   device: Any) -> list[MaskedScore]:  # fmt: skip
    """Score many (text, spans, mode) requests with the fewest, fullest batches."""
    plans = []
    needs: Needs = {}
    for text, spans, mode in args:
        ids, answer, jobs = plan_jobs(tokenizer, text, spans, mode)
        plans.append((ids, answer, jobs, mode))
        for masked, positions in jobs:
            needs.setdefault(masked, set()).update((p, ids[p]) for p in positions)
    logprobs = run_jobs(model, tokenizer.pad_token_id, needs, batch_size, device)
    results = []
    for ids, answer, jobs, mode in plans:
        per_position = {
            p: logprobs[(masked, p, ids[p])] for masked, positions in jobs for p in positions
        }
        answer_total = sum(per_position[i] for i in answer)
        if mode == "multimask":
            total, n = answer_total, len(answer)
        else:  # special tokens are not masked (log-probability 0) but count in n (eq. 3.23)
            total, n = sum(per_position.values()), len(ids)
        results.append(MaskedScore(total, n, answer_total, len(answer)))
    return results


@register_model("hf-mlm")
class MaskedLM(LM):
    """lm-eval model for masked LMs; ``--model hf-mlm --model_args pretrained=roberta-base``."""

    def __init__(
        self,
        pretrained: str,
        device: str | None = None,
        batch_size: int | str = 32,
        dtype: str = "float32",
        revision: str | None = None,
        trust_remote_code: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from accelerate import Accelerator
        from transformers import AutoModelForMaskedLM, AutoTokenizer

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
        self.tokenizer = AutoTokenizer.from_pretrained(pretrained, **options)
        if self.tokenizer.mask_token_id is None:
            raise ValueError(f"hf-mlm: {pretrained} has no mask token: not a masked LM")
        self.model = AutoModelForMaskedLM.from_pretrained(
            pretrained, torch_dtype=getattr(torch, dtype), **options
        ).to(self._device)
        self.model.eval()
        self.batch_size = 32 if str(batch_size).startswith("auto") else int(batch_size)
        if kwargs:
            log.warning(f"hf-mlm: ignoring model arguments {sorted(kwargs)}")

    def mlm_score(self, requests: list[Any]) -> list[MaskedScore]:
        return score_requests(
            self.model, self.tokenizer, [r.args for r in requests], self.batch_size, self._device
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
