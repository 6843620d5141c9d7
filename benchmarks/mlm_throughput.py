"""``python -m benchmarks mlm``: throughput of batched masked-LM statement scoring, before and
after in one run.

Statement scoring masks every token of a sentence in turn. ``hf-mlm`` builds the masked copies of
all sentences as tensors, computes identical copies once and batches them by tokens, longest
first; the reference it replaced (``per_copy_scores``: one Python tuple per copy) and, unless
``--no-loop``, a loop with one forward pass per copy score the same WSC266 sentences with the same
model, as can minicons' ``MaskedLMScorer`` (``--minicons N``, if installed). It prints sentences/s,
wall time over the time inside the model's forward calls, and the largest score differences.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks.phase_timer import PhaseTimer
from benchmarks.random_models import small_random_roberta
from wsc_tasks.data import catalog
from wsc_tasks.models import mlm, mlm_scoring
from wsc_tasks.scoring.masked import answer_spans


def per_copy_scores(
    model: Any, tokenizer: Any, args: list[tuple], batch_size: int, device: Any
) -> list[mlm.MaskedScore]:
    """The reference ``hf-mlm`` scoring before masked copies were tensors (kept to check and
    time against): one Python tuple per masked copy from ``mlm.plan_jobs``, a dict of distinct
    copies, ``batch_size`` copies per pass, longest first."""
    plans = []
    needs: dict[tuple[int, ...], set[tuple[int, int]]] = {}  # copy -> (position, token id)
    for text, spans, mode in args:
        ids, answer, jobs = mlm.plan_jobs(tokenizer, text, spans, mode)
        plans.append((ids, answer, jobs, mode))
        for masked, positions in jobs:
            needs.setdefault(masked, set()).update((p, ids[p]) for p in positions)
    inputs = sorted(needs, key=len, reverse=True)
    logprobs = {}
    for start in range(0, len(inputs), batch_size):
        batch = inputs[start : start + batch_size]
        ids = torch.full((len(batch), len(batch[0])), tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(ids)
        for row, seq in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = 1
        wanted = [sorted(needs[seq]) for seq in batch]
        rows = torch.tensor([r for r, w in enumerate(wanted) for _ in w])
        positions = torch.tensor([p for w in wanted for p, _ in w])
        targets = torch.tensor([t for w in wanted for _, t in w])
        with torch.inference_mode():
            logits = mlm_scoring._masked_logits(
                model, ids.to(device), attention.to(device), rows, positions
            )
            picked = torch.log_softmax(logits.float(), dim=-1)
            picked = picked[torch.arange(len(targets)), targets.to(picked.device)].tolist()
        values = iter(picked)
        for seq, needed in zip(batch, wanted, strict=True):
            for position, target in needed:
                logprobs[(seq, position, target)] = next(values)
    results = []
    for ids, answer, jobs, mode in plans:
        per_position = {
            p: logprobs[(masked, p, ids[p])] for masked, positions in jobs for p in positions
        }
        answer_total = sum(per_position[i] for i in answer)
        if mode == "multimask":
            total, n = answer_total, len(answer)
        else:
            total, n = sum(per_position.values()), len(ids)
        results.append(mlm.MaskedScore(total, n, answer_total, len(answer)))
    return results


def _timed(timer: PhaseTimer, score: Callable[[], list[Any]]) -> tuple[list[Any], float, float]:
    """Scores, wall seconds and seconds inside the model's forward calls."""
    before = timer.seconds["model forward"]
    start = time.perf_counter()
    scores = score()
    wall = time.perf_counter() - start
    return scores, wall, timer.seconds["model forward"] - before


def _minicons(
    folder: str, requests: list[tuple], batch_size: int, device: str, dtype: str
) -> tuple[list[float], float]:
    """minicons' pseudo-log-likelihood (``MaskedLMScorer``, PLL_metric original) of each
    sentence, and the seconds it took; [] when minicons is not installed."""
    try:
        from minicons import scorer
    except ImportError:
        return [], 0.0
    model = scorer.MaskedLMScorer(folder, device=device, torch_dtype=getattr(torch, dtype))
    if not hasattr(model.tokenizer, "batch_encode_plus"):  # minicons 0.3 on transformers 5
        model.tokenizer.batch_encode_plus = model.tokenizer.__call__
    texts = [text for text, _, _ in requests]
    model.sequence_score(texts[:2], reduction=lambda x: x.sum(0).item())
    start = time.perf_counter()
    out = []
    for k in range(0, len(texts), batch_size):
        out += model.sequence_score(texts[k : k + batch_size], reduction=lambda x: x.sum(0).item())
    return out, time.perf_counter() - start


