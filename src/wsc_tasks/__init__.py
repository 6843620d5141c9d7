"""wsc-tasks: Winograd-schema tasks for lm-evaluation-harness (see README.md).

On lm-eval 0.4.10 and 0.4.11, importing the package offers a ``TaskManager``'s metadata to this
package's task classes while it loads them, which those releases do not give a class task
(``lm_eval_fixes.class_task_metadata``); later releases are left as they are, and nothing of
lm-eval or of this package's other modules is imported here for them.
"""

__version__ = "0.2.0"  # the package's one version (pyproject.toml reads it; `wsc-tasks --version`)


def _offer_metadata_on_old_lm_eval() -> None:
    import re
    from importlib import metadata

    try:
        release = tuple(int(n) for n in re.findall(r"\d+", metadata.version("lm_eval"))[:3])
    except metadata.PackageNotFoundError:
        return
    if (0, 4, 10) <= release < (0, 4, 12):  # class_task_metadata.RELEASES
        from wsc_tasks.lm_eval_fixes.class_task_metadata import offer_metadata

        offer_metadata()


_offer_metadata_on_old_lm_eval()
