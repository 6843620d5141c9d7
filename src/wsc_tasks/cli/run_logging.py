"""What ``wsc-tasks run`` changes in lm-eval's log, for its own output only (filters in place
while it evaluates; a plain ``lm_eval`` run logs as lm-eval logs).

- lm-eval's ``simple_evaluate`` advises ``--apply_chat_template`` for any model whose arguments
  contain "inst" or "chat" (the embedded SmolLM2-135M-Instruct among them), which these tasks
  refuse (``tasks.flags``): they score each option's sentence by log-likelihood with no prompt.
  The advice is replaced by that explanation, lowered to INFO (not in a run of question tasks
  alone, which take the template). lm-eval wraps it at 140 characters, so the words are matched
  with the whitespace collapsed.
"""

from __future__ import annotations

import logging

EVALUATOR_LOGGER = "lm_eval.evaluator"
CHAT_ADVICE = "appears to be an instruct or chat variant but chat template is not applied"
CHAT_EXPLANATION = (
    "wsc_tasks: the model looks like an instruct or chat model; these tasks score each option's "
    "sentence by log-likelihood with no prompt, so no chat template applies to them "
    "(--apply_chat_template is refused while they run; run other tasks that need it separately, "
    "such as this package's question tasks, <dataset>_chat: docs/chat.md)"
)


class ChatTemplateAdvice(logging.Filter):
    """Rewrites lm-eval's chat-template advice as the reason it does not apply here."""

    def filter(self, record: logging.LogRecord) -> bool:
        if CHAT_ADVICE in " ".join(record.getMessage().split()):  # lm-eval wraps it at 140
            record.msg, record.args = CHAT_EXPLANATION, ()
            record.levelno, record.levelname = logging.INFO, "INFO"  # advice, not a warning
        return True


def filters(scored: bool = True) -> tuple[tuple[str, logging.Filter], ...]:
    """(logger, filter) of each change, for ``lm_eval_run.logging_filters``; lm-eval's advice
    stands in a run of question tasks alone (``scored`` False), to which it applies."""
    return ((EVALUATOR_LOGGER, ChatTemplateAdvice()),) if scored else ()
