"""The benchmarks' random models, built at start: ``run --tiny-gpt2``'s GPT-2 and ``mlm``'s
small RoBERTa, each with a byte-level BPE trained on the sentences it will read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


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


def small_random_roberta(
    folder: Path, sentences: list[str], layers: int, width: int, vocab: int | None = None
) -> None:
    """A random RoBERTa with a byte-level BPE trained on ``sentences``; ``vocab``: the model's
    vocabulary size (default the BPE's), e.g. RoBERTa's 50,265 so that the output layer costs
    what the real one does (24 layers of width 1024 and that vocabulary: RoBERTa-large)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=2000, special_tokens=specials)
    tokenizer = roberta_tokenizer(bpe._tokenizer)
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=max(vocab or 0, len(tokenizer)), hidden_size=width, num_hidden_layers=layers,
        num_attention_heads=max(width // 64, 1), intermediate_size=4 * width,
        max_position_embeddings=130, pad_token_id=1,
    )  # fmt: skip
    RobertaForMaskedLM(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def tiny_gpt2(folder: Path, vocab: int = 1000) -> Path:
    """A random GPT-2 (width 32, 2 layers) with a ``vocab``-token byte-level BPE trained on the
    Winogrande dev sentences of ``WSC_TASKS_DATA``: its forward and log-softmax cost little, so
    that what a run costs outside the model shows on a CPU."""
    import json

    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from wsc_tasks.data import catalog, sources

    dev = sources.resolve(catalog.WINOGRANDE_DEV)
    lines = dev.read_text(encoding="utf-8").splitlines()
    sentences = [json.loads(line)["sentence"] for line in lines if line.strip()]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=vocab, special_tokens=["<|endoftext|>"])
    end = "<|endoftext|>"
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token=end, eos_token=end, unk_token=end
    )
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=256,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
