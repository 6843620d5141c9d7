"""The findings: per model, the few sentences a reader needs, each a rule applied to estimates.

Estimates in, sentences out. A ``Model`` holds one model's estimates (``stats.Estimate``: value,
95% interval, p against chance); ``sentences(model)`` gives its findings and ``overview(models)``
the line over all of them. Nothing here reads runs, samples or a report's internals: whoever
computed the estimates (the report's findings section, the leaderboard) builds a ``Model``, so
every output says the same thing by the same rules. A sentence is Markdown with `code` spans only;
every model label and task name enters a sentence through ``name`` and ``code``.

**The decision rule** (``RULE``; written once, here, and checked by simulation in
``claims.calibration``):

- **A test against chance** is the two-sided p of the estimate against its null (chance for an
  accuracy, 0 for a change), the same p the tables print beside the same figure: exact for
  schema accuracy A (the binomial test of the schemas solved) and for a paired difference in A
  (exact McNemar), else the bootstrap's, or the exact sign test where too few schemas carry a
  bootstrap (``metrics.stats``, its module docstring; ``wording.how_p``). A claim
  (*above chance*, *below chance*, *lower*, *higher*) needs that p, adjusted for its family, below
  α = 0.05, **and** the 95% interval printed beside it to lie on the claimed side of the null:
  the verdict never contradicts its interval. The direction is the side the value lies on (a
  two-sided test at 0.05 read in the direction of the value errs in a given direction at most
  2.5% of the time).
- **Families.** Where the findings make several claims of one kind, the familywise error rate
  (any false claim among them) is held at α by Holm's step-down adjustment
  (``metrics.multiple_testing.holm``): across one model's control baselines, across one model's
  perturbations, and across the models of a report or leaderboard for "above chance" on the
  ranking task (chance models aside: each is its own calibration check). Holm needs only the
  p-values, is valid under any dependence (the controls share a model's habits, the
  perturbations the original schemas, the models the schemas and the bootstrap's indexes) and
  is more powerful than Bonferroni. A single figure (a model's own a, Reid250, Winogrande) is one
  test. Uncorrected, six controls of a model with no artifact would flag one about 26% of the
  time (1 − 0.95⁶); the simulation measures both rates.
- **Not significant** is worded *not distinguishable from chance*, with what the interval rules
  out (``rules out A > 0.376``: its upper end), never *at chance*: with 133 schemas that is all
  the data show. The power line gives, per model, the smallest true A at which the exact test
  of its schemas would find it above chance with 80% power (``metrics.exact.detectable``).
- **Headline.** Schema accuracy A on the ranking task (``wsc266``) against chance.
- **Problem accuracy and the schema score.** Problem accuracy a *survives the schema score* when a
  and A are both above chance; when a is above chance and A is not, the sentence gives A's own
  verdict (*not distinguishable from chance* shows no more than that). The share of
  half-solved schemas A′ (some but not all problems right) is quoted and, where a = A + A′/2 holds
  (schemas of two problems, thesis eq. 3.80), how much of a comes from solved and how much from
  half-solved schemas.
- **Controls.** Each control baseline (the candidates removed, or only the clause around the
  pronoun kept) against chance on a, Holm over the model's controls. A control above chance means
  the model answers without what a reader needs to resolve the pronoun; *an artifact can explain
  part of its score* on a dataset only when a control made from it is above chance **and** the
  model's a on that dataset is above chance too (one test): a score at chance has nothing to
  explain.
- **Perturbations** of the ranking task (the family named in the sentence): the change in A
  (perturbed minus the same original schemas, paired) of every one run, Holm over them; and the
  schema consistency C (1 − C of the schemas change how many of their problems are right): the
  lowest C is called *least consistent* only when it is below every other perturbation's C by a
  difference test (``metrics.multiple_testing.difference_p``, Holm over the comparisons), else
  *lowest point estimate*, with the perturbations it is not distinguishable from.
- **Contamination** (the sharded exchangeability test of Oren et al. 2024 on each published file
  the model was checked on, ``metrics.contamination``: the effect is the published minus the mean
  shuffled log-likelihood per token, with its 95% t interval). The files checked form one family
  ("has the model seen any of them?"), Holm over them. By the rule above, with the t-test's
  two-sided p (twice the task's one-sided ``contamination_p`` on the side of the effect): a file
  whose adjusted p is below 0.05 and whose interval lies above 0 gets *the canonical order is more
  likely than shuffles: p = …*: the model has probably seen that file in that order, and its
  scores on it and on the tasks made from it may be memory. The others share one sentence, *no
  evidence of contamination* (with their p), which does not show the files unseen. A published
  order *less* likely than shuffles is no claim the check makes.
- **Asked as questions** (``tasks.questions``: the schemas asked as questions with two
  labelled options, each problem in both orders of its options; a different formulation from
  the log-likelihood tasks, so said apart and never ranked with them). On its first question
  task (the ranking dataset's, where it ran): A and a against chance, by the rule above (one
  test each), and the share of questions unanswered, which count as wrong; its control
  baselines asked as questions by the rule of the controls above. **Position:** the
  share of answers naming the option shown first, f_A, against 0.5, Holm over the model's
  question tasks: each problem is asked with its options both ways, so answers that follow the
  options name A half the time; f_A above 0.5 (or below) on a task says *its answers follow the
  position of the options*, with the share of problems answered alike in both orders (c_o);
  otherwise *no position bias shown*.
- **Reid250 and Winogrande.** a and A on ``reid250`` and on ``winogrande_dev`` against chance, a
  line each.
- **Chance models** (random log-likelihoods) are the calibration check, not models: A on the
  ranking task is expected not distinguishable from chance (a false claim one run in twenty at
  most), and a 95% interval is expected to exclude chance on about 5% of the tasks; the findings
  count on how many it does.
- **In one sentence** (a leaderboard row, ``brief``): the headline; a, and whether it survives
  the schema score; how many control baselines are above chance, and whether an artifact can
  explain part of the score, by the rules above; where the contamination check ran, the files it
  flags, or *no evidence of contamination*.
- **Over all models.** Which models (chance models aside) are above chance on A of the ranking
  task, Holm over them, and, per model, the smallest true A at which it would be found above
  chance with 80% power.
- **Ranks** (``metrics.ranks``: Mogstad, Romano, Shaikh & Wilhelm 2024, from the joint bootstrap
  replicates). *The best model is one of these k*: the τ-best confidence set (τ = 1; 3 from 11
  ranked models, 10 from 31), a model left out only when at least τ models are shown above it by
  the simultaneous stepdown over every pair, so it holds the true τ best with probability 95%.
  *Ranked above X with confidence* (for a model the reader names): the one-sided stepdown over
  X's comparisons with every other model, at most 5% chance that any model named is not above X.
  The rank column is a point estimate; its confidence sets are the table's.
"""

