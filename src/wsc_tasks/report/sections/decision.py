"""How the findings decide: the decision rule once, its false-claim rates and power, simulated.

The rule is ``claims.findings``'s (its docstring is the full statement); the figures are
``claims.calibration``'s simulation on the catalog's schemas, the same that
``python -m benchmarks findings`` prints and ``tests/test_calibration.py`` checks, so no number here
is typed by hand.
"""

from __future__ import annotations

from wsc_tasks.claims import calibration, decision_rule, findings, wording
from wsc_tasks.data import catalog
from wsc_tasks.report.sections import Context, Section
from wsc_tasks.report.tables import Table

ORDER = 85
RULE = (
    "**Decision rule of the findings.** Each claim is a test of an estimate against its null "
    "(chance for an accuracy, 0 for a change) by the {sides} p the tables print (one p per "
    "figure everywhere: {how_p}). A claim (above or below chance; lower or higher) needs that "
    "p below α = {alpha} and the 95% interval on the claimed side, so a verdict never "
    "contradicts its interval. Where the findings make several claims of one kind, Holm's "
    "step-down adjustment holds the familywise error rate (any false claim among them) at "
    "{alpha}, under any dependence between the tests: across one model's control baselines, "
    "across its perturbations of {ranking}, and across the models of the report for above "
    "chance on {ranking} (chance models aside). A 95% interval that excludes chance is one test "
    "at {alpha}; in a family the adjusted p must clear {alpha} too, so such an interval can be "
    "*not distinguishable from chance* after adjustment. A result that is not significant is "
    "worded *not distinguishable from chance*, with what its interval rules out, never *at "
    "chance*. An artifact is said to explain part of a score only on a dataset whose own score "
    "is above chance; *least consistent* only when the lowest schema consistency is below every "
    "other perturbation's (a normal test on the bootstrap standard errors where both bootstraps "
    "hold, Holm over the comparisons). Power: the findings' power line gives, per model, {power}."
)


def build(context: Context) -> Section:
    section = Section("Decision rule of the findings: false-claim rates and power, simulated")
    if not context.runs:
        section.skipped = "needs a run"
        return section
    rows = calibration.table()
    section.text = "\n\n".join([
        RULE.format(
            ranking=f"`{catalog.RANKING}`", sides=wording.sides(),
            alpha=f"{decision_rule.RULE.alpha:g}",
            how_p=wording.how_p(), power=wording.power_line(),
        ),
        f"Simulated models with no effect (random answers on the catalog's schemas of each "
        f"dataset, the report's estimates: its exact tests, and its bootstrap with R = "
        f"{calibration.ITERS:,}) and models with a true "
        f"schema accuracy A = {calibration.EFFECT:.2f} on `{catalog.RANKING}`; the claims are "
        "made by the findings' own functions, by the rule above (now) and by the rule before it "
        f"(each test on its own, {wording.sides(decision_rule.UNCORRECTED)} at "
        f"{decision_rule.UNCORRECTED.alpha:g} against chance). The repository's "
        f"`python -m benchmarks findings` prints the same table (nominal familywise rate "
        f"{findings.ALPHA:.0%}).",
    ])  # fmt: skip
    table = Table(
        "decision",
        f"False claims of models with no effect ({calibration.SIMS:,} simulated per claim) and "
        f"power against a true A = {calibration.EFFECT:.2f} on {catalog.RANKING}, by the rule "
        "before and now",
        ["claim", "tests", "false claims, before", "false claims, now", "power, before",
         "power, now"],
    )  # fmt: skip
    for row in rows:
        table.rows.append([
            row.claim, row.family, *(calibration.percent(x) for x in
            (row.before, row.now, row.power_before, row.power))
        ])  # fmt: skip
    section.tables = [table]
    return section
