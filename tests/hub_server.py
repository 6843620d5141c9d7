"""A local stand-in for the part of the Hugging Face Hub's HTTP API that a Hub sweep uses, for the
tests: ``HF_ENDPOINT=server.url`` and the real ``huggingface_hub`` client talk to it.

It answers the model listing (``GET /api/models?author=&search=&filter=&sort=&limit=``), a model's
info with its commit (``/api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}``), its file
tree (``/api/models/{repo}/tree/{rev}``) and file downloads (``HEAD``/``GET
/{repo}/resolve/{rev}/{file}`` with ``X-Repo-Commit``, ``ETag`` and ``Content-Length``, the headers
``huggingface_hub`` reads). A gated repository answers downloads without an accepted token with
401 and ``X-Error-Code: GatedRepo``, an unknown repository 401 ``RepoNotFound``, an unknown
revision 404 ``RevisionNotFound``: what ``huggingface_hub.utils.hf_raise_for_status`` maps to its
errors. Repositories are folders of files (``tests/tiny_models.py`` builds them); ``push`` adds a
commit and moves ``main`` (of a dataset repository with ``dataset=True``: ``/api/datasets/…`` and
``/datasets/{repo}/resolve/…`` answer for it, as the client asks for a dataset's files);
``delete`` removes a repository. Every request is recorded with its time
(``requests``); weight files can be served slowly (``seconds_per_weights``: their bytes trickle
out over that time, so a download can be cut half way), and the next downloads of a repository's
weights can fail (``failures``: each an HTTP status and the Hub's message) or break off half way
(status 0: the connection drops).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

WEIGHTS = (".safetensors", ".bin")


@dataclass
class Repo:
    id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> files
    refs: dict[str, str] = field(default_factory=dict)  # branch -> sha
    gated: bool = False
    created_at: str = "2025-01-01T00:00:00.000Z"
    tags: tuple[str, ...] = ("transformers", "safetensors", "text-generation")


def _blob_id(data: bytes) -> str:
    """git's id of a blob: what the Hub sends as the ETag of a file not stored in LFS."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324