from __future__ import annotations

import math

from wsc_tasks.claims import wording
from wsc_tasks.claims.across_models import best_models, detectable, overview, ranked_above
from wsc_tasks.claims.decision_rule import (
    ABOVE,
    ALPHA,
    AT,
    BELOW,
    RULE,
    UNCLEAR,
    UNCORRECTED,
    Accuracy,
    Contamination,
    Control,
    Model,
    Perturbation,
    Question,
    Rule,
    Test,
    contaminated,
    contamination_adjusted,
    control_tests,
    controls_above,
    explained_by_artifacts,
    headline_tests,
    perturbation_tests,
    position_tests,
    survives,
    test,
    tests,
    verdict,
)
from wsc_tasks.claims.wording import (
    _join,
    _models,
    _p_is,
    _p_text,
    against_chance,
    code,
    interval,
    name,
    number,
    signed,
)
from wsc_tasks.data import catalog
from wsc_tasks.metrics import multiple_testing, stats
from wsc_tasks.metrics.stats import Estimate, format_p

# fmt: off
__all__ = [
    "ABOVE", "ALPHA", "AT", "BELOW", "RULE", "UNCLEAR", "UNCORRECTED", "Accuracy",
    "Contamination", "Control", "Model", "Perturbation", "Question", "Rule", "SAYS", "Test",
    "against_chance", "best_models", "brief", "calibration", "code", "contaminated",
    "contamination", "contamination_adjusted",
    "contamination_brief", "control_tests", "controls", "controls_above", "detectable",
    "explained_by_artifacts", "headline", "headline_tests", "interval", "name", "number",
    "one_line", "overview", "perturbation_tests", "perturbations", "position_tests",
    "questions", "ranked_above", "sentences",
    "signed",
    "schema_score", "survival", "survives", "test", "tests", "verdict",
]
# fmt: on


