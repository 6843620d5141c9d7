"""Parsers: every published file parses to its documented size; bad rows name file and line."""

from __future__ import annotations

import pytest

from wsc_tasks.data import parsers
from wsc_tasks.data.problems import Problem, Schema

MALER_SIZES = {  # file: (schemas, problems), data/README.md and thesis chapter 3
    "wsc266/wsc273.txt": (136, 273),
    "wsc266/wsc266.txt": (133, 266),
    "wsc266/wsc266_associative.txt": (25, 50),
    "wsc266/wsc266_nonassociative.txt": (108, 216),
    "wsc266/wsc266_associative_nocands.txt": (25, 50),
    "wsc266/wsc266_nonassociative_nocands.txt": (108, 216),
    "wsc266/wsc266_switched.txt": (70, 140),
    "wsc266/wsc266_adjectival.txt": (87, 174),
    "wsc266/wsc266_unbalanced.txt": (133, 266),
    "wsc266/wsc266_inverted.txt": (133, 266),
    "reid250/reid250.txt": (125, 250),
    "reid250/reid250-inverted.txt": (125, 250),
    "reid250/reid250x2-v1-by-answer.txt": (125, 500),
    "reid250/reid250x2-v1-by-key.txt": (125, 500),
    "reid250/reid250x2-v1-by-boolean.txt": (125, 500),
}


@pytest.mark.parametrize("name", sorted(MALER_SIZES))
def test_every_maler_file_parses_to_its_size(data_dir, name):
    parsed = parsers.parse_maler(data_dir / "maler" / name)
    assert (len(parsed.schemas), sum(len(s.problems) for s in parsed.schemas)) == MALER_SIZES[name]


def test_maler_line_fields(data_dir):
    parsed = parsers.parse_maler(data_dir / "maler/wsc266/wsc266.txt")
    assert parsed.mode == "by answer"
    assert parsed.header["perturbation"] == "original"
    first = parsed.schemas[0].problems[0]
    assert first.segments == (
        "The city councilmen refused the demonstrators a permit because ",
        " feared violence.",
    )
    assert first.options == (("the city councilmen",), ("the demonstrators",))
    assert first.label == 0 and first.number == 1
    assert first.fill(1) == (
        "The city councilmen refused the demonstrators a permit because the demonstrators "
        "feared violence."
    )
    assert first.source.endswith("wsc266.txt:3")


def test_wsc273_triple_schema_and_groups(data_dir):
    schemas = parsers.parse_maler(data_dir / "maler/wsc266/wsc273.txt").schemas
    triple = [s for s in schemas if len(s.problems) == 3]
    assert len(triple) == 1
    assert [p.number for p in triple[0].problems] == [253, 254, 255]
    assert triple[0].groups == ((0, 1), (1, 2))  # thesis §3.7.6


def test_two_blank_problems(data_dir):
    schemas = parsers.parse_maler(data_dir / "maler/reid250/reid250-inverted.txt").schemas
    two = [p for s in schemas for p in s.problems if p.n_blanks == 2]
    assert len(two) == 100  # the 50 transposition schemas, inverted (thesis §3.5.5)
    problem = next(p for p in two if p.segments == ("All ", " are ", "."))
    assert problem.options == (("oranges", "fruit"), ("fruit", "oranges"))
    assert (problem.fill(0), problem.fill(1)) == (
        "All oranges are fruit.",
        "All fruit are oranges.",
    )


def _write(tmp_path, lines):
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


HEAD = ["schema type: Winograd; dataset name: x", "by answer"]
GOOD = "w/  1/ a/  1/   1/   1: A *target* b.&x&y&0"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("w/  1/ a/  1/   2/   2: no blank here.&x&y&1", "expected one"),
        ("w/  1/ b/  1/   2/   2: A *target* b.&x&y&2", "label must be 0 or 1"),
        ("w/  1/ b/  1/   2/   2: A *target* b.&x&y", "expected text&option&option&label"),
        ("w/  1 b/  1/   2/   2: A *target* b.&x&y&1", "not 'type/schema"),
        ("w/  1/ b/  1/   2/   2: A *target* b *target2*.&x&y&1", "fillers"),
    ],
)
def test_malformed_maler_line_names_file_and_line(tmp_path, bad, message):
    path = _write(tmp_path, [*HEAD, GOOD, bad])
    with pytest.raises(parsers.ParseError, match=rf"bad.txt:4: .*{message}"):
        parsers.parse_maler(path)


def test_bad_mode_line(tmp_path):
    path = _write(tmp_path, [HEAD[0], "by magic", GOOD])
    with pytest.raises(parsers.ParseError, match="bad.txt:2: mode line"):
        parsers.parse_maler(path)


