"""Every distinct token prefix of this package's requests through a Hugging Face causal model once.

lm-eval runs each request's whole token sequence through the model, padded to its batch's
longest. The sequences of a schema's requests share most of their tokens: the two sentences agree
up to the candidate, the scoring methods split one sentence at different places, perturbations
keep most words. A causal model's output at a position depends on the tokens up to it alone, so
the requests' sequences are packed into rows as tries (``scoring.prefix_tree``: each node sees its
ancestors only, its position id is its depth), rows batched by a token budget, and each request's
log-likelihood and greedy flag read from its path: one gather, one greedy check (``greedy_flags``)
and one transfer to the host per forward call (``batch_answers``). ``wsc_group`` with SmolLM2's
tokenizer: 204,653 positions through the model instead of lm-eval's 514,588 in batches of 64 (the
tries of its 25,774 distinct sequences have 200,040 nodes).

The route needs a model that takes a 4-D additive attention mask and position ids (transformers'
eager and SDPA attention do), with sliding windows, where it has them, longer than every
sequence; each model is checked once on a few of its own requests against lm-eval's own forward
(``probe``). Where a check fails, or ``WSC_TASKS_PREFIX_SHARING=0``, ``refusal`` says why and the
requests go through lm-eval's own loop instead (``route``).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

from wsc_tasks.lm_eval_types import Answer
from wsc_tasks.scoring import prefix_tree

SHARING_ENV = "WSC_TASKS_PREFIX_SHARING"  # 0: lm-eval's own loop for this package's requests
ARGMAX_ROWS = 1024  # positions whose argmax one gather copies (``greedy_flags``)
ROW_TOKENS = 512  # nodes per packed row: few sequences start a row; attention stays short
# the largest difference allowed between a node's log-probabilities and lm-eval's forward of its
# sequence alone, in units of the spread of those log-probabilities: rounding, not a leak
PROBE_TOLERANCE = {"float32": 1e-3, "float64": 1e-6}
HALF_TOLERANCE = 0.1  # bfloat16, float16

# lm-eval's tokenized request: ((context, continuation), context tokens, continuation tokens)
TokenRequest = tuple[tuple[str, str], list[int], list[int]]

log = logging.getLogger(f"lm_eval.{__name__}")

_VERDICTS: weakref.WeakKeyDictionary[object, str | None] = weakref.WeakKeyDictionary()
_SAID: set[str] = set()  # reasons logged in this process


def _core(model: Any) -> Any:
    """The transformers model inside a data-parallel wrapper."""
    return getattr(model, "module", model)


def switched_off() -> str | None:
    """``WSC_TASKS_PREFIX_SHARING=0`` (or false, no, off), as it was given; None otherwise."""
    value = os.environ.get(SHARING_ENV, "")
    off = value.strip().lower() in ("0", "false", "no", "off")
    return f"{SHARING_ENV}={value}" if off else None


def static_refusal(lm: Any, inputs: Sequence[Sequence[int]]) -> str | None:
    """Why ``lm``'s model cannot score ``inputs`` as tries, from its configuration; None if it
    can (subject to ``probe``)."""
    import inspect

    off = switched_off()
    if off is not None:
        return off
    if getattr(lm, "backend", None) != "causal":
        return "it is not a causal model"
    model = _core(getattr(lm, "model", None))
    config = getattr(model, "config", None)
    if config is None:
        return "the model has no transformers config"
    implementation = getattr(config, "_attn_implementation", None)
    if implementation not in ("eager", "sdpa"):
        return f"its attention implementation ({implementation}) takes no 4-D attention mask"
    if getattr(config, "alibi", False) or config.model_type in ("bloom", "mpt"):
        return "its attention biases positions by ALiBi, not by position ids"
    try:
        parameters = set(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        parameters = set()
    if not {"position_ids", "attention_mask"} <= parameters:
        return "its forward takes no position ids or attention mask"
    longest = max(map(len, inputs), default=0)
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True) and longest > window:
        return f"a request ({longest} tokens) is longer than its sliding window ({window})"
    if longest > lm.max_length:
        return f"a request ({longest} tokens) is longer than its context ({lm.max_length})"
    return None


def tree_forward(
    lm: Any, ids: torch.Tensor, positions: torch.Tensor, ends: torch.Tensor
) -> torch.Tensor:
    """Logits of packed rows (``[rows, width, vocab]``): the model with each row's tree mask and
    position ids, under lm-eval's mixed precision."""
    import torch

    model = lm.model
    dtype = getattr(_core(model), "dtype", torch.float32)
    mask = prefix_tree.tree_mask(ends, lm.mixed_precision_dtype or dtype)
    with (
        torch.no_grad(),
        torch.autocast(
            device_type=lm.device.type,
            dtype=lm.mixed_precision_dtype,
            enabled=lm.mixed_precision_dtype is not None,
        ),
    ):
        return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits


