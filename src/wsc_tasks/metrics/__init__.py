"""Metrics and statistics over lm-eval's per-document outcomes, as pure functions."""