def headline(model: Model, found: Test | None = None) -> str | None:
    """A on the ranking task against chance (``found``: its test in a family of models)."""
    if model.ranking is None or model.ranking.schema is None:
        return None
    found = found or test(model.ranking.schema)
    return (
        f"Schema accuracy on {wording.code(model.ranking.task)} (the ranking task): "
        f"{against_chance('A', found, _models(found.family))}."
    )


def schema_score(kept: bool, schema: Test) -> str:
    """What follows a problem accuracy above chance: A above chance too (it survives the schema
    score), else A's own verdict, no more: an A not distinguishable from chance does not show
    that the model solves no more schemas than chance would."""
    if kept:
        return ", and it survives the schema score: A is above chance too"
    return f", but the schema score A is {schema.verdict}"


def survival(model: Model, found: Test | None = None) -> str | None:
    """Does problem accuracy survive the schema score; how much of it is half-solved schemas."""
    ranking = model.ranking
    if ranking is None or ranking.a is None:
        return None
    a, big_a = ranking.a, ranking.schema
    schema = found or (test(big_a) if big_a is not None else None)
    text = f"Problem accuracy {against_chance('a', a)}"
    kept = survives(a, schema)
    if kept is None:
        text += ": no problem accuracy above chance for the schema score to keep."
    elif schema is not None:
        text += f"{schema_score(kept, schema)}."
    else:
        text += "."
    half = model.half_solved
    if half is None:
        return text
    text += f" Half-solved schemas (some but not all problems right): A′ = {interval(half)}"
    if big_a is not None and math.isclose(a.value, big_a.value + half.value / 2, abs_tol=1e-9):
        text += (
            f"; of a = {number(a.value)}, {number(big_a.value)} comes from solved schemas and "
            f"{number(half.value / 2)} from half-solved ones (a = A + A′/2)"
        )
    return text + "."


def _controls_family(model: Model) -> str:
    return f"the {len(model.controls)} controls"


def controls(model: Model) -> list[str]:
    """Each control against chance, by what it changes; whether an artifact can explain the
    score of the datasets they were made from."""
    if not model.controls:
        return []
    tested = control_tests(model)
    over = _controls_family(model)
    parts = []
    for change in dict.fromkeys(c.change for c in model.controls):
        chosen = [(c, t) for c, t in tested if c.change == change]
        groups = []
        for found in (ABOVE, BELOW, UNCLEAR):
            cells = [
                f"{wording.code(c.task)} (a = {interval(t.estimate)}; {_p_text(t, over)}"
                + (f"; rules out a > {number(t.estimate.high)})" if found == UNCLEAR else ")")
                for c, t in chosen
                if t.verdict == found
            ]
            if cells:
                groups.append(f"{found} on {_join(cells)}")
        parts.append(f"{change}, {'; '.join(groups)}")
    text = f"Control baselines (Holm over {over}): " + "; ".join(parts) + "."
    explained = explained_by_artifacts(model)
    above = [c for c, t in tested if t.verdict == ABOVE]
    nothing = list(dict.fromkeys(c.of for c in above if c.of not in explained))
    said = []
    if explained:
        said.append(
            f"So an artifact can explain part of its score on "
            f"{_join([wording.code(d) for d in explained])}: it answers above chance without "
            "what a reader needs to resolve the pronoun."
        )
    if nothing:
        scores = []
        for of in nothing:
            original = next((c.original for c in above if c.of == of and c.original), None)
            shown = f" (a = {interval(original)})" if original is not None else ""
            scores.append(f"{wording.code(of)}{shown}")
        said.append(
            f"Its score on {_join(scores)} is not above chance: there is nothing there for an "
            "artifact to explain."
        )
    if not above:
        said.append("No control is above chance: no artifact tested explains its score.")
    return [text, " ".join(said)]


