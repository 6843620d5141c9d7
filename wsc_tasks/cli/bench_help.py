"""``wsc-tasks bench --help``, printed without importing the benchmark (torch, lm-eval): the
help comes in a blink, the benchmark's imports only when it runs (``bench.bench_run``)."""

from __future__ import annotations

BENCH_HELP = """\
usage: wsc-tasks bench [wsc-tasks run flags…]

Runs exactly what `wsc-tasks run` runs with the same flags (its table printed
as usual), then prints the run's wall time split into phases: task building
(lm-eval's task index and the tasks' data), request building, tokenization, the
model's forward calls, result processing, aggregation (with the bootstrap
errors), printing, and "other" (imports, model loading, writing files). Also
printed: the requests, the distinct requests, the token positions through the
model, and wall time over model time. Then, unless --no-winogrande, lm-eval's
own `winogrande` runs on the same model in the same process (its data from
WSC_TASKS_DATA, else the Hub), and the ratios of wall time and of time outside
the forward calls are printed, with tokens per forward call and, on CUDA,
TFLOP/s inside the forward. --tiny-gpt2 builds the CPU benchmark's model first
(GPT-2, width 32, 2 layers, a 1,000-token BPE trained on the Winogrande dev
sentences). The other flags are run's: `wsc-tasks run --help`.

  wsc-tasks bench                        # the main job of the README, timed
  wsc-tasks bench --tasks wsc266         # the quick try of the README, timed
  wsc-tasks bench --tiny-gpt2 --batch_size 64   # wsc_group against winogrande
  wsc-tasks bench --model wsc-chance --model_args default,seed=1
  wsc-tasks bench --tiny-gpt2 --models 3 # a sweep's later models, one tokenizer

--models N runs N copies of the model (--model hf --model_args pretrained=DIR,
or --tiny-gpt2), each in a process of its own with lm-eval's --cache_requests
true and one request cache, as wsc-tasks sweep runs them, and prints what the
models after the first cost against it.
"""


def bench_run(argv: list[str]) -> int:
    """``wsc-tasks bench``: its help here; the benchmark imported only to run."""
    if argv[:1] in (["-h"], ["--help"]):
        print(BENCH_HELP, end="")
        return 0
    from wsc_tasks.cli import bench

    return bench.bench_run(argv)
