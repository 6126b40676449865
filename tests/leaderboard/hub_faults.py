"""A Hub that refuses, hangs or fails half-way, for the store-of-record tests (imported by path).

``FaultyHub`` is the dataset builder's Hub stand-in (tests/dataset_builder/hub_standin.py) with a
log of commits, deleted files, a first commit in every new repo (as the Hub makes) and
``fail_commits``: the next N commit requests are read in full (the preupload step before them
succeeded) and then answered 500, so nothing of them lands. ``HangingHub``
accepts connections and never answers until released. ``refused_url()`` is a port nobody listens on.
"""
from __future__ import annotations

import importlib.util
import json
import socket
import threading
from pathlib import Path

from aiohttp import web

_spec = importlib.util.spec_from_file_location(
    "hub_standin_for_leaderboard", Path(__file__).resolve().parents[1] / "dataset_builder" / "hub_standin.py")
hub_standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hub_standin)


class FaultyHub(hub_standin.HubStandIn):
    def __init__(self):
        super().__init__()
        self.commits: list[list[str]] = []  # the paths of each commit that landed
        self.landed = threading.Condition()  # notified after each commit that landed
        self.fail_commits = 0
        self.failed = 0

    async def _create(self, request: web.Request) -> web.Response:
        """Like the Hub, a new dataset repo has a first commit (its .gitattributes): it is served
        at once, empty of entries."""
        response = await super()._create(request)
        if response.status == 200:
            repo_id = json.loads(response.body)["name"]
            self.put(repo_id, {".gitattributes": b"*.tar.gz filter=lfs diff=lfs merge=lfs -text\n"})
        return response

    async def _commit(self, request: web.Request) -> web.Response:
        body = await request.read()
        if self.fail_commits > 0:
            self.fail_commits -= 1
            self.failed += 1
            return web.json_response({"error": "Internal Error - We're working hard to fix this"}, status=500)
        items = [json.loads(line) for line in body.splitlines()]
        paths = [item["value"]["path"] for item in items if item.get("key") == "file"]
        deleted = [item["value"]["path"] for item in items if item.get("key") == "deletedFile"]
        response = await super()._commit(request)
        if response.status == 200:
            self.commits.append(sorted(paths))
            repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
            for path in deleted:  # the Hub's commit API deletes too (CommitOperationDelete)
                self.repos[repo_id].pop(path, None)
            with self.landed:
                self.landed.notify_all()
        return response

    def wait_for(self, predicate, timeout: float) -> bool:
        """Block until ``predicate()`` holds after some commit landed (False after ``timeout``)."""
        with self.landed:
            return self.landed.wait_for(predicate, timeout)

    def put(self, repo_id: str, files: dict[str, bytes]) -> None:
        """Files already in the repo (as a commit landed earlier)."""
        self.repos.setdefault(repo_id, {}).update(files)
        self.hosted[repo_id] = {"sha": f"{len(self.requests) + 1:040x}", "files": self.repos[repo_id]}


class HangingHub:
    """Accepts every connection and never answers (until ``release``)."""

    def __init__(self):
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.accepted = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    def __enter__(self) -> "HangingHub":
        self._thread.start()
        return self

    def release(self) -> None:
        for conn in self.held:
            conn.close()
        self._server.close()

    def __exit__(self, *exc) -> None:
        self.release()


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: connecting is refused
