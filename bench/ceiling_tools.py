"""aiperf and guidellm against the ceiling server, each in one invocation over all levels (their
start-up, tens of seconds, is paid once), with the same delay and CPU yardsticks as ours
(``bench/client_ceiling.py``).

- aiperf: receive stamps are the ``perf_ns`` of each response in ``profile_export_raw.jsonl``
  (``--export-level raw``, which costs aiperf something of its own), send stamps the
  ``t_send_ns`` in the event received: per chunk, the same method as ours.
- guidellm keeps no per-chunk receive stamps, only each request's first and last token times
  (wall clock): its delays are those two per request, against the server's send stamps moved onto
  the wall clock.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from client_ceiling import CeilingServer, Point, _percentiles, ideal_rate, settle
from client_overhead import aiperf_tokenizer


def _run(command: list[str], timeout_s: float, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The tool, killed past ``timeout_s`` (its levels are then reported as failed, not the whole bench)."""
    try:
        return subprocess.run(command, capture_output=True, text=True, env=_tool_env(), timeout=timeout_s, cwd=cwd)
    except subprocess.TimeoutExpired as expired:
        return subprocess.CompletedProcess(command, 124, "", f"timed out after {timeout_s:.0f} s: "
                                           f"{(expired.stderr or b'')[-200:]!r}")


def _tool_env() -> dict:
    # Offline mode makes aiperf 0.13 look the tokenizer folder up as a Hub id (client_overhead.py);
    # the folder is local and this machine has no route to the Hub anyway.
    return {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}


def sweep_aiperf(aiperf: str, levels: list[int], args, workdir: Path) -> list[Point]:
    """One ``aiperf profile`` over all levels (``--concurrency a,b,c``): its start-up is paid once."""
    artifacts = workdir / "aiperf"
    shutil.rmtree(artifacts, ignore_errors=True)
    server = CeilingServer(args.events, args.step, args.ttft, args.server_cpu, args.spread)
    command = [aiperf, "profile", "--model", "ceiling", "--url", server.url, "--endpoint-type", "completions",
               "--streaming", "--concurrency", ",".join(map(str, levels)),
               # a duration, not a request count: aiperf sweeps a list of counts as a grid with the levels
               "--benchmark-duration", str(args.tool_seconds), "--benchmark-grace-period", "30",
               "--synthetic-input-tokens-mean", "16", "--synthetic-input-tokens-stddev", "0",
               "--output-tokens-mean", str(args.events), "--output-tokens-stddev", "0",
               "--extra-inputs", "ignore_eos:true", "--use-server-token-count",
               "--tokenizer", str(aiperf_tokenizer(workdir)), "--artifact-dir", str(artifacts),
               "--ui-type", "none", "--export-level", "raw"]
    completed, samples, log = server.measure(lambda: _run(command, len(levels) * (args.tool_seconds + 60) + 120),
                                             workdir / "cpu.json", args.server_cpu)
    points = []
    for concurrency in levels:
        point = Point("aiperf", 1, concurrency, ideal_rate(concurrency, args))
        found = sorted(artifacts.glob(f"concurrency_{concurrency}/**/profile_export_raw.jsonl"))
        raw = found[0] if found else artifacts / "profile_export_raw.jsonl"  # a single level: no sweep folder
        if completed.returncode != 0:
            point.errors, point.note = 1, f"aiperf exited {completed.returncode}: {completed.stderr[-300:]}"
        else:
            settle(point, log, join_aiperf(point, raw, log), args, samples)
        points.append(point)
    return points


def join_aiperf(point: Point, raw_path: Path, log: dict) -> set[str]:
    """Receive ``perf_ns`` (perf_counter: CLOCK_MONOTONIC) minus the ``t_send_ns`` in the event; a
    request counts as failed unless every event the server sent it was received."""
    sent_counts = dict(zip(log["rid"], (len(s) for s in log["send_ns"])))
    delays, rids, failed = [], set(), 0
    if not raw_path.exists():
        point.errors, point.note = 1, f"no {raw_path}"
        return rids
    with open(raw_path, "rb") as handle:
        for line in handle:
            record = json.loads(line)
            got, rid = 0, None
            for response in record.get("responses") or []:
                for packet in response.get("packets") or []:
                    value = packet.get("value") or ""
                    if packet.get("name") != "data" or '"t_send_ns"' not in value:
                        continue
                    event = json.loads(value)
                    rid = event["id"]
                    delays.append(response["perf_ns"] - event["t_send_ns"])
                    got += 1
            rids.add(rid)
            failed += rid is None or got != sent_counts.get(rid)
    point.errors = failed
    _percentiles(point, delays)
    return rids


def sweep_guidellm(guidellm: str, levels: list[int], args, workdir: Path) -> list[Point]:
    """One ``guidellm run`` over all levels (concurrent profile, one benchmark per stream count)."""
    folder = workdir / "guidellm"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    server = CeilingServer(args.events, args.step, args.ttft, args.server_cpu, args.spread)
    scenario = {"spec": {
        "backend": {"kind": "openai_http", "target": server.url, "model": "ceiling",
                    "request_format": "/v1/completions", "max_tokens": args.events},
        "profile": {"kind": "concurrent", "streams": levels},
        "data": [{"kind": "synthetic_text", "prompt_tokens": 16, "output_tokens": args.events}],
        "tokenizer": {"kind": "hf_auto", "model": str(aiperf_tokenizer(workdir))},
        "constraints": [{"kind": "max_duration", "seconds": args.tool_seconds}],
        "outputs": [{"kind": "json", "path": str(folder / "benchmarks.json")}]}}
    (folder / "scenario.json").write_text(json.dumps(scenario))
    completed, samples, log = server.measure(
        lambda: _run([guidellm, "run", "-c", str(folder / "scenario.json"), "--disable-console"],
                     len(levels) * (args.tool_seconds + 60) + 120, cwd=folder),
        workdir / "cpu.json", args.server_cpu)
    out = folder / "benchmarks.json"
    if completed.returncode != 0 or not out.exists():
        tail = (completed.stderr or completed.stdout)[-300:]
        return [Point("guidellm", 1, c, ideal_rate(c, args), errors=1, note=f"guidellm exited {completed.returncode}: {tail}")
                for c in levels]
    benchmarks = json.loads(out.read_text())["benchmarks"]
    sends = dict(zip(log["rid"], log["send_ns"]))
    offset = log["wall_minus_monotonic_ns"]
    points = []
    for concurrency, benchmark in zip(levels, benchmarks):
        point = Point("guidellm", 1, concurrency, ideal_rate(concurrency, args), method="first+last token")
        requests = benchmark["requests"]
        # "incomplete": in flight when max_duration stopped the level, not failures
        point.errors = len(requests.get("errored") or [])
        delays, rids = [], set()
        for request in requests.get("successful") or []:
            sent = sends.get(request.get("response_id") or "")
            timings = (request.get("info") or {}).get("timings") or {}
            if not sent or timings.get("first_token_iteration") is None:
                point.errors += 1
                continue
            rids.add(request["response_id"])
            # guidellm keeps wall-clock floats (time.time()): the send stamps are moved onto that clock
            delays.append(int(timings["first_token_iteration"] * 1e9) - (sent[0] + offset))
            delays.append(int(timings["last_token_iteration"] * 1e9) - (sent[-1] + offset))
        settle(point, log, rids, args, samples)
        _percentiles(point, delays)
        points.append(point)
    return points
