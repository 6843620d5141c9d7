"""lm-eval task YAMLs of wsc_tasks, installed as package data (see `wsc-tasks include-path`)."""
