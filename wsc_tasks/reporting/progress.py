"""Progress bars for this package's own long phases (the report's bootstraps, a sweep's models).

tqdm, as lm-eval uses for its model calls: on stderr, with the rate and the time left; off with
``quiet`` and whenever stderr is not a terminal (logs and CI stay clean).
"""

from __future__ import annotations

import sys

from tqdm import tqdm


def progress(total: int, description: str, unit: str, quiet: bool = False) -> tqdm:
    return tqdm(
        total=total,
        desc=description,
        unit=f" {unit}",
        file=sys.stderr,
        disable=True if quiet else None,  # None: off when stderr is not a terminal
        dynamic_ncols=True,
        smoothing=0.1,
    )
