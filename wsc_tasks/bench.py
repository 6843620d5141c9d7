"""``wsc-tasks bench``: where the time of an lm-eval run goes; ``bench-mlm``: masked-LM throughput.

``wsc-tasks bench [lm_eval run flags…]`` runs exactly what ``wsc-tasks run`` runs with the same
flags (its table printed as usual) and then prints the wall time split into phases, measured by
timers around the functions of each phase (exclusive: a phase's time excludes the phases it
calls): task building (lm-eval's task index and the tasks' data), request building, tokenization
(lm-eval's and the tasks' token counting), the model's forward calls (``torch.cuda.synchronize()``
around each when CUDA is used; the whole ``loglikelihood`` call of ``wsc-chance``), result
processing, aggregation (lm-eval's, with the bootstrap errors) and printing; the rest (imports,
model loading, writing files, lm-eval's bookkeeping) is "other". It also prints the requests, the
distinct requests, the token positions through the model and the ratio of wall time to model time.

``bench-mlm``: throughput of batched masked-LM statement scoring against a loop.

Statement scoring masks every token of a sentence in turn. The loop scores one sentence at a time
with one forward pass per masked copy (the straightforward implementation); ``hf-mlm`` batches the
masked copies of all sentences together, sorted by length, computing identical copies once. Both
score the same WSC266 sentences with the same model; the scores are checked equal.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from . import catalog, mlm, scoring


def roberta_tokenizer(core: Any) -> Any:
    """Wrap a byte-level BPE whose ids 0-3 are <s>, <pad>, </s>, <unk> (RoBERTa's numbering, with
    <mask> in the vocabulary) as a RoBERTa-style tokenizer: <s> … </s> around every text."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    core.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", cls_token="<s>",
        sep_token="</s>", pad_token="<pad>", mask_token="<mask>", unk_token="<unk>",
    )  # fmt: skip


def small_random_roberta(folder: Path, sentences: list[str], layers: int, width: int) -> None:
    """A small random RoBERTa with a byte-level BPE trained on ``sentences``."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=2000, special_tokens=specials)
    tokenizer = roberta_tokenizer(bpe._tokenizer)
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tokenizer), hidden_size=width, num_hidden_layers=layers,
        num_attention_heads=max(width // 64, 1), intermediate_size=4 * width,
        max_position_embeddings=130, pad_token_id=1,
    )  # fmt: skip
    RobertaForMaskedLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wsc-tasks bench-mlm", description=__doc__)
    parser.add_argument("--model", help="a local or Hub masked LM (default: a small random one)")
    parser.add_argument("--sentences", type=int, default=64, help="WSC266 sentences to score")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2, help="random model: layers (BERT-tiny: 2)")
    parser.add_argument("--width", type=int, default=128, help="random model: hidden size (128)")
    args = parser.parse_args(argv)
    problems = [p for s in catalog.load("wsc266") for p in s.problems]
    requests = [
        (p.fill(i), scoring.answer_spans(p, i), "statement") for p in problems for i in (0, 1)
    ][: args.sentences]
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model
        if folder is None:
            folder = tmp
            small_random_roberta(Path(tmp), [r[0] for r in requests], args.layers, args.width)
        lm = mlm.MaskedLM(pretrained=folder, device="cpu", batch_size=args.batch_size)
        mlm.score_requests(lm.model, lm.tokenizer, requests[:2], args.batch_size, lm.device)
        start = time.perf_counter()
        batched = mlm.score_requests(lm.model, lm.tokenizer, requests, args.batch_size, lm.device)
        batched_s = time.perf_counter() - start
        start = time.perf_counter()
        looped = [
            mlm.score_requests(lm.model, lm.tokenizer, [r], 1, lm.device)[0] for r in requests
        ]
        loop_s = time.perf_counter() - start
    worst = max(abs(a.total - b.total) for a, b in zip(batched, looped, strict=True))
    n = len(requests)
    name = args.model or f"random RoBERTa, {args.layers} layers, width {args.width}"
    copies = sum(r.n - 2 for r in batched)
    print(
        f"model: {name}; {n} sentences, {copies} masked copies; {torch.get_num_threads()} threads"
    )
    print(f"one sentence at a time, one copy per pass: {n / loop_s:8.1f} sentences/s")
    print(f"hf-mlm batched (batch {args.batch_size}):          {n / batched_s:8.1f} sentences/s")
    print(f"speed-up: {loop_s / batched_s:.1f}x   (largest score difference {worst:.1e})")
    return 0


# -- wsc-tasks bench ---------------------------------------------------------------------------
PHASES = ("task building", "request building", "tokenization", "model forward",
          "result processing", "aggregation", "printing")  # fmt: skip


class PhaseTimer:
    """Exclusive wall time per phase of functions wrapped with ``wrap``; counts beside."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self._stack: list[list[float]] = []  # [start, time spent in nested phases]
        self._cuda = False

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

        timed._wsc_tasks_phase = phase  # type: ignore[attr-defined]
        timed.__doc__ = getattr(original, "__doc__", None)
        setattr(owner, name, timed)

    def _synchronize(self) -> None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()


