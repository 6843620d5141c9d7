"""The lm-eval models this package registers: ``wsc-chance`` (random log-likelihoods, the
calibration baseline) and ``hf-mlm`` (masked language models scored by pseudo-log-likelihood)."""
