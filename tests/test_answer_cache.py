"""lm-eval's answer cache (``--use_cache``) read and written a batch at a time
(``wsc_tasks.serving.answer_cache``): what lm-eval's own ``CachingLM`` writes is read back, and
what a batch writes lm-eval's own lookup finds, both ways in lm-eval's format."""

from __future__ import annotations

from lm_eval.api.model import CachingLM, hash_args
from test_model_classes import _answers, _pairs

from wsc_tasks.serving import answer_cache


class Model:
    """The least of a model lm-eval's ``CachingLM`` wraps: it counts what reaches it."""

    rank = 0

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def set_cache_hook(self, hook: object) -> None:
        self.cache_hook = hook

    def loglikelihood(self, requests: list) -> list[tuple[float, bool]]:
        self.asked += [request.args for request in requests]
        return [(-float(len(request.args[1])), True) for request in requests]


class Request:
    def __init__(self, context: str, continuation: str) -> None:
        self.args = (context, continuation)


def test_a_batch_writes_what_lm_evals_own_lookup_finds_and_reads_what_it_wrote(tmp_path):
    cached = CachingLM(Model(), str(tmp_path / "answers.db"))
    db = cached.dbdict
    written = [(("The cat", " sat"), (-1.5, False)), (("A", " dog"), (-0.25, True))]
    with answer_cache.Batch(db) as batch:
        for args, answer in written:
            batch.add_partial("loglikelihood", args, answer)
        assert batch.written == 0  # kept until the batch ends (or FLUSH_S passed)
    assert batch.written == 2
    found = cached.loglikelihood([Request(*args) for args, _ in written])
    assert found == [answer for _, answer in written] and cached.lm.asked == []  # cache hits
    cached.loglikelihood([Request("New", " one")])  # lm-eval's hook writes this one itself
    keys = [hash_args("loglikelihood", args) for args in (*dict(written), ("New", " one"))]
    assert answer_cache.read(db, [*keys, "no such key"]) == {
        keys[0]: (-1.5, False),
        keys[1]: (-0.25, True),
        keys[2]: (-4.0, True),
    }
    db.close()


def test_a_runs_answers_reach_lm_evals_cache_in_batches_not_one_at_a_time(
    task_manager, tiny_gpt2_dir, tmp_path, monkeypatch
):
    """``simple_evaluate(use_cache=…)`` of ``wsc266`` (its first schemas): every distinct request's
    answer is in lm-eval's cache afterwards, and none went through the dictionary one at a
    time (its ``__setitem__``, a transaction each); lm-eval's own ``CachingLM`` over that file
    answers every request as the samples recorded it, without asking its model."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from sqlitedict import SqliteDict

    singles: list[str] = []
    setitem = SqliteDict.__setitem__
    monkeypatch.setattr(SqliteDict, "__setitem__", lambda db, k, v: singles.append(k) or setitem(
        db, k, v))  # fmt: skip
    lm = HFLM(pretrained=str(tiny_gpt2_dir), batch_size=8, device="cpu", dtype="float32")
    cache = str(tmp_path / "answers")
    out = lm_eval.simple_evaluate(model=lm, tasks=["wsc266"], limit=4, log_samples=True,
                                  task_manager=task_manager(tokenizer=str(tiny_gpt2_dir)),
                                  use_cache=cache)  # fmt: skip
    asked = set(_pairs(out["samples"]["wsc266"]))
    keys = [hash_args("loglikelihood", args) for args in asked]
    db = SqliteDict(f"{cache}_rank0.db")
    assert asked and len(answer_cache.read(db, keys)) == len(asked) and singles == []
    db.close()
    recorded = _answers(out["samples"]["wsc266"])
    pairs = list(recorded)
    cached = CachingLM(Model(), f"{cache}_rank0.db")
    found = cached.loglikelihood([Request(*pair) for pair in pairs])
    assert [tuple(answer) for answer in found] == [recorded[pair] for pair in pairs]
    assert cached.lm.asked == []  # every answer read from the file the run wrote
    cached.dbdict.close()


class Shifted(Model):
    """Answers one nat below ``recorded``'s, flags flipped: answers no model gives."""

    def __init__(self, recorded: dict[tuple[str, str], tuple[float, bool]]) -> None:
        super().__init__()
        self.recorded = recorded

    def loglikelihood(self, requests: list) -> list[tuple[float, bool]]:
        found = [self.recorded[tuple(request.args)] for request in requests]
        return [(answer - 1.0, not greedy) for answer, greedy in found]


def test_a_run_reads_the_answers_lm_evals_own_caching_lm_wrote(
    task_manager, tiny_gpt2_dir, tmp_path
):
    """A cache written by lm-eval's ``CachingLM`` (its hook, an answer at a time) answers a run
    of ``wsc266`` with ``use_cache``: the samples carry the cache's answers, not the model's."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=str(tiny_gpt2_dir), batch_size=8, device="cpu", dtype="float32")
    manager = task_manager(tokenizer=str(tiny_gpt2_dir))
    first = lm_eval.simple_evaluate(model=lm, tasks=["wsc266"], limit=4, log_samples=True,
                                    task_manager=manager)  # fmt: skip
    recorded = _answers(first["samples"]["wsc266"])
    cache = str(tmp_path / "written-by-lm-eval")
    cached = CachingLM(Shifted(recorded), f"{cache}_rank0.db")
    cached.loglikelihood([Request(*pair) for pair in recorded])
    cached.dbdict.close()
    second = lm_eval.simple_evaluate(model=lm, tasks=["wsc266"], limit=4, log_samples=True,
                                     task_manager=manager, use_cache=cache)  # fmt: skip
    assert _answers(second["samples"]["wsc266"]) == {
        pair: (answer - 1.0, not greedy) for pair, (answer, greedy) in recorded.items()
    }
