"""Run wsc_tasks tasks on a local HF model, data-parallel on CPU under ``accelerate launch``.

lm-eval's HFLM shards documents over processes only when it sees several GPUs; this subclass lets
the CPU processes of ``accelerate launch --cpu`` shard too, so the multi-process path of the tasks
(documents split by rank, per-document metrics gathered to rank 0) is exercised without a GPU.
Usage: ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes N tests/dp_eval.py
MODEL_DIR OUT.json TASK[,TASK] [BATCH_SIZE [hf|hf-mlm]]; extra task metadata as JSON in
``$DP_EVAL_METADATA``; the logged samples go to OUT.json too. Batch size 1 (the default) makes every
log-likelihood independent of which requests share a batch, so runs compare float for float.
"""

from __future__ import annotations

import json
import os
import sys

import lm_eval
from accelerate import Accelerator
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager

from wsc_tasks.models.mlm import MaskedLM
from wsc_tasks.paths import include_path


class CpuDataParallelHFLM(HFLM):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        accelerator = Accelerator()
        if accelerator.num_processes > 1:
            self.accelerator = accelerator
            self._rank = accelerator.process_index
            self._world_size = accelerator.num_processes


def main() -> None:
    model_dir, out, tasks = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    batch_size = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    if len(sys.argv) > 5 and sys.argv[5] == "hf-mlm":  # shards over CPU processes by itself
        lm = MaskedLM(pretrained=model_dir, device="cpu", batch_size=batch_size)
    else:
        lm = CpuDataParallelHFLM(pretrained=model_dir, device="cpu", batch_size=batch_size)
    # the model's path in the task metadata, as lm_eval's CLI passes it: every scoring method runs
    metadata = {"pretrained": model_dir, **json.loads(os.environ.get("DP_EVAL_METADATA", "{}"))}
    manager = TaskManager(include_path=str(include_path()), metadata=metadata)
    results = lm_eval.simple_evaluate(model=lm, tasks=tasks, task_manager=manager, log_samples=True)
    if lm.rank == 0:
        payload = {
            "world_size": lm.world_size,
            "results": results["results"],
            "samples": results["samples"],
        }
        with open(out, "w") as handle:
            json.dump(payload, handle, indent=1, default=str)


if __name__ == "__main__":
    main()
