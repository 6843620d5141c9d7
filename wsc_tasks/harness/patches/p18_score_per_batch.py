"""lm-eval patch 18, ``score_per_batch``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from lm_eval.models.huggingface import HFLM

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, bigram_hflm, original

# ``HFLM._loglikelihood_tokens`` builds one tensor per request (``torch.tensor`` for its input and
# again for its continuation), then, per request, slices, takes the argmax, compares, gathers, sums
# and reads the answer back to the host (``float``, ``bool``): two small device syncs per request,
# 43,745 distinct requests for ``wsc_group``. For a causal model it now does the same per forward
# call: the padded inputs as one tensor, lm-eval's one log-softmax, one gather of every scored
# token (continuations of cache hits included, each from its own last positions, as section 1),
# one argmax comparison with the continuation tokens, and one transfer to the host; each request's
# sum is then taken on the host, in the log-softmax dtype, over its own tokens as a ``[k, n]``
# block of requests of the same length (bitwise the ``[1, n]`` sum lm-eval takes, on a CPU; on a
# GPU within the rounding of a reduction order). Batches, their order, the cache hook and the
# results' order are lm-eval's. Sequence-to-sequence models, subclasses that select other logits
# (``_select_cont_toks``) and ``WSC_TASKS_PER_REQUEST_SCORING=1`` keep lm-eval's own loop. No
# upstream issue found; upstream, ``_loglikelihood_tokens`` could score each batch this way.
PER_REQUEST_ENV = "WSC_TASKS_PER_REQUEST_SCORING"  # 1: lm-eval's own per-request loop


# lm-eval's tokenized request: ((context, continuation), context tokens, continuation tokens)
TokenRequest = tuple[tuple[str, str], list[int], list[int]]


def _scores_per_batch(lm: object) -> bool:
    """Whether section 18's per-batch scoring serves ``lm`` (else lm-eval's own loop)."""
    import os

    from lm_eval.models.huggingface import HFLM

    return (
        getattr(lm, "backend", None) == "causal"
        and getattr(type(lm), "_select_cont_toks", None) is HFLM._select_cont_toks
        and os.environ.get(PER_REQUEST_ENV, "") in ("", "0")
    )


def batch_answers(
    log_probs: torch.Tensor,
    rows: Sequence[int],
    positions: Sequence[Sequence[int]],
    conts: Sequence[Sequence[int]],
) -> list[tuple[float, bool]]:
    """(sum of log-probabilities, greedy) of each continuation ``conts[i]``, its tokens scored at
    positions ``positions[i]`` of row ``rows[i]`` of ``log_probs`` ([batch, positions, vocab]):
    one gather, one argmax comparison and one transfer to the host for all of them."""
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
    greedy = log_probs.argmax(dim=-1)[index[0], index[1]] == index[2]
    host = torch.stack([picked, greedy.to(picked.dtype)]).cpu()  # the one transfer
    answers: list[tuple[float, bool]] = [(0.0, False)] * len(conts)
    offset = 0
    for n, members in by_length.items():
        block = host[:, offset : offset + n * len(members)].reshape(2, len(members), n)
        sums, matches = block[0].sum(dim=1).tolist(), (block[1] == 1).all(dim=1).tolist()
        for i, total, match in zip(members, sums, matches, strict=True):
            answers[i] = (float(total), bool(match))
        offset += n * len(members)
    return answers


def score_per_batch() -> bool:
    """Section 18; True if ``HFLM._loglikelihood_tokens`` was replaced now."""
    from lm_eval.models.huggingface import HFLM

    per_request = HFLM._loglikelihood_tokens

    def _loglikelihood_tokens(
        self: HFLM,
        requests: list[TokenRequest],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        if not _scores_per_batch(self):
            return per_request(self, requests, disable_tqdm, override_bs)
        return _batched_loglikelihood_tokens(self, requests, disable_tqdm, override_bs)

    return _replace(HFLM, "_loglikelihood_tokens", _loglikelihood_tokens)


def _batched_loglikelihood_tokens(
    lm: HFLM, requests: list[TokenRequest], disable_tqdm: bool, override_bs: int | None
) -> list[tuple[float, bool]]:
    """lm-eval 0.4.13's ``HFLM._loglikelihood_tokens`` for a causal model, scored per batch."""
    import torch
    import torch.nn.functional as F
    from lm_eval.models.huggingface import eval_logger
    from lm_eval.models.utils import Collator
    from tqdm import tqdm

    re_ord = Collator(
        requests,
        sort_fn=lambda req: (-len(req[1] + req[2]), tuple(req[1] + req[2])),
        group_by="contexts" if lm.logits_cache else None,
        group_fn=lambda req: req[-2] + req[-1][:-1],
    )
    n_reordered = len(re_ord)
    batch_size = (
        lm.batch_size if lm.batch_size != "auto" else override_bs if override_bs is not None else 0
    )
    batch_fn = (
        lm._batch_scheduler
        if lm.batch_size == "auto" and n_reordered > 0 and not override_bs
        else None
    )
    if batch_fn is not None:
        lm.batch_sizes = {}  # as lm-eval: detect again for these requests
    pbar = tqdm(
        total=len(requests),
        disable=(disable_tqdm or (lm.rank != 0)),
        desc="Running loglikelihood requests",
    )
    res: list[tuple[float, bool]] = []
    placeholder = torch.zeros(1, 1, 1)  # get_cache's logits: only its bookkeeping is used here
    max_length = lm.max_length  # a property that reads the model's config: once, not per request
    for chunk in re_ord.get_batched(n=batch_size, batch_fn=batch_fn):
        inputs = []
        for _, context_enc, continuation_enc in chunk:
            assert len(context_enc) > 0
            assert len(continuation_enc) > 0
            assert len(continuation_enc) <= max_length
            total_length = len(context_enc) + len(continuation_enc)
            if total_length > max_length + 1:
                eval_logger.warning(
                    f"Combined length of context ({len(context_enc)}) and continuation "
                    f"({len(continuation_enc)}) exceeds model's maximum length "
                    f"({max_length}). Truncating {total_length - max_length + 1} tokens "
                    "from the left."
                )
            inputs.append((context_enc + continuation_enc)[-(max_length + 1) :][:-1])
        width = max(map(len, inputs))
        padded = [ids + [0] * (width - len(ids)) for ids in inputs]  # lm-eval's right padding
        batched = torch.tensor(padded, dtype=torch.long).to(lm.device)
        log_probs = F.log_softmax(lm._model_call(batched), dim=-1, dtype=lm.softmax_dtype)
        shift = log_probs.shape[1] - width  # virtual tokens before the input, as lm-eval allows
        rows: list[int] = []
        spans: list[range] = []
        conts: list[list[int]] = []
        keys: list[object] = []
        for row, ((request_str, ctx_tokens, cont_tokens), ids) in enumerate(
            zip(chunk, inputs, strict=True)
        ):
            end = len(ids) + shift
            for key, cont, _ in re_ord.get_cache(
                req_str=request_str, cxt_toks=ctx_tokens, cont_toks=cont_tokens, logits=placeholder
            ):
                rows.append(row)
                spans.append(range(end - len(cont), end))  # each continuation's last positions
                conts.append(list(cont))
                keys.append(key)
        for key, answer in zip(keys, batch_answers(log_probs, rows, spans, conts), strict=True):
            res.append(answer)
            if key is not None:
                lm.cache_hook.add_partial("loglikelihood", key, answer)
        pbar.update(len(keys))
    pbar.close()
    return re_ord.get_original(res)


