"""lm-eval patch 7, ``accept_several_include_paths``: what it changes and why, then the change."""

from __future__ import annotations

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    _replace,
    original,
)


# lm-eval's ``TaskManager`` takes a list of folders but its ``run --include_path`` passes one string
# (its own ``ls`` help shows ``"/path/to/tasks1:/path/to/tasks2"``, which ``run`` then reads as one
# folder). In ``wsc-tasks run`` the string is split on the path separator so the user's folder and
# this package's can be combined. No upstream issue found; upstream, ``run`` could split it as
# ``ls`` documents.
def accept_several_include_paths() -> bool:
    """Let ``--include_path a:b`` name several folders; True if patched now."""
    import os

    from lm_eval.tasks import manager

    init_original = manager.TaskManager.__init__

    def init(self: object, *args: object, include_path: object = None, **kwargs: object) -> None:
        if isinstance(include_path, str) and os.pathsep in include_path:
            include_path = [p for p in include_path.split(os.pathsep) if p]
        init_original(self, *args, include_path=include_path, **kwargs)

    return _replace(manager.TaskManager, "__init__", init)


def lm_eval_reads_include_path_as_one_folder() -> bool:
    """lm-eval's ``TaskManager`` given ``a:b`` as its ``include_path`` (as ``run`` passes it)
    finds none of the tasks of ``a`` and ``b``."""
    import os
    import tempfile
    from pathlib import Path

    from lm_eval.tasks import manager

    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name in ("mine_a", "mine_b"):
            path = Path(folder, name)
            path.mkdir()
            (path / f"{name}.yaml").write_text(
                f"task: {name}\ndataset_path: json\noutput_type: loglikelihood\n"
                "test_split: test\ndoc_to_text: x\ndoc_to_target: y\n"
            )
            paths.append(str(path))
        unpatched = manager.TaskManager.__new__(manager.TaskManager)
        init = original(manager.TaskManager, "__init__")
        init(unpatched, include_path=os.pathsep.join(paths), include_defaults=False)
    return not {"mine_a", "mine_b"} & set(unpatched.all_tasks)


PATCH = Patch(
    "accept_several_include_paths",
    "lm_eval.tasks.manager.TaskManager.__init__",
    TESTED,
    still_needed=lm_eval_reads_include_path_as_one_folder,
)
