"""lm-eval patch 17, ``quiet_git_lookup``: what it changes and why, then the change."""

from __future__ import annotations

import os
import subprocess

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, original


# ``simple_evaluate`` records ``git_hash`` by running ``git describe --always`` in the working
# directory with git's stderr on the terminal: outside a git checkout every run prints ``fatal: not
# a git repository (or any of the parent directories): .git``, which reads as an error of the run.
# The same lookup runs with git's stderr discarded; the value recorded is unchanged (the hash, or
# lm-eval's fallback, ``get_commit_from_path``). lm-eval binds the name in two modules, so both
# are replaced. No upstream issue found; upstream, the call could pass ``stderr=DEVNULL``.
def quiet_git_lookup() -> bool:
    """Section 17, once per process; True if the lookup was replaced now."""
    from lm_eval import evaluator
    from lm_eval.loggers import utils as logger_utils

    def get_git_commit_hash() -> str | None:
        try:
            found = subprocess.check_output(
                ["git", "describe", "--always"], stderr=subprocess.DEVNULL
            )
        except (subprocess.CalledProcessError, FileNotFoundError):
            return logger_utils.get_commit_from_path(os.getcwd())
        return found.strip().decode()

    patched = _replace(evaluator, "get_git_commit_hash", get_git_commit_hash)
    _replace(logger_utils, "get_git_commit_hash", evaluator.get_git_commit_hash)
    return patched


def lm_eval_lets_git_complain_outside_a_checkout() -> bool:
    """lm-eval's ``get_git_commit_hash``, run outside a git checkout, lets git write ``fatal: not
    a git repository`` to the terminal (without git: its call passes no ``stderr``)."""
    import inspect
    import shutil
    import tempfile
    from unittest import mock

    from lm_eval.loggers import utils as logger_utils

    lookup = original(logger_utils, "get_git_commit_hash")
    if shutil.which("git") is None:
        return "stderr" not in inspect.getsource(lookup)
    saved, cwd = os.dup(2), os.getcwd()
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile() as stderr:
        os.dup2(stderr.fileno(), 2)  # what git writes to the terminal
        try:
            with mock.patch.dict(os.environ, {"GIT_CEILING_DIRECTORIES": folder}):
                os.chdir(folder)
                lookup()
        finally:
            os.chdir(cwd)
            os.dup2(saved, 2)
            os.close(saved)
        stderr.seek(0)
        return b"not a git repository" in stderr.read()


PATCH = Patch(
    "quiet_git_lookup",
    "lm_eval.evaluator.get_git_commit_hash",
    TESTED,
    still_needed=lm_eval_lets_git_complain_outside_a_checkout,
)
