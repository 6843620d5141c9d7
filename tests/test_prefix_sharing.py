"""Prefix-shared scoring (``scoring/prefix_tree.py``, ``serving/tries.py``): the tries, their
masks and rows on hand-computed cases; then, with tiny random models of every causal
architecture the tests build, each request's log-likelihood and greedy flag against lm-eval's own
loop, on the requests of every task of ``wsc_group`` and of lm-eval's ``winogrande``; and the
fallback to lm-eval's own loop where a model cannot take the route."""

from __future__ import annotations

import logging

import pytest
import tiny_models
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM

from wsc_tasks.scoring import prefix_tree
from wsc_tasks.serving import route
from wsc_tasks.serving import tries as sharing
from wsc_tasks.serving.requests import REQUEST_TYPE

# fp32 on a CPU: a request's log-likelihood (a sum of up to ~100 token log-probabilities of about
# -11 each with these random models) moves by the rounding of other matrix shapes, not more
ABS_TOLERANCE = 2e-4


# -- the tries -------------------------------------------------------------------------------------
SEQUENCES = [[1, 2, 3], [1, 2, 4], [1, 5], [1, 2, 3], [6]]


def test_a_trie_row_by_hand():
    packing = prefix_tree.pack(SEQUENCES, row_tokens=100)
    (row,) = packing.rows
    assert row.tokens == [1, 2, 3, 4, 5, 6]  # preorder; the repeated [1, 2, 3] adds nothing
    assert row.depths == [0, 1, 2, 2, 1, 0]
    assert row.ends == [5, 4, 3, 4, 5, 6]  # one past each node's last descendant
    assert packing.path_of == [[0, 1, 2], [0, 1, 3], [0, 4], [0, 1, 2], [5]]
    assert prefix_tree.trie_nodes(SEQUENCES) == 6


def test_rows_are_cut_at_the_bound_and_a_new_row_writes_its_whole_path():
    packing = prefix_tree.pack(SEQUENCES, row_tokens=3)
    assert [r.tokens for r in packing.rows] == [[1, 2, 3], [1, 2, 4], [1, 5, 6]]
    assert packing.row_of == [0, 1, 2, 0, 2]
    assert packing.path_of[1] == [0, 1, 2]
    assert packing.rows[2].depths == [0, 1, 0]
    long = prefix_tree.pack([[7] * 5, [1]], row_tokens=2)  # longer than the bound: a row alone
    assert [r.tokens for r in long.rows] == [[1], [7] * 5]


def test_the_mask_shows_each_node_its_ancestors_and_padding_itself():
    packing = prefix_tree.pack(SEQUENCES, row_tokens=100)
    short = prefix_tree.pack([[9, 8]], row_tokens=100)
    ids, positions, ends = prefix_tree.tree_inputs([*packing.rows, *short.rows], pad_id=0)
    assert ids[1] == [9, 8, 0, 0, 0, 0] and positions[1] == [0, 1, 0, 0, 0, 0]
    mask = prefix_tree.tree_mask(torch.tensor(ends), torch.float32)
    assert mask.shape == (2, 1, 6, 6)
    seen = (mask[:, 0] == 0).int().tolist()
    assert seen[0] == [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 0, 1, 0, 0],  # token 4 sees 1, 2 and itself, not its sibling 3
        [1, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 1],
    ]
    assert seen[1] == [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]] + [
        [int(k == q) for k in range(6)] for q in range(2, 6)
    ]
    assert float(mask.min()) == torch.finfo(torch.float32).min


def test_batches_hold_the_budget():
    packing = prefix_tree.pack([[k, 1, 2] for k in range(10)], row_tokens=6)
    assert [len(r.tokens) for r in packing.rows] == [6, 6, 6, 6, 6]
    assert prefix_tree.batches(packing.rows, token_budget=13) == [[0, 1], [2, 3], [4]]
    assert prefix_tree.batches(packing.rows, token_budget=1) == [[0], [1], [2], [3], [4]]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=7), min_size=1, max_size=30),
    st.integers(1, 20),
)
def test_every_sequence_reads_its_own_tokens_and_sees_exactly_its_path(sequences, bound):
    packing = prefix_tree.pack(sequences, bound)
    for sequence, row, path in zip(sequences, packing.row_of, packing.path_of, strict=True):
        tokens, depths, ends = (packing.rows[row].tokens, packing.rows[row].depths,
                                packing.rows[row].ends)  # fmt: skip
        assert [tokens[p] for p in path] == sequence
        assert [depths[p] for p in path] == list(range(len(sequence)))
        last = path[-1]
        assert [k for k in range(len(tokens)) if k <= last < ends[k]] == path
    if bound >= sum(map(len, sequences)):
        assert sum(len(r.tokens) for r in packing.rows) == prefix_tree.trie_nodes(sequences)


# -- against lm-eval's loop, every causal architecture ---------------------------------------------
# architecture, tokenizer: every causal model of the family matrix, and more that transformers ships
CAUSAL = [
    ("gpt2", "gpt2"),
    ("llama", "smollm2"),
    ("mistral", "mistral"),
    ("qwen2", "smollm2"),
    ("qwen3", "smollm2"),
    ("gemma", "mistral"),
    ("gemma2", "mistral"),  # sliding windows (longer than every request), eager attention
    ("opt", "opt"),
    ("gpt_neox", "gpt2"),
    ("phi", "gpt2"),
    ("phi3", "mistral"),
    ("stablelm", "gpt2"),
]
DOCUMENTS = 2  # per task


