"""The leaderboard Space under concurrent uploads, through its HTTP API: peak RSS of the app, its
CPU seconds and the time each upload took to be answered.

Target (issue 24): peak RSS of the app under 2 GB for any mix of uploads, every upload answered.

Each mix starts a fresh ``python space/app.py`` (its own store, the default limits and admission
settings unless the environment overrides them), sends all its uploads at once from threads through
gradio_client's ``/submit_bundle``, and reads the app's peak RSS (``VmHWM``) and CPU seconds (user +
system) from ``/proc/<pid>`` when every upload has its answer. Uploads:

- ``largest``: the largest bundle the limits allow: a full 1k bucket (1,536 prompts, 512 output
  tokens) at the most load points a run may have (16), a baseline and SD runs added until the next
  would pass the unpacked cap; each run and point distinct (one request's end differs by a few ns);
- ``one-prompt``: cheap to send, expensive to check (the issue's shape): 48,000 identical records
  of one prompt with 200-chunk lists, about 210 MiB unpacked from a small upload;
- ``long-chunks``: every prompt of the bucket at 16 load points with the longest chunk lists that
  fit the unpacked cap, highly compressible: passes the streaming checks, so it costs a full parse;
- ``typical``: the 880-prompt Qualitative split with 512 output tokens (about 3 MiB).
- ``zip-members``: a zip just under the upload cap whose central directory lists as many empty
  members as fit (about 640,000): zipfile parses a directory into an object per member.

Also (issue 32): ``--board-sizes 100,1000,3000,10000`` runs the board-size axis (app CPU per page
load and RSS against the number of entries: ``bench/leaderboard_board_size.py``) and ``--abuse
SECONDS`` the abuse mix (aborted uploads, slow bodies, slow request heads, a search flood, with the
upload folder's size over time, and eight 4 MiB searches with an upload sent meanwhile:
``bench/leaderboard_abuse.py``) against an app whose store holds ``--abuse-board`` entries.

Run: ``.venv/bin/python bench/leaderboard_load.py [--mixes largest:4,one-prompt:8,...|none]
[--board-sizes ...] [--abuse SECONDS]`` (default: every mix below). Prints one line per mix and the
load average beside it.
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from speedbench.leaderboard.archive import ArchiveLimits  # noqa: E402
from speedbench.leaderboard.known_builds import describe_dataset  # noqa: E402
from speedbench.leaderboard.pack import pack_bundle  # noqa: E402
from speedbench.leaderboard.runs import DEFAULT_CAPS  # noqa: E402
from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run, replicate_run  # noqa: E402

MiB = 2**20
META = {"model": "m/x", "drafter": "d", "sd_method": "eagle3", "engine": "vllm", "engine_version": "1", "gpu": "g",
        "draft_length": 3, "temperature": 0}
MIXES = ["typical:8", "one-prompt:8", "long-chunks:4", "largest:4",
         "largest:2+one-prompt:2+long-chunks:2+typical:2", "zip-members:8"]


def _load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def _tar(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), compresslevel=6)


def _zip_listing(path: Path, max_bytes: int) -> Path:
    """A zip of empty members whose central directory lists as many as ``max_bytes`` holds."""
    import struct

    count = max_bytes // 100 - 1  # a local header (42 bytes) and a directory entry (58) of a 12-byte name
    local, central = bytearray(), bytearray()
    for i in range(count):
        name = b"%07d.json" % i
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0,
                               0, len(local)) + name
        local += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), len(central),
                      len(local), 0)
    path.write_bytes(bytes(local + central + end))
    return path


def _submission(runs: list[tuple[str, str]]) -> bytes:
    return json.dumps({"schema_version": 1, "metadata": META,
                       "runs": [{"path": p, "role": role} for p, role in runs]}).encode()


def _datasets(root: Path) -> tuple[Path, Path, Path]:
    """The throughput and qualitative datasets, and the known-builds folder the app needs."""
    dataset = make_dataset(root / "bench-tp", rows_per_category=512, configs=("throughput_1k",))
    qual_dataset = make_dataset(root / "bench-qual", rows_per_category=80, configs=("qualitative",))
    builds = root / "builds"
    builds.mkdir()
    for name, folder in (("tp", dataset), ("qual", qual_dataset)):
        (builds / f"{name}.json").write_text(json.dumps(describe_dataset(folder).to_dict()))
    return dataset, qual_dataset, builds


def _largest(root: Path, sd_base: Path, ar_base: Path, limits: ArchiveLimits) -> Path:
    points = DEFAULT_CAPS.max_points
    baseline = replicate_run(ar_base, root / "largest" / "baseline", points, salt=0)
    runs, size = [], (baseline / "records.jsonl").stat().st_size
    while True:
        run = replicate_run(sd_base, root / "largest" / f"sd{len(runs)}", points, salt=len(runs) + 1)
        one = (run / "records.jsonl").stat().st_size
        runs.append(run)
        size += one
        if size + one > 0.97 * limits.max_total_bytes:
            break
    path = root / "largest.tar.gz"
    path.write_bytes(pack_bundle(runs, META, [baseline]))
    print(f"  largest: {len(runs)} SD runs + 1 baseline, {points} load points, unpacked {size / MiB:.0f} MiB")
    return path


def _one_prompt(root: Path, sd_base: Path) -> Path:
    manifest = (sd_base / "manifest.json").read_bytes()
    first = json.loads((sd_base / "records.jsonl").read_text().splitlines()[0])
    chunks = 200  # 48,000 x 200 chunks: about 210 MiB unpacked, within the cap
    start = first["scheduled_ns"]
    same = {"scheduled_ns": start, "send_ns": start + 1000, "chunk_tokens": [1] * chunks, "output_tokens": chunks,
            "chunk_ns": [start + 50_000_000 + k * 20_000_000 for k in range(chunks)], "engine_stats": None,
            "end_ns": start + 50_000_000 + chunks * 20_000_000}
    lines = [json.dumps({**first, **same, "record_key": f"c1/{first['question_id']}/{i}"}) for i in range(48_000)]
    path = root / "one-prompt.tar.gz"
    path.write_bytes(_tar({"submission.json": _submission([("runs/a", "sd")]), "runs/a/manifest.json": manifest,
                           "runs/a/records.jsonl": ("\n".join(lines) + "\n").encode()}))
    return path


def _long_chunks(root: Path, sd_base: Path, limits: ArchiveLimits) -> Path:
    points = DEFAULT_CAPS.max_points
    rows = [json.loads(line) for line in (sd_base / "records.jsonl").read_text().splitlines()]
    per_record = int(0.95 * limits.max_total_bytes / (len(rows) * points) / 22)  # ~22 bytes per chunk in JSON
    out = []
    for c in range(1, points + 1):
        for r in rows:
            start = r["scheduled_ns"] + c * 10**12
            out.append(json.dumps({**r, "run_point": f"c{c}", "requested_concurrency": c,
                                   "record_key": f"c{c}/{r['question_id']}/0", "scheduled_ns": start,
                                   "send_ns": start + 1000, "engine_stats": None,
                                   "chunk_ns": [start + 50_000_000 + k * 20_000_000 for k in range(per_record)],
                                   "chunk_tokens": [1] * per_record, "output_tokens": per_record,
                                   "end_ns": start + 50_000_000 + per_record * 20_000_000}))
    path = root / "long-chunks.tar.gz"
    path.write_bytes(_tar({"submission.json": _submission([("runs/a", "sd")]),
                           "runs/a/manifest.json": (sd_base / "manifest.json").read_bytes(),
                           "runs/a/records.jsonl": ("\n".join(out) + "\n").encode()}))
    return path


def _typical(root: Path, qual_dataset: Path) -> dict[str, Path]:
    qual = make_run(root / "qual", qual_dataset, "qualitative", SimulatedEngine(), output_tokens=512, seed=21)
    lines = (qual / "records.jsonl").read_text().splitlines()
    files = {}
    for i in range(8):  # distinct measurements: one record's end differs by i + 1 ns
        r = json.loads(lines[0])
        r["end_ns"] += i + 1
        variant = root / f"typical-{i}"
        variant.mkdir()
        (variant / "records.jsonl").write_text("\n".join([json.dumps(r)] + lines[1:]) + "\n")
        for name in ("manifest.json", "results.json"):
            (variant / name).write_bytes((qual / name).read_bytes())
        files[f"typical-{i}"] = root / f"typical-{i}.tar.gz"
        files[f"typical-{i}"].write_bytes(pack_bundle([variant], META))
    return files


def build(root: Path, needed: set[str]) -> tuple[dict[str, Path], Path]:
    """The upload shapes the mixes need (``needed``: their kinds), as files, and the known-builds folder."""
    limits = ArchiveLimits.from_env()
    dataset, qual_dataset, builds = _datasets(root)
    files: dict[str, Path] = {}
    if needed & {"largest", "one-prompt", "long-chunks"}:
        # without step-time jitter: the records compress best, so the largest upload unpacks to the most
        sd_base = make_run(root / "sd", dataset, "throughput_1k", SimulatedEngine(), output_tokens=512, seed=11,
                           jitter=False)
    if "largest" in needed:
        ar_base = make_run(root / "ar", dataset, "throughput_1k", SimulatedEngine(speculative=False, step_time_s=0.014),
                           output_tokens=512, seed=12, jitter=False)
        files["largest"] = _largest(root, sd_base, ar_base, limits)
    if "one-prompt" in needed:
        files["one-prompt"] = _one_prompt(root, sd_base)
    if "long-chunks" in needed:
        files["long-chunks"] = _long_chunks(root, sd_base, limits)
    if "typical" in needed:
        files.update(_typical(root, qual_dataset))
    if "zip-members" in needed:
        files["zip-members"] = _zip_listing(root / "zip-members.zip", limits.max_archive_bytes - 1024)
    for name, path in files.items():
        if not name.startswith("typical-") or name == "typical-0":
            print(f"  {name}: upload {path.stat().st_size / MiB:.2f} MiB")
    return files, builds


def _proc_figures(pid: int) -> tuple[float, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = int(status.split("VmHWM:")[1].split()[0]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return hwm, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_app(root: Path, builds: Path, port: int, extra_env: dict | None = None) -> subprocess.Popen:
    import httpx

    env = {**os.environ, "SPEEDBENCH_DB": str(root / f"board-{port}.sqlite3"), "SPEEDBENCH_KNOWN_BUILDS": str(builds),
           "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
           **(extra_env or {})}
    env.pop("SPEEDBENCH_HUB_MIRROR", None)
    app = subprocess.Popen([sys.executable, str(REPO / "space" / "app.py")], env=env, stdout=subprocess.DEVNULL,
                           stderr=open(root / f"app-{port}.log", "w"))
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200:
                return app
        except httpx.HTTPError:
            pass
        if app.poll() is not None:
            raise SystemExit(f"the app exited: {(root / f'app-{port}.log').read_text()[-2000:]}")
        time.sleep(0.5)  # a benchmark polling a server's start, not a test
    raise SystemExit("the app did not start")


def run_mix(mix: str, files: dict[str, Path], builds: Path, root: Path, port: int) -> None:
    from gradio_client import Client, handle_file

    uploads: list[Path] = []
    for part in mix.split("+"):
        kind, count = part.split(":")
        for i in range(int(count)):
            uploads.append(files[f"typical-{i}"] if kind == "typical" else files[kind])
    app = _start_app(root, builds, port)
    try:
        base_rss, base_cpu = _proc_figures(app.pid)
        url = f"http://127.0.0.1:{port}/"

        def send(path: Path):
            t = time.perf_counter()
            client = Client(url, verbose=False, analytics_enabled=False, download_files=False)
            answer = client.predict(handle_file(str(path)), api_name="/submit_bundle")
            return time.perf_counter() - t, answer

        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(uploads)) as pool:
            results = list(pool.map(send, uploads))
        wall = time.perf_counter() - t
        hwm, cpu = _proc_figures(app.pid)
        rss_after = int(Path(f"/proc/{app.pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024
    finally:
        app.terminate()
        app.wait(timeout=60)
    outcomes: dict[str, int] = {}
    for _, answer in results:
        key = answer["status"] if answer["status"] == "accepted" else \
            "rejected " + (answer["message"].rsplit("[rule ", 1)[-1].rstrip("]") if "[rule " in answer["message"]
                           else answer["message"][:60])
        outcomes[key] = outcomes.get(key, 0) + 1
    slowest = max(t for t, _ in results)
    print(f"{mix}: {len(uploads)} uploads, {len(results)} answered ({', '.join(f'{v} {k}' for k, v in outcomes.items())}); "
          f"app peak RSS {hwm:.0f} MiB (idle app {base_rss:.0f} MiB; {rss_after:.0f} MiB after), "
          f"app CPU {cpu - base_cpu:.1f} s, slowest answer {slowest:.1f} s, all answered in {wall:.1f} s; {_load()}")


def run_abuse(root: Path, builds: Path, files: dict[str, Path], port: int, seconds: float, board: int) -> None:
    """bench/leaderboard_abuse.py against a fresh app whose store holds ``board`` entries."""
    import leaderboard_abuse as abuse
    import leaderboard_board_size as sizes

    entry, archive, _ = sizes._entry(root / "abuse-seed")
    sizes._board(root / f"board-{port}.sqlite3", entry, archive, board).close()
    folder = root / "gradio-uploads"
    app = _start_app(root, builds, port, {**abuse.ABUSE_ENV, "GRADIO_TEMP_DIR": str(folder)})
    try:
        url = f"http://127.0.0.1:{port}/"
        typical = [files[f"typical-{i}"] for i in range(8)]
        print(f"abuse: a store of {board} entries; {_load()}")
        abuse.search_flood(url, app.pid, typical, f"{entry.metadata['model']}-42")
        abuse.abuse_mix(url, port, app.pid, folder, typical, seconds)
        print(f"abuse done; {_load()}")
    finally:
        app.terminate()
        app.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixes", default=",".join(MIXES),
                        help="comma-separated kind:count[+kind:count] mixes ('none': no upload mix)")
    parser.add_argument("--board-sizes", default="", help="the board-size axis: bench/leaderboard_board_size.py "
                        "at these sizes (e.g. 100,1000,3000,10000)")
    parser.add_argument("--board-loads", type=int, default=5, help="page loads per board size")
    parser.add_argument("--abuse", type=float, default=0.0,
                        help="seconds of the abuse mix (bench/leaderboard_abuse.py; 0: none)")
    parser.add_argument("--abuse-board", type=int, default=3000, help="entries in the abused app's store")
    args = parser.parse_args()
    mixes = [] if args.mixes == "none" else args.mixes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.board_sizes:
            import leaderboard_board_size as sizes

            os.environ["GRADIO_TEMP_DIR"] = str(root / "gradio")
            print(f"board-size axis; {_load()}")
            entry, archive, known = sizes._entry(root / "sizes")
            for size in (int(s) for s in args.board_sizes.split(",")):
                print(sizes.measure(size, args.board_loads, entry, archive, known, root), flush=True)
            print(f"board-size axis done; {_load()}")
        t = time.perf_counter()
        print("building uploads ...")
        needed = {part.split(":")[0] for mix in mixes for part in mix.split("+")} | ({"typical"} if args.abuse else set())
        files, builds = build(root, needed)
        print(f"  built in {time.perf_counter() - t:.0f} s; {_load()}")
        for i, mix in enumerate(mixes):
            run_mix(mix, files, builds, root, 7900 + i)
        if args.abuse:
            run_abuse(root, builds, files, 7899, args.abuse, args.abuse_board)


if __name__ == "__main__":
    main()
