"""Local stand-in servers that speak vLLM's, SGLang's and TensorRT-LLM's wire formats exactly.

vLLM, SGLang and TensorRT-LLM need GPUs; these aiohttp servers on 127.0.0.1 answer the same
routes with the same JSON shapes (``docs/engine-wire-formats.md``), quirks included:
TensorRT-LLM rejects unknown request fields with a 400 error, SGLang streams cumulative text
and cumulative ``meta_info.completion_tokens`` on ``/generate`` (and on ``/v1/completions`` text
deltas, with its statistics as ``sglext.spec_tokens_details`` only when asked), vLLM streams continuous usage, token ids and a
final ``metrics.speculative_decoding`` object, and each serves its Prometheus counters.

Speculative decoding is simulated with known per-position conditional acceptance rates
AR_1..AR_K: at every step position i is accepted with probability AR_i given positions < i
were, so a step emits 1 + (accepted drafts) tokens; the prefill emits one token first. Streams
are one chunk per step (``coalesce`` > 1 merges that many steps into one chunk, like a lagging
vLLM). What was really simulated is kept in ``truth`` (by response id) for tests to compare.

Faults, chosen per request by the sha256 of its prompt ids (``speedbench.client.data.workload.
prompt_sha256``): ``http_429``, ``http_500``, ``drop`` (connection closed after two chunks),
``malformed_line`` (a non-SSE line), ``malformed_json`` (broken JSON in a data line),
``malformed_body`` (valid JSON of the wrong shape), ``hang`` (headers, then nothing: a timeout).

Timing: ``ttft_s`` before the first chunk, ``step_s`` between chunks, on absolute deadlines so
delays do not accumulate; with ``stamp_send_time`` each chunk carries ``t_send_ns`` (monotonic
clock right before the write) and the server keeps them per response id (GET ``/standin/log``)
for measuring a client's own delay.

Run in-process (``StandinServer(...).start()`` serves from a background thread) or as a process:
``python -m tests.standins.standin --engine vllm --port 8000 --rates 0.8,0.6,0.4``.
"""
from __future__ import annotations

import argparse
import asyncio
import socket
import threading
import time
from typing import Any

import orjson
from aiohttp import web

from tests.standins.standin_sim import Counters, Simulation, StepPlan, chunk_groups, prompt_key, simulate_steps
from tests.standins.standin_wire import (
    TRTLLM_FIELDS,
    TRTLLM_STREAM_OPTIONS,
    error_body,
    sglang_completion_choice,
    sglang_completion_chunk,
    sglang_completion_options,
    sglang_completion_tail,
    sglang_meta,
    sglang_metrics,
    sglang_usage,
    trtllm_metrics,
    trtllm_perf_entry,
    vllm_metrics,
    vllm_spec,
)
from speedbench.settings import STANDIN_ENGINES

ENGINES = STANDIN_ENGINES
# What an SGLang /v1/completions request asked for (sglang_completion_options), kept on the request.
_SGLANG_OPENAI = web.RequestKey("sglang_openai", dict)
_BROKEN_LINES = {"drop": b"", "malformed_line": b"this is not server-sent events\n\n",
                 "malformed_json": b'data: {"choices": [{"text": "x", \n\n',
                 "malformed_body": b'data: {"unexpected": true}\n\n'}


