"""Data resolution: local directory, pinned download with checksum, and the errors users see."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import urllib.error
from pathlib import Path

import pytest

from wsc_tasks.data import sources

REL = "maler/wsc266/wsc266.txt"


@pytest.fixture(autouse=True)
def _fresh_verification_cache():
    sources._VERIFIED.clear()
    yield
    sources._VERIFIED.clear()


def test_resolves_and_verifies_from_env(data_dir, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(data_dir))
    assert sources.resolve(REL) == data_dir / REL


def test_source_url_is_commit_pinned():
    assert sources.source_url(REL) == (
        "https://raw.githubusercontent.com/adrianmaler85/evaluating-common-sense/"
        "0565253593f09f1661b27c5662cd9c1f080a8850/wsc266/wsc266.txt"
    )
    assert sources.source_url("elazar/winogrande/dev.jsonl").endswith(
        "ad58d7e21e961a26f46f2c939cc28e2c9362e33c/data/winogrande/dev.jsonl"
    )


def test_checksums_match_published_list(data_dir):
    published = {}
    for line in (data_dir / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split()
        published[path.removeprefix("./")] = digest
    assert published == sources.CHECKSUMS


def test_wrong_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(tmp_path / "nope"))
    with pytest.raises(sources.DataError, match=r"WSC_TASKS_DATA=.*nope.* is not a directory"):
        sources.resolve(REL)


def test_parent_of_data_directory_gets_a_hint(data_dir, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(data_dir.parent))
    with pytest.raises(sources.DataError, match=r"set WSC_TASKS_DATA=.*data"):
        sources.resolve(REL)


def test_missing_file_offline_names_file_url_and_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(tmp_path))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(sources.urllib.request, "urlopen", offline)
    with pytest.raises(sources.DataError) as error:
        sources.resolve(REL)
    message = str(error.value)
    assert REL in message and sources.source_url(REL) in message and "WSC_TASKS_DATA" in message
    assert error.value.__cause__ is None and error.value.__suppress_context__  # no network trace
    assert list(tmp_path.iterdir()) == []  # no empty folder left behind


def test_corrupt_local_file_is_a_checksum_error(data_dir, tmp_path, monkeypatch):
    """The fix it names is one that works here: `wsc-tasks data fetch` only when the source can
    be reached (before, it was suggested offline too)."""
    target = tmp_path / REL
    target.parent.mkdir(parents=True)
    shutil.copy(data_dir / REL, target)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n")
    monkeypatch.setenv("WSC_TASKS_DATA", str(tmp_path))

    class Reached:
        def __enter__(self):
            return self

        def __exit__(self, *args):
            return False

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(sources.urllib.request, "urlopen", lambda *a, **k: Reached())
    with pytest.raises(sources.DataError) as online:
        sources.resolve(REL)
    assert str(online.value).startswith(f"checksum mismatch for {target}: SHA-256 is ")
    assert str(online.value).endswith(
        "delete it and run `wsc-tasks data fetch` to download the pinned one."
    )
    monkeypatch.setattr(sources.urllib.request, "urlopen", offline)
    with pytest.raises(sources.DataError) as error:
        sources.resolve(REL)
    assert str(error.value).endswith(
        "The file is corrupt or a different version; replace it with a copy of the pinned file "
        "(`wsc-tasks data fetch` cannot: raw.githubusercontent.com cannot be reached (no "
        "network)), or set WSC_TASKS_DATA to a folder that holds the pinned files."
    )


def test_download_is_verified_and_atomic(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(tmp_path))
    monkeypatch.setattr(sources, "source_url", lambda rel: (data_dir / rel).as_uri())
    path = sources.resolve(REL)
    assert path == tmp_path / REL
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sources.CHECKSUMS[REL]
    assert [p.name for p in path.parent.iterdir()] == ["wsc266.txt"]  # no partial file left


def test_download_with_wrong_bytes_writes_nothing(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WSC_TASKS_DATA", str(tmp_path))
    wrong = data_dir / "maler/wsc266/wsc273.txt"
    monkeypatch.setattr(sources, "source_url", lambda rel: wrong.as_uri())
    with pytest.raises(sources.DataError, match="checksum mismatch for the download"):
        sources.resolve(REL)
    assert not (tmp_path / REL).exists()


def test_unknown_file():
    with pytest.raises(sources.DataError, match="unknown dataset file"):
        sources.resolve("maler/nothing.txt")


def test_no_dataset_file_is_committed():
    repo = Path(__file__).resolve().parents[1]
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=False
    ).stdout.split(b"\0")
    pinned = set(sources.CHECKSUMS.values())
    for name in filter(None, listed):
        path = repo / name.decode()
        if path.is_file():
            assert hashlib.sha256(path.read_bytes()).hexdigest() not in pinned, name
