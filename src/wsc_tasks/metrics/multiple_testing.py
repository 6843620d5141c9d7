"""Several tests at once, and what one test can detect: Holm's adjustment and power.

Pure functions of p-values and standard errors, used by the findings' decision rule
(``claims.findings``) and checked by its calibration simulation (``claims.calibration``).

- **Holm** (1979), step-down: sort the m p-values, p₍₁₎ ≤ … ≤ p₍ₘ₎; the adjusted p₍ᵢ₎ is
  max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎). Rejecting where the adjusted p is below α keeps the
  familywise error rate (any false claim in the family) at most α under any dependence between
  the tests, which matters here: a model's control baselines share its habits, its perturbations
  share the original schemas, and the models of a leaderboard share the schemas and the
  bootstrap's resampled indexes. It is uniformly more powerful than Bonferroni and needs nothing
  but the p-values each estimate already carries.
- **Detectable effect**: the smallest distance from the null that a two-sided test at α finds
  with the given power, by the normal approximation of the estimate, (z₁₋α/2 + z_power)·se.
- **Difference of two estimates** on different (or overlapping) schema sets: a two-sided normal
  test on the bootstrap standard errors taken as independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

POWER = 0.8  # the power a "smallest detectable effect" is stated at
# z₁₋α/2 + z_power as scipy computes it, for the usual (α, power): no scipy import (~1 s) for it
_DETECTABLE_Z = {(0.05, POWER): 2.8015852181129683}


def holm(ps: Sequence[float | None]) -> list[float]:
    """Holm's adjusted p-values, in the order given; a missing or NaN p stays NaN and does not
    count in the family's size."""
    known = [(p, i) for i, p in enumerate(ps) if p is not None and not math.isnan(p)]
    out = [math.nan] * len(ps)
    m, running = len(known), 0.0
    for rank, (p, i) in enumerate(sorted(known)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def detectable(stderr: float, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest |value − null| a two-sided test at ``alpha`` detects with ``power``:
    (z₁₋α/2 + z_power)·se, 2.80·se at α = 0.05 and 80% power."""
    z = _DETECTABLE_Z.get((alpha, power))
    if z is None:
        from scipy import stats as scipy_stats  # here: scipy costs ~1 s to import

        z = scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power)
    return float(z * stderr)


def difference_p(
    first_value: float, first_se: float, second_value: float, second_se: float
) -> float:
    """Two-sided p of first − second = 0 by a normal test on two independent estimates' standard
    errors. Estimates on shared schemas are positively correlated, which makes the difference's
    true standard error smaller: the test is then conservative, never anti-conservative."""
    scale = math.hypot(first_se, second_se)
    if math.isnan(scale) or scale == 0:
        return math.nan
    z = abs(first_value - second_value) / scale
    from scipy import stats as scipy_stats  # here: scipy costs ~1 s to import

    return float(2 * scipy_stats.norm.sf(z))
