"""The static server for the built site: explicit content types and the site's CSP header.

``make_server(directory)`` serves a built ``dist/`` on 127.0.0.1 (``python build.py --serve``,
the browser tests, ``bench/bench_lab.py``). The CSP it sends is the one the pages are built
for: scripts and connections from the site's own origin only, WebAssembly for Pyodide.
"""
from __future__ import annotations

import http.server
import os
import sys
from pathlib import Path

# Content types the server sends, set explicitly: Python's mimetypes reads the
# Windows registry, where .mjs can come out as text/plain.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",
    ".zip": "application/zip",
    ".vtt": "text/vtt; charset=utf-8",
    ".wgsl": "text/plain; charset=utf-8",
    ".py": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}

CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'")



class Handler(http.server.SimpleHTTPRequestHandler):
    """Static files with explicit content types and the site's CSP header."""

    extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map, **CONTENT_TYPES)

    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, fmt, *args):  # quiet by default
        if os.environ.get("CANNERY_LOG"):
            super().log_message(fmt, *args)


class Server(http.server.ThreadingHTTPServer):
    """The static server, quiet when a browser hangs up mid-file (a page closed while
    Pyodide downloads, a test cutting a request): http.server would print a traceback."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def make_server(directory: Path, host: str = "127.0.0.1", port: int = 8000,
                prefix: str = "") -> http.server.ThreadingHTTPServer:
    """A threaded static server for ``directory`` (port 0 picks a free one).

    With ``prefix`` (e.g. "/cannery"), the site is served under that subpath,
    as a static host would.
    """
    root = str(directory)

    class _H(Handler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def translate_path(self, path):
            if prefix:
                if not path.startswith(prefix + "/"):
                    return os.path.join(root, "__not_found__")
                path = path[len(prefix):]
            return super().translate_path(path)

    return Server((host, port), _H)
