"""Control baselines: no-cands and part-sent (Elazar §5), and agreement with Elazar's own files."""

from __future__ import annotations

import json
import logging
import re

import pytest

from wsc_tasks.data import catalog, parsers
from wsc_tasks.data.problems import Problem
from wsc_tasks.data.transforms import no_cands, part_sent, part_sent_cuts, transform_schemas

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


def _text(result: Problem | str) -> str:
    return result if isinstance(result, str) else "_".join(result.segments)


def test_no_cands_mention_never_reaches_past_a_preposition():
    # WSC273 #99 and #143: "the lock with" and "a picture of" are not part of a mention
    p = _problem(
        "I was trying to open the lock with the key, but someone had filled the keyhole with "
        "chewing gum, and I couldn't get _ in.",
        "the key",
        "the chewing gum",
    )
    assert _text(no_cands(p)) == (
        "I was trying to open the lock with, but someone had filled the keyhole with, and I "
        "couldn't get _ in."
    )
    p = _problem(
        "Sam tried to paint a picture of shepherds with sheep, but _ ended up looking like dogs.",
        "the shepherds",
        "the sheep",
    )
    assert (
        _text(no_cands(p))
        == "Sam tried to paint a picture of with, but _ ended up looking like dogs."
    )


def test_no_cands_removes_every_occurrence_and_modifiers_led_by_a_determiner():
    # WSC273 #193: "a pin" is the candidate "the pin" under another determiner
    p = _problem(
        "I stuck a pin through a carrot. When I pulled the pin out, _ left a hole.",
        "the pin",
        "the carrot",
    )
    assert _text(no_cands(p)) == "I stuck through. When I pulled out, _ left a hole."
    p = _problem(
        "I used an old rag to clean the knife, and then I put _ in the trash.",
        "the rag",
        "the knife",
    )
    assert _text(no_cands(p)) == "I used to clean, and then I put _ in the trash."
    p = _problem(
        "I'm sure that my map will show this building; _ is very good.", "the map", "the building"
    )
    assert _text(no_cands(p)) == "I'm sure that will show; _ is very good."


def test_no_cands_overlapping_mentions_are_removed_once():
    p = _problem(
        "Joe's uncle can still beat him at tennis, even though _ is older.", "Joe", "Joe's uncle"
    )
    assert _text(no_cands(p)) == "Can still beat him at tennis, even though _ is older."


def test_no_cands_drops_what_it_cannot_remove_cleanly():
    # WSC273 #89: "mouse" in "the mouse hole" names the hole, not the mouse
    p = _problem(
        "The cat was lying by the mouse hole waiting for the mouse, but _ was too impatient.",
        "the cat",
        "the mouse",
    )
    assert no_cands(p) == "a candidate word modifies another noun (compound)"
    p = _problem(
        "In the storm, the tree fell down on the roof, so _ broke.", "the tree", "the roof"
    )
    assert _text(no_cands(p)) == "In the storm, fell down on, so _ broke."  # "fell" is a verb
    # WSC273 #195: "coffee" is the word the twin changes ("ink"): removing it breaks the problem
    coffee = _problem(
        "I stirred my coffee with a pen, and _ got full of coffee.", "the pen", "the coffee"
    )
    ink = _problem(
        "I stirred my coffee with a pen, and _ got full of ink.", "the pen", "the coffee"
    )
    assert no_cands(coffee, [ink]) == "a candidate is mentioned in the words the twins differ in"
    assert _text(no_cands(ink, [coffee])) == "I stirred with, and _ got full of ink."
    # WSC273 #173/#174: twins that differ in a candidate itself are fine
    minnow = _problem("There is a minnow below that duck! _ should flee!", "the minnow", "the duck")
    shark = _problem("There is a shark below that duck! _ should flee!", "the shark", "the duck")
    assert _text(no_cands(minnow, [shark])) == "There is below! _ should flee!"
    # a candidate word left in another use names the candidate
    p = _problem(
        "We made orange lanterns and put candles in the oranges; the _ were big.",
        "candles",
        "oranges",
    )
    assert no_cands(p) == "a candidate word is left in another form or use"


@pytest.mark.parametrize(
    ("sentence", "part"),
    [
        ("Dr. Adams informed Kate that _ had cancer.", "no marker before the blank"),  # #249
        ("Mrs. Smith met J. Jones; _ was late.", "_ was late."),
        ("Ann met Mr. Brown. _ was late.", "_ was late."),
        ("The fee of 20,000 dollars at 4:30 was what _ paid.", "no marker before the blank"),
        ("It weighs 3.5 kilos, so _ is heavy.", "_ is heavy."),
    ],
)
def test_part_sent_never_cuts_inside_an_abbreviation_or_a_number(sentence, part):
    assert _text(part_sent(_problem(sentence, "Ann", "Bob"))) == part


def test_part_sent_cuts_are_after_markers_only():
    text = "Dr. Smith paid 20,000 dollars, but J. Doe left. Then"
    assert [text[:i][-6:] for i in part_sent_cuts(text, len(text))] == [
        "llars,",
        "s, but",
        " left.",
    ]


def test_listed_wsc273_problems(data_dir):
    """The problems the control audit found, as they are now (WSC273 numbering)."""
    schemas = catalog.load("wsc273_schemas")
    problems = {
        p.number: (p, [q for q in s.problems if q is not p]) for s in schemas for p in s.problems
    }

    def nc(number: int) -> str:
        return _text(no_cands(*problems[number]))

    assert nc(99) == (
        "I was trying to open the lock with, but someone had filled the keyhole with, and I "
        "couldn't get _ in."
    )
    assert nc(144) == "Sam tried to paint a picture of with, but _ ended up looking more like dogs."
    assert nc(193) == "I stuck through. When I pulled out, _ left a hole."
    assert nc(195) == "a candidate is mentioned in the words the twins differ in"
    assert nc(89) == nc(90) == "a candidate word modifies another noun (compound)"
    assert _text(part_sent(*problems[249])) == "no marker before the blank"


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
    # Differences: we also remove the possessive "'s" of a removed name, match case-insensitively,
    # and drop 3 pairs that would keep a candidate word: "the topic of the budget" is in the words
    # the twins differ in, "orange" (candidate "oranges") and "food" (candidate "food
    # wholesale", a pair their file keeps) are left in another use. Of the 540 in both, the 20
    # that differ beyond case and spacing are all the possessive "'s".
    assert _agreement(data_dir, no_cands, "elazar/winohard/no_cands/dev.jsonl") == (
        550,
        554,
        540,
        190,
        522,
    )
