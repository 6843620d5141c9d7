"""What a scheduler's job runs: ``python -m wsc_tasks.sweep.worker MANIFEST INDEX``.

The manifest is a JSON file the sweep writes beside its jobs: the launcher's name, the sweep's
options and the models in array order, each with the GPUs its job holds; ``$WSC_TASKS_JOB`` is
the scheduler's id of the job (recorded in the model's lock and ``done.json``). The job runs the
same single-model code path as a local sweep (``runner.run_one``) into the shared output
folder. SIGTERM (a cancel, a requeue, a time limit) stops the run without marking it failed.
Exit status: 0 done, 1 failed, 75 busy (another live process holds the model), 143 stopped.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from wsc_tasks.sweep import hub
from wsc_tasks.sweep.lock import STALE_S, job_id
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import Placement, SweepOptions
from wsc_tasks.sweep.runner import run_one

EXIT = {"done": 0, "failed": 1, "busy": 75, "interrupted": 143}


def write_manifest(
    path: Path, launcher: str, options: SweepOptions, specs: list[ModelSpec], gpus: float
) -> None:
    manifest = {
        "launcher": launcher,
        "options": options.to_json(),
        "models": [{**vars(spec), "gpus": gpus} for spec in specs],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _spec(entry: dict[str, Any]) -> ModelSpec:
    return ModelSpec(**{k: v for k, v in entry.items() if k != "gpus"})


def read_manifest(path: Path, index: int) -> tuple[ModelSpec, SweepOptions, Placement]:
    manifest = json.loads(path.read_text(encoding="utf-8"))
    entry: dict[str, Any] = dict(manifest["models"][index])
    gpus = float(entry.get("gpus", 0))
    placement = Placement(str(manifest["launcher"]), gpus, job=job_id(), lock_wait_s=STALE_S + 60)
    return _spec(entry), SweepOptions.from_json(manifest["options"]), placement


def following(path: Path, index: int, count: int) -> list[ModelSpec]:
    """The ``count`` models after ``index`` in the manifest: their Hub weights are fetched while
    this job's model evaluates (the next jobs then find them in the cache)."""
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return [_spec(dict(entry)) for entry in manifest["models"][index + 1 : index + 1 + count]]


def _terminate(signum: int, frame: FrameType | None) -> None:
    hub.stop()  # a download under way ends now, not when it is done
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m wsc_tasks.sweep.worker MANIFEST INDEX", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    signal.signal(signal.SIGTERM, _terminate)
    spec, options, placement = read_manifest(Path(argv[0]), int(argv[1]))
    print(f"wsc-tasks sweep: {spec.name} (job {placement.job})", flush=True)
    ahead = following(Path(argv[0]), int(argv[1]), options.prefetch)
    state = run_one(spec, options, placement, ahead)
    print(f"wsc-tasks sweep: {spec.name}: {state}", flush=True)
    hub.wait_for_prefetches()  # a download cut by the job's end would only be started again
    return EXIT[state]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
