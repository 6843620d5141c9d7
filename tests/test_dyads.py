"""The dyad generator (thesis §3.5.6): the published Reid250×2 files line for line, the schema
grouping of each mode on hand-made dyads, the maler writer, and generated catalog datasets."""

from __future__ import annotations

import pytest

from wsc_tasks.data import catalog, dyads
from wsc_tasks.data.parsers import parse_maler
from wsc_tasks.data.problems import Problem, Schema, count
from wsc_tasks.data.writers import format_maler, maler_lines

REID = "maler/reid250/"
THESIS_WRAPPER = "It is [true ~ false] that SCHEMA."


@pytest.mark.parametrize(
    "grouping, published",
    [("by_answer", "by-answer"), ("by_key", "by-key"), ("by_boolean", "by-boolean")],
)
def test_generator_reproduces_published_reid250x2(data_dir, grouping, published):
    base = parse_maler(data_dir / REID / "reid250.txt")
    inverted = parse_maler(data_dir / REID / "reid250-inverted.txt")
    wrapper = dyads.parse_wrapper(THESIS_WRAPPER)
    made = dyads.make_dyads(base.schemas, wrapper, grouping, inverted.schemas)
    mode = dyads.FILE_MODES[dyads.GROUPINGS[grouping][0]]
    ours = maler_lines(dyads.header(base.header, wrapper), mode, made)
    path = data_dir / REID / f"reid250x2-v1-{published}.txt"
    theirs = path.read_text(encoding="utf-8").split("\n")
    assert len(ours) == len(theirs) == 502
    for number, (mine, published_line) in enumerate(zip(ours, theirs, strict=True), start=1):
        assert mine == published_line, f"{path.name}:{number}"
    assert format_maler(dyads.header(base.header, wrapper), mode, made) == path.read_text("utf-8")


@pytest.mark.parametrize("name", ["reid250.txt", "reid250-inverted.txt", "reid250x2-v1-by-key.txt"])
def test_writer_round_trips_maler_files(data_dir, name):
    parsed = parse_maler(data_dir / REID / name)
    text = (data_dir / REID / name).read_text(encoding="utf-8")
    assert format_maler(parsed.header, parsed.mode, parsed.schemas) == text


# A hand-made substitution schema, its inversion, and a transposition schema with its inversion.
def _problem(uid, segments, options, label, number):
    return Problem(uid, tuple(segments), tuple(tuple(o) for o in options), label, number, uid)


CATS = Schema("s1", (
    _problem("s1a", ("Three cats are ", " than four cats."), [["fewer"], ["more"]], 0, 1),
    _problem("s1b", ("Five cats are ", " than four cats."), [["fewer"], ["more"]], 1, 2),
), "s", 1)  # fmt: skip
CATS_INVERTED = Schema("s1", (
    _problem("s1a", ("", " cats are fewer than four cats."), [["Three"], ["Five"]], 0, 1),
    _problem("s1b", ("", " cats are more than four cats."), [["Three"], ["Five"]], 1, 2),
), "s", 1)  # fmt: skip
MONTHS = Schema("t2", (
    _problem("t2a", ("October comes ", " August."), [["after"], ["before"]], 0, 3),
    _problem("t2b", ("August comes ", " October."), [["after"], ["before"]], 1, 4),
), "t", 2)  # fmt: skip
MONTHS_INVERTED = Schema("t2", (
    _problem("t2a", ("", " comes after ", "."), [["October", "August"], ["August", "October"]],
             0, 3),
    _problem("t2b", ("", " comes before ", "."), [["October", "August"], ["August", "October"]],
             1, 4),
), "t", 2)  # fmt: skip


def _solved(problem: Problem) -> str:
    return problem.fill(problem.label)