def _consistency(model: Model) -> str | None:
    measured = [(p.consistency, p) for p in model.perturbations if p.consistency is not None]
    if not measured:
        return None

    def cell(c: Estimate, p: Perturbation) -> str:
        return f"{wording.code(p.task)}, {p.change} (C = {interval(c)})"

    lowest, first = min(measured, key=lambda item: (item[0].value, item[1].task))
    others = [(c, p) for c, p in measured if p is not first]
    if not others:
        return (
            f"schema consistency measured under one perturbation only: {cell(lowest, first)}, "
            f"{1 - lowest.value:.0%} of the schemas changing how many of their problems are right"
        )
    # a normal test on bootstrap standard errors: none where a bootstrap was too thin to use
    ps = [
        multiple_testing.difference_p(lowest.value, lowest.stderr, c.value, c.stderr)
        if lowest.method == c.method == stats.BOOTSTRAP
        else math.nan
        for c, _ in others
    ]
    adjusted = multiple_testing.holm(ps)
    close = [(c, p) for (c, p), q in zip(others, adjusted, strict=True) if not q < ALPHA]
    if not close:
        return (
            f"least consistent {cell(lowest, first)}: below every other perturbation's C "
            f"(Holm-adjusted p ≤ {format_p(max(adjusted))})"
        )
    return (
        f"lowest schema consistency (point estimate) {cell(lowest, first)}, not distinguishable "
        f"from {_join([cell(c, p) for c, p in close])}"
    )


def perturbations(model: Model, of: str = "") -> str | None:
    """Every perturbation of the family: ΔA tested (Holm over them), and the lowest consistency
    with what it is not distinguishable from."""
    parts = []
    tested = perturbation_tests(model)
    if tested:
        over = f"the {len(tested)} perturbations"
        groups = []
        words = ((BELOW, "lower"), (ABOVE, "higher"), (UNCLEAR, "no change distinguishable"))
        for found, word in words:
            cells = [
                f"{wording.code(p.task)}, {p.change} "
                f"(ΔA = {signed(t.estimate)}; {_p_text(t, over)})"
                for p, t in tested
                if t.verdict == found
            ]
            if cells:
                groups.append(f"{word} on {_join(cells)}")
        parts.append(f"A (paired, perturbed − original schemas) {'; '.join(groups)}")
    consistency = _consistency(model)
    if consistency:
        parts.append(consistency)
    if not parts:
        return None
    count = len(model.perturbations)
    family = f" of {wording.code(of)}" if of else ""
    plural = "s" if count > 1 else ""
    return f"Under the {count} perturbation{plural}{family} run: {'; '.join(parts)}."


def _unanswered(found: Question) -> str:
    """``12 of 532 questions unanswered (u = 0.023), counted wrong``."""
    share = f" (u = {number(found.unanswered.value)})" if found.unanswered is not None else ""
    return f"{found.missing} of {found.asked} questions unanswered{share}, counted wrong"


NAMED = 3  # question tasks a position sentence names; the rest it counts


def _question_controls(model: Model) -> list[str]:
    """The control baselines asked as questions, by the controls' rule (``controls``), Holm over
    them: each against chance, and whether an artifact can explain part of a question score."""
    by_dataset = {q.dataset: q for q in model.questions if q.dataset}
    found = []
    for q in model.questions:
        try:
            role = catalog.role_of(q.dataset) if q.dataset else None
        except KeyError:
            role = None
        if role is None or role.kind != catalog.CONTROL or q.a is None:
            continue
        original = by_dataset.get(role.of) if role.of else None
        of = original.task if original is not None else f"{role.of}_chat"
        change = catalog.CHANGES.get(role.change, role.change)
        found.append(Control(q.task, change, of, q.a, original.a if original else None))
    said = controls(Model(model.label, controls=tuple(found)))
    return [f"Asked as questions, c{said[0][1:]}", *said[1:]] if said else []


