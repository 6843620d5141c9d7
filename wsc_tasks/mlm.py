"""``hf-mlm``: an lm-eval model for masked language models (BERT, RoBERTa, ALBERT, DeBERTa…).

It answers one request type, ``mlm_score``, sent by the masked-LM scoring methods of
``wsc_tasks.scoring`` (thesis §3.1.2): for a filled sentence and the character spans of its
answer, either every token masked in turn (``statement``; the answer tokens' share gives
``answer`` scoring from the same copies) or the answer tokens masked at once (``multimask``).
The masked copies are built as tensors (the ids repeated, the mask scattered along the diagonal),
identical copies are computed once, copies are sorted by length so that a batch pads little, and
batches are sized by tokens (``max_batch_tokens`` padded positions, and at most ``--batch_size``
copies unless it is ``auto``). Under
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

ACTIVE = (
    False  # set once an hf-mlm model exists in this process; tasks check it (model comes first)
)

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
    """The masked copies one request needs, one tuple per copy: (ids, masked positions).

    The literal reading of a request, kept for checks (tests, ``bench-mlm``'s reference);
    ``score_requests`` builds the same copies as tensors.
    """
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


DEFAULT_MAX_BATCH_TOKENS = 8192  # padded token positions per forward pass (rows x length)


def batch_bounds(lengths: Sequence[int], batch_size: int | None, max_tokens: int) -> list[Span]:
    """[start, end) of each batch over inputs sorted longest first: at most ``batch_size`` rows
    (``None``: no row limit) and at most ``max_tokens`` padded positions, never an empty batch.

    Sizing by tokens keeps a pass the same size for short and long sentences: a GPU is busy
    with many short rows, and a long sentence's batch does not run out of memory.
    """
    bounds, start = [], 0
    while start < len(lengths):
        rows = max(1, max_tokens // max(lengths[start], 1))
        if batch_size is not None:
            rows = min(rows, batch_size)
        end = min(start + rows, len(lengths))
        bounds.append((start, end))
        start = end
    return bounds


class _Request(NamedTuple):
    """One request's masked copies (rows of ``copies``) and the log-probabilities it sums."""

    copies: torch.Tensor  # (copies, length) token ids with the mask token scattered in
    copy: torch.Tensor  # (entries,) index of the copy each wanted log-probability comes from
    positions: torch.Tensor  # (entries,) masked position, ascending
    targets: torch.Tensor  # (entries,) the original token there
    answer: list[int]  # indices into the entries of the answer tokens
    n: int  # tokens of the sentence, special ones included
    statement: bool


def _build(ids: list[int], special: list[int], answer: list[int], mode: str,
           mask: int) -> _Request:  # fmt: skip
    """The masked copies of one request as one tensor: statement scoring repeats the ids once
    per real token and scatters the mask along the diagonal (as pseudo-log-likelihood scorers
    do); multi-mask scoring is one copy with every answer token masked."""
    tokens = torch.tensor(ids, dtype=torch.long)
    if mode == "multimask":
        positions = torch.tensor(answer, dtype=torch.long)
        copies = tokens.clone().unsqueeze(0)
        copies[0, positions] = mask
        copy = torch.zeros(len(answer), dtype=torch.long)
        return _Request(copies, copy, positions, tokens[positions], list(range(len(answer))),
                        len(answer), False)  # fmt: skip
    if mode != "statement":
        raise ValueError(f"unknown masked-LM scoring mode {mode!r}")
    positions = torch.tensor([i for i, s in enumerate(special) if not s], dtype=torch.long)
    copies = tokens.repeat(len(positions), 1)
    copy = torch.arange(len(positions))
    copies[copy, positions] = mask
    where = {p: k for k, p in enumerate(positions.tolist())}
    return _Request(copies, copy, positions, tokens[positions], [where[i] for i in answer],
                    len(ids), True)  # fmt: skip


def _plan(tokenizer: Any, args: Sequence[tuple]) -> list[_Request]:
    """Every request's copies; each distinct text is tokenized once, all in one call."""
    texts = list(dict.fromkeys(text for text, _, _ in args))
    encodings = tokenizer(
        texts, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=True
    )
    index = {text: k for k, text in enumerate(texts)}
    plans = []
    for text, spans, mode in args:
        k = index[text]
        ids, special = encodings["input_ids"][k], encodings["special_tokens_mask"][k]
        answer = _answer_positions(encodings["offset_mapping"][k], special, spans)
        if not answer:
            raise ValueError(f"no token of the answer spans {spans} in {text!r}")
        plans.append(_build(ids, special, answer, mode, tokenizer.mask_token_id))
    return plans


def _distinct_inputs(plans: Sequence[_Request]):
    """The distinct masked inputs, longest first and, within a length, in order of first use;
    and for every copy of every request, the index of its input in that order."""
    by_length: dict[int, list[torch.Tensor]] = {}
    first_copy: dict[int, list[int]] = {}  # global index of each block's first copy
    count = 0
    for plan in plans:
        length = plan.copies.shape[1]
        by_length.setdefault(length, []).append(plan.copies)
        first_copy.setdefault(length, []).append(count)
        count += len(plan.copies)
    where = torch.empty(count, dtype=torch.long)
    blocks, offset = [], 0
    for length in sorted(by_length, reverse=True):
        copies = torch.cat(by_length[length])
        order = torch.cat([  # global copy index of each row of ``copies``
            torch.arange(start, start + len(block))
            for start, block in zip(first_copy[length], by_length[length], strict=True)
        ])  # fmt: skip
        unique, inverse = torch.unique(copies, dim=0, return_inverse=True)
        first = torch.full((len(unique),), count, dtype=torch.long)
        first.scatter_reduce_(0, inverse, order, reduce="amin")
        by_first = torch.argsort(first)
        rank = torch.empty_like(by_first)
        rank[by_first] = torch.arange(len(by_first))
        where[order] = rank[inverse] + offset
        blocks.append(unique[by_first])
        offset += len(unique)
    return blocks, where


def _padded(blocks: Sequence[torch.Tensor], start: int, end: int, pad_id: int):
    """Rows [start, end) of the blocks laid end to end, padded to the first (longest) row."""
    parts, offset = [], 0
    for block in blocks:
        lo, hi = max(start - offset, 0), min(end - offset, len(block))
        if lo < hi:
            parts.append(block[lo:hi])
        offset += len(block)
    width = parts[0].shape[1]
    ids = torch.full((end - start, width), pad_id, dtype=torch.long)
    attention = torch.zeros_like(ids)
    row = 0
    for part in parts:
        ids[row : row + len(part), : part.shape[1]] = part
        attention[row : row + len(part), : part.shape[1]] = 1
        row += len(part)
    return ids, attention


def run_batches(model: Any, pad_id: int, blocks: Sequence[torch.Tensor], wanted: torch.Tensor,
                batch_size: int | None, max_tokens: int, device: Any) -> torch.Tensor:  # fmt: skip
    """log P(target at position | input) for each (input, position, target) row of ``wanted``
    (sorted, distinct), the inputs being the rows of ``blocks`` end to end, longest first."""
    lengths = [block.shape[1] for block in blocks for _ in range(len(block))]
    cuda = torch.device(device).type == "cuda"
    picked, inputs = [], wanted[:, 0].contiguous()
    for start, end in batch_bounds(lengths, batch_size, max_tokens):
        lo, hi = torch.searchsorted(inputs, torch.tensor([start, end])).tolist()
        ids, attention = _padded(blocks, start, end, pad_id)
        if cuda:  # copy while the previous batch still runs
            ids, attention = ids.pin_memory(), attention.pin_memory()
        rows, positions, targets = (wanted[lo:hi, 0] - start), wanted[lo:hi, 1], wanted[lo:hi, 2]
        with torch.inference_mode():
            logits = _masked_logits(
                model, ids.to(device, non_blocking=cuda), attention.to(device, non_blocking=cuda),
                rows, positions,
            )  # fmt: skip
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            picked.append(logprobs[torch.arange(hi - lo), targets.to(logprobs.device)])
    return torch.cat(picked).cpu() if picked else torch.empty(0)


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


def score_requests(model: Any, tokenizer: Any, args: Sequence[tuple], batch_size: int | None,
                   device: Any, max_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                   ) -> list[MaskedScore]:  # fmt: skip
    """Score many (text, spans, mode) requests with the fewest, fullest batches.

    Each distinct masked input goes through the model once, even when several requests need
    it (two sentences that differ in one token are the same input once that token is masked),
    and each distinct (input, position, target) log-probability is picked once.
    """
    plans = _plan(tokenizer, args)
    if not plans:
        return []
    blocks, where = _distinct_inputs(plans)
    offsets = torch.tensor([0] + [len(plan.copies) for plan in plans]).cumsum(0)
    inputs = torch.cat([where[offsets[k] + plan.copy] for k, plan in enumerate(plans)])
    positions = torch.cat([plan.positions for plan in plans])
    targets = torch.cat([plan.targets for plan in plans])
    width, vocabulary = int(positions.max()) + 1, int(targets.max()) + 1
    keys, needed = torch.unique(
        (inputs * width + positions) * vocabulary + targets, return_inverse=True
    )  # sorted: by input, then position, then target
    wanted = torch.stack([keys // (width * vocabulary), keys // vocabulary % width,
                          keys % vocabulary], dim=1)  # fmt: skip
    logprobs = run_batches(model, tokenizer.pad_token_id, blocks, wanted, batch_size,
                           max_tokens, device)[needed].tolist()  # fmt: skip
    results, start = [], 0
    for plan in plans:
        values = logprobs[start : start + len(plan.positions)]
        start += len(plan.positions)
        answer_total = sum(values[k] for k in plan.answer)
        # statement: special tokens are not masked (log-probability 0) but count in n (eq. 3.23)
        total = sum(values) if plan.statement else answer_total
        results.append(MaskedScore(total, plan.n, answer_total, len(plan.answer)))
    return results


@register_model("hf-mlm")
class MaskedLM(LM):
    """lm-eval model for masked LMs; ``--model hf-mlm --model_args pretrained=roberta-base``."""

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
        from accelerate import Accelerator
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        global ACTIVE
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
        # --batch_size N: at most N masked copies per pass; auto: as many as the token budget
        # (max_batch_tokens, padded positions per pass) allows, up to --max_batch_size if given
        auto = str(batch_size).startswith("auto")
        self.batch_size = (
            (int(max_batch_size) if max_batch_size else None) if auto else int(batch_size)
        )
        self.max_batch_tokens = int(max_batch_tokens)
        if kwargs:
            log.warning(f"hf-mlm: ignoring model arguments {sorted(kwargs)}")
        ACTIVE = True

    def mlm_score(self, requests: list[Any]) -> list[MaskedScore]:
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
