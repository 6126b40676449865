"""A local stand-in for the assets' origins: serves a shared folder by the lock's URL paths.

``AssetOrigin(shared, entries)`` maps each entry's URL path to ``shared/<dest>``; an entry with a
``member`` gets a zip built once, holding that file under the member's path (the archive differs
from the real wheel; the member is the same file). GETs honour ``Range: bytes=N-`` (206), as the
real origins do. Faults for tests: ``cut[path] = n`` sends only the first n bytes of the next
response for that path, then closes the connection; ``tamper[path] = bytes`` serves other bytes.
Every request is logged as ``(path, range header)``. Used by tests/assets and bench/assets_fetch.py.
"""
from __future__ import annotations

import io
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class AssetOrigin:
    def __init__(self, shared: Path, entries):
        self.content: dict[str, Path | bytes] = {}
        archives: dict[str, zipfile.ZipFile] = {}
        buffers: dict[str, io.BytesIO] = {}
        for entry in entries:
            path = unquote(urlsplit(entry.url).path)
            if entry.member is None:
                self.content[path] = Path(shared) / entry.dest
            else:
                if path not in archives:
                    buffers[path] = io.BytesIO()
                    archives[path] = zipfile.ZipFile(buffers[path], "w", zipfile.ZIP_DEFLATED)
                archives[path].write(Path(shared) / entry.dest, entry.member)
        for path, archive in archives.items():
            archive.close()
            self.content[path] = buffers[path].getvalue()
        self.cut: dict[str, int] = {}
        self.tamper: dict[str, bytes] = {}
        self.log: list[tuple[str, str | None]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def body(self, path: str) -> bytes | None:
        if path in self.tamper:
            return self.tamper[path]
        source = self.content.get(path)
        return source.read_bytes() if isinstance(source, Path) else source

    def _handler(self):
        origin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 (http.server naming)
                path = unquote(urlsplit(self.path).path)
                origin.log.append((path, self.headers.get("Range")))
                data = origin.body(path)
                if data is None:
                    self.send_error(404)
                    return
                start, status = 0, 200
                ranged = self.headers.get("Range", "")
                if ranged.startswith("bytes=") and ranged.endswith("-"):
                    start = int(ranged[6:-1])
                    if start >= len(data):
                        self.send_error(416)
                        return
                    status = 206
                payload = data[start:]
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                cut = origin.cut.pop(path, None)
                self.wfile.write(payload if cut is None else payload[:cut])
                if cut is not None:
                    self.close_connection = True

        return Handler

    def __enter__(self) -> "AssetOrigin":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