def questions(model: Model) -> list[str]:
    """The question tasks: the first one's A, a and unanswered share; then the position rule
    (f_A against 0.5, Holm over the model's question tasks)."""
    if not model.questions:
        return []
    first = model.questions[0]
    parts = [
        against_chance(symbol, estimate)
        for symbol, estimate in (("A", first.schema), ("a", first.a))
        if estimate is not None
    ]
    more = len(model.questions) - 1
    others = f" ({more} more question task{'s' if more > 1 else ''}: the report's table)"
    out = [
        "Asked as questions (a different formulation: answers generated and parsed, not "
        "log-likelihoods; never ranked with the log-likelihood tasks), on "
        f"{wording.code(first.task)}: "
        + "; ".join([*parts, _unanswered(first)])
        + (others if more else "")
        + "."
    ]
    out += _question_controls(model)
    tested = position_tests(model)
    if not tested:
        return out
    over = f"its {len(tested)} question task{'s' if len(tested) > 1 else ''}"
    biased = [(q, t) for q, t in tested if t.verdict != UNCLEAR]
    if biased:
        cells = []
        for q, t in biased[:NAMED]:
            side = "more" if t.verdict == ABOVE else "less"
            order = f"; c_o = {interval(q.order)}" if q.order is not None else ""
            cells.append(
                f"on {wording.code(q.task)} it names the option shown first in f_A = "
                f"{interval(t.estimate)} of its answers, {side} often than half the time "
                f"({_p_text(t, over)}){order}"
            )
        rest = len(biased) - NAMED
        if rest > 0:
            cells.append(f"and on {rest} more of {over} (the report's table)")
        out.append(
            f"Its answers follow the position of the options, not only the sentence: "
            f"{'; '.join(cells)}."
        )
    else:
        first_test = tested[0][1]
        out.append(
            "No position bias shown: the share of answers naming the option shown first is not "
            f"distinguishable from 0.5 on {over} (Holm; {wording.code(tested[0][0].task)}: "
            f"f_A = {interval(first_test.estimate)}, {_p_text(first_test, over)})."
        )
    return out


def one_line(title: str, found: Accuracy | None) -> str | None:
    """``Reid250 (`reid250`): a = …; A = ….``"""
    if found is None:
        return None
    parts = [
        against_chance(symbol, estimate)
        for symbol, estimate in (("a", found.a), ("A", found.schema))
        if estimate is not None
    ]
    return f"{title} ({wording.code(found.task)}): {'; '.join(parts)}." if parts else None


def calibration(model: Model, found: Test | None = None) -> list[str]:
    """A chance model: not distinguishable from chance on the ranking task? How often its
    intervals exclude chance."""
    out = ["Chance model (random log-likelihoods): the calibration check, not a model to rank."]
    if model.ranking is not None and model.ranking.schema is not None:
        found = found or test(model.ranking.schema)
        expected = (
            "as expected"
            if found.verdict == UNCLEAR
            else "expected one run in twenty at most (a two-sided test at 0.05); more often, "
            "the intervals would be miscalibrated"
        )
        out.append(
            f"On {wording.code(model.ranking.task)}: {against_chance('A', found)}, {expected}."
        )
    counts = []
    for symbol in ("a", "A"):
        chosen = [t.a if symbol == "a" else t.schema for t in model.tasks]
        nulls = [(e, e.null) for e in chosen if e is not None and e.null is not None]
        known = [(e, null) for e, null in nulls if not math.isnan(e.low)]
        if known:
            missed = sum(1 for e, null in known if not e.low <= null <= e.high)
            share = missed / len(known)
            counts.append(f"on {missed} of {len(known)} tasks for {symbol} ({share:.0%})")
    if counts:
        out.append(f"Its 95% intervals exclude chance {_join(counts)}; about 5% is expected.")
    return out


def contamination(model: Model) -> list[str]:
    """The contamination rule of the module docstring: a sentence per file flagged, then one
    for the others (no evidence)."""
    checks = list(model.contamination)
    if not checks:
        return []
    flagged = contaminated(model)
    family = f"Holm over the {len(checks)} files checked" if len(checks) > 1 else ""
    out = []
    for check, q in flagged:
        adjusted = f" ({family}: {_p_is(q)})" if family else ""
        effect = f"{check.effect:+.4f} nats/token [{check.low:+.4f}, {check.high:+.4f}]"
        out.append(
            f"On {wording.code(check.dataset)} the canonical order is more likely than shuffles: "
            f"{_p_is(check.two_sided)}{adjusted}; {effect}, {check.shards} shards. The model has "
            "probably seen this file in this order: its scores on it, and on the tasks made from "
            "it, may be memory rather than reasoning."
        )
    named = {c.task for c, _ in flagged}
    rest = [c for c in checks if c.task not in named]
    if rest:
        listed = _join([f"{wording.code(c.dataset)} ({_p_is(c.two_sided)})" for c in rest])
        out.append(
            f"No evidence of contamination on {listed}: the published order is not "
            "distinguishable from shuffles (this does not show the files unseen)."
        )
    return out


