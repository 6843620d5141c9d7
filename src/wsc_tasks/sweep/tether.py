"""``python -m wsc_tasks.sweep.tether PARENT COMMAND…``: a run's process, made to die with the
sweep process that started it, then replaced by the run's own command.

The kernel's parent-death signal is set here, after ``exec``, not in a ``preexec_fn``: Python code
between ``fork`` and ``exec`` runs the at-fork hooks of every library the sweep imported
(``huggingface_hub`` closes its shared HTTP client in one), and a hook that waits for a lock that
a download thread held at the moment of the fork never returns: the run never starts and the
sweep waits for it forever. Without a ``preexec_fn`` no Python code runs in the forked process.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def command(parent: int, run: Sequence[str]) -> list[str]:
    """``run`` started through this module, tied to the process ``parent``."""
    return [sys.executable, "-m", "wsc_tasks.sweep.tether", str(parent), *run]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parent, run = int(argv[0]), list(argv[1:])
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # kept across exec: the run inherits it
    if os.getppid() != parent:  # the sweep ended before the signal was set
        return 1
    os.execvp(run[0], run)


if __name__ == "__main__":
    sys.exit(main())
