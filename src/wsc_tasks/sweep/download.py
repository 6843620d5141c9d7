"""One Hub snapshot downloaded: ``python -m wsc_tasks.sweep.download REPO COMMIT``.

A sweep downloads each snapshot in a process of its own (started through ``tether``, in its own
process group) so that Ctrl-C, SIGTERM or a scheduler's cancel ends a download at once: a thread
in ``huggingface_hub`` cannot be stopped, and the interpreter waits for it at exit. A transient
error (the Hub answering 429 or 5xx, a dropped or refused connection, a timeout) is tried again
after ``BACKOFF_S``; the last error is one line on stderr naming the repository, the Hub's own
reason and the fix, and the exit status says its kind (``EXIT``).
"""

from __future__ import annotations

import errno
import sys
import time
from collections.abc import Callable, Sequence

BACKOFF_S = (2.0, 6.0)  # the waits before the second and third tries
EXIT = {"transient": 3, "gone": 4, "disk": 5, "refused": 6}


class DownloadError(Exception):
    """A download that failed for good; ``kind`` is a key of ``EXIT``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _reason(error: BaseException) -> str:
    """The Hub's own words for an HTTP error (its ``X-Error-Message`` or JSON ``error``), with
    the status; else the error's text."""
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    said = getattr(error, "server_message", None) or ""
    said = " ".join(str(said).split())
    if status is not None:
        return f"HTTP {status}" + (f": {said}" if said else "")
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _classify(error: BaseException, repo: str, commit: str) -> DownloadError | None:
    """The failure for good that ``error`` is, or None when it is worth another try."""
    import httpx2
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return DownloadError(
            "disk",
            f"{repo}: no space left on the disk of the Hugging Face cache "
            f"({constants.HF_HUB_CACHE}) while downloading: free space there, point HF_HOME at a "
            "larger disk, or lower --prefetch; the next sweep tries again",
        )
    if isinstance(error, GatedRepoError):
        return DownloadError(
            "refused",
            f"{repo} is gated ({_reason(error)}): accept its terms on the Hub and give a token "
            "with access (HF_TOKEN=…); the next sweep checks it again",
        )
    if isinstance(error, RevisionNotFoundError):
        return DownloadError(
            "gone",
            f"{repo} no longer has commit {commit[:12]} ({_reason(error)}): its revision was "
            "rewritten on the Hub; the next sweep pins the revision again",
        )
    if isinstance(error, RepositoryNotFoundError):
        return DownloadError(
            "gone",
            f"{repo} is no longer on the Hub, or no longer public ({_reason(error)}): check it "
            "on the Hub or give a token with access (HF_TOKEN=…); the next sweep checks it again",
        )
    if isinstance(error, HfHubHTTPError):
        status = getattr(error.response, "status_code", 0) or 0
        if status == 429 or status >= 500:
            return None
        return DownloadError(
            "refused", f"{repo}@{commit[:12]}: the Hub refused the download ({_reason(error)})"
        )
    if isinstance(error, httpx2.TransportError | TimeoutError | ConnectionError):
        return None
    return DownloadError("refused", f"{repo}@{commit[:12]}: {_reason(error)}")


def download(
    repo: str,
    commit: str,
    backoff_s: Sequence[float] = BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """The snapshot of ``repo`` at ``commit`` in the Hugging Face cache, or ``DownloadError``."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # the sweep has its own
    tries = len(backoff_s) + 1
    for attempt in range(tries):
        try:
            snapshot_download(repo, revision=commit)
            return
        except Exception as error:  # noqa: BLE001 - each kind is named by _classify
            failed = _classify(error, repo, commit)
            if failed is not None:
                raise failed from None
            if attempt + 1 == tries:
                raise DownloadError(
                    "transient",
                    f"{repo}@{commit[:12]}: the download failed {tries} times, the last with "
                    f"{_reason(error)}: check the Hub's status and the network; the next sweep "
                    "tries again",
                ) from None
            sleep(backoff_s[attempt])


def main(argv: Sequence[str] | None = None) -> int:
    repo, commit = sys.argv[1:3] if argv is None else argv
    try:
        download(repo, commit)
    except DownloadError as error:
        print(error, file=sys.stderr)
        return EXIT[error.kind]
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
