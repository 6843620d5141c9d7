"""``wsc-tasks bench-mlm``: throughput of batched masked-LM statement scoring against a loop.

Statement scoring masks every token of a sentence in turn. The loop scores one sentence at a time
with one forward pass per masked copy (the straightforward implementation); ``hf-mlm`` batches the
masked copies of all sentences together, sorted by length, computing identical copies once. Both
score the same WSC266 sentences with the same model; the scores are checked equal.
"""

from __future__ import annotations

import argparse
import tempfile
import time
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
