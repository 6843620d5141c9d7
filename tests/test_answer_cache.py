"""lm-eval's answer cache (``--use_cache``) read and written a batch at a time
(``wsc_tasks.serving.answer_cache``): what lm-eval's own ``CachingLM`` writes is read back, and
what a batch writes lm-eval's own lookup finds, both ways in lm-eval's format."""

from __future__ import annotations

from lm_eval.api.model import CachingLM, hash_args

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
