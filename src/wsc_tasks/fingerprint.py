"""What identifies a model's weights and tokenizer, for caches and for a sweep's finished runs.

lm-eval keys its request cache by the request alone, and a sweep used to recognise a finished
model by its entry in the models file alone: new weights saved at the same path then read the old
answers, or were reported from the old run. ``cache_key`` adds the files themselves (or the Hub
commit), so anything keyed by it changes when the model does.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path

from wsc_tasks.paths import MODEL_FILE_ARGS  # pretrained=, tokenizer=, peft=, delta=, gguf_file=


def _files_fingerprint(path: Path) -> list[tuple[str, int, int]]:
    """(relative name, size, mtime in ns) of every file under ``path`` (or of ``path`` itself);
    hidden folders and Python byte code are left out (they change without the model changing)."""
    if path.is_file():
        stat = path.stat()
        return [(path.name, stat.st_size, stat.st_mtime_ns)]
    found = []
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts[:-1]):
            continue
        if file.is_file() and file.suffix != ".pyc":
            stat = file.stat()
            found.append((relative.as_posix(), stat.st_size, stat.st_mtime_ns))
    return found


def _hub_commit(repo: str, revision: str | None) -> str | None:
    """The commit a Hub id resolves to in the local Hugging Face cache (offline), if cached."""
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:  # pragma: no cover - a dependency of transformers
        return None
    ref = Path(HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}" / "refs" / (revision or "main")
    return ref.read_text(encoding="utf-8").strip() if ref.is_file() else None


# a local path's files (name, size, mtime), or a Hub id and its cached commit
Fingerprint = list[tuple[str, int, int]] | dict[str, str | None]


def model_fingerprint(args: str) -> dict[str, Fingerprint]:
    """What identifies the weights and tokenizer named in ``args`` (``key=value,…``): for a local
    path the size and modification time of each of its files, for a Hub id its cached commit
    (else the id and ``revision=`` as given)."""
    values = dict(item.split("=", 1) for item in args.split(",") if "=" in item)
    found: dict[str, Fingerprint] = {}
    for key in MODEL_FILE_ARGS:
        value = values.get(key)
        if not value:
            continue
        path = Path(value).expanduser()
        if key == "gguf_file" and not path.is_absolute():
            continue  # a file inside pretrained=, covered by its folder
        if path.exists():
            found[key] = _files_fingerprint(path)
        elif key != "gguf_file":
            found[key] = {"hub": value, "commit": _hub_commit(value, values.get("revision"))}
    return found


@cache
def package_fingerprint() -> str:
    """16 hex digits that change with this package's version and with any of its source files or
    task YAMLs (an editable install keeps one version while its code changes)."""
    import wsc_tasks
    from wsc_tasks.paths import include_path

    digest = hashlib.sha256(metadata_version().encode())
    for root in (Path(wsc_tasks.__file__).parent, include_path()):
        for file in sorted(root.rglob("*")):
            if file.suffix in (".py", ".yaml", ".yml") and "__pycache__" not in file.parts:
                digest.update(file.relative_to(root).as_posix().encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def metadata_version() -> str:
    """This package's installed version; "source" for a checkout on ``sys.path``."""
    from importlib import metadata

    try:
        return metadata.version("wsc-tasks")
    except metadata.PackageNotFoundError:
        return "source"


def cache_key(model: str, args: str) -> str:
    """One model's identity in 16 hex digits: its lm-eval model type, its arguments, and the
    fingerprint of its weights and tokenizer, so a model re-saved at the same path gets a new key
    (the sweep's request cache file and the ``fingerprint`` of its ``done.json``)."""
    identity = {"model": model, "args": args, "files": model_fingerprint(args)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
