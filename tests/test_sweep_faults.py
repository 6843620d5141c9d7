"""A Hub sweep under faults (docs/sweeps.md, "Faults"): Ctrl-C and SIGTERM during a
download and during a run, ``kill -9``, a resume after each, a repository or commit that vanishes,
transient download errors, a full disk.

The Hub is ``tests/hub_server.py`` (the real ``huggingface_hub`` client through ``HF_ENDPOINT``),
its weight files served slowly where a signal must land half way through a download; the sweeps
run as ``wsc-tasks sweep`` in a process of their own, as a user runs them.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import tiny_models
from hub_server import HubServer
from test_hub import _blobs, _env
from test_hub import _events as _written

from wsc_tasks.sweep import download, snapshots
from wsc_tasks.sweep import folder as protocol

TASK = "wsc266_associative"
STOP_S = 5.0  # a stopped sweep exits within this many seconds
if not tiny_models.GPT2_FILES.is_dir():  # a checkout whose data folder is elsewhere
    tiny_models.GPT2_FILES = Path(os.environ["WSC_TASKS_DATA"]).parent / "tokenizers" / "gpt2"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, gpt2_tok) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fault-models")
    size = tiny_models.GPT2_SIZES["1x16"]
    return {name: tiny_models.save_random(root / name, "gpt2", gpt2_tok, seed, vocab_size=50257,
                                          **size)
            for seed, name in enumerate("abc", 1)}  # fmt: skip


def _command(out: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "wsc_tasks.cli", "sweep", "--out", str(out), "--tasks", TASK,
            "--rank-task", TASK, "--iters", "100", "--quiet", "--hub-query", "author=tiny", *more,
            "--limit", "4"]  # fmt: skip


def _start(out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(_command(out), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip


def _finish(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(out), env=env, capture_output=True, text=True, timeout=900)


def _events(out: Path) -> list[dict]:
    return _written(out) if (out / ".sweep" / "weights.jsonl").is_file() else []


def _wait_for(condition, what: str, limit_s: float = 300.0) -> None:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < limit_s, f"timed out waiting for {what}"
        time.sleep(0.05)


def _kill(process: subprocess.Popen[str], sig: int) -> tuple[float, str]:
    """Seconds from ``sig`` (to the sweep's process group, as a terminal sends Ctrl-C) to its
    exit, and its stderr."""
    start = time.monotonic()
    os.killpg(process.pid, sig)
    _, err = process.communicate(timeout=120)
    return time.monotonic() - start, err


def _weights_served(server: HubServer, repo: str) -> bool:
    return any(path.endswith(".safetensors") for _, path in server.downloads(repo))


def _snapshots(home: Path) -> set[str]:
    found = (home / "hub").glob("models--*/snapshots/*")
    return {p.parent.parent.name.split("--")[-1] for p in found if any(p.iterdir())}


def _downloaders(home: Path) -> list[int]:
    """The pids of download processes (``wsc_tasks.sweep.download``) into ``home`` alive."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"wsc_tasks.sweep.download" in line and f"HF_HOME={home}".encode() in env:
            found.append(int(entry.name))
    return found


class Peak:
    """The most snapshots in the cache at once, watched every 50 ms while a test runs."""

    def __init__(self, home: Path) -> None:
        self.home, self.most, self._stop = home, set[str](), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                now = _snapshots(self.home)
            except OSError:
                now = set()
            if len(now) > len(self.most):
                self.most = now
            time.sleep(0.05)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_a_download_stops_it_at_once_and_the_resume_trusts_nothing_of_it(
    folders, tmp_path, data_dir, sig
):
    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer(seconds_per_weights=30) as server:
        for name in "ab":
            server.push(f"tiny/gpt2-{name}", folders[name])
        env = _env(server, home)
        process = _start(out, env)
        _wait_for(lambda: _weights_served(server, "tiny/gpt2-a"), "the download of gpt2-a")
        time.sleep(1.0)  # half way through its 30-s download
        seconds, err = _kill(process, sig)
        assert seconds < STOP_S, (seconds, err[-2000:])
        assert process.returncode == (130 if sig == signal.SIGINT else 128 + sig)
        assert "run the same command again to resume" in err
        events = [(e["event"], e["model"]) for e in _events(out)]
        assert events == [("fetch-start", "gpt2-a"), ("fetch-stopped", "gpt2-a")]  # no run
        assert not _weights_served(server, "tiny/gpt2-b")  # nothing fetched after the signal
        assert not _downloaders(home)
        assert _blobs(home) == []  # the partial download is gone: nothing for a resume to trust
        assert sorted(p.name for p in (out / "gpt2-a").iterdir()) == ["spec.json"]  # no verdict
        if sig == signal.SIGTERM:
            return
        server.seconds_per_weights = 0.5
        with Peak(home) as peak:
            resumed = _finish(out, env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert len(peak.most) <= 2, peak.most
    assert _blobs(home) == [] and snapshots.records(out) == []


@pytest.mark.slow
def test_two_interruptions_during_runs_then_a_resume_keep_the_bound_and_the_users_cache(
    folders, tmp_path, data_dir
):
    """Ctrl-C during the first run, then during the resumed sweep's run, then a resume to the
    end: never more snapshots of the sweep on disk than it states, each removed after its run,
    and a snapshot that was in the cache before the first sweep kept (the log says so)."""
    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer() as server:
        shas = {n: server.push(f"tiny/gpt2-{n}", folders[n]) for n in "abc"}
        env = _env(server, home)
        # the user's own copy of gpt2-c, downloaded before any sweep
        script = "import sys; from huggingface_hub import snapshot_download as s; s(sys.argv[1])"
        subprocess.run([sys.executable, "-c", script, "tiny/gpt2-c"], env=env, check=True)
        assert _snapshots(home) == {"gpt2-c"}
        with Peak(home) as peak:
            stops = []
            for _ in range(2):
                process = _start(out, env)
                runs = sum(e["event"] == "run-start" for e in _events(out))
                _wait_for(
                    lambda runs=runs: sum(e["event"] == "run-start" for e in _events(out)) > runs,
                    "a run to start",
                )
                server.seconds_per_weights = 30  # the next model's download is under way
                time.sleep(1.5)
                seconds, err = _kill(process, signal.SIGINT)
                server.seconds_per_weights = 0
                stops.append(seconds)
                assert process.returncode == 130, err[-3000:]
                assert not _downloaders(home)
                runs_now = [e for e in _events(out) if e["event"] == "run-start"]
                assert len(runs_now) == runs + 1  # no run started after the signal
            resumed = _finish(out, env)
        assert max(stops) < STOP_S, stops
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "at most 2 snapshots on disk at once (1 running + 1 ahead of each)" in err
        assert (
            f"tiny/gpt2-c@{shas['c'][:12]} were in the cache before this sweep folder downloaded "
            "anything: kept after their runs" in resumed.stderr + err
        )
        ours = peak.most - {"gpt2-c"}
        assert len(ours) <= 2, peak.most
        assert _snapshots(home) == {"gpt2-c"}  # the sweep's own all removed, the user's kept
        assert snapshots.records(out) == []
        for name in ("gpt2-a", "gpt2-b", "gpt2-c"):
            assert (
                json.loads((out / name / "done.json").read_text())["hub"]["commit"]
                == (shas[name[-1]])
            )
        # the models found are listed with their commits before any run
        listed = resumed.stderr.split("at these commits:")[1]
        assert f"  gpt2-a: tiny/gpt2-a@{shas['a'][:12]} (main)" in listed


@pytest.mark.slow
def test_kill_9_during_a_download_leaves_no_process_and_the_resume_downloads_afresh(
    folders, tmp_path, data_dir
):
    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer(seconds_per_weights=30) as server:
        server.push("tiny/gpt2-a", folders["a"])
        env = _env(server, home)
        process = _start(out, env)
        _wait_for(lambda: _weights_served(server, "tiny/gpt2-a"), "the download of gpt2-a")
        time.sleep(1.0)
        _kill(process, signal.SIGKILL)
        _wait_for(lambda: not _downloaders(home), "the download to die with the sweep", 10)
        assert [r["state"] for r in snapshots.records(out)] == ["downloading"]
        server.seconds_per_weights = 0
        resumed = _finish(out, env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "its download never completed" in resumed.stderr
    assert _blobs(home) == [] and snapshots.records(out) == []


@pytest.mark.slow
def test_a_download_that_fails_names_the_hubs_reason_and_the_next_sweep_tries_again(
    folders, tmp_path, data_dir, monkeypatch
):

    home, out = tmp_path / "hf", tmp_path / "sweep"
    with HubServer() as server:
        for name in "ab":
            server.push(f"tiny/gpt2-{name}", folders[name])
        reason = "Service temporarily overloaded, retry later"
        server.failures["tiny/gpt2-a"] = [(503, reason)] * 3
        env = _env(server, home)
        first = _finish(out, env)
        assert first.returncode == 1, first.stderr[-3000:]
        assert len([t for t, p in server.downloads("tiny/gpt2-a") if "safetensors" in p]) == 3
        error = (out / "gpt2-a" / "error.txt").read_text().splitlines()
        assert error[0] == (
            f"{protocol.NOT_FETCHED}tiny/gpt2-a@{_sha(server, 'a')[:12]}: the download failed 3 "
            f"times, the last with HTTP 503: {reason}: check the Hub's status and the network; "
            "the next sweep tries again"
        )
        assert f"gpt2-a: {error[0]}" in first.stderr  # one line, as error.txt starts
        assert "not fetched gpt2-a" in " ".join(first.stdout.split())
        assert "the next sweep checks them again" in first.stderr
        assert _blobs(home) == []
        second = _finish(out, env)  # no --retry-failed: a download error is no verdict
        assert second.returncode == 0, second.stderr[-3000:]
        assert (out / "gpt2-a" / "done.json").is_file()
    # what a run writes names the output folder's files relative to it
    results = next((out / "gpt2-a" / "lm_eval").glob("results_*.json")).read_text()
    log = (out / "gpt2-a" / "log.txt").read_text()
    assert str(out) not in log and " gpt2-a/lm_eval/results.json" in log
    assert str(out) not in results and '"use_cache": ".cache/' in results


@pytest.mark.slow
def test_slurm_a_task_cancelled_during_its_download_leaves_nothing_and_the_resume_runs_it(
    folders, tmp_path, data_dir
):
    from test_launchers import SLURM, _job_of, _slurm_missing

    missing = _slurm_missing()
    if missing and os.environ.get("WSC_TASKS_REQUIRE_SLURM") == "1":
        pytest.fail(f"WSC_TASKS_REQUIRE_SLURM=1 but {missing}; start one with .ci/slurm-up")
    if missing:
        pytest.skip(missing)
    home, out = tmp_path / "hf", tmp_path / "sweep"
    more = (*SLURM, "--job-name", "wsc-fault-dl")
    with HubServer(seconds_per_weights=60) as server:
        server.push("tiny/gpt2-a", folders["a"])
        env = _env(server, home)
        process = subprocess.Popen(_command(out, *more), env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            _wait_for(lambda: _weights_served(server, "tiny/gpt2-a"), "the job's download")
            job = _job_of(out, "gpt2-a")  # the worker's array task that took it
            assert job
            start = time.monotonic()
            subprocess.run(["scancel", job], check=True)
            _, err = process.communicate(timeout=120)
            assert time.monotonic() - start < 30, err[-3000:]  # not the 60-s download
        finally:
            subprocess.run(["scancel", "--name", "wsc-fault-dl"], check=False)
        assert process.returncode == 1, err[-3000:]
        assert "ended in state CANCELLED" in (out / "gpt2-a" / "error.txt").read_text()
        _wait_for(lambda: not _downloaders(home), "the job's download to end", 30)
        server.seconds_per_weights = 0
        resumed = subprocess.run(_command(out, *more, "--retry-failed"), env=env,
                                 capture_output=True, text=True, timeout=900)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _blobs(home) == [] and snapshots.records(out) == []


def _sha(server: HubServer, name: str) -> str:
    return server.repos[f"tiny/gpt2-{name}"].refs["main"]


# -- one download, in this process -----------------------------------------------------------------


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tmp_path / "hub"


def _serving(server: HubServer, monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    monkeypatch.setattr(
        constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        server.url + "/{repo_id}/resolve/{revision}/{filename}",
    )


def test_a_transient_error_is_tried_again_with_backoff(folders, hub_cache, monkeypatch):
    waits: list[float] = []
    with HubServer() as server:
        _serving(server, monkeypatch)
        sha = server.push("tiny/gpt2-a", folders["a"])
        server.failures["tiny/gpt2-a"] = [(503, "busy"), (0, "dropped half way"), (429, "slow")]
        download.download("tiny/gpt2-a", sha, backoff_s=(1.0, 3.0, 9.0), sleep=waits.append)
    assert waits == [1.0]  # the dropped connection and the 429: the client tried again itself
    assert (hub_cache / "models--tiny--gpt2-a" / "snapshots" / sha / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("fault", "kind", "words"),
    [
        ("vanished repository", "gone", "tiny/gpt2-a is no longer on the Hub, or no longer public "
         "(HTTP 401: Repository not found): check it on the Hub or give a token with access"),
        ("vanished commit", "gone", "no longer has commit"),
        ("disk full", "disk", "tiny/gpt2-a: no space left on the disk of the Hugging Face cache"),
        ("always 502", "transient", "the download failed 3 times, the last with HTTP 502: down"),
    ],
)  # fmt: skip
def test_a_download_that_cannot_succeed_fails_at_once_naming_the_fix(
    folders, hub_cache, monkeypatch, fault, kind, words
):
    from huggingface_hub import file_download

    waits: list[float] = []
    with HubServer() as server:
        _serving(server, monkeypatch)
        sha = server.push("tiny/gpt2-a", folders["a"])
        if fault == "vanished repository":
            server.delete("tiny/gpt2-a")
        elif fault == "vanished commit":
            sha = "f" * 40
        elif fault == "disk full":

            def full(url, temp_file, **kwargs):
                temp_file.write(b"x" * 1000)
                raise OSError(errno.ENOSPC, "No space left on device")

            monkeypatch.setattr(file_download, "http_get", full)
        else:
            server.failures["tiny/gpt2-a"] = [(502, "down")] * 5
        with pytest.raises(download.DownloadError) as raised:
            download.download("tiny/gpt2-a", sha, backoff_s=(1.0, 1.0), sleep=waits.append)
    assert raised.value.kind == kind and words in str(raised.value)
    assert len(str(raised.value).splitlines()) == 1
    assert waits == ([1.0, 1.0] if kind == "transient" else [])
    assert not list(hub_cache.glob("models--*/blobs/*.incomplete"))


# -- Ctrl-C before and after the runs --------------------------------------------------------------


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_during_the_query_writes_no_list_of_models(tmp_path, monkeypatch, capsys):
    from wsc_tasks.cli import sweep
    from wsc_tasks.sweep import hub_query

    monkeypatch.setattr(hub_query, "search", _interrupt)
    out = tmp_path / "out"
    assert sweep.main(["--hub-query", "author=tiny", "--out", str(out), "--tasks", TASK]) == 130
    assert "interrupted; run the same command again to resume" in capsys.readouterr().err
    assert not (out / hub_query.EXPANDED).exists()


def test_ctrl_c_during_the_leaderboard_exits_130_naming_the_resume(tmp_path, monkeypatch, capsys):
    from wsc_tasks import leaderboard
    from wsc_tasks.cli import sweep as command

    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    monkeypatch.setattr(command, "sweep", lambda specs, launcher: {"chance1": "done"})
    monkeypatch.setattr(leaderboard, "build", _interrupt)
    argv = [str(models), "--out", str(tmp_path / "out"), "--tasks", TASK]
    assert command.main(argv) == 130
    assert "interrupted; run the same command again to resume" in capsys.readouterr().err
    assert not (tmp_path / "out" / "leaderboard.md").exists()