class HubServer:
    """``with HubServer() as hub:`` a thread serving on 127.0.0.1 at a free port (``hub.url``)."""

    def __init__(self, token: str = "hf_accepted", seconds_per_weights: float = 0.0) -> None:
        self.repos: dict[str, Repo] = {}
        self.datasets: dict[str, Repo] = {}  # dataset repositories (``push(..., dataset=True)``)
        self.token = token  # the token of a user who accepted every gated repository's terms
        self.seconds_per_weights = seconds_per_weights
        self.failures: dict[str, list[tuple[int, str]]] = {}  # repo -> next weight downloads' fate
        self.requests: list[tuple[float, str, str]] = []  # (time.time(), method, path)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push(self, repo_id: str, folder: Path, dataset: bool = False, **settings: Any) -> str:
        """A commit of every file of ``folder`` to ``repo_id``'s ``main`` (the repository, a
        dataset one with ``dataset``, is made with ``settings`` if new); returns the commit's
        sha."""
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                 if p.is_file()}  # fmt: skip
        store = self.datasets if dataset else self.repos
        with self._lock:
            repo = store.setdefault(repo_id, Repo(repo_id, **settings))
            parent = repo.refs.get("main", "")
            listing = json.dumps(sorted((k, _blob_id(v)) for k, v in files.items()))
            sha = hashlib.sha1(f"{repo_id}{parent}{listing}".encode()).hexdigest()  # noqa: S324
            repo.commits[sha] = files
            repo.refs["main"] = sha
        return sha

    def delete(self, repo_id: str) -> None:
        """The repository is gone from the Hub (deleted, or made private)."""
        with self._lock:
            del self.repos[repo_id]

    def downloads(self, repo_id: str) -> list[tuple[float, str]]:
        """(time, path) of every GET of a file of ``repo_id``."""
        prefix = f"/{repo_id}/resolve/"
        return [(t, p) for t, m, p in self.requests if m == "GET" and p.startswith(prefix)]

    # the HTTP side

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802
                hub._answer(self, head=True)

            def do_GET(self) -> None:  # noqa: N802
                hub._answer(self, head=False)

        return Handler

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: bytes = b"",
              headers: dict[str, str] | None = None, head: bool = False) -> None:  # fmt: skip
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if not head and body:
            handler.wfile.write(body)

    def _json(self, handler: BaseHTTPRequestHandler, value: Any, head: bool = False) -> None:
        body = json.dumps(value).encode()
        self._send(handler, 200, body, {"Content-Type": "application/json"}, head)

    def _error(self, handler: BaseHTTPRequestHandler, status: int, code: str, message: str,
               head: bool = False) -> None:  # fmt: skip
        body = json.dumps({"error": message}).encode()
        headers = {"X-Error-Code": code, "X-Error-Message": message,
                   "Content-Type": "application/json"}  # fmt: skip
        self._send(handler, status, body, headers, head)

    def _answer(self, handler: BaseHTTPRequestHandler, head: bool) -> None:
        split = urlsplit(handler.path)
        path, query = unquote(split.path), parse_qs(split.query)
        with self._lock:
            self.requests.append((time.time(), handler.command, path))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) == 2:
            return self._json(handler, self._listing(query), head)
        if parts[:2] in (["api", "models"], ["api", "datasets"]) and len(parts) >= 4:
            store = self.datasets if parts[1] == "datasets" else self.repos
            repo = store.get("/".join(parts[2:4]))
            if repo is None:
                return self._error(handler, 401, "RepoNotFound", "Repository not found", head)
            rest = parts[4:]
            if not rest or rest[0] in ("revision", "tree"):
                sha = self._commit(repo, rest[1] if len(rest) > 1 else "main")
                if sha is None:
                    return self._error(handler, 404, "RevisionNotFound", "Invalid rev id", head)
                if rest and rest[0] == "tree":
                    files = repo.commits[sha]
                    tree = [{"type": "file", "path": name, "size": len(data),
                             "oid": _blob_id(data)} for name, data in files.items()]  # fmt: skip
                    return self._json(handler, tree, head)
                return self._json(handler, self._info(repo, sha, store), head)
        if parts[0] == "datasets" and len(parts) >= 6 and parts[3] == "resolve":
            name = "/".join(parts[1:3])
            return self._file(handler, name, parts[4], "/".join(parts[5:]), head, self.datasets)
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file(handler, "/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
        self._error(handler, 404, "NotFound", f"no route for {path}", head)

    @staticmethod
    def _commit(repo: Repo, revision: str) -> str | None:
        sha = repo.refs.get(revision, revision)
        return sha if sha in repo.commits else None

    def _info(self, repo: Repo, sha: str, store: dict[str, Repo] | None = None) -> dict[str, Any]:
        files = (self.repos if store is None else store)[repo.id].commits[sha]
        config = json.loads(files["config.json"]) if "config.json" in files else {}
        return {
            "_id": repo.id,
            "id": repo.id,
            "modelId": repo.id,
            "author": repo.id.split("/")[0],
            "sha": sha,
            "private": False,
            "gated": "manual" if repo.gated else False,
            "disabled": False,
            "createdAt": repo.created_at,
            "lastModified": repo.created_at,
            "tags": list(repo.tags),
            "library_name": "transformers",
            "pipeline_tag": "text-generation",
            "downloads": 0,
            "likes": 0,
            "config": {
                k: config[k] for k in ("architectures", "model_type", "auto_map") if k in config
            },  # fmt: skip
            "siblings": [{"rfilename": name, "size": len(data)} for name, data in files.items()],
        }

    def _listing(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        found = []
        for repo in self.repos.values():
            author, name = repo.id.split("/")
            if "author" in query and author != query["author"][0]:
                continue
            if "search" in query and query["search"][0].lower() not in repo.id.lower():
                continue
            if not set(query.get("filter", [])) <= set(repo.tags):
                continue
            info = self._info(repo, repo.refs["main"])
            found.append({k: info[k] for k in ("_id", "id", "modelId", "author", "sha", "private",
                                               "gated", "createdAt", "tags", "library_name",
                                               "downloads", "likes")})  # fmt: skip
        if query.get("sort", [""])[0] in ("createdAt", "created_at"):
            found.sort(key=lambda item: item["createdAt"], reverse=True)
        else:
            found.sort(key=lambda item: item["id"])
        return found[: int(query["limit"][0])] if "limit" in query else found

    def _file(self, handler: BaseHTTPRequestHandler, repo_id: str, revision: str, name: str,
              head: bool, store: dict[str, Repo] | None = None) -> None:  # fmt: skip
        repo = (self.repos if store is None else store).get(repo_id)
        if repo is None:
            return self._error(handler, 401, "RepoNotFound", "Repository not found", head)
        if repo.gated and handler.headers.get("Authorization") != f"Bearer {self.token}":
            message = f"Access to model {repo_id} is restricted. You must have access to it."
            return self._error(handler, 401, "GatedRepo", message, head)
        sha = self._commit(repo, revision)
        if sha is None:
            return self._error(handler, 404, "RevisionNotFound", "Invalid rev id", head)
        data = repo.commits[sha].get(name)
        if data is None:
            return self._error(handler, 404, "EntryNotFound", f"{name} does not exist", head)
        fate = None
        if not head and name.endswith(WEIGHTS):
            with self._lock:
                waiting = self.failures.get(repo_id)
                fate = waiting.pop(0) if waiting else None
        if fate is not None and fate[0]:
            return self._error(handler, fate[0], "ServerError", fate[1])
        headers = {"X-Repo-Commit": sha, "ETag": f'"{_blob_id(data)}"',
                   "Content-Type": "application/octet-stream"}  # fmt: skip
        if head or not name.endswith(WEIGHTS) or not (self.seconds_per_weights or fate):
            return self._send(handler, 200, data, headers, head)
        self._trickle(handler, data, headers, broken=fate is not None)

    def _trickle(self, handler: BaseHTTPRequestHandler, data: bytes, headers: dict[str, str],
                 broken: bool) -> None:  # fmt: skip
        """``data`` in 50 pieces over ``seconds_per_weights`` (half of them, then the
        connection closed, when ``broken``)."""
        handler.send_response(200)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        pieces = 50
        step = -(-len(data) // pieces)
        try:
            for index in range(pieces):
                if broken and index == pieces // 2:
                    handler.close_connection = True
                    return
                handler.wfile.write(data[index * step : (index + 1) * step])
                handler.wfile.flush()
                time.sleep(self.seconds_per_weights / pieces)
        except (BrokenPipeError, ConnectionResetError):  # the client went away: a cut download
            handler.close_connection = True
