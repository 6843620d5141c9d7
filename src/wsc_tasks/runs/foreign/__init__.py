"""Runs this package did not make, read as runs of its own tasks: schema scores without a model.

lm-eval's built-in ``winogrande`` and ``wsc273`` read from their ``--log_samples`` files (every
0.4.x layout, ``lm_eval_samples``) and the Open LLM Leaderboard's archived details of
``winogrande`` (Parquet, from a folder or a Hub dataset repository: ``leaderboard_details``,
``details_hub``) hold each problem's two log-likelihoods. Matched by content to the pinned
Winogrande dev file or WSC273 (``pinned``), they become the tasks a run of this package would have
on the same schemas, with the same estimates; what such a run cannot say is stated as absent
(``origin``). ``sources`` finds and loads them from what a user names.
"""
