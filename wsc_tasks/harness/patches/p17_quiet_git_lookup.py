"""lm-eval patch 17, ``quiet_git_lookup``: what it changes and why, then the change."""

from __future__ import annotations

import os
import subprocess

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace

PATCH = Patch("quiet_git_lookup", "lm_eval.evaluator.get_git_commit_hash", TESTED)


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
