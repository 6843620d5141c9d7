"""``python -m benchmarks switched-signal``: why the package offers no order-free, per-schema
contamination signal: the calibration of the candidate that suggests itself, Min-K% probability of
each published sentence against the same sentence with its two candidates switched (a version no
public copy contains).

The signal (Shi et al. 2024's Min-K%: the mean of the k% lowest token log-probabilities of a
text) is compared per schema, original minus switched, averaged over the schema's problems, and
tested one-sided across schemas with Student's t. Its null hypothesis is that a model that never
saw the file finds the original and the switched sentence equally likely. That holds for a model
that knows nothing (a random model: the two sentences are the same tokens, two of them moved) —
and for a bag-of-tokens model, the only model-independent baseline, it holds by construction —
but not for a model that knows language: switching the candidates of a Winograd sentence makes
it say that the suitcase does not fit in the trophy. A clean model that reads well prefers the
original for the very common sense the benchmark measures, so a significant preference cannot be
told from memory without a reference model known to be clean and as able, which no one can
name for these datasets. This script prints both halves: the null's rate of p < 0.05 on random
models (calibrated) and the signal on a real model (see the README's contamination section).

    WSC_TASKS_DATA=… python -m benchmarks switched-signal --random 200
    WSC_TASKS_DATA=… python -m benchmarks switched-signal --model default
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

import numpy as np
import torch
from scipy import stats

from wsc_tasks.data import canonical, catalog, transforms

ALPHA = 0.05
K = 0.2  # Shi et al.'s default share of lowest-probability tokens
DATASETS = ("wsc273_schemas", "wsc266", "winogrande_twins", "reid250")


def pairs(dataset: str) -> list[list[tuple[str, str]]]:
    """Per schema, (original, switched) lines of its switchable problems, written as the order
    check writes them (``canonical.line``); schemas with no switchable problem are left out."""
    out = []
    for schema in catalog.load(dataset):
        switched = [(p, transforms.switch_candidates(p)) for p in schema.problems]
        kept = [
            (canonical.line(p), canonical.line(s)) for p, s in switched if not isinstance(s, str)
        ]
        if kept:
            out.append(kept)
    return out


def min_k(logprobs: np.ndarray, k: float = K) -> float:
    """Mean of the ``k`` share (at least one) of the lowest token log-probabilities."""
    n = max(1, math.ceil(k * len(logprobs)))
    return float(np.sort(logprobs)[:n].mean())


@torch.no_grad()
def token_logprobs(
    model: Any, tokenizer: Any, texts: list[str], batch: int = 64
) -> list[np.ndarray]:
    """Each text's token log-probabilities after its first token (no prompt, as the tasks
    score), in right-padded batches (a causal model's scores ignore the padding after a text)."""
    out = []
    encoded = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    for start in range(0, len(encoded), batch):
        chunk = encoded[start : start + batch]
        width = max(len(ids) for ids in chunk)
        ids = torch.tensor([x + [0] * (width - len(x)) for x in chunk])
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in chunk])
        logp = torch.log_softmax(model(ids, attention_mask=mask).logits[:, :-1].float(), -1)
        lp = logp.gather(2, ids[:, 1:, None])[..., 0]
        out += [lp[i, : len(x) - 1].numpy() for i, x in enumerate(chunk)]
    return out


def schema_differences(
    model: Any, tokenizer: Any, schemas: list[list[tuple[str, str]]]
) -> np.ndarray:
    """Per schema: mean over its problems of Min-K%(original) − Min-K%(switched)."""
    flat = [t for schema in schemas for pair in schema for t in pair]
    scores = iter(min_k(lp) for lp in token_logprobs(model, tokenizer, flat))
    return np.array([np.mean([next(scores) - next(scores) for _ in schema]) for schema in schemas])


def one_sided_p(d: np.ndarray) -> float:
    """One-sided t-test p of mean(d) > 0."""
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    return float(stats.t.sf(t, len(d) - 1))


def random_llama(tokenizer: Any, seed: int) -> Any:
    """A 2-layer random Llama over ``tokenizer``'s vocabulary (torch seed ``seed``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    size = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)
    config = LlamaConfig(vocab_size=len(tokenizer), **size)
    return LlamaForCausalLM(config).eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks switched-signal",
        description="Min-K% probability of each published sentence against the same sentence "
        "with its two candidates switched, per schema: how often p < 0.05 on random models "
        "(the null, calibrated) and the signal on a real model (which prefers the original "
        "for the common sense the datasets test, memory or not).",
    )
    parser.add_argument(
        "--model", help="a causal model folder, or 'default' (the embedded SmolLM2)"
    )
    parser.add_argument("--random", type=int, default=0, help="random models for the null's rate")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    args = parser.parse_args(argv)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from wsc_tasks.paths import DEFAULT_GGUF, default_model_folder

    torch.set_num_threads(1)
    folder = default_model_folder()
    gguf = {"gguf_file": DEFAULT_GGUF}
    tokenizer = AutoTokenizer.from_pretrained(folder, **gguf)
    data = {name: pairs(name) for name in args.datasets.split(",")}
    for name, schemas in data.items():
        problems = sum(len(s) for s in schemas)
        print(f"{name}: {len(schemas)} schemas with a switchable problem, {problems} problems")
    if args.random:
        for name, schemas in data.items():
            ps = [
                one_sided_p(schema_differences(random_llama(tokenizer, s), tokenizer, schemas))
                for s in range(args.random)
            ]
            rate = float(np.mean(np.array(ps) < ALPHA))
            se = math.sqrt(ALPHA * (1 - ALPHA) / len(ps))
            print(
                f"{name}: {len(ps)} random models, rate of p < {ALPHA} = {rate:.3f} "
                f"(Monte-Carlo standard error at α: {se:.3f})"
            )
    if args.model:
        if args.model == "default":
            model = AutoModelForCausalLM.from_pretrained(folder, **gguf).eval()
        else:
            model = AutoModelForCausalLM.from_pretrained(args.model).eval()
            tokenizer = AutoTokenizer.from_pretrained(args.model)
        for name, schemas in data.items():
            d = schema_differences(model, tokenizer, schemas)
            half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
            print(
                f"{name}: original − switched Min-{K:.0%} = {d.mean():+.3f} nats "
                f"[{d.mean() - half:+.3f}, {d.mean() + half:+.3f}], original preferred in "
                f"{np.mean(d > 0):.0%} of {len(d)} schemas, one-sided p = {one_sided_p(d):.2g}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
