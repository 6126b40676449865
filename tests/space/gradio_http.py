"""Driving the Space as its clients do (loaded by path by the Space tests): the app launched
in-process on a free 127.0.0.1 port, the API through gradio_client, and a UI event the way the
browser sends it (``/gradio_api/upload``, then ``/gradio_api/queue/join`` with the event's
fn_index and the result read from ``/gradio_api/queue/data``)."""
from __future__ import annotations

import importlib.util
import json
import socket
import sys
import uuid
from pathlib import Path

import httpx

SPACE_DIR = Path(__file__).resolve().parents[2] / "space"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_module(name: str = "speedbench_space_app_http"):
    if str(SPACE_DIR) not in sys.path:
        sys.path.insert(0, str(SPACE_DIR))
    spec = importlib.util.spec_from_file_location(name, SPACE_DIR / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch(demo, port: int) -> str:
    demo.queue(default_concurrency_limit=8).launch(server_name="127.0.0.1", server_port=port,
                                                     prevent_thread_lock=True, quiet=True)
    return f"http://127.0.0.1:{port}/"


def client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, analytics_enabled=False, download_files=False)


def fn_index(demo, name: str) -> int:
    """The index of the event whose Python function or API name is ``name`` (UI events have no API name)."""
    return next(i for i, f in demo.fns.items() if name in (getattr(f.fn, "__name__", ""), f.api_name))


def upload(url: str, data: bytes, name: str = "bundle.tar.gz") -> str:
    response = httpx.post(f"{url}gradio_api/upload", files={"files": (name, data)}, timeout=120)
    response.raise_for_status()
    return response.json()[0]


def ui_call(url: str, index: int, data: list, timeout: float = 600) -> list:
    """Run one UI event as the browser does; returns its output values."""
    session = uuid.uuid4().hex[:11]
    joined = httpx.post(f"{url}gradio_api/queue/join", json={"data": data, "fn_index": index, "session_hash": session,
                                                             "event_data": None, "trigger_id": None}, timeout=60)
    joined.raise_for_status()
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=timeout) as rsp:
        for line in rsp.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                if not message.get("success"):
                    raise RuntimeError(f"UI event failed: {message}")
                return message["output"]["data"]
    raise RuntimeError("the queue closed without an answer")


def file_data(path: str) -> dict:
    return {"path": path, "orig_name": Path(path).name, "meta": {"_type": "gradio.FileData"}}
