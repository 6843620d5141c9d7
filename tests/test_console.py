"""What a run prints around lm-eval's table: no advice to use a flag the run refuses, but the
reason it does not apply, once. (Outside a git checkout lm-eval's own ``git describe`` still
writes git's ``fatal:`` line, as in a plain ``lm_eval`` run: no code of lm-eval is changed.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def test_a_run_of_an_instruct_model_prints_no_contradiction(tmp_path, tiny_gpt2_dir, data_dir):
    tokenizer = tmp_path / "tiny-Instruct"  # lm-eval advises a chat template for such names
    shutil.copytree(tiny_gpt2_dir, tokenizer)
    work = tmp_path / "not-a-checkout"
    work.mkdir()
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path), "WSC_TASKS_DATA": str(data_dir)}
    argv = ["run", "--model", "wsc-chance", "--model_args", f"seed=1,tokenizer={tokenizer}"]
    argv += ["--tasks", "wsc266", "--limit", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "wsc_tasks.cli", *argv],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "|wsc266|" in done.stdout
    assert "Recommend setting" not in done.stderr
    assert "apply_chat_template` (optionally" not in done.stderr
    explained = [line for line in done.stderr.splitlines() if "no chat template applies" in line]
    assert len(explained) == 1 and " INFO " in explained[0], explained
