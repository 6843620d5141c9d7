"""Requests → answers: how this package's requests reach a model, apart from every other task's.

lm-eval runs each request type as ``getattr(lm, request_type)(requests)``. This package's tasks
send their log-likelihood requests under a type of their own (``requests.REQUEST_TYPE``), which
lm-eval hands to ``route.serve`` (through the one method ``lm_eval_fixes`` gives lm-eval's ``LM``
for it): each distinct request once, lm-eval's request cache read and written as lm-eval does,
a served model's echo checked first (``served``), and, for a Hugging Face causal model, lm-eval's
own tokenization of the requests followed by every distinct token prefix through the model once
(``tries``). Another task's requests never come here, so nothing done here changes them.
"""