@pytest.fixture(scope="module")
def requests_of(tmp_path_factory, data_dir):
    """``requests_of(folder, tokenizer)``: the log-likelihood requests of the first documents of
    every task of ``wsc_group`` (built for the model in ``folder``, named in their metadata;
    causal models with one tokenizer send the same requests, built once) and of lm-eval's own
    ``winogrande`` (its dev file in ``WSC_TASKS_DATA``), each as a plain lm-eval request."""
    from lm_eval.tasks import TaskManager

    from benchmarks.run_phases import WINOGRANDE_TASK, local_winogrande
    from wsc_tasks.paths import include_path

    local = local_winogrande(tmp_path_factory.mktemp("winogrande"))
    assert local is not None

    def leaves(tree):
        for value in tree.values():
            yield from leaves(value) if isinstance(value, dict) else [value]

    built: dict[str, tuple[int, list]] = {}

    def get(folder, tokenizer: str):
        if tokenizer in built:
            return built[tokenizer]
        manager = TaskManager(
            include_path=[str(include_path()), local],
            include_defaults=False,
            metadata={"pretrained": str(folder)},
        )
        tasks = list(leaves(manager.load(["wsc_group", WINOGRANDE_TASK])["tasks"]))
        instances = []
        for task in tasks:
            task.build_all_requests(limit=DOCUMENTS, rank=0, world_size=1)
            instances += [
                Instance("loglikelihood", {}, tuple(i.args), 0)
                for i in task.instances
                if i.request_type in ("loglikelihood", REQUEST_TYPE)
            ]
        built[tokenizer] = len(tasks), instances
        return built[tokenizer]

    return get


def _both(lm, instances):
    """Each request's answer through ``serving.route`` and through lm-eval's own loop (its logits
    cache off: lm-eval's cache gathers a shorter continuation's log-likelihood from a longer
    one's positions, ``lm_eval_fixes.cache_hits``)."""
    ours = route.hf_causal_answers(lm, instances, [], disable_tqdm=True)
    cached = lm.logits_cache
    lm.logits_cache = False
    try:
        theirs = lm.loglikelihood(instances, disable_tqdm=True)
    finally:
        lm.logits_cache = cached
    return ours, theirs


@pytest.mark.slow
@pytest.mark.parametrize("arch, tok_name", CAUSAL, ids=[f"{a}-{t}" for a, t in CAUSAL])
def test_shared_prefixes_give_lm_evals_answers(
    arch, tok_name, tokenizers, requests_of, tmp_path, monkeypatch
):
    """fp32 on a CPU, every task of ``wsc_group`` and lm-eval's ``winogrande``: the same greedy
    flags, log-likelihoods within ``ABS_TOLERANCE``, and fewer token positions through the model
    than lm-eval's padded batches (counted at the forward)."""
    folder = tiny_models.family_model(tmp_path, arch, tokenizers(tok_name))
    n_tasks, instances = requests_of(folder, tok_name)
    assert n_tasks >= 45 and len(instances) > 500
    lm = HFLM(pretrained=str(folder), device="cpu", batch_size=16)
    counted = {"tree": 0, "plain": 0}
    tree_forward, model_call = sharing.tree_forward, HFLM._model_call

    def count_tree(self, ids, *args):
        counted["tree"] += ids.numel()
        return tree_forward(self, ids, *args)

    def count_plain(self, ids, *args, **kwargs):
        counted["plain"] += ids.numel()
        return model_call(self, ids, *args, **kwargs)

    monkeypatch.setattr(sharing, "tree_forward", count_tree)
    monkeypatch.setattr(HFLM, "_model_call", count_plain)
    ours, theirs = _both(lm, instances)
    assert sharing._VERDICTS[lm] is None  # the route was taken
    assert [g for _, g in ours] == [g for _, g in theirs]
    assert [ll for ll, _ in ours] == pytest.approx([ll for ll, _ in theirs], abs=ABS_TOLERANCE)
    assert 0 < counted["tree"] < counted["plain"] / 2


def _off_reasons(caplog):
    return [
        r.getMessage() for r in caplog.records if "prefix-shared scoring is off" in r.getMessage()
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "arch, setup, reason",
    [
        ("bloom", None, "ALiBi"),
        ("gemma2", "window", "longer than its sliding window (8)"),
        ("llama", "leak", "differ from its own forward's"),
        ("llama", "off", f"{sharing.SHARING_ENV}=0"),
    ],
)
def test_a_model_that_cannot_take_the_route_gets_lm_evals_own_loop(
    arch, setup, reason, tokenizers, tmp_path, monkeypatch, caplog
):
    """Refused, said once in the log, and the answers are lm-eval's own loop's, exactly, the
    same requests twice."""
    sharing._SAID.clear()
    folder = tiny_models.family_model(tmp_path, arch, tokenizers("gpt2"))
    lm = HFLM(pretrained=str(folder), device="cpu", batch_size=4)
    if setup == "window":
        lm.model.config.sliding_window = 8
    if setup == "off":
        monkeypatch.setenv(sharing.SHARING_ENV, "0")
    if setup == "leak":  # a forward that takes the mask and position ids but ignores them
        forward = lm.model.forward
        monkeypatch.setattr(
            lm.model,
            "forward",
            lambda input_ids=None, attention_mask=None, position_ids=None, **kw: forward(
                input_ids=input_ids, **kw
            ),
        )
    texts = [("The trophy did not fit in the suitcase because", f" {w} was too {a}.")
             for w in ("it", "the trophy", "the suitcase") for a in ("big", "small")]  # fmt: skip
    instances = [Instance("loglikelihood", {}, t, k) for k, t in enumerate(texts)]
    with caplog.at_level(logging.INFO, logger="lm_eval.wsc_tasks"):
        ours, theirs = _both(lm, instances)
        again, _ = _both(lm, instances)
    assert ours == again == theirs
    said = _off_reasons(caplog)
    assert len(said) == 1 and reason in said[0], said