def test_winogrande_parse_and_twins(data_dir):
    problems = parsers.parse_winogrande(data_dir / "elazar/winogrande/dev.jsonl")
    assert len(problems) == 1267
    schemas = parsers.group_twins(problems)
    assert sum(len(s.problems) == 2 for s in schemas) == 284
    assert sum(len(s.problems) == 1 for s in schemas) == 699
    first = problems[0]
    assert first.segments[0] == "Sarah was a much better surgeon than Maria so "
    assert first.options == (("Sarah",), ("Maria",)) and first.label == 1


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"qID": "a-1", "sentence": "x _ y", "option1": "p"', "invalid JSON"),
        ('{"qID": "a-1", "sentence": "x _ y", "option1": "p", "option2": "q"}', "missing field"),
        (
            '{"qID": "a-1", "sentence": "x y", "option1": "p", "option2": "q", "answer": "1"}',
            "exactly one '_'",
        ),
        (
            '{"qID": "a-1", "sentence": "x _ y", "option1": "p", "option2": "q", "answer": "3"}',
            "answer must be",
        ),
    ],
)
def test_malformed_winogrande_line(tmp_path, line, message):
    good = '{"qID": "b-1", "sentence": "x _ y", "option1": "p", "option2": "q", "answer": "2"}'
    path = tmp_path / "dev.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(parsers.ParseError, match=rf"dev.jsonl:2: .*{message}"):
        parsers.parse_winogrande(path)


def test_raw_wsc273_matches_thesis_preprocessing(data_dir):
    raw = parsers.parse_wsc273_raw(data_dir / "winowhy/winowhy.json")
    thesis = parsers.parse_maler(data_dir / "maler/wsc266/wsc273.txt").schemas
    assert len(raw) == 136 and [len(s.problems) for s in raw] == [len(s.problems) for s in thesis]
    pairs = zip(
        (p for s in raw for p in s.problems), (p for s in thesis for p in s.problems), strict=True
    )
    differing = [
        a.number
        for a, b in pairs
        if (a.fill(0), a.fill(1), a.label) != (b.fill(0), b.fill(1), b.label)
    ]
    # The thesis also corrected the spelling of 'Kamchatka' in 171-172 (§3.3.8): not whitespace,
    # case or possessives, which are all the raw parser normalises.
    assert differing == [171, 172]


def test_schema_doc_round_trip(data_dir):
    for schema in parsers.parse_maler(data_dir / "maler/reid250/reid250-inverted.txt").schemas[:60]:
        assert Schema.from_doc(schema.to_doc()) == schema


def test_problem_validation():
    with pytest.raises(ValueError, match="fillers"):
        Problem(uid="x", segments=("a ", " b"), options=(("x", "y"), ("z",)), label=0)
    with pytest.raises(ValueError, match="label"):
        Problem(uid="x", segments=("a ", " b"), options=(("x",), ("z",)), label=2)


_WINOGRANDE_ROW = (
    '{"qID": "q-1", "sentence": "Ann asked Mary because _ knew.", "option1": "Ann", '
    '"option2": "Mary", "answer": "2"}\n'
)
_MALER_TEXT = (
    "source: mine\nby answer\n"
    "w/  1/ a/  1/   1/   1: Ann asked Mary because *target* knew.&Ann&Mary&1\n"
)


@pytest.mark.parametrize(
    "parse,text", [(parsers.parse_winogrande, _WINOGRANDE_ROW), (parsers.parse_maler, _MALER_TEXT)]
)
def test_one_encoding_rule_for_both_formats(parse, text, tmp_path):
    """UTF-8 with or without a byte-order mark reads the same in both formats (before, the
    ``.txt`` kept it in its first header key and the ``.jsonl`` failed on it); any other encoding
    names the file, line and byte offset; an empty file is an error (before: "0 problems")."""
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    plain.write_bytes(text.encode("utf-8"))
    marked.write_bytes(parsers.UTF8_BOM + text.replace("Mary", "Marié").encode("utf-8"))
    plain_parsed, marked_parsed = parse(plain), parse(marked)
    assert repr(plain_parsed).replace("Mary", "Marié").replace("plain", "marked") == repr(
        marked_parsed
    )
    latin = tmp_path / "latin"
    latin.write_bytes(text.replace("Mary", "Marié").encode("latin-1"))
    offset = text.encode("utf-8").index(b"Mary") + 4
    line = text[:offset].count("\n") + 1
    with pytest.raises(
        parsers.ParseError,
        match=f"^{latin}:{line}: not UTF-8: byte 0xe9 at offset {offset}; save the file as UTF-8$",
    ):
        parse(latin)
    wide = tmp_path / "wide"
    wide.write_bytes(text.encode("utf-16"))
    with pytest.raises(parsers.ParseError, match=f"^{wide}:1: UTF-16 text .* at offset 0;"):
        parse(wide)
    for content in (b"", b"\n\n", parsers.UTF8_BOM):
        empty = tmp_path / "empty"
        empty.write_bytes(content)
        with pytest.raises(parsers.ParseError, match=f"^{empty}: empty file: no problems in it$"):
            parse(empty)