def _subclasses(cls: type) -> list[type]:
    out = [cls]
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

    from . import categorized, chance, patches, task, tokens, winowhy, zeroshot  # noqa: F401

    timer.wrap(TaskManager, "__init__", "task building")
    timer.wrap(TaskManager, "load", "task building")
    for cls in _subclasses(Task):
        if "build_all_requests" in vars(cls):
            timer.wrap(cls, "build_all_requests", "request building")
        if "process_results" in vars(cls):
            timer.wrap(cls, "process_results", "result processing")
    for name in ("_encode", "first_token_text"):
        timer.wrap(tokens.TokenCounter, name, "tokenization")
    for name in ("tok_encode", "tok_batch_encode"):
        timer.wrap(HFLM, name, "tokenization")
    timer.wrap(TemplateLM, "_encode_pair", "tokenization")
    timer.wrap(patches, "_encode_in_one_batch", "tokenization")
    timer.wrap(HFLM, "_model_call", "model forward")
    timer.wrap(chance.ChanceLM, "loglikelihood", "model forward")
    timer.wrap(mlm, "_masked_logits", "model forward")
    timer.wrap(evaluator, "_process_results", "aggregation")
    timer.wrap(lm_utils, "make_table", "printing")
    _count_requests(timer, patches)
    _count_tokens(timer, HFLM, mlm)


def _count_requests(timer: PhaseTimer, fixes: Any) -> None:
    original = fixes.distinct

    def distinct(requests: Any) -> tuple[list[Any], list[int]]:
        unique, where = original(requests)
        timer.counts["requests"] += len(requests)
        timer.counts["distinct requests"] += len(unique)
        return unique, where

    fixes.distinct = distinct


def _count_tokens(timer: PhaseTimer, hflm: Any, mlm_module: Any) -> None:
    def counting(forward: Any) -> Any:
        """``forward(owner, input_ids, …)`` (HFLM's ``_model_call``, mlm's ``_masked_logits``)."""

        def counted(owner: Any, ids: Any, *args: Any, **kwargs: Any) -> Any:
            timer.counts["token positions through the model"] += int(ids.numel())
            timer.counts["forward calls"] += 1
            return forward(owner, ids, *args, **kwargs)

        return counted

    hflm._model_call = counting(hflm._model_call)
    mlm_module._masked_logits = counting(mlm_module._masked_logits)


def report(timer: PhaseTimer, wall: float, cpu: float | None = None) -> str:
    lines = ["", "wsc-tasks bench: where the wall time went (exclusive seconds per phase)"]
    measured = sum(timer.seconds[p] for p in PHASES)
    for phase in PHASES:
        share = timer.seconds[phase] / wall if wall else 0.0
        lines.append(f"  {phase:18s} {timer.seconds[phase]:9.2f} s  {share:6.1%}")
    other = wall - measured
    lines.append(f"  {'other':18s} {other:9.2f} s  {other / wall if wall else 0:6.1%}")
    lines.append(f"  {'wall':18s} {wall:9.2f} s")
    if cpu is not None:  # on a shared machine, wall time also counts other processes' turns
        lines.append(f"  {'process CPU time':18s} {cpu:9.2f} s  (all threads of this process)")
    for name in ("requests", "distinct requests", "forward calls",
                 "token positions through the model"):  # fmt: skip
        lines.append(f"  {name}: {timer.counts[name]:,}")
    model = timer.seconds["model forward"]
    ratio = f"{wall / model:.1f}" if model > 0 else "inf (no model time)"
    lines.append(f"  wall / model forward time: {ratio}")
    return "\n".join(lines)


def bench_run(argv: list[str], run: Callable[[list[str]], int] | None = None) -> int:
    """``wsc-tasks bench``: ``wsc-tasks run`` with the same flags, timed by phase."""
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    start, cpu_start = time.perf_counter(), time.process_time()
    timer = PhaseTimer()
    instrument(timer)
    if run is None:
        from .cli import _run as run
    try:
        code = run(argv)
    finally:
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        print(report(timer, wall, cpu), file=sys.stdout, flush=True)
    return code
