"""``python -m benchmarks run``'s phase accounting: exclusive wall time per phase of the functions
each phase runs (wrapped for one run, unwrapped after), the counts of requests, forward calls,
token positions and trie nodes, and the report of where the time went."""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from typing import Any

import torch

from wsc_tasks.models import mlm_scoring

PHASES = ("model loading", "task building", "request building", "tokenization", "model forward",
          "result processing", "aggregation", "printing")  # fmt: skip


class PhaseTimer:
    """Exclusive wall time per phase of functions wrapped with ``wrap``; counts beside."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self._stack: list[list[float]] = []  # [start, time spent in nested phases]
        self.cuda = False  # a forward call ran on CUDA
        self.parameters = 0  # the model's, its input embedding left out (``model_parameters``)

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        original = getattr(owner, name, None)
        if original is None or getattr(original, "_wsc_tasks_phase", None):
            return
        timer = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if phase == "model forward":
                timer._synchronize()
            frame = [time.perf_counter(), 0.0]
            timer._stack.append(frame)
            try:
                return original(*args, **kwargs)
            finally:
                if phase == "model forward":
                    timer._synchronize()
                timer._stack.pop()
                elapsed = time.perf_counter() - frame[0]
                timer.seconds[phase] += elapsed - frame[1]
                if timer._stack:
                    timer._stack[-1][1] += elapsed

        functools.update_wrapper(timed, original)  # keeps the marks of the patches' wrappers
        timed._wsc_tasks_phase = phase  # type: ignore[attr-defined]
        _replace(owner, name, timed)

    def _synchronize(self) -> None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()


_WRAPPED: list[tuple[Any, str, Any]] = []  # (owner, name, what it was), undone by uninstrument


def _replace(owner: Any, name: str, new: Any) -> None:
    _WRAPPED.append((owner, name, vars(owner).get(name, _ABSENT) if isinstance(owner, type)
                     else getattr(owner, name)))  # fmt: skip
    setattr(owner, name, new)


_ABSENT = object()


def uninstrument() -> None:
    """Undo ``instrument``: the next run gets a fresh timer."""
    while _WRAPPED:
        owner, name, before = _WRAPPED.pop()
        if before is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, before)


def model_parameters(model: Any) -> int:
    """Parameters whose weights multiply each token position: all but the input embedding
    (unless it is also the output layer, tied)."""
    seen = {id(p): p.numel() for p in model.parameters()}
    embedding = getattr(model, "get_input_embeddings", lambda: None)()
    output = getattr(model, "get_output_embeddings", lambda: None)()
    weight = getattr(embedding, "weight", None)
    if weight is not None and (output is None or output.weight is not weight):
        seen.pop(id(weight), None)
    return sum(seen.values())


def _subclasses(cls: type) -> list[type]:
    out = [cls]
    sub: type
    for sub in cls.__subclasses__():
        out += _subclasses(sub)
    return out


def instrument(timer: PhaseTimer) -> None:
    """Wrap the functions of every phase (lm-eval 0.4.13 and this package's)."""
    import lm_eval.evaluator as evaluator
    import lm_eval.utils as lm_utils
    from lm_eval.api.model import TemplateLM
    from lm_eval.api.task import Task
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from wsc_tasks.data import zeroshot  # noqa: F401
    from wsc_tasks.models import chance
    from wsc_tasks.scoring import tokens
    from wsc_tasks.serving import encoding, route, tries
    from wsc_tasks.tasks import categorized, contamination, schema_tasks, winowhy  # noqa: F401

    timer.wrap(HFLM, "__init__", "model loading")
    timer.wrap(TaskManager, "__init__", "task building")
    timer.wrap(TaskManager, "load", "task building")
    for cls in _subclasses(Task):
        if "build_all_requests" in vars(cls):
            timer.wrap(cls, "build_all_requests", "request building")
        if "process_results" in vars(cls):
            timer.wrap(cls, "process_results", "result processing")
    for name in ("_encode", "first_token_text", "offsets", "prime", "prime_offsets"):
        timer.wrap(tokens.TokenCounter, name, "tokenization")
    for name in ("tok_encode", "tok_batch_encode"):
        timer.wrap(HFLM, name, "tokenization")
    timer.wrap(TemplateLM, "_encode_pair", "tokenization")
    timer.wrap(encoding, "prefill", "tokenization")
    timer.wrap(HFLM, "_model_call", "model forward")
    timer.wrap(tries, "tree_forward", "model forward")
    timer.wrap(chance.ChanceLM, "loglikelihood", "model forward")
    timer.wrap(mlm_scoring, "_masked_logits", "model forward")
    timer.wrap(evaluator, "_process_results", "aggregation")
    timer.wrap(lm_utils, "make_table", "printing")
    _count_requests(timer, route)
    _count_tokens(timer, HFLM, mlm_scoring, tries)
    _count_trie(timer, tries)


def _count_requests(timer: PhaseTimer, fixes: Any) -> None:
    original = fixes.distinct

    def distinct(requests: Any) -> tuple[list[Any], list[int]]:
        unique, where = original(requests)
        timer.counts["requests"] += len(requests)
        timer.counts["distinct requests"] += len(unique)
        return unique, where

    _replace(fixes, "distinct", distinct)


def _count_tokens(timer: PhaseTimer, hflm: Any, mlm_module: Any, sharing: Any) -> None:
    def counting(forward: Any) -> Any:
        """``forward(owner, input_ids, …)`` (HFLM's ``_model_call``, mlm's ``_masked_logits``)."""

        def counted(owner: Any, ids: Any, *args: Any, **kwargs: Any) -> Any:
            timer.counts["token positions through the model"] += int(ids.numel())
            timer.counts["forward calls"] += 1
            if not timer.parameters:
                timer.parameters = model_parameters(getattr(owner, "model", owner))
                timer.cuda = ids.is_cuda
            return forward(owner, ids, *args, **kwargs)

        return counted

    _replace(hflm, "_model_call", counting(hflm._model_call))
    _replace(mlm_module, "_masked_logits", counting(mlm_module._masked_logits))
    _replace(sharing, "tree_forward", counting(sharing.tree_forward))


def _count_trie(timer: PhaseTimer, tries: Any) -> None:
    """Count the nodes of the tries of the token sequences this package's requests run through
    a causal model: the fewest positions it needs for them."""
    from wsc_tasks.scoring import prefix_tree

    original = tries.model_inputs

    def counted(requests: Any) -> Any:
        inputs = original(requests)
        timer.counts["trie nodes"] += prefix_tree.trie_nodes(inputs)
        return inputs

    _replace(tries, "model_inputs", counted)


def peak_memory_gb() -> float:
    """The process's peak resident memory so far (Linux reports KiB, macOS bytes)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**30 if sys.platform == "darwin" else 2**20)


def report(timer: PhaseTimer, wall: float, cpu: float | None = None) -> str:
    lines = ["", "benchmarks run: where the wall time went (exclusive seconds per phase)"]
    measured = sum(timer.seconds[p] for p in PHASES)
    for phase in PHASES:
        share = timer.seconds[phase] / wall if wall else 0.0
        lines.append(f"  {phase:18s} {timer.seconds[phase]:9.2f} s  {share:6.1%}")
    other = wall - measured
    lines.append(f"  {'other':18s} {other:9.2f} s  {other / wall if wall else 0:6.1%}")
    lines.append(f"  {'wall':18s} {wall:9.2f} s")
    if cpu is not None:  # on a shared machine, wall time also counts other processes' turns
        lines.append(f"  {'process CPU time':18s} {cpu:9.2f} s  (all threads of this process)")
    lines.append(f"  {'peak memory':18s} {peak_memory_gb():9.2f} GB (this process's maximum RSS)")
    for name in ("requests", "distinct requests", "forward calls"):
        lines.append(f"  {name}: {timer.counts[name]:,}")
    positions, nodes = timer.counts["token positions through the model"], timer.counts["trie nodes"]
    minimum = (
        f" (the tries of the requests' token sequences: {nodes:,} nodes, the fewest a causal "
        f"model needs; {positions / nodes:.2f}x)"
        if nodes
        else ""
    )
    lines.append(f"  token positions through the model: {positions:,}{minimum}")
    model = timer.seconds["model forward"]
    ratio = f"{wall / model:.1f}" if model > 0 else "inf (no model time)"
    lines.append(f"  wall / model forward time: {ratio}")
    if timer.counts["requests"]:
        per_request = (wall - model) / timer.counts["requests"] * 1000
        lines.append(f"  outside the forward calls: {per_request:.3f} ms a request")
    return "\n".join(lines)
