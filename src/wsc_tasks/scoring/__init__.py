"""Scoring methods: the model requests a problem needs, per model family, and their tokens."""
