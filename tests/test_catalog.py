"""Every task's dataset: its size, and the counts of the derived control baselines."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_reid import SIZES as REID_SIZES
from test_zeroshot import SIZES as ZEROSHOT_SIZES

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import count

SIZES = {  # name: (documents, problems, schema groups)
    "wsc273_schemas": (136, 273, 137),
    "wsc266": (133, 266, 133),
    "wsc266_associative": (25, 50, 25),
    "wsc266_nonassociative": (108, 216, 108),
    "wsc266_switched": (70, 140, 70),
    "wsc266_adjectival": (87, 174, 87),
    "wsc266_unbalanced": (133, 266, 133),
    "wsc266_inverted": (133, 266, 133),
    "wsc266_associative_nocands": (24, 48, 24),  # the file's 25 less w24 ("pin" left)
    "wsc266_nonassociative_nocands": (106, 212, 106),  # 108 less w39 ("mouse hole"), w73 ("coffee")
    "wsc273_nocands": (120, 241, 121),
    "wsc273_partsent": (122, 245, 123),  # "Dr. Adams" no longer a cut (#249/#250)
    "winogrande_dev": (983, 1267, 284),
    "winogrande_twins": (284, 568, 284),
    "winogrande_nocands": (275, 550, 275),  # 3 pairs keep a candidate word: dropped
    "winogrande_partsent": (281, 562, 281),
    "winogrande_switched": (273, 546, 273),
    **REID_SIZES,  # tests/test_reid.py
    **ZEROSHOT_SIZES,  # tests/test_zeroshot.py
}


def test_every_dataset_without_a_declared_size_has_its_size_here():
    """A dataset built from a file declares its size in the catalog (checked on every load); a
    derived one declares none, so its size is pinned here."""
    assert set(SIZES) <= set(catalog.SPECS)
    assert {n for n, spec in catalog.SPECS.items() if spec.expected is None} <= set(SIZES)


@pytest.mark.parametrize("name", sorted(catalog.SPECS))
def test_dataset_sizes(data_dir, name):
    schemas = catalog.load(name)
    if name in SIZES:
        assert (len(schemas), *count(schemas)) == SIZES[name]
    else:  # a file without exclusions: the size the catalog declares is the size loaded
        assert not catalog.SPECS[name].excluded
        assert count(schemas) == catalog.SPECS[name].expected


def test_dropped_schemas_are_logged(data_dir, caplog):
    catalog._load_cached.cache_clear()
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        catalog.load("winogrande_nocands")
    text = caplog.text
    assert "nocands of winogrande_twins: dropped 6 schema(s): candidate not found in text" in text
    assert "kept 275 of 284 schemas (550 problems, 275 schema groups)" in text


def test_excluded_schemas_are_dropped_with_their_reason(data_dir, caplog):
    assert {name for name, spec in catalog.SPECS.items() if spec.excluded} == {
        "wsc266_associative_nocands",
        "wsc266_nonassociative_nocands",
    }
    catalog._load_cached.cache_clear()
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        kept = catalog.load("wsc266_nonassociative_nocands")
    text = caplog.text
    assert (
        "wsc266_nonassociative_nocands: dropped 1 schema(s) excluded in the catalog: w39: "
        "'mouse' cut out of 'mouse hole'" in text
    )
    assert "w73: candidate 'coffee' left in the key" in text
    assert "kept 106 of 108 schemas (212 problems, 106 schema groups); 2 excluded" in text
    dropped = catalog.excluded("wsc266_nonassociative_nocands")
    assert [(s.uid, [p.number for p in s.problems]) for s, _ in dropped] == [
        ("w39", [89, 90]),  # WSC266 numbering: WSC273 #89/#90
        ("w73", [193, 194]),  # WSC273 #195/#196
    ]
    assert not {s.uid for s, _ in dropped} & {s.uid for s in kept}
    assert catalog.excluded("wsc266") == []


def test_an_exclusion_naming_no_schema_is_an_error(data_dir, monkeypatch):
    spec = catalog.SPECS["wsc266_associative_nocands"]
    wrong = replace(spec, excluded={"w99": "x"})
    monkeypatch.setitem(catalog.SPECS, spec.name, wrong)
    catalog._load_cached.cache_clear()
    with pytest.raises(ValueError, match=r"excluded schema\(s\) \['w99'\] not in the file"):
        catalog.load(spec.name)
    catalog._load_cached.cache_clear()


def test_size_mismatch_is_an_error(monkeypatch):
    spec = catalog.SPECS["wsc266"]
    monkeypatch.setitem(catalog.SPECS, "wsc266", replace(spec, expected=(999, 1)))
    catalog._load_cached.cache_clear()
    with pytest.raises(
        ValueError, match="wsc266: parsed 266 problems in 133 schema groups, expected 999"
    ):
        catalog.load("wsc266")
    catalog._load_cached.cache_clear()
