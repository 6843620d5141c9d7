"""``python -m benchmarks NAME [options]``: the list of benchmarks is ``benchmarks.BENCHMARKS``."""

from benchmarks import main

raise SystemExit(main())