def test_hand_made_dyads_in_each_mode():
    wrapper = dyads.parse_wrapper("That SCHEMA is [true ~ false].")
    by = {
        grouping: dyads.make_dyads(
            [CATS, MONTHS], wrapper, grouping, [CATS_INVERTED, MONTHS_INVERTED]
        )
        for grouping in dyads.GROUPINGS
    }
    cats = by["by_answer"][0]
    assert [p.segments for p in cats.problems] == [
        ("That three cats are ", " than four cats is true."),
        ("That three cats are ", " than four cats is false."),
        ("That five cats are ", " than four cats is true."),
        ("That five cats are ", " than four cats is false."),
    ]
    assert [p.label for p in cats.problems] == [0, 1, 1, 0]
    assert [_solved(p) for p in by["by_key"][0].problems] == [
        "That three cats are fewer than four cats is true.",
        "That five cats are more than four cats is true.",
        "That five cats are fewer than four cats is false.",
        "That three cats are more than four cats is false.",
    ]
    assert by["by_key"][0].problems[0].options == (("three",), ("five",))
    months = by["by_key"][1].problems  # two blanks; a proper noun keeps its capital
    assert months[0].segments == ("That ", " comes after ", " is true.")
    assert months[0].options == (("October", "August"), ("August", "October"))
    assert [p.label for p in months] == [0, 1, 1, 0]
    assert [(p.segments, p.label) for p in by["by_boolean"][0].problems] == [
        (("That three cats are fewer than four cats is ", "."), 0),
        (("That three cats are more than four cats is ", "."), 1),
        (("That five cats are fewer than four cats is ", "."), 1),
        (("That five cats are more than four cats is ", "."), 0),
    ]
    assert by["by_boolean"][0].problems[0].options == (("true",), ("false",))
    assert [p.number for s in by["by_answer"] for p in s.problems] == list(range(1, 9))


def _facts(problem: Problem) -> dict[str, str]:
    """What a problem of the hand-made CATS dyad fixes, read off its solved text."""
    text = _solved(problem)
    return {
        "truth value": "true" if text.endswith("is true.") else "false",
        "key phrase": "three" if "three" in text else "five",
        "answer": "fewer" if "fewer" in text else "more",
    }


@pytest.mark.parametrize("grouping", sorted(dyads.GROUPINGS))
def test_each_schema_fixes_what_its_mode_prescribes(grouping):
    wrapper = dyads.parse_wrapper("That SCHEMA is [true ~ false].")
    (dyad,) = dyads.make_dyads([CATS], wrapper, grouping, [CATS_INVERTED])
    mode, fixed, groups = dyads.GROUPINGS[grouping]
    guessed = {"by answer": "answer", "by key": "key phrase", "by boolean": "truth value"}[mode]
    assert dyad.groups == groups and len(groups) == 2
    facts = [_facts(p) for p in dyad.problems]
    for group in groups:
        values = {name: {facts[i][name] for i in group} for name in facts[0]}
        assert len(values[fixed]) == 1, (grouping, group)  # the schema fixes this
        for other in set(values) - {fixed, guessed}:
            assert len(values[other]) == 2, (grouping, group)  # its problems vary this
    # the right answers of a schema differ: a constant guess solves none of its schemas
    for group in groups:
        assert sorted(dyad.problems[i].label for i in group) == [0, 1]


def test_published_files_are_grouped_by_mode(data_dir):
    """Regrouped published dyads: by answer and by key a schema shares its truth value, by
    boolean its key phrase (the original problem whose sentence it wraps)."""
    for name in ("reid250x2", "reid250x2_by_key"):
        for schema in catalog.load(name):
            for group in schema.groups:
                truths = {_solved(schema.problems[i]).split()[2] for i in group}
                assert len(truths) == 1, (name, schema.uid, group)
    originals = catalog.load("reid250")
    for schema, original in zip(catalog.load("reid250x2_by_boolean"), originals, strict=True):
        for group, key_problem in zip(schema.groups, original.problems, strict=True):
            filled = {key_problem.fill(answer).lower() for answer in (0, 1)}
            sentences = {
                schema.problems[i].segments[1].removeprefix(" that ").lower() for i in group
            }
            assert sentences == filled, (schema.uid, group)  # one key phrase, both answers


