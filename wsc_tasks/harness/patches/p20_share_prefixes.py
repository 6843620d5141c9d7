"""lm-eval patch 20, ``share_prefixes``: what it changes and why, then the change."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from lm_eval.models.huggingface import HFLM

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, bigram_hflm, original
from wsc_tasks.harness.patches.p18_score_per_batch import (
    TokenRequest,
    _scores_per_batch,
    batch_answers,
)
from wsc_tasks.scoring import prefix_tree

# ``HFLM._loglikelihood_tokens`` runs each request's whole token sequence through the model, padded
# to its batch's longest. The sequences of a schema's requests share most of their tokens: the two
# sentences agree up to the candidate, the scoring methods split the same sentence at different
# places, the perturbations keep most words. A causal model's output at a position depends on the
# tokens up to it alone, so for a causal model each distinct prefix now goes through the model
# once: the requests' sequences are packed into rows as tries (``scoring.prefix_tree``: each
# node sees its ancestors only, its position id is its depth), rows batched by a token budget,
# and each request's log-likelihood and greedy flag read from its path with the gather of section
# 18. ``wsc_group`` with SmolLM2's tokenizer, batches of 64: 204,653 positions through the
# model instead of 514,588 (the tries of its 25,774 distinct sequences have 200,040 nodes). The
# route needs a model that takes a 4-D additive attention mask and position ids (transformers'
# eager and SDPA attention do), with sliding windows, where it has them, longer than every
# sequence; each
# model is checked once on a few of its own requests against lm-eval's own forward, and where
# a check fails or the requests are longer than the model's context the call goes to section 18
# (said once in the log). ``WSC_TASKS_PREFIX_SHARING=0`` turns the route off. No upstream issue
# found; upstream, ``_loglikelihood_tokens`` could group its requests this way.
SHARING_ENV = "WSC_TASKS_PREFIX_SHARING"  # 0: every request's tokens through the model
ROW_TOKENS = 512  # nodes per packed row: few sequences start a row; attention stays short
MARK = "_wsc_tasks_patch_share_prefixes"
VERDICT = "_wsc_tasks_prefix_sharing"  # the model object's cached check: None (takes it) or why not
# the largest difference allowed between a node's log-probabilities and lm-eval's forward of its
# sequence alone, in units of the spread of those log-probabilities: rounding, not a leak
PROBE_TOLERANCE = {"float32": 1e-3, "float64": 1e-6}
HALF_TOLERANCE = 0.1  # bfloat16, float16

log = logging.getLogger("lm_eval.wsc_tasks.harness.patches")


def _core(model: Any) -> Any:
    """The transformers model inside a data-parallel wrapper."""
    return getattr(model, "module", model)


def static_refusal(lm: HFLM, inputs: Sequence[Sequence[int]]) -> str | None:
    """Why ``lm``'s model cannot score ``inputs`` as tries, from its configuration; None if it
    can (subject to ``probe``)."""
    import inspect

    if os.environ.get(SHARING_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return f"{SHARING_ENV}={os.environ[SHARING_ENV]}"
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
    lm: HFLM, ids: torch.Tensor, positions: torch.Tensor, ends: torch.Tensor
) -> torch.Tensor:
    """Logits of packed rows (``[rows, width, vocab]``): lm-eval's ``_model_call`` with each
    row's tree mask and position ids."""
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
    lm: HFLM, rows: Sequence[prefix_tree.Row]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch

    ids, positions, ends = prefix_tree.tree_inputs(rows)
    return (
        torch.tensor(ids, dtype=torch.long).to(lm.device),
        torch.tensor(positions, dtype=torch.long).to(lm.device),
        torch.tensor(ends, dtype=torch.long).to(lm.device),
    )


def probe(lm: HFLM, inputs: Sequence[Sequence[int]], sample: int = 6) -> str | None:
    """Whether ``lm``'s model gives each node of a small trie of ``inputs`` the log-probabilities
    its sequence gets alone through lm-eval's forward; None if so, else what differed. The
    sample: the first sequences in sorted order, which share prefixes and branch."""
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


def refusal(lm: HFLM, inputs: Sequence[Sequence[int]]) -> str | None:
    """Why this call of ``lm`` keeps section 18's route; None when its tries go through the
    model. The model's probe runs once and is remembered on the model object."""
    reason = static_refusal(lm, inputs)
    if reason is not None:
        return reason
    if VERDICT not in vars(lm):
        vars(lm)[VERDICT] = probe(lm, inputs)
    verdict: str | None = vars(lm)[VERDICT]
    return verdict


