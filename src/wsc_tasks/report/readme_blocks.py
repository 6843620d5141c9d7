"""The README's sentences about the decision rule and the findings, and the tables of scoring
methods and metrics in docs/methods.md, written from their code.

Each block sits between ``<!-- rule:NAME -->`` and ``<!-- end rule:NAME -->`` in the README;
``tests/regenerate.py`` rewrites it from ``BLOCKS`` (``--check`` says when one differs), so a
sentence that states the rule, its p or what the findings say cannot drift from the code that
applies it (``wording``'s phrases read ``decision_rule.RULE``; ``findings.SAYS`` lists the findings'
sentences in the order ``findings.sentences`` writes them).
"""

from __future__ import annotations

from collections.abc import Callable

from wsc_tasks.claims import findings, wording


def _opening() -> str:
    return (
        f"p: {wording.sides()}, against chance, in every table of the reports, "
        f"{wording.how_p()}; {wording.findings_p()}. {wording.claim_rule()}."
    )


def _which_p() -> str:
    return f"**Which p:** {wording.which_p()} {wording.claim_rule()}."


def _findings() -> str:
    said = "; ".join(findings.SAYS)
    return (
        "It opens with **the findings**: per model, a few sentences, each a stated rule applied "
        "to the estimates below (the rules: "
        "[`src/wsc_tasks/claims/findings.py`](../src/wsc_tasks/claims/findings.py)), in this "
        "order: "
        f"{said}. A line over all models says which are shown above chance on the ranking task "
        f"(Holm over them) and, per model, {wording.power_line()}."
    )


def causal_methods() -> str:
    """The table of causal methods, one row per registered method (``causal.METHODS``, a new one
    from its own module included): a method that is its formula's mean shares the ``_mean``
    row."""
    from wsc_tasks.scoring.causal_methods import METHODS  # every module's methods loaded

    means = [m for m in METHODS.values() if m.mean and not m.text]
    rows = [(f"`{m.name}`", m.text or m.formula.text) for m in METHODS.values() if not m.mean]
    if means:
        names = ", ".join(f"`{m.name}`" for m in means)
        rows.append(("`<method>_mean`", "divided by the number of tokens predicted (eq. "
                     f"3.12–3.14): {names}"))  # fmt: skip
    rows += [(f"`{m.name}`", m.text) for m in METHODS.values() if m.mean and m.text]
    lines = ["| method | score of a filled sentence σ1…σn |", "|---|---|"]
    return "\n".join([*lines, *(f"| {name} | {text} |" for name, text in rows)])


def metrics_table() -> str:
    """Every metric record of the registry: its name, its symbol, what it is, the variants its
    name takes."""
    from wsc_tasks.metrics import registry

    lines = ["| metric | symbol | what | variants |", "|---|---|---|---|"]
    for m in registry.REGISTRY:
        name = f"`{m.name}`" if m.reported else f"(`{m.name}_…`)"
        variants = ", ".join(sorted(m.variants))
        lines.append(f"| {name} | {m.symbol} | {m.description} | {variants} |")
    return "\n".join(lines)


# README.md's, docs/statistics.md's and docs/reports.md's blocks, wrapped at the line width
BLOCKS: dict[str, Callable[[], str]] = {"opening": _opening}
STATISTICS_BLOCKS: dict[str, Callable[[], str]] = {"which-p": _which_p}
REPORTS_BLOCKS: dict[str, Callable[[], str]] = {"findings": _findings}
# docs/methods.md's blocks, written as they are (tables, not wrapped)
METHODS_BLOCKS: dict[str, Callable[[], str]] = {
    "causal-methods": causal_methods,
    "metrics": metrics_table,
}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- rule:{name} -->", f"<!-- end rule:{name} -->"


def fill(
    readme: str,
    where: str = "README.md",
    blocks: dict[str, Callable[[], str]] | None = None,
    wrap: bool = True,
) -> str:
    """``readme`` with every block (``BLOCKS`` unless given) rewritten from the code; a block
    missing its markers is an error naming them."""
    for name, write in (BLOCKS if blocks is None else blocks).items():
        begin, end = markers(name)
        if begin not in readme or end not in readme:
            raise ValueError(f"{where}: add the lines {begin} and {end} around the {name} block")
        head, rest = readme.split(begin, 1)
        tail = rest.split(end, 1)[1]
        readme = f"{head}{begin}\n{_wrap(write()) if wrap else write()}\n{end}{tail}"
    return readme


def _wrap(text: str, width: int = 100) -> str:
    """The README's own line width (Markdown joins the lines again)."""
    import textwrap

    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)