# sha256 of the source of lm-eval 0.4.13's HFLM._loglikelihood_tokens, which this section follows
PER_REQUEST_LOOP_SHA = "994529f70fd23192"


def lm_eval_scores_each_request_with_its_own_tensors() -> bool:
    """lm-eval's ``HFLM._loglikelihood_tokens`` builds two tensors a request (input and
    continuation), and its source is the one this section follows line by line (a change there
    must be reviewed before the range is widened)."""
    import hashlib
    import inspect
    from unittest import mock

    import torch
    from lm_eval.models.huggingface import HFLM

    loop = original(HFLM, "_loglikelihood_tokens")
    digest = hashlib.sha256(inspect.getsource(loop).encode()).hexdigest()[:16]
    built: list[object] = []
    tensor = torch.tensor

    def counting(data: object, *args: object, **kwargs: object) -> torch.Tensor:
        built.append(data)
        return tensor(data, *args, **kwargs)

    requests = [(("a", "b"), [1, 2, 3], [4 + i, 5]) for i in range(4)]
    with mock.patch.object(torch, "tensor", counting):
        loop(bigram_hflm(), requests, disable_tqdm=True)
    per_request = [data for data in built if data]  # input and continuation ids
    return digest == PER_REQUEST_LOOP_SHA and len(per_request) == 2 * len(requests)


PATCH = Patch(
    "score_per_batch",
    "lm_eval.models.huggingface.HFLM._loglikelihood_tokens",
    TESTED,
    still_needed=lm_eval_scores_each_request_with_its_own_tensors,
)
