"""``python -m benchmarks findings``: the findings' decision rule checked by simulation.

The simulation is the report's own (``wsc_tasks.claims.calibration``: its decision section and
glossary quote its table): simulated models answer the real datasets at random, or with a known
schema accuracy, the report's estimates are computed and the findings' own functions make their
claims. This prints the table at any number of simulated models and bootstrap replicates, with
the worst false-claim rate against the nominal familywise rate.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from wsc_tasks.claims import findings
from wsc_tasks.claims.calibration import ITERS, SIMS, lines, simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks findings",
        description="How often the findings' decision rule claims what is not there: simulated "
        "models answer the real datasets at random (or with a known schema accuracy, for the "
        "power), the report's estimates (exact for schema accuracy, else its bootstrap) are "
        "computed and the findings' own functions make their claims. Prints, per kind of "
        "claim, the false-claim rate under the rule and under the rule used before, and the "
        "power. No lm-eval run, no model.",
    )
    parser.add_argument(
        "--sims", type=int, default=SIMS, help="simulated models per claim (default %(default)s)"
    )
    parser.add_argument(
        "--iters", type=int, default=ITERS, help="bootstrap replicates (default %(default)s)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = simulate(args.sims, args.iters)
    print("\n".join(lines(rows, args.sims)))
    worst = max(r.now for r in rows)
    print(
        f"\nnominal familywise error rate {findings.ALPHA:.0%}; worst false-claim rate now "
        f"{worst:.1%} (Monte Carlo standard error about "
        f"{np.sqrt(findings.ALPHA * (1 - findings.ALPHA) / args.sims):.1%}); "
        f"{time.perf_counter() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
