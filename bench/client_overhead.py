"""How much does the measurement client itself distort what it measures, at high concurrency?

A local streaming server (the vLLM-format stand-in, one process, uvloop) answers every request
with a fixed TTFT and a fixed per-step delay, one token per chunk, and stamps each chunk's send
time on the shared monotonic clock. At concurrency 64, 256 and 1024 (step delay scaled so the
total chunk rate stays within what this machine can serve) we run `speedbench run` with 1 and 2
worker processes and report:

- the client's added delay per chunk: receive time minus the server's send stamp (p50, p99);
- its reported TTFT and step latency (p50) against the true values from the server's stamps
  (first send - arrival; gaps between sends);
- achieved concurrency (Little's law) against the requested one;
- whether the server kept up (its own lateness against its schedule, p99).

Then `aiperf` (PyPI, installed in its own virtual environment because its pins conflict with
this project's: ``bench/output/tools/aiperf-0.13.0/``, made on first use and reused; or set
AIPERF=/path/to/aiperf) runs against the same server and settings, and both are printed side by side.

    .venv/bin/python bench/client_overhead.py            # about 2-4 minutes on 2 cores
    .venv/bin/python bench/client_overhead.py --quick    # 64 and 256 only
    .venv/bin/python bench/client_overhead.py --token-ids-only   # keeping token ids at c256, off vs on

At the end (unless ``--no-token-ids``): the overhead of keeping output token ids at concurrency 256,
bytes per record and client CPU per chunk with the ids off and on, side by side in one run
(``token_ids_overhead``; ``bench/token_ids_overhead.py`` has the parse-only and re-encoding figures).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the stand-ins are test code: tests.standins, not installed
MODELS = Path(os.environ.get("SPEEDBENCH_MODELS", REPO.parent / "shared" / "models" / "stories260K"))
CHUNKS_PER_REQUEST = 8
TTFT_S = 0.05
CHUNK_RATE = 600.0  # chunks/s the server is asked to produce at every concurrency


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, step_s: float):
        self.port = free_port()
        self.step_s = step_s
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.standins.standin", "--engine", "vllm", "--port", str(self.port),
             "--rates", "0", "--ttft", str(TTFT_S), "--step", str(step_s), "--stamp"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)  # cwd: tests.standins
        line = self.process.stdout.readline()
        if "listening" not in line:
            raise RuntimeError(f"stand-in did not start: {line!r}")
        self.url = f"http://127.0.0.1:{self.port}"

    def log(self) -> dict:
        with urllib.request.urlopen(self.url + "/standin/log", timeout=60) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def server_truth(log: dict, ids, step_s: float):
    """True TTFT (first send - arrival), step gaps, and the server's lateness against its own
    schedule (arrival + TTFT + i * step): a late server means the point is not a fair test."""
    ttft, steps, lateness = [], [], []
    for rid, sends in log["send_ns"].items():
        if rid not in ids:
            continue
        arrival = log["arrival_ns"][rid]
        ttft.append((sends[0] - arrival) / 1e9)
        steps.extend(np.diff(sends) / 1e9)
        planned = arrival / 1e9 + TTFT_S + step_s * np.arange(len(sends))
        lateness.extend(np.array(sends) / 1e9 - planned)
    return np.array(ttft), np.array(steps), 1000 * float(np.percentile(lateness, 99))


def run_ours(url: str, concurrency: int, workers: int, requests: int, dataset: Path, out: Path, server: Server):
    from speedbench.client.engines.base import SamplingOptions
    from speedbench.client.run.options import RunOptions
    from speedbench.client.run.runner import execute_run
    from speedbench.records import read_records

    log_before = set(server.log()["send_ns"])
    options = RunOptions(engine="vllm", url=url, tokenizer=str(MODELS), dataset=str(dataset), config="tiny",
                         out=str(out), limit=requests, concurrency=[concurrency], workers=workers,
                         sampling=SamplingOptions(max_tokens=CHUNKS_PER_REQUEST, ignore_eos=True),
                         num_resamples=0, progress=False, max_errors=0)
    results = execute_run(options, log=lambda *a: None)
    point = results["points"][0]
    log = server.log()
    records = [r for r in read_records(out / "records.jsonl") if not r.warmup]
    delays, send_lag, accept_lag = [], [], []
    for record in records:
        send_lag.append((record.send_ns - record.scheduled_ns) / 1e9)
        accept_lag.append((log["arrival_ns"][record.response_id] - record.send_ns) / 1e9)
        sends = log["send_ns"][record.response_id]
        if len(sends) != len(record.chunk_ns):
            raise RuntimeError(f"{record.response_id}: {len(sends)} sends, {len(record.chunk_ns)} chunks")
        delays.extend((np.array(record.chunk_ns) - np.array(sends)) / 1e9)
    ids = set(log["send_ns"]) - log_before
    true_ttft, true_steps, late = server_truth(log, ids, server.step_s)
    latency = point["latency"]
    return {
        "delay_p50_ms": 1000 * float(np.percentile(delays, 50)),
        "delay_p99_ms": 1000 * float(np.percentile(delays, 99)),
        "send_lag_p50_ms": 1000 * float(np.percentile(send_lag, 50)),
        "send_lag_p99_ms": 1000 * float(np.percentile(send_lag, 99)),
        "accept_lag_p50_ms": 1000 * float(np.percentile(accept_lag, 50)),
        "ttft_p50_ms": 1000 * latency["ttft"]["p50"],
        "true_ttft_p50_ms": 1000 * float(np.percentile(true_ttft, 50)),
        "step_p50_ms": 1000 * latency["step_latency"]["p50"],
        "step_mean_ms": 1000 * latency["step_latency"]["mean"],
        "true_step_p50_ms": 1000 * float(np.percentile(true_steps, 50)),
        "true_step_mean_ms": 1000 * float(np.mean(true_steps)),
        "achieved": point["achieved_concurrency"],
        "achieved_full": point["achieved_concurrency_full_request"],
        "server_late_p99_ms": late,
        "errors": point["num_errors"],
    }


# Benchmark tools whose pins conflict with ours, each in a cached venv of its own (ignored by git):
# created on first use, reused by every later run.
TOOLS_DIR = Path(os.environ.get("SPEEDBENCH_BENCH_TOOLS", REPO / "bench" / "output" / "tools"))
TOOL_VERSIONS = {"aiperf": "0.13.0", "guidellm": "0.8.1"}


def tool_venv(name: str, install: bool = True) -> str | None:
    """The executable ``name`` from its cached venv ``TOOLS_DIR/<name>-<version>/`` (installed from
    PyPI with the exact pin the first time when ``install``); None when it cannot be had."""
    folder = TOOLS_DIR / f"{name}-{TOOL_VERSIONS[name]}"
    executable = folder / "bin" / name
    if executable.exists():
        return str(executable)
    if not install:
        return None
    print(f"installing {name}=={TOOL_VERSIONS[name]} into {folder} (once; later runs reuse it)", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(folder / "bin" / "pip"), "install", "-q", f"{name}=={TOOL_VERSIONS[name]}"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"{name}: install failed ({error})")
        return None
    return str(executable) if executable.exists() else None


def find_aiperf(install: bool = True) -> str | None:
    """``AIPERF`` if set, an older ``/tmp/aiperf-venv``, one on PATH, else the cached venv."""
    for candidate in (os.environ.get("AIPERF"), "/tmp/aiperf-venv/bin/aiperf", shutil.which("aiperf")):
        if candidate and Path(candidate).exists():
            return candidate
    return tool_venv("aiperf", install)


def aiperf_tokenizer(workdir: Path) -> Path:
    """A transformers-loadable copy of the stories260K tokenizer (aiperf uses AutoTokenizer)."""
    folder = workdir / "aiperf_tokenizer"
    if not folder.exists():
        folder.mkdir(parents=True)
        shutil.copy(MODELS / "tokenizer.json", folder / "tokenizer.json")
        config = json.loads((MODELS / "tokenizer_config.json").read_text())
        config.update(tokenizer_class="PreTrainedTokenizerFast", model_max_length=4096)
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 512}))
    return folder


def run_aiperf(aiperf: str, url: str, concurrency: int, requests: int, workdir: Path, server: Server):
    """aiperf against the same server: same concurrency, requests, output length, streaming."""
    before = set(server.log()["send_ns"])
    artifacts = workdir / f"aiperf_c{concurrency}"
    command = [aiperf, "profile", "--model", "standin/model", "--url", url, "--endpoint-type", "completions",
               "--streaming", "--concurrency", str(concurrency), "--request-count", str(requests),
               "--synthetic-input-tokens-mean", "16",
               "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(CHUNKS_PER_REQUEST),
               "--output-tokens-stddev", "0", "--extra-inputs", "ignore_eos:true",
               "--extra-inputs", f"max_tokens:{CHUNKS_PER_REQUEST}", "--use-server-token-count",
               "--tokenizer", str(aiperf_tokenizer(workdir)), "--artifact-dir", str(artifacts), "--ui-type", "none"]
    # aiperf 0.13 in offline mode looks a local tokenizer folder up as a Hub repo id and fails
    # (snapshot_download(local_files_only=True) on a path); online mode loads the folder directly,
    # and this machine has no route to the Hub anyway.
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    started = time.time()
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout)[-1500:]
        return {"error": f"aiperf exited {completed.returncode}: {tail}"}
    found = list(artifacts.rglob("profile_export_aiperf.json"))
    if not found:
        return {"error": f"aiperf wrote no profile_export_aiperf.json under {artifacts}"}
    data = json.loads(found[0].read_text())
    metrics = data.get("records", data)

    def metric(name: str, stat: str):
        value = metrics.get(name)
        if isinstance(value, dict):
            value = value.get(stat)
        return value

    log = server.log()
    ids = set(log["send_ns"]) - before
    if not ids:
        return {"error": "aiperf sent no request that reached the server"}
    true_ttft, true_steps, late = server_truth(log, ids, server.step_s)
    throughput = metric("request_throughput", "avg")
    latency_avg = metric("request_latency", "avg")
    achieved = (throughput * latency_avg / 1000.0) if throughput and latency_avg else None
    return {
        "ttft_p50_ms": metric("time_to_first_token", "p50") or metric("ttft", "p50"),
        "true_ttft_p50_ms": 1000 * float(np.percentile(true_ttft, 50)) if len(true_ttft) else None,
        # Per-chunk gaps: the same quantity as our step latency (one token per chunk here).
        "itl_p50_ms": metric("inter_chunk_latency", "p50"),
        "itl_mean_ms": metric("inter_chunk_latency", "avg"),
        "true_step_p50_ms": 1000 * float(np.percentile(true_steps, 50)) if len(true_steps) else None,
        "true_step_mean_ms": 1000 * float(np.mean(true_steps)) if len(true_steps) else None,
        "achieved": achieved,
        "server_late_p99_ms": late,
        "wall_s": time.time() - started,
    }


def token_ids_overhead(dataset: Path, workdir: Path, concurrency: int = 256, repeats: int = 3) -> None:
    """Keeping output token ids, end to end at ``concurrency``: bytes per record and client CPU per
    chunk with the ids off (the client before it kept them: ``token_ids_overhead.ids_not_kept``) and
    on, interleaved ``repeats`` times against the cheap ceiling server (one id per event), in-process
    (``--workers 1``), so the process's CPU is the whole client's."""
    import statistics

    from client_ceiling import CeilingServer, measure_ours
    from token_ids_overhead import ids_not_kept

    events, step_s = 64, 0.05  # 5,120 chunks/s offered at c256
    figures = {False: ([], []), True: ([], [])}
    for repeat in range(repeats):
        for keep in (False, True):
            server = CeilingServer(events, step_s, 0.02, None, spread=0.5)
            out = workdir / f"ids_{keep}_{repeat}"
            try:
                with contextlib.nullcontext() if keep else ids_not_kept():
                    point, extra = measure_ours(server.url, concurrency, 1, 2 * concurrency, 2 * events, dataset, out)
            finally:
                server.stop()
            lines = extra["records"].read_bytes().splitlines()
            chunks = sum(len(json.loads(line)["chunk_ns"]) for line in lines)
            if point.errors or not chunks:
                print(f"token ids {'on' if keep else 'off'}: {point.errors} errors, {chunks} chunks")
                return
            with_ids = sum(json.loads(line).get("output_token_ids") is not None for line in lines)
            if with_ids != (len(lines) if keep else 0):
                raise RuntimeError(f"ids {'on' if keep else 'off'}: {with_ids} of {len(lines)} records carry ids")
            figures[keep][0].append(sum(len(line) + 1 for line in lines) / len(lines))
            figures[keep][1].append(extra["phase_cpu_s"] / chunks * 1e6)
    print(f"\ntoken ids at concurrency {concurrency} (whole client, workers 1; {events} one-token events/request on "
          f"average, {step_s * 1000:.0f} ms apart, ids from a 150k vocabulary, {2 * concurrency} requests per run, "
          f"off/on interleaved {repeats}x, median; load average "
          f"{os.getloadavg()[0]:.2f}):")
    print(f"{'':10} {'bytes/record':>12} {'client CPU/chunk':>17}")
    for keep in (False, True):
        size, cpu = statistics.median(figures[keep][0]), statistics.median(figures[keep][1])
        print(f"{'ids on' if keep else 'ids off':10} {size:>12.0f} {cpu:>14.1f} us")
    size_ratio = statistics.median(figures[True][0]) / statistics.median(figures[False][0])
    cpu_ratio = statistics.median(figures[True][1]) / statistics.median(figures[False][1])
    print(f"{'on / off':10} {size_ratio:>11.2f}x {cpu_ratio:>16.3f}x   (CPU of the measured phase: connections, "
          "requests, parsing and record writing; not start-up or results)")


def fmt(value, spec=".2f") -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="concurrency 64 and 256 only")
    parser.add_argument("--no-aiperf", action="store_true")
    parser.add_argument("--no-token-ids", action="store_true", help="skip the token-ids overhead at concurrency 256")
    parser.add_argument("--token-ids-only", action="store_true", help="only the token-ids overhead at concurrency 256")
    args = parser.parse_args()
    from tests.standins.fixtures import write_dataset
    from speedbench.schema import DatasetRow

    levels = [64, 256] if args.quick else [64, 256, 1024]
    aiperf = None if args.no_aiperf else find_aiperf()
    workdir = Path(tempfile.mkdtemp(prefix="client_overhead_"))
    rows = [DatasetRow(category="bench", sub_category="x", turns=[f"Once upon a time {i}"], source="bench",
                       src_id=str(i)) for i in range(2 * max(levels))]
    dataset = write_dataset(workdir / "dataset", rows)
    if args.token_ids_only:
        token_ids_overhead(dataset, workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        return 0
    print(f"client overhead: {CHUNKS_PER_REQUEST} chunks/request, TTFT {1000 * TTFT_S:.0f} ms, step delay "
          f"= concurrency / {CHUNK_RATE:.0f} chunks/s, 2 x concurrency requests per point, "
          f"{os.cpu_count()} CPUs (shared by server and client)")
    rows_out = []
    for concurrency in levels:
        step_s = concurrency / CHUNK_RATE
        requests = 2 * concurrency  # two full waves: a half-empty last wave would lower achieved concurrency
        for workers in (1, 2):
            server = Server(step_s)
            try:
                ours = run_ours(server.url, concurrency, workers, requests, dataset,
                                workdir / f"ours_c{concurrency}_w{workers}", server)
            finally:
                server.stop()
            rows_out.append(("speedbench", concurrency, workers, step_s, ours))
        if aiperf:
            server = Server(step_s)
            try:
                theirs = run_aiperf(aiperf, server.url, concurrency, requests, workdir, server)
            finally:
                server.stop()
            rows_out.append(("aiperf", concurrency, 1, step_s, theirs))
    header = (f"{'client':<10} {'conc':>5} {'wrk':>3} {'step ms':>7} {'achieved':>9} {'delay p50/p99 ms':>17} "
              f"{'TTFT p50 (true)':>17} {'step p50 (true)':>17} {'step mean (true)':>17} {'mean err':>8} "
              f"{'server late p99':>15}")
    print(header)
    for name, concurrency, workers, step_s, r in rows_out:
        if "error" in r:
            print(f"{name:<10} {concurrency:>5} {workers:>3} {1000 * step_s:>7.1f}  {r['error']}")
            continue
        step = r.get("step_p50_ms", r.get("itl_p50_ms"))
        mean = r.get("step_mean_ms", r.get("itl_mean_ms"))
        delay = f"{fmt(r.get('delay_p50_ms'))}/{fmt(r.get('delay_p99_ms'))}" if "delay_p50_ms" in r else "n/a"
        error_pct = (100 * (mean - r["true_step_mean_ms"]) / r["true_step_mean_ms"]
                     if mean is not None and r.get("true_step_mean_ms") else None)
        print(f"{name:<10} {concurrency:>5} {workers:>3} {1000 * step_s:>7.1f} {fmt(r['achieved'], '.1f'):>9} "
              f"{delay:>17} {fmt(r['ttft_p50_ms']) + ' (' + fmt(r['true_ttft_p50_ms']) + ')':>17} "
              f"{fmt(step) + ' (' + fmt(r['true_step_p50_ms']) + ')':>17} "
              f"{fmt(mean) + ' (' + fmt(r['true_step_mean_ms']) + ')':>17} {fmt(error_pct, '+.1f') + '%':>8} "
              f"{fmt(r.get('server_late_p99_ms'), '.1f') + ' ms':>15}")
    if not aiperf and not args.no_aiperf:
        print("aiperf: not found (pip install aiperf into its own venv and set AIPERF=/path/to/aiperf)")
    for name, concurrency, workers, step_s, r in rows_out:
        if "send_lag_p50_ms" in r:
            print(f"  {name} c{concurrency} w{workers}: scheduled->sent p50/p99 {fmt(r['send_lag_p50_ms'])}/"
                  f"{fmt(r['send_lag_p99_ms'])} ms, sent->server arrival p50 {fmt(r['accept_lag_p50_ms'])} ms, "
                  f"achieved concurrency over whole requests (to [DONE]) {fmt(r['achieved_full'], '.1f')}")
    print("delay = client receive time - server send stamp per chunk; true values from the server's stamps; "
          "err = reported mean step latency vs true mean; achieved/requested concurrency by Little's law")
    if not args.no_token_ids:
        token_ids_overhead(dataset, workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
