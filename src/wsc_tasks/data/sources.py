"""Where the dataset files come from: a local directory, or the pinned public sources.

Files are named by their path relative to the data root (``maler/wsc266/wsc266.txt``). The root is
``$WSC_TASKS_DATA`` or a per-user cache directory. A missing file is downloaded from the commit-pinned
public URL, checked against its SHA-256 and written atomically; a present file is checked too, so a
number printed by this project always comes from the bytes the papers used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

log = logging.getLogger(f"lm_eval.{__name__}")  # follows lm-eval's handler and level

ENV_VAR = "WSC_TASKS_DATA"

# (local folder, GitHub owner/repo, commit, path prefix inside that repository)
SOURCES: dict[str, tuple[str, str, str]] = {
    "maler": (
        "adrianmaler85/evaluating-common-sense",
        "0565253593f09f1661b27c5662cd9c1f080a8850",
        "",
    ),
    "elazar": ("yanaiela/winograd_square_one", "ad58d7e21e961a26f46f2c939cc28e2c9362e33c", "data/"),
    "winowhy": ("HKUST-KnowComp/WinoWhy", "d9487af23c5926ec28dc4783d1d1f86dd5a68d93", ""),
}

# SHA-256 of every file the project reads (same values as the published SHA256SUMS).
CHECKSUMS: dict[str, str] = {
    "elazar/associatives/WSC_associative_label.json": "cbddc5ecfa202acaab19caa1d01d655a023c58376b1a79ee11864ddb34bd0b34",
    "elazar/winogrande/dev.jsonl": "1aeac79cf46a3dcbe59a71ca7e5372a1490cde2b4ae2387dc56f00378104d2e8",
    "elazar/winogrande/train_xs.jsonl": "2f159f8216e54cdf835399ac10ebdd66699ca53934f4fc21a42d222512571dae",
    "elazar/winohard/no_cands/dev.jsonl": "d9aceef0a13c46e4bddcdfdbe3de220f48d91b5cd12388db527efc7bbc484fdb",
    "elazar/winohard/pairs/dev.jsonl": "1fa4c5a3932bdefeea766f159ab6b3c0efb00e89e5fd486403671235ea1b7c79",
    "elazar/winohard/pairs/wsc.jsonl": "4e9fd52203b1e51b55d39d3ecdba914b6e085d103419553074c216ed5a0790b7",
    "elazar/winohard/pairs/wsc_non_associative.jsonl": "e23bc8543fbf52efb5ab68ad66ca441a29c3a807245ecd054ce32b0d28ada4eb",
    "elazar/winohard/transformed/zero_shot/dev.jsonl": "5b298bc77e97ab3f81a5ced04e07e3670fb21b7f825c0c97453a2f28ec39cabf",
    "elazar/winohard/transformed/zero_shot/dev_lms.jsonl": "607cdea47f2ed6fc5f8b6aebc0328aa60578006c34fccd869874a0443f3346cb",
    "elazar/winohard/truncated/dev.jsonl": "64259b1982d40081bb7464e56fbda7b734b4a7a3eb56d4a93a60c3eb0f120961",
    "elazar/wsc/wsc.jsonl": "42a1b790e69952ca609b82b494d53be930a9e5622bbe88697563116fdd8ab0ad",
    "maler/reid250/reid250-inverted.txt": "a0d2b82f4cbf57dba80f42cd19b93a245258cc015c78a6fbee6ef26a896b60a5",
    "maler/reid250/reid250.txt": "fd646825e4be4205118665e7f553e790d27e7c3edae1c675bd466630b5e5d2b6",
    "maler/reid250/reid250x2-v1-by-answer.txt": "8f357a24da3975c0555149ae89151ca253bf25161481256f4fdfdec082b4f622",
    "maler/reid250/reid250x2-v1-by-boolean.txt": "f3e50f789828bdb8c3aff75c6875788b3c4dd41e862907d516c27cac54bf6859",
    "maler/reid250/reid250x2-v1-by-key.txt": "d54c6c15aa95b095f852f58aaca7945268bc6b0a2dd79c199c0feed36b97b01c",
    "maler/token_frequencies/frequencies_with_eos.txt": "1055de42dbea19fe84bc0d7c433c9b37883b82c34b1928c3267b1941642a6dc6",
    "maler/token_frequencies/frequencies_without_eos.txt": "fa975936847011c7378269b93cc23b29d45e87d32750977aec2eb311c5fdc2a3",
    "maler/wsc266/wsc266.txt": "83f6c3e525ef2f87d737a7bf2d83a4281a1d56e3b2df6087eb65d2539e2050ba",
    "maler/wsc266/wsc266_adjectival.txt": "765e3f2cc9929d5a8b17ca1b25404006fc9a894b81432e2656b0cb2704e870e7",
    "maler/wsc266/wsc266_associative.txt": "e5cedcb9f5ed29a3c08c1c30a6b0b3000c507798c8f4033a601f0ac2325ec679",
    "maler/wsc266/wsc266_associative_nocands.txt": "90a0290c028bd035b5201115ed930717ed0033dd4f06dbb1c62f1d3d91e465fe",
    "maler/wsc266/wsc266_inverted.txt": "ff88e602cdb5026e6e6eb3015da23277d5640b2e2d89cb3d1179cf0f66c8ed18",
    "maler/wsc266/wsc266_nonassociative.txt": "8dcea23ce5c3e740f1cb7a1ac2459e192d4203a43f435f2840ed1790826f8df4",
    "maler/wsc266/wsc266_nonassociative_nocands.txt": "474ffbb10ef8aad258950a81a8bb81f7f8beda2459bf730de869ab41d930b0c9",
    "maler/wsc266/wsc266_switched.txt": "8c48df280ea4bea57e517f77d19807194f93af7ca9bf183f8a78bab9612c0bce",
    "maler/wsc266/wsc266_unbalanced.txt": "e1dd66afa723f8a9dd89cc134c0c228af50975f0b840f7f4a97341ae8a0745f6",
    "maler/wsc266/wsc273.txt": "9d9ca36c4446727f602fa38258cebf0616ac3a931f7932885bb2025d201d59bf",
    "winowhy/LICENSE": "e95430244b7038c87148886d17069896085fc229dc44802fa0461d39ae0ed72f",
    "winowhy/cat_ref.json": "1ec1e647b73382c245c5375f401cba469b1f722cdabf7350b96c8b80c0b2ed82",
    "winowhy/winowhy.json": "6147f96c6f3fb0635dc6c2e44faf84097ae8a8ada3f533c4824b1b1d1ee1aefc",
}

_VERIFIED: set[Path] = set()


class DataError(RuntimeError):
    """A dataset file is missing, unreachable or not the pinned one."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "wsc_tasks" / "data"