_SAID: set[str] = set()  # reasons logged in this process


def _say_once(reason: str) -> None:
    if reason not in _SAID:
        _SAID.add(reason)
        log.info(
            f"wsc_tasks: prefix-shared scoring is off for this model ({reason}); each request's "
            "tokens go through the model as lm-eval sends them"
        )


def token_budget(lm: HFLM, inputs: Sequence[Sequence[int]], override_bs: int | None) -> int:
    """Token positions per forward call: as many as lm-eval's batches of ``batch_size`` requests
    hold on average (``batch_size`` × the mean input length); with ``auto``, lm-eval's detected
    batch size of rows as long as ``ROW_TOKENS``."""
    size = lm.batch_size if lm.batch_size != "auto" else override_bs
    if not size:
        longest = min(ROW_TOKENS, lm.max_length)
        rows = lm._detect_batch_size([(("", ""), [0] * longest, [0])], 0)
        return int(rows) * longest
    mean = sum(map(len, inputs)) / max(len(inputs), 1)
    return max(1, round(int(size) * mean))


def model_inputs(requests: Sequence[TokenRequest]) -> list[list[int]]:
    """The token ids each request feeds a causal model: its context and continuation but the
    last token (lm-eval's input, untruncated)."""
    return [(context + continuation)[:-1] for _, context, continuation in requests]


def shared_prefix_answers(
    lm: HFLM,
    requests: Sequence[TokenRequest],
    inputs: Sequence[Sequence[int]],
    disable_tqdm: bool,
    override_bs: int | None,
) -> list[tuple[float, bool]]:
    """lm-eval's answers to ``requests`` (their ``model_inputs``: ``inputs``), each distinct token
    prefix through the model once."""
    import torch.nn.functional as F
    from tqdm import tqdm

    budget = token_budget(lm, inputs, override_bs)
    longest = max(map(len, inputs), default=1)
    packing = prefix_tree.pack(inputs, min(ROW_TOKENS, max(budget, longest)))
    members: list[list[int]] = [[] for _ in packing.rows]
    for i, row in enumerate(packing.row_of):
        members[row].append(i)
    answers: list[tuple[float, bool]] = [(0.0, False)] * len(requests)
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
            answers[i] = answer
            lm.cache_hook.add_partial("loglikelihood", requests[i][0], answer)
        pbar.update(len(chosen))
    pbar.close()
    return answers


def share_prefixes() -> bool:
    """Section 20; True if ``HFLM._loglikelihood_tokens`` was wrapped now."""
    from lm_eval.models.huggingface import HFLM

    padded = HFLM._loglikelihood_tokens  # section 18's, when applied first

    def _loglikelihood_tokens(
        self: HFLM,
        requests: list[TokenRequest],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        if not requests or not _scores_per_batch(self):
            return padded(self, requests, disable_tqdm, override_bs)
        inputs = model_inputs(requests)
        reason = refusal(self, inputs)
        if reason is not None:
            _say_once(reason)
            return padded(self, requests, disable_tqdm, override_bs)
        return shared_prefix_answers(self, requests, inputs, disable_tqdm, override_bs)

    functools.update_wrapper(_loglikelihood_tokens, padded)
    return _replace(HFLM, "_loglikelihood_tokens", _loglikelihood_tokens, mark=MARK)


def lm_eval_runs_every_shared_prefix_again() -> bool:
    """lm-eval's ``HFLM._loglikelihood_tokens`` sends two requests that share a 3-token prefix
    through the model as two full rows: 8 token positions where the trie has 5."""
    from unittest import mock

    from lm_eval.models.huggingface import HFLM

    lm = bigram_hflm()
    seen: list[int] = []
    call = type(lm)._model_call

    def counting(self: HFLM, ids: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        seen.append(int(ids.numel()))
        return call(self, ids, *args, **kwargs)

    requests = [(("a", "b"), [1, 2, 3], [4, 5]), (("a", "c"), [1, 2, 3], [6, 7])]
    with mock.patch.object(type(lm), "_model_call", counting):
        original(HFLM, "_loglikelihood_tokens")(lm, requests, disable_tqdm=True)
    return sum(seen) == 8 and prefix_tree.trie_nodes([[1, 2, 3, 4], [1, 2, 3, 6]]) == 5


PATCH = Patch(
    "share_prefixes",
    "lm_eval.models.huggingface.HFLM._loglikelihood_tokens",
    TESTED,
    still_needed=lm_eval_runs_every_shared_prefix_again,
)
