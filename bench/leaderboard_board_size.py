"""The leaderboard page's cost against the board's size (issue 32): app CPU per page load and RSS.

One real entry (a synthetic Qualitative + throughput_1k bundle, validated and stored by
``submit_bundle``) is copied N times into a fresh store (distinct ids and digests, the same
metrics), the Space is built in this process (``space/app.py``'s ``build_app``) and its page-load
event (the function ``demo.load`` runs: the filtered, sorted board, every dropdown's choices and the
Hub note) is called LOADS times, then the board's Dataframe is post-processed as Gradio does before
sending it; then, three times, one more entry is stored (as an upload does) and the page loaded
again; then eight page loads with a 4 MiB search (the issue's search flood, one after the other
here, not through HTTP; ``bench/leaderboard_load.py --abuse`` sends it through HTTP). CPU is this process's (user + system, ``time.process_time``), so the figure is what one
page load costs the app, without HTTP. The app builds the board's rows at start-up (reported
apart: not a page load); a page load after a change parses and builds only the changed rows.
Peak RSS is the process's (``ru_maxrss``): it includes the smaller boards measured before.

Run: ``.venv/bin/python bench/leaderboard_board_size.py [--sizes 100,1000,3000,10000] [--loads 5]``,
or ``bench/leaderboard_load.py --board-sizes ...`` (which calls this).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "space"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _entry(root: Path):
    from speedbench.leaderboard.known_builds import KnownBuilds, describe_dataset
    from speedbench.leaderboard.pack import pack_bundle
    from speedbench.leaderboard.store import LeaderboardStore
    from speedbench.leaderboard.synthetic import SimulatedEngine, make_dataset, make_run
    from speedbench.leaderboard.validate import submit_bundle

    dataset = make_dataset(root / "ds", rows_per_category=4)
    builds = root / "builds"
    builds.mkdir()
    (builds / "b.json").write_text(__import__("json").dumps(describe_dataset(dataset).to_dict()))
    qual = make_run(root / "qual", dataset, "qualitative", SimulatedEngine(), seed=1)
    meta = {"model": "meta-llama/Llama-3.3-70B-Instruct", "drafter": "EAGLE3-LLaMA3.3-Instruct-70B",
            "sd_method": "eagle3", "engine": "vllm", "engine_version": "0.11.0", "gpu": "B200",
            "draft_length": 3, "temperature": 0.0}
    store = LeaderboardStore(root / "one.sqlite3")
    known = KnownBuilds.load([str(builds)])
    entry = submit_bundle(pack_bundle([qual], meta), store, known)
    return store.get(entry.id), store.archive(entry.id), known


def _board(path: Path, entry, archive: bytes, size: int):
    from speedbench.leaderboard import canonical
    from speedbench.leaderboard.store import LeaderboardStore

    store = LeaderboardStore(path)
    for i in range(size):
        digest = f"{i:012x}" + "0" * 52  # the id is its first 12 digits
        metadata = {**entry.metadata, "model": f"{entry.metadata['model']}-{i}"}
        store.add(bundle_sha256=digest, archive_sha256=digest, archive=archive[:1] + digest.encode(),
                  schema_version=entry.schema_version, metadata=metadata, metrics=entry.metrics,
                  metrics_version=entry.metrics_version, measurement_sha256=digest, tokens_sha256=digest,
                  warnings=entry.warnings, enqueue=False, digest_version=canonical.DIGEST_VERSION)
    return store


def _add_one(store, entry, archive: bytes, i: int) -> None:
    from speedbench.leaderboard import canonical

    digest = f"f{i:011x}" + "f" * 52  # ids the board rows (0...) never take
    store.add(bundle_sha256=digest, archive_sha256=digest, archive=archive[:1] + digest.encode(),
              schema_version=entry.schema_version, metadata={**entry.metadata, "model": f"upload-{i}"},
              metrics=entry.metrics, metrics_version=entry.metrics_version, measurement_sha256=digest,
              tokens_sha256=digest, warnings=entry.warnings, enqueue=False, digest_version=canonical.DIGEST_VERSION)


def _page_load(load, table, values) -> float:
    start = time.process_time()
    table.postprocess(load.fn(*values)[0].value)
    return time.process_time() - start


def measure(size: int, loads: int, entry, archive: bytes, known, root: Path) -> str:
    import app  # space/app.py
    from sbspace.envs import Settings

    store = _board(root / f"board-{size}.sqlite3", entry, archive, size)
    start = time.process_time()
    demo = app.build_app(Settings(db_path=store.path), store=store, known_builds=known)
    startup = time.process_time() - start
    load = next(f for f in demo.fns.values() if f.name == "<lambda>" and len(f.inputs) == 8)
    table = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "board")
    values = ["", [], [], [], "any", "Mean AL", True, False]
    cpu = [_page_load(load, table, values) for _ in range(loads + 1)]
    after_upload = []
    for i in range(3):  # an entry stored (an upload), then the next page load
        _add_one(store, entry, archive, i)
        after_upload.append(_page_load(load, table, values))
    flood = ["q" * (4 * 2**20), *values[1:]]  # the search flood: eight 4 MiB queries
    flood_cpu = sum(_page_load(load, table, flood) for _ in range(8))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    demo.close()
    store.close()
    later = cpu[1:]
    return (f"entries={size:>6}  start-up (rows built) {startup:.3f} s CPU  first load {cpu[0]:.3f} s  "
            f"later loads mean {sum(later) / len(later):.3f} s (max {max(later):.3f})  first load after an upload "
            f"mean {sum(after_upload) / 3:.3f} s (max {max(after_upload):.3f})  eight 4 MiB searches "
            f"{flood_cpu:.3f} s CPU  peak RSS {rss_mb:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,3000,10000")
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sb-board-size-") as tmp:
        root = Path(tmp)
        os.environ["GRADIO_TEMP_DIR"] = str(root / "gradio")
        entry, archive, known = _entry(root)
        for size in (int(s) for s in args.sizes.split(",")):
            print(measure(size, args.loads, entry, archive, known, root), flush=True)
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
