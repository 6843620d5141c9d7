"""A details dataset repository on the Hub: its newest ``winogrande`` details file, downloaded.

Through the real ``huggingface_hub`` client (``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HOME`` as it
reads them): the repository's files at the revision asked (``main`` unless ``@rev``), the newest
``details_<suite>|winogrande|<shots>_<time>.parquet`` of them (the run the dataset's ``latest``
split points at), downloaded into the client's cache, or into ``local_dir`` for a leaderboard
folder. Every failure is one line naming the repository and why (no such repository, a gated
one, no winogrande details in it, the Hub unreachable).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from wsc_tasks.runs.foreign.leaderboard_details import TASKS, DetailsFile
from wsc_tasks.runs.foreign.pinned import ForeignError

PREFIX = "hub:"  # how a source names a Hub dataset repository: hub:<owner>/<name>[@<revision>]


@dataclass(frozen=True)
class Fetched:
    path: Path  # the downloaded file
    repo: str
    commit: str
    file: str  # its path in the repository

    @property
    def shown(self) -> str:
        return f"{self.repo}@{self.commit[:12]}:{self.file}"


def parse(text: str) -> tuple[str, str | None]:
    """``hub:<owner>/<name>[@<revision>]`` → (repository, revision or None)."""
    body = text.removeprefix(PREFIX)
    repo, _, revision = body.partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise ForeignError(f"{text}: name a dataset repository as hub:<owner>/<name>[@<revision>]")
    return repo, revision or None


def newest(files: list[str]) -> str | None:
    """The newest winogrande details file among a repository's files."""
    found = [(DetailsFile.of(Path(PurePosixPath(f).name)), f) for f in files]
    chosen = [(d.date.replace(":", "-"), f) for d, f in found if d is not None and d.task in TASKS]
    return max(chosen)[1] if chosen else None


def fetch(text: str, local_dir: Path | None = None) -> Fetched:
    """The newest winogrande details file of the repository ``text`` names, downloaded."""
    from huggingface_hub import HfApi, constants, hf_hub_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo, revision = parse(text)
    where = f"{text} (on {constants.ENDPOINT})"
    try:
        info = HfApi().dataset_info(repo, revision=revision)
        files = [s.rfilename for s in info.siblings or []]
        chosen = newest(files)
        if chosen is None:
            raise ForeignError(
                f"{where}: no winogrande details file (details_<suite>|winogrande|<shots>_<time>"
                f".parquet) among its {len(files)} files"
            )
        commit = str(info.sha)
        path = hf_hub_download(
            repo, chosen, repo_type="dataset", revision=commit,
            local_dir=str(local_dir) if local_dir is not None else None,
        )  # fmt: skip
    except GatedRepoError:
        raise ForeignError(f"{where}: a gated repository; accept its terms on the Hub and set "
                           "HF_TOKEN") from None  # fmt: skip
    except RepositoryNotFoundError:
        raise ForeignError(f"{where}: no such dataset repository (or a private one)") from None
    except RevisionNotFoundError:
        raise ForeignError(f"{where}: no revision {revision}") from None
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as error:
        why = " ".join(str(error).split())[:200]
        raise ForeignError(f"{where}: cannot be fetched ({why}): check HF_ENDPOINT and the "
                           "network") from None  # fmt: skip
    return Fetched(Path(path), repo, commit, chosen)
