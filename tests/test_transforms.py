"""Control baselines: no-cands and part-sent (Elazar §5), and agreement with Elazar's own files."""

from __future__ import annotations

import json
import logging
import re

from wsc_tasks import parsers
from wsc_tasks.problems import Problem
from wsc_tasks.transforms import no_cands, part_sent, transform_schemas

log = logging.getLogger(__name__)


def _problem(sentence: str, a: str, b: str) -> Problem:
    before, after = sentence.split("_")
    return Problem(uid="t", segments=(before, after), options=((a,), (b,)), label=0)


def test_no_cands_on_elazars_example():
    p = _problem(
        "The trophy doesn't fit into the brown suitcase because _ is too large.",
        "the trophy",
        "the suitcase",
    )
    out = no_cands(p)
    assert out.segments == ("Doesn't fit into because ", " is too large.")
    assert out.options == p.options and out.label == p.label


def test_no_cands_keeps_determiners_of_bare_candidates():
    p = _problem("I ate the cake rather than the pie because the _ was sweet.", "cake", "pie")
    assert no_cands(p).fill(0) == "I ate the rather than the because the cake was sweet."


def test_no_cands_possessive_and_missing_candidate():
    p = _problem("Sam's drawing hung above Tina's, and _ looked better.", "Sam", "Tina")
    assert no_cands(p).segments == ("Drawing hung above, and ", " looked better.")
    assert no_cands(_problem("He saw _ there.", "Ann", "Bob")) == "candidate not found in text"


def test_part_sent_cuts_after_last_marker_before_blank():
    p = _problem(
        "Sarah was a much better surgeon than Maria so _ always got the easier cases.",
        "Sarah",
        "Maria",
    )
    assert part_sent(p).segments == ("", " always got the easier cases.")
    p = _problem("Bill passed the half-empty plate to John because _ was full.", "Bill", "John")
    assert part_sent(p).segments == ("", " was full.")
    p = _problem("The ball hit the vase. The _ broke, sadly.", "ball", "vase")
    assert part_sent(p).segments == ("The ", " broke, sadly.")
    assert part_sent(_problem("Ann told Bob that _ was late.", "Ann", "Bob")) == (
        "no marker before the blank"
    )


def test_schema_kept_only_if_every_problem_transforms():
    ok = _problem("A met B because _ left.", "A", "B")
    bad = _problem("A met B _ left.", "A", "B")
    schema_ok = parsers.Schema(uid="s1", problems=(ok, ok))
    schema_bad = parsers.Schema(uid="s2", problems=(ok, bad))
    kept, dropped = transform_schemas([schema_ok, schema_bad], part_sent)
    assert [s.uid for s in kept] == ["s1"] and dropped == {"no marker before the blank": 1}


def _normalise(text: str) -> str:
    text = re.sub(r"\s+(?=[.,;:!?'])", "", text)
    return " ".join(text.split()).lower()


def _agreement(data_dir, transform, reference: str):
    problems = parsers.parse_winogrande(data_dir / "elazar/winogrande/dev.jsonl")
    twins = [s for s in parsers.group_twins(problems) if len(s.problems) == 2]
    kept, _ = transform_schemas(twins, transform)
    ours = {p.uid.split("~")[0]: "_".join(p.segments) for s in kept for p in s.problems}
    theirs = {}
    for line in (data_dir / reference).read_text().splitlines():
        row = json.loads(line)
        theirs[row["qID"]] = row["sentence"]
    both = set(ours) & set(theirs)
    exact = sum(ours[q] == theirs[q] for q in both)
    normal = sum(_normalise(ours[q]) == _normalise(theirs[q]) for q in both)
    log.warning(
        f"{reference}: ours {len(ours)}, theirs {len(theirs)}, both {len(both)}, "
        f"identical {exact}, identical up to case/spacing {normal}"
    )
    return len(ours), len(theirs), len(both), exact, normal


def test_part_sent_agrees_with_elazars_truncated_file(data_dir):
    # Figures quoted in the README: 562 problems in both; all 562 agree up to case and spacing.
    assert _agreement(data_dir, part_sent, "elazar/winohard/truncated/dev.jsonl") == (
        562,
        563,
        562,
        316,
        562,
    )


def test_no_cands_agrees_with_elazars_no_cands_file(data_dir):
    # Differences: we also remove the possessive "'s" of a removed name, match case-insensitively.
    assert _agreement(data_dir, no_cands, "elazar/winohard/no_cands/dev.jsonl") == (
        556,
        554,
        542,
        192,
        522,
    )
