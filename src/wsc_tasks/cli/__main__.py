"""``python -m wsc_tasks.cli``: what a sweep launches for each model."""

from wsc_tasks.cli import main

raise SystemExit(main())
