"""A guest in lm-eval: another package's tasks give the same samples, byte for byte, run alone and
run beside ``wsc_group`` (plain ``lm_eval --model hf``, and ``wsc-tasks run``).

Three of lm-eval's own tasks, unchanged but for reading small local data: ``winogrande``
(log-likelihoods), ``arc_easy`` (multiple choice) and ``gsm8k`` (generation, zero-shot, a few
tokens). A tiny random GPT-2 in fp32 on the CPU; ``--limit`` keeps every task short.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import lm_eval
import pytest
import yaml

from wsc_tasks.data import catalog
from wsc_tasks.paths import include_path

pytestmark = pytest.mark.slow

LM_EVAL_TASKS = Path(lm_eval.__file__).parent / "tasks"
THEIRS = ("guest_winogrande", "guest_arc_easy", "guest_gsm8k")
LIMIT = "6"

ARC = [  # written here: a few questions in ARC's layout
    ("Which gas do plants take in from the air?", ["carbon dioxide", "helium", "neon", "argon"]),
    ("What makes a shadow?", ["blocked light", "warm air", "loud sound", "cold water"]),
    ("Which of these is a mammal?", ["a whale", "a shark", "a trout", "a squid"]),
    ("What melts ice fastest?", ["heat", "wind", "shade", "salt water"]),
    ("Which tool measures mass?", ["a balance", "a ruler", "a clock", "a compass"]),
    ("What do roots take from soil?", ["water", "light", "oxygen gas", "sound"]),
]
GSM = [
    ("Ann has 3 apples and buys 2 more. How many apples does she have?", "3 + 2 = 5\n#### 5"),
    ("A box holds 4 pens. How many pens are in 3 boxes?", "4 * 3 = 12\n#### 12"),
    ("Tom had 10 cards and gave away 4. How many are left?", "10 - 4 = 6\n#### 6"),
    ("Each of 5 cats has 4 legs. How many legs in all?", "5 * 4 = 20\n#### 20"),
    ("A book costs 7 dollars. What do 2 books cost?", "7 * 2 = 14\n#### 14"),
    ("There are 9 birds and 3 fly away. How many stay?", "9 - 3 = 6\n#### 6"),
]


@pytest.fixture(scope="module")
def their_folder(tmp_path_factory, data_dir) -> Path:
    """lm-eval's winogrande, arc_easy and gsm8k YAMLs, included unchanged but for their data
    (and gsm8k zero-shot, 8 tokens at most)."""
    folder = tmp_path_factory.mktemp("theirs")
    arc = folder / "arc.jsonl"
    arc.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": q, "answerKey": "A",
                        "choices": {"text": c, "label": ["A", "B", "C", "D"]}}) + "\n"
            for i, (q, c) in enumerate(ARC)
        )
    )  # fmt: skip
    gsm = folder / "gsm.jsonl"
    gsm.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in GSM))
    local = {"dataset_path": "json", "dataset_name": None, "training_split": None}
    configs = {
        "guest_winogrande": {
            "include": str(LM_EVAL_TASKS / "winogrande" / "default.yaml"),
            "dataset_kwargs": {
                "data_files": {"validation": str(data_dir / catalog.WINOGRANDE_DEV)}
            },
        },
        "guest_arc_easy": {
            "include": str(LM_EVAL_TASKS / "arc" / "arc_easy.yaml"),
            "dataset_kwargs": {"data_files": {"test": str(arc)}},
            "validation_split": None,
            "tag": None,
        },
        "guest_gsm8k": {
            "include": str(LM_EVAL_TASKS / "gsm8k" / "gsm8k.yaml"),
            "dataset_kwargs": {"data_files": {"test": str(gsm)}},
            "fewshot_split": None,
            "num_fewshot": 0,
            "tag": None,
            "generation_kwargs": {"until": ["Question:"], "do_sample": False, "max_gen_toks": 8},
        },
    }
    for task, config in configs.items():
        (folder / f"{task}.yaml").write_text(yaml.safe_dump({"task": task, **local, **config}))
    return folder


@pytest.fixture(scope="module")
def beside_folder(tmp_path_factory, their_folder) -> Path:
    """Their YAMLs and this package's, in one folder (lm-eval's CLI takes one --include_path)."""
    folder = tmp_path_factory.mktemp("beside")
    for source in their_folder.glob("*.yaml"):
        (folder / source.name).symlink_to(source)
    shutil.copytree(include_path(), folder / "wsc_tasks")  # lm-eval does not follow a linked folder
    return folder


def _samples(folder: Path) -> dict[str, bytes]:
    found = {}
    for task in THEIRS:
        [path] = folder.rglob(f"samples_{task}_*.jsonl")
        found[task] = path.read_bytes()
    return found


def _run(argv: list[str], out: Path) -> dict[str, bytes]:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [*argv, "--limit", LIMIT, "--device", "cpu", "--batch_size", "8", "--log_samples",
         "--output_path", str(out)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return _samples(out)


@pytest.fixture(scope="module")
def alone(tiny_gpt2_dir, their_folder, tmp_path_factory) -> dict[str, bytes]:
    model = ["--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir},dtype=float32"]
    argv = [sys.executable, "-m", "lm_eval", "run", *model, "--include_path", str(their_folder)]
    return _run([*argv, "--tasks", ",".join(THEIRS)], tmp_path_factory.mktemp("alone"))


def test_lm_evals_own_tasks_give_the_same_samples_beside_wsc_group(
    alone, tiny_gpt2_dir, beside_folder, tmp_path
):
    model = ["--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir},dtype=float32"]
    argv = [sys.executable, "-m", "lm_eval", "run", *model, "--include_path", str(beside_folder)]
    beside = _run([*argv, "--tasks", ",".join([*THEIRS, "wsc_group"])], tmp_path)
    assert list(tmp_path.rglob("samples_wsc266_*.jsonl"))  # wsc_group ran in the same process
    for task in THEIRS:
        assert beside[task] == alone[task], task


def test_lm_evals_own_tasks_give_the_same_samples_under_wsc_tasks_run(
    alone, tiny_gpt2_dir, their_folder, tmp_path
):
    model = ["--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir},dtype=float32"]
    argv = [sys.executable, "-m", "wsc_tasks.cli", "run", *model]
    tasks = ["--tasks", ",".join([*THEIRS, "wsc_group"]), "--include_path", str(their_folder)]
    under = _run([*argv, *tasks], tmp_path)
    assert list(tmp_path.rglob("samples_wsc266_*.jsonl"))
    for task in THEIRS:
        assert under[task] == alone[task], task
