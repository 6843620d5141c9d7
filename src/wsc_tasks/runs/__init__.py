"""Runs read back: lm-eval's output folders (this package's tasks and the runs made elsewhere),
each task's reported figures and per-document values."""
