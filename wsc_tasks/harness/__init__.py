"""What lm-eval runs: the task classes, the models this package adds, and its lm-eval patches."""
