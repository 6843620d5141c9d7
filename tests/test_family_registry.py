"""The model-family registry (``wsc_tasks.scoring.families``): every record is complete and
consistent, detection, planning without a tokenizer, and the refusal of requests a model does not
serve."""

from __future__ import annotations

import pytest
import tiny_models
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from lm_eval.api.registry import get_model
from transformers import BertConfig, GPT2Config, PretrainedConfig, RobertaConfig, T5Config

from wsc_tasks.data.problems import Problem
from wsc_tasks.models import chance, mlm
from wsc_tasks.scoring import families, methods
from wsc_tasks.scoring.tokens import TokenCounter
from wsc_tasks.tasks.schema_tasks import check_metadata

PROBLEM = Problem(
    uid="p",
    segments=("The trophy doesn't fit into the suitcase because ", " is too large."),
    options=(("the trophy",), ("the suitcase",)),
    label=0,
)


@pytest.mark.parametrize("family", families.FAMILIES.values(), ids=list(families.FAMILIES))
def test_every_family_record_is_consistent(family):
    assert families.FAMILIES[family.name] is family
    assert family.methods
    for name, method in family.methods.items():
        assert isinstance(method, methods.ScoringMethod) and method.name == name
    assert family.headline in family.methods
    assert family.token_free in family.methods
    assert not family.methods[family.token_free].needs_tokens  # runs without a tokenizer
    for first, second in family.method_pairs:
        assert first != second and {first, second} <= set(family.methods)
    # what the token-free method and the continuation send is the family's request type
    for per_option in family.methods[family.token_free].requests(PROBLEM, methods.Setup()):
        assert {kind for kind, _ in per_option} == {family.request_type}
    kind, _ = family.continuation.request("Why?", "Because.", None)
    assert kind == family.request_type


def test_one_default_family_and_headline_mapping_names_every_family():
    assert [f.name for f in families.FAMILIES.values() if f.detects is None] == ["causal"]
    with pytest.raises(methods.ScoringError, match=r"mapping causal\|seq2seq\|masked → name"):
        check_metadata("t", {"dataset": "wsc266", "headline": {"bert": "x"}}, {"wsc266": None})


def test_the_model_named_by_each_family_serves_its_request_type():
    for family in families.FAMILIES.values():
        model = get_model(family.model)
        assert getattr(model, family.request_type) is not getattr(LM, family.request_type, None)
    assert "mlm_score" in vars(mlm.MaskedLM)


@pytest.mark.parametrize(
    "config, family",
    [
        (None, "causal"),
        (GPT2Config(), "causal"),
        (T5Config(), "seq2seq"),
        (RobertaConfig(), "masked"),
        (BertConfig(), "masked"),
        (PretrainedConfig(architectures=["FooForMaskedLM"]), "masked"),
        (PretrainedConfig(architectures=["FooForCausalLM"]), "causal"),
    ],
)
def test_detection_from_the_config(config, family):
    assert families.family_of_config(config).name == family


def test_detection_from_the_metadata(tmp_path):
    tiny_models.config_only(tmp_path, "roberta")
    assert families.detect({"pretrained": str(tmp_path)}).name == "masked"
    assert families.detect({}).name == "causal"


def test_plan_without_tokenizer_uses_the_token_free_method():
    plan = families.plan("t", {"headline": {"causal": "full"}})
    assert (plan.family.name, plan.headline, plan.tokens) == ("causal", "partial", None)
    assert [m.name for m in plan.methods] == ["partial"] and plan.method_pairs == ()
    plan = families.plan("t", {"scoring": "partial", "headline": "partial"}, continuation=True)
    assert (plan.family.name, plan.methods, plan.tokens) == ("causal", (), None)


def test_each_method_runs_where_it_says_unless_the_metadata_chooses(monkeypatch):
    """A method of the method-comparison tasks only (``runs_on``) runs by default on their
    datasets alone; ``scoring: all`` and a list of names still choose."""
    from wsc_tasks.scoring import causal

    extra = causal.Causal("extra", formula=causal.FULL)
    assert extra.runs_on == "method_tasks"  # a new method's default
    monkeypatch.setitem(families.FAMILIES["causal"].methods, "extra", extra)
    counter = TokenCounter(tiny_models.gpt2_tokenizer())
    monkeypatch.setattr(families, "load_tokens", lambda task, meta, family: counter)

    def names(**meta):
        return [m.name for m in families.plan("t", meta).methods]

    everywhere = [n for n, m in causal.METHODS.items() if m.runs_on == "every_task"]
    for dataset in methods.METHOD_DATASETS:
        assert "extra" in names(dataset=dataset)
    assert "extra" not in names(dataset="winogrande_dev")
    assert sorted(names(dataset="winogrande_dev")) == sorted(everywhere)
    assert "extra" in names(dataset="winogrande_dev", scoring="all")
    assert names(dataset="wsc266", scoring=["partial"]) == ["smart", "partial"]


def test_plan_refuses_a_method_of_another_family():
    with pytest.raises(methods.ScoringError, match=r"task t, causal model: .*statement.*causal"):
        families.plan("t", {"scoring": ["partial", "statement"]})


def test_continuation_task_of_a_masked_model_loads_no_tokenizer(tmp_path, monkeypatch):
    tiny_models.config_only(tmp_path, "roberta")
    loaded = []
    monkeypatch.setattr(
        families, "counter_from_metadata", lambda meta, seq2seq: loaded.append(meta)
    )
    plan = families.plan("t", {"pretrained": str(tmp_path)}, continuation=True)
    assert (plan.family.name, plan.tokens, loaded) == ("masked", None, [])
    families.plan("t", {"pretrained": str(tmp_path)})  # schema tasks count tokens
    assert loaded == [{"pretrained": str(tmp_path)}]


def test_a_tokenizer_that_cannot_load_is_one_error_naming_the_task(monkeypatch):
    def fail(meta, seq2seq):
        raise OSError("no such file")

    monkeypatch.setattr(families, "counter_from_metadata", fail)
    with pytest.raises(methods.ScoringError, match="task t: could not load the tokenizer of 'x'"):
        families.plan("t", {"tokenizer": "x"}, continuation=True)


def test_a_model_without_the_request_type_refuses_it():
    request = Instance(
        request_type="mlm_score",
        doc={},
        arguments=("a b", ((0, 1),), "statement"),
        idx=0,
        metadata=("wsc266", 0, 1),
    )
    with pytest.raises(
        methods.ScoringError,
        match=r"^task wsc266: the model is a masked language model; ChanceLM does not serve its "
        r"mlm_score requests: run it as --model hf-mlm",
    ):
        chance.ChanceLM().mlm_score([request])