def data_root() -> Path:
    """The data directory in force; a set but non-existent ``$WSC_TASKS_DATA`` is an error."""
    value = os.environ.get(ENV_VAR)
    if not value:
        return default_cache_dir()
    root = Path(value).expanduser()
    if not root.is_dir():
        raise DataError(
            f"{ENV_VAR}={value!r} is not a directory (resolved to {root.resolve()}). "
            f"Point {ENV_VAR} at the folder that holds maler/, elazar/ and winowhy/, "
            f"or unset it to use the download cache {default_cache_dir()}."
        )
    return root


def portable_name(path: str | Path) -> str:
    """``path`` relative to the data directory when it lies inside it, else as given: a problem's
    recorded source must not depend on where a machine keeps the data."""
    try:
        return Path(path).resolve().relative_to(data_root().resolve()).as_posix()
    except (ValueError, DataError):
        return str(path)


def source_url(relpath: str) -> str:
    """The commit-pinned raw URL of a dataset file."""
    folder, _, rest = relpath.partition("/")
    if folder not in SOURCES or relpath not in CHECKSUMS:
        raise DataError(f"unknown dataset file {relpath!r}; known files: {sorted(CHECKSUMS)}")
    repo, commit, prefix = SOURCES[folder]
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{prefix}{rest}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(relpath: str, path: Path) -> None:
    actual = sha256_of(path)
    expected = CHECKSUMS[relpath]
    if actual != expected:
        url = source_url(relpath)
        why_not = _why_fetch_cannot_help(url, path)
        fix = (
            "delete it and run `wsc-tasks data fetch` to download the pinned one"
            if why_not is None
            else f"replace it with a copy of the pinned file (`wsc-tasks data fetch` cannot: "
            f"{why_not}), or set {ENV_VAR} to a folder that holds the pinned files"
        )
        raise DataError(
            f"checksum mismatch for {path}: SHA-256 is {actual}, expected {expected} "
            f"(the pinned file {url}). The file is corrupt or a different version; {fix}."
        )


def _why_fetch_cannot_help(url: str, path: Path) -> str | None:
    """Why ``wsc-tasks data fetch`` could not replace ``path`` (a folder it cannot write, or no
    network to the source: a short probe, on this error path only), or None if it could."""
    if not os.access(path.parent, os.W_OK):
        return f"{path.parent} is not writable"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5):
            return None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        return f"{urllib.parse.urlsplit(url).netloc} cannot be reached ({reason})"


def _download(relpath: str, dest: Path) -> None:
    url = source_url(relpath)
    log.info(f"wsc_tasks: downloading {url} -> {dest}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise DataError(
            f"dataset file {relpath!r} is missing ({dest}) and could not be downloaded from "
            f"{url} ({error}). Offline? Copy the file to {dest}, or set {ENV_VAR} to a "
            f"directory that holds {relpath}."
        ) from None  # the network's own traceback says nothing more
    actual = hashlib.sha256(payload).hexdigest()
    if actual != CHECKSUMS[relpath]:
        raise DataError(
            f"checksum mismatch for the download of {url}: SHA-256 is {actual}, expected "
            f"{CHECKSUMS[relpath]}. Nothing was written to {dest}."
        )
    dest.parent.mkdir(parents=True, exist_ok=True)  # only now: a failed download leaves nothing
    handle, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def resolve(relpath: str) -> Path:
    """Local path of a verified dataset file, downloading it first if it is missing."""
    if relpath not in CHECKSUMS:
        raise DataError(f"unknown dataset file {relpath!r}; known files: {sorted(CHECKSUMS)}")
    root = data_root()
    path = root / relpath
    if path in _VERIFIED:
        return path
    if not path.is_file():
        nested = root / "data" / relpath
        if nested.is_file():
            raise DataError(
                f"{path} does not exist, but {nested} does: set {ENV_VAR}={root / 'data'}"
            )
        _download(relpath, path)
    _check(relpath, path)
    _VERIFIED.add(path)
    return path


def fetch_all() -> list[Path]:
    """Resolve (download if needed, then verify) every pinned file."""
    return [resolve(relpath) for relpath in sorted(CHECKSUMS)]
