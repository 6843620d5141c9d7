"""``wsc-tasks sweep``: many models, each one lm-eval run, on this machine or on a cluster.

``models`` reads the models file, ``folder`` is the per-model folder protocol (spec, lock, done,
error: the only record of progress), ``runner`` the single-model code path every launcher runs,
``launchers`` the registry of ways to place runs (local processes, Slurm job arrays, Ray tasks),
``driver`` decides what to run and watches it, ``worker`` is what a scheduler's job executes,
``tether`` what a run's process starts as (it dies with the sweep).
The command line is ``wsc_tasks.cli.sweep``.
"""
