"""A local stand-in for the few Hub endpoints ``HfApi.create_repo`` + ``upload_folder`` call (aiohttp on 127.0.0.1).

Endpoints (huggingface_hub 2.x): ``POST /api/repos/create``, ``POST /api/validate-yaml`` (the card's
front matter), ``POST /api/{type}s/{repo}/preupload/{rev}``
(every file answered as a "regular" upload, so no LFS/Xet transfer happens) and
``POST /api/{type}s/{repo}/commit/{rev}`` (NDJSON: a header line, then one line per file with its
base64 content). For ``--online`` source reads it also serves ``GET /api/datasets/{repo}``
(the current commit) and ``HEAD``/``GET /datasets/{repo}/resolve/{revision}/{path}``. Received files are decoded and kept in ``repos[repo_id]`` for the test to compare.

A pushed dataset repo is then also served (``hosted``) at its new commit, so what ``push_dataset``
uploaded can be read back with ``datasets``. Space repos (``create_repo(..., repo_type="space")``) go to ``spaces[repo_id]`` instead, through the
same preupload/commit routes under ``/api/spaces/``; their committed files are served back at
``/spaces/{repo}/resolve/{revision}/{path}`` (revision ``main`` or the last commit; any other, such
as the ``v0.4.6`` tag evaluate asks for first, is a 404 as on the Hub), which is where
``evaluate.load("ORG/name")`` downloads ``name.py``.
"""
from __future__ import annotations

import asyncio
import base64
import json
import threading

import pytest
from aiohttp import web


