"""Hub sweeps: models from a Hub query, each pinned to its commit, weights fetched ahead of their
run and removed after it, gated and remote-code models refused before any job.

The Hub is ``tests/hub_server.py``, a local HTTP server started by the tests (a thread on
127.0.0.1, a free port) serving tiny random GPT-2s; the sweeps run as a user runs them
(``wsc-tasks sweep`` in a subprocess with ``HF_ENDPOINT`` pointing at it and ``HF_HOME`` in a
temporary folder), with the real ``huggingface_hub`` client and lm-eval's real ``hf`` model
loading the downloaded snapshots.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tiny_models
from hub_server import HubServer

from wsc_tasks.sweep import hub
from wsc_tasks.sweep.models import ModelsFileError, ModelSpec

REPO = Path(__file__).resolve().parents[1]
TASK = "wsc266_associative"
SLOW_WEIGHTS_S = 0.5  # each weights file takes this long to serve: downloads take measurable time,
# shorter than a warm worker's run of a tiny model (2 s)
if not tiny_models.GPT2_FILES.is_dir():  # a checkout whose data folder is elsewhere
    tiny_models.GPT2_FILES = Path(os.environ["WSC_TASKS_DATA"]).parent / "tokenizers" / "gpt2"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, gpt2_tok) -> dict[str, Path]:
    """Tiny GPT-2s saved like Hub checkpoints: four to sweep, a fifth as a new commit of one of
    them, one gated and one that asks for remote code (``auto_map`` in its config)."""
    root = tmp_path_factory.mktemp("hub-models")
    size = tiny_models.GPT2_SIZES["1x16"]
    found = {name: tiny_models.save_random(root / name, "gpt2", gpt2_tok, seed, vocab_size=50257,
                                           **size)
             for seed, name in enumerate(("a", "b", "c", "d", "b2"), 1)}  # fmt: skip
    found["remote"] = Path(shutil.copytree(found["a"], root / "remote"))
    config = json.loads((found["remote"] / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"}
    (found["remote"] / "config.json").write_text(json.dumps(config))
    (found["remote"] / "modeling_tiny.py").write_text("raise SystemExit('remote code ran')\n")
    return found


def _serve(server: HubServer, folders: dict[str, Path]) -> dict[str, str]:
    """The Hub's repositories: four GPT-2s, a gated one and a remote-code one by ``tiny``, and
    one by another author; returns repo -> commit of ``main``."""
    shas = {f"tiny/gpt2-{n}": server.push(f"tiny/gpt2-{n}", folders[n]) for n in "abcd"}
    shas["tiny/gated-gpt2"] = server.push("tiny/gated-gpt2", folders["c"], gated=True)
    shas["tiny/remote-code"] = server.push("tiny/remote-code", folders["remote"])
    server.push("other/gpt2-x", folders["d"])
    return shas


def _env(server: HubServer, home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE")}
    return {**env, "HF_ENDPOINT": server.url, "HF_HOME": str(home), "PYTHONPATH": str(REPO),
            "HF_HUB_DISABLE_TELEMETRY": "1", **more}  # fmt: skip


def _sweep(out: Path, env: dict[str, str], *more: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "wsc_tasks.cli", "sweep", "--out", str(out), "--tasks", TASK,
               "--rank-task", TASK, "--iters", "100", "--quiet", *more, "--limit", "4"]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


def _events(out: Path) -> list[dict]:
    path = out / ".sweep" / hub.EVENTS
    return [json.loads(line) for line in path.read_text().splitlines()]


def _done(out: Path, name: str) -> dict:
    return json.loads((out / name / "done.json").read_text())


def _blobs(home: Path) -> list[Path]:
    return sorted(p for p in (home / "hub").glob("models--*/blobs/*") if p.is_file())


def overlaps(events: list[dict], server: HubServer) -> list[dict]:
    """For each run after the first: how long the next model's weights downloaded while it
    evaluated (the server's times of the weight file's download, inside the run's start and
    end), from ``weights.jsonl`` and the server's request log."""
    runs = {e["model"]: e for e in events if e["event"] == "run-start"}
    ends = {e["model"]: e for e in events if e["event"] == "run-end"}
    order = sorted(runs, key=lambda name: runs[name]["time"])
    fetched = {e["model"]: e for e in events if e["event"] == "fetch-end" and e["why"] == "ahead"}
    found = []
    for current, following in zip(order, order[1:], strict=False):
        start, end = runs[current]["time"], ends[current]["time"]
        repo = f"tiny/{following}"
        served = [t for t, path in server.downloads(repo) if path.endswith(".safetensors")]
        fetch = fetched.get(following)
        found.append({"running": current, "fetched": following, "run": (start, end),
                      "served": served, "fetch_end": fetch["time"] if fetch else None})  # fmt: skip
    return found


def test_a_query_sweep_pins_commits_fetches_ahead_clears_behind_and_refuses_early(
    folders, tmp_path, data_dir
):
    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer(seconds_per_weights=SLOW_WEIGHTS_S) as server:
        shas = _serve(server, folders)
        env = _env(server, home)
        first = _sweep(out, env, "--hub-query", "author=tiny")
        assert first.returncode == 1, first.stderr[-3000:]  # two models refused, four done
        written = json.loads(
            json.dumps(__import__("yaml").safe_load((out / hub.EXPANDED).read_text()))
        )
        names = [entry["name"] for entry in written["models"]]
        assert names == ["gated-gpt2", "gpt2-a", "gpt2-b", "gpt2-c", "gpt2-d", "remote-code"]
        assert written["hub"] == {"author": "tiny", "model": "hf", "trust_remote_code": False}
        # refused before any job: one line each, naming the fix; no run, the others ran
        refused = [line for line in first.stderr.splitlines() if "refused before its run" in line]
        assert len(refused) == 2
        assert any("tiny/gated-gpt2 is gated: accept its terms" in line and "HF_TOKEN" in line
                   for line in refused)  # fmt: skip
        assert any("tiny/remote-code runs its own code (auto_map in its config.json)" in line
                   and "trust_remote_code=True" in line for line in refused)  # fmt: skip
        for name in ("gated-gpt2", "remote-code"):
            assert sorted(p.name for p in (out / name).iterdir()) == ["error.txt"]
        assert not server.downloads("tiny/gated-gpt2") and not server.downloads("tiny/remote-code")
        listed = " ".join(first.stdout.split())  # refused, not failed: checked again anyway
        assert "refused gated-gpt2" in listed and "refused remote-code" in listed
        assert "gated-gpt2, remote-code: refused or not fetched" in first.stderr
        assert "the next sweep checks them again" in first.stderr
        # each model ran at its commit, recorded in done.json
        for name in ("gpt2-a", "gpt2-b", "gpt2-c", "gpt2-d"):
            done = _done(out, name)
            commit = shas[f"tiny/{name}"]
            assert done["hub"] == {"repo": f"tiny/{name}", "revision": "main", "commit": commit,
                                   "url": f"{server.url}/tiny/{name}/tree/{commit}"}  # fmt: skip
            spec = json.loads((out / name / "spec.json").read_text())
            assert spec["spec"]["model_args"] == f"pretrained=tiny/{name}"
            assert f"revision={commit}" in (out / name / "log.txt").read_text()
        # weights: the next model's fetched while the current one evaluates, removed after
        events = _events(out)
        measured = overlaps(events, server)
        assert len(measured) == 3
        for each in measured:
            start, end = each["run"]
            assert each["served"] and all(start <= t <= end for t in each["served"]), each
            assert each["fetch_end"] is not None and each["fetch_end"] <= end, each
        size = max(sum(p.stat().st_size for p in folders[n].iterdir()) for n in "abcd")
        assert max(e["cache_bytes"] for e in events) <= 2 * size  # one running, one ahead
        removed = [e["model"] for e in events if e["event"] == "removed"]
        assert sorted(removed) == ["gpt2-a", "gpt2-b", "gpt2-c", "gpt2-d"]
        # each removed by its own worker before its verdict, which ends it for the sweep (whose
        # end-of-sweep removal then finds nothing of it left)
        for event in (e for e in events if e["event"] == "removed"):
            assert event["time"] < (out / event["model"] / "done.json").stat().st_mtime, event
        assert _blobs(home) == [] and events[-1]["cache_bytes"] == 0
        assert "at most 2 snapshots on disk at once (1 running + 1 ahead of each)" in first.stderr
        # the leaderboard names each model's Hub id, commit and query (the Hub id linked only
        # to an https: Hub: this one is http:)
        with (out / "leaderboard.csv").open() as handle:
            rows = {row["model"]: row for row in csv.DictReader(handle)}
        assert rows["gpt2-b"]["Hub id"] == "tiny/gpt2-b"
        assert rows["gpt2-b"]["commit"] == shas["tiny/gpt2-b"][:12]
        assert rows["gpt2-b"]["Hub query"] == "author=tiny, model=hf, trust_remote_code=False"
        board = (out / "leaderboard.md").read_text()
        assert "| gpt2-c | tiny/gpt2-c | model |" in board
        assert f"| {shas['tiny/gpt2-c'][:12]} |" in board and shas["tiny/gpt2-c"] not in board
        assert f"]({server.url}" not in board  # no link to a plain-http address

        # main of one repository moves: that model runs again, at the new commit, and says so
        moved = server.push("tiny/gpt2-b", folders["b2"])
        before = {n: (out / n / "done.json").stat().st_mtime_ns for n in ("gpt2-a", "gpt2-c")}
        second = _sweep(out, env, "--hub-query", "author=tiny", "--keep-weights")
        assert second.returncode == 1, second.stderr[-3000:]
        assert (
            f"gpt2-b: run again: tiny/gpt2-b@main now resolves to commit {moved} (the run was of "
            f"{shas['tiny/gpt2-b']})"
        ) in second.stderr
        assert second.stderr.count("run again") == 1  # said once, on a line of its own
        assert "every snapshot stays on disk" in second.stderr  # --keep-weights
        assert _done(out, "gpt2-b")["hub"]["commit"] == moved
        assert {n: (out / n / "done.json").stat().st_mtime_ns for n in before} == before
        kept = {p.parent.parent.name for p in _blobs(home)}
        assert kept == {"models--tiny--gpt2-b"}  # --keep-weights

    # no Hub: commits come from the local cache, said in the log; nothing runs again
    offline = _sweep(out, _env(server, home, HF_HUB_OFFLINE="1"), "--hub-query", "author=tiny")
    assert offline.returncode == 1
    assert f"gpt2-b: offline: tiny/gpt2-b@main resolved to {moved} from the local cache" in (
        offline.stderr
    )
    assert (
        "gpt2-a: offline, tiny/gpt2-a@main not in the local cache: its run of commit "
        f"{shas['tiny/gpt2-a']} is kept" in offline.stderr
    )
    assert (
        "run again" not in offline.stderr and "(1 running" not in offline.stderr
    )  # nothing to run


# -- the pieces, without a sweep -------------------------------------------------------------------


def test_queries_from_a_flag_or_a_models_file_and_their_errors():
    query = hub.parse_query("author=tiny,tags=a+b,limit=3,created_after=2025-02-01", "--hub-query")
    assert query == hub.HubQuery(author="tiny", tags=("a", "b"), limit=3,
                                 created_after="2025-02-01")  # fmt: skip
    found = hub.parse_query({"search": "gpt2", "model_args": {"dtype": "float32"}}, "m.yaml:3")
    assert found.model_args == "dtype=float32"
    with pytest.raises(ModelsFileError, match=r"^m.yaml:3: unknown key\(s\) \['autor'\]"):
        hub.parse_query({"autor": "x"}, "m.yaml:3")
    with pytest.raises(ModelsFileError, match="needs author, search, tags or library"):
        hub.parse_query("limit=3", "--hub-query")
    with pytest.raises(ModelsFileError, match="^--hub-query: Invalid isoformat"):
        hub.parse_query("author=x,created_after=May", "--hub-query")


def test_expansion_is_written_once_and_a_date_filters(tmp_path, monkeypatch):
    from huggingface_hub import constants

    folders = {}
    for name in "abcd":  # the listing reads no weights: a config is enough
        folders[name] = tmp_path / "repos" / name
        folders[name].mkdir(parents=True)
        (folders[name] / "config.json").write_text(json.dumps({"model_type": "gpt2", "n": name}))
    with HubServer() as server:
        server.push("tiny/old", folders["a"], created_at="2024-06-01T00:00:00.000Z")
        server.push("tiny/new", folders["b"], created_at="2025-06-01T00:00:00.000Z")
        server.push("else/new", folders["c"], created_at="2025-06-01T00:00:00.000Z")
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        query = hub.parse_query("search=new,created_after=2025-01-01", "--hub-query")
        specs = hub.expand(query, tmp_path / "out")
        assert [(s.name, s.model_args) for s in specs] == [
            ("else--new", "pretrained=else/new"), ("tiny--new", "pretrained=tiny/new")]  # fmt: skip
        server.push("tiny/newer", folders["d"], created_at="2025-07-01T00:00:00.000Z")
        assert hub.expand(query, tmp_path / "out") == specs  # the list written, not the Hub's
        with pytest.raises(ModelsFileError, match="holds the models of another Hub query"):
            hub.expand(hub.parse_query("author=tiny", "--hub-query"), tmp_path / "out")


def test_an_unreachable_hub_is_named_at_once(monkeypatch):
    import socket
    import time

    from huggingface_hub import constants

    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", url)
    start = time.monotonic()
    with pytest.raises(ModelsFileError) as raised:
        hub.expand(hub.parse_query("author=tiny", "--hub-query"), Path("/nonexistent"))
    assert time.monotonic() - start < 6  # not the client's half minute of retries
    assert str(raised.value).startswith(f"the Hub at {url} cannot be reached (")
    assert str(raised.value).endswith("check HF_ENDPOINT and the network, or give the models "
                                      "in a models file")  # fmt: skip


def test_a_run_is_pinned_and_the_disk_bound_is_stated():
    spec = ModelSpec("m", "hf", "pretrained=o/m,revision=v1,dtype=float32",
                     hub={"repo": "o/m", "revision": "v1", "commit": "c" * 40})  # fmt: skip
    assert (
        hub.run_args(spec, spec.model_args) == f"pretrained=o/m,dtype=float32,revision={'c' * 40}"
    )
    assert hub.hub_repo(ModelSpec("x", model_args="pretrained=/no/such/folder")) is None
    assert hub.hub_repo(ModelSpec("x", model_args="default")) is None
    specs = [spec, ModelSpec("n", hub={**spec.hub, "commit": "d" * 40}), ModelSpec("local")]
    assert hub.disk_bound(specs, 1, 1).endswith(
        "at most 2 snapshots on disk at once (1 running + 1 ahead of each)"
    )
    assert "no bound" in hub.disk_bound(specs, None, 2)
    one = hub.disk_bound(specs[:1], 1, 0)
    assert one.startswith("weights: 1 Hub model, ") and "at most 1 snapshot on disk" in one
    kept = hub.disk_bound(specs, 1, 1, keep_weights=True)
    assert "kept in the cache after it (--keep-weights)" in kept and "removed" not in kept
    shared = hub.mark_shared([spec, ModelSpec("again", hub=spec.hub), specs[1]])
    assert [s.hub.get("shared") for s in shared] == [True, True, None]


# -- Slurm -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_query_sweep_on_slurm_fetches_ahead_in_each_job_and_clears_behind(
    folders, tmp_path, data_dir
):
    from conftest import needs
    from test_launchers import SLURM, _slurm_missing

    missing = _slurm_missing()
    needs("SLURM", missing and f"{missing}; start one with .ci/slurm-up")
    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer(seconds_per_weights=SLOW_WEIGHTS_S) as server:
        shas = _serve(server, folders)
        more = (*SLURM, "--max-parallel", "1", "--job-name", "wsc-hub")
        try:
            done = _sweep(out, _env(server, home), "--hub-query", "author=tiny,search=gpt2-", *more)
        finally:  # a sweep killed by its timeout leaves its jobs, holding the next tests' CPUs
            subprocess.run(["scancel", "--name", "wsc-hub"], check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "at most 2 snapshots on disk at once (1 running + 1 ahead of each)" in done.stderr
        for name in ("gpt2-a", "gpt2-b", "gpt2-c", "gpt2-d"):
            recorded = _done(out, name)
            assert recorded["hub"]["commit"] == shas[f"tiny/{name}"]
            assert recorded["cost"]["launcher"] == "slurm"
        events = _events(out)
        measured = overlaps(events, server)
        assert len(measured) == 3
        for each in measured:  # the next model's weights came while the job evaluated
            start, end = each["run"]
            assert each["served"] and all(start <= t <= end for t in each["served"]), each
        size = max(sum(p.stat().st_size for p in folders[n].iterdir()) for n in "abcd")
        assert max(e["cache_bytes"] for e in events) <= 2 * size
        assert sorted(e["model"] for e in events if e["event"] == "removed") == [
            "gpt2-a", "gpt2-b", "gpt2-c", "gpt2-d"]  # fmt: skip
        assert _blobs(home) == []


def test_the_models_table_links_a_hub_id_on_an_https_hub_only():
    from wsc_tasks.leaderboard.layout import _commit, _hub_id
    from wsc_tasks.report.tables import Links

    sha = "0123456789abcdef0123456789abcdef01234567"
    url = f"https://huggingface.co/org/name/tree/{sha}"
    linked = _hub_id({"hub": {"repo": "org/name", "commit": sha, "url": url}})
    assert isinstance(linked, Links) and [u for _, u in linked.items] == [url]
    assert _hub_id({"hub": {"repo": "org/name", "url": "javascript:alert(1)"}}) == "org/name"
    plain = f"http://127.0.0.1:9/org/name/tree/{sha}"
    assert _hub_id({"hub": {"repo": "org/name", "url": plain}}) == "org/name"
    assert _hub_id({}) is None and _commit({}) is None
    assert _commit({"hub": {"commit": sha, "url": plain}}) == "0123456789ab"  # never 40 long


def test_the_leaderboard_names_each_hub_model_its_commit_and_query(tmp_path):
    """A Hub sweep's folder (copies of the committed run, as a query's models and one local
    model): the models table of every format has the Hub id (linked on an https Hub), the
    short commit and the query; the CSV the id and its page apart."""
    from test_escaping import RESULTS, _copy_run

    from wsc_tasks import leaderboard

    sha = "0123456789abcdef0123456789abcdef01234567"
    hubs = {"gpt2-a": "https://huggingface.co", "gpt2-b": "http://127.0.0.1:9"}
    for name in ("gpt2-a", "gpt2-b", "local"):
        _copy_run(RESULTS / "smollm2-135m" / "lm_eval", tmp_path / name / "lm_eval")
        hub_record = {"repo": f"tiny/{name}", "revision": "main", "commit": sha,
                      "url": f"{hubs.get(name)}/tiny/{name}/tree/{sha}"}  # fmt: skip
        done = {"hub": hub_record} if name in hubs else {}
        (tmp_path / name / "done.json").write_text(json.dumps(done))
    query = {"author": "tiny", "tags": ["a", "b"], "model": "hf"}
    models = [{"name": n, "model": "hf", "model_args": f"pretrained=tiny/{n}"} for n in hubs]
    (tmp_path / hub.EXPANDED).write_text(json.dumps({"hub": query, "models": models}))
    leaderboard.write(leaderboard.model_folders(tmp_path), tmp_path, "wsc266", 50, 0)
    shown = "author=tiny, tags=a+b, model=hf"
    page = f"https://huggingface.co/tiny/gpt2-a/tree/{sha}"
    text = (tmp_path / "leaderboard.md").read_text()
    assert f"| gpt2-a | [tiny/gpt2-a]({page}) | model |" in text
    assert "| gpt2-b | tiny/gpt2-b | model |" in text  # http: not linked
    assert f"| main | 0123456789ab | {shown} |" in text and text.count(sha) == 1  # the link's
    assert "| local | – | model |" in text
    html = (tmp_path / "leaderboard.html").read_text()
    assert f'<a href="{page}">tiny/gpt2-a</a>' in html and shown in html
    with (tmp_path / "leaderboard.csv").open(newline="") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    assert {k: rows["gpt2-a"][k] for k in ("Hub id", "Hub page", "commit", "Hub query")} == {
        "Hub id": "tiny/gpt2-a",
        "Hub page": page,
        "commit": "0123456789ab",
        "Hub query": shown,
    }
    assert rows["gpt2-b"]["Hub page"] == f"http://127.0.0.1:9/tiny/gpt2-b/tree/{sha}"
    assert [rows["local"][k] for k in ("Hub id", "commit", "Hub query")] == ["", "", ""]
