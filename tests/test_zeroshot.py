"""Zero-shot formulation of Elazar et al. 2021 (§6.1): the transformation on hand-made twins, the
datasets' sizes and discard counts, agreement with Elazar's own file, and tiny models of the three
families through lm-eval (masked LMs: one mask exactly when the key word is one token)."""

from __future__ import annotations

import json
import logging
import re

import lm_eval
import pytest
from test_lm_eval import _recompute

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Problem, Schema, count
from wsc_tasks.data.zeroshot import zero_shot_pair, zero_shot_schemas
from wsc_tasks.models import mlm
from wsc_tasks.scoring import families, methods

ALL = {"metrics": "all"}  # every per-method metric aggregated, not only the headline

log = logging.getLogger(__name__)


def _twin(sentence: str, a: str, b: str, label: int, uid: str = "t") -> Problem:
    before, after = sentence.split("_")
    return Problem(uid=uid, segments=(before, after), options=((a,), (b,)), label=label)


TROPHY = "The trophy doesn't fit into the brown suitcase because _ is too {}."


def test_elazars_example():
    first = _twin(TROPHY.format("large"), "the trophy", "the suitcase", 0, "a")
    second = _twin(TROPHY.format("small"), "the trophy", "the suitcase", 1, "b")
    made = zero_shot_pair(first, second)
    assert [p.segments for p in made] == [
        ("The trophy doesn't fit into the brown suitcase because the trophy is too ", "."),
        ("The trophy doesn't fit into the brown suitcase because the suitcase is too ", "."),
    ]
    assert [p.options for p in made] == [(("large",), ("small",))] * 2
    assert [p.label for p in made] == [0, 1]
    assert [p.uid for p in made] == ["a~zeroshot", "b~zeroshot"]


def test_key_word_found_by_position_not_by_string():
    # "more" occurs twice: only the differing one is blanked (Elazar's str.replace drops these)
    first = _twin("Ann ate more than X because _ had more time.", "Ann", "Bob", 0)
    second = _twin("Ann ate more than X because _ had less time.", "Ann", "Bob", 1)
    made = zero_shot_pair(first, second)
    assert made[0].segments == ("Ann ate more than X because Ann had ", " time.")
    assert made[1].segments == ("Ann ate more than X because Bob had ", " time.")
    assert made[0].options == (("more",), ("less",))


def test_each_twin_keeps_its_punctuation_and_a_final_period_is_added():
    first = _twin("The father carried the boy in _ arms", "the father's", "the boy's", 0)
    second = _twin("The father carried the boy in _ bassinet.", "the father's", "the boy's", 1)
    made = zero_shot_pair(first, second)
    assert made[0].segments == ("The father carried the boy in the father's ", ".")
    assert made[1].segments == ("The father carried the boy in the boy's ", ".")
    assert made[0].options == (("arms",), ("bassinet",))


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        ("He gave it to _ even though he was eager.", "He gave it to _ because he was eager.",
         "special words differ by more than one word"),
        ("He gave it to _ because he was eager.", "He gave it to _ because he was not eager.",
         "special words differ by more than one word"),
        ("The _ was big and red.", "The _ was small and blue.",
         "twins differ in more than one place"),
        ("The _ was big.", "The _ was big.", "twins have the same text"),
        ("The _'s was big.", "The _. was big.", "the blank is inside the special word"),
        ("The _ was big.", "The _ was big!", "special words differ only in punctuation"),
    ],
)  # fmt: skip
def test_discarded_twins_say_why(first, second, reason):
    assert zero_shot_pair(_twin(first, "A", "B", 0), _twin(second, "A", "B", 1)) == reason


def test_three_problem_schema_gives_each_group_and_singletons_have_no_twin():
    problems = tuple(
        _twin(f"Tom gave Ed the box because _ was {w}.", "Tom", "Ed", label, uid)
        for uid, w, label in (("a", "big", 0), ("b", "small", 1), ("c", "tiny", 1))
    )
    triple = Schema(uid="s", problems=problems)
    single = Schema(uid="x", problems=problems[:1])
    kept, dropped = zero_shot_schemas([triple, single])
    assert [s.uid for s in kept] == ["s~01~zeroshot", "s~12~zeroshot"]
    assert [s.problems[0].options for s in kept] == [
        (("big",), ("small",)),
        (("small",), ("tiny",)),
    ]
    assert dropped == {"no twin": 1}


SIZES = {"wsc273_zeroshot": (113, 226, 113), "winogrande_zeroshot": (182, 364, 182)}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_sizes_and_logged_discards(data_dir, caplog, name):
    catalog._load_cached.cache_clear()
    with caplog.at_level("INFO", logger="lm_eval.wsc_tasks"):
        schemas = catalog.load(name)
    assert (len(schemas), *count(schemas)) == SIZES[name]
    expected = {
        "wsc273_zeroshot": [
            "zero-shot of wsc273_schemas: discarded 23 twin pair(s): special words differ by "
            "more than one word",
            "zero-shot of wsc273_schemas: discarded 1 twin pair(s): twins differ in more than "
            "one place",
            "kept 113 of 137 twin pairs (226 problems)",
        ],
        "winogrande_zeroshot": [
            "zero-shot of winogrande_twins: discarded 55 twin pair(s): special words differ by "
            "more than one word",
            "zero-shot of winogrande_twins: discarded 47 twin pair(s): twins differ in more than "
            "one place",
            "kept 182 of 284 twin pairs (364 problems)",
        ],
    }[name]
    for line in expected:
        assert line in caplog.text