class HubStandIn:
    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.spaces: dict[str, dict[str, bytes]] = {}
        self.space_commits: dict[str, str] = {}  # repo_id -> last commit oid
        self.forbidden_namespaces: set[str] = set()  # create_repo there answers 403, as for a token without rights
        self.created: list[dict] = []
        self.validated: list[dict] = []
        self.hosted: dict[str, dict] = {}       # repo_id -> {"sha": commit, "files": {path: bytes}} to serve
        self.downloads: list[tuple[str, str, str]] = []
        self.requests: list[str] = []
        self.unhandled: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.url = ""

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.created.append(body)
        repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        kind = "spaces" if body.get("type") == "space" else "datasets"
        if body.get("organization") in self.forbidden_namespaces:
            return web.json_response({"error": "You don't have the rights to create a repo under this namespace"},
                                     status=403)
        if kind == "spaces" and not body.get("sdk"):
            return web.json_response({"error": "sdk is required for a Space"}, status=400)
        store = self._store(kind)
        if repo_id in store:
            return web.json_response({"error": f"You already created this {body.get('type')} repo",
                                      "url": f"{self.url}/{kind}/{repo_id}"}, status=409)
        store[repo_id] = {}
        return web.json_response({"url": f"{self.url}/{kind}/{repo_id}", "name": repo_id})

    def _store(self, kind: str) -> dict[str, dict[str, bytes]]:
        return self.spaces if kind == "spaces" else self.repos

    async def _validate_yaml(self, request: web.Request) -> web.Response:
        """Like the Hub: the README's YAML front matter must parse; a dataset's ``configs`` must name files."""
        import yaml

        body = await request.json()
        self.validated.append(body)
        text = body["content"]
        errors = []
        if not text.startswith("---\n") or "\n---" not in text[4:]:
            errors.append({"message": "README.md has no YAML front matter"})
        else:
            try:
                meta = yaml.safe_load(text[4:text.index("\n---", 4)]) or {}
                for config in meta.get("configs", []):
                    if not config.get("config_name") or not config.get("data_files"):
                        errors.append({"message": f"config without name or data_files: {config}"})
            except yaml.YAMLError as error:
                errors.append({"message": f"invalid YAML: {error}"})
        return web.json_response({"errors": errors, "warnings": []}, status=400 if errors else 200)

    def _hosted_at(self, request: web.Request):
        """(repo_id, hosted entry) of a dataset request at a known revision, else an error response."""
        repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
        if repo_id not in self.hosted:
            return repo_id, web.json_response({"error": "Repository not found"}, status=404,
                                              headers={"X-Error-Code": "RepoNotFound"})
        hosted = self.hosted[repo_id]
        if request.match_info.get("revision", "main") not in (hosted["sha"], "main"):
            return repo_id, web.json_response({"error": "Invalid rev id"}, status=404,
                                              headers={"X-Error-Code": "RevisionNotFound"})
        return repo_id, hosted

    async def _dataset_info(self, request: web.Request) -> web.Response:
        """``/api/datasets/{repo}`` and ``/api/datasets/{repo}/revision/{revision}``."""
        repo_id, hosted = self._hosted_at(request)
        if isinstance(hosted, web.Response):
            return hosted
        siblings = [{"rfilename": path} for path in sorted(hosted["files"])]
        return web.json_response({"id": repo_id, "_id": "0" * 24, "sha": hosted["sha"], "private": False,
                                  "siblings": siblings, "lastModified": "2026-01-01T00:00:00.000Z"})

    @staticmethod
    def _entries(files: dict[str, bytes], paths) -> list[dict]:
        """Tree entries (files and the folders above them) of a hosted repo, for the given paths."""
        import hashlib

        folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
        entries = []
        for path in paths:
            if path in files:
                entries.append({"type": "file", "path": path, "size": len(files[path]),
                                "oid": hashlib.sha1(files[path]).hexdigest()})
            elif path in folders:
                entries.append({"type": "directory", "path": path, "oid": "0" * 40, "size": 0})
        return entries

    async def _tree(self, request: web.Request) -> web.Response:
        """``GET /api/datasets/{repo}/tree/{revision}[/{path}]`` (``recursive``: all below, else children)."""
        _, hosted = self._hosted_at(request)
        if isinstance(hosted, web.Response):
            return hosted
        files, base = hosted["files"], request.match_info.get("path", "").strip("/")
        recursive = request.query.get("recursive", "false").lower() == "true"
        folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
        if base and base not in folders:
            return web.json_response({"error": "not found"}, status=404, headers={"X-Error-Code": "EntryNotFound"})
        prefix = base + "/" if base else ""
        below = sorted(p for p in set(files) | folders if p.startswith(prefix) and p != base)
        if not recursive:
            below = [p for p in below if "/" not in p[len(prefix):]]
        return web.json_response(self._entries(files, below))

    async def _paths_info(self, request: web.Request) -> web.Response:
        """``POST /api/datasets/{repo}/paths-info/{revision}``: the entries of the paths that exist."""
        _, hosted = self._hosted_at(request)
        if isinstance(hosted, web.Response):
            return hosted
        form = await request.post()
        paths = form.getall("paths", []) if form else []
        if not paths:
            try:
                paths = (await request.json()).get("paths", [])
            except ValueError:
                paths = []
        return web.json_response(self._entries(hosted["files"], [p.strip("/") for p in paths]))

    async def _resolve(self, request: web.Request) -> web.Response:
        """``/datasets/{repo}/resolve/{revision}/{path}``: HEAD for metadata, GET for the bytes."""
        import hashlib

        repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
        if request.match_info.get("kind") == "spaces":
            hosted = ({"sha": self.space_commits[repo_id], "files": self.spaces[repo_id]}
                      if repo_id in self.space_commits else None)
        else:
            hosted = self.hosted.get(repo_id)
        revision, path = request.match_info["revision"], request.match_info["path"]
        if hosted is None:
            return web.Response(status=404, headers={"X-Error-Code": "RepoNotFound"})
        if revision not in (hosted["sha"], "main"):
            return web.Response(status=404, headers={"X-Error-Code": "RevisionNotFound"})
        if path not in hosted["files"]:
            return web.Response(status=404, headers={"X-Error-Code": "EntryNotFound"})
        data = hosted["files"][path]
        headers = {"X-Repo-Commit": hosted["sha"], "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                   "Content-Length": str(len(data))}
        self.downloads.append((repo_id, revision, path))
        if request.method == "HEAD":
            return web.Response(status=200, headers=headers)
        return web.Response(body=data, headers=headers)

    async def _preupload(self, request: web.Request) -> web.Response:
        body = await request.json()
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None} for f in body["files"]]
        return web.json_response({"files": files, "commitOid": "0" * 40})

    async def _commit(self, request: web.Request) -> web.Response:
        repo_id = f"{request.match_info['org']}/{request.match_info['name']}"
        kind = request.match_info["kind"]
        store = self._store(kind)
        if repo_id not in store:
            return web.json_response({"error": "Repository not found"}, status=404)
        for line in (await request.read()).splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                value = item["value"]
                store[repo_id][value["path"]] = base64.b64decode(value["content"])
        oid = f"{len(self.requests):040x}"
        if kind == "spaces":
            self.space_commits[repo_id] = oid
        else:  # a pushed dataset is served back at its new commit, as the Hub does
            self.hosted[repo_id] = {"sha": oid, "files": store[repo_id]}
        return web.json_response({"commitUrl": f"{self.url}/{kind}/{repo_id}/commit/{oid}", "commitOid": oid,
                                  "success": True})

    @web.middleware
    async def _log(self, request: web.Request, handler):
        self.requests.append(f"{request.method} {request.path}")
        try:
            return await handler(request)
        except web.HTTPNotFound:
            self.unhandled.append(f"{request.method} {request.path}")
            raise

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._log], client_max_size=1 << 28)
        app.router.add_post("/api/repos/create", self._create)
        app.router.add_post("/api/validate-yaml", self._validate_yaml)
        app.router.add_get("/api/datasets/{org}/{name}", self._dataset_info)
        app.router.add_get("/api/datasets/{org}/{name}/revision/{revision}", self._dataset_info)
        app.router.add_get("/api/datasets/{org}/{name}/tree/{revision}", self._tree)
        app.router.add_get("/api/datasets/{org}/{name}/tree/{revision}/{path:.+}", self._tree)
        app.router.add_post("/api/datasets/{org}/{name}/paths-info/{revision}", self._paths_info)
        app.router.add_route("*", "/{kind:datasets|spaces}/{org}/{name}/resolve/{revision}/{path:.+}", self._resolve)
        app.router.add_post("/api/{kind:datasets|spaces}/{org}/{name}/preupload/{revision}", self._preupload)
        app.router.add_post("/api/{kind:datasets|spaces}/{org}/{name}/commit/{revision}", self._commit)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def __enter__(self) -> "HubStandIn":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


@pytest.fixture
def online_hub(monkeypatch, tmp_path):
    """A running stand-in as the Hub (HF_ENDPOINT) with huggingface_hub online for the test; a test
    module takes it with ``online_hub = hub_standin.online_hub``. Downloads go to a cache of the
    test's own: a file an earlier test fetched at the same revision would otherwise be served from
    the shared cache, and the stand-in would see no download."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-hub-cache"))
    with HubStandIn() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub
