"""Avoided: lm-eval sums whatever a server echoes as prompt log-probabilities.

lm-eval's API models (``local-completions``, ``openai-completions``, ``sglang-generate``,
``gguf``) sum the prompt log-probabilities a server echoes as they come, and check nothing
(upstream #1949 asks whether servers' echoes are compatible at all); llama-cpp-python 0.3.36's
server echoes the next token's log-probabilities, and a run ends with plausible metrics that
mean nothing. Before this package's requests are sent to such a model,
``serving.served.preflight`` compares the server's echo with its generation path (once per model
object) and stops with one line if they disagree; the outcome goes into the tasks' results
config.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, GITHUB, Fix


def lm_eval_sums_echoed_logprobs_unchecked() -> bool:
    """lm-eval's completions model adds up whatever a server echoes, positive
    "log-probabilities" included, without a word."""
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    echoed = {
        "tokens": ["a", "b", "c", "d"],
        "token_logprobs": [None, 3.0, 5.0, -1.0],
        "top_logprobs": [None, {"b": 3.0}, {"c": 5.0}, {"d": -1.0}],
    }
    outputs = {"choices": [{"index": 0, "logprobs": echoed}]}
    return bool(LocalCompletionsAPI.parse_logprobs(outputs, ctxlens=[1]) == [(8.0, True)])


FIX = Fix(
    "served_echo",
    AVOIDED,
    "lm-eval's API models sum a server's echoed prompt log-probabilities unchecked",
    "before this package's requests reach a served model, its echo is compared with its "
    "generation path, and a wrong one stops the run in one line",
    (f"{GITHUB}/issues/1949",),
    still_needed=lm_eval_sums_echoed_logprobs_unchecked,
)
