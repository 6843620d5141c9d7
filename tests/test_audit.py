"""The control-baseline audit: its checks on hand-made cases, and its verdict on every dataset."""

from __future__ import annotations

from collections import Counter

from wsc_tasks import cli
from wsc_tasks.data import audit, catalog
from wsc_tasks.data.problems import Problem


def _problem(sentence: str, a: str, b: str) -> Problem:
    before, after = sentence.split("_")
    return Problem(uid="t", segments=(before, after), options=((a,), (b,)), label=0)


TROPHY = _problem(
    "The trophy doesn't fit into the brown suitcase because _ is too large.",
    "the trophy",
    "the suitcase",
)


def test_leaks_name_every_form_of_a_candidate_word():
    control = _problem("Doesn't fit into the suitcases because _ is too large.", "x", "y")
    assert audit.leaks(TROPHY, control) == ["suitcases"]
    clean = _problem("Doesn't fit into because _ is too large.", "x", "y")
    assert audit.leaks(TROPHY, clean) == []


def test_deleted_words_must_be_mentions():
    good = _problem("Doesn't fit into because _ is too large.", "x", "y")
    assert audit.non_mention_deletions(TROPHY, good) == ([], ["brown"])
    # WSC273 #99 before the fix: "the lock with" went with the mention "the key"
    lock = _problem("I opened the lock with the key, and _ broke.", "the key", "the gum")
    assert audit.non_mention_deletions(lock, _problem("I opened, and _ broke.", "x", "y")) == (
        ["the lock with the key"],
        [],
    )
    # two adjacent mentions of the two candidates are fine
    ball = _problem("I gave the boy the red ball, and _ smiled.", "the boy", "the ball")
    assert audit.non_mention_deletions(ball, _problem("I gave, and _ smiled.", "x", "y")) == (
        [],
        ["red"],
    )
    hole = _problem("The cat sat by the mouse hole, and _ left.", "the cat", "the mouse")
    assert audit.non_mention_deletions(hole, _problem("Sat by hole, and _ left.", "x", "y")) == (
        ["the mouse"],
        [],
    )
    changed = _problem("Doesn't fit in because _ is too large.", "x", "y")
    assert audit.non_mention_deletions(TROPHY, changed)[0] == ["words added or changed"]


def test_part_sent_faults():
    doctor = _problem("Dr. Adams informed Kate that _ had cancer.", "Dr. Adams", "Kate")
    wrong = _problem("Adams informed Kate that _ had cancer.", "x", "y")
    assert audit.part_sent_faults(doctor, wrong) == ["cut after an abbreviation: 'Dr.'"]
    kept = _problem("He left, so _ cried.", "x", "y")
    assert audit.part_sent_faults(kept, _problem("So _ cried.", "x", "y")) == []
    assert audit.part_sent_faults(kept, _problem("He left, so _ cried.", "x", "y")) == [
        "marker kept before the blank: 'He left, so '"
    ]
    number = _problem("It cost 20,000 _ said.", "x", "y")
    assert audit.part_sent_faults(number, _problem("000 _ said.", "x", "y")) == [
        "cut inside a number: 'It cost 20,'"
    ]