def test_truth_pairs_and_wrapper_errors():
    assert dyads.parse_wrapper(THESIS_WRAPPER, "probable").template == (
        "It is [probable ~ improbable] that SCHEMA."
    )
    wrapper = dyads.parse_wrapper("It is [generally true ~ not generally true] that SCHEMA.")
    assert wrapper.truth == ("generally true", "not generally true")
    assert wrapper.header["truth pair"] == "generally true-not generally true"
    (dyad,) = dyads.make_dyads([CATS], wrapper, "by_boolean")
    assert (
        _solved(dyad.problems[0])
        == "It is generally true that three cats are fewer than four cats."
    )
    for bad in ("It is [true ~ false] that.", "SCHEMA SCHEMA [a ~ b]", "It is true that SCHEMA.",
                "It is [true ~ true] that SCHEMA."):  # fmt: skip
        with pytest.raises(dyads.DyadError):
            dyads.parse_wrapper(bad)
    with pytest.raises(dyads.DyadError, match="needs the dataset's inverted schemas"):
        dyads.make_dyads([CATS], wrapper, "by_key")
    with pytest.raises(dyads.DyadError, match="unknown dyad grouping"):
        dyads.make_dyads([CATS], wrapper, "by_truth")


def test_casing_keeps_proper_nouns_only():
    texts = [
        "Hudson Bay is cold.", "Ocean water is salty.", "The Atlantic Ocean is big.",
        "All Germans are Europeans.", "It is near Paris.", "Paris is big.", "We know all the seas.",
    ]  # fmt: skip
    schemas = [
        Schema(f"s{i}", (_problem(f"s{i}a", (t[:-1] + " ", "."), [["x"], ["y"]], 0, i),))
        for i, t in enumerate(texts)
    ]
    cased = dyads.casing(schemas)
    lowered = {t.split()[0]: cased.lowers(t) for t in texts}
    assert lowered == {
        "Hudson": False,  # starts a multi-word name
        "Ocean": True,  # capitalised only inside "Atlantic Ocean"
        "The": True,  # written in lower case elsewhere
        "All": True,
        "It": True,
        "Paris": False,  # capitalised after a lower-case word
        "We": True,
    }
    assert not dyads.casing(schemas, keep_capital={"Ocean"}).lowers("Ocean water is salty.")


def test_pair_with_inverted(data_dir):
    originals, inverted = catalog.load("reid250"), catalog.load("reid250_inverted")
    pairs = dyads.pair_with_inverted(originals, inverted)
    assert len(pairs) == 125
    assert all(o.number == i.number and o.kind == i.kind for o, i in pairs)
    assert sum(o.kind == "t" for o, _ in pairs) == 50
    with pytest.raises(dyads.DyadError, match="has no inverted schema"):
        dyads.pair_with_inverted(originals, inverted[:-1])
    with pytest.raises(dyads.DyadError, match="inverted schemas without an original"):
        dyads.pair_with_inverted(originals[1:], inverted)
    wrong = Schema(inverted[0].uid, inverted[0].problems, "t", inverted[0].number)
    with pytest.raises(dyads.DyadError, match="does not match inverted schema s1"):
        dyads.pair_with_inverted(originals, [wrong, *inverted[1:]])


def test_generated_dyads_by_name(data_dir, caplog):
    name = catalog.dyads_name("reid250", "by_key", "That SCHEMA is [true ~ false].")
    assert name == "dyads:reid250:by_key:That SCHEMA is [true ~ false]."
    catalog._load_cached.cache_clear()  # the log line comes when the dyads are made
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        schemas = catalog.load(name)
    assert (len(schemas), *count(schemas)) == (125, 500, 250)
    assert "125 dyads of reid250 in wrapper 'That SCHEMA is [true ~ false].', by key" in caplog.text
    assert _solved(schemas[-1].problems[0]) == "That October comes after August is true."
    for bad, message in [
        ("dyads:reid250:by_truth:That SCHEMA is [a ~ b].", "grouping 'by_truth'"),
        ("dyads:nope:by_answer:That SCHEMA is [a ~ b].", "unknown base dataset 'nope'"),
        ("dyads:wsc266:by_key:That SCHEMA is [a ~ b].", "needs the inversion of wsc266"),
        ("dyads:reid250:by_answer", "write dyads:<base>:<grouping>:<wrapper>"),
        ("reid251", "unknown wsc_tasks dataset 'reid251'"),
    ]:
        with pytest.raises(KeyError, match=message.replace("[", r"\[")):
            catalog.load(bad)
    with pytest.raises(dyads.DyadError, match="one truth pair in brackets"):
        catalog.load("dyads:reid250:by_answer:That SCHEMA is true.")