def contamination_brief(model: Model) -> str:
    """The contamination rule in a clause, for ``brief``."""
    flagged = contaminated(model)
    if flagged:
        files = _join([f"{wording.code(c.dataset)} ({_p_is(c.two_sided)})" for c, _ in flagged])
        return f"the canonical order is more likely than shuffles on {files}: likely contaminated"
    return f"no evidence of contamination on {len(model.contamination)} published file(s)"


# What ``sentences`` says of a model, in its order (the README's account of the findings is
# written from this list, ``report.readme_blocks``): a change to the sentences changes it here.
SAYS = (
    "schema accuracy A on the ranking task with its interval, above or below chance or not "
    "distinguishable from chance (with what its interval rules out)",
    "whether problem accuracy a survives the schema score (A above chance too), and how much of a "
    "comes from half-solved schemas",
    "each control baseline against chance, Holm over the model's controls, and the datasets on "
    "which an artifact can explain part of its score (a control made from one is above chance "
    "and the model's score on it is above chance too)",
    "the change in A under each perturbation of the ranking task (paired, Holm over them) and the "
    "lowest schema consistency, called least consistent only when it is below every other",
    "where the contamination check ran, the files whose published order is more likely than "
    "shuffles, or no evidence of contamination",
    "a and A on Reid250 and on Winogrande against chance, a line each",
    "where it was asked questions (a different formulation, never ranked with the others): A, a "
    "and the share unanswered on its first question task, its control baselines asked as "
    "questions by the controls' rule, and whether its answers follow the position of the "
    "options (the share naming the option shown first against 0.5, Holm over its question "
    "tasks)",
    "for a chance model instead, whether A on the ranking task is not distinguishable from chance "
    "and on how many tasks its intervals exclude chance (the calibration check)",
)


def sentences(model: Model, found: Test | None = None, of: str = "") -> list[str]:
    """The findings of one model, in the order of the rules (``found``: its headline test in the
    family of models it is shown with; ``of``: the dataset its perturbations are of)."""
    out = []
    if model.limit is not None:
        out.append(
            f"Run with --limit {model.limit:g}: every figure is of the first documents of each "
            "task, not of the whole dataset."
        )
    if model.chance_model:
        return out + calibration(model, found)
    said = [
        headline(model, found),
        survival(model, found),
        *controls(model),
        perturbations(model, of),
        *contamination(model),
        one_line("Reid250, adversarial schemas", model.reid250),
        one_line("Winogrande", model.winogrande),
        *questions(model),
    ]
    return out + [s for s in said if s]


def brief(model: Model, found: Test | None = None) -> str:
    """A model's findings in one sentence, for a leaderboard row: the headline, whether problem
    accuracy survives the schema score, how many controls are above chance and whether an
    artifact can explain part of the score (the same rules as ``sentences``)."""
    limit = f"(--limit {model.limit:g}) " if model.limit is not None else ""
    ranking = model.ranking
    if ranking is None or ranking.schema is None:
        checked = f"; {contamination_brief(model)}" if model.contamination else ""
        return f"{limit}no samples of the ranking task to say it from{checked}."
    found = found or test(ranking.schema)
    if model.chance_model:
        expected = "as expected" if found.verdict == UNCLEAR else "expected one run in 20 at most"
        said = against_chance("A", found)
        return f"{limit}chance model, the calibration check: {said}, {expected}."
    parts = [against_chance("A", found, _models(found.family))]
    if ranking.a is not None:
        kept = survives(ranking.a, found)
        said = schema_score(kept, found) if kept is not None else ""
        parts.append(against_chance("a", ranking.a) + said)
    if model.controls:
        above = controls_above(model)
        total = len(model.controls)
        if above:
            tasks = _join([wording.code(c.task) for c in above])
            explained = explained_by_artifacts(model)
            text = f"above chance on {len(above)} of {total} control baselines ({tasks}; Holm)"
            if explained:
                text += (
                    ": an artifact can explain part of its score on "
                    f"{_join([wording.code(d) for d in explained])}"
                )
            else:
                text += ", but not on a dataset whose score is above chance"
            parts.append(text)
        else:
            parts.append(f"above chance on none of its {total} control baselines (Holm)")
    if model.contamination:
        parts.append(contamination_brief(model))
    return limit + "; ".join(parts) + "."