def _tensors(
    lm: Any, rows: Sequence[prefix_tree.Row]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch

    ids, positions, ends = prefix_tree.tree_inputs(rows)
    return (
        torch.tensor(ids, dtype=torch.long).to(lm.device),
        torch.tensor(positions, dtype=torch.long).to(lm.device),
        torch.tensor(ends, dtype=torch.long).to(lm.device),
    )


def probe(lm: Any, inputs: Sequence[Sequence[int]], sample: int = 6) -> str | None:
    """Whether ``lm``'s model gives each node of a small trie of ``inputs`` the log-probabilities
    its sequence gets alone through lm-eval's forward (``_model_call``); None if so, else what
    differed. The sample: the first sequences in sorted order, which share prefixes and branch."""
    import torch
    import torch.nn.functional as F

    chosen = sorted({tuple(s) for s in inputs})[:sample]
    if not chosen:
        return None
    packing = prefix_tree.pack(chosen, sum(map(len, chosen)))
    tree = F.log_softmax(
        tree_forward(lm, *_tensors(lm, packing.rows)), dim=-1, dtype=torch.float32
    )[0]
    width = max(map(len, chosen))
    padded = [list(s) + [0] * (width - len(s)) for s in chosen]
    plain = F.log_softmax(
        lm._model_call(torch.tensor(padded, dtype=torch.long).to(lm.device)),
        dim=-1,
        dtype=torch.float32,
    )
    if plain.shape[1] != width:
        return "its logits are not one per input position"
    worst = 0.0
    for k, path in enumerate(packing.path_of):
        alone = plain[k, : len(path)]
        spread = float((alone - alone.mean(dim=-1, keepdim=True)).abs().max()) or 1.0
        worst = max(worst, float((tree[path] - alone).abs().max()) / spread)
    dtype = str(getattr(_core(lm.model), "dtype", "torch.float32")).removeprefix("torch.")
    tolerance = PROBE_TOLERANCE.get(dtype, HALF_TOLERANCE)
    if lm.mixed_precision_dtype is not None:
        tolerance = HALF_TOLERANCE
    if not worst <= tolerance:
        return (
            f"on {len(chosen)} of its requests, packed log-probabilities differ from its own "
            f"forward's by {worst:.2g} of their spread (at most {tolerance:g} allowed)"
        )
    return None


def refusal(lm: Any, inputs: Sequence[Sequence[int]]) -> str | None:
    """Why these requests of ``lm`` go through lm-eval's own loop; None when their tries go
    through the model. The model's probe runs once and is remembered for the model object."""
    reason = static_refusal(lm, inputs)
    if reason is not None:
        return reason
    if lm not in _VERDICTS:
        _VERDICTS[lm] = probe(lm, inputs)
    return _VERDICTS[lm]


def say_once(reason: str) -> None:
    if reason not in _SAID:
        _SAID.add(reason)
        log.info(
            f"wsc_tasks: prefix-shared scoring is off for this model ({reason}); its requests go "
            "through lm-eval's own loop"
        )


def token_budget(lm: Any, inputs: Sequence[Sequence[int]], override_bs: int | None) -> int:
    """Token positions per forward call: as many as lm-eval's batches of ``batch_size`` requests
    hold on average (``batch_size`` × the mean input length). With ``auto``, ``auto_budget``."""
    size = lm.batch_size if lm.batch_size != "auto" else override_bs
    if not size:
        return auto_budget(lm, inputs)
    mean = sum(map(len, inputs)) / max(len(inputs), 1)
    return max(1, round(int(size) * mean))


def auto_budget(lm: Any, inputs: Sequence[Sequence[int]]) -> int:
    """``--batch_size auto`` for these requests' own rows: lm-eval's ``max_batch_size`` requests'
    worth of tokens (64 unless given), halved until the fullest forward call of the real packed
    rows fits the device. lm-eval's own detection runs ``max_batch_size`` rows of the longest
    request through the model and keeps their logits whole, [rows, length, vocabulary]: several
    times the memory of the real calls. A CPU has no out-of-memory signal to probe (lm-eval's
    detection keeps its first size there too)."""
    import torch
    import torch.nn.functional as F

    mean = sum(map(len, inputs)) / max(len(inputs), 1)
    longest = max(map(len, inputs), default=1)
    size = int(getattr(lm, "max_batch_size", None) or 64)
    while True:
        budget = max(1, round(size * mean))
        if lm.device.type != "cuda":
            return budget
        try:
            packing = prefix_tree.pack(inputs, min(ROW_TOKENS, max(budget, longest)))
            fullest = prefix_tree.batches(packing.rows, budget)[0]  # longest rows first
            rows = [packing.rows[r] for r in fullest]
            F.log_softmax(tree_forward(lm, *_tensors(lm, rows)), dim=-1, dtype=lm.softmax_dtype)
            return budget
        except torch.cuda.OutOfMemoryError:
            if size == 1:
                raise
            size //= 2
        finally:
            torch.cuda.empty_cache()


def model_inputs(requests: Sequence[TokenRequest]) -> list[list[int]]:
    """The token ids each request feeds a causal model: its context and continuation but the
    last token (lm-eval's input, untruncated)."""
    return [(context + continuation)[:-1] for _, context, continuation in requests]


def greedy_flags(
    log_probs: torch.Tensor, index: torch.Tensor, picked: torch.Tensor
) -> torch.Tensor:
    """lm-eval's greedy flag of each token ``(row, position, token)`` of ``index`` (``picked``:
    its log-probability): whether ``token`` is the argmax of ``log_probs[row, position]``, the
    first of equal maxima. On a CPU, argmax over the vocabulary costs several times a maximum:
    the maximum is taken at every position and the argmax only at the distinct positions where
    the token reaches it (or whose maximum is NaN, which argmax takes as the largest), a chunk
    at a time; elsewhere the token is not the argmax. Exactly argmax's answer, on any device."""
    import torch

    if log_probs.device.type != "cpu":  # a bandwidth-bound pass: argmax as lm-eval takes it
        return log_probs.argmax(dim=-1)[index[0], index[1]] == index[2]
    top = log_probs.amax(dim=-1)[index[0], index[1]]
    candidates = ((picked == top) | top.isnan()).nonzero().squeeze(1)
    greedy = torch.zeros(picked.shape, dtype=torch.bool)
    if len(candidates):
        flat = index[0, candidates] * log_probs.shape[1] + index[1, candidates]
        distinct, back = torch.unique(flat, return_inverse=True)
        rows = log_probs.reshape(-1, log_probs.shape[-1])
        best = torch.cat([rows[distinct[i : i + ARGMAX_ROWS]].argmax(dim=-1)
                          for i in range(0, len(distinct), ARGMAX_ROWS)])  # fmt: skip
        greedy[candidates] = best[back] == index[2, candidates]
    return greedy


def batch_answers(
    log_probs: torch.Tensor,
    rows: Sequence[int],
    positions: Sequence[Sequence[int]],
    conts: Sequence[Sequence[int]],
) -> list[Answer]:
    """(sum of log-probabilities, greedy) of each continuation ``conts[i]``, its tokens scored at
    positions ``positions[i]`` of row ``rows[i]`` of ``log_probs`` ([batch, positions, vocab]):
    one gather, one greedy check and one transfer to the host for all of them. Each sum is
    taken on the host, in the log-softmax dtype, over the request's own tokens as a ``[k, n]``
    block of requests of the same length (bitwise the ``[1, n]`` sum lm-eval takes, on a CPU)."""
    import torch

    by_length: dict[int, list[int]] = {}
    for i, cont in enumerate(conts):
        by_length.setdefault(len(cont), []).append(i)
    flat_rows: list[int] = []
    flat_positions: list[int] = []
    flat_targets: list[int] = []
    for n, members in by_length.items():  # tokens grouped by length: each group a [k, n] block
        for i in members:
            flat_rows += [rows[i]] * n
            flat_positions += positions[i]
            flat_targets += conts[i]
    index = torch.tensor([flat_rows, flat_positions, flat_targets], dtype=torch.long)
    index = index.to(log_probs.device)
    picked = log_probs[index[0], index[1], index[2]]
    greedy = greedy_flags(log_probs, index, picked)
    host = torch.stack([picked, greedy.to(picked.dtype)]).cpu()  # the one transfer
    answers: list[Answer] = [(0.0, False)] * len(conts)
    offset = 0
    for n, members in by_length.items():
        block = host[:, offset : offset + n * len(members)].reshape(2, len(members), n)
        sums, matches = block[0].sum(dim=1).tolist(), (block[1] == 1).all(dim=1).tolist()
        for i, total, match in zip(members, sums, matches, strict=True):
            answers[i] = (float(total), bool(match))
        offset += n * len(members)
    return answers


def answers(
    lm: Any,
    requests: Sequence[TokenRequest],
    inputs: Sequence[Sequence[int]],
    disable_tqdm: bool = False,
    override_bs: int | None = None,
) -> list[Answer]:
    """lm-eval's answers to ``requests`` (their ``model_inputs``: ``inputs``), each distinct
    token prefix through the model once; each answer is written to lm-eval's request cache as
    it comes (``cache_hook``), as lm-eval's own loop writes it."""
    import torch.nn.functional as F
    from tqdm import tqdm

    budget = token_budget(lm, inputs, override_bs)
    longest = max(map(len, inputs), default=1)
    packing = prefix_tree.pack(inputs, min(ROW_TOKENS, max(budget, longest)))
    members: list[list[int]] = [[] for _ in packing.rows]
    for i, row in enumerate(packing.row_of):
        members[row].append(i)
    found: list[Answer] = [(0.0, False)] * len(requests)
    pbar = tqdm(
        total=len(requests),
        disable=(disable_tqdm or (lm.rank != 0)),
        desc="Running loglikelihood requests (shared prefixes)",
    )
    for group in prefix_tree.batches(packing.rows, budget):
        logits = tree_forward(lm, *_tensors(lm, [packing.rows[r] for r in group]))
        log_probs = F.log_softmax(logits, dim=-1, dtype=lm.softmax_dtype)
        chosen = [(k, i) for k, r in enumerate(group) for i in members[r]]
        rows = [k for k, _ in chosen]
        conts = [requests[i][2] for _, i in chosen]
        spans = [
            packing.path_of[i][len(packing.path_of[i]) - len(cont) :]
            for (_, i), cont in zip(chosen, conts, strict=True)
        ]
        for (_, i), answer in zip(
            chosen, batch_answers(log_probs, rows, spans, conts), strict=True
        ):
            found[i] = answer
            lm.cache_hook.add_partial("loglikelihood", requests[i][0], answer)
        pbar.update(len(chosen))
    pbar.close()
    return found
