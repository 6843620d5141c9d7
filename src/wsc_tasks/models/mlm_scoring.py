"""The tensor work behind ``hf-mlm``'s ``mlm_score`` requests (``wsc_tasks.models.mlm``).

For a filled sentence and the character spans of its answer, the masked copies are built as
tensors (the ids repeated, the mask scattered along the diagonal), identical copies are computed
once, copies are sorted by length so that a batch pads little, and batches are sized by tokens
(``max_batch_tokens`` padded positions, and at most ``--batch_size`` copies unless it is
``auto``). ``plan_jobs`` is the literal reading of one request, kept for checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from wsc_tasks.scoring.masked import MaskMode

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


def plan_jobs(tokenizer: PreTrainedTokenizerBase, text: str, spans: Sequence[Span], mode: MaskMode):
    """The masked copies one request needs, one tuple per copy: (ids, masked positions).

    The literal reading of a request, kept for checks (tests, the ``mlm`` benchmark's reference);
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


class _Plan(NamedTuple):
    """What a list of requests needs from the model, as tensors."""

    blocks: list[torch.Tensor]  # distinct masked inputs: a block per length, longest first
    wanted: torch.Tensor  # (k, 3) distinct (input, position, target), sorted; inputs count
    # through the blocks end to end
    needed: torch.Tensor  # row of ``wanted`` of each request's log-probabilities, in order
    requests: list[tuple[int, list[int], int, bool]]  # per request: how many log-probabilities,
    # which of them are the answer's, n, statement scoring


_PRIMES = (2_147_483_647, 2_147_483_629)  # below 2**31: no int64 overflow in _row_keys


def _row_keys(rows: torch.Tensor) -> torch.Tensor:
    """Two modular hashes of each row, as one int64 (collisions are checked by the caller)."""
    gen = torch.Generator().manual_seed(rows.shape[1])
    weights = [torch.randint(1, p, (rows.shape[1],), generator=gen) for p in _PRIMES]
    first, second = ((rows @ w) % p for w, p in zip(weights, _PRIMES, strict=True))
    return first * _PRIMES[1] + second


def _distinct_rows(rows: torch.Tensor, order: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows in order of first use (smallest ``order``) and each row's index among
    them: hashed, checked row by row, sorted exactly by ``torch.unique`` only on a collision."""
    for exact in (False, True):
        if exact:
            _, inverse = torch.unique(rows, dim=0, return_inverse=True)
        else:
            _, inverse = torch.unique(_row_keys(rows), return_inverse=True)
        count = int(inverse.max()) + 1
        first = torch.full((count,), int(order.max()) + 1).scatter_reduce_(
            0, inverse, order, reduce="amin"
        )
        some_row = torch.full((count,), len(rows)).scatter_reduce_(
            0, inverse, torch.arange(len(rows)), reduce="amin"
        )
        by_first = torch.argsort(first)
        rank = torch.empty_like(by_first)
        rank[by_first] = torch.arange(count)
        distinct = rows[some_row[by_first]]
        if exact or torch.equal(distinct[rank[inverse]], rows):
            break
    return distinct, rank[inverse]


def _plan(tokenizer: PreTrainedTokenizerBase, args: Sequence[tuple]) -> _Plan:
    """The masked copies of every request, built a length at a time: statement scoring repeats
    each sentence's ids once per position and scatters the mask along the diagonal (as
    pseudo-log-likelihood scorers do), keeping the copies of real tokens; multi-mask scoring is
    one copy with the answer tokens masked. Each distinct text is tokenized once, in one call."""
    texts = list(dict.fromkeys(text for text, _, _ in args))
    enc = tokenizer(
        texts, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=True
    )
    index = {text: k for k, text in enumerate(texts)}
    requests, wants = [], []
    groups: dict[int, list[tuple[int, int]]] = {}  # length of ids -> (request, text)
    for r, (text, spans, mode) in enumerate(args):
        k = index[text]
        ids, special = enc["input_ids"][k], enc["special_tokens_mask"][k]
        answer = _answer_positions(enc["offset_mapping"][k], special, spans)
        if not answer:
            raise ValueError(f"no token of the answer spans {spans} in {text!r}")
        if mode == "statement":
            real = [i for i, s in enumerate(special) if not s]
            rank = {p: j for j, p in enumerate(real)}
            requests.append((len(real), [rank[i] for i in answer], len(ids), True))
            wants.append([not s for s in special])
        elif mode == "multimask":
            requests.append((len(answer), list(range(len(answer))), len(answer), False))
            wants.append([i in answer for i in range(len(ids))])
        else:
            raise ValueError(f"unknown masked-LM scoring mode {mode!r}")
        groups.setdefault(len(ids), []).append((r, k))
    mask, width = tokenizer.mask_token_id, max(groups) + 1
    blocks, entries, offset = [], [], 0
    for length in sorted(groups, reverse=True):
        req = torch.tensor([r for r, _ in groups[length]])
        ids = torch.tensor([enc["input_ids"][k] for _, k in groups[length]]).view(-1, length)
        want = torch.tensor([wants[r] for r, _ in groups[length]]).view(-1, length)
        statement = torch.tensor([requests[r][3] for r, _ in groups[length]])
        diagonal = torch.arange(length)
        one, many = req[statement], req[~statement]  # statement / multi-mask requests
        keep, answer = want[statement], want[~statement]
        single = ids[statement].unsqueeze(1).repeat(1, length, 1)
        single[:, diagonal, diagonal] = mask
        multi = ids[~statement].clone()
        multi[answer] = mask
        copies = torch.cat([single[keep], multi])
        order = torch.cat([(one.unsqueeze(1) * width + diagonal)[keep], many * width])
        distinct, which = _distinct_rows(copies, order)
        singles = int(keep.sum())
        row, position = answer.nonzero(as_tuple=True)
        entries.append(torch.stack([
            torch.cat([one.unsqueeze(1).expand(-1, length)[keep], many[row]]),
            offset + torch.cat([which[:singles], which[singles + row]]),
            torch.cat([diagonal.expand(len(one), -1)[keep], position]),
            torch.cat([ids[statement][keep], ids[~statement][row, position]]),
        ]))  # fmt: skip
        blocks.append(distinct)
        offset += len(distinct)
    req, inputs, positions, targets = torch.cat(entries, dim=1)
    in_order = torch.argsort(req * width + positions)  # requests in order, positions ascending
    vocabulary = int(targets.max()) + 1
    keys, needed = torch.unique(
        ((inputs * width + positions) * vocabulary + targets)[in_order], return_inverse=True
    )  # sorted: by input, then position, then target
    wanted = torch.stack(
        [keys // (width * vocabulary), keys // vocabulary % width, keys % vocabulary], dim=1
    )
    return _Plan(blocks, wanted, needed, requests)


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


def run_batches(
    model: torch.nn.Module,
    pad_id: int,
    blocks: Sequence[torch.Tensor],
    wanted: torch.Tensor,
    batch_size: int | None,
    max_tokens: int,
    device: torch.device | str,
) -> torch.Tensor:
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
                model,
                ids.to(device, non_blocking=cuda),
                attention.to(device, non_blocking=cuda),
                rows,
                positions,
            )
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            picked.append(logprobs[torch.arange(hi - lo), targets.to(logprobs.device)])
    return torch.cat(picked).cpu() if picked else torch.empty(0)


_HEADS = ("lm_head", "cls", "predictions")  # RoBERTa/XLM-R, BERT/DeBERTa, ALBERT


def _masked_logits(
    model: torch.nn.Module,
    ids: torch.Tensor,
    attention: torch.Tensor,
    rows: torch.Tensor,
    positions: torch.Tensor,
) -> torch.Tensor:
    """Logits at the masked positions only: the vocabulary projection of the other positions,
    most of a statement-scoring batch, is skipped when the model's head is a known module."""
    head = next((getattr(model, name) for name in _HEADS if hasattr(model, name)), None)
    base = getattr(model, "base_model", None)
    if head is None or base is None or base is model:
        logits = model(input_ids=ids, attention_mask=attention).logits
        return logits[rows.to(logits.device), positions.to(logits.device)]
    hidden = base(input_ids=ids, attention_mask=attention).last_hidden_state
    return head(hidden[rows.to(hidden.device), positions.to(hidden.device)])


def score_requests(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    args: Sequence[tuple],
    batch_size: int | None,
    device: torch.device | str,
    max_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
) -> list[MaskedScore]:
    """Score many (text, spans, mode) requests with the fewest, fullest batches.

    Each distinct masked input goes through the model once, even when several requests need
    it (two sentences that differ in one token are the same input once that token is masked),
    and each distinct (input, position, target) log-probability is picked once.
    """
    if not args:
        return []
    plan = _plan(tokenizer, args)
    logprobs = run_batches(
        model, tokenizer.pad_token_id, plan.blocks, plan.wanted, batch_size, max_tokens, device
    )[plan.needed].tolist()
    results, start = [], 0
    for count, answer, n, statement in plan.requests:
        values = logprobs[start : start + count]
        start += count
        answer_total = sum(values[k] for k in answer)
        # statement: special tokens are not masked (log-probability 0) but count in n (eq. 3.23)
        total = sum(values) if statement else answer_total
        results.append(MaskedScore(total, n, answer_total, len(answer)))
    return results
