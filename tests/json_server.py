"""A JSON-over-HTTP stub on localhost for the served-model tests: each POST's JSON body goes to
``answer(path, body)``, and the ``(status, object)`` it returns is written back as JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, Any], tuple[int, Any]]


def serve(answer: Answer) -> tuple[ThreadingHTTPServer, str]:
    """The running server (``shutdown()`` it) and its base address, ``http://127.0.0.1:PORT``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, out = answer(self.path, body)
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