def _normalise(text: str) -> str:
    text = re.sub(r" (?=[.,;:!?'])", "", " ".join(text.split()).lower())
    return text.rstrip(".")


def test_agreement_with_elazars_zero_shot_file(data_dir):
    """Ours 182 pairs, theirs 177; 172 pairs are the same, all 172 character for character.

    Theirs only (5): pairs of different lengths that their word-by-word ``zip`` saw as one word
    ("brand new" / "used", "[MASK] the fridge" / "[MASK]"), which the rule discards. Ours only
    (10): pairs whose key word also occurs elsewhere in the sentence or inside another word
    ("more … more", "no" in "knowledge"), which their ``str.replace`` check drops; we blank the
    key word by position."""
    ours = set()
    for schema in catalog.load("winogrande_zeroshot"):
        first, second = schema.problems
        ours.add(
            frozenset(
                (p.segments[0] + "[MASK]" + p.segments[1], p.options[p.label][0])
                for p in (first, second)
            )
        )
    theirs = set()
    path = data_dir / "elazar/winohard/transformed/zero_shot/dev.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        theirs.add(frozenset([(row["s1"], row["ans1"]), (row["s2"], row["ans2"])]))

    def loose(pairs):
        return {frozenset((_normalise(t), a.lower()) for t, a in pair) for pair in pairs}

    def sentences(pairs):
        return {frozenset(_normalise(t) for t, _ in pair) for pair in pairs}

    figures = (
        len(ours),
        len(theirs),
        len(sentences(ours) & sentences(theirs)),
        len(ours & theirs),
        len(loose(ours) & loose(theirs)),
    )
    log.warning(
        f"zero-shot: ours, theirs, same sentences, identical, identical up to case: {figures}"
    )
    assert figures == (182, 177, 172, 172, 172)


@pytest.mark.slow
def test_causal_suite_through_lm_eval(tiny_gpt2_dir, data_dir, task_manager):
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_gpt2_dir}",
        tasks=["zeroshot_suite"],
        task_manager=task_manager(
            **ALL, pretrained=str(tiny_gpt2_dir), scoring="partial", headline="partial"
        ),
        samples={task: list(range(0, 100, 4)) for task in SIZES},  # 25 pairs of each
        device="cpu",
        batch_size=16,
        log_samples=True,
    )
    results = out["results"]
    for task in SIZES:
        acc, schema_acc, *_ = _recompute(out["samples"][task])
        assert results[task]["acc,none"] == pytest.approx(acc, abs=1e-12)
        assert results[task]["schema_acc,none"] == pytest.approx(schema_acc, abs=1e-12)
        assert (results[task]["n_problems,none"], results[task]["n_schemas,none"]) == (50, 25)
    for metric in ("acc,none", "schema_acc,none"):
        mean = sum(results[t][metric] for t in SIZES) / 2
        assert results["zeroshot_suite"][metric] == pytest.approx(mean, abs=1e-12)


@pytest.mark.slow
def test_masked_lm_one_mask_for_one_token_key_words(tiny_roberta_dir, data_dir, task_manager):
    lm = mlm.MaskedLM(pretrained=str(tiny_roberta_dir), device="cpu", batch_size=16)
    task = "winogrande_zeroshot"
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=[task],
        task_manager=task_manager(**ALL, pretrained=str(tiny_roberta_dir), scoring="multi_mask"),
        samples={task: list(range(12))},
        log_samples=True,
    )
    method = families.FAMILIES["masked"].methods["multi_mask"]
    single = right = total = 0
    for sample in out["samples"][task]:
        results = {
            ("mlm_score", (a[0], tuple(tuple(s) for s in a[1]), a[2])): mlm.MaskedScore(*r[0])
            for a, r in zip(sample["arguments"], sample["resps"], strict=True)
        }
        for problem in Schema.from_doc(sample["doc"]).problems:
            for option in (0, 1):
                key = method.requests(problem, methods.Setup())[option][0]
                _, answer, _ = mlm.plan_jobs(lm.tokenizer, *key[1])
                one_token = len(lm.tokenizer.tokenize(" " + problem.options[option][0])) == 1
                assert results[key].answer_n == len(answer)
                assert (len(answer) == 1) == one_token
                single += one_token
            chosen = method.predict(problem, results, methods.Setup())
            right, total = right + (chosen == problem.label), total + 1
    assert single > 0
    result = out["results"][task]
    assert result["acc,none"] == pytest.approx(right / total, abs=1e-12)
    assert "acc_equal_len,none" in result and "schema_acc_equal_len,none" in result


@pytest.mark.slow
def test_seq2seq_runs_on_the_zero_shot_form(tiny_t5_dir, data_dir, task_manager):
    task = "wsc273_zeroshot"
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_t5_dir}",
        tasks=[task],
        task_manager=task_manager(**ALL, pretrained=str(tiny_t5_dir), scoring="masked_prefix_mean"),
        samples={task: [0, 1, 2]},
        device="cpu",
        batch_size=8,
        log_samples=True,
    )
    sample = out["samples"][task][0]
    assert sample["arguments"][0][1] == "<extra_id_0> feared <extra_id_1>"
    assert out["results"][task]["n_problems,none"] == 6