class StandinServer:
    """One stand-in engine on 127.0.0.1 (``engine`` in vllm / sglang / trtllm)."""

    def __init__(self, engine: str, simulation: Simulation | None = None, port: int = 0):
        if engine not in ENGINES:
            raise ValueError(f"stand-in engine {engine!r}: expected one of {', '.join(ENGINES)}")
        self.engine = engine
        self.sim = simulation or Simulation()
        self.port = port
        self.received: list[dict[str, Any]] = []  # request bodies, in arrival order
        self.truth: dict[str, dict[str, Any]] = {}  # response id -> what was simulated
        self.send_log: dict[str, list[int]] = {}  # response id -> t_send_ns per chunk
        self.arrival_log: dict[str, int] = {}  # response id -> arrival time (monotonic ns)
        self.counters = Counters(self.sim.draft_length, self.sim.proposed_per_step,
                                 self.sim.sglang_decode_log_interval if self.engine == "sglang" else 0)
        self.perf_metrics: list[dict[str, Any]] = []  # TensorRT-LLM: finished, not yet fetched
        self._created = time.time()
        self._ids = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- app -------------------------------------------------------------------------------
    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 26)
        routes = {"sglang": self._sglang_routes, "vllm": self._vllm_routes, "trtllm": self._trtllm_routes}
        for method, path, handler in routes[self.engine]():
            app.router.add_route(method, path, handler)
        app.router.add_get("/standin/log", self._log)
        return app

    def _sglang_routes(self):
        routes = [("POST", "/generate", self._generate), ("POST", "/v1/completions", self._generate),
                  ("GET", "/get_model_info", self._sglang_model_info),
                  ("GET", "/get_server_info", self._sglang_server_info),
                  ("GET", "/server_info", self._sglang_server_info)]
        return routes + ([("GET", "/metrics", self._metrics)] if self.sim.metrics_enabled else [])

    def _vllm_routes(self):
        return [("POST", "/v1/completions", self._generate), ("GET", "/v1/models", self._models),
                ("GET", "/version", self._version), ("GET", "/health", self._health),
                ("POST", "/tokenize", self._tokenize), ("GET", "/metrics", self._metrics)]

    def _trtllm_routes(self):
        routes = [("POST", "/v1/completions", self._generate), ("GET", "/v1/models", self._models),
                  ("GET", "/version", self._version), ("GET", "/health", self._health),
                  ("GET", "/perf_metrics", self._perf_metrics)]
        # /prometheus/metrics is mounted only when the server runs with return_perf_metrics
        return routes + ([("GET", "/prometheus/metrics", self._metrics)] if self.sim.return_perf_metrics else [])

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.sim.model, "object": "model"}]})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.sim.version})

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        tokens = list(str(body.get("prompt", "")).encode("utf-8"))  # bytes stand in for token ids
        return web.json_response({"count": len(tokens), "max_model_len": 4096, "tokens": tokens,
                                  "token_strs": None})

    async def _sglang_model_info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_path": self.sim.model, "is_generation": True})

    async def _sglang_server_info(self, request: web.Request) -> web.Response:
        # As SGLang 0.5.23's /server_info: num_draft_tokens counts the verified token too (a tree:
        # its nodes + 1), num_steps is the depth; /get_server_info answers the same.
        sim = self.sim
        return web.json_response({"version": sim.version, "speculative_algorithm": "STANDALONE",
                                  "speculative_num_steps": sim.draft_length, "speculative_eagle_topk": sim.sglang_topk,
                                  "speculative_num_draft_tokens": sim.proposed_per_step + 1,
                                  "decode_log_interval": sim.sglang_decode_log_interval})

    async def _log(self, request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps({"send_ns": self.send_log, "arrival_ns": self.arrival_log}),
                            content_type="application/json")

    async def _perf_metrics(self, request: web.Request) -> web.Response:
        # Like trtllm-serve: the finished requests' entries, emptied by every GET.
        entries, self.perf_metrics = self.perf_metrics, []
        return web.json_response(entries if self.sim.return_perf_metrics else [])

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.engine == "vllm":
            lines = vllm_metrics(self.sim, self.counters, self._created)
        elif self.engine == "sglang":
            lines = sglang_metrics(self.sim, self.counters)
        else:
            lines = trtllm_metrics(self.sim, self.counters)
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    # -- generation ------------------------------------------------------------------------
    def _error(self, status: int, message: str) -> web.Response:
        return web.json_response(error_body(self.engine, status, message), status=status)

    def _parse(self, body: dict[str, Any], openai: bool = False) -> tuple[list[int], int, bool] | web.Response:
        if self.engine == "trtllm":
            unknown = sorted(set(body) - TRTLLM_FIELDS)
            unknown += [f"stream_options.{k}" for k in sorted(set(body.get("stream_options") or {}) -
                                                              TRTLLM_STREAM_OPTIONS)]
            if unknown:
                details = "; ".join(f"{name}: Extra inputs are not permitted [type=extra_forbidden]"
                                    for name in unknown)
                return self._error(400, f"{len(unknown)} validation error(s) for CompletionRequest\n{details}")
        if self.engine == "sglang" and not openai:
            ids = body.get("input_ids")
            params = body.get("sampling_params") or {}
            max_tokens = int(params.get("max_new_tokens", 128))
            ignore_eos = bool(params.get("ignore_eos", False))
        else:
            ids = body.get("prompt")
            max_tokens = int(body.get("max_tokens") or 16)
            ignore_eos = bool(body.get("ignore_eos", False))
        if isinstance(ids, str) and ids and (self.engine != "sglang" or openai):
            ids = list(ids.encode("utf-8"))  # a text prompt (as load generators send): bytes stand in for ids
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) for i in ids):
            return self._error(400, "prompt must be a non-empty list of token ids")
        if not body.get("stream"):
            return self._error(400, "the stand-in only streams (stream: true)")
        return ids, max_tokens, ignore_eos

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        arrival = time.perf_counter_ns()
        body = orjson.loads(await request.read())
        self.received.append(body)
        openai = self.engine == "sglang" and request.path == "/v1/completions"
        if openai:
            request[_SGLANG_OPENAI] = sglang_completion_options(body)
        parsed = self._parse(body, openai)
        if isinstance(parsed, web.Response):
            return parsed
        ids, max_tokens, ignore_eos = parsed
        fault = self.sim.faults.get(prompt_key(ids))
        if fault in ("http_429", "http_500"):
            status = int(fault[5:])
            return self._error(status, "rate limited: too many requests" if status == 429 else "internal server error")
        self._ids += 1
        request_id = self._ids
        response_id = f"sg-{request_id:08d}" if self.engine == "sglang" else f"cmpl-{request_id}"
        plan = simulate_steps(self.sim, ids, max_tokens, ignore_eos)
        self.truth[response_id] = {"steps": plan.sizes, "accepted": plan.accepted, "drafted": plan.drafted,
                                   "accepted_all": plan.accepted_all, "finish_reason": plan.finish,
                                   "prompt_ids": ids, "request_id": request_id}
        self.arrival_log[response_id] = arrival
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        if fault == "hang":
            await self._stopping.wait()
            return response
        emitted = await self._stream(request, response, response_id, ids, plan, fault)
        if emitted is None:
            return response  # the connection was dropped mid-stream
        await self._finish(response, response_id, request_id, ids, plan, emitted, request.get(_SGLANG_OPENAI))
        return response

    async def _stream(self, request, response, response_id, ids, plan: StepPlan, fault) -> int | None:
        """Write the chunks on absolute deadlines; returns the tokens emitted (None: dropped)."""
        groups = chunk_groups(self.sim, plan.sizes)
        stamps: list[int] = []
        if self.sim.stamp_send_time:
            self.send_log[response_id] = stamps
        start, emitted, text, late = time.perf_counter(), 0, "", 0.0
        all_ids: list[int] = []  # SGLang streams output_ids cumulatively, like its text
        for index, (group, stall) in enumerate(groups):
            late += stall
            delay = start + self.sim.ttft_s + index * self.sim.step_s + late - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if index == 2 and fault in _BROKEN_LINES:
                if fault == "drop":
                    request.transport.close()  # the connection dies mid-stream
                    return None
                await response.write(_BROKEN_LINES[fault])
                continue
            new = sum(group)
            token_ids = [(7 * (emitted + j) + 3) % 500 + 3 for j in range(new)]
            emitted += new
            delta = "".join(f" t{t}" for t in token_ids)
            text += delta
            all_ids += token_ids
            last = index == len(groups) - 1
            openai = request.get(_SGLANG_OPENAI)
            if openai is not None:
                event = sglang_completion_chunk(
                    response_id, int(time.time()), self.sim.model,
                    [sglang_completion_choice(delta, token_ids if openai["token_ids"] else None,
                                              plan.finish if last else None)],
                    sglang_usage(len(ids), emitted, final=False) if openai["continuous_usage"] else None)
            else:
                event = self._event(response_id, ids, index, all_ids if self.engine == "sglang" else token_ids,
                                    delta, text, emitted, last, plan)
            if self.sim.stamp_send_time:
                event["t_send_ns"] = time.perf_counter_ns()
                stamps.append(event["t_send_ns"])
            await response.write(b"data: " + orjson.dumps(event) + b"\n\n")
        return emitted

    async def _finish(self, response, response_id, request_id, ids, plan: StepPlan, emitted: int,
                      openai: dict[str, bool] | None = None) -> None:
        if openai is not None:
            for chunk in sglang_completion_tail(self.sim, plan, response_id, len(ids), emitted, openai):
                await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        elif self.engine in ("vllm", "trtllm"):
            usage = {"prompt_tokens": len(ids), "completion_tokens": emitted, "total_tokens": len(ids) + emitted}
            final: dict[str, Any] = {"id": response_id, "object": "text_completion", "created": int(time.time()),
                                     "model": self.sim.model, "choices": [], "usage": usage}
            if self.engine == "vllm":
                final["system_fingerprint"] = f"vllm-{self.sim.version}-standin"
                if self.sim.per_request_metrics and self.sim.draft_length:
                    final["metrics"] = {"speculative_decoding": vllm_spec(plan, self.sim.draft_length)}
            await response.write(b"data: " + orjson.dumps(final) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        self.counters.add(plan, len(ids))
        if self.engine == "trtllm" and self.sim.return_perf_metrics:
            self.perf_metrics.append(trtllm_perf_entry(request_id, plan, self.sim.draft_length))
            del self.perf_metrics[:-self.sim.perf_metrics_max_requests]  # a bounded deque on the server
        await response.write_eof()

    def _event(self, response_id, ids, index, token_ids, delta, text, emitted, last, plan: StepPlan):
        if self.engine == "sglang":
            meta: dict[str, Any] = {"id": response_id, "finish_reason": None, "prompt_tokens": len(ids),
                                    "completion_tokens": emitted, "cached_tokens": 0}
            if last:
                meta["finish_reason"] = ({"type": "length", "length": emitted} if plan.finish == "length"
                                         else {"type": "stop", "matched": 2})
                meta.update(sglang_meta(self.sim, plan, emitted))
            return {"text": text, "output_ids": token_ids, "meta_info": meta}  # no "index", as 0.5.23
        choice: dict[str, Any] = {"index": 0, "text": delta, "logprobs": None,
                                  "finish_reason": plan.finish if last else None, "stop_reason": None}
        if self.engine == "vllm":
            choice["prompt_token_ids"] = ids if index == 0 else None  # null after the first chunk
            choice["token_ids"] = token_ids
        else:
            steps_so_far = min(len(plan.accepted_all), index * self.sim.coalesce)
            choice["avg_decoded_tokens_per_iter"] = emitted / (1 + steps_so_far)  # the prefill is an iteration too
        return {"id": response_id, "object": "text_completion", "created": int(time.time()), "model": self.sim.model,
                "choices": [choice],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": emitted, "total_tokens": len(ids) + emitted}}

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "StandinServer":
        """Serve from a background thread (its own event loop); returns when listening."""
        if self.port == 0:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
        self._thread = threading.Thread(target=self._serve_thread, name=f"standin-{self.engine}", daemon=True)
        self._thread.start()
        self._ready.wait()
        return self

    def _serve_thread(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start_site())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    async def _start_site(self) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.build_app(), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=4096).start()

    def stop(self) -> None:
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._stopping.set)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> "StandinServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def serve_forever(self) -> None:
        await self._start_site()
        print(f"standin {self.engine} listening on {self.url}", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="stand-in vLLM / SGLang / TensorRT-LLM server on 127.0.0.1")
    parser.add_argument("--engine", choices=ENGINES, default="vllm")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rates", default="0.8,0.6,0.4", help="conditional acceptance per position")
    parser.add_argument("--synthetic-from", metavar="PROFILE",
                        help="replay a speculation profile's marginal rates (replaces --rates)")
    parser.add_argument("--ttft", type=float, default=0.0)
    parser.add_argument("--step", type=float, default=0.0)
    parser.add_argument("--output-tokens", type=int, default=None)
    parser.add_argument("--stamp", action="store_true", help="stamp each chunk's send time (t_send_ns)")
    parser.add_argument("--draft-probability", type=float, default=1.0,
                        help="chance that a step carries a draft (n-gram speculation: below 1)")
    args = parser.parse_args(argv)
    timing = dict(ttft_s=args.ttft, step_s=args.step, output_tokens=args.output_tokens, stamp_send_time=args.stamp,
                  draft_probability=args.draft_probability)
    simulation = (Simulation.from_profile(args.synthetic_from, **timing) if args.synthetic_from else
                  Simulation(conditional_rates=[float(r) for r in args.rates.split(",") if r], **timing))
    server = StandinServer(args.engine, simulation, args.port)
    try:
        import uvloop

        uvloop.run(server.serve_forever())
    except ImportError:  # pragma: no cover
        asyncio.run(server.serve_forever())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["ENGINES", "TRTLLM_FIELDS", "Simulation", "StandinServer", "prompt_key", "simulate_steps"]