MLM_HELP = (
    "Sentences per second of masked-LM statement scoring (each token of a sentence masked in "
    "turn) on WSC266 sentences, three ways on the same model: hf-mlm's batches of tensor-built "
    "masked copies, the same batches built as Python tuples, and one copy per forward pass "
    "(--no-loop skips it); also minicons' MaskedLMScorer with --minicons N. Prints wall time over "
    "model time and the largest score difference between the ways."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks mlm",
        usage="python -m benchmarks mlm [--model M] [--sentences N] [options]",
        description=MLM_HELP,
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=28),
    )
    add = parser.add_argument
    add("--model", metavar="M", help="a local or Hub masked LM (default: a small random one)")
    add("--sentences", type=int, default=64, metavar="N", help="WSC266 sentences (default 64)")
    add("--batch-size", type=int, default=0, metavar="N",
        help="at most N copies per pass (default 0: as the token budget allows)")  # fmt: skip
    add("--max-batch-tokens", type=int, default=mlm.DEFAULT_MAX_BATCH_TOKENS, metavar="N",
        help="padded token positions per pass (default %(default)s)")  # fmt: skip
    add("--layers", type=int, default=2, metavar="N", help="random model: layers (default 2)")
    add("--width", type=int, default=128, metavar="N", help="random model: width (default 128)")
    add("--vocab", type=int, default=None, metavar="N",
        help="random model: vocabulary (default the BPE's 2,000; RoBERTa's: 50265)")  # fmt: skip
    add("--no-loop", action="store_true", help="skip the one-copy-per-pass loop")
    add("--device", default="cpu", metavar="D", help="cpu (default), cuda, cuda:1, …")
    add("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
        help="the weights' dtype, also for minicons (default float32)")  # fmt: skip
    add("--minicons", type=int, default=0, metavar="N",
        help="also time minicons' MaskedLMScorer (if installed), N sentences per call")  # fmt: skip
    args = parser.parse_args(argv)
    problems = [p for s in catalog.load("wsc266") for p in s.problems]
    requests = [(p.fill(i), answer_spans(p, i), "statement") for p in problems for i in (0, 1)]
    requests = requests[: args.sentences]
    timer = PhaseTimer()
    timer.wrap(mlm_scoring, "_masked_logits", "model forward")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model
        if folder is None:
            folder = tmp
            small_random_roberta(
                Path(tmp), [r[0] for r in requests], args.layers, args.width, args.vocab
            )
        lm = mlm.MaskedLM(
            pretrained=folder, device=args.device, batch_size=args.batch_size or "auto",
            max_batch_tokens=args.max_batch_tokens, dtype=args.dtype,
        )  # fmt: skip
        model, tok, device, size = lm.model, lm.tokenizer, lm.device, args.batch_size or None
        model_vocab = model.config.vocab_size
        budget = args.max_batch_tokens

        def ours(model: Any = model) -> list[mlm.MaskedScore]:
            return mlm.score_requests(model, tok, requests, size, device, budget)

        ours()  # warm-up: kernels, allocator
        longest = max(len(tok(text)["input_ids"]) for text, _, _ in requests)
        per_pass = size or max(1, budget // longest)  # the reference: fixed copies per pass
        before = _timed(timer, lambda: per_copy_scores(model, tok, requests, per_pass, device))
        after = _timed(timer, ours)
        rows.append((f"per-copy Python tuples, {per_pass} copies per pass (before)", *before))
        rows.append((f"tensor-built copies, token budget {budget} (after)", *after))
        if not args.no_loop:
            loop = _timed(
                timer, lambda: [mlm.score_requests(model, tok, [r], 1, device)[0] for r in requests]
            )
            rows.insert(0, ("one sentence at a time, one copy per pass", *loop))
        exact: list[mlm.MaskedScore] = []
        if args.dtype != "float32":  # the same scores with float32 weights: the dtype's error
            del lm, model
            reference = mlm.MaskedLM(pretrained=folder, device=args.device, dtype="float32")
            exact = ours(reference.model)
            del reference
        theirs: list[float] = []
        theirs_s = 0.0
        if args.minicons:
            theirs, theirs_s = _minicons(folder, requests, args.minicons, args.device, args.dtype)
    n = len(requests)
    name = args.model or (
        f"random RoBERTa, {args.layers} layers, width {args.width}, vocabulary {model_vocab}"
    )
    copies = sum(r.n - 2 for r in after[0])
    where = f"{torch.get_num_threads()} threads" if args.device == "cpu" else args.device
    print(
        f"model: {name}; {n} sentences, {copies} masked copies; {args.dtype}, {where}, "
        f"{f'at most {size} copies and ' if size else ''}{budget} token positions per pass"
    )
    print(f"  {'':62s} {'sentences/s':>11s}  {'wall/forward':>12s}  {'outside forward':>15s}")
    for label, _, wall, forward in rows:
        ratio = f"{wall / forward:12.2f}" if forward else f"{'-':>12s}"
        outside = f"{(wall - forward) / n * 1000:8.2f} ms/sentence"
        print(f"  {label:62s} {n / wall:11.1f}  {ratio}  {outside}")
    if theirs:
        label = f"minicons MaskedLMScorer, {args.minicons} sentences per call"
        print(f"  {label:62s} {n / theirs_s:11.1f}")
    print(f"after / before: {before[1] / after[1]:.2f}x sentences/s")
    for label, scores, _, _ in rows:
        if scores is after[0]:
            continue
        worst = max(abs(a.total - b.total) for a, b in zip(after[0], scores, strict=True))
        print(f"  largest |after - {label.split(',')[0]}| statement score: {worst:.1e}")
    if exact:
        worst = max(abs(a.total - b.total) for a, b in zip(after[0], exact, strict=True))
        print(f"  largest |{args.dtype} - float32| hf-mlm statement score: {worst:.1e}")
    if theirs:
        print(f"hf-mlm / minicons: {theirs_s / after[1]:.2f}x sentences/s")
        worst = max(abs(a.total - b) for a, b in zip(after[0], theirs, strict=True))
        print(f"  largest |after - minicons| statement score: {worst:.1e}")
        if exact:
            worst = max(abs(a.total - b) for a, b in zip(exact, theirs, strict=True))
            label = f"float32 hf-mlm - {args.dtype} minicons"
            print(f"  largest |{label}| statement score: {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
