"""lm-eval patch 23, ``say_where_results_are``: what it changes and why, then the change."""

from __future__ import annotations

import atexit
import functools
import sys
from pathlib import Path
from typing import Any

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, original

# A plain ``lm_eval … --tasks <this package's tasks>`` run ends on its table: lm-eval says where it
# saved the results only in an INFO line before it ("Saving results aggregated", no path), and
# without --output_path it saves nothing ("Output path not provided, skipping saving results").
# The next step here, ``wsc-tasks report FOLDER``, needs that folder and the samples. When a run
# of lm-eval's CLI has evaluated this package's tasks (``ran``, told by section 13), lm-eval's
# ``EvaluationTracker.save_results_aggregated`` is followed by the folder it wrote and the
# command to run next, or by how to keep the run, printed when the CLI ends (after its table).
# ``wsc-tasks run`` says the same itself (``cli.run_outputs.ending``) and turns this off. No
# upstream issue found; upstream, the CLI could print the path it wrote.
_STATE: dict[str, Any] = {"ran": False, "off": False, "said": None, "registered": False}


def ran() -> None:
    """This package's tasks are being evaluated in this process."""
    _STATE["ran"] = True


def said_by_wsc_tasks_run() -> None:
    """``wsc-tasks run`` prints the ending itself."""
    _STATE["off"] = True


def _cli() -> bool:
    """Whether lm-eval's own command line is running (not the Python API, not a notebook)."""
    return Path(sys.argv[0]).name in ("lm_eval", "lm-eval", "__main__.py")


def ending(tracker: Any, samples: bool) -> str:
    """Where lm-eval's tracker saved the results, and what to run next."""
    model = str(getattr(tracker.general_config_tracker, "model_name_sanitized", "") or "<model>")
    if not tracker.output_path:
        return (
            "wsc_tasks: nothing saved (no --output_path). To keep this run and write its report: "
            f"add --log_samples --output_path runs/ and then run: wsc-tasks report runs/{model}"
        )
    path = Path(tracker.output_path)
    folder = path.parent if path.suffix == ".json" else path / model
    if not samples:
        return (
            f"wsc_tasks: results in {folder}/; no samples (run with --log_samples for the "
            "intervals, p-values and findings of: wsc-tasks report)"
        )
    return f"wsc_tasks: results and samples in {folder}/. Next: wsc-tasks report {folder}"


def _print_ending() -> None:
    if _STATE["said"]:
        print(_STATE["said"])


def say_where_results_are() -> bool:
    """Section 23, once per process; True if the tracker's save was wrapped now."""
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    save = EvaluationTracker.save_results_aggregated

    @functools.wraps(save)
    def save_results_aggregated(self: Any, results: dict, samples: dict | None = None) -> None:
        save(self, results=results, samples=samples)
        if _STATE["ran"] and not _STATE["off"] and _cli():
            _STATE["said"] = ending(self, bool(samples))
            if not _STATE["registered"]:
                _STATE["registered"] = True
                atexit.register(_print_ending)

    return _replace(EvaluationTracker, "save_results_aggregated", save_results_aggregated)


def lm_eval_does_not_say_where_it_saved() -> bool:
    """lm-eval's tracker saves the results file and logs no path of it (nor any next step)."""
    import tempfile

    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    from wsc_tasks.harness.patches.base import records_of

    with tempfile.TemporaryDirectory() as folder:
        tracker = EvaluationTracker(output_path=folder)
        with records_of("lm_eval.loggers.evaluation_tracker") as records:
            original(EvaluationTracker, "save_results_aggregated")(
                tracker, results={"results": {}}, samples=None
            )
        saved = list(Path(folder).rglob("results_*.json"))
        said = " ".join(r.getMessage() for r in records)
    return len(saved) == 1 and folder not in said and "wsc-tasks" not in said


PATCH = Patch(
    "say_where_results_are",
    "lm_eval.loggers.evaluation_tracker.EvaluationTracker.save_results_aggregated",
    TESTED,
    still_needed=lm_eval_does_not_say_where_it_saved,
)
