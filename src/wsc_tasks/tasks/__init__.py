"""The lm-eval tasks of this package: each builds its documents and its requests (``scoring``),
sends them to lm-eval (``serving``'s request type) and turns the answers into per-document
metric values (``metrics``); the conventions every task keeps for lm-eval (its flags, metadata
keys, notes, standard errors, request cache)."""
