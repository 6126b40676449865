"""Local stand-in servers that speak vLLM's, SGLang's and TensorRT-LLM's wire formats exactly.

vLLM, SGLang and TensorRT-LLM need GPUs; these aiohttp servers on 127.0.0.1 answer the same
routes with the same JSON shapes (``docs/engine-wire-formats.md``), quirks included:
TensorRT-LLM rejects unknown request fields with a 400 error, SGLang streams cumulative text
and cumulative ``meta_info.completion_tokens``, vLLM streams continuous usage, token ids and a
final ``metrics.speculative_decoding`` object, and each serves its Prometheus counters.

Speculative decoding is simulated with known per-position conditional acceptance rates
AR_1..AR_K: at every step position i is accepted with probability AR_i given positions < i
were, so a step emits 1 + (accepted drafts) tokens; the prefill emits one token first. Streams
are one chunk per step (``coalesce`` > 1 merges that many steps into one chunk, like a lagging
vLLM). What was really simulated is kept in ``truth`` (by response id) for tests to compare.

Faults, chosen per request by the sha256 of its prompt ids (``speedbench.client.workload.
prompt_sha256``): ``http_429``, ``http_500``, ``drop`` (connection closed after two chunks),
``malformed_line`` (a non-SSE line), ``malformed_json`` (broken JSON in a data line),
``malformed_body`` (valid JSON of the wrong shape), ``hang`` (headers, then nothing: a timeout).

Timing: ``ttft_s`` before the first chunk, ``step_s`` between chunks, on absolute deadlines so
delays do not accumulate; with ``stamp_send_time`` each chunk carries ``t_send_ns`` (monotonic
clock right before the write) and the server keeps them per response id (GET ``/standin/log``)
for measuring a client's own delay.

Run in-process (``StandinServer(...).start()`` serves from a background thread) or as a process:
``python -m speedbench.client.testing.standin --engine vllm --port 8000 --rates 0.8,0.6,0.4``.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

ENGINES = ("vllm", "sglang", "trtllm")
TRTLLM_FIELDS = frozenset({"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stream",
                           "stream_options", "ignore_eos", "top_k", "stop", "min_tokens", "n", "best_of",
                           "echo", "frequency_penalty", "presence_penalty", "logprobs", "user", "suffix"})
TRTLLM_STREAM_OPTIONS = frozenset({"include_usage", "continuous_usage_stats"})


@dataclass
class Simulation:
    """What the stand-in pretends to be.

    conditional_rates: AR_1..AR_K (K = len). output_tokens: tokens per request when the request
    does not end earlier through max_tokens (None: always max_tokens). eos_after: stop with
    finish_reason "stop" after this many tokens unless ignore_eos. coalesce: steps per chunk.
    """

    conditional_rates: list[float] = field(default_factory=lambda: [0.8, 0.6, 0.4])
    output_tokens: int | None = None
    eos_after: int | None = None
    ttft_s: float = 0.0
    step_s: float = 0.0
    seed: int = 0
    coalesce: int = 1
    stamp_send_time: bool = False
    model: str = "standin/model"
    version: str = "0.0-standin"
    faults: dict[str, str] = field(default_factory=dict)

    @property
    def draft_length(self) -> int:
        return len(self.conditional_rates)


def prompt_key(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()


def simulate_steps(sim: Simulation, prompt_ids: list[int], max_tokens: int, ignore_eos: bool) -> tuple[list[int], list[int], str]:
    """(tokens per step with the prefill token first, accepted drafts per verify step, finish reason)."""
    rng = random.Random(f"{sim.seed}:{prompt_key(prompt_ids)}")
    limit = max_tokens if sim.output_tokens is None else min(max_tokens, sim.output_tokens)
    finish = "length"
    if sim.eos_after is not None and not ignore_eos and sim.eos_after < limit:
        limit, finish = sim.eos_after, "stop"
    steps, accepted = [1], []
    total = 1
    while total < limit:
        drafts = 0
        for rate in sim.conditional_rates:
            if rng.random() < rate:
                drafts += 1
            else:
                break
        accepted.append(drafts)
        size = min(1 + drafts, limit - total)  # the last step is cut at the limit
        steps.append(size)
        total += size
    return steps, accepted, finish


class _Counters:
    def __init__(self, draft_length: int):
        self.k = draft_length
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        self.per_position = [0] * draft_length
        self.generation_tokens = 0
        self.prompt_tokens = 0
        self.requests = 0
        self.verify_calls = 0

    def add(self, steps: list[int], accepted: list[int], prompt_tokens: int) -> None:
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        self.generation_tokens += sum(steps)
        self.drafts += len(accepted)
        self.verify_calls += len(accepted)
        self.draft_tokens += self.k * len(accepted)
        self.accepted += sum(accepted)
        for a in accepted:
            for position in range(a):
                self.per_position[position] += 1


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
        self.counters = _Counters(self.sim.draft_length)
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
        if self.engine == "sglang":
            app.router.add_post("/generate", self._generate)
            app.router.add_get("/get_model_info", self._sglang_model_info)
            app.router.add_get("/get_server_info", self._sglang_server_info)
            app.router.add_get("/metrics", self._metrics)
        else:
            app.router.add_post("/v1/completions", self._generate)
            app.router.add_get("/v1/models", self._models)
            app.router.add_get("/version", self._version)
            app.router.add_get("/metrics" if self.engine == "vllm" else "/prometheus/metrics", self._metrics)
        app.router.add_get("/standin/log", self._log)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.sim.model, "object": "model"}]})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.sim.version})

    async def _sglang_model_info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_path": self.sim.model, "is_generation": True})

    async def _sglang_server_info(self, request: web.Request) -> web.Response:
        return web.json_response({"version": self.sim.version, "speculative_algorithm": "EAGLE",
                                  "speculative_num_draft_tokens": self.sim.draft_length + 1})

    async def _log(self, request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps({"send_ns": self.send_log, "arrival_ns": self.arrival_log}),
                            content_type="application/json")

    async def _metrics(self, request: web.Request) -> web.Response:
        c = self.counters
        if self.engine == "vllm":
            label = f'model_name="{self.sim.model}",engine="0"'
            lines = ["# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
                     "# TYPE vllm:spec_decode_num_drafts_total counter",
                     f"vllm:spec_decode_num_drafts_total{{{label}}} {float(c.drafts)}",
                     f"vllm:spec_decode_num_draft_tokens_total{{{label}}} {float(c.draft_tokens)}",
                     f"vllm:spec_decode_num_accepted_tokens_total{{{label}}} {float(c.accepted)}",
                     f"vllm:generation_tokens_total{{{label}}} {float(c.generation_tokens)}",
                     f"vllm:prompt_tokens_total{{{label}}} {float(c.prompt_tokens)}",
                     f'vllm:request_success_total{{{label},finished_reason="length"}} {float(c.requests)}']
            lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{label},position="{i}"}} {float(v)}'
                      for i, v in enumerate(c.per_position)]
        elif self.engine == "sglang":
            label = f'model_name="{self.sim.model}"'
            al = (c.generation_tokens / c.verify_calls) if c.verify_calls else 0.0
            lines = ["# TYPE sglang:spec_verify_calls_total counter",
                     f"sglang:spec_verify_calls_total{{{label}}} {float(c.verify_calls)}",
                     f"sglang:generation_tokens_total{{{label}}} {float(c.generation_tokens)}",
                     f"sglang:prompt_tokens_total{{{label}}} {float(c.prompt_tokens)}",
                     "# TYPE sglang:spec_accept_length gauge",
                     f"sglang:spec_accept_length{{{label}}} {al}",
                     f"sglang:spec_num_draft_tokens{{{label}}} {float(c.k + 1)}"]
        else:
            al = 1 + c.accepted / c.drafts if c.drafts else 0.0
            lines = ["# TYPE trtllm_spec_decode_num_draft_tokens_total counter",
                     f'trtllm_spec_decode_num_draft_tokens_total{{model_name="{self.sim.model}"}} {float(c.draft_tokens)}',
                     f'trtllm_spec_decode_num_accepted_tokens_total{{model_name="{self.sim.model}"}} {float(c.accepted)}',
                     f'trtllm_spec_decode_acceptance_length{{model_name="{self.sim.model}"}} {al}']
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    # -- generation ------------------------------------------------------------------------
    def _error(self, status: int, message: str) -> web.Response:
        if self.engine == "sglang":
            return web.json_response({"error": {"message": message}}, status=status)
        return web.json_response({"object": "error", "message": message, "type": "BadRequestError",
                                  "param": None, "code": status}, status=status)

    def _parse(self, body: dict[str, Any]) -> tuple[list[int], int, bool] | web.Response:
        if self.engine == "trtllm":
            unknown = sorted(set(body) - TRTLLM_FIELDS)
            unknown += [f"stream_options.{k}" for k in sorted(set(body.get("stream_options") or {}) -
                                                              TRTLLM_STREAM_OPTIONS)]
            if unknown:
                details = "; ".join(f"{name}: Extra inputs are not permitted [type=extra_forbidden]"
                                    for name in unknown)
                return self._error(400, f"{len(unknown)} validation error(s) for CompletionRequest\n{details}")
        if self.engine == "sglang":
            ids = body.get("input_ids")
            params = body.get("sampling_params") or {}
            max_tokens = int(params.get("max_new_tokens", 128))
            ignore_eos = bool(params.get("ignore_eos", False))
        else:
            ids = body.get("prompt")
            max_tokens = int(body.get("max_tokens") or 16)
            ignore_eos = bool(body.get("ignore_eos", False))
        if isinstance(ids, str) and ids and self.engine != "sglang":
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
        parsed = self._parse(body)
        if isinstance(parsed, web.Response):
            return parsed
        ids, max_tokens, ignore_eos = parsed
        fault = self.sim.faults.get(prompt_key(ids))
        if fault == "http_429":
            return self._error(429, "rate limited: too many requests")
        if fault == "http_500":
            return self._error(500, "internal server error")
        self._ids += 1
        response_id = f"{'cmpl' if self.engine != 'sglang' else 'sg'}-{self._ids:08d}"
        steps, accepted, finish = simulate_steps(self.sim, ids, max_tokens, ignore_eos)
        self.truth[response_id] = {"steps": steps, "accepted": accepted, "finish_reason": finish,
                                   "prompt_ids": ids}
        self.arrival_log[response_id] = arrival
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        if fault == "hang":
            await self._stopping.wait()
            return response
        chunks = [steps[:1]] + [steps[i:i + self.sim.coalesce] for i in range(1, len(steps), self.sim.coalesce)]
        stamps: list[int] = []
        if self.sim.stamp_send_time:
            self.send_log[response_id] = stamps
        start = time.perf_counter()
        emitted = 0
        text = ""
        for index, group in enumerate(chunks):
            deadline = start + self.sim.ttft_s + index * self.sim.step_s
            delay = deadline - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if fault == "drop" and index == 2:
                request.transport.close()  # the connection dies mid-stream
                return response
            if fault == "malformed_line" and index == 2:
                await response.write(b"this is not server-sent events\n\n")
                continue
            if fault == "malformed_json" and index == 2:
                await response.write(b'data: {"choices": [{"text": "x", \n\n')
                continue
            if fault == "malformed_body" and index == 2:
                await response.write(b'data: {"unexpected": true}\n\n')
                continue
            new = sum(group)
            token_ids = [(7 * (emitted + j) + 3) % 500 + 3 for j in range(new)]
            emitted += new
            delta = "".join(f" t{t}" for t in token_ids)
            text += delta
            last = index == len(chunks) - 1
            event = self._event(response_id, ids, index, token_ids, delta, text, emitted, last, finish, steps,
                                accepted)
            if self.sim.stamp_send_time:
                event["t_send_ns"] = time.perf_counter_ns()
                stamps.append(event["t_send_ns"])
            await response.write(b"data: " + orjson.dumps(event) + b"\n\n")
        if self.engine in ("vllm", "trtllm"):
            usage = {"prompt_tokens": len(ids), "completion_tokens": emitted, "total_tokens": len(ids) + emitted}
            final: dict[str, Any] = {"id": response_id, "object": "text_completion", "created": int(time.time()),
                                     "model": self.sim.model, "choices": [], "usage": usage}
            if self.engine == "vllm":
                final["metrics"] = {"speculative_decoding": self._vllm_spec(accepted)}
            await response.write(b"data: " + orjson.dumps(final) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        self.counters.add(steps, accepted, len(ids))
        await response.write_eof()
        return response

    def _vllm_spec(self, accepted: list[int]) -> dict[str, Any]:
        k = self.sim.draft_length
        histogram = [0] * (k + 1)
        for a in accepted:
            histogram[a] += 1
        n = len(accepted)
        total = sum(accepted)
        return {"mean_acceptance_length": 1 + total / n if n else 1.0,
                "draft_acceptance_rate": total / (n * k) if n else 0.0,
                "acceptance_histogram": histogram, "num_spec_steps": n, "num_accepted_draft_tokens": total,
                "num_draft_tokens": n * k, "num_spec_tokens": k}

    def _event(self, response_id, ids, index, token_ids, delta, text, emitted, last, finish, steps, accepted):
        finish_reason = finish if last else None
        if self.engine == "sglang":
            meta: dict[str, Any] = {"id": response_id, "finish_reason": None, "prompt_tokens": len(ids),
                                    "completion_tokens": emitted, "cached_tokens": 0}
            if last:
                meta["finish_reason"] = ({"type": "length", "length": emitted} if finish == "length"
                                         else {"type": "stop", "matched": 2})
                k = self.sim.draft_length
                histogram = [0] * (k + 1)
                for a in accepted:
                    histogram[a] += 1
                verify = len(accepted)
                meta.update({"spec_verify_ct": verify,
                             "spec_accept_length": emitted / verify if verify else 1.0,
                             "spec_accept_rate": sum(accepted) / (verify * k) if verify else 0.0,
                             "spec_num_correct_drafts": sum(accepted), "spec_num_proposed_drafts": verify * k,
                             "spec_correct_drafts_histogram": histogram})
            return {"text": text, "output_ids": token_ids, "meta_info": meta, "index": 0}
        choice: dict[str, Any] = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish_reason,
                                  "stop_reason": None}
        if self.engine == "vllm":
            choice["token_ids"] = token_ids
            if index == 0:
                choice["prompt_token_ids"] = ids
        else:
            iterations = 1 + min(len(accepted), index * self.sim.coalesce)  # the prefill is an iteration too
            choice["avg_decoded_tokens_per_iter"] = emitted / iterations
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
    parser.add_argument("--ttft", type=float, default=0.0)
    parser.add_argument("--step", type=float, default=0.0)
    parser.add_argument("--output-tokens", type=int, default=None)
    parser.add_argument("--stamp", action="store_true", help="stamp each chunk's send time (t_send_ns)")
    args = parser.parse_args(argv)
    simulation = Simulation(conditional_rates=[float(r) for r in args.rates.split(",")], ttft_s=args.ttft,
                            step_s=args.step, output_tokens=args.output_tokens, stamp_send_time=args.stamp)
    server = StandinServer(args.engine, simulation, args.port)
    try:
        import uvloop

        uvloop.run(server.serve_forever())
    except ImportError:  # pragma: no cover
        asyncio.run(server.serve_forever())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
