"""Token facts with GPT-2's real tokenizer: the equal-length shares of thesis Table 3.7."""

from __future__ import annotations

import dataclasses

import pytest

from wsc_tasks.data import catalog
from wsc_tasks.scoring.tokens import (
    RequestMismatch,
    TokenCounter,
    check_request,
    counter_from_metadata,
)


@pytest.fixture(scope="module")
def counter(gpt2_tok) -> TokenCounter:
    return TokenCounter(gpt2_tok)


def _shares(counter, name):
    problems = [p for s in catalog.load(name) for p in s.problems]
    in_context = sum(len(set(counter.answer_lengths(p))) == 1 for p in problems)
    # each option alone, without the problem's context (the thesis's second column)
    alone = [{len(counter.encode(f, False)) for f, *_ in p.options} for p in problems]
    without = sum(len(lengths) == 1 for lengths in alone)
    return round(in_context / len(problems), 3), round(without / len(problems), 3)


@pytest.mark.parametrize(
    "name, in_context, without",  # thesis Table 3.7, GPT-2 and RoBERTa column
    [
        ("wsc266", 0.684, 0.624),
        ("wsc273_schemas", 0.681, 0.615),
        ("wsc266_switched", 0.829, 0.671),
        ("wsc266_inverted", 0.789, 0.511),
        ("wsc266_adjectival", 0.897, 0.897),
        ("wsc266_unbalanced", 0.0, 0.0),
    ],
)
def test_equal_length_shares_match_thesis_table_3_7(counter, data_dir, name, in_context, without):
    assert _shares(counter, name) == (in_context, without)


def test_split_mirrors_lm_eval(counter):
    # eq. 3.2: "The trophy" -> [464, 16383]; " the trophy" -> [262, 16383]
    assert counter.split("The trophy doesn't fit because", " the trophy is too small.")[1][:2] == [
        262,
        16383,
    ]
    assert counter.split("", "The trophy")[1] == [464, 16383]
    assert counter.first_token_text("The trophy is small.") == "The"


@pytest.mark.parametrize(
    "name, share",  # thesis Table 3.8: answer placeholder second-last (one token follows)
    [
        ("wsc273_schemas", 0.073),
        ("wsc266", 0.068),
        ("wsc266_inverted", 0.489),
        ("wsc266_switched", 0.043),
        ("wsc266_adjectival", 0.057),
        ("wsc266_nonassociative_nocands", 0.056),
        ("wsc266_associative", 0.120),
    ],
)
def test_blank_at_end_shares_match_thesis_table_3_8(counter, data_dir, name, share):
    # the thesis counted its files whole: the schemas the catalog excludes count here too
    schemas = catalog.load(name) + [s for s, _ in catalog.excluded(name)]
    problems = [p for s in schemas for p in s.problems]
    at_end = sum(counter.tokens_after_blank(p, 0) <= 1 for p in problems)
    assert round(at_end / len(problems), 3) == share


def test_model_input_follows_lm_evals_rules(counter):
    # empty context: GPT-2's prefix token <|endoftext|> (50256), then the text's own tokens
    assert counter.model_input("", "The trophy") == ([50256], [464, 16383])
    # a context's trailing space moves into the continuation: " trophy" stays one token
    assert counter.model_input("The ", "trophy") == ([464], [16383])
    # a lone-space context leaves nothing: lm-eval would fail on it
    assert counter.model_input(" ", "iced") == ([], [220, 3711])


def test_check_request_names_what_goes_wrong(counter):
    check_request(counter, ("loglikelihood", ("The", " trophy")), ([464], [16383]))
    with pytest.raises(RequestMismatch, match="empty context"):
        check_request(counter, ("loglikelihood", (" ", "iced")), ([220], [3711]))
    # "The tro" + "phy is small.": "The tro" is not a prefix of the sentence's tokens
    sentence = "The trophy is small."
    with pytest.raises(RequestMismatch, match="the formula means"):
        check_request(
            counter,
            ("loglikelihood", ("The tro", "phy is small.")),
            counter.intended_split(sentence, 1),
        )


def test_shared_counters_are_built_complete_and_never_changed(tiny_gpt2_dir):
    """Every task of a run shares one counter per tokenizer and encoding rule: a task of an
    encoder–decoder gets its own (contexts encoded alone) instead of changing the shared one."""
    meta = {"pretrained": str(tiny_gpt2_dir)}
    causal = counter_from_metadata(meta)
    assert counter_from_metadata(meta) is causal and not causal.seq2seq
    seq2seq = counter_from_metadata(meta, seq2seq=True)
    assert seq2seq is not causal and seq2seq.seq2seq and not causal.seq2seq
    # "I ate" + "n apple": a causal model reads "I aten apple" whole, an encoder–decoder "n apple"
    assert causal.model_input("I ate", "n apple") == ([40, 15063], [268, 17180])
    assert seq2seq.model_input("I ate", "n apple") == ([40, 15063], [77, 17180])
    with pytest.raises(dataclasses.FrozenInstanceError):
        causal.seq2seq = True  # type: ignore[misc]
