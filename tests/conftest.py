"""Shared fixtures: the data directory, and tiny randomly initialised models built offline."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _data_dir() -> Path:
    value = os.environ.get("WSC_TASKS_DATA")
    return Path(value).resolve() if value else SHARED / "data"


DATA = _data_dir()
GPT2_FILES = SHARED / "tokenizers" / "gpt2"

if not os.environ.get("WSC_TASKS_DATA"):
    os.environ["WSC_TASKS_DATA"] = str(DATA)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run_dp_eval(
    processes: int,
    model_dir: Path,
    out: Path,
    tasks: str,
    *extra: str,
    metadata: dict | None = None,
) -> dict:
    """``tests/dp_eval.py`` under ``accelerate launch`` with ``processes`` CPU processes (torch
    distributed over gloo when more than one); returns the JSON it wrote to ``out``."""
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no",
              "--num_processes", str(processes)]  # fmt: skip
    if processes > 1:
        launch.append("--multi_gpu")  # with ACCELERATE_USE_CPU: torch.distributed over gloo
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    if metadata:
        env["DP_EVAL_METADATA"] = json.dumps(metadata)
    script = Path(__file__).with_name("dp_eval.py")
    command = [*launch, str(script), str(model_dir), str(out), tasks, *extra]
    subprocess.run(command, check=True, env=env, capture_output=True)
    return json.loads(out.read_text())


def assert_same_metrics(one: dict, two: dict, where: str = "") -> None:
    """Two lm-eval result rows agree: counts and texts exactly, floats to 1e-12 (a different
    batching of the same requests, e.g. over two processes, may change the last bits of a
    log-likelihood; metrics that are ratios of counts come out exactly equal anyway)."""
    assert one.keys() == two.keys(), where
    for key, value in one.items():
        other = two[key]
        if isinstance(value, float) and math.isnan(value):
            assert isinstance(other, float) and math.isnan(other), (where, key)
        elif isinstance(value, float):
            assert other == pytest.approx(value, rel=1e-9, abs=1e-12), (where, key)
        else:
            assert other == value, (where, key)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "maler").is_dir():
        pytest.fail(f"dataset directory {DATA} not found: set WSC_TASKS_DATA=../shared/data")
    return DATA


def gpt2_tokenizer():
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


@pytest.fixture(scope="session")
def gpt2_tok():
    return gpt2_tokenizer()


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A 2-layer random GPT-2 with the real GPT-2 vocabulary, saved like a Hub checkpoint."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=50257, n_positions=256, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config).eval()
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(folder)
    gpt2_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def _lm_eval_logs_reach_caplog():
    """lm-eval's CLI stops its ``lm_eval`` logger propagating to the root logger once a run set
    up logging; caplog listens at the root, so tests that read our ``lm_eval.wsc_tasks.*`` logs
    must not depend on whether an lm-eval run came first."""
    import logging

    logger = logging.getLogger("lm_eval")
    before = logger.propagate
    logger.propagate = True
    yield
    logger.propagate = before