EXPECTED = {  # name: (kept schemas, source schemas, problems, dropped by reason)
    "wsc273_nocands": (
        120,
        136,
        241,
        {
            "candidate not found in text": 14,
            "a candidate is mentioned in the words the twins differ in": 1,  # #195/#196
            "a candidate word modifies another noun (compound)": 1,  # #89/#90
        },
    ),
    "wsc273_partsent": (122, 136, 245, {"no marker before the blank": 14}),
    "winogrande_nocands": (
        275,
        284,
        550,
        {
            "candidate not found in text": 6,
            "a candidate word is left in another form or use": 2,
            "a candidate is mentioned in the words the twins differ in": 1,
        },
    ),
    "winogrande_partsent": (281, 284, 562, {"no marker before the blank": 3}),
    "wsc266_associative_nocands": (
        24,
        25,
        48,
        {
            "w24 (excluded in the catalog): candidate 'pin' left in the text ('When I pulled the "
            "pin out', WSC273 #193/#194; audit: leak)": 1,
        },
    ),
    "wsc266_nonassociative_nocands": (
        106,
        108,
        212,
        {
            "w39 (excluded in the catalog): 'mouse' cut out of 'mouse hole' ('Was lying by hole', "
            "WSC273 #89/#90; audit: non-mention deletion)": 1,
            "w73 (excluded in the catalog): candidate 'coffee' left in the key ('_ got full of "
            "coffee', WSC273 #195/#196; audit: leak)": 1,
        },
    ),
}
# Defects of the thesis's hand-made files, which the catalog excludes (catalog.SPECS[…].excluded):
# "I stuck a pin through" keeps a candidate (WSC273 #193/#194), "full of coffee" keeps one in the
# key (#195), and "mouse" is cut out of "mouse hole" (#89/#90).
THESIS_DEFECTS = {
    "wsc266_associative_nocands": [("w24a", "leak", "pin"), ("w24b", "leak", "pin")],
    "wsc266_nonassociative_nocands": [
        ("w39a", "non-mention deletion", "the mouse"),
        ("w39b", "non-mention deletion", "the mouse"),
        ("w73a", "leak", "coffee"),
    ],
}


def test_audit_of_every_control_dataset(data_dir):
    audits = {a.name: a for a in audit.audit_catalog()}
    assert set(audits) == set(EXPECTED)
    for name, (kept, source, problems, dropped) in EXPECTED.items():
        a = audits[name]
        assert (a.kept_schemas, a.source_schemas, a.kept_problems) == (kept, source, problems)
        assert a.dropped == Counter(dropped), name
        assert a.faults == [], name
    assert audit.failures(list(audits.values())) == 0
    # the modifiers our no-cands removes with a mention, reviewed: all adjectives or noun adjuncts
    assert set(audits["wsc273_nocands"].modifiers) == {
        "brown",
        "old",
        "outdoor",
        "sleeping",
        "thick",
        "toy",
    }
    assert not audits["winogrande_nocands"].modifiers  # bare candidates keep the text's determiner


def test_the_excluded_schemas_fail_the_audit_as_their_reason_says(data_dir):
    """Each exclusion is still needed: audited, the excluded schema shows the defect it names."""
    for name, defects in THESIS_DEFECTS.items():
        excluded = catalog.excluded_pairs(name)
        found = audit.audit_pairs(
            name, "nocands", "wsc266", [], [(o, t) for o, t, _ in excluded], Counter()
        )
        assert sorted(found.faults) == sorted(defects), name
        for uid, check, word in defects:
            reason = catalog.SPECS[name].excluded[uid[:-1]]
            assert f"audit: {check}" in reason and word.split()[-1] in reason, (uid, reason)


def test_data_audit_prints_the_table(capsys, data_dir):
    assert cli.main(["data", "audit"]) == 0
    out = capsys.readouterr().out
    assert "wsc273_nocands                 wsc273_schemas       120/136      241      16" in out
    assert "wsc266_nonassociative_nocands  wsc266               106/108      212       2" in out
    assert "leak 0, non-mention deletion 0" in out
    assert "dropped   1 schema(s): a candidate word modifies another noun (compound)" in out
    assert "dropped   1 schema(s): w24 (excluded in the catalog): candidate 'pin'" in out
    assert "FAIL" not in out
    assert out.rstrip().endswith("audit: every check passed")


def test_data_audit_exits_1_on_a_failure(capsys, monkeypatch):
    failed = audit.ControlAudit("x_nocands", "nocands", "x", 1, 1, 2)
    failed.faults.append(("x1a", "leak", "pin"))
    monkeypatch.setattr(audit, "audit_catalog", lambda: [failed])
    assert cli.main(["data", "audit"]) == 1
    out = capsys.readouterr().out
    assert "FAIL leak: x1a: pin" in out and "audit: 1 failed check(s)" in out
