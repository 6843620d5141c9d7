"""Shared fixtures: the data directory, the tiny random models that several test files use (built
by ``tests/tiny_models.py``) and a ``TaskManager`` of this package's tasks."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import tiny_models

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _data_dir() -> Path:
    value = os.environ.get("WSC_TASKS_DATA")
    return Path(value).resolve() if value else SHARED / "data"


DATA = _data_dir()

if not os.environ.get("WSC_TASKS_DATA"):
    os.environ["WSC_TASKS_DATA"] = str(DATA)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def needs(service: str, missing: str | None) -> None:
    """Skip the test with ``missing`` (what this machine lacks and how to get it), or fail it
    where ``WSC_TASKS_REQUIRE_<SERVICE>=1`` (CI) says the service must be there."""
    if missing is None:
        return
    if os.environ.get(f"WSC_TASKS_REQUIRE_{service}") == "1":
        pytest.fail(f"WSC_TASKS_REQUIRE_{service}=1 but {missing}")
    pytest.skip(missing)


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


@pytest.fixture(scope="session")
def gpt2_tok():
    return tiny_models.gpt2_tokenizer()


@pytest.fixture(scope="session")
def tokenizers():
    """``tokenizers(name)``: the tests' tokenizer ``name`` (``tiny_models.tokenizer``), built
    once per session."""
    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = tiny_models.tokenizer(name)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory) -> Path:
    """A 2-layer random GPT-2 with the real GPT-2 vocabulary, saved like a Hub checkpoint."""
    return tiny_models.gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="session")
def chat_gpt2_dir(tiny_gpt2_dir, tmp_path_factory) -> Path:
    """The tiny GPT-2 with a chat template of its own (the question tasks' ``hf`` tests)."""
    import shutil

    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("chat-gpt2")
    for item in tiny_gpt2_dir.iterdir():
        shutil.copy(item, folder / item.name)
    tokenizer = AutoTokenizer.from_pretrained(tiny_gpt2_dir)
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory) -> Path:
    """A 1-layer random RoBERTa with GPT-2's BPE renumbered as RoBERTa numbers its vocabulary."""
    return tiny_models.roberta(tmp_path_factory.mktemp("tiny-roberta"))


@pytest.fixture(scope="session")
def tiny_t5_dir(tmp_path_factory) -> Path:
    """A 1-layer random T5 whose word-level tokenizer knows the words of WSC266's problems."""
    texts = tiny_models.sentences("wsc266")
    return tiny_models.t5(tmp_path_factory.mktemp("tiny-t5"), texts, seed=2)


@pytest.fixture(scope="session")
def task_manager():
    """``task_manager(**metadata)``: a new ``TaskManager`` of this package's tasks, with
    ``metadata`` for every task it loads (lm-eval fixes the metadata when the manager is built).
    Only our include path is indexed, not lm-eval's own thousands of task YAMLs (seconds each
    time); a test that needs those, or another folder of tasks, builds its own."""

    def build(**metadata):
        from lm_eval.tasks import TaskManager

        from wsc_tasks.paths import include_path

        manager = TaskManager(
            include_path=str(include_path()), include_defaults=False, metadata=metadata or None
        )
        if not hasattr(manager, "load"):  # lm-eval before 0.4.12 (tests/test_lm_eval_releases)
            manager.load = lambda names: loaded(manager, names)
        return manager

    return build


def loaded(manager, names: list[str]) -> dict:
    """``TaskManager.load(names)`` of lm-eval 0.4.12 and later (``{"tasks": {name: task},
    "groups": {name: group}}``) from the older releases' ``get_task_dict``."""
    from lm_eval.tasks import get_task_dict

    tasks: dict = {}
    groups: dict = {}

    def walk(tree: dict) -> None:
        for key, value in tree.items():
            if isinstance(value, dict):
                groups[key.group_name] = SimpleNamespace(name=key.group_name, group=key)
                walk(value)
            else:
                tasks[key] = value

    walk(get_task_dict(names, manager))
    return {"tasks": tasks, "groups": groups}


@pytest.fixture(scope="session", autouse=True)
def _lm_eval_logging_once():
    """lm-eval binds its one log handler to whatever ``sys.stderr`` is when a run first sets up
    logging; set up here, that is the session's stream, as in a command-line process, not the
    stream of whichever test came first (closed when that test ends, so every later log line
    would print a "Logging error" traceback into another test's stderr)."""
    from lm_eval.utils import setup_logging

    setup_logging()


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
