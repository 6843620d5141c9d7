"""What ``wsc-tasks run`` changes in lm-eval's log, for its own output only (filters in place
while it evaluates; a plain ``lm_eval`` run logs as lm-eval logs).

- lm-eval's ``simple_evaluate`` advises ``--apply_chat_template`` for any model whose arguments
  contain "inst" or "chat" (the embedded SmolLM2-135M-Instruct among them), which these tasks
  refuse (``tasks.flags``): they score each option's sentence by log-likelihood with no prompt.
  The advice is replaced by that explanation, lowered to INFO (not in a run of question tasks
  alone, which take the template). lm-eval wraps it at 140 characters, so the words are matched
  with the whitespace collapsed.
- This package's suites average a metric over the tasks that have it, by design
  (task_configs/README.md); lm-eval's "Group '<name>': metric '<m>' is missing in k/n tasks" is
  dropped for them, and only for them.
"""

from __future__ import annotations

import logging
from functools import lru_cache

EVALUATOR_LOGGER = "lm_eval.evaluator"
GROUP_LOGGER = "lm_eval.api.group"
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


class ExpectedGroupGaps(logging.Filter):
    """Drops lm-eval's "metric missing" warning for this package's groups."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            message.startswith("Group '")
            and "' is missing in " in message
            and message.split("'")[1] in our_groups()
        )


@lru_cache(maxsize=1)
def our_groups() -> frozenset[str]:
    """The ``group:`` names of this package's YAMLs."""
    import yaml

    from wsc_tasks.paths import task_yamls

    names = set()
    for path in task_yamls():
        if "\ngroup:" in "\n" + path.read_text():
            names.add(yaml.safe_load(path.read_text())["group"])
    return frozenset(names)


def filters(scored: bool = True) -> tuple[tuple[str, logging.Filter], ...]:
    """(logger, filter) of each change, for ``lm_eval_run.logging_filters``; lm-eval's advice
    stands in a run of question tasks alone (``scored`` False), to which it applies."""
    advice = ((EVALUATOR_LOGGER, ChatTemplateAdvice()),) if scored else ()
    return (*advice, (GROUP_LOGGER, ExpectedGroupGaps()))
